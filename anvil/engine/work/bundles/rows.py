"""Reading bundles: their rows, members, coordinator claim, reviews and delivery, the readiness of
their members and the state of their review gate.

Nothing here writes, and nothing here imports the claim rules, so the claim and offer rules can
ask which bundle holds a task (:func:`live_bundle_of`, :data:`RESERVED_BY_BUNDLE`).
"""

from __future__ import annotations

import json
from typing import Any

from anvil.engine.errors import NotFound, Refused
from anvil.engine.storage.connection import Connection
from anvil.engine.vocab import COMPLETING_CATEGORIES

BUNDLE_COLUMNS = ("id", "prd_id", "status", "coordinator", "coordinator_key", "policy", "review_round",
                  "claim_generation", "commit_sha", "pr_url", "merged", "supersedes", "superseded_by", "created_at",
                  "created_by", "updated_seq")
SELECT_BUNDLE = f"SELECT {', '.join(BUNDLE_COLUMNS)} FROM bundles"
LIVE_SQL = "status NOT IN ('merged', 'superseded')"
RESERVED_BY_BUNDLE = """EXISTS (SELECT 1 FROM bundle_members bm JOIN bundles bb ON bb.id = bm.bundle_id
                          WHERE bm.task_id = t.id AND bb.status NOT IN ('merged', 'superseded'))"""
"""SQL: task ``t`` is a member of a live bundle (reserved for it: never offered to anyone)."""

WORKING_STATUSES = frozenset({"planned", "active", "in_review", "changes_requested"})
"""Statuses in which the bundle can be claimed (its coordinator has work to do or to wait for)."""
MIN_APPROVALS = 2
"""Independent approvals a review round needs, whatever the angles."""
CLAIM_COLUMNS = ("id", "bundle_id", "actor", "actor_key", "generation", "status", "claimed_at", "lease_expires_at")


def bundle_row(row: Any) -> dict[str, Any]:
    bundle = dict(zip(BUNDLE_COLUMNS, row, strict=True))
    bundle["policy"] = json.loads(bundle["policy"])
    bundle["merged"] = bool(bundle["merged"])
    return bundle


def any_bundle(conn: Connection) -> bool:
    """Whether the project has at least one bundle (one indexed row read)."""
    return conn.execute("SELECT 1 FROM bundles LIMIT 1").fetchone() is not None


def find_bundle(conn: Connection, bundle_id: str) -> dict[str, Any] | None:
    row = conn.execute(f"{SELECT_BUNDLE} WHERE id = ?", (bundle_id,)).fetchone()
    return bundle_row(row) if row else None


def get_bundle(conn: Connection, bundle_id: str) -> dict[str, Any]:
    """The bundle ``bundle_id``.

    Raises:
        NotFound: no such bundle (code ``bundle_not_found``).
    """
    bundle = find_bundle(conn, bundle_id)
    if bundle is None:
        raise NotFound(f"bundle {bundle_id[:64]!r} not found: `anvil bundle list` shows the bundles",
                       code="bundle_not_found")
    return bundle


def members(conn: Connection, bundle_id: str) -> list[dict[str, Any]]:
    """The bundle's members in order, with each task's title and status."""
    rows = conn.execute(
        "SELECT m.task_id, m.position, m.stage, m.authorized_generation, t.title, t.status FROM bundle_members m "
        "LEFT JOIN tasks t ON t.id = m.task_id WHERE m.bundle_id = ? ORDER BY m.position", (bundle_id,))
    return [{"task_id": r[0], "position": r[1], "stage": r[2], "authorized_generation": r[3], "title": r[4],
             "status": r[5] or "missing"} for r in rows]


def live_bundle_of(conn: Connection, task_id: str) -> dict[str, Any] | None:
    """The live bundle ``task_id`` belongs to, or None. A task belongs to one live bundle at a time,
    except while a bundle waiting to be replanned shares it with its replacement: then the replacement."""
    row = conn.execute(*live_bundle_read(task_id)).fetchone()
    return bundle_row(row) if row else None


