"""The landing queue: approved work merged onto the landing target, recorded as events.

The lander's CLI (``anvil land``, :mod:`anvil.cli.lander`) does the git work on its own machine:
it builds the merge of a task's approved commit onto the target's current tip in a scratch
worktree, re-runs the task's verification commands on the merged tree and moves the target by
fast-forward only. This module only records what it did and says what comes next:

- ``task.land_started``: a lander took a unit (a task, or an approved bundle's members) and is
  verifying it; it holds the unit for :data:`LEASE_SECONDS`, so a second lander moves on to the
  next unit instead of building the same one;
- ``task.landed``: the target now holds the approved commit (the landed commit, the approved commit
  the approving decision recorded, and the verified proofs of the merged tree); the task is
  finished for its dependents;
- ``task.land_bounced``: a conflict (with the paths, and the landed tasks that touched them), a
  verification command that failed on the merged tree (with its excerpt), or a claim branch that
  moved past the approval (stale): nothing landed, and the task goes back to ``ready`` for its
  implementer to rework (a bundle's members with it).

:func:`queue` is the read: the units in landing order (dependency order, then approval order).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.errors import Refused, UsageError
from anvil.engine.identity import Identity, name_key
from anvil.engine.proof.verification import approved_commit
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, Transaction, applies, format_ts
from anvil.engine.work.landing_rows import landing_config, stamp_of

LEASE_SECONDS = 1800
"""How long a started landing holds its unit against other landers (a lander that died frees it then)."""
MAX_PATHS = 500
EXCERPT_CHARS = 4000
RECENT = 20


@dataclass(frozen=True, slots=True)
class LandingReport:
    """What a lander did with one unit: started verifying it, landed it, or bounced it."""

    task_ids: tuple[str, ...]
    lander: Identity
    outcome: str
    approved_commits: tuple[str, ...]
    target: str
    remote: str | None = None
    method: str = "merge"
    target_commit: str | None = None
    landed_commit: str | None = None
    changed_paths: tuple[str, ...] = ()
    results: list[bytes] = field(default_factory=list)  # anvil.verification artifacts of the merged tree
    reason: str | None = None  # a bounce's BounceReason
    conflict_paths: tuple[str, ...] = ()
    failed_command: str | None = None
    excerpt: str | None = None


def _latest(conn: Connection, task_id: str, review_seq: int) -> dict[str, Any] | None:
    row = conn.execute("SELECT outcome, lander, lander_key, lease_expires_at, landed_commit, reason, detail, seq "
                       "FROM landings WHERE task_id = ? AND review_seq = ? ORDER BY seq DESC LIMIT 1",
                       (task_id, review_seq)).fetchone()
    if row is None:
        return None
    return {"outcome": row[0], "lander": row[1], "lander_key": row[2], "lease_expires_at": row[3],
            "landed_commit": row[4], "reason": row[5], "detail": json.loads(row[6]) if row[6] else None,
            "seq": row[7]}


def _unit_of(conn: Connection, task_id: str) -> tuple[str, list[str]]:
    """The unit a task lands in: its approved bundle and that bundle's members, or the task alone."""
    row = conn.execute("SELECT b.id FROM bundle_members m JOIN bundles b ON b.id = m.bundle_id WHERE m.task_id = ? "
                       "AND b.status = 'approved' ORDER BY b.updated_seq DESC LIMIT 1", (task_id,)).fetchone()
    if row is None:
        return task_id, [task_id]
    members = [r[0] for r in conn.execute("SELECT task_id FROM bundle_members WHERE bundle_id = ? ORDER BY position, "
                                          "task_id", (row[0],))]
    return row[0], members


