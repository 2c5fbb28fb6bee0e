"""Pictures of the dependency graph: the critical path, and the graph as Mermaid or Graphviz text.

The critical path is the longest chain of unfinished tasks through the dependency edges, each
task weighing its complexity score (1 when unscored): however many agents work in parallel, the
remaining work takes at least that long. Mermaid text renders on GitHub, GitLab and in most
markdown viewers; DOT renders with Graphviz (``dot -Tsvg``). Both show every task's state
(``waiting`` for a ready task whose dependencies are not done, ``landed`` for landed work) and mark the critical path.
Everything from the PRD is escaped for the target language.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Any

STATE_COLOURS = {  # fill, border
    "ready": ("#d7f5dd", "#2e7d32"), "waiting": ("#fff4cc", "#b8860b"), "claimed": ("#d6ecff", "#1565c0"),
    "in_progress": ("#d6ecff", "#1565c0"), "blocked": ("#ffd9d6", "#c62828"), "needs_review": ("#f1dcff", "#7b1fa2"),
    "done": ("#eeeeee", "#9e9e9e"), "accepted": ("#eeeeee", "#9e9e9e"), "landed": ("#dcedc8", "#33691e"),
}
DEFAULT_COLOURS = ("#ffffff", "#616161")
CRITICAL = "#d32f2f"
_PLAIN_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,40}$")  # usable as a Mermaid node id as it is


def node_state(node: Mapping[str, Any]) -> str:
    """The state a picture shows: ``waiting`` for a ready task that waits on dependencies, ``landed``
    for a done task whose work is on the landing target."""
    if node["status"] == "done" and node.get("landed"):
        return "landed"
    return "waiting" if node["status"] == "ready" and node.get("blocked_by") else str(node["status"])


def critical_path(tasks: Mapping[str, Mapping[str, Any]], chosen: set[str]) -> list[str]:
    """The heaviest chain of unfinished tasks among ``chosen``, from the one to start first.

    Args:
        tasks: every task by id (``status``, ``dependencies``, ``scores``).
        chosen: the ids the graph shows.

    Returns:
        Task ids in the order they must be done; empty when everything is done.
    """
    open_ids = sorted(tid for tid in chosen if tasks[tid]["status"] != "done")
    return heaviest_chain(open_ids, {tid: _weight(tasks[tid]) for tid in open_ids},
                          {tid: tasks[tid]["dependencies"] for tid in open_ids})


def heaviest_chain(open_ids: Sequence[str], weight: Mapping[str, int],
                   dependencies: Mapping[str, Sequence[str]]) -> list[str]:
    """The heaviest chain through ``dependencies`` among ``open_ids`` (sorted), each id weighing
    ``weight[id]``; from the one to start first. Ties go to the greater id; a cycle is cut, never followed.
    """
    if not open_ids:
        return []
    members = set(open_ids)
    best = _chain_in_order(open_ids, weight, dependencies, members)
    if best is None:
        best = _chain_by_search(open_ids, weight, dependencies, members)
    return _walk_back(best)


def heaviest_chain_in_order(open_ids: Sequence[str], weight: Mapping[str, int],
                            dependencies: Mapping[str, Sequence[str]]) -> list[str] | None:
    """:func:`heaviest_chain` when one pass over ``open_ids`` gives it (every dependency among them comes
    before its dependent, so the graph has no cycle); None otherwise."""
    if not open_ids:
        return []
    best = _chain_in_order(open_ids, weight, dependencies, set(open_ids))
    return None if best is None else _walk_back(best)


def heaviest_chain_of_edges(weight: Mapping[str, int], edges: Iterable[tuple[str, str]],
                            finished: Container[str]) -> tuple[list[str], int] | None:
    """:func:`heaviest_chain` over every id of ``weight`` (the open tasks), with the number of edges
    whose dependency exists (is open or ``finished``), in one pass over ``edges`` (dependent,
    dependency); None when one pass cannot give it: the edges are not sorted by dependent, or one
    between open tasks points at a later id (or loops), for :func:`heaviest_chain` over them all.

    The same chains as :func:`heaviest_chain_in_order` (the same ties: the greater id), read straight
    from the edges: a plan's whole graph is this loop, with no list of dependencies built per task.
    """
    total = dict(weight)  # each id's heaviest chain ending there, final once the pass is past its edges
    before: dict[str, str] = {}
    get = total.get
    current, is_open, heaviest, previous, count = "", False, 0, "", 0
    for task_id, dependency in edges:
        if task_id != current:
            if task_id < current:
                return None
            if heaviest:
                total[current] += heaviest
                before[current] = previous
            current, is_open, heaviest = task_id, task_id in total, 0
        found = get(dependency)
        if found is None:
            count += dependency in finished
            continue
        count += 1
        if not is_open:
            continue
        if dependency >= task_id:
            return None
        if found > heaviest or (found == heaviest and dependency > previous):
            heaviest, previous = found, dependency
    if heaviest:
        total[current] += heaviest
        before[current] = previous
    if not total:
        return [], count
    top = max(total.values())
    end: str | None = max(task_id for task_id, value in total.items() if value == top)
    path: list[str] = []
    while end is not None:
        path.append(end)
        end = before.get(end)
    return path[::-1], count


def _walk_back(best: Chains) -> list[str]:
    """The heaviest chain, from its first task: back from the heaviest end (ties: the greater id)."""
    end: str | None = max(best, key=lambda tid: (best[tid][0], tid))
    path: list[str] = []
    while end is not None:
        path.append(end)
        end = best[end][1]
    return path[::-1]


Chains = dict[str, tuple[int, str | None]]
"""Each id's heaviest chain ending there: (its weight, the id before it on the chain)."""


