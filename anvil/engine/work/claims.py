"""Claims: exclusive, leased, fenced ownership of a task while an agent works on it.

A claim is taken only on a ready task whose dependencies are done, whose PRD approval is current,
and whose conflict groups and expected files are free. Every new claim of a task gets the next
``generation``; renew, progress, evidence and release naming an older generation are refused, so
an agent whose lease was reaped can never write into its successor's claim. Expired leases are
reaped (as ``claim.expired`` events) before every mutation and before ``next``/summary reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.errors import AuthFailed, ConfirmationRequired, Refused, UsageError
from anvil.engine.identity import Identity, name_key
from anvil.engine.prd.approval import approval_gate
from anvil.engine.storage.canonical import canonical_json
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, Transaction, applies, format_ts
from anvil.engine.work.bundles import rows as bundle_rows


@dataclass(frozen=True, slots=True)
class Fence:
    """The fencing token a caller presents: the claim generation and/or claim id it holds.

    Renew, release, progress and submit present one; naming anything but the live claim is refused,
    so an agent whose lease was reaped can never write into its successor's claim.
    """

    generation: int | None = None
    claim_id: str | None = None

    @property
    def given(self) -> bool:
        return self.generation is not None or self.claim_id is not None


NO_FENCE = Fence()


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    """What a claim asks for: the task, who, which files it will change, and for how long."""

    task_id: str
    actor: str
    expected_files: list[str] | None = None  # None: the task's likely files
    lease_seconds: int = 900
    git_mode: str | None = None  # off | branch | worktree; None: the project's setting
    git_facts: dict[str, Any] | None = None  # the caller's checkout (anvil.engine.git.plan.decode); None: not sent
    expected_revision: str | None = None  # the task's revision as the caller read it; None: not checked


CLAIM_COLUMNS = ("id", "task_id", "actor", "generation", "status", "claimed_at", "lease_expires_at",
                 "expected_files", "actor_key", "git", "task_revision", "prd_revision")
HOLDING = ("claimed", "in_progress", "blocked")


def claim_row(row: Any) -> dict[str, Any]:
    claim = dict(zip(CLAIM_COLUMNS, row, strict=True))
    claim["expected_files"] = json.loads(claim["expected_files"])
    claim["git"] = json.loads(claim["git"]) if claim["git"] else None
    return claim


def active_claim(conn: Connection, task_id: str) -> dict[str, Any] | None:
    row = conn.execute(*active_claim_read(task_id)).fetchone()
    return claim_row(row) if row else None


def active_claim_read(task_id: str) -> tuple[str, tuple[str]]:
    """The statement :func:`active_claim` runs (for ``Store.read_ahead``)."""
    return f"SELECT {', '.join(CLAIM_COLUMNS)} FROM claims WHERE task_id = ? AND status = 'active'", (task_id,)


def live_claims(conn: Connection, task_ids: list[str]) -> dict[str, tuple[str, str]]:
    """The holder and lease end of each of ``task_ids`` that a live claim holds."""
    out: dict[str, tuple[str, str]] = {}
    for start in range(0, len(task_ids), 500):
        chunk = task_ids[start:start + 500]
        for task_id, actor, lease in conn.execute(
                f"SELECT task_id, actor, lease_expires_at FROM claims WHERE status = 'active' AND task_id IN "
                f"({','.join('?' * len(chunk))})", chunk).fetchall():
            out[task_id] = (actor, lease)
    return out


def holders(conn: Connection, task_ids: list[str]) -> dict[str, str]:
    """Who holds each of ``task_ids`` (only the held ones appear)."""
    out: dict[str, str] = {}
    for start in range(0, len(task_ids), 500):
        chunk = task_ids[start:start + 500]
        out.update(conn.execute(f"SELECT task_id, actor FROM claims WHERE status = 'active' AND task_id IN "
                                f"({','.join('?' * len(chunk))})", chunk).fetchall())
    return out


def has_stale(conn: Connection, now: str) -> bool:
    """Whether any task claim or bundle coordinator claim has outlived its lease."""
    return any(conn.execute(f"SELECT 1 FROM {table} WHERE status = 'active' AND lease_expires_at <= ? LIMIT 1",
                            (now,)).fetchone() is not None for table in ("claims", "bundle_claims"))


def next_lease_end(conn: Connection) -> str | None:
    """When the first live lease runs out (an expired lease frees its task without any write)."""
    row = conn.execute("SELECT MIN(lease_expires_at) FROM claims WHERE status = 'active'").fetchone()
    return row[0] if row and row[0] else None


def reap_stale(tx: Transaction) -> list[str]:
    """End every claim whose lease has run out: a task goes back to ready, a bundle's coordinator
    claim ends with its member authorizations. Returns the task and bundle ids."""
    if tx.leases_known and (tx.first_lease_end is None or tx.first_lease_end > tx.ts):
        return []  # the transaction's first statement found no lease ended: nothing to look for
    # One statement for both kinds of lease (a reap runs before every write).
    found = tx.conn.execute(
        "SELECT 0, id, task_id, actor, generation, lease_expires_at FROM claims WHERE status = 'active' "
        "AND lease_expires_at <= ? UNION ALL SELECT 1, id, bundle_id, actor, generation, lease_expires_at "
        "FROM bundle_claims WHERE status = 'active' AND lease_expires_at <= ? ORDER BY 1, 6, 2",
        (tx.ts, tx.ts)).fetchall()
    rows = [r for r in found if r[0] == 0]
    coordinators = [r for r in found if r[0] == 1]
    for _, claim_id, task_id, actor, generation, _ in rows:
        tx.append("claim.expired", {"claim_id": claim_id, "task_id": task_id, "holder": actor,
                                    "generation": generation})
    for _, claim_id, bundle_id, actor, generation, _ in coordinators:
        tx.append("bundle.claim_expired", {"claim_id": claim_id, "bundle_id": bundle_id, "holder": actor,
                                           "generation": generation})
    return [r[2] for r in rows] + [r[2] for r in coordinators]


def _lease_end(now: datetime, seconds: int) -> str:
    return format_ts(now + timedelta(seconds=seconds))


_FILE_HOLDERS = ("SELECT 1, f.file, c.id, c.actor, c.task_id FROM claim_files f JOIN claims c ON c.id = f.claim_id "
                 "WHERE f.file IN ({marks}) AND c.status = 'active'")
_GROUP_HOLDERS = ("SELECT 0, g.group_id, o.task_id, c.actor, c.id FROM task_conflict_groups g "
                  "JOIN task_conflict_groups o ON o.group_id = g.group_id "
                  "JOIN claims c ON c.task_id = o.task_id AND c.status = 'active' "
                  "WHERE g.task_id = ? AND o.task_id != ?")


def _file_entries(files: list[str], rows: list[Any], exclude_task: str | None) -> list[dict[str, Any]]:
    """Rows of :data:`_FILE_HOLDERS` as conflicts: by ``files``' order, then claim id; ``exclude_task``'s left out."""
    order = {file: index for index, file in enumerate(files)}
    found = sorted((order[r[1]], r[2], r[1], r[3], r[4]) for r in rows if r[4] != exclude_task)
    return [{"file": file, "claim_id": claim_id, "claimed_by": actor, "task_id": task_id}
            for _, claim_id, file, actor, task_id in found]


def file_conflicts(conn: Connection, files: list[str], exclude_task: str | None) -> list[dict[str, Any]]:
    """Active claims (of other tasks) that expect any of ``files``: one entry per file and claim."""
    wanted = task_rows.normalise_files(files)
    out: list[dict[str, Any]] = []
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        rows = conn.execute(_FILE_HOLDERS.format(marks=",".join("?" * len(chunk))), chunk).fetchall()
        out.extend(_file_entries(chunk, rows, exclude_task))
    return out


def claim_conflicts(conn: Connection, task_id: str, files: list[str]
                    ) -> tuple[tuple[str, str, str] | None, list[dict[str, Any]]]:
    """:func:`busy_conflict` and :func:`file_conflicts` of a claim of ``task_id`` expecting ``files``
    (normalised), in one statement (both run inside the writer lock)."""
    read = claim_conflicts_read(task_id, files)
    if read is None:
        return busy_conflict(conn, task_id), file_conflicts(conn, files, task_id)
    rows = conn.execute(*read).fetchall()
    groups = sorted((r[1], r[2], r[3]) for r in rows if r[0] == 0)
    return (groups[0] if groups else None), _file_entries(files, [r for r in rows if r[0] == 1], task_id)


def claim_conflicts_read(task_id: str, files: list[str]) -> tuple[str, tuple[str, ...]] | None:
    """The one statement of :func:`claim_conflicts` (None: it takes two)."""
    if not files or len(files) > 500:
        return None
    return (f"{_GROUP_HOLDERS} UNION ALL {_FILE_HOLDERS.format(marks=','.join('?' * len(files)))}",
            (task_id, task_id, *files))


def busy_conflict_group(conn: Connection, task_id: str) -> str | None:
    found = busy_conflict(conn, task_id)
    return found[0] if found else None


def busy_conflict(conn: Connection, task_id: str) -> tuple[str, str, str] | None:
    """A conflict group ``task_id`` shares with a task being worked on: (group, that task, its holder)."""
    row = conn.execute(
        "SELECT g.group_id, o.task_id, c.actor FROM task_conflict_groups g "
        "JOIN task_conflict_groups o ON o.group_id = g.group_id "
        "JOIN claims c ON c.task_id = o.task_id AND c.status = 'active' WHERE g.task_id = ? AND o.task_id != ? "
        "ORDER BY g.group_id, o.task_id LIMIT 1", (task_id, task_id)).fetchone()
    return (row[0], row[1], row[2]) if row else None


NOT_READY_HINTS = {
    "drafted": "it is not reviewed yet (anvil review tasks promotes it once it has criteria and verification)",
    "reviewed": "it is reviewed but not ready yet (anvil review tasks)",
    "proposed": "it is only proposed (anvil plan, then anvil review tasks)",
    "needs_review": "its work is waiting for a reviewer (anvil apply)",
    "accepted": "its work was accepted",
    "done": "it is done",
    "blocked": "it is blocked; its holder unblocks it (anvil task-status TASK in_progress)",
    "rejected": "its work was rejected",
}


def waiting_on(conn: Connection, task_id: str) -> str:
    """``T001 (ready), T002 (claimed by agent-2)``: the unfinished dependencies of ``task_id`` and where each is."""
    deps = task_rows.unfinished_dependencies(conn, [task_id]).get(task_id, [])
    holders_of = holders(conn, deps)
    shown = []
    for dep in deps[:6]:
        row = conn.execute("SELECT status FROM tasks WHERE id = ?", (dep,)).fetchone()
        state = "missing" if row is None else f"claimed by {holders_of[dep]}" if dep in holders_of else row[0]
        shown.append(f"{dep} ({state})")
    return ", ".join(shown) + (f" and {len(deps) - 6} more" if len(deps) > 6 else "")


def claim(tx: Transaction, request: ClaimRequest, task: dict[str, Any] | None = None) -> dict[str, Any]:
    """Take an exclusive lease on the requested task for the requesting actor.

    ``task`` is the task's row when the caller read it in this same transaction (the offer did), so
    it is not read again; every rule below is still checked against it.

    Raises:
        NotFound: no such task.
        Refused: the task is not ready, is held, waits on dependencies, its PRD approval is not
            current, or its conflict group or expected files are busy; ``stale_revision`` when the
            task's revision is not the expected one.
    """
    task_id, actor, expected_files = request.task_id, request.actor, request.expected_files
    if task is None or task["id"] != task_id:
        task = task_rows.get_task(tx.conn, task_id)
    task_id = task["id"]
    revision = task_rows.task_revision(task)
    if request.expected_revision is not None and request.expected_revision.lower() != revision:
        raise Refused(f"task {task_id} changed since it was read (its revision is now {revision[:12]}...): re-read it "
                      f"(`anvil show {task_id}`) and plan again before claiming", code="stale_revision",
                      details={"revision": revision})
    # An explicit empty list declares no files (it holds none, so it conflicts with nobody); None takes the likely ones.
    files = task_rows.normalise_files(expected_files) if expected_files is not None else list(task["likely_files"])
    from anvil.engine.proof.contract import contract_commands, contract_version_read, prd_contract

    # Every claim the task ever had (a handful): the live one, and the generation the new one follows.
    claims_read = (f"SELECT {', '.join(CLAIM_COLUMNS)} FROM claims WHERE task_id = ?", (task_id,))
    normal_files = task_rows.normalise_files(files)
    conflicts_read = claim_conflicts_read(task_id, normal_files)
    # The reads below, in one round trip where reads cost one each (inside the lock, when it is held).
    tx.store.read_ahead([claims_read, bundle_rows.live_bundle_read(task_id), contract_version_read(task["prd_id"]),
                         *([conflicts_read] if conflicts_read else [])])
    rows = [claim_row(row) for row in tx.conn.execute(*claims_read).fetchall()]
    holder = next((row for row in rows if row["status"] == "active"), None)
    if holder is not None:
        who = "you" if holder["actor_key"] == name_key(actor) else holder["actor"]
        raise Refused(f"task {task_id} is already claimed by {who} (generation {holder['generation']}, lease until "
                      f"{holder['lease_expires_at']})", code="already_claimed")
    if task["status"] != "ready":
        hint = NOT_READY_HINTS.get(task["status"], "")
        raise Refused(f"task {task_id} is {task['status']}, not ready" + (f": {hint}" if hint else ""),
                      code="not_claimable")
    bundle = bundle_rows.live_bundle_of(tx.conn, task_id)
    if bundle is not None:
        authorization = bundle_rows.authorization(tx.conn, bundle, task_id)
        member_waits = bundle_rows.unmet_dependencies(tx.conn, task, bundle["id"])
        if member_waits:
            raise Refused(f"task {task_id} waits on {bundle_rows.describe_unmet(member_waits, bundle['id'])}: a "
                          "member of the bundle counts once its completion evidence awaits the bundle's review, any "
                          "other dependency once it is done", code="dependencies_pending")
    elif task["unmet_deps"]:
        raise Refused(f"task {task_id} waits on {waiting_on(tx.conn, task_id)}: they must be done first (anvil next "
                      "offers a task that can start now)", code="dependencies_pending")
    problem, prd_revision = approval_gate(tx.conn, task["prd_id"])
    if problem:
        raise Refused(problem + ": run `anvil prd parse`, `anvil prd review`, `anvil prd review --approve`",
                      code="prd_not_approved")
    busy, conflicts = claim_conflicts(tx.conn, task_id, normal_files)
    if busy:
        group, other, other_holder = busy
        raise Refused(f"task {task_id} shares conflict group {group} with {other}, claimed by {other_holder}: "
                      "they change the same things, so one waits for the other", code="conflict_group_busy")
    if conflicts:
        first = conflicts[0]
        raise Refused(f"{len(conflicts)} expected file(s) of task {task_id} are held by another claim (first: "
                      f"{first['file'][:120]}, by {first['claimed_by']} on {first['task_id']}); claim it expecting "
                      "other files, or wait for that claim to end", code="file_conflict")
    # Claim rows outlive a pruned task, so generations keep rising if it is planned again.
    generation = max([task["claim_generation"], *(row["generation"] for row in rows)]) + 1
    git = _git_binding(tx.conn, request, task, generation)
    commands = contract_commands(task, prd_contract(tx.conn, task)[0])  # read before the append takes the lock
    claim_id = f"C{tx.next_seq():06d}"
    lease = _lease_end(tx.now, request.lease_seconds)
    payload = {"claim_id": claim_id, "task_id": task_id, "actor": actor, "generation": generation,
               "lease_expires_at": lease, "expected_files": files, "task_revision": revision,
               "prd_revision": prd_revision}
    if bundle is not None:  # a member's claim records the bundle authorization it was taken under
        payload.update(bundle_id=bundle["id"], bundle_generation=authorization)
    if git is not None:
        payload["git"] = git
    event = tx.append("claim.acquired", payload)
    # The claim's row exactly as its applier wrote it, so the answer needs no read while the lock is held.
    held = {"id": claim_id, "task_id": task_id, "actor": actor, "generation": generation, "status": "active",
            "claimed_at": event.ts, "lease_expires_at": lease, "expected_files": files, "actor_key": name_key(actor),
            "git": git, "task_revision": revision, "prd_revision": prd_revision}
    return claim_view(tx.conn, held, task=task, commands=commands)


def git_mode_setting(conn: Connection) -> str:
    row = conn.execute("SELECT config FROM project").fetchone()
    return str((json.loads(row[0]) if row else {}).get("git_mode") or "off")


def _git_binding(conn: Connection, request: ClaimRequest, task: dict[str, Any],
                 generation: int) -> dict[str, Any] | None:
    """The claim's git binding from the caller's facts, checked against the other live claims.

    Raises:
        Refused: ``git_plan_required`` (a git mode, but no facts from the caller's checkout),
            ``git_checkout_busy`` (another live claim works in that checkout), and the refusals of
            :func:`anvil.engine.git.plan.bind`.
    """
    mode = request.git_mode or git_mode_setting(conn)
    if mode == "off":
        return None
    if request.git_facts is None:
        raise Refused(f"the claim's git mode is {mode}, but the call carried no git plan from the caller's checkout: "
                      "claim with the anvil CLI from the checkout (it sends the plan, also with --mcp URL), or pass "
                      "git_mode off", code="git_plan_required")
    from anvil.engine.git.plan import bind

    config = json.loads(conn.execute("SELECT config FROM project").fetchone()[0])
    land = {"target": config.get("land_target"), "remote": config.get("land_remote")}
    git = bind(request.git_facts, mode, task, generation, land)
    if git is None:
        return None
    row = conn.execute("SELECT id, task_id, actor, git FROM claims WHERE status = 'active' AND git_target = ? "
                       "ORDER BY id LIMIT 1", (git["target_path"],)).fetchone()
    if row is not None and row[1] != task["id"]:
        held = json.loads(row[3]) if row[3] else {}
        raise Refused(f"{row[0]} (task {row[1]}, {row[2]}) is working in {git['target_path'][:200]} on branch "
                      f"{str(held.get('branch'))[:120]}; switching that checkout would pull it from under them: claim "
                      "with --worktree for a checkout of your own", code="git_checkout_busy",
                      details={"claim_id": row[0], "task_id": row[1]})
    return git


def claim_view(conn: Connection, claim: dict[str, Any], now: str | None = None, *,
               task: dict[str, Any] | None = None, commands: list[str] | None = None) -> dict[str, Any]:
    """A claim as operations return it: who, which generation, its git binding and the next commands.

    ``branch``, ``worktree_path``, ``git_metadata`` and ``attestation_context`` are null for a claim
    without git (mode off, or the caller was outside any repository). ``continuation`` always holds
    the exact commands to prove the task's verification commands and to submit. ``task`` and its
    contract ``commands``, when the caller has them, are not read again.
    """
    from anvil.engine.proof.contract import contract_commands, prd_contract
    from anvil.engine.work.continuation import continuation

    git = claim.get("git")
    if task is None:
        task = task_rows.get_task(conn, claim["task_id"])
    if commands is None:
        commands = contract_commands(task, prd_contract(conn, task)[0])
    metadata = None if git is None else {k: git[k] for k in ("mode", "canonical_root", "claim_start_sha", "branch",
                                                             "target_path", "base_ref")}
    context = None if git is None else {
        "repository_id": git["repository_id"], "claim_start_sha": git["claim_start_sha"],
        "expected_paths": [{"path": path, "baseline_sha256": None} for path in claim["expected_files"]]}
    return {"id": claim["id"], "task_id": claim["task_id"], "claimed_by": claim["actor"],
            "generation": claim["generation"], "claimed_at": claim["claimed_at"],
            "lease_expires_at": claim["lease_expires_at"], "expected_files": claim["expected_files"],
            "task_revision": claim.get("task_revision"), "prd_revision": claim.get("prd_revision"),
            "branch": git and git["branch"], "worktree_path": git["target_path"] if git and git["mode"] == "worktree"
            else None, "git_metadata": metadata, "attestation_context": context,
            "continuation": continuation(task, claim, commands),
            **({} if now is None else {"expired": claim["lease_expires_at"] <= now})}


def held_claim(conn: Connection, task_id: str, actor: str, fence: Fence, *,
               takeover: bool = False) -> dict[str, Any]:
    """The active claim ``actor`` holds on ``task_id``, checked against the fencing token.

    Ownership compares name keys (:func:`anvil.engine.identity.name_key`), so ``Agent-1`` holds
    what ``agent-1`` claimed.

    Raises:
        NotFound: no such task.
        Refused: ``stale_generation`` when the named generation or claim is not the live one,
            ``no_active_claim`` when nothing holds the task, ``not_owner`` when someone else does.
    """
    return held_claim_of(conn, task_rows.get_task(conn, task_id), actor, fence, takeover=takeover)


def held_claim_of(conn: Connection, task: dict[str, Any], actor: str, fence: Fence, *,
                  takeover: bool = False) -> dict[str, Any]:
    """:func:`held_claim` of a task whose row the caller read already (in this transaction).

    Raises:
        UsageError: ``fencing_required`` (no fence given where the project requires one).
        Refused: as :func:`held_claim`.
    """
    task_id = task["id"]
    generation, claim_id = fence.generation, fence.claim_id
    if not fence.given and not takeover and fencing_required(conn):
        raise UsageError("this project requires fencing: pass the generation (or claim id) your claim returned",
                         code="fencing_required")
    live = active_claim(conn, task_id)
    fenced = (generation is not None and (live is None or live["generation"] != generation)) or \
        (claim_id is not None and (live is None or live["id"] != claim_id))
    if fenced:
        named = f"generation {generation}" if generation is not None else f"claim {str(claim_id)[:64]}"
        live_text = f"the live claim is generation {live['generation']}" if live else "no claim is live now"
        raise Refused(f"{named} is not the live claim on task {task_id} ({live_text}); if your lease ran out, "
                      "claim the task again", code="stale_generation")
    if live is None:
        raise Refused(f"task {task_id} has no active claim: claim it first", code="no_active_claim")
    if live["actor_key"] != name_key(actor):
        raise Refused(f"task {task_id} is claimed by another actor; only the holder can do this (a lead can "
                      "return it to the pool with `anvil release --yes`)", code="not_owner")
    return live


def fencing_required(conn: Connection) -> bool:
    """Whether the project refuses claim calls that name no generation (``require_fencing``)."""
    row = conn.execute("SELECT config FROM project").fetchone()
    return bool(row and json.loads(row[0]).get("require_fencing"))


def renew(tx: Transaction, task_id: str, actor: str, fence: Fence, extend_seconds: int) -> dict[str, Any]:
    """Extend the lease of ``actor``'s live claim to now + ``extend_seconds``."""
    from anvil.engine.proof.records import consume_attestation

    live = held_claim(tx.conn, task_id, actor, fence)
    task_id = live["task_id"]
    lease = _lease_end(tx.now, extend_seconds)
    progress = consume_attestation(tx.conn, live["id"])  # one accepted attestation, consumed once
    payload: dict[str, Any] = {"claim_id": live["id"], "task_id": task_id, "lease_expires_at": lease}
    if progress is not None:
        payload["consumed_attestation"] = progress["digest"]
    tx.append("claim.renewed", payload)
    return {"renewed": True, "claim_id": live["id"], "generation": live["generation"], "lease_expires_at": lease,
            "progress": progress}


def release(tx: Transaction, task_id: str, caller: Identity, fence: Fence, reason: str | None, *,
            confirmed: bool) -> dict[str, Any]:
    """Give the task back to the ready pool.

    Releasing another actor's claim is a takeover: it needs ``confirmed``, and an authenticated
    caller needs the lead role; it is recorded as a takeover (``forced``, with the caller's role).
    Fencing is checked first, so an old token is refused as stale, never read as a takeover.

    Raises:
        Refused: as :func:`held_claim` (``not_owner`` is lifted by a confirmed takeover).
        AuthFailed: ``forbidden_by_role`` for a takeover by an authenticated caller who is not a lead.
        ConfirmationRequired: the claim is another actor's and the takeover was not confirmed.
    """
    actor = caller.actor
    task_id = task_rows.get_task(tx.conn, task_id)["id"]
    live = active_claim(tx.conn, task_id)
    if fence.given:
        held_claim(tx.conn, task_id, live["actor"] if live else actor, fence)
    takeover = live is not None and live["actor_key"] != caller.key
    if live is not None and takeover:
        held_claim(tx.conn, task_id, live["actor"], fence, takeover=True)
        if not caller.may("lead"):
            raise AuthFailed(f"task {live['task_id']} is claimed by another actor; taking it over needs the lead "
                             f"role (your token's role is {caller.role})", code="forbidden_by_role")
        if not confirmed:
            raise ConfirmationRequired(f"task {live['task_id']} is claimed by {live['actor']}; only the holder "
                                       "releases a claim (its holder passes --actor / ANVIL_ACTOR with its name); "
                                       "taking it over ends their claim and returns the task to the pool: repeat "
                                       "with --yes (confirm: true)",
                                       details={"owner": live["actor"], "generation": live["generation"]})
    else:
        live = held_claim(tx.conn, task_id, actor, fence)
    tx.append("claim.released", {"claim_id": live["id"], "task_id": task_id, "holder": live["actor"],
                                 "released_by": actor, "reason": reason, "forced": takeover,
                                 "by_role": caller.role, "authenticated": caller.authenticated})
    return {"released": True, "claim_id": live["id"], "generation": live["generation"]}


def _end_claim(conn: Connection, event: Event, status: str, back_to_ready: bool) -> None:
    p = event.payload
    conn.execute("UPDATE claims SET status = ?, ended_at = ?, end_reason = ? WHERE id = ?",
                 (status, event.ts, event.type, p["claim_id"]))
    conn.execute("DELETE FROM claim_files WHERE claim_id = ?", (p["claim_id"],))
    if back_to_ready:
        row = conn.execute("SELECT status FROM tasks WHERE id = ?", (p["task_id"],)).fetchone()
        if row is not None and row[0] in HOLDING:
            task_rows.set_status(conn, p["task_id"], "ready", event.seq)


@applies("claim.acquired")
def _apply_acquired(conn: Connection, event: Event) -> None:
    p = event.payload
    git = p.get("git")
    conn.execute("INSERT INTO claims (id, task_id, actor, generation, status, claimed_at, lease_expires_at, "
                 "expected_files, actor_key, git, git_target, task_revision, prd_revision) "
                 "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                 (p["claim_id"], p["task_id"], p["actor"], p["generation"], "active", event.ts,
                  p["lease_expires_at"], json.dumps(p["expected_files"]), name_key(p["actor"]),
                  canonical_json(git) if git else None, git["target_path"] if git else None,
                  p.get("task_revision"), p.get("prd_revision")))
    conn.executemany("INSERT INTO claim_files (claim_id, file) VALUES (?, ?) ON CONFLICT DO NOTHING",
                     [(p["claim_id"], f) for f in p["expected_files"]])
    conn.execute("UPDATE tasks SET claim_generation = ? WHERE id = ?", (p["generation"], p["task_id"]))
    task_rows.set_status(conn, p["task_id"], "claimed", event.seq)


@applies("claim.renewed")
def _apply_renewed(conn: Connection, event: Event) -> None:
    conn.execute("UPDATE claims SET lease_expires_at = ? WHERE id = ?",
                 (event.payload["lease_expires_at"], event.payload["claim_id"]))
    consumed = event.payload.get("consumed_attestation")
    if consumed:
        conn.execute("UPDATE attestations SET consumed_seq = ? WHERE digest = ?", (event.seq, consumed))


@applies("claim.released")
def _apply_released(conn: Connection, event: Event) -> None:
    _end_claim(conn, event, "released", back_to_ready=True)


@applies("claim.expired")
def _apply_expired(conn: Connection, event: Event) -> None:
    _end_claim(conn, event, "expired", back_to_ready=True)