def record(tx: Transaction, report: LandingReport) -> dict[str, Any]:
    """Record a lander's step on one unit.

    Raises:
        UsageError: ``invalid_commit``, ``invalid_input`` (a bounce without its reason, paths or
            command), ``proof_invalid``, ``too_many_proofs``.
        NotFound: ``task_not_found``.
        Refused: ``landing_not_enabled``, ``landing_target_mismatch``, ``landing_not_approved``,
            ``landing_dependency_waiting``,
            ``landing_needs_commit``, ``landing_stale_approval``, ``landing_unit_incomplete``,
            ``already_landed``, ``landing_in_progress``, ``landing_unproven``, ``proof_mismatch``,
            ``proof_tampered``, ``proof_untrusted_signer``, ``verification_not_in_contract``.
    """
    from anvil.engine.git.commits import check_object_id

    config = landing_config(tx.conn)
    if not config["target"]:
        raise Refused("this project does not land work: the lead enables it with `anvil config --land-target "
                      "BRANCH [--land-remote NAME]`", code="landing_not_enabled")
    if report.target != config["target"] or (report.remote or None) != config["remote"]:
        raise Refused(f"the project lands on {config['target']}"
                      f"{' at remote ' + config['remote'] if config['remote'] else ''}, not on {report.target[:200]}"
                      f"{' at remote ' + report.remote[:200] if report.remote else ''}: read the queue again "
                      "(`anvil land --dry-run`)", code="landing_target_mismatch")
    if not report.task_ids or len(report.task_ids) != len(report.approved_commits):
        raise UsageError("name each task of the unit with the approved commit it lands (same order)",
                         code="invalid_input", details={"field": "approved_commits"})
    tasks = [task_rows.get_task(tx.conn, t) for t in report.task_ids]
    ids = [t["id"] for t in tasks]
    unit, members = _unit_of(tx.conn, ids[0])
    if sorted(members) != sorted(ids):
        raise Refused(f"task {ids[0]} lands as one unit with bundle {unit}'s members ({', '.join(members[:12])}): "
                      "land them together", code="landing_unit_incomplete")
    if report.outcome != "bounced":
        _dependencies_landed(tx.conn, tasks, set(ids))
    approvals: list[dict[str, Any]] = []
    for task, commit in zip(tasks, report.approved_commits, strict=True):
        approvals.append(_approval(tx.conn, task, str(check_object_id(commit, "--approved-commit")), report,
                                   format_ts(tx.now)))
    proofs: list[dict[str, Any]] = []
    detail: dict[str, Any] = {}
    if report.outcome == "landed":
        landed = str(check_object_id(report.landed_commit, "--landed-commit")) if report.landed_commit else None
        if landed is None:
            raise UsageError("a landing names the commit the target now holds (--landed-commit)", code="invalid_input",
                             details={"field": "landed_commit"})
        proofs = _check_results(tx.conn, report, tasks, landed)
    elif report.outcome == "bounced":
        detail = _bounce_detail(tx.conn, report)
    payload = {"task_ids": ids, "unit": unit, "target": report.target, "remote": report.remote,
               "method": report.method, "target_commit": report.target_commit,
               "approved": [{"task_id": a["task_id"], "commit": a["commit"], "tree": a["tree"],
                             "review_seq": a["review_seq"], "branch": a["branch"]} for a in approvals],
               "lander": report.lander.actor, "lander_role": report.lander.role,
               "lander_authenticated": report.lander.authenticated}
    if report.outcome == "started":
        payload["lease_expires_at"] = format_ts(tx.now + timedelta(seconds=LEASE_SECONDS))
        tx.append("task.land_started", payload)
    elif report.outcome == "landed":
        tx.append("task.landed", {**payload, "landed_commit": report.landed_commit,
                                  "changed_paths": sorted(set(report.changed_paths))[:MAX_PATHS], "proofs": proofs})
        if unit != ids[0]:
            tx.append("bundle.merged", {"bundle_id": unit, "commit_sha": report.landed_commit, "pr_url": None})
    else:
        tx.append("task.land_bounced", {**payload, **detail})
    return {"task_ids": ids, "unit": unit, "outcome": report.outcome, "target": report.target,
            "remote": report.remote, "approved_commits": [a["commit"] for a in approvals],
            "landed_commit": report.landed_commit if report.outcome == "landed" else None,
            "proofs": [{k: p[k] for k in ("task_id", "command", "exit_code", "digest", "duration_ms")} for p in proofs],
            "bounce": detail or None,
            "to_status": "ready" if report.outcome == "bounced" else "done",
            "lease_expires_at": payload.get("lease_expires_at")}