def live_bundle_read(task_id: str) -> tuple[str, tuple[str]]:
    """The statement :func:`live_bundle_of` runs (for ``Store.read_ahead``)."""
    return (f"SELECT {', '.join('b.' + c for c in BUNDLE_COLUMNS)} FROM bundle_members m "
            "JOIN bundles b ON b.id = m.bundle_id WHERE m.task_id = ? AND b.status NOT IN "
            "('merged', 'superseded') ORDER BY CASE WHEN b.status = 'replan_required' THEN 1 ELSE 0 END, "
            "b.id LIMIT 1", (task_id,))


def coordinator_claim(conn: Connection, bundle_id: str) -> dict[str, Any] | None:
    """The bundle's live coordinator claim, or None."""
    row = conn.execute(f"SELECT {', '.join(CLAIM_COLUMNS)} FROM bundle_claims WHERE bundle_id = ? "
                       "AND status = 'active'", (bundle_id,)).fetchone()
    return dict(zip(CLAIM_COLUMNS, row, strict=True)) if row else None


def claim_view(claim: dict[str, Any] | None) -> dict[str, Any] | None:
    """The public form of a coordinator claim."""
    if claim is None:
        return None
    return {"id": claim["id"], "bundle_id": claim["bundle_id"], "claimed_by": claim["actor"],
            "generation": claim["generation"], "claimed_at": claim["claimed_at"],
            "lease_expires_at": claim["lease_expires_at"]}


def reviews(conn: Connection, bundle_id: str) -> list[dict[str, Any]]:
    """Every verdict recorded on the bundle, oldest first."""
    rows = conn.execute("SELECT round, reviewer, reviewer_key, angle, decision, notes, reviewed_at, reviewer_role, "
                        "reviewer_authenticated FROM bundle_reviews WHERE bundle_id = ? ORDER BY seq", (bundle_id,))
    return [{"round": r[0], "reviewer": r[1], "reviewer_key": r[2], "angle": r[3], "decision": r[4], "notes": r[5],
             "reviewed_at": r[6], "reviewer_role": r[7], "reviewer_authenticated": bool(r[8])} for r in rows]


def checkpoints(conn: Connection, bundle_id: str) -> list[dict[str, Any]]:
    """Every delivery checkpoint of the bundle, oldest first."""
    rows = conn.execute("SELECT seq, commit_sha, pr_url, source, actor, recorded_at FROM bundle_checkpoints "
                        "WHERE bundle_id = ? ORDER BY seq", (bundle_id,))
    return [{"number": n, "commit_sha": r[1], "pr_url": r[2], "source": r[3], "actor": r[4], "recorded_at": r[5]}
            for n, r in enumerate(rows, 1)]


def implementer_keys(conn: Connection, bundle: dict[str, Any]) -> set[str]:
    """Name keys of everyone who implemented the bundle: its coordinator, every actor who held its
    coordinator claim, and every actor who submitted evidence on a member."""
    keys = {bundle["coordinator_key"]}
    keys.update(r[0] for r in conn.execute("SELECT DISTINCT actor_key FROM bundle_claims WHERE bundle_id = ?",
                                           (bundle["id"],)))
    keys.update(r[0] for r in conn.execute(
        "SELECT DISTINCT e.actor_key FROM evidence e JOIN bundle_members m ON m.task_id = e.task_id "
        "WHERE m.bundle_id = ?", (bundle["id"],)))
    return keys


def _latest_category(conn: Connection, task_id: str) -> str | None:
    row = conn.execute("SELECT category FROM evidence WHERE task_id = ? ORDER BY seq DESC LIMIT 1",
                       (task_id,)).fetchone()
    return row[0] if row else None


