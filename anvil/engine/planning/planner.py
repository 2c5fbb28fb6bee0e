"""Turn a parsed PRD into a planned task graph: dependencies, inferred edges and conflict groups.

Everything here is pure and deterministic: the same :class:`PrdDocument` always gives a plan
whose JSON form is byte-identical, and every value is JSON-ready (lists, never tuples).

Terms: task *a reaches* task *b* when *a* transitively depends on *b*. Two tasks are *ordered*
when one reaches the other, and *unordered* otherwise.

Cost: O((V + E) log V) plus one O(1) question per pair of tasks sharing a file, in the common
case. Reachability inside a feature comes from per-feature bitsets, exact whenever no path can
leave the feature and come back (no cycle among features); across features from bitsets over
the tasks that share files across features; what is left walks the graph pruned by topological
position and gives up after :data:`REACH_BUDGET` tasks. A file listed by more than
:data:`BUCKET_LIMIT` tasks is never examined pair by pair.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from anvil.engine import progress
from anvil.engine.errors import UsageError
from anvil.engine.planning.dependencies import find_cycle
from anvil.engine.prd.model import PrdDocument, TaskSpec
from anvil.engine.tasks import normalise_files
from anvil.engine.vocab import PRIORITY_RANK

BUCKET_LIMIT = 64
"""Above this many tasks on one file, they all conflict on it and nothing is inferred from it."""
REACH_BUDGET = 512
"""Tasks one reachability walk may expand before the answer counts as undecidable."""
BITSET_LIMIT = 4096
"""Most columns of one reachability bitset (a feature's tasks, or the tasks sharing files across
features); memory grows with tasks times columns, so what does not fit is walked instead."""

PLANNED_TASK_KEYS: tuple[str, ...] = (
    "feature_id", "title", "description", "priority", "type", "likely_files",
    "dependencies", "inferred_dependencies", "acceptance_criteria", "verification",
)
"""Task keys compared by :func:`diff_plans`; ``conflict_groups`` is left out because group ids
are renumbered whenever an earlier group appears or disappears."""


@dataclass(slots=True)
class Plan:
    """A planned PRD: JSON-ready features, tasks, conflict groups and planner warnings."""

    features: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    conflict_groups: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    startable_width: int = 0  # the most tasks claimable at once in one round (see :func:`drain`)
    drain_rounds: int = 0  # rounds of parallel work that finish every task that can start

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form of the whole plan."""
        return asdict(self)


def is_test_or_docs(task_type: str | None) -> bool:
    """Whether a task's free-form type marks it as test or documentation work."""
    label = (task_type or "").lower()
    return "test" in label or "doc" in label