def _dependencies_landed(conn: Connection, tasks: list[dict[str, Any]], unit: set[str]) -> None:
    """Refuse to land a unit before the dependencies outside it have landed.

    Raises:
        Refused: ``landing_dependency_waiting``.
    """
    waits = task_rows.unfinished_dependencies(conn, [t["id"] for t in tasks])
    outside = sorted({d for deps in waits.values() for d in deps if d not in unit})
    if outside:
        raise Refused(f"{', '.join(sorted(waits))} depend(s) on {', '.join(outside[:10])}, which has not landed: a "
                      "task lands after its dependencies (land them first; a bounced one goes back to its "
                      "implementer)", code="landing_dependency_waiting", details={"waiting_on": outside[:50]})


def _approval(conn: Connection, task: dict[str, Any], commit: str, report: LandingReport,
              stamp: str) -> dict[str, Any]:
    """The task's approval, when this report may land it.

    Raises:
        Refused: ``landing_not_approved``, ``landing_needs_commit``, ``landing_stale_approval``,
            ``already_landed``, ``landing_in_progress``.
    """
    task_id = task["id"]
    if task["status"] != "done":
        raise Refused(f"task {task_id} is {task['status']}, not approved: only approved (done) work lands",
                      code="landing_not_approved")
    approval = approved_commit(conn, task_id)
    if approval is None:
        raise Refused(f"the approval of task {task_id} names no commit (its work was not submitted from a claim "
                      "branch or worktree), so there is nothing to land", code="landing_needs_commit")
    if approval["commit"] != commit:
        raise Refused(f"task {task_id} was approved at commit {approval['commit'][:12]}, not {commit[:12]}: land "
                      "exactly the approved commit (read the queue again)", code="landing_stale_approval")
    latest = _latest(conn, task_id, approval["review_seq"])
    row = conn.execute("SELECT landed_seq FROM tasks WHERE id = ?", (task_id,)).fetchone()
    if row[0] is not None:
        raise Refused(f"task {task_id} has landed already (its approved commit {commit[:12]} is on the target)",
                      code="already_landed")
    if (latest is not None and latest["outcome"] == "started" and latest["lander_key"] != report.lander.key
            and report.outcome == "started" and latest["lease_expires_at"] > stamp):
        raise Refused(f"{latest['lander']} is landing task {task_id} (until {latest['lease_expires_at']}): take the "
                      "next one", code="landing_in_progress")
    return {**approval, "task_id": task_id}


