"""The reads benchmark's workload: the figures are the script's, the shape is checked here."""

from __future__ import annotations

import json
from pathlib import Path

from anvil.engine.storage.paths import resolve_state
from anvil.engine.storage.store import Store
from scripts.bench_reads import CALLS, MODES, main, state_env


def test_every_read_is_measured_cold_and_warm_and_the_cold_change_leaves_the_plan_as_it_was(tmp_path: Path) -> None:
    from anvil.ops.invoke import invoke

    out = tmp_path / "figures.json"
    assert main(["--sizes", "40", "--runs", "1", "--keep", str(tmp_path), "--json-out", str(out),
                 "--calls", "graph --json", "board --json"]) == 0
    [result] = json.loads(out.read_text(encoding="utf-8"))
    assert result["tasks"] == 40 and result["target_ms"] == 150.0
    assert set(result["figures"]) == {"graph --json", "board --json"} <= set(CALLS)
    for by_mode in result["figures"].values():
        assert set(by_mode) == set(MODES)
        assert all(f["ms"] > 0 and f["cpu_ms"] > 0 and f["bytes"] > 0 for f in by_mode.values())
    env = state_env(tmp_path / "reads-40")
    graph = invoke("get_dependency_graph", {"scope": "all"}, env=env, cwd=env["ANVIL_ROOT"])
    assert graph["critical_path"]
    with Store.open(resolve_state(env, env["ANVIL_ROOT"])) as store:
        edits = [e.payload for e in store.events() if e.type == "task.dependencies_batch_edited"]
    assert len(edits) == 4  # one cold round of each of two calls: an edge removed and put back, each time
    for removed, added in (edits[0:2], edits[2:4]):  # each put back as it was: the plan is unchanged
        [taken], [restored] = removed["changes"], added["changes"]
        assert taken["before"] == restored["after"] and taken["after"] == restored["before"]