def plan_from_document(doc: PrdDocument) -> Plan:
    """Plan the tasks of a parsed PRD.

    Explicit dependencies are kept in source order; ids naming no task, self references and
    later duplicates of a task id are dropped with a warning. A cycle among explicit
    dependencies is reported as a warning and disables inference.

    Dependency inference is deliberately conservative. A task ``t`` gains a dependency on a
    task ``i`` only when all of these hold: they list a common likely file that at most
    :data:`BUCKET_LIMIT` tasks list; they belong to the same feature (tasks without a feature
    count as one feature); ``t``'s type contains "test" or "doc" and ``i``'s does not; neither
    already reaches the other, counting edges inferred so far (skipped when undecidable); and
    ``i`` comes before ``t`` in a fixed topological order of the explicit graph that places
    non-test tasks as early as possible. The last rule means inference can never create a
    cycle. Tasks are visited in that order and each one's candidates from the latest
    backwards, so an edge already implied by an inferred or explicit one is not added.

    Conflict groups: two tasks that share a likely file and are unordered in the final graph
    conflict on that file; a pair whose order is undecidable counts as unordered, and when a
    file is listed by more than :data:`BUCKET_LIMIT` tasks they all conflict on it. Each file
    with conflicting tasks gives a group of exactly those tasks (files with the same tasks share
    one group), and each unordered pair a task declares under ``**Conflicts:**`` gives a group
    of the two. Every unordered pair sharing a file thus shares a group, two tasks share a group
    only when they share a file or declared the conflict, and a task may be in several. Groups
    are numbered ``CG001``, ``CG002``, ... by their first file's first appearance, declared
    pairs after the files.

    Args:
        doc: The parsed PRD.

    Returns:
        The :class:`Plan`.

    Raises:
        Nothing: problems in the document become ``warnings`` instead.
    """
    warnings: list[str] = []
    features = _features(doc, warnings)
    specs: list[TaskSpec] = _first_of_each(doc.tasks, "task", warnings)
    index = {spec.id: i for i, spec in enumerate(specs)}
    known_features = {f["id"] for f in features}

    files: list[list[str]] = []
    explicit: list[list[int]] = []
    for spec in specs:
        files.append(normalise_files(spec.likely_files))
        explicit.append(_resolve_dependencies(spec, index, warnings))
        if spec.feature_id is not None and spec.feature_id not in known_features:
            warnings.append(f"task {spec.id} names unknown feature {spec.feature_id}")

    buckets: dict[str, list[int]] = {}  # file -> tasks listing it; insertion order = first appearance
    for i, task_files in enumerate(files):
        for name in task_files:
            buckets.setdefault(name, []).append(i)
    for name, members in buckets.items():
        if len(members) > BUCKET_LIMIT:
            warnings.append(f"{len(members)} tasks list file {name[:200]}; they all conflict on it "
                            "and no dependencies are inferred from it")

    progress.report("planning", 1, 4)
    late = [is_test_or_docs(spec.type) for spec in specs]
    order = _topological_order(explicit, late)
    if order is None:
        cycle = find_cycle({spec.id: [specs[d].id for d in explicit[i]] for i, spec in enumerate(specs)}) or []
        warnings.append("explicit dependencies form a cycle: " + " -> ".join(cycle[:20]))
        warnings.append("no dependencies were inferred because of the cycle")
    reach = _Reach(specs, [list(d) for d in explicit], order)
    progress.report("planning", 2, 4)
    inferred = reach.close_and_infer(_candidates(specs, buckets, late))
    progress.report("planning", 3, 4)
    if reach.undecided:
        warnings.append(f"{reach.undecided} possible inferred dependencies were skipped as undecidable")

    task_groups, groups = _conflict_groups(specs, buckets, reach, index)
    tasks = [
        _task_dict(spec, files[i], explicit[i], inferred[i], specs, task_groups[i])
        for i, spec in enumerate(specs)
    ]
    # Two tasks ready at once are unordered, so sharing a file puts them in a common group: the
    # groups alone decide who may start beside whom.
    held: dict[int, list[int]] = {}  # only tasks in a group hold anything (a list per task costs a collection)
    for number, group in enumerate(groups):
        for tid in group["tasks"]:
            held.setdefault(index[tid], []).append(number)
    # An inferred edge never repeats an explicit one (it is added only where no path exists yet).
    drained = _drain([explicit[i] + inferred[i] if inferred[i] else explicit[i] for i in range(len(specs))], held,
                     [PRIORITY_RANK.get(spec.priority, 2) for spec in specs])
    progress.report("planning", 4, 4)
    return Plan(features=features, tasks=tasks, conflict_groups=groups, warnings=warnings,
                startable_width=drained.width, drain_rounds=drained.rounds)


@dataclass(frozen=True, slots=True)
class Drain:
    """How a plan drains when every task that can start does: rounds of parallel work.

    ``width`` is the most tasks claimable at once in one round (the startable width), ``rounds``
    how many rounds finish every task that can ever start, ``widths`` the tasks started in each
    round, and ``stuck`` the tasks that never can (they wait on a dependency cycle).
    """

    width: int
    rounds: int
    widths: tuple[int, ...]
    stuck: int