def _check_results(conn: Connection, report: LandingReport, tasks: list[dict[str, Any]],
                   landed: str) -> list[dict[str, Any]]:
    """The re-proofs of the merged tree: every contract command of every task passed on ``landed``.

    Raises:
        UsageError: ``proof_invalid``, ``too_many_proofs``.
        Refused: ``proof_mismatch``, ``proof_tampered``, ``verification_not_in_contract``,
            ``proof_untrusted_signer``, ``landing_unproven``.
    """
    from anvil.engine.proof.artifacts import VERIFICATION, load
    from anvil.engine.proof.contract import contract_commands, prd_contract
    from anvil.engine.proof.signing import check_signature
    from anvil.engine.work.continuation import argv_command, normal_command

    if len(report.results) > 200:
        raise UsageError("at most 200 results per landing", code="too_many_proofs")
    wanted = {t["id"]: {normal_command(c) for c in contract_commands(t, prd_contract(conn, t)[0])} for t in tasks}
    passed: dict[str, set[str]] = {t: set() for t in wanted}
    out: list[dict[str, Any]] = []
    for number, data in enumerate(report.results, 1):
        what = f"result {number}"
        artifact = load(data, VERIFICATION, what)
        body = artifact.body
        if not body["argv"] or argv_command(body["argv"]) != body["command"]:
            raise Refused(f"{what} names a command that is not its argv", code="proof_tampered")
        if body["task_id"] not in wanted or body["commit"] != landed:
            raise Refused(f"{what} was made for another task or commit than this landing ({landed[:12]})",
                          code="proof_mismatch")
        if normal_command(body["command"]) not in wanted[body["task_id"]]:
            raise Refused(f"{what}: `{body['command'][:200]}` is not a command of task {body['task_id']}'s contract",
                          code="verification_not_in_contract")
        issuer = check_signature(conn, artifact.signature, artifact.signed_bytes(), what)
        if body["exit_code"] == 0:
            passed[body["task_id"]].add(normal_command(body["command"]))
        out.append({"task_id": body["task_id"], "command": body["command"], "exit_code": body["exit_code"],
                    "digest": artifact.digest, "duration_ms": body["duration_ms"],
                    "output_sha256": body["output_sha256"], "issuer_id": issuer, "tree": body["tree"]})
    missing = [f"{t}: {c}" for t, commands in wanted.items() for c in sorted(commands - passed[t])]
    if missing:
        raise Refused(f"the merged tree is not re-proven: {'; '.join(missing[:5])} has no passing run on "
                      f"{landed[:12]} (a failing run bounces the task instead)", code="landing_unproven",
                      details={"missing": missing[:50]})
    return out


def _bounce_detail(conn: Connection, report: LandingReport) -> dict[str, Any]:
    """What a bounce tells the implementer: the reason, and the conflicting paths with the landed tasks
    that touched them, or the failing command with its excerpt.

    Raises:
        UsageError: ``invalid_input`` when the reason's facts are missing.
    """
    reason = report.reason
    if reason == "conflict":
        paths = sorted(set(report.conflict_paths))[:MAX_PATHS]
        if not paths:
            raise UsageError("a conflict bounce names the conflicting paths (--conflict-path)", code="invalid_input",
                             details={"field": "conflict_paths"})
        touched: dict[str, list[str]] = {}
        for start in range(0, len(paths), 500):
            chunk = paths[start:start + 500]
            for path, task_id in conn.execute(f"SELECT path, task_id FROM landing_files WHERE path IN "
                                              f"({','.join('?' * len(chunk))}) ORDER BY path, seq", chunk):
                touched.setdefault(path, []).append(task_id)
        return {"reason": reason, "conflict_paths": paths, "touched_by": touched}
    if reason == "proof_failed":
        if not report.failed_command:
            raise UsageError("a failed re-proof names the command that failed (--failed-command)",
                             code="invalid_input", details={"field": "failed_command"})
        return {"reason": reason, "failed_command": report.failed_command[:4096],
                "excerpt": (report.excerpt or "")[-EXCERPT_CHARS:]}
    if reason == "stale":
        return {"reason": reason, "excerpt": (report.excerpt or "")[-EXCERPT_CHARS:]}
    raise UsageError("a bounce names its reason: conflict, proof_failed or stale (--reason)", code="invalid_input",
                     details={"field": "reason"})


def _insert(conn: Connection, event: Event, outcome: str, extra: dict[str, Any]) -> None:
    p = event.payload
    conn.executemany(
        "INSERT INTO landings (seq, task_id, unit, outcome, review_seq, approved_commit, target, remote, method, "
        "target_commit, landed_commit, reason, detail, lander, lander_key, lander_role, recorded_at, "
        "lease_expires_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [(event.seq, a["task_id"], p["unit"], outcome, a["review_seq"], a["commit"], p["target"], p["remote"],
          p["method"], p["target_commit"], p.get("landed_commit"), p.get("reason"),
          json.dumps(extra, sort_keys=True) if extra else None, p["lander"], name_key(p["lander"]), p["lander_role"],
          event.ts, p.get("lease_expires_at")) for a in p["approved"]])


