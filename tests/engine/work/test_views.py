"""The dependency graph's read model: bounded pages over the whole scope, the critical path kept by state."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from anvil.engine.storage.connection import Connection
from anvil.engine.storage.integrity import replay_into
from anvil.engine.storage.paths import StateLocation, resolve_state
from anvil.engine.storage.store import Event, Store, apply_event
from anvil.engine.work import views
from anvil.engine.work.diagrams import complexity_weight, heaviest_chain
from anvil.engine.work.views import FINISHING_EVENTS, GRAPH_NEUTRAL_EVENTS, dependency_graph
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import build_scenario


def test_graph_pages_cover_every_node_once_with_the_whole_scope_counted(anvil_env: dict[str, str]) -> None:
    build_scenario("claimed", anvil_env, anvil_env["ANVIL_ROOT"])
    with Store.open(resolve_state(anvil_env, anvil_env["ANVIL_ROOT"])) as store:
        whole = dependency_graph(store.conn, "all", None, page_size=1000)
        seen, edges, cursor = [], [], None
        while True:
            page = dependency_graph(store.conn, "all", None, page_size=2, cursor=cursor)
            assert len(page["nodes"]) <= 2 and page["paging"]["node_count"] == whole["paging"]["node_count"]
            assert page["critical_path"] == whole["critical_path"]
            seen += [n["id"] for n in page["nodes"]]
            edges += page["edges"]
            cursor = page["paging"]["next_cursor"]
            if cursor is None:
                break
    paging = whole["paging"]
    assert seen == [n["id"] for n in whole["nodes"]] and paging["next_cursor"] is None
    assert edges == whole["edges"] and len(edges) == paging["edge_count"]
    assert sum(paging["counts"].values()) == paging["node_count"]
    assert paging["ready_count"] == len(whole["ready_to_claim"])


def plant(location: StateLocation, path: list[str], ordered: bool = True, edge_count: int = 999) -> None:
    """Put a marker in the kept critical path, to see whether a later event keeps or recomputes it."""
    conn = sqlite3.connect(location.db_path)
    with conn:
        conn.execute("UPDATE graph_path SET path = ?, edge_count = ?, ordered = ? WHERE id = 1",
                     (json.dumps(path), edge_count, int(ordered)))
    conn.close()


def test_the_critical_path_is_kept_in_the_projection_and_only_graph_changing_events_recompute_it(
        anvil_env: dict[str, str]) -> None:
    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    location = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"])
    cwd = anvil_env["ANVIL_ROOT"]
    with Store.open(location) as store:
        whole = dependency_graph(store.conn, "all", None)
        assert (whole["critical_path"], whole["paging"]["edge_count"]) == _kept(store.conn)
        assert whole["critical_path"] == views._whole_graph(store.conn)["path"] != []
    computed = whole["critical_path"]
    plant(location, ["T-marker"])
    with Store.open(location) as store:
        marked = dependency_graph(store.conn, "all", None)
        assert (marked["critical_path"], marked["paging"]["edge_count"]) == (["T-marker"], 999)
    # A claim, its renewal and its progress change nothing the path is made of: the kept one stands.
    claim = invoke("claim_task", {"task_id": computed[0], "actor": "agent-1"}, env=anvil_env, cwd=cwd)
    invoke("renew_claim", {"task_id": computed[0], "actor": "agent-1", "generation": claim["generation"]},
           env=anvil_env, cwd=cwd)
    invoke("submit_progress", {"task_id": computed[0], "actor": "agent-1", "phase": "build",
                                 "notes": "started"}, env=anvil_env, cwd=cwd)
    with Store.open(location) as store:
        assert dependency_graph(store.conn, "all", None)["critical_path"] == ["T-marker"]
    # A status change neither from nor to done finishes nothing: the kept one stands.
    other = next(n["id"] for n in whole["nodes"] if n["status"] == "ready" and n["id"] != computed[0])
    invoke("update_task_status", {"task_id": other, "to_status": "drafted", "actor": "lead"}, env=anvil_env, cwd=cwd)
    with Store.open(location) as store:
        assert dependency_graph(store.conn, "all", None)["critical_path"] == ["T-marker"]
    # Any other event may change it (a dependency edit): the path is computed again, here after an edge
    # is removed and put back.
    edge = [whole["edges"][0]["to"], whole["edges"][0]["from"]]
    invoke("edit_dependencies", {"remove": [edge], "actor": "lead"}, env=anvil_env, cwd=cwd)
    invoke("edit_dependencies", {"add": [edge], "actor": "lead"}, env=anvil_env, cwd=cwd)
    with Store.open(location) as store:
        again = dependency_graph(store.conn, "all", None)
        assert again["critical_path"] == computed and again["paging"]["edge_count"] == whole["paging"]["edge_count"]


def _kept(conn: Connection) -> tuple[list[str], int]:
    row = conn.execute("SELECT path, edge_count FROM graph_path").fetchone()
    return json.loads(row[0]), row[1]


@pytest.mark.parametrize("planted, ordered, kept", [(["T-marker"], True, True), (["T-marker", "T001"], True, False),
                                                    (["T-marker"], False, False)])
def test_a_kept_path_outlives_an_approval_only_when_none_of_its_tasks_finished(
        planted: list[str], ordered: bool, kept: bool, anvil_env: dict[str, str]) -> None:
    cwd = anvil_env["ANVIL_ROOT"]
    build_scenario("verified", anvil_env, cwd)
    location = resolve_state(anvil_env, cwd)
    with Store.open(location) as store:
        edge_count = dependency_graph(store.conn, "all", None)["paging"]["edge_count"]
        assert store.conn.execute("SELECT ordered FROM graph_path").fetchone()[0] == 1
    plant(location, planted, ordered, edge_count)
    invoke("apply_review_decision", {"task_id": "T001", "actor": "lead", "approve": True}, env=anvil_env, cwd=cwd)
    with Store.open(location) as store:
        path = dependency_graph(store.conn, "all", None)["critical_path"]
        fresh = views._whole_graph(store.conn)["path"]
        events = [e.type for e in store.events()]
    assert events[-1] == "review.decided" and "T001" not in fresh
    assert path == (planted if kept else fresh)


@pytest.mark.parametrize("planted, kept", [(["T-marker"], True), (["T-marker", "T001"], False)])
def test_a_write_s_events_look_at_the_kept_path_once_for_all_of_them(
        planted: list[str], kept: bool, anvil_env: dict[str, str]) -> None:
    cwd = anvil_env["ANVIL_ROOT"]
    build_scenario("verified", anvil_env, cwd)
    location = resolve_state(anvil_env, cwd)
    with Store.open(location) as store:
        edge_count = dependency_graph(store.conn, "all", None)["paging"]["edge_count"]
    plant(location, planted, True, edge_count)
    conn = sqlite3.connect(location.db_path, isolation_level=None)
    conn.execute("UPDATE tasks SET finished = 1 WHERE id = 'T001'")  # what the batch's approval did
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    batch = [Event(seq, "2026-12-03T00:00:00Z", "lead", kind, {}, "", "") for seq, kind in
             enumerate(["claim.acquired", "review.decided", "task.landed", "review.decided"], start=100)]
    views.keep_graph_path(conn, batch)
    conn.set_trace_callback(None)
    looks = [s for s in statements if "FROM graph_path" in s]
    row = conn.execute("SELECT path FROM graph_path").fetchone()
    fresh = views._whole_graph(conn)["path"]
    conn.close()
    assert len(looks) == 1  # once for the write, not once an event
    assert json.loads(row[0]) == (planted if kept else fresh)


def graph_inputs(conn: sqlite3.Connection) -> tuple[list[Any], list[Any]]:
    """What the critical path and the edge count are computed from."""
    return (conn.execute("SELECT id, finished, complexity FROM tasks ORDER BY id").fetchall(),
            conn.execute("SELECT task_id, depends_on FROM task_deps ORDER BY task_id, depends_on").fetchall())


@pytest.mark.parametrize("name", ["submitted", "proved", "approved_verified", "landing", "trusted", "bundle_approved",
                                  "bundle_replaced"])
def test_graph_neutral_events_change_nothing_the_critical_path_is_made_of(name: str, anvil_env: dict[str, str]) -> None:
    """Replayed one event at a time, no event of a graph-neutral type changes the tasks, which are
    finished, their complexity or the dependencies (so a path kept across them is still right), a
    finishing one only finishes tasks, and after every event the kept path is what the whole graph
    gives."""
    cwd = anvil_env["ANVIL_ROOT"]
    build_scenario(name, anvil_env, cwd)
    if name == "submitted":  # a second claim with its renewal, progress and release too
        claim = invoke("claim_task", {"task_id": "T002", "actor": "agent-2"}, env=anvil_env, cwd=cwd)
        invoke("renew_claim", {"task_id": "T002", "actor": "agent-2", "generation": claim["generation"]},
               env=anvil_env, cwd=cwd)
        invoke("submit_progress", {"task_id": "T002", "actor": "agent-2", "phase": "build", "notes": "started"},
               env=anvil_env, cwd=cwd)
        invoke("release_task", {"task_id": "T002", "actor": "agent-2"}, env=anvil_env, cwd=cwd)
    with Store.open(resolve_state(anvil_env, cwd)) as store:
        events = list(store.events())
    seen = set()
    conn = sqlite3.connect(":memory:")
    replay_into(conn, [])
    conn.execute("BEGIN")
    for event in events:
        before = graph_inputs(conn)
        apply_event(conn, event)
        whole = views._whole_graph(conn)
        assert conn.execute("SELECT path, edge_count, ordered FROM graph_path").fetchone() == (
            json.dumps(whole["path"]), whole["edge_count"], int(whole["ordered"])), f"{event.type} (event {event.seq})"
        if event.type in GRAPH_NEUTRAL_EVENTS:
            seen.add(event.type)
            assert graph_inputs(conn) == before, f"{event.type} (event {event.seq}) changed the graph's inputs"
        elif event.type in FINISHING_EVENTS:
            seen.add(event.type)
            after = graph_inputs(conn)
            assert after[1] == before[1], f"{event.type} (event {event.seq}) changed dependencies"
            changed = [(b, a) for b, a in zip(before[0], after[0], strict=True) if a != b]
            assert len(after[0]) == len(before[0]) and all(
                (b[0], b[2], b[1], a[1]) == (a[0], a[2], 0, 1) for b, a in changed), \
                f"{event.type} (event {event.seq}) did more than finish tasks: {changed}"
    assert seen & {"claim.acquired", "trust.added"}
    if name == "submitted":
        assert {"claim.renewed", "claim.released", "progress.noted", "evidence.submitted"} <= seen
    if name == "approved_verified":
        assert "review.decided" in seen


class Recording:
    """A connection that notes every statement it runs."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.statements: list[str] = []

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Any:
        self.statements.append(sql)
        return self.conn.execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]]) -> Any:
        self.statements.append(sql)
        return self.conn.executemany(sql, parameters)


