"""The dependency graph's read model: bounded pages over the whole scope, the critical path kept by state."""

from __future__ import annotations

import json
from pathlib import Path

from anvil.engine.storage.paths import resolve_state
from anvil.engine.storage.store import Store
from anvil.engine.work.views import dependency_graph
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import build_scenario


def test_graph_pages_cover_every_node_once_with_the_whole_scope_counted(anvil_env: dict[str, str],
                                                                          tmp_path: Path) -> None:
    build_scenario("claimed", anvil_env, anvil_env["ANVIL_ROOT"])
    with Store.open(resolve_state(anvil_env, anvil_env["ANVIL_ROOT"])) as store:
        whole = dependency_graph(store.conn, "all", None, page_size=1000)
        seen, edges, cursor = [], [], None
        while True:
            page = dependency_graph(store.conn, "all", None, page_size=2, cursor=cursor, cache_dir=tmp_path)
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


def test_the_kept_critical_path_is_used_only_at_the_state_it_was_computed_from(anvil_env: dict[str, str],
                                                                                tmp_path: Path) -> None:
    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    location = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"])
    with Store.open(location) as store:
        computed = dependency_graph(store.conn, "all", None, cache_dir=tmp_path)["critical_path"]
    kept = tmp_path / "graph-critical-path.json"
    record = json.loads(kept.read_text(encoding="utf-8"))
    assert computed and record["path"] == computed
    kept.write_text(json.dumps({**record, "path": ["T-marker"]}), encoding="utf-8")
    with Store.open(location) as store:
        assert dependency_graph(store.conn, "all", None, cache_dir=tmp_path)["critical_path"] == ["T-marker"]
    invoke("claim_task", {"task_id": computed[0], "actor": "agent-1"}, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])
    with Store.open(location) as store:
        assert dependency_graph(store.conn, "all", None, cache_dir=tmp_path)["critical_path"] == computed
