"""Task rows of the projection: reading them as dicts, their public view, and writing them from event payloads."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from anvil.engine.errors import NotFound
from anvil.engine.storage.connection import Connection
from anvil.engine.vocab import PRIORITY_RANK

TASK_COLUMNS = (
    "id", "prd_id", "feature_id", "title", "description", "status", "priority", "type", "likely_files",
    "dependencies", "inferred_dependencies", "acceptance_criteria", "verification", "conflict_groups", "scores",
    "claim_generation", "unmet_deps", "created_seq", "updated_seq",
)
JSON_COLUMNS = frozenset({"likely_files", "dependencies", "inferred_dependencies", "acceptance_criteria",
                          "verification", "conflict_groups", "scores"})
SELECT_TASK = f"SELECT {', '.join(TASK_COLUMNS)} FROM tasks"


def row_to_task(row: Iterable[Any]) -> dict[str, Any]:
    task = dict(zip(TASK_COLUMNS, row, strict=True))
    for column in JSON_COLUMNS:
        value = task[column]
        task[column] = json.loads(value) if value is not None else None
    return task


def task_read(task_id: str) -> tuple[str, tuple[str]]:
    """The statement :func:`get_task` runs first (for ``Store.read_ahead``)."""
    return f"{SELECT_TASK} WHERE id = ?", (task_id,)


def get_task(conn: Connection, task_id: str) -> dict[str, Any]:
    """The task ``task_id``.

    Raises:
        NotFound: no such task (code ``task_not_found``).
    """
    row = conn.execute(*task_read(task_id)).fetchone()
    if row is None and task_id[:1] in "rft" and task_id != task_id.upper():
        row = conn.execute(f"{SELECT_TASK} WHERE id = ?", (task_id.upper(),)).fetchone()  # "t002" means T002
    if row is None:
        raise NotFound(f"task {task_id[:40]!r} not found", code="task_not_found")
    return row_to_task(row)


def tasks_of(conn: Connection, prd_id: str | None = None) -> list[dict[str, Any]]:
    """Every task (of one PRD when ``prd_id`` is given), in id order."""
    if prd_id is None:
        rows = conn.execute(f"{SELECT_TASK} ORDER BY id")
    else:
        rows = conn.execute(f"{SELECT_TASK} WHERE prd_id = ? ORDER BY id", (prd_id,))
    return [row_to_task(r) for r in rows]


def status_counts(conn: Connection) -> list[tuple[str, int, int]]:
    """(status, tasks, of them waiting on dependencies) per status: grouped in the index's order, so no sort."""
    return [(r[0], int(r[1]), int(r[2] or 0)) for r in conn.execute(
        "SELECT status, COUNT(*), SUM(CASE WHEN unmet_deps > 0 THEN 1 ELSE 0 END) FROM tasks GROUP BY status")]