@applies("task.land_started")
def _apply_started(conn: Connection, event: Event) -> None:
    _insert(conn, event, "started", {})


@applies("task.landed")
def _apply_landed(conn: Connection, event: Event) -> None:
    p = event.payload
    _insert(conn, event, "landed", {"proofs": len(p["proofs"])})
    for approval in p["approved"]:
        task_rows.mark_landed(conn, approval["task_id"], event.seq)
        conn.executemany("INSERT INTO landing_files (path, task_id, seq) VALUES (?,?,?) ON CONFLICT (path, task_id) "
                         "DO UPDATE SET seq = excluded.seq",
                         [(path, approval["task_id"], event.seq) for path in p["changed_paths"]])


@applies("task.land_bounced")
def _apply_bounced(conn: Connection, event: Event) -> None:
    p = event.payload
    _insert(conn, event, "bounced", {k: p[k] for k in ("conflict_paths", "touched_by", "failed_command", "excerpt")
                                     if k in p})
    for approval in p["approved"]:
        task_rows.set_status(conn, approval["task_id"], "ready", event.seq)
    if p["unit"] != p["approved"][0]["task_id"]:
        conn.execute("UPDATE bundles SET status = 'changes_requested', updated_seq = ? WHERE id = ? AND status = "
                     "'approved'", (event.seq, p["unit"]))


def queue(conn: Connection, now: Any) -> dict[str, Any]:
    """The landing queue: units waiting or being verified, in landing order, and recent landings and bounces.

    Order: a unit comes after the units holding its dependencies (dependency order), then by the
    approval's event (approval order). Each unit lists its tasks with the approved commit, the claim
    branch, the claim's worktree, the contract commands and the landing state.
    """
    from anvil.engine.proof.contract import contract_commands, prd_contract

    config = landing_config(conn)
    stamp = stamp_of(now)
    entries: dict[str, dict[str, Any]] = {}
    for (task_id,) in conn.execute("SELECT id FROM tasks WHERE status = 'done' AND landed_seq IS NULL ORDER BY id"):
        approval = approved_commit(conn, task_id)
        task = task_rows.get_task(conn, task_id)
        entry: dict[str, Any] = {"task_id": task_id, "title": task["title"], "dependencies": task["dependencies"],
                                 "commands": contract_commands(task, prd_contract(conn, task)[0]), "state": "approved",
                                 "approved_commit": None, "tree": None, "branch": None, "review_seq": 0,
                                 "claim_worktree": None, "lander": None, "lease_expires_at": None}
        if approval is None:
            entry["state"] = "unlandable"
        else:
            entry.update(approved_commit=approval["commit"], tree=approval["tree"], branch=approval["branch"],
                         review_seq=approval["review_seq"], claim_worktree=_worktree(conn, approval["evidence_id"]))
            latest = _latest(conn, task_id, approval["review_seq"])
            if latest and latest["outcome"] == "started" and latest["lease_expires_at"] > stamp:
                entry.update(state="verifying", lander=latest["lander"], lease_expires_at=latest["lease_expires_at"])
        entries[task_id] = entry
    units: dict[str, dict[str, Any]] = {}
    for task_id, entry in entries.items():
        unit, members = _unit_of(conn, task_id)
        held = units.setdefault(unit, {"unit": unit, "bundle_id": unit if unit != task_id or len(members) > 1 else None,
                                       "tasks": [], "review_seq": 0})
        held["tasks"].append(entry)
        held["review_seq"] = max(held["review_seq"], entry["review_seq"])
    ordered = _order(units, entries)
    landed = [_recent(row) for row in conn.execute(
        "SELECT l.task_id, l.outcome, l.landed_commit, l.approved_commit, l.reason, l.detail, l.lander, l.recorded_at "
        "FROM landings l JOIN tasks t ON t.id = l.task_id WHERE l.outcome = 'landed' AND t.landed_seq = l.seq "
        f"ORDER BY l.seq DESC LIMIT {RECENT}")]
    bounced = [_recent(row) for row in conn.execute(
        "SELECT l.task_id, l.outcome, l.landed_commit, l.approved_commit, l.reason, l.detail, l.lander, l.recorded_at "
        "FROM landings l JOIN tasks t ON t.id = l.task_id WHERE l.outcome = 'bounced' AND t.status != 'done' AND "
        "l.seq = (SELECT MAX(seq) FROM landings x WHERE x.task_id = l.task_id) "
        f"ORDER BY l.seq DESC LIMIT {RECENT}")]
    counts = {"approved": sum(1 for e in entries.values() if e["state"] == "approved"),
              "verifying": sum(1 for e in entries.values() if e["state"] == "verifying"),
              "unlandable": sum(1 for e in entries.values() if e["state"] == "unlandable"),
              "landed": conn.execute("SELECT COUNT(*) FROM tasks WHERE landed_seq IS NOT NULL").fetchone()[0],
              "bounced": len(bounced)}
    return {"enabled": bool(config["target"]), "target": config["target"], "remote": config["remote"],
            "method": config["method"], "delete_branch": config["delete_branch"], "units": ordered,
            "counts": counts, "landed": landed, "bounced": bounced}