def _chain_in_order(open_ids: Sequence[str], weight: Mapping[str, int], dependencies: Mapping[str, Sequence[str]],
                    members: set[str]) -> Chains | None:
    """The chains in one pass over ``open_ids``, when every dependency comes before its dependent (ids
    sorted, and plans whose tasks depend on earlier ones); None at the first that does not (a later
    dependency, or a cycle), for :func:`_chain_by_search`. On a graph without cycles both give the same."""
    best: Chains = {}
    get_deps, get_best = dependencies.get, best.get
    for tid in open_ids:
        deps = get_deps(tid)
        if not deps:
            best[tid] = (weight[tid], None)
            continue
        previous, heaviest = None, 0
        for d in deps:
            found = get_best(d)
            if found is None:
                if d in members:
                    return None
                continue
            if previous is None or (found[0], d) > (heaviest, previous):
                previous, heaviest = d, found[0]
        best[tid] = (weight[tid] + heaviest, previous)
    return best


def _chain_by_search(open_ids: Sequence[str], weight: Mapping[str, int], dependencies: Mapping[str, Sequence[str]],
                     members: set[str]) -> Chains:
    """The chains by depth-first search over the dependencies, cutting a cycle where it closes."""
    best: Chains = {}
    state: dict[str, int] = {}
    for root in open_ids:  # iterative depth-first search over dependencies
        if state.get(root) == 2:
            continue
        # Each frame: (task, its dependencies among the members, the next of them to visit).
        stack: list[tuple[str, list[str], int]] = [(root, [d for d in dependencies.get(root, ()) if d in members], 0)]
        state[root] = 1
        while stack:
            tid, deps, index = stack.pop()
            if index < len(deps):
                stack.append((tid, deps, index + 1))
                dep = deps[index]
                if state.get(dep) is None:
                    state[dep] = 1
                    stack.append((dep, [d for d in dependencies.get(dep, ()) if d in members], 0))
                continue
            previous, heaviest = None, 0
            for d in deps:
                found = best.get(d)
                if found is not None and (previous is None or (found[0], d) > (heaviest, previous)):
                    previous, heaviest = d, found[0]
            best[tid] = (weight[tid] + heaviest, previous)
            state[tid] = 2
    return best


