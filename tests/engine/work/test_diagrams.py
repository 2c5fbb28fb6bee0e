"""Pictures of the dependency graph: the critical path, Mermaid and DOT text with states, escaped."""

from __future__ import annotations

import json
import random
import re
import subprocess
from typing import Any

from anvil.engine.work.diagrams import (
    _chain_by_search,
    _chain_in_order,
    critical_path,
    dot,
    heaviest_chain,
    heaviest_chain_of_edges,
    mermaid,
    node_state,
)


def task(deps: list[str], status: str = "ready", complexity: int | None = None) -> dict[str, Any]:
    return {"dependencies": deps, "status": status, "scores": {"complexity": complexity} if complexity else None}


def test_the_critical_path_is_the_heaviest_chain_of_unfinished_work() -> None:
    tasks = {"A": task([], complexity=1), "B": task(["A"], complexity=5), "C": task(["A"], complexity=2),
             "D": task(["B", "C"]), "E": task([], complexity=3)}
    assert critical_path(tasks, set(tasks)) == ["A", "B", "D"]
    tasks["B"]["status"] = "done"
    assert critical_path(tasks, set(tasks)) == ["A", "C", "D"]  # finished work no longer counts
    assert critical_path({"A": task([], "done")}, {"A"}) == []


def test_a_cycle_never_hangs_the_critical_path() -> None:
    tasks = {"A": task(["B"]), "B": task(["A"])}
    assert sorted(critical_path(tasks, set(tasks))) in (["A", "B"], ["A"], ["B"])


def test_the_one_pass_over_ordered_ids_finds_what_the_search_finds() -> None:
    """Where dependencies point at earlier ids (generated and most real plans) one pass gives the
    chains; anything else (a later dependency, a cycle) falls back to the search, which cuts cycles."""
    rng = random.Random(5)
    passes = 0
    for _ in range(400):
        ids = [f"T{i:03d}" for i in range(rng.randint(1, 40))]
        earlier = rng.random() < 0.7
        deps = {t: [rng.choice(ids[:i] if earlier and i else ids) for _ in range(rng.randint(0, 3))] + ["T-gone"]
                for i, t in enumerate(ids)}
        open_ids = sorted(rng.sample(ids, rng.randint(1, len(ids))))
        weight = {t: rng.randint(1, 5) for t in ids}
        members = set(open_ids)
        fast = _chain_in_order(open_ids, weight, deps, members)
        passes += fast is not None
        if fast is not None:
            assert fast == _chain_by_search(open_ids, weight, deps, members)
        path = heaviest_chain(open_ids, weight, deps)
        assert path and all(tid in members for tid in path)
    assert 100 < passes < 400


def test_the_one_pass_over_the_edges_gives_the_search_s_path_and_counts_the_edges_to_existing_tasks() -> None:
    """The whole graph's pass (edges sorted by dependent, finished and missing dependencies among them)
    finds the same chain as :func:`heaviest_chain`, ties included, and declines exactly when an edge
    between open tasks points at a later id or at itself, or the edges are not sorted by dependent."""
    rng = random.Random(11)
    passes = declined = 0
    for _ in range(600):
        ids = [f"T{i:03d}" for i in range(rng.randint(0, 40))]
        earlier = rng.random() < 0.8
        edges = sorted({(t, rng.choice(ids[:i] if earlier and i else ids) if rng.random() < 0.9 else "T-gone")
                        for i, t in enumerate(ids) for _ in range(rng.randint(0, 3))})
        finished = set(rng.sample(ids, rng.randint(0, len(ids))))
        weight = {t: rng.randint(1, 2) for t in ids if t not in finished}  # few weights: many ties
        shuffled = rng.random() < 0.1 and len({t for t, _ in edges}) > 1
        stream = rng.sample(edges, len(edges)) if shuffled else edges
        found = heaviest_chain_of_edges(weight, iter(stream), finished)
        open_edges = [(t, d) for t, d in edges if t in weight and d in weight]
        deps: dict[str, list[str]] = {}
        for t, d in open_edges:
            deps.setdefault(t, []).append(d)
        if found is None:
            declined += 1
            assert shuffled and stream != edges or any(d >= t for t, d in open_edges)
            continue
        passes += 1
        assert not any(d >= t for t, d in open_edges)
        assert found == (heaviest_chain(sorted(weight), weight, deps), sum(d != "T-gone" for _, d in edges))
    assert passes > 300 and declined > 50


