"""Read models of the task set: paged lists and the dependency graph."""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.errors import NotFound, UsageError
from anvil.engine.identity import name_key
from anvil.engine.prd.approval import APPROVED_PRD
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, derives


def list_tasks(conn: Connection, *, status: str | None, feature_id: str | None, claimed_by: str | None,
               prd_id: str | None, limit: int, cursor: str | None) -> dict[str, Any]:
    """A page of tasks in id order; ``next_cursor`` continues after the last one (null at the end)."""
    where, params = ["1 = 1"], []
    # ``+``: read in id order and stop at the page's end, not every waiting task sorted (see board._state_filter).
    if status == "waiting":  # derived: ready, but a dependency is not done
        where.append("+t.unmet_deps > 0")
        status = "ready"
    elif status == "ready":  # startable: what the board, summary and status count as ready
        where.append("+t.unmet_deps = 0")
    for column, value in (("t.status", status), ("t.feature_id", feature_id), ("t.prd_id", prd_id)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if claimed_by is not None:
        where.append("EXISTS (SELECT 1 FROM claims c WHERE c.task_id = t.id AND c.status = 'active' "
                     "AND c.actor_key = ?)")
        params.append(name_key(claimed_by))
    if cursor:
        where.append("t.id > ?")
        params.append(decode_cursor(cursor))
    rows = conn.execute(f"SELECT {', '.join('t.' + c for c in task_rows.TASK_COLUMNS)} FROM tasks t WHERE "
                        f"{' AND '.join(where)} ORDER BY t.id LIMIT ?", (*params, limit + 1)).fetchall()
    page = [task_rows.row_to_task(r) for r in rows[:limit]]
    more = len(rows) > limit
    return {"tasks": page, "next_cursor": encode_cursor(page[-1]["id"]) if more and page else None}


def encode_cursor(task_id: str) -> str:
    return "after:" + task_id


def decode_cursor(cursor: str) -> str:
    """Raises:
        UsageError: the cursor was not produced by ``list_tasks``.
    """
    if not cursor.startswith("after:") or len(cursor) > 200:
        raise UsageError("invalid cursor: pass the next_cursor value from the previous page", code="invalid_cursor")
    return cursor[len("after:"):]


GRAPH_PAGE = 200
GRAPH_PAGING = ("nodes come in id order, page_size at a time, with the edges into them; for the next page call "
                "get_dependency_graph with the same scope and cursor=<paging.next_cursor> (CLI: anvil graph --cursor "
                "CURSOR --json); the counts, the critical path and ready_count cover the whole scope")


def dependency_graph(conn: Connection, scope: str, target_id: str | None, form: str = "json", *,
                     page_size: int = GRAPH_PAGE, cursor: str | None = None) -> dict[str, Any]:
    """Nodes, edges (dependency -> dependent), the claimable set and the critical path, for all tasks,
    a feature, or a task with its transitive dependencies; with ``form`` ``mermaid`` or ``dot``, the
    same graph as that text too (:mod:`anvil.engine.work.diagrams`).

    Bounded whatever the plan's size: the nodes (with the edges into them, and the diagram) come a
    page at a time; ``ready_to_claim`` is the first page of the claimable set, ``ready_count`` its
    size. Counts come from indexed queries; the critical path (and the edge count) needs every open
    task's edges, so for the whole plan it is kept in the projection (``graph_path``, see
    :func:`keep_graph_path`) and read from there, the same on every replica and on a fresh state.

    Raises:
        UsageError: ``target_id`` missing for the feature or task scope, or a cursor no graph gave.
        NotFound: the target does not exist.
    """
    from anvil.engine.work.diagrams import dot, mermaid

    if scope != "all" and target_id is None:
        raise UsageError(f"scope {scope!r} needs the id of the {scope} to show", code="target_required",
                         details={"field": "target_id"})
    after = decode_cursor(cursor) if cursor else None
    if scope == "all":
        counts = {}
        for status, count, waiting in task_rows.status_counts(conn):
            counts[status] = count - waiting if status == "ready" else count
            if status == "ready" and waiting:
                counts["waiting"] = waiting
        counts = {state: count for state, count in counts.items() if count}
        startable = f"t.status = 'ready' AND t.unmet_deps = 0 AND {APPROVED_PRD}"
        free = "NOT EXISTS (SELECT 1 FROM claims c WHERE c.task_id = t.id AND c.status = 'active')"
        # Counted from the tasks_gate index less the few held, and only the first page of ids read.
        ready_count = conn.execute(f"SELECT COUNT(*) FROM tasks t WHERE {startable}").fetchone()[0] - \
            conn.execute(f"SELECT COUNT(*) FROM tasks t WHERE {startable} AND t.id IN "
                         "(SELECT c.task_id FROM claims c WHERE c.status = 'active')").fetchone()[0]
        ready = [r[0] for r in conn.execute(f"SELECT t.id FROM tasks t WHERE {startable} AND {free} "
                                            "ORDER BY t.id LIMIT ?", (page_size,))]
        rows = conn.execute("SELECT id FROM tasks WHERE id > ? ORDER BY id LIMIT ?",
                            (after or "", page_size + 1)).fetchall()
        page_ids = [r[0] for r in rows[:page_size]]
        more = len(rows) > page_size
        node_count = sum(counts.values())
        path, edge_count = _kept_whole(conn)
        in_scope: Any = None  # every task
    else:
        lean, deps = _scoped_lean(conn, scope, str(target_id))
        chosen = _scope_ids(conn, lean, deps, scope, str(target_id))
        ordered = sorted(chosen)
        held = {r[0] for r in conn.execute("SELECT task_id FROM claims WHERE status = 'active'")}
        approved = {r[0] for chunk, marks in _chunks([tid for tid in ordered if lean[tid][0] == "ready"])
                    for r in conn.execute(f"SELECT t.id FROM tasks t WHERE t.id IN ({marks}) AND {APPROVED_PRD}",
                                          chunk)}
        ready = [tid for tid in ordered if lean[tid][0] == "ready" and tid not in held and tid in approved
                 and all(_done(lean, d) for d in deps.get(tid, ()))]
        ready_count = len(ready)
        counts = {}
        for tid in ordered:
            waits = lean[tid][0] == "ready" and not all(_done(lean, d) for d in deps.get(tid, ()))
            state = "waiting" if waits else lean[tid][0]
            counts[state] = counts.get(state, 0) + 1
        edge_count = sum(1 for tid in ordered for dep in deps.get(tid, ()) if dep in chosen)
        start = bisect.bisect_right(ordered, after) if after is not None else 0
        page_ids = ordered[start:start + page_size]
        more = start + page_size < len(ordered)
        node_count = len(ordered)
        path = _path_of(lean, deps, ordered)
        in_scope = chosen
    nodes, edges = _page_nodes(conn, page_ids, in_scope)
    diagram = {"mermaid": mermaid, "dot": dot}.get(form)
    return {"scope": scope, "target_id": target_id, "nodes": nodes, "edges": edges,
            "ready_to_claim": ready[:page_size], "critical_path": path, "format": form,
            "diagram": diagram(nodes, edges, path) if diagram else None,
            "paging": {"page_size": page_size, "shown": len(nodes), "node_count": node_count,
                       "edge_count": edge_count, "ready_count": ready_count, "counts": counts,
                       "next_cursor": encode_cursor(page_ids[-1]) if more and page_ids else None,
                       "how": GRAPH_PAGING}}


Lean = dict[str, tuple[str, int, str | None, bool]]
"""Each task as (status, critical-path weight, feature, finished: done and, when the project lands work, landed)."""


LEAN_COLUMNS = "id, status, complexity, feature_id, finished"


def _chunks(ids: list[str]) -> Iterator[tuple[list[str], str]]:
    """``ids`` 500 at a time, each with its ``?`` marks (under every backend's parameter limit)."""
    for at in range(0, len(ids), 500):
        chunk = ids[at:at + 500]
        yield chunk, ",".join("?" * len(chunk))


def _lean_rows(conn: Connection, rows: Iterable[Sequence[Any]]) -> Lean:
    from anvil.engine.work.diagrams import complexity_weight

    return {r[0]: (r[1], complexity_weight(r[2]), r[3], bool(r[4])) for r in rows}


def _lean_of(conn: Connection, ids: list[str]) -> Lean:
    return {tid: row for chunk, marks in _chunks(ids) for tid, row in _lean_rows(
        conn, conn.execute(f"SELECT {LEAN_COLUMNS} FROM tasks WHERE id IN ({marks})", chunk)).items()}


def _deps_of(conn: Connection, ids: list[str]) -> dict[str, list[str]]:
    deps: dict[str, list[str]] = {}
    for chunk, marks in _chunks(ids):
        for task_id, dependency in conn.execute("SELECT task_id, depends_on FROM task_deps WHERE task_id IN "
                                                f"({marks}) ORDER BY task_id, depends_on", chunk):
            deps.setdefault(task_id, []).append(dependency)
    return deps


def _scoped_lean(conn: Connection, scope: str, target_id: str) -> tuple[Lean, dict[str, list[str]]]:
    """The tasks a feature's or a task's graph needs as (status, critical-path weight, feature,
    finished), with their dependencies: the feature's tasks and the tasks they depend on, or the task
    and its transitive dependencies (read a layer at a time), never the whole plan."""
    if scope == "feature":
        lean = _lean_rows(conn, conn.execute(f"SELECT {LEAN_COLUMNS} FROM tasks WHERE feature_id = ?", (target_id,)))
        deps = _deps_of(conn, list(lean))
        lean.update(_lean_of(conn, sorted({d for found in deps.values() for d in found if d not in lean})))
        return lean, deps
    lean, deps, tried = {}, {}, {target_id}
    layer = [target_id]
    while layer:
        rows = _lean_of(conn, layer)
        lean.update(rows)
        found = _deps_of(conn, list(rows))
        deps.update(found)
        layer = sorted({d for ds in found.values() for d in ds if d not in tried})
        tried.update(layer)
    return lean, deps


def _done(lean: Lean, task_id: str) -> bool:
    row = lean.get(task_id)
    return row is not None and row[3]


def _scope_ids(conn: Connection, lean: Lean, deps: dict[str, list[str]], scope: str, target_id: str) -> set[str]:
    """Raises:
        NotFound: the feature or task does not exist.
    """
    if scope == "feature":
        chosen = {tid for tid, row in lean.items() if row[2] == target_id}
        if not chosen and conn.execute("SELECT 1 FROM features WHERE id = ?", (target_id,)).fetchone() is None:
            raise NotFound(f"feature {target_id[:40]!r} not found", code="feature_not_found")
        return chosen
    if target_id not in lean:
        raise NotFound(f"task {target_id[:40]!r} not found", code="task_not_found")
    chosen, stack = set(), [target_id]
    while stack:
        tid = stack.pop()
        if tid in chosen or tid not in lean:
            continue
        chosen.add(tid)
        stack.extend(deps.get(tid, ()))
    return chosen


def _path_of(lean: Lean, deps: dict[str, list[str]], ordered: list[str]) -> list[str]:
    from anvil.engine.work.diagrams import heaviest_chain

    open_ids = [tid for tid in ordered if not lean[tid][3]]
    return heaviest_chain(open_ids, {tid: lean[tid][1] for tid in open_ids}, deps)


GRAPH_NEUTRAL_EVENTS = ("claim.acquired", "claim.renewed", "claim.released", "claim.expired", "progress.noted",
                        "progress.attested", "evidence.submitted", "task.verified", "task.land_started",
                        "token.granted", "token.revoked", "trust.added", "trust.removed", "project.renamed",
                        "bundle.created", "bundle.claimed", "bundle.claim_renewed", "bundle.claim_released",
                        "bundle.claim_expired", "bundle.progressed", "bundle.checkpointed", "bundle.review_recorded")
"""Events that never change what the critical path and the edge count are computed from (the tasks,
which are finished, their complexity, the dependencies): a claim moves a task between ready and held,
a submission to needs_review, none of them finished. They are most of a team's traffic, so the kept
path outlives them (``tests/engine/work/test_views.py`` holds each to it)."""
FINISHING_EVENTS = ("review.decided", "task.landed")
"""Events whose only change to those inputs is that tasks become finished (an approval, a landing):
the open graph only shrinks. When the kept path was found in one pass (no cycle) and none of its
tasks finished, it is still the heaviest chain: every chain it beat only lost tasks, and its own
stayed whole (the replay test holds each type to finishing tasks only)."""


OPEN_WEIGHTS = ("SELECT id, CASE WHEN complexity IN (1, 2, 3, 4, 5) THEN complexity ELSE 1 END FROM tasks "
                "WHERE finished = 0")
"""The open tasks with their weight on the critical path (as diagrams.complexity_weight gives it: a
score from 1 to 5, else 1; in SQL, since 100,000 Python calls would cost more than the scan), from
the ``tasks_graph`` index alone."""
FINISHED_IDS = "SELECT id FROM tasks WHERE finished = 1"


def _whole_graph(conn: Connection) -> dict[str, Any]:
    """The critical path over every unfinished task, and the number of edges between existing tasks.

    What an event that may change the critical path pays inside its transaction
    (:func:`keep_graph_path`), so it reads ids, weights and edges only, from indexes (``tasks_graph``
    covers the tasks' part, the dependencies' key the edges), never the task rows' text, and walks
    the edges once as they come
    (:func:`anvil.engine.work.diagrams.heaviest_chain_of_edges`); ``ordered`` says whether that pass
    found it. Otherwise (edges out of order, a dependency on a later id, a cycle) the search over
    every open task finds it.
    """
    from anvil.engine.work.diagrams import heaviest_chain, heaviest_chain_of_edges

    weight: dict[str, int] = dict(conn.execute(OPEN_WEIGHTS))
    finished = {row[0] for row in conn.execute(FINISHED_IDS)}  # the edges into them count too
    edges = "SELECT task_id, depends_on FROM task_deps ORDER BY task_id, depends_on"
    found = heaviest_chain_of_edges(weight, conn.execute(edges), finished)
    if found is not None:
        return {"path": found[0], "edge_count": found[1], "ordered": True}
    deps: dict[str, list[str]] = {}
    edge_count = 0
    for task_id, dependency in conn.execute(edges):
        edge_count += dependency in weight or dependency in finished  # as pages show them
        if task_id in weight and dependency in weight:
            deps.setdefault(task_id, []).append(dependency)
    # Sorted here, not by the database: a collation must not decide where a cycle is cut.
    return {"path": heaviest_chain(sorted(weight), weight, deps), "edge_count": edge_count, "ordered": False}


@derives("graph_path")
def keep_graph_path(conn: Connection, events: Sequence[Event] | None) -> None:
    """Keep ``graph_path`` (the whole graph's critical path, its edge count, whether one pass found it)
    right after ``events`` (a write's, in order, just before it commits; None: a migration or a replay's
    end), inside their transaction.

    A graph-neutral event (:data:`GRAPH_NEUTRAL_EVENTS`: most of a team's traffic) changes nothing it
    is made of; after finishing ones (:data:`FINISHING_EVENTS`) a path found in one pass none of whose
    tasks finished is still the one :func:`_whole_graph` gives (every chain it beat only lost tasks, its
    own stayed whole, ties included), which costs a lookup per task on it, once for all of a write's
    events; anything else computes it again. So the row is always :func:`_whole_graph` of the
    projection: replay reproduces it. A manual status change neither from nor to done (drafted and
    ready, blocked and back) is neutral too: a task is finished only when it is done.
    """
    kinds = {_graph_effect(event) for event in events} if events is not None else {"changes"}
    if kinds <= {"neutral"}:
        return
    if kinds <= {"neutral", "finishing"}:
        row = conn.execute("SELECT path, ordered FROM graph_path WHERE id = 1").fetchone()
        if row is not None and row[1] and not _any_finished(conn, json.loads(row[0])):
            return
    whole = _whole_graph(conn)
    conn.execute("INSERT INTO graph_path (id, path, edge_count, ordered) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO "
                 "UPDATE SET path = excluded.path, edge_count = excluded.edge_count, ordered = excluded.ordered",
                 (json.dumps(whole["path"]), whole["edge_count"], int(whole["ordered"])))


def _graph_effect(event: Event) -> str:
    """What ``event`` does to the whole graph's critical path: ``neutral`` (nothing), ``finishing`` (it
    may only finish tasks) or ``changes``."""
    if event.type in GRAPH_NEUTRAL_EVENTS:
        return "neutral"
    if event.type == "task.status_changed" and "done" not in (event.payload.get("from"), event.payload.get("to")):
        return "neutral"
    return "finishing" if event.type in FINISHING_EVENTS else "changes"


def _any_finished(conn: Connection, ids: list[str]) -> bool:
    return any(conn.execute(f"SELECT 1 FROM tasks WHERE finished = 1 AND id IN ({marks}) LIMIT 1", chunk).fetchone()
               for chunk, marks in _chunks([str(tid) for tid in ids]))


def _kept_whole(conn: Connection) -> tuple[list[str], int]:
    """The whole graph's critical path and edge count from ``graph_path`` (computed when the row is
    not there yet: a projection no event has reached)."""
    row = conn.execute("SELECT path, edge_count FROM graph_path WHERE id = 1").fetchone()
    if row is None:
        whole = _whole_graph(conn)
        return whole["path"], whole["edge_count"]
    return [str(tid) for tid in json.loads(row[0])], int(row[1])


def _page_nodes(conn: Connection, page_ids: list[str],
                in_scope: set[str] | None) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The nodes of one page, with what each waits on, and the edges into them from the scope."""
    rows: dict[str, dict[str, Any]] = {}
    deps: dict[str, list[tuple[str, bool]]] = {}
    for at in range(0, len(page_ids), 500):
        chunk = page_ids[at:at + 500]
        marks = ",".join("?" * len(chunk))
        for r in conn.execute("SELECT id, title, status, priority, feature_id, landed_seq FROM tasks "
                              f"WHERE id IN ({marks})", chunk):
            rows[r[0]] = {"id": r[0], "title": r[1], "status": r[2], "priority": r[3], "feature_id": r[4],
                          "landed": r[5] is not None}
        for task_id, dependency, finished in conn.execute(
                "SELECT d.task_id, d.depends_on, u.finished FROM task_deps d LEFT JOIN tasks u ON u.id = d.depends_on "
                f"WHERE d.task_id IN ({marks}) ORDER BY d.task_id, d.depends_on", chunk):
            deps.setdefault(task_id, []).append((dependency, finished))
    nodes = [{**rows[tid], "blocked_by": [d for d, finished in deps.get(tid, ()) if not finished]}
             for tid in page_ids]
    edges = [{"from": d, "to": tid} for tid in page_ids for d, finished in deps.get(tid, ())
             if (finished is not None if in_scope is None else d in in_scope)]
    return nodes, edges