def write_task(conn: Connection, task: dict[str, Any], seq: int) -> None:
    """Insert or replace a task row from a planned task dict (with ``status`` and ``prd_id``)."""
    scores = task.get("scores")
    conn.execute(
        """INSERT INTO tasks (id, prd_id, feature_id, title, description, status, priority, priority_rank, type,
               likely_files, dependencies, inferred_dependencies, acceptance_criteria, verification,
               conflict_groups, scores, complexity, blast_radius, review_risk, claim_generation, created_seq,
               updated_seq)
           VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
           ON CONFLICT(id) DO UPDATE SET prd_id=excluded.prd_id, feature_id=excluded.feature_id,
               title=excluded.title, description=excluded.description, status=excluded.status,
               priority=excluded.priority, priority_rank=excluded.priority_rank, type=excluded.type,
               likely_files=excluded.likely_files, dependencies=excluded.dependencies,
               inferred_dependencies=excluded.inferred_dependencies,
               acceptance_criteria=excluded.acceptance_criteria, verification=excluded.verification,
               conflict_groups=excluded.conflict_groups, scores=excluded.scores, complexity=excluded.complexity,
               blast_radius=excluded.blast_radius, review_risk=excluded.review_risk,
               scores_confirmed_seq=CASE WHEN tasks.scores = excluded.scores THEN tasks.scores_confirmed_seq
                                    ELSE NULL END,
               updated_seq=excluded.updated_seq""",
        (task["id"], task["prd_id"], task.get("feature_id"), task["title"], task.get("description", ""),
         task["status"], task["priority"], PRIORITY_RANK.get(task["priority"], 2), task.get("type"),
         _j(task.get("likely_files", [])), _j(task.get("dependencies", [])),
         _j(task.get("inferred_dependencies", [])), _j(task.get("acceptance_criteria", [])),
         _j(task.get("verification", [])), _j(task.get("conflict_groups", [])),
         None if scores is None else _j(scores), *_score_columns(scores), 0, seq, seq))
    set_dependencies(conn, task["id"], task.get("dependencies", []))
    conn.execute("DELETE FROM task_files WHERE task_id = ?", (task["id"],))
    conn.executemany("INSERT INTO task_files (task_id, file) VALUES (?, ?) ON CONFLICT DO NOTHING",
                     [(task["id"], f) for f in task.get("likely_files", [])])
    conn.execute("DELETE FROM task_conflict_groups WHERE task_id = ?", (task["id"],))
    conn.executemany("INSERT INTO task_conflict_groups (group_id, task_id) VALUES (?, ?)",
                     [(g, task["id"]) for g in task.get("conflict_groups", [])])


def set_dependencies(conn: Connection, task_id: str, dependencies: list[str]) -> None:
    conn.execute("DELETE FROM task_deps WHERE task_id = ?", (task_id,))
    conn.executemany("INSERT INTO task_deps (task_id, depends_on) VALUES (?, ?) ON CONFLICT DO NOTHING",
                     [(task_id, d) for d in dependencies])


def landing_enabled(conn: Connection) -> bool:
    """Whether the project lands approved work (``land_target`` is set): then a dependency is
    finished only once it has landed."""
    row = conn.execute("SELECT config FROM project").fetchone()
    return row is not None and bool(json.loads(row[0]).get("land_target"))


def set_status(conn: Connection, task_id: str, status: str, seq: int) -> None:
    """Change a task's status, keeping whether it is finished (done, and landed when the project
    lands work) and its dependents' count of unfinished dependencies right."""
    if status != "done":
        # Not finished now, and new work lands anew. Two writes and no read, so inside an event's
        # pipeline (``Store.batched_writes``) they wait for no answer: the dependents count this task
        # again if it was finished (read by the first statement, before the second clears it).
        conn.execute("UPDATE tasks SET unmet_deps = unmet_deps + 1 WHERE id IN (SELECT task_id FROM task_deps "
                     "WHERE depends_on = ?) AND EXISTS (SELECT 1 FROM tasks f WHERE f.id = ? AND f.finished = 1)",
                     (task_id, task_id))
        conn.execute("UPDATE tasks SET status = ?, updated_seq = ?, landed_seq = NULL, finished = 0 WHERE id = ?",
                     (status, seq, task_id))
        return
    # One statement: ``finished`` is not changed here, so RETURNING gives its value before (``landed_seq``
    # is returned as it was), and the project's settings beside it (whether work lands) cost no round trip.
    rows = conn.execute("UPDATE tasks SET status = ?, updated_seq = ? WHERE id = ? RETURNING finished, landed_seq, "
                        "(SELECT config FROM project)", (status, seq, task_id)).fetchall()  # whole: the statement ends
    if not rows:
        set_finished(conn, task_id, False, not landing_enabled(conn))
        return
    finished, landed_seq, config = rows[0]
    lands = config is not None and bool(json.loads(config).get("land_target"))
    set_finished(conn, task_id, bool(finished), landed_seq is not None or not lands)