def drain(tasks: list[dict[str, Any]]) -> Drain:
    """Simulate agents draining planned ``tasks`` in rounds, as claims allow.

    In each round every task whose dependencies are done may start, in the order offers use
    (priority first, then plan order), unless a task started earlier in the same round shares a
    conflict group or a likely file with it (claims refuse that). Every task started in a round is
    done at its end. Dependencies on tasks outside ``tasks`` count as done.

    Args:
        tasks: Planned task dicts with ``id``, ``priority``, ``dependencies``, ``conflict_groups`` and
            ``likely_files``.

    Returns:
        The :class:`Drain`.

    Raises:
        Nothing.
    """
    index = {t["id"]: i for i, t in enumerate(tasks)}
    keys: dict[str, int] = {}
    blocks: dict[int, list[int]] = {}
    deps: list[list[int]] = []
    for i, t in enumerate(tasks):
        held = [keys.setdefault("g" + g, len(keys)) for g in t.get("conflict_groups", ())]
        held += [keys.setdefault("f" + f, len(keys)) for f in t.get("likely_files", ())]
        if held:
            blocks[i] = held
        deps.append([j for j in (index.get(d) for d in set(t.get("dependencies", ()))) if j is not None and j != i])
    return _drain(deps, blocks, [PRIORITY_RANK.get(t.get("priority", "medium"), 2) for t in tasks])


def _drain(deps: list[list[int]], blocks: dict[int, list[int]], ranks: list[int]) -> Drain:
    """:func:`drain` over task numbers: each task's dependencies (distinct, no self), what it holds
    while it runs (its groups and files as numbers), and its priority rank."""
    n = len(deps)
    remaining = [len(d) for d in deps]
    dependents: list[list[int]] = [[] for _ in deps]
    for i, task_deps in enumerate(deps):
        for j in task_deps:
            dependents[j].append(i)
    top = len(PRIORITY_RANK) + 1
    order = [(top - ranks[i]) * n + i for i in range(n)]  # one int sorts in offer order
    # A task that holds nothing starts whenever it is ready; only the others need the ordered greedy pass.
    free = [i not in blocks for i in range(n)]
    ready_free = [i for i in range(n) if not remaining[i] and free[i]]
    ready = sorted(order[i] for i in range(n) if not remaining[i] and not free[i])
    widths: list[int] = []
    started_total = 0
    while ready_free or ready:
        busy: set[int] = set()
        started = ready_free
        waiting: list[int] = []
        for entry in ready:
            i = entry % n
            held = blocks[i]
            if busy.isdisjoint(held):
                busy.update(held)
                started.append(i)
            else:
                waiting.append(entry)
        widths.append(len(started))
        started_total += len(started)
        ready_free = []
        for i in started:
            for j in dependents[i]:
                remaining[j] -= 1
                if not remaining[j]:
                    if free[j]:
                        ready_free.append(j)
                    else:
                        waiting.append(order[j])
        waiting.sort()
        ready = waiting
    return Drain(width=max(widths, default=0), rounds=len(widths), widths=tuple(widths), stuck=n - started_total)