NODES = [{"id": "T001", "title": 'Say "hi" <b>&', "status": "done", "blocked_by": []},
         {"id": "T002", "title": "Next", "status": "ready", "blocked_by": ["T003"]},
         {"id": "T003", "title": "Back\\slash", "status": "claimed", "blocked_by": []}]
EDGES = [{"from": "T001", "to": "T002"}, {"from": "T003", "to": "T002"}]


def test_mermaid_shows_states_marks_the_critical_path_and_escapes_text() -> None:
    text = mermaid(NODES, EDGES, ["T003", "T002"])
    assert text.startswith("flowchart LR\n")
    assert 'T001["T001: Say #quot;hi#quot; #60;b#62;#38;<br/>done"]:::done' in text
    assert ":::waiting" in text and "classDef waiting" in text and node_state(NODES[1]) == "waiting"
    assert "  T003 --> T002" in text and "linkStyle 1 stroke:#d32f2f" in text
    # Issue 24 item 11: Mermaid 11's style takes one node id (a list becomes a phantom node): a class outlines them.
    assert "  classDef critical stroke:#d32f2f,stroke-width:3px\n  class T003,T002 critical\n" in text
    assert "\n  style " not in text
    assert text.index("classDef critical") > text.index("classDef waiting")  # declared last: its border wins


def test_dot_shows_states_marks_the_critical_path_and_escapes_text() -> None:
    text = dot(NODES, EDGES, ["T003", "T002"])
    assert text.startswith("digraph anvil {") and text.rstrip().endswith("}")
    assert '"T001" [label="T001: Say \\"hi\\" <b>&\\ndone"' in text
    assert '"T003" [label="T003: Back\\\\slash\\nclaimed"' in text
    assert '"T003" -> "T002" [color="#d32f2f", penwidth=3];' in text and '"T001" -> "T002";' in text


def test_item_11_the_mermaid_cli_renders_the_graph_with_the_critical_path_outlined(anvil_env, tmp_path) -> None:
    """Issue 24 item 11: the real Mermaid 11 CLI draws `anvil graph --format mermaid` of a real project with one
    node per task (no phantom node named by a list of ids) and the critical path's tasks outlined in red."""
    from tests.external import BROWSER_HOWTO, MERMAID_HOWTO, chromium, mermaid_cli, require
    from tests.ops.support import op, scenario

    mmdc, browser = mermaid_cli(), chromium()
    require(mmdc, "the Mermaid CLI", MERMAID_HOWTO)
    require(browser, "Chromium", BROWSER_HOWTO)
    scenario(anvil_env, "claimed")
    graph = op(anvil_env, "get_dependency_graph", format="mermaid")
    assert len(graph["critical_path"]) >= 2
    (tmp_path / "graph.mmd").write_text(graph["diagram"], encoding="utf-8")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    (tmp_path / "puppeteer.json").write_text(json.dumps({"executablePath": browser, "args": flags}), encoding="utf-8")
    done = subprocess.run([str(mmdc), "-p", str(tmp_path / "puppeteer.json"), "-i", str(tmp_path / "graph.mmd"),
                           "-o", str(tmp_path / "graph.svg"), "-q"], capture_output=True, text=True, timeout=180,
                          check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    svg = (tmp_path / "graph.svg").read_text(encoding="utf-8")
    drawn: dict[str, list[str]] = {}
    outlined = set()
    for chunk in svg.split('<g class="node ')[1:]:  # each node's group, up to the next one
        found = re.match(r'([^"]*)" id="[^"]*-flowchart-(.+?)-\d+"', chunk)
        assert found is not None, chunk[:200]
        drawn[found.group(2)] = found.group(1).split()
        if "stroke:#d32f2f" in chunk.split("</g>", 1)[0]:
            outlined.add(found.group(2))
    assert set(drawn) == {node["id"] for node in graph["nodes"]}, "one node per task, nothing else"
    assert outlined == set(graph["critical_path"])
    assert all("critical" in drawn[task_id] for task_id in graph["critical_path"])
