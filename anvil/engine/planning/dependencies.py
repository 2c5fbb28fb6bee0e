"""Validated batch edits of the task dependency graph, and cycle detection.

A graph here is ``dict[task_id, list[dependency_id]]``: an edge ``[source, target]`` means
*source depends on target*. A batch is validated as a whole before anything is applied, so a
caller either gets the complete result or an error and no partial state. Error messages are
fixed strings that never echo the caller's input (at most a count), because they travel back
to agents and logs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from anvil.engine.errors import NotFound, Refused, UsageError

DEFAULT_EDGE_CAP = 10_000


@dataclass(slots=True)
class DependencyEdit:
    """The effect of one accepted batch of dependency edits.

    Attributes:
        new: The complete new dependency list of every task whose list changed.
        changed: Ids of the tasks in ``new``, sorted.
        added: ``[source, target]`` edges that were actually added, in request order.
        removed: ``[source, target]`` edges that were actually removed, in request order.
    """

    new: dict[str, list[str]] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    added: list[list[str]] = field(default_factory=list)
    removed: list[list[str]] = field(default_factory=list)


def find_cycle(graph: Mapping[str, list[str]]) -> list[str] | None:
    """Find one dependency cycle, iteratively, in O(V + E).

    Args:
        graph: Maps each task id to the ids it depends on. Ids that appear only as
            dependencies are treated as tasks without dependencies.

    Returns:
        The tasks of one cycle in edge order (``[a, b, c]`` for ``a -> b -> c -> a``; a self
        edge gives ``[a]``), or ``None`` when the graph is acyclic. Nodes are visited in the
        mapping's order, so the answer is deterministic.

    Raises:
        TypeError: Only when ``graph`` is not a mapping of iterables of hashable ids.
    """
    white, grey, black = 0, 1, 2
    colour: dict[str, int] = {}
    for root in graph:
        if colour.get(root, white) != white:
            continue
        colour[root] = grey
        path = [root]
        stack = [iter(graph.get(root, ()))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                colour[path.pop()] = black
                stack.pop()
                continue
            state = colour.get(nxt, white)
            if state == grey:
                return path[path.index(nxt):]
            if state == white:
                colour[nxt] = grey
                path.append(nxt)
                stack.append(iter(graph.get(nxt, ())))
    return None


def apply_dependency_edits(
    current: Mapping[str, list[str]],
    add: Any,
    remove: Any,
    *,
    sources_allowed: set[str] | None = None,
    cap: int = DEFAULT_EDGE_CAP,
) -> DependencyEdit:
    """Validate a whole batch of dependency edits and compute its effect.

    Removals are applied before additions. An added dependency is appended to the end of the
    source's list, in request order. Re-adding an existing edge or removing an absent one is a
    no-op and is not reported in ``added``/``removed``; an existing edge both removed and added
    moves to the end of its list (the task counts as changed) but is reported in neither.

    Args:
        current: Maps every known task id to its ordered dependency list. Not modified.
        add: A list of ``[source, target]`` string pairs to add, or ``None``.
        remove: A list of ``[source, target]`` string pairs to remove, or ``None``.
        sources_allowed: When given, every edge's source must be one of these ids (targets
            may be any known task).
        cap: The largest number of pairs accepted in one batch (add and remove together).

    Returns:
        A :class:`DependencyEdit` describing only what changed.

    Raises:
        UsageError: ``malformed_edge`` when ``add``/``remove`` is not a list of two-string
            pairs; ``too_many_edges`` above ``cap``; ``no_edges`` when both are empty;
            ``self_dependency`` for an edge from a task to itself.
        NotFound: ``unknown_task`` when an edge names a task missing from ``current`` (removing
            an existing edge to a task that no longer exists is allowed).
        Refused: ``source_outside_prd`` for a source outside ``sources_allowed``;
            ``dependency_cycle`` when the resulting graph has a cycle.
    """
    adds = _pairs(add, cap)
    removes = _pairs(remove, cap - len(adds))
    if not adds and not removes:
        raise UsageError("no dependency edges were supplied", code="no_edges")
    edges = removes + adds
    # A dangling edge (its target was pruned) can still be removed.
    unknown = sum(1 for s, t in adds if s not in current or t not in current) + sum(
        1 for s, t in removes if s not in current or (t not in current and t not in current[s]))
    if unknown:
        raise NotFound(f"{unknown} edge(s) name a task that does not exist (anvil list shows the task ids)",
                       code="unknown_task")
    if sources_allowed is not None:
        outside = sum(1 for s, _ in edges if s not in sources_allowed)
        if outside:
            raise Refused(f"{outside} edge(s) start at a task outside this PRD", code="source_outside_prd")
    selfish = sum(1 for s, t in edges if s == t)
    if selfish:
        raise UsageError(f"{selfish} edge(s) make a task depend on itself", code="self_dependency")

    lists: dict[str, list[str]] = {}
    members: dict[str, set[str]] = {}  # mirrors ``lists`` so a huge batch on one task stays linear
    removed: list[list[str]] = []
    added: list[list[str]] = []
    for source, target in removes:
        if source not in lists:
            lists[source] = list(current[source])
            members[source] = set(lists[source])
        if target in members[source]:
            members[source].discard(target)
            removed.append([source, target])
    for source in {s for s, _ in removes}:
        lists[source] = [d for d in lists[source] if d in members[source]]
    for source, target in adds:
        if source not in lists:
            lists[source] = list(current[source])
            members[source] = set(lists[source])
        if target not in members[source]:
            members[source].add(target)
            lists[source].append(target)
            added.append([source, target])
    # An edge removed and re-added in one batch exists before and after: report neither.
    both = {tuple(e) for e in removed} & {tuple(e) for e in added}
    if both:
        removed = [e for e in removed if tuple(e) not in both]
        added = [e for e in added if tuple(e) not in both]
    new = {tid: deps for tid, deps in lists.items() if deps != list(current[tid])}
    if new:
        final: dict[str, list[str]] = {tid: new.get(tid, deps) for tid, deps in current.items()}
        cycle = find_cycle(final)
        if cycle is not None:
            shown = " -> ".join([*cycle[:8], cycle[0]] if len(cycle) <= 8 else [*cycle[:8], "..."])
            raise Refused(f"the edit would create a dependency cycle: {shown} (each depends on the next)",
                          code="dependency_cycle")
    return DependencyEdit(new={k: new[k] for k in sorted(new)}, changed=sorted(new), added=added, removed=removed)


def _pairs(value: Any, room: int) -> list[tuple[str, str]]:
    """Check one side of a batch and return it as tuples; ``room`` is what the cap still allows."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise UsageError("edges must be a list of [source, target] pairs", code="malformed_edge")
    if len(value) > room:
        raise UsageError("too many edges in one request", code="too_many_edges")
    pairs: list[tuple[str, str]] = []
    for item in value:
        if (
            not isinstance(item, (list, tuple))
            or len(item) != 2
            or not isinstance(item[0], str)
            or not isinstance(item[1], str)
        ):
            raise UsageError("every edge must be a [source, target] pair of task ids", code="malformed_edge")
        pairs.append((item[0], item[1]))
    return pairs