def _holder(conn: Connection, task_id: str) -> str | None:
    row = conn.execute("SELECT actor FROM claims WHERE task_id = ? AND status = 'active'", (task_id,)).fetchone()
    return row[0] if row else None


def member_blockers(conn: Connection, member: dict[str, Any]) -> list[str]:
    """What keeps one member from counting as complete (empty: it is)."""
    task_id, status = member["task_id"], member["status"]
    if status == "done":
        return []
    if status == "needs_review":
        category = _latest_category(conn, task_id)
        if category not in COMPLETING_CATEGORIES:
            return [f"its latest evidence is {category}, which cannot complete a task: submit completion evidence"]
        return []
    if status in ("claimed", "in_progress"):
        return [f"still claimed by {_holder(conn, task_id) or 'nobody'}: submit its completion evidence"]
    if status == "missing":
        return ["the task no longer exists in the plan"]
    return [f"no completion evidence yet (status {status}): claim it and submit evidence"]


def readiness(conn: Connection, bundle_id: str) -> list[dict[str, Any]]:
    """The members that are not complete yet, each with what blocks it (empty: the bundle is ready)."""
    out = []
    for member in members(conn, bundle_id):
        blockers = member_blockers(conn, member)
        if blockers:
            out.append({"task_id": member["task_id"], "status": member["status"], "blockers": blockers})
    return out


def authorization(conn: Connection, bundle: dict[str, Any], task_id: str) -> int:
    """The coordinator generation under which ``task_id``, a member of ``bundle``, may be claimed.

    Raises:
        Refused: ``bundle_member_unauthorized`` when the bundle has no live coordinator claim
            authorizing the member.
    """
    live = coordinator_claim(conn, bundle["id"])
    row = conn.execute("SELECT authorized_generation FROM bundle_members WHERE bundle_id = ? AND task_id = ?",
                       (bundle["id"], task_id)).fetchone()
    if live is None or row is None or row[0] != live["generation"]:
        raise Refused(f"task {task_id} belongs to bundle {bundle['id']}, which no live coordinator claim authorizes "
                      f"now: its coordinator claims the bundle first (`anvil bundle claim {bundle['id']}`)",
                      code="bundle_member_unauthorized")
    return int(live["generation"])


def unmet_dependencies(conn: Connection, task: dict[str, Any], bundle_id: str) -> list[dict[str, Any]]:
    """A member's unfinished dependencies, each ``{task_id, status, member}`` (``member``: it belongs
    to the same bundle). A dependency on another member is finished once its completion evidence
    awaits the bundle's review (serial stages); any other once it is done."""
    unmet: list[dict[str, Any]] = []
    for dependency in task["dependencies"]:
        row = conn.execute("SELECT t.status, m.task_id FROM tasks t LEFT JOIN bundle_members m ON m.task_id = t.id "
                           "AND m.bundle_id = ? WHERE t.id = ?", (bundle_id, dependency)).fetchone()
        member = row is not None and row[1] is not None
        done = row is not None and (row[0] == "done" or (member and row[0] == "needs_review"))
        if not done:
            unmet.append({"task_id": dependency, "status": row[0] if row else "missing", "member": member})
    return unmet


def describe_unmet(unmet: list[dict[str, Any]], bundle_id: str) -> str:
    """``T001 (in_progress, a member of B1), T009 (ready, outside B1)``: what a member waits on."""
    shown = [f"{d['task_id']} ({d['status']}, {'a member of' if d['member'] else 'outside'} {bundle_id})"
             for d in unmet[:6]]
    return ", ".join(shown) + (f" and {len(unmet) - 6} more" if len(unmet) > 6 else "")


def max_rounds(policy: dict[str, Any]) -> int:
    """How many review rounds a bundle gets: the first one plus its re-reviews."""
    return 1 + int(policy["max_rereviews"])


