"""Pictures of the dependency graph: the critical path, Mermaid and DOT text with states, escaped."""

from __future__ import annotations

from typing import Any

from anvil.engine.work.diagrams import critical_path, dot, mermaid, node_state


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
    assert "style T003,T002 stroke:#d32f2f" in text


def test_dot_shows_states_marks_the_critical_path_and_escapes_text() -> None:
    text = dot(NODES, EDGES, ["T003", "T002"])
    assert text.startswith("digraph anvil {") and text.rstrip().endswith("}")
    assert '"T001" [label="T001: Say \\"hi\\" <b>&\\ndone"' in text
    assert '"T003" [label="T003: Back\\\\slash\\nclaimed"' in text
    assert '"T003" -> "T002" [color="#d32f2f", penwidth=3];' in text and '"T001" -> "T002";' in text
