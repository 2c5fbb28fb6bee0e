"""Planning state: apply a plan, score tasks, promote them to ready, edit dependencies.

Each operation validates its whole batch first and then records exactly one event, so a refusal
never leaves a partial plan, and replaying the event reproduces the projection.
"""

from __future__ import annotations

import json
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.errors import NotFound, Refused
from anvil.engine.planning.dependencies import apply_dependency_edits, find_cycle
from anvil.engine.planning.planner import diff_plans, drain, plan_from_document
from anvil.engine.planning.readiness import readiness_problems
from anvil.engine.planning.scoring import graph_stats, score_task, validate_score_batch
from anvil.engine.prd.lifecycle import require_prd
from anvil.engine.prd.model import (
    LATER_SECTIONS,
    CommandNote,
    DecisionMarker,
    Feature,
    OpenQuestion,
    PrdDocument,
    Requirement,
    TaskSpec,
)
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, Transaction, applies

PAST_READY = frozenset({"claimed", "in_progress", "blocked", "needs_review", "accepted", "done", "rejected"})
REWORKABLE = frozenset({"proposed", "drafted", "reviewed", "ready"})
MAX_WARNINGS = 20


def document_from_dict(data: dict[str, Any]) -> PrdDocument:
    """Rebuild the parsed document stored with a PRD revision (one recorded before a field existed
    gets the field's default)."""
    return PrdDocument(
        project_name=data["project_name"], summary=data["summary"], goals=tuple(data["goals"]),
        non_goals=tuple(data["non_goals"]),
        requirements=tuple(Requirement(**r) for r in data["requirements"]),
        open_questions=tuple(OpenQuestion(**q) for q in data["open_questions"]),
        features=tuple(Feature(**{**f, "requirements": tuple(f["requirements"])}) for f in data["features"]),
        tasks=tuple(_task_spec(t) for t in data["tasks"]),
        decisions=tuple(DecisionMarker(**d) for d in data["decisions"]),
        **{key: tuple(data.get(key, ())) for key in LATER_SECTIONS},
    )


def _task_spec(t: dict[str, Any]) -> TaskSpec:
    notes = t.get("verification_notes")
    return TaskSpec(
        id=t["id"], title=t["title"], feature_id=t["feature_id"], priority=t["priority"], type=t["type"],
        likely_files=tuple(t["likely_files"]), dependencies=tuple(t["dependencies"]),
        acceptance_criteria=tuple(t["acceptance_criteria"]), verification=tuple(t["verification"]),
        description=t["description"], line=t["line"], claims=t.get("claims", ()), artifacts=t.get("artifacts", ()),
        verification_notes=tuple(CommandNote(**v) for v in notes) if notes else (),
        conflicts=tuple(t.get("conflicts", ())))