def gate(bundle: dict[str, Any], verdicts: list[dict[str, Any]], implementers: set[str]) -> dict[str, Any]:
    """The review gate of the bundle's current round: which required angles have an approval, which
    independent reviewers approved, which verdicts block it, and whether it passed."""
    policy, round_ = bundle["policy"], bundle["review_round"]
    current = [v for v in verdicts if v["round"] == round_] if round_ else []
    approvals = [v for v in current if v["decision"] == "approve"]
    independent = sorted({v["reviewer_key"]: v["reviewer"] for v in approvals
                          if v["reviewer_key"] not in implementers}.values())
    covered = sorted({v["angle"] for v in approvals if v["reviewer_key"] not in implementers})
    missing = [angle for angle in policy["required_angles"] if angle not in covered]
    blocking = [{"reviewer": v["reviewer"], "angle": v["angle"], "decision": v["decision"]} for v in current
                if v["decision"] != "approve"]
    passed = round_ >= 1 and not missing and not blocking and len(independent) >= MIN_APPROVALS
    return {"round": round_, "required_angles": list(policy["required_angles"]), "covered_angles": covered,
            "missing_angles": missing, "independent_approvers": independent, "required_approvals": MIN_APPROVALS,
            "blocking": blocking, "reviews_left": max(0, int(policy["max_reviews"]) - len(current)),
            "rounds_left": max(0, max_rounds(policy) - round_), "passed": passed}


def detail(conn: Connection, bundle_id: str) -> dict[str, Any]:
    """The public form of one bundle: policy, members, coordinator claim, verdicts, gate, delivery.

    Raises:
        NotFound: no such bundle.
    """
    bundle = get_bundle(conn, bundle_id)
    verdicts = reviews(conn, bundle["id"])
    claim = coordinator_claim(conn, bundle["id"])
    live_generation = claim["generation"] if claim else None
    member_rows = [{"task_id": m["task_id"], "title": m["title"], "status": m["status"], "stage": m["stage"],
                    "authorized": live_generation is not None and m["authorized_generation"] == live_generation}
                   for m in members(conn, bundle["id"])]
    saved = checkpoints(conn, bundle["id"])
    return {
        "id": bundle["id"], "prd_id": bundle["prd_id"], "status": bundle["status"],
        "coordinator": bundle["coordinator"], "policy": bundle["policy"], "members": member_rows,
        "claim": claim_view(claim), "review_round": bundle["review_round"],
        "reviews": [{k: v for k, v in verdict.items() if k != "reviewer_key"} for verdict in verdicts],
        "gate": gate(bundle, verdicts, implementer_keys(conn, bundle)),
        "delivery": {"commit_sha": bundle["commit_sha"], "pr_url": bundle["pr_url"], "merged": bundle["merged"],
                     "checkpoints": saved},
        "supersedes": bundle["supersedes"], "superseded_by": bundle["superseded_by"],
        "created_at": bundle["created_at"], "created_by": bundle["created_by"],
    }


def list_bundles(conn: Connection, prd_id: str | None, status: str | None) -> list[dict[str, Any]]:
    """Compact records of the bundles (of one PRD, in one status), in id order."""
    where, params = ["1 = 1"], []
    for column, value in (("b.prd_id", prd_id), ("b.status", status)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    rows = conn.execute(
        "SELECT b.id, b.prd_id, b.status, b.coordinator, b.review_round, b.superseded_by, "
        "(SELECT COUNT(*) FROM bundle_members m WHERE m.bundle_id = b.id), c.actor, c.generation, "
        "c.lease_expires_at FROM bundles b LEFT JOIN bundle_claims c ON c.bundle_id = b.id AND c.status = 'active' "
        f"WHERE {' AND '.join(where)} ORDER BY b.id", params)
    return [{"id": r[0], "prd_id": r[1], "status": r[2], "coordinator": r[3], "review_round": r[4],
             "superseded_by": r[5], "task_count": r[6], "claimed_by": r[7], "generation": r[8],
             "lease_expires_at": r[9]} for r in rows]