def whole_lean(conn: Connection, scope: str, target_id: str) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Every task and every dependency, as the scoped graphs read them before they read only their scope."""
    lean = views._lean_rows(conn, conn.execute(f"SELECT {views.LEAN_COLUMNS} FROM tasks"))
    return lean, views._deps_of(conn, list(lean))


def test_a_feature_or_task_graph_reads_its_scope_alone_and_shows_what_the_whole_plan_gives(
        anvil_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from scripts.prdgen import generate_prd

    cwd = anvil_env["ANVIL_ROOT"]
    invoke("init_project", {"name": "Scopes"}, env=anvil_env, cwd=cwd)
    prd = Path(cwd) / "prd.md"
    prd.write_text(generate_prd(120, 6, seed=3, compact=True, cross_feature_ratio=0.3), encoding="utf-8")
    invoke("parse_prd", {"file": str(prd)}, env=anvil_env, cwd=cwd)
    invoke("review_prd", {"reviewer": "lead"}, env=anvil_env, cwd=cwd)
    invoke("review_prd", {"reviewer": "lead", "approve": True}, env=anvil_env, cwd=cwd)
    invoke("plan_tasks", {"use_llm": False}, env=anvil_env, cwd=cwd)
    invoke("score_tasks", {}, env=anvil_env, cwd=cwd)
    invoke("review_tasks", {}, env=anvil_env, cwd=cwd)
    invoke("claim_next_task", {"actor": "agent-1"}, env=anvil_env, cwd=cwd)
    with Store.open(resolve_state(anvil_env, cwd)) as store:
        features = [r[0] for r in store.conn.execute("SELECT id FROM features ORDER BY id")]
        scopes = [("feature", f) for f in features] + [("task", t) for t in ("T001", "T060", "T119", "T120")]
        scoped = {scope: dependency_graph(store.conn, *scope, page_size=7) for scope in scopes}
        recording = Recording(store.conn)
        dependency_graph(recording, "feature", features[1])
        dependency_graph(recording, "task", "T120")
        statements = recording.statements
        monkeypatch.setattr(views, "_scoped_lean", whole_lean)
        for scope in scopes:
            assert scoped[scope] == dependency_graph(store.conn, *scope, page_size=7), scope
    assert any(scoped[("task", t)]["paging"]["node_count"] > 3 for t in ("T060", "T119", "T120"))
    assert not [s for s in statements if "FROM tasks" in s and "WHERE" not in s], "a statement read every task"


def plant_graph(conn: sqlite3.Connection, rng: random.Random) -> tuple[dict[str, int], dict[str, list[str]], int]:
    """Random tasks and dependencies straight into an empty projection: finished ones, unscored and
    out-of-range complexities, missing dependencies, and (now and then) a later dependency or a
    cycle. Returns the open tasks' weights, their open dependencies and the edges to existing tasks."""
    ids = [f"T{i:03d}" for i in range(rng.randint(0, 30))]
    weight, finished = {}, set()
    for position, task_id in enumerate(ids):
        complexity = rng.choice([None, 0, 1, 2, 3, 5, 9])
        done = rng.random() < 0.3
        conn.execute("INSERT INTO tasks (id, prd_id, title, description, status, priority, priority_rank, "
                     "likely_files, dependencies, inferred_dependencies, acceptance_criteria, verification, "
                     "conflict_groups, complexity, finished, created_seq, updated_seq) VALUES "
                     "(?, 'p', ?, '', ?, 'medium', 2, '[]', '[]', '[]', '[]', '[]', '[]', ?, ?, 1, 1)",
                     (task_id, task_id, "done" if done else "ready", complexity, int(done)))
        if done:
            finished.add(task_id)
        else:
            weight[task_id] = complexity_weight(complexity)
        later = rng.random() < 0.05
        picks = {rng.choice(ids if later else ids[:position] or ["T-gone"]) if rng.random() < 0.9 else "T-gone"
                 for _ in range(rng.randint(0, 3))}
        conn.executemany("INSERT INTO task_deps (task_id, depends_on) VALUES (?, ?)", [(task_id, d) for d in picks])
    edges = conn.execute("SELECT task_id, depends_on FROM task_deps").fetchall()
    deps: dict[str, list[str]] = {}
    for task_id, dependency in sorted(edges):
        if task_id in weight and dependency in weight:
            deps.setdefault(task_id, []).append(dependency)
    return weight, deps, sum(d in weight or d in finished for _, d in edges)