def diff_plans(old_tasks: list[dict[str, Any]], new_tasks: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Compare two planned task lists by id.

    Only the planned content (:data:`PLANNED_TASK_KEYS`) is compared, so status, scores,
    claims and conflict group numbering never make a task "changed". Tuples and lists compare
    equal. When an id appears twice in one list, the first occurrence counts.

    Args:
        old_tasks: The tasks as stored before.
        new_tasks: The newly planned tasks.

    Returns:
        ``{"added": [...], "changed": [...], "removed": [...]}``, each a sorted list of ids.

    Raises:
        UsageError: ``invalid_input`` when a task is not a mapping with a string ``id``.
    """
    old = _by_id(old_tasks)
    new = _by_id(new_tasks)
    return {
        "added": sorted(new.keys() - old.keys()),
        "changed": sorted(tid for tid in old.keys() & new.keys() if _planned(old[tid]) != _planned(new[tid])),
        "removed": sorted(old.keys() - new.keys()),
    }


def _features(doc: PrdDocument, warnings: list[str]) -> list[dict[str, Any]]:
    return [
        {"id": f.id, "title": f.title, "description": f.description, "requirements": list(f.requirements)}
        for f in _first_of_each(doc.features, "feature", warnings)
    ]


def _first_of_each(items: tuple[Any, ...], kind: str, warnings: list[str]) -> list[Any]:
    out: list[Any] = []
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            warnings.append(f"duplicate {kind} id {item.id}; the later one is ignored")
        else:
            seen.add(item.id)
            out.append(item)
    return out


def _resolve_dependencies(spec: TaskSpec, index: dict[str, int], warnings: list[str]) -> list[int]:
    out: list[int] = []
    for dep in spec.dependencies:
        if dep == spec.id:
            warnings.append(f"task {spec.id} depends on itself; the dependency is ignored")
        elif dep not in index:
            warnings.append(f"task {spec.id} depends on unknown task {dep}; the dependency is ignored")
        elif index[dep] not in out:
            out.append(index[dep])
    return out


def _topological_order(deps: list[list[int]], late: list[bool]) -> list[int] | None:
    """Kahn's algorithm, dependencies first; ties go to non-late nodes, then to the lower index."""
    remaining = [len(d) for d in deps]
    dependents: list[list[int]] = [[] for _ in deps]
    for i, node_deps in enumerate(deps):
        for d in node_deps:
            dependents[d].append(i)
    heap = [(late[i], i) for i in range(len(deps)) if not remaining[i]]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        _, i = heapq.heappop(heap)
        order.append(i)
        for j in dependents[i]:
            remaining[j] -= 1
            if not remaining[j]:
                heapq.heappush(heap, (late[j], j))
    return order if len(order) == len(deps) else None


def _candidates(specs: list[TaskSpec], buckets: dict[str, list[int]], late: list[bool]) -> dict[int, set[int]]:
    """Test/docs task -> the non-test tasks of its feature it shares a (not oversized) file with."""
    out: dict[int, set[int]] = {}
    for members in buckets.values():
        if len(members) < 2 or len(members) > BUCKET_LIMIT:
            continue
        by_feature: dict[str | None, tuple[list[int], list[int]]] = {}
        for i in members:
            tests, impls = by_feature.setdefault(specs[i].feature_id, ([], []))
            (tests if late[i] else impls).append(i)
        for tests, impls in by_feature.values():
            for t in tests if impls else ():
                out.setdefault(t, set()).update(impls)
    return out


class _Reach:
    """Reachability for the planner over a graph that only grows by :meth:`close_and_infer`.

    ``local[x]`` is a bitset over the tasks of ``x``'s feature (bit ``lid[y]``) that ``x``
    reaches without leaving the feature. It is built in topological order, so it is final
    once a task is visited. For a feature marked ``exact`` no path can leave it and return,
    so the bitset is the whole truth; elsewhere a set bit is still a sound "yes". After
    :meth:`index_targets`, ``across[x]`` has bit ``column[t]`` set exactly when ``x`` reaches
    ``t``, for the indexed targets.
    """

    def __init__(self, specs: list[TaskSpec], deps: list[list[int]], order: list[int] | None) -> None:
        n = len(specs)
        self.deps = deps
        self.order = order
        self.undecided = 0
        keys: dict[str | None, int] = {}
        self.feature = [keys.setdefault(spec.feature_id, len(keys)) for spec in specs]
        sizes = [0] * len(keys)
        self.lid = [0] * n
        for i, f in enumerate(self.feature):
            self.lid[i] = sizes[f]
            sizes[f] += 1
        self.local = [0] * n
        self.pos: list[int] | None = None
        self.column: dict[int, int] = {}  # cross-feature target -> its bit in ``across``
        self.across = [0] * n
        feature_deps: list[set[int]] = [set() for _ in keys]
        for i, node_deps in enumerate(deps):
            feature_deps[self.feature[i]].update(self.feature[d] for d in node_deps)
        for f, fdeps in enumerate(feature_deps):
            fdeps.discard(f)
        feature_order = _topological_order([sorted(d) for d in feature_deps], [False] * len(keys)) or []
        self.fpos = [-1] * len(keys)  # -1: on or behind a feature-level cycle
        for k, f in enumerate(feature_order):
            self.fpos[f] = k
        self.exact = [order is not None and self.fpos[f] >= 0 and sizes[f] <= BITSET_LIMIT
                      for f in range(len(keys))]
        self.bitsets = [size <= BITSET_LIMIT for size in sizes]
        if order is not None:
            self.pos = [0] * n
            for k, i in enumerate(order):
                self.pos[i] = k

    def close_and_infer(self, candidates: dict[int, set[int]]) -> list[list[int]]:
        """Build the bitsets and add inferred edges (see :func:`plan_from_document`)."""
        inferred: list[list[int]] = [[] for _ in self.deps]
        if self.order is None or self.pos is None:
            return inferred
        pos, feature, lid, local = self.pos, self.feature, self.lid, self.local
        for x in self.order:
            f = feature[x]
            if self.bitsets[f]:
                bits = 0
                for d in self.deps[x]:
                    if feature[d] == f:
                        bits |= (1 << lid[d]) | local[d]
                local[x] = bits
            for i in sorted(candidates.get(x, ()), key=pos.__getitem__, reverse=True):
                if pos[i] > pos[x]:
                    continue  # disagrees with the order: i might reach x, so no edge
                answer = self.reaches(x, i)
                if answer is None:
                    self.undecided += 1
                elif not answer:
                    self.deps[x].append(i)
                    inferred[x].append(i)
                    if self.bitsets[f]:
                        local[x] |= (1 << lid[i]) | local[i]
        return inferred

    def index_targets(self, targets: list[int]) -> None:
        """Make "does anything reach ``t``" exact and O(1) for the first :data:`BITSET_LIMIT`
        ``targets``; call after :meth:`close_and_infer`, as the graph must be final."""
        if self.order is None:
            return
        self.column = {t: k for k, t in enumerate(sorted(set(targets))[:BITSET_LIMIT])}
        column, across = self.column, self.across
        for x in self.order:
            bits = 0
            for d in self.deps[x]:
                bits |= across[d]
                if d in column:
                    bits |= 1 << column[d]
            across[x] = bits

    def reaches(self, a: int, b: int) -> bool | None:
        """Whether ``a`` reaches ``b``; ``None`` when undecidable within the budget."""
        pos = self.pos
        if pos is not None and pos[a] <= pos[b]:
            return False
        fa, fb = self.feature[a], self.feature[b]
        if fa == fb:
            if self.local[a] >> self.lid[b] & 1:
                return True
            if self.exact[fa]:
                return False
        elif self.fpos[fa] >= 0 and self.fpos[fb] >= 0 and self.fpos[fa] <= self.fpos[fb]:
            return False  # feature fa comes first, so it reaches nothing in fb
        if b in self.column:
            return bool(self.across[a] >> self.column[b] & 1)
        if pos is None:
            return _walk(a, b, self.deps, None)
        floor = pos[b]
        return _walk(a, b, self.deps, lambda x: pos[x] > floor)

    def ordered(self, a: int, b: int) -> bool:
        """Whether one task reaches the other; undecidable counts as unordered."""
        if self.pos is not None:
            hi, lo = (a, b) if self.pos[a] > self.pos[b] else (b, a)
            return bool(self.reaches(hi, lo))
        return bool(self.reaches(a, b)) or bool(self.reaches(b, a))


def _walk(src: int, dst: int, deps: list[list[int]], may: Callable[[int], bool] | None) -> bool | None:
    """Depth-first search from ``src`` for ``dst`` expanding at most :data:`REACH_BUDGET` tasks.

    ``may(x)`` is a necessary condition for ``x`` reaching ``dst``; tasks failing it are skipped.
    """
    seen = {src}
    stack = [src]
    expanded = 0
    while stack:
        expanded += 1
        if expanded > REACH_BUDGET:
            return None
        for nxt in deps[stack.pop()]:
            if nxt == dst:
                return True
            if nxt not in seen:
                seen.add(nxt)
                if may is None or may(nxt):
                    stack.append(nxt)
    return False


def _conflict_groups(
    specs: list[TaskSpec], buckets: dict[str, list[int]], reach: _Reach, index: dict[str, int],
) -> tuple[list[list[str]], list[dict[str, Any]]]:
    """Return each task's group ids and the groups themselves.

    A group is the set of tasks that conflict on one file (they list it and are unordered), or a
    pair declared in conflict (``**Conflicts:**``) and unordered; files whose sets are the same
    share one group. Two tasks are thus in a common group only when they share a file or declared
    their conflict: the group never reaches past the file that makes it.
    """
    n = len(specs)
    reach.index_targets([
        i for members in buckets.values() if 1 < len(members) <= BUCKET_LIMIT
        and len({reach.feature[m] for m in members}) > 1 for i in members
    ])
    unordered: dict[tuple[int, int], bool] = {}  # pairs often share several files

    def apart(a: int, b: int) -> bool:
        key = (a, b) if a < b else (b, a)
        found = unordered.get(key)
        if found is None:
            found = unordered[key] = not reach.ordered(a, b)
        return found

    by_members: dict[tuple[int, ...], list[str]] = {}  # insertion order: the first file's first appearance
    for name, members in buckets.items():
        if len(members) > BUCKET_LIMIT:
            conflicting = set(members)
        elif len(members) > 1:
            conflicting = set()
            for x, a in enumerate(members):
                for b in members[x + 1:]:
                    if apart(a, b):
                        conflicting.update((a, b))
        else:
            continue
        if conflicting:
            by_members.setdefault(tuple(sorted(conflicting)), []).append(name)
    for first, spec in enumerate(specs):
        for other in spec.conflicts:
            second = index.get(other)
            if second is not None and second != first and apart(first, second):
                by_members.setdefault((min(first, second), max(first, second)), [])
    task_groups: list[list[str]] = [[] for _ in range(n)]
    groups: list[dict[str, Any]] = []
    for number, (group_members, names) in enumerate(by_members.items(), start=1):
        gid = f"CG{number:03d}"
        for i in group_members:
            task_groups[i].append(gid)
        groups.append({"id": gid, "files": sorted(names), "tasks": [specs[i].id for i in group_members]})
    return task_groups, groups


def _task_dict(
    spec: TaskSpec, files: list[str], explicit: list[int], inferred: list[int], specs: list[TaskSpec],
    groups: list[str],
) -> dict[str, Any]:
    inferred_ids = sorted([specs[i].id for i in inferred]) if inferred else []
    description = spec.description
    if spec.verification_notes:  # what the PRD says beside its commands, where agents read the task
        notes = "\n".join(f"- {n.command}: {n.note}" for n in spec.verification_notes)
        description = f"{description}\n\nVerification notes:\n{notes}".strip()
    return {
        "id": spec.id, "feature_id": spec.feature_id, "title": spec.title, "description": description,
        "priority": spec.priority, "type": spec.type, "likely_files": files,
        "dependencies": [specs[i].id for i in explicit] + inferred_ids, "inferred_dependencies": inferred_ids,
        "acceptance_criteria": list(spec.acceptance_criteria), "verification": list(spec.verification),
        "conflict_groups": groups,
    }


def _by_id(tasks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    if not isinstance(tasks, list):
        raise UsageError("a task list is not a list", code="invalid_input")
    out: dict[str, dict[str, Any]] = {}
    for task in tasks:
        if not isinstance(task, dict) or not isinstance(task.get("id"), str):
            raise UsageError("a task has no string id", code="invalid_input")
        out.setdefault(task["id"], task)
    return out


def _planned(task: dict[str, Any]) -> list[Any]:
    return [_as_json(task.get(key)) for key in PLANNED_TASK_KEYS]


def _as_json(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    return value