def board_queue(conn: Connection, now: str) -> list[dict[str, Any]]:
    """The landing queue as the board shows it: each task with its state (approved, verifying,
    unlandable, then the latest bounced and landed), approved commit and landed commit."""
    if not landing_config(conn)["target"]:
        return []
    view = queue(conn, now)
    out = [{"task_id": t["task_id"], "title": t["title"], "state": t["state"], "approved_commit": t["approved_commit"],
            "landed_commit": None, "detail": t["lander"]} for unit in view["units"] for t in unit["tasks"]]
    for item in view["bounced"] + view["landed"]:
        detail = ", ".join(item["conflict_paths"][:5]) or item["failed_command"] or item["reason"]
        out.append({"task_id": item["task_id"], "title": None, "state": item["state"],
                    "approved_commit": item["approved_commit"], "landed_commit": item["landed_commit"],
                    "detail": detail})
    return out


def _worktree(conn: Connection, evidence_id: str) -> str | None:
    row = conn.execute("SELECT c.git_target FROM evidence e JOIN claims c ON c.id = e.claim_id WHERE e.id = ?",
                       (evidence_id,)).fetchone()
    return row[0] if row and row[0] else None


def _recent(row: Any) -> dict[str, Any]:
    detail = json.loads(row[5]) if row[5] else {}
    return {"task_id": row[0], "state": row[1], "landed_commit": row[2], "approved_commit": row[3], "reason": row[4],
            "conflict_paths": detail.get("conflict_paths") or [], "touched_by": detail.get("touched_by") or {},
            "failed_command": detail.get("failed_command"), "excerpt": detail.get("excerpt"), "lander": row[6],
            "recorded_at": row[7]}


def _order(units: dict[str, dict[str, Any]], entries: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Units in dependency order (a unit after those holding its dependencies), then approval order."""
    owner = {entry["task_id"]: unit for unit, held in units.items() for entry in held["tasks"]}
    needs = {unit: {owner[d] for e in held["tasks"] for d in e["dependencies"] if d in owner and owner[d] != unit}
             for unit, held in units.items()}
    out: list[dict[str, Any]] = []
    placed: set[str] = set()
    pending = sorted(units, key=lambda u: (units[u]["review_seq"], u))
    while pending:
        ready = [u for u in pending if needs[u] <= placed] or pending[:1]  # a cycle cannot block the queue
        chosen = ready[0]
        pending.remove(chosen)
        placed.add(chosen)
        held = units[chosen]
        held["tasks"].sort(key=lambda e: (e["review_seq"], e["task_id"]))
        out.append(held)
    return out