def test_the_whole_graph_s_critical_path_and_edge_count_are_those_of_every_task_row() -> None:
    """What the indexes and the one pass give is what the search over every open task gives, with
    its ties; ``ordered`` (which lets a kept path outlive approvals) only where no open dependency
    is a later id."""
    rng = random.Random(25)
    ordered = unordered = 0
    for _ in range(150):
        conn = sqlite3.connect(":memory:")
        replay_into(conn, [])
        weight, deps, edge_count = plant_graph(conn, rng)
        whole = views._whole_graph(conn)
        later = any(d >= t for t, found in deps.items() for d in found)
        assert whole == {"path": heaviest_chain(sorted(weight), weight, deps), "edge_count": edge_count,
                         "ordered": not later}
        ordered += not later
        unordered += later
        conn.close()
    assert ordered > 50 and unordered > 5


def test_verify_computes_the_kept_path_from_the_replayed_projection_and_finds_one_that_differs(
        anvil_env: dict[str, str]) -> None:
    from anvil.engine.storage.integrity import check_replay

    build_scenario("approved_verified", anvil_env, anvil_env["ANVIL_ROOT"])
    location = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"])
    with Store.open(location) as store:
        assert check_replay(store) == []
    plant(location, ["T-marker"])
    with Store.open(location) as store:
        assert check_replay(store) == ["table graph_path: replay gives 1 rows, projection has 1 (contents differ)"]