def plan(tx: Transaction, prd_id: str, *, prune_force: bool) -> dict[str, Any]:
    """Plan the PRD's current revision into features and tasks, as one ``planning.batch_applied``.

    Raises:
        NotFound: no such PRD.
        Refused: orphaned tasks past ready without ``prune_force``, or task ids owned by another PRD.
    """
    prd = require_prd(tx.conn, prd_id)
    planned = plan_from_document(document_from_dict(prd["document"]))
    overridden = _apply_overrides(tx.conn, planned.tasks, planned.warnings)
    existing = {t["id"]: t for t in task_rows.tasks_of(tx.conn, prd_id)}
    foreign = _foreign_ids(tx.conn, prd_id, [t["id"] for t in planned.tasks])
    if foreign:
        raise Refused(f"{len(foreign)} task id(s) of this PRD already belong to another PRD; renumber them",
                      code="task_id_collision")
    diff = diff_plans(list(existing.values()), planned.tasks)
    orphans_past_ready = [tid for tid in diff["removed"] if existing[tid]["status"] in PAST_READY]
    if orphans_past_ready and not prune_force:
        raise Refused(f"{len(orphans_past_ready)} task(s) no longer in the PRD have work recorded (past ready); "
                      "pass prune_force with confirm to remove them (history stays in the log)",
                      code="orphans_past_ready")
    changed = set(diff["changed"])
    final: list[dict[str, Any]] = []
    for task in planned.tasks:
        old = existing.get(task["id"])
        entry = {**task, "prd_id": prd_id}
        # Group ids are numbered per plan; the PRD prefix keeps two PRDs' groups apart.
        entry["conflict_groups"] = [f"{prd_id}/{group}" for group in task["conflict_groups"]]
        if old is None:
            entry.update(status="drafted", scores=None)
        elif task["id"] in changed:
            entry.update(status="drafted" if old["status"] in REWORKABLE else old["status"], scores=None)
        else:
            entry.update(status=old["status"], scores=old["scores"])
        final.append(entry)
    old_features = [{"id": r[0], "title": r[1], "description": r[2], "requirements": json.loads(r[3]),
                     "prd_id": prd_id} for r in tx.conn.execute(
        "SELECT id, title, description, requirements FROM features WHERE prd_id = ? ORDER BY position", (prd_id,))]
    new_features = [{**f, "prd_id": prd_id} for f in planned.features]
    removed_features = sorted({f["id"] for f in old_features} - {f["id"] for f in new_features})
    unchanged = (not diff["added"] and not diff["changed"] and not diff["removed"] and old_features == new_features
                 and prd["planned_revision"] == prd["revision"])
    if not unchanged:
        tx.append("planning.batch_applied", {
        "prd_id": prd_id, "revision": prd["revision"], "source_digest": prd["source_digest"],
            "features": new_features, "tasks": final, "pruned_task_ids": diff["removed"],
            "pruned_feature_ids": removed_features})
    # Manual dependency edits change who can start when: then the plan as recorded is drained again.
    width, rounds = planned.startable_width, planned.drain_rounds
    if overridden:
        drained = drain(final)
        width, rounds = drained.width, drained.rounds
    return {"prd_id": prd_id, "revision": prd["revision"], "feature_count": len(new_features),
            "task_count": len(final), "conflict_group_count": len(planned.conflict_groups),
            "startable_width": width, "drain_rounds": rounds,
            **bounded_warnings(planned.warnings),
            "added": diff["added"], "changed": diff["changed"], "removed": diff["removed"],
            "pruned_task_ids": diff["removed"], "pruned_feature_ids": removed_features}


def bounded_warnings(warnings: list[str]) -> dict[str, Any]:
    """Plan warnings for output: at most :data:`MAX_WARNINGS`, each at most 1024 UTF-8 bytes, with the
    counts that tell a complete list from a cut one."""
    from anvil.engine.errors import bound_text

    shown = [bound_text(text) for text in warnings[:MAX_WARNINGS]]
    cut = sum(a != b for a, b in zip(shown, warnings, strict=False))
    omitted = max(0, len(warnings) - MAX_WARNINGS)
    return {"warnings": shown, "warning_count": len(warnings), "warnings_shown": len(shown),
            "warnings_omitted": omitted, "warnings_truncated": omitted > 0, "warning_messages_truncated": cut}


def _apply_overrides(conn: Connection, tasks: list[dict[str, Any]], warnings: list[str]) -> bool:
    """Re-apply manual dependency edits (edit_dependencies) to freshly planned tasks; whether there were any.

    A manual removal wins over the PRD; a manual addition whose target no longer exists, or that
    would close a cycle, is dropped with a warning.
    """
    rows = conn.execute("SELECT task_id, depends_on, kind FROM dependency_overrides ORDER BY task_id, depends_on"
                        ).fetchall()
    if not rows:
        return False
    by_id = {t["id"]: t for t in tasks}
    known = set(by_id) | {r[0] for r in conn.execute("SELECT id FROM tasks")}
    for task_id, target, kind in rows:
        task = by_id.get(task_id)
        if task is None:
            continue
        deps = task["dependencies"]
        if kind == "remove" and target in deps:
            deps.remove(target)
        elif kind == "add" and target not in deps:
            if target in known:
                deps.append(target)
            else:
                warnings.append(f"manual dependency {task_id} -> {target} dropped: {target} no longer exists")
    graph = {tid: list(t["dependencies"]) for tid, t in by_id.items()}
    for other in task_rows.tasks_of(conn):
        graph.setdefault(other["id"], list(other["dependencies"]))
    if find_cycle(graph) is not None:
        for task_id, target, kind in rows:
            task = by_id.get(task_id)
            if kind == "add" and task is not None and target in task["dependencies"]:
                task["dependencies"].remove(target)
                warnings.append(f"manual dependency {task_id} -> {target} dropped: it would close a cycle")
    return True