def set_finished(conn: Connection, task_id: str, was: bool, now: bool) -> None:
    """Record whether ``task_id`` is finished for its dependents, adjusting their ``unmet_deps``."""
    if was != now:
        conn.execute("UPDATE tasks SET finished = ? WHERE id = ?", (int(now), task_id))
        conn.execute("UPDATE tasks SET unmet_deps = unmet_deps + ? WHERE id IN "
                     "(SELECT task_id FROM task_deps WHERE depends_on = ?)", (-1 if now else 1, task_id))


def mark_landed(conn: Connection, task_id: str, seq: int) -> None:
    """The task's approved work landed at event ``seq``: it is finished for its dependents."""
    row = conn.execute("SELECT finished FROM tasks WHERE id = ?", (task_id,)).fetchone()
    conn.execute("UPDATE tasks SET landed_seq = ? WHERE id = ?", (seq, task_id))
    if row is not None:
        set_finished(conn, task_id, bool(row[0]), True)


def refresh_finished(conn: Connection) -> None:
    """Recompute every task's ``finished`` and ``unmet_deps`` (the project started or stopped landing)."""
    if landing_enabled(conn):
        conn.execute("UPDATE tasks SET finished = CASE WHEN status = 'done' AND landed_seq IS NOT NULL THEN 1 ELSE 0 "
                     "END")
    else:
        conn.execute("UPDATE tasks SET finished = CASE WHEN status = 'done' THEN 1 ELSE 0 END")
    refresh_unmet(conn)


def unfinished_dependencies(conn: Connection, task_ids: list[str]) -> dict[str, list[str]]:
    """For each of ``task_ids`` that waits on something, the dependencies not finished yet (missing
    ones included), in id order: what ``blocked_by`` shows and why a ready task cannot be claimed yet."""
    out: dict[str, list[str]] = {}
    for start in range(0, len(task_ids), 500):
        chunk = task_ids[start:start + 500]
        rows = conn.execute(
            "SELECT d.task_id, d.depends_on FROM task_deps d LEFT JOIN tasks u ON u.id = d.depends_on "
            f"WHERE d.task_id IN ({','.join('?' * len(chunk))}) AND (u.finished IS NULL OR u.finished = 0) "
            "ORDER BY d.task_id, d.depends_on", chunk).fetchall()
        for task_id, dependency in rows:
            out.setdefault(task_id, []).append(dependency)
    return out


UNMET_SQL = """UPDATE tasks SET unmet_deps = (
    SELECT COUNT(*) FROM task_deps d LEFT JOIN tasks u ON u.id = d.depends_on
    WHERE d.task_id = tasks.id AND (u.finished IS NULL OR u.finished = 0))"""


def refresh_unmet(conn: Connection, task_ids: list[str] | None = None) -> None:
    """Recompute the count of unfinished dependencies (all tasks, or ``task_ids`` and their dependents)."""
    if task_ids is None:
        conn.execute(UNMET_SQL)
        return
    for start in range(0, len(task_ids), 500):
        chunk = task_ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        conn.execute(f"{UNMET_SQL} WHERE id IN ({marks}) OR id IN "
                     f"(SELECT task_id FROM task_deps WHERE depends_on IN ({marks}))", (*chunk, *chunk))


def set_scores(conn: Connection, task_id: str, scores: dict[str, int], seq: int) -> None:
    """Record new scores: they are unconfirmed until a person confirms them (:func:`confirm_scores`)."""
    conn.execute("UPDATE tasks SET scores = ?, complexity = ?, blast_radius = ?, review_risk = ?, "
                 "scores_confirmed_seq = NULL, updated_seq = ? WHERE id = ?",
                 (_j(scores), *_score_columns(scores), seq, task_id))


def unconfirmed_scored(conn: Connection, task_ids: list[str]) -> list[str]:
    """Those of ``task_ids`` (in order) that have scores nobody has confirmed yet."""
    wanted = set(task_ids)
    rows = conn.execute("SELECT id FROM tasks WHERE scores IS NOT NULL AND scores_confirmed_seq IS NULL").fetchall()
    found = {r[0] for r in rows}
    return [t for t in task_ids if t in found and t in wanted]