def complexity_weight(value: Any) -> int:
    """A task's weight on the critical path: its complexity score, 1 when unscored or out of range."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 5 else 1


def _weight(task: Mapping[str, Any]) -> int:
    scores = task.get("scores") or {}
    return complexity_weight(scores.get("complexity") if isinstance(scores, Mapping) else None)


def _critical_edges(critical: Sequence[str]) -> set[tuple[str, str]]:
    return set(zip(critical, critical[1:], strict=False))


def _mermaid_text(text: str) -> str:
    out = []
    for char in " ".join(str(text).split()):
        if char == '"':
            out.append("#quot;")
        elif char in "<>&#":
            out.append(f"#{ord(char)};")
        elif char.isprintable():
            out.append(char)
    return "".join(out)


CRITICAL_CLASS = "critical"
"""The Mermaid class outlining the critical path's tasks (declared after the state classes, so its
border wins over theirs; ``style`` would take one node id per line)."""


def mermaid(nodes: Sequence[Mapping[str, Any]], edges: Sequence[Mapping[str, str]], critical: Sequence[str]) -> str:
    """The graph as a Mermaid 11 flowchart: dependency -> dependent, states as colours (one class per
    state), the critical path outlined in red (its tasks in the ``critical`` class, its edges with
    ``linkStyle``)."""
    ids = {node["id"]: node["id"] if _PLAIN_ID.match(node["id"]) else f"n{index}" for index, node in enumerate(nodes)}
    on_path = set(critical)
    lines = ["flowchart LR"]
    for node in nodes:
        label = f"{_mermaid_text(node['id'] + ': ' + node['title'])}<br/>{node_state(node)}"
        lines.append(f'  {ids[node["id"]]}["{label}"]:::{node_state(node)}')
    hot = _critical_edges(critical)
    marked: list[int] = []
    shown = [e for e in edges if e["from"] in ids and e["to"] in ids]
    for index, edge in enumerate(shown):
        lines.append(f"  {ids[edge['from']]} --> {ids[edge['to']]}")
        if (edge["from"], edge["to"]) in hot:
            marked.append(index)
    for state in sorted({node_state(n) for n in nodes}):
        fill, stroke = STATE_COLOURS.get(state, DEFAULT_COLOURS)
        lines.append(f"  classDef {state} fill:{fill},stroke:{stroke},color:#000")
    critical_nodes = [ids[tid] for tid in critical if tid in ids and tid in on_path]
    if critical_nodes:
        lines.append(f"  classDef {CRITICAL_CLASS} stroke:{CRITICAL},stroke-width:3px")
        lines.append(f"  class {','.join(critical_nodes)} {CRITICAL_CLASS}")
    if marked:
        lines.append(f"  linkStyle {','.join(map(str, marked))} stroke:{CRITICAL},stroke-width:3px")
    return "\n".join(lines) + "\n"


def _dot_text(text: str) -> str:
    cleaned = "".join(c for c in " ".join(str(text).split()) if c.isprintable())
    return cleaned.replace("\\", "\\\\").replace('"', '\\"')


def dot(nodes: Sequence[Mapping[str, Any]], edges: Sequence[Mapping[str, str]], critical: Sequence[str]) -> str:
    """The graph in Graphviz DOT: dependency -> dependent, states as colours, the critical path in red."""
    on_path = set(critical)
    hot = _critical_edges(critical)
    known = {node["id"] for node in nodes}
    lines = ["digraph anvil {", "  rankdir=LR;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
             '  edge [color="#757575"];']
    for node in nodes:
        state = node_state(node)
        fill, stroke = STATE_COLOURS.get(state, DEFAULT_COLOURS)
        extra = f', color="{CRITICAL}", penwidth=3' if node["id"] in on_path else f', color="{stroke}"'
        label = f"{_dot_text(node['id'])}: {_dot_text(node['title'])}\\n{state}"
        lines.append(f'  "{_dot_text(node["id"])}" [label="{label}", fillcolor="{fill}"{extra}];')
    for edge in edges:
        if edge["from"] not in known or edge["to"] not in known:
            continue
        style = f' [color="{CRITICAL}", penwidth=3]' if (edge["from"], edge["to"]) in hot else ""
        lines.append(f'  "{_dot_text(edge["from"])}" -> "{_dot_text(edge["to"])}"{style};')
    lines.append("}")
    return "\n".join(lines) + "\n"