def _foreign_ids(conn: Connection, prd_id: str, ids: list[str]) -> list[str]:
    foreign: list[str] = []
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        foreign += [r[0] for r in conn.execute(f"SELECT id FROM tasks WHERE prd_id != ? AND id IN ({marks})",
                                               (prd_id, *chunk))]
    return foreign


@applies("planning.batch_applied")
def _apply_plan(conn: Connection, event: Event) -> None:
    p = event.payload
    for task_id in p["pruned_task_ids"]:
        task_rows.delete_task(conn, task_id)
        conn.execute("UPDATE claims SET status = 'ended', ended_at = ?, end_reason = 'pruned' "
                     "WHERE task_id = ? AND status = 'active'", (event.ts, task_id))
        conn.execute("DELETE FROM claim_files WHERE claim_id IN (SELECT id FROM claims WHERE task_id = ?)",
                     (task_id,))
    conn.execute("DELETE FROM features WHERE prd_id = ?", (p["prd_id"],))
    conn.executemany(
        "INSERT INTO features (id, prd_id, title, description, requirements, position) VALUES (?,?,?,?,?,?)",
        [(f["id"], p["prd_id"], f["title"], f["description"], task_rows._j(f["requirements"]), i)
         for i, f in enumerate(p["features"])])
    for task in p["tasks"]:
        task_rows.write_task(conn, task, event.seq)
    task_rows.refresh_unmet(conn, [t["id"] for t in p["tasks"]] + p["pruned_task_ids"])
    conn.execute("UPDATE prds SET planned_revision = ? WHERE prd_id = ?", (p["revision"], p["prd_id"]))


def score(tx: Transaction, *, task_id: str | None, prd_id: str | None) -> dict[str, Any]:
    """Score one task, or every unscored task of the PRD (``prd_id`` None: all PRDs).

    The whole batch is validated before the single ``tasks.scored`` event is written.

    Raises:
        NotFound: ``task_id`` does not exist.
    """
    scope = task_rows.tasks_of(tx.conn, prd_id)
    everything = scope if prd_id is None else task_rows.tasks_of(tx.conn)
    stats = graph_stats(everything)
    if task_id is not None:
        targets = [t for t in scope if t["id"] == task_id]
        if not targets:
            raise NotFound(f"task {task_id[:40]!r} not found in the selected PRD", code="task_not_found")
        skipped = 0
    else:
        targets = [t for t in scope if not t["scores"]]
        skipped = len(scope) - len(targets)
    batch = {t["id"]: score_task(t, stats[t["id"]]) for t in targets}
    validate_score_batch(batch)
    if batch:
        tx.append("tasks.scored", {"method": "rules", "scores": batch})
    return {"prd_id": prd_id, "scored": [{"task_id": tid, **scores} for tid, scores in batch.items()],
            "scored_count": len(batch), "skipped_already_scored": skipped}


@applies("tasks.scored")
def _apply_scored(conn: Connection, event: Event) -> None:
    for task_id, scores in event.payload["scores"].items():
        task_rows.set_scores(conn, task_id, scores, event.seq)