def confirm_scores(conn: Connection, task_ids: Iterable[str], seq: int) -> None:
    """Mark the tasks' current scores as confirmed by a person (event ``seq``)."""
    conn.executemany("UPDATE tasks SET scores_confirmed_seq = ? WHERE id = ? AND scores IS NOT NULL",
                     [(seq, t) for t in task_ids])


def delete_task(conn: Connection, task_id: str) -> None:
    conn.execute("DELETE FROM tasks WHERE id = ?", (task_id,))
    conn.execute("DELETE FROM task_deps WHERE task_id = ?", (task_id,))
    conn.execute("DELETE FROM task_conflict_groups WHERE task_id = ?", (task_id,))
    conn.execute("DELETE FROM task_files WHERE task_id = ?", (task_id,))


def task_revision(task: Mapping[str, Any]) -> str:
    """A digest of what the task asks for (title, description, criteria, verification, files), so a
    proof made for one version of a task never counts for a re-planned one. Status changes keep it."""
    from anvil.engine.storage.canonical import canonical_json, sha256_hex

    return sha256_hex(canonical_json({k: task.get(k) for k in ("id", "prd_id", "title", "description",
                                                                 "acceptance_criteria", "verification",
                                                                 "likely_files")}))


def normalise_files(likely_files: tuple[str, ...] | list[str]) -> list[str]:
    """File paths as the plan stores them: split on commas (as the PRD's ``Likely files`` line is, so
    ``--file a.py,b.py`` names two files on every surface), trimmed, without a leading ``./``, each
    once, in order."""
    out: list[str] = []
    seen: set[str] = set()
    for raw in likely_files:
        for part in raw.split(","):
            name = part.strip()
            while name.startswith("./"):
                name = name[2:]
            if name and name not in seen:
                seen.add(name)
                out.append(name)
    return out


def _score_columns(scores: dict[str, Any] | None) -> tuple[Any, Any, Any]:
    if not scores:
        return (None, None, None)
    return (scores.get("complexity"), scores.get("blast_radius"), scores.get("review_risk"))


def _j(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


TIER_MEANINGS = {
    "light": "a quick review: small work with low blast radius and review risk",
    "standard": "a normal review (also every unscored task)",
    "max": "the most careful review (blast_radius or review_risk 4 or more)",
}
"""What each review tier asks of the reviewer (shown beside the tier, and in the README)."""


def review_tier(scores: Mapping[str, Any] | None) -> str:
    """Pick the review tier for a task from its scores.

    ``max`` when blast_radius or review_risk is 4 or more; ``light`` when both are at most 2
    and complexity is at most 2; ``standard`` otherwise, and for unscored tasks. A missing or
    invalid value never makes a tier lighter.

    Args:
        scores: The task's scores, or ``None`` when unscored.

    Returns:
        One of ``light``, ``standard``, ``max``.

    Raises:
        Nothing: unusable scores give ``standard``.
    """
    if not isinstance(scores, Mapping):
        return "standard"
    blast, risk, complexity = (scores.get(d) for d in ("blast_radius", "review_risk", "complexity"))
    values = [v if _is_score(v) else None for v in (blast, risk, complexity)]
    if any(v is not None and v >= 4 for v in values[:2]):
        return "max"
    if all(v is not None and v <= 2 for v in values):
        return "light"
    return "standard"


def _is_score(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 5


def task_view(task: dict[str, Any], blocked_by: Iterable[str] = ()) -> dict[str, Any]:
    """The public form of a task (as list/get return it), with its derived review tier and the
    dependencies it still waits on (``blocked_by``, see :func:`unfinished_dependencies`)."""
    return {k: task[k] for k in ("id", "prd_id", "feature_id", "title", "description", "status", "priority",
                                 "type", "likely_files", "dependencies", "acceptance_criteria", "verification",
                                 "scores")} | {
        "review_tier": review_tier(task["scores"]), "blocked_by": list(blocked_by)}