def review_tasks(tx: Transaction, prd_id: str | None) -> dict[str, Any]:
    """Promote drafted tasks that pass the readiness gate to reviewed, and reviewed ones to ready, and
    confirm the scores of the tasks in scope (``confirmed_scores``: the risk ceilings of an offer trust
    only scores a person confirmed, never the rules' guess alone).

    Tasks failing the gate are listed in ``blocked`` with their problems and stay drafted (their
    scores stay unconfirmed).
    """
    scope = task_rows.tasks_of(tx.conn, prd_id)
    to_reviewed: list[str] = []
    blocked: list[dict[str, Any]] = []
    for task in scope:
        if task["status"] in ("proposed", "drafted"):
            problems = readiness_problems(task)
            if problems:
                blocked.append({"task_id": task["id"], "problems": problems})
            else:
                to_reviewed.append(task["id"])
    to_ready = [t["id"] for t in scope if t["status"] == "reviewed"] + to_reviewed
    to_ready.sort()
    gated = {b["task_id"] for b in blocked}
    confirmed = task_rows.unconfirmed_scored(tx.conn, [t["id"] for t in scope if t["id"] not in gated
                                                       and t["status"] not in ("done", "accepted")])
    if to_reviewed or to_ready or confirmed:
        tx.append("tasks.reviewed", {"prd_id": prd_id, "to_reviewed": to_reviewed, "to_ready": to_ready,
                                     "confirmed_scores": confirmed})
    return {"prd_id": prd_id, "promoted_to_reviewed": to_reviewed, "promoted_to_ready": to_ready,
            "blocked": blocked, "confirmed_scores": confirmed}


@applies("tasks.reviewed")
def _apply_reviewed(conn: Connection, event: Event) -> None:
    for task_id in event.payload["to_ready"]:
        task_rows.set_status(conn, task_id, "ready", event.seq)
    task_rows.confirm_scores(conn, event.payload.get("confirmed_scores", []), event.seq)


def edit_dependencies(tx: Transaction, prd_id: str | None, add: Any, remove: Any) -> dict[str, Any]:
    """Apply a validated batch of dependency edits as one event (no-op batches write nothing).

    Raises:
        UsageError, NotFound, Refused: as :func:`anvil.engine.planning.dependencies.apply_dependency_edits`.
    """
    current = {task["id"]: list(task["dependencies"]) for task in task_rows.tasks_of(tx.conn)}
    allowed = None if prd_id is None else {r[0] for r in tx.conn.execute(
        "SELECT id FROM tasks WHERE prd_id = ?", (prd_id,))}
    edit = apply_dependency_edits(current, add, remove, sources_allowed=allowed)
    if edit.changed:
        tx.append("task.dependencies_batch_edited", {
            "prd_id": prd_id, "changes": [{"task_id": tid, "before": current[tid], "after": edit.new[tid]}
                                          for tid in edit.changed],
            "added": edit.added, "removed": edit.removed})
    return {"prd_id": prd_id, "changed": edit.changed, "added": edit.added, "removed": edit.removed}


@applies("task.dependencies_batch_edited")
def _apply_dependency_edit(conn: Connection, event: Event) -> None:
    for change in event.payload["changes"]:
        conn.execute("UPDATE tasks SET dependencies = ?, updated_seq = ? WHERE id = ?",
                     (task_rows._j(change["after"]), event.seq, change["task_id"]))
        task_rows.set_dependencies(conn, change["task_id"], change["after"])
    task_rows.refresh_unmet(conn, [c["task_id"] for c in event.payload["changes"]])
    # Manual edits outlive re-planning: plan() re-applies them on top of what the PRD says.
    for kind, edges in (("add", event.payload.get("added", [])), ("remove", event.payload.get("removed", []))):
        conn.executemany("INSERT INTO dependency_overrides (task_id, depends_on, kind) VALUES (?,?,?) "
                         "ON CONFLICT (task_id, depends_on) DO UPDATE SET kind = excluded.kind",
                         [(source, target, kind) for source, target in edges])
