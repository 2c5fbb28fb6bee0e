"""Behaviour of the pure planner: dependency inference, conflict groups, determinism, diffs."""

from __future__ import annotations

import heapq
import json
import random
from collections.abc import Callable
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anvil.engine.errors import UsageError
from anvil.engine.planning import planner as planning
from anvil.engine.planning.dependencies import find_cycle
from anvil.engine.planning.planner import (
    BUCKET_LIMIT,
    Plan,
    diff_plans,
    drain,
    is_test_or_docs,
    plan_from_document,
)
from anvil.engine.prd.model import CommandNote, Feature, PrdDocument, TaskSpec
from tests.conftest import sized


def task(
    tid: str,
    *,
    feature: str | None = "F001",
    type: str | None = None,
    files: tuple[str, ...] = (),
    deps: tuple[str, ...] = (),
    conflicts: tuple[str, ...] = (),
    priority: str = "medium",
) -> TaskSpec:
    return TaskSpec(
        id=tid, title=f"Task {tid}", feature_id=feature, priority=priority, type=type,
        likely_files=files, dependencies=deps, acceptance_criteria=("works",),
        verification=("pytest -q",), description="", line=1, conflicts=conflicts,
    )


def document(*tasks: TaskSpec, features: tuple[str, ...] = ("F001", "F002")) -> PrdDocument:
    return PrdDocument(
        project_name="p", summary="s",
        features=tuple(Feature(fid, f"Feature {fid}", "", (), 1) for fid in features),
        tasks=tasks,
    )


def by_id(plan: Plan) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in plan.tasks}


def test_a_test_task_sharing_a_file_depends_on_the_implementation() -> None:
    plan = plan_from_document(document(
        task("T001", type="feature", files=("src/a.py",)),
        task("T002", type="test", files=("src/a.py", "tests/test_a.py")),
    ))
    tasks = by_id(plan)
    assert tasks["T002"]["dependencies"] == ["T001"]
    assert tasks["T002"]["inferred_dependencies"] == ["T001"]
    assert tasks["T001"]["dependencies"] == []
    assert plan.conflict_groups == []


def test_a_test_task_listed_before_its_implementation_still_depends_on_it() -> None:
    plan = plan_from_document(document(
        task("T001", type="Unit tests", files=("src/a.py",)),
        task("T002", files=("src/a.py",)),
    ))
    assert by_id(plan)["T001"]["inferred_dependencies"] == ["T002"]


def test_a_docs_task_sharing_a_file_depends_on_the_implementation() -> None:
    plan = plan_from_document(document(
        task("T001", files=("README.md",)),
        task("T002", type="Docs", files=("README.md",)),
    ))
    assert by_id(plan)["T002"]["dependencies"] == ["T001"]


def test_explicit_dependencies_come_first_and_inferred_ones_follow_sorted() -> None:
    plan = plan_from_document(document(
        task("T001", files=("b.py",)),
        task("T002", files=("a.py",)),
        task("T003"),
        task("T004", type="test", files=("a.py", "b.py"), deps=("T003",)),
    ))
    t4 = by_id(plan)["T004"]
    assert t4["dependencies"] == ["T003", "T001", "T002"]
    assert t4["inferred_dependencies"] == ["T001", "T002"]


def test_no_dependency_is_inferred_across_features() -> None:
    plan = plan_from_document(document(
        task("T001", feature="F001", files=("a.py",)),
        task("T002", feature="F002", type="test", files=("a.py",)),
    ))
    assert by_id(plan)["T002"]["dependencies"] == []
    assert plan.conflict_groups == [{"id": "CG001", "files": ["a.py"], "tasks": ["T001", "T002"]}]


def test_tasks_without_a_feature_count_as_one_feature() -> None:
    plan = plan_from_document(document(
        task("T001", feature=None, files=("a.py",)),
        task("T002", feature=None, type="test", files=("a.py",)),
    ))
    assert by_id(plan)["T002"]["dependencies"] == ["T001"]


def test_two_implementation_tasks_sharing_a_file_conflict_instead_of_depending() -> None:
    plan = plan_from_document(document(
        task("T001", files=("a.py",)),
        task("T002", files=("a.py",)),
    ))
    tasks = by_id(plan)
    assert tasks["T001"]["dependencies"] == tasks["T002"]["dependencies"] == []
    assert plan.conflict_groups == [{"id": "CG001", "files": ["a.py"], "tasks": ["T001", "T002"]}]
    assert tasks["T001"]["conflict_groups"] == tasks["T002"]["conflict_groups"] == ["CG001"]


def test_two_test_tasks_sharing_a_file_conflict_instead_of_depending() -> None:
    plan = plan_from_document(document(
        task("T001", type="test", files=("a.py",)),
        task("T002", type="docs", files=("a.py",)),
    ))
    assert by_id(plan)["T002"]["dependencies"] == []
    assert [g["tasks"] for g in plan.conflict_groups] == [["T001", "T002"]]


def test_no_dependency_is_inferred_against_an_existing_order() -> None:
    plan = plan_from_document(document(
        task("T001", type="test", files=("a.py",)),
        task("T002", files=("a.py",), deps=("T001",)),
    ))
    tasks = by_id(plan)
    assert tasks["T001"]["dependencies"] == []
    assert tasks["T002"]["dependencies"] == ["T001"]
    assert plan.conflict_groups == []


def test_a_dependency_already_implied_is_not_inferred_again() -> None:
    plan = plan_from_document(document(
        task("T001", files=("a.py",)),
        task("T002", files=("a.py",), deps=("T001",)),
        task("T003", type="test", files=("a.py",)),
    ))
    assert by_id(plan)["T003"]["inferred_dependencies"] == ["T002"]
    assert plan.conflict_groups == []


def test_a_path_through_another_feature_counts_as_an_order() -> None:
    plan = plan_from_document(document(
        task("T001", feature="F001", files=("a.py",), deps=("T002",)),
        task("T002", feature="F002", deps=("T003",)),
        task("T003", feature="F001", type="test", files=("a.py",)),
    ))
    assert by_id(plan)["T003"]["dependencies"] == []
    assert plan.conflict_groups == []
    assert find_cycle({t["id"]: t["dependencies"] for t in plan.tasks}) is None


def test_ordered_tasks_sharing_a_file_do_not_conflict() -> None:
    plan = plan_from_document(document(
        task("T001", files=("a.py",)),
        task("T002", deps=("T001",)),
        task("T003", files=("a.py",), deps=("T002",)),
    ))
    assert plan.conflict_groups == []


def test_conflict_groups_are_numbered_by_first_file_appearance() -> None:
    plan = plan_from_document(document(
        task("T001", files=("z.py",)),
        task("T002", files=("a.py",)),
        task("T003", files=("a.py",)),
        task("T004", files=("z.py",)),
    ))
    assert plan.conflict_groups == [
        {"id": "CG001", "files": ["z.py"], "tasks": ["T001", "T004"]},
        {"id": "CG002", "files": ["a.py"], "tasks": ["T002", "T003"]},
    ]


def test_a_pair_conflicting_on_two_files_joins_them_into_one_group() -> None:
    plan = plan_from_document(document(
        task("T001", files=("b.py", "a.py")),
        task("T002", files=("a.py", "b.py")),
    ))
    assert plan.conflict_groups == [{"id": "CG001", "files": ["a.py", "b.py"], "tasks": ["T001", "T002"]}]


def test_two_files_shared_by_one_pair_keep_apart_only_the_tasks_on_each_file() -> None:
    plan = plan_from_document(document(
        task("T001", files=("a.py", "b.py")),
        task("T002", files=("a.py", "b.py")),
        task("T003", files=("a.py",)),
        task("T004", files=("b.py",)),
    ))
    assert [(g["files"], g["tasks"]) for g in plan.conflict_groups] == [
        (["a.py"], ["T001", "T002", "T003"]),
        (["b.py"], ["T001", "T002", "T004"]),
    ]
    tasks = by_id(plan)
    assert not set(tasks["T003"]["conflict_groups"]) & set(tasks["T004"]["conflict_groups"])
    assert (plan.startable_width, plan.drain_rounds) == (2, 3)  # T001, then T002, then T003 beside T004


def test_a_declared_conflict_keeps_two_tasks_apart_that_share_no_file() -> None:
    plan = plan_from_document(document(
        task("T001", files=("a.py",), conflicts=("T002", "T404")),
        task("T002", files=("b.py",)),
        task("T003", files=("c.py",), conflicts=("T001",), deps=("T001",)),  # ordered: nothing to keep apart
    ))
    assert plan.conflict_groups == [{"id": "CG001", "files": [], "tasks": ["T001", "T002"]}]
    assert drain(plan.tasks).widths == (1, 2)  # T001 alone, then T002 beside T003


def test_the_drain_starts_by_priority_and_counts_rounds_and_width() -> None:
    plan = plan_from_document(document(
        task("T001", files=("a.py",)),
        task("T002", files=("a.py",), priority="critical"),
        task("T003", files=("c.py",)),
        task("T004", deps=("T003",)),
    ))
    drained = drain(plan.tasks)
    assert (drained.width, drained.rounds, drained.widths, drained.stuck) == (2, 2, (2, 2), 0)
    assert (plan.startable_width, plan.drain_rounds) == (drained.width, drained.rounds)


def test_tasks_waiting_on_a_cycle_are_counted_as_stuck() -> None:
    drained = drain([{"id": "T001", "dependencies": ["T002"]}, {"id": "T002", "dependencies": ["T001"]},
                     {"id": "T003", "dependencies": ["T404"]}])
    assert (drained.width, drained.rounds, drained.stuck) == (1, 1, 2)


def test_verification_notes_reach_the_planned_description() -> None:
    noted = TaskSpec(id="T001", title="A", feature_id=None, priority="medium", type=None, likely_files=(),
                     dependencies=(), acceptance_criteria=("ok",), verification=("pytest -q tests/x",),
                     description="Build it.", line=1,
                     verification_notes=(CommandNote("pytest -q tests/x", "(the live suites)"),))
    plan = plan_from_document(PrdDocument(project_name="p", summary="s", tasks=(noted,)))
    assert plan.tasks[0]["description"] == ("Build it.\n\nVerification notes:\n- pytest -q tests/x: "
                                            "(the live suites)")
    assert plan.tasks[0]["verification"] == ["pytest -q tests/x"]


def test_a_task_can_belong_to_several_conflict_groups() -> None:
    plan = plan_from_document(document(
        task("T001", files=("a.py",)),
        task("T002", files=("a.py", "b.py")),
        task("T003", files=("b.py",)),
    ))
    assert [(g["files"], g["tasks"]) for g in plan.conflict_groups] == [
        (["a.py"], ["T001", "T002"]),
        (["b.py"], ["T002", "T003"]),
    ]
    assert by_id(plan)["T002"]["conflict_groups"] == ["CG001", "CG002"]


def test_a_file_shared_by_too_many_tasks_puts_them_all_in_one_group_and_warns() -> None:
    many = BUCKET_LIMIT + 1
    tasks = [task(f"T{k:03d}", files=("hot.py",)) for k in range(1, many)]
    tasks.append(task(f"T{many:03d}", type="test", files=("hot.py",), deps=("T001",)))
    plan = plan_from_document(document(*tasks))
    assert [g["tasks"] for g in plan.conflict_groups] == [[t.id for t in tasks]]
    assert by_id(plan)[tasks[-1].id]["inferred_dependencies"] == []
    assert any("hot.py" in w and str(many) in w for w in plan.warnings)


def test_unknown_and_self_dependencies_are_dropped_with_a_warning() -> None:
    plan = plan_from_document(document(task("T001", deps=("T001", "T404"))))
    assert by_id(plan)["T001"]["dependencies"] == []
    assert len(plan.warnings) == 2
    assert any("T404" in w for w in plan.warnings)


def test_duplicate_task_ids_keep_the_first_and_warn() -> None:
    plan = plan_from_document(document(task("T001", files=("a.py",)), task("T001", files=("b.py",))))
    assert [t["likely_files"] for t in plan.tasks] == [["a.py"]]
    assert plan.warnings == ["duplicate task id T001; the later one is ignored"]


def test_a_task_naming_an_unknown_feature_is_planned_with_a_warning() -> None:
    plan = plan_from_document(document(task("T001", feature="F404")))
    assert plan.tasks[0]["feature_id"] == "F404"
    assert plan.warnings == ["task T001 names unknown feature F404"]


def test_an_explicit_cycle_is_reported_and_disables_inference() -> None:
    plan = plan_from_document(document(
        task("T001", files=("a.py",), deps=("T002",)),
        task("T002", deps=("T001",)),
        task("T003", type="test", files=("a.py",)),
    ))
    assert by_id(plan)["T003"]["dependencies"] == []
    assert plan.warnings[0] == "explicit dependencies form a cycle: T001 -> T002"
    assert [g["tasks"] for g in plan.conflict_groups] == [["T001", "T003"]]


def test_features_are_listed_with_their_requirements() -> None:
    login = Feature("F001", "Login", "Users log in.", ("R001",), 3)
    doc = PrdDocument(project_name="p", summary="s", features=(login,))
    assert plan_from_document(doc).features == [
        {"id": "F001", "title": "Login", "description": "Users log in.", "requirements": ["R001"]},
    ]


def test_likely_files_are_stripped_and_deduplicated() -> None:
    plan = plan_from_document(document(task("T001", files=(" ./src/a.py ", "src/a.py", "", "b.py"))))
    assert plan.tasks[0]["likely_files"] == ["src/a.py", "b.py"]


def test_a_planned_task_carries_every_field_as_json_values() -> None:
    plan = plan_from_document(document(task("T001", type="feature", files=("a.py",))))
    assert plan.tasks[0] == {
        "id": "T001", "feature_id": "F001", "title": "Task T001", "description": "", "priority": "medium",
        "type": "feature", "likely_files": ["a.py"], "dependencies": [], "inferred_dependencies": [],
        "acceptance_criteria": ["works"], "verification": ["pytest -q"], "conflict_groups": [],
    }


def test_test_and_docs_types_are_recognised_case_insensitively() -> None:
    assert is_test_or_docs("Integration Tests") and is_test_or_docs("DOCS") and is_test_or_docs("doc")
    assert not is_test_or_docs(None) and not is_test_or_docs("feature")



def test_diff_reports_added_changed_and_removed_ids_sorted() -> None:
    old = [{"id": "T002", "title": "b"}, {"id": "T001", "title": "a"}, {"id": "T003", "title": "c"}]
    new = [{"id": "T004", "title": "d"}, {"id": "T002", "title": "B"}, {"id": "T001", "title": "a"}]
    assert diff_plans(old, new) == {"added": ["T004"], "changed": ["T002"], "removed": ["T003"]}


def test_diff_ignores_status_scores_and_conflict_group_numbering() -> None:
    old = [{"id": "T001", "title": "a", "status": "done", "scores": {"complexity": 3}, "conflict_groups": ["CG001"]}]
    new = [{"id": "T001", "title": "a", "conflict_groups": ["CG007"]}]
    assert diff_plans(old, new) == {"added": [], "changed": [], "removed": []}


def test_diff_treats_tuples_and_lists_alike_but_sees_reordered_dependencies() -> None:
    old = [{"id": "T001", "dependencies": ("T002", "T003")}]
    assert diff_plans(old, [{"id": "T001", "dependencies": ["T002", "T003"]}])["changed"] == []
    assert diff_plans(old, [{"id": "T001", "dependencies": ["T003", "T002"]}])["changed"] == ["T001"]


def test_diff_of_a_plan_with_itself_is_empty() -> None:
    doc = document(task("T001", files=("a.py",)), task("T002", type="test", files=("a.py",)))
    tasks = plan_from_document(doc).tasks
    assert diff_plans(tasks, json.loads(json.dumps(tasks))) == {"added": [], "changed": [], "removed": []}


@pytest.mark.parametrize("bad", [[{"title": "no id"}], [{"id": 3}], ["T001"], "T001"])
def test_diff_refuses_tasks_without_a_string_id(bad: Any) -> None:
    with pytest.raises(UsageError) as caught:
        diff_plans(bad, [])
    assert caught.value.code == "invalid_input"


FILES = ("a.py", "b.py", "c.py", "d.md")
TYPES = (None, "feature", "test", "docs", "Integration Tests", "refactor")
FEATURES = ("F001", "F002", "F003", None)


@st.composite
def documents(draw: st.DrawFn) -> PrdDocument:
    n = draw(st.integers(min_value=0, max_value=12))
    ids = [f"T{k:03d}" for k in range(1, n + 1)]
    allow_back_edges = draw(st.booleans())
    tasks = []
    for k, tid in enumerate(ids):
        pool = [d for d in ids if d != tid] if allow_back_edges else ids[:k]
        deps = draw(st.lists(st.sampled_from(pool), max_size=3, unique=True)) if pool else []
        tasks.append(task(
            tid,
            feature=draw(st.sampled_from(FEATURES)),
            type=draw(st.sampled_from(TYPES)),
            files=tuple(draw(st.lists(st.sampled_from(FILES), max_size=3, unique=True))),
            deps=tuple(deps),
        ))
    return document(*tasks, features=("F001", "F002", "F003"))


def _reaches(graph: dict[str, list[str]], src: str, dst: str) -> bool:
    seen, stack = {src}, [src]
    while stack:
        for nxt in graph[stack.pop()]:
            if nxt == dst:
                return True
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def _topological(graph: dict[str, list[str]], key: Callable[[str], Any]) -> list[str]:
    """Kahn's algorithm taking the smallest ``key`` among ready tasks; partial when cyclic."""
    remaining = {tid: len(deps) for tid, deps in graph.items()}
    dependents: dict[str, list[str]] = {tid: [] for tid in graph}
    for tid, deps in graph.items():
        for d in deps:
            dependents[d].append(tid)
    heap = [(key(tid), tid) for tid, count in remaining.items() if not count]
    heapq.heapify(heap)
    order: list[str] = []
    while heap:
        _, tid = heapq.heappop(heap)
        order.append(tid)
        for parent in dependents[tid]:
            remaining[parent] -= 1
            if not remaining[parent]:
                heapq.heappush(heap, (key(parent), parent))
    return order


def _reference_inference(doc: PrdDocument) -> dict[str, list[str]]:
    """The inference rule of plan_from_document, written naively."""
    specs = list(doc.tasks)
    index = {s.id: i for i, s in enumerate(specs)}
    graph = {s.id: list(s.dependencies) for s in specs}
    order = _topological(graph, lambda tid: (is_test_or_docs(specs[index[tid]].type), index[tid]))
    inferred: dict[str, list[str]] = {s.id: [] for s in specs}
    if len(order) < len(specs):
        return inferred
    pos = {tid: k for k, tid in enumerate(order)}
    for tid in order:
        t = specs[index[tid]]
        if not is_test_or_docs(t.type):
            continue
        candidates = {
            o.id for o in specs
            if o.feature_id == t.feature_id and not is_test_or_docs(o.type)
            and set(o.likely_files) & set(t.likely_files)
        }
        for cid in sorted(candidates, key=pos.__getitem__, reverse=True):
            if pos[cid] < pos[tid] and not _reaches(graph, tid, cid):
                graph[tid].append(cid)
                inferred[tid].append(cid)
    return {tid: sorted(v) for tid, v in inferred.items()}


def _check_conflict_groups(plan: Plan) -> None:
    graph = {t["id"]: t["dependencies"] for t in plan.tasks}
    tasks = by_id(plan)
    groups = {g["id"]: g for g in plan.conflict_groups}
    conflicts: dict[str, set[str]] = {g: set() for g in groups}  # group -> tasks with an unordered peer in it
    seen_files: set[str] = set()
    for g in plan.conflict_groups:
        assert not seen_files & set(g["files"]), "a file is in two groups"
        seen_files |= set(g["files"])
    file_group = {f: g["id"] for g in plan.conflict_groups for f in g["files"]}
    ids = list(tasks)
    for x, a in enumerate(ids):
        for b in ids[x + 1:]:
            shared = set(tasks[a]["likely_files"]) & set(tasks[b]["likely_files"])
            if shared and not _reaches(graph, a, b) and not _reaches(graph, b, a):
                common = set(tasks[a]["conflict_groups"]) & set(tasks[b]["conflict_groups"])
                assert common, f"{a} and {b} share {shared} unordered but no group"
                for f in shared:
                    assert f in file_group
                    conflicts[file_group[f]] |= {a, b}
    for g in plan.conflict_groups:  # a group never reaches past the file that makes it
        for x, a in enumerate(g["tasks"]):
            for b in g["tasks"][x + 1:]:
                shared = set(tasks[a]["likely_files"]) & set(tasks[b]["likely_files"])
                assert g["files"] and shared >= set(g["files"]), f"{a} and {b} share group {g['id']} but not its files"
    for gid, g in groups.items():
        assert set(g["tasks"]) == conflicts[gid]
        assert g["tasks"] == sorted(g["tasks"], key=ids.index)
        for tid in g["tasks"]:
            assert gid in tasks[tid]["conflict_groups"]
    assert [g["id"] for g in plan.conflict_groups] == [f"CG{k:03d}" for k in range(1, len(groups) + 1)]


@settings(max_examples=sized(75, 300), deadline=None)  # the full 300 with ANVIL_LONG_TESTS=1
@given(documents())
def test_planning_matches_a_naive_reference(doc: PrdDocument) -> None:
    plan = plan_from_document(doc)
    graph = {t["id"]: t["dependencies"] for t in plan.tasks}
    if find_cycle({t.id: list(t.dependencies) for t in doc.tasks}) is None:
        assert find_cycle(graph) is None
        assert {t["id"]: t["inferred_dependencies"] for t in plan.tasks} == _reference_inference(doc)
    else:
        assert all(not t["inferred_dependencies"] for t in plan.tasks)
    for t in plan.tasks:
        explicit = list(next(s for s in doc.tasks if s.id == t["id"]).dependencies)
        assert t["dependencies"] == explicit + t["inferred_dependencies"]
    _check_conflict_groups(plan)
    with patch.object(planning, "BITSET_LIMIT", 1):  # every question answered by walking instead
        assert plan_from_document(doc) == plan


def _no_tuples(value: Any) -> bool:
    if isinstance(value, (list, dict)):
        return all(_no_tuples(v) for v in (value.values() if isinstance(value, dict) else value))
    return not isinstance(value, tuple)


@settings(max_examples=sized(40, 150), deadline=None)  # the full 150 with ANVIL_LONG_TESTS=1
@given(documents())
def test_plan_output_is_deterministic_json(doc: PrdDocument) -> None:
    first = plan_from_document(doc).to_dict()
    second = plan_from_document(doc).to_dict()
    assert json.dumps(first, sort_keys=False) == json.dumps(second, sort_keys=False)
    assert _no_tuples(first)



def _synthetic(n_tasks: int, n_features: int, seed: int) -> PrdDocument:
    rng = random.Random(seed)
    per = n_tasks // n_features
    tasks = []
    for k in range(n_tasks):
        f = k // per
        pool = [f"src/f{f}/m{j}.py" for j in range(max(2, per // 2))]
        files = rng.sample(pool, rng.randint(2, min(4, len(pool))))
        if rng.random() < 0.1:
            files.append(f"src/shared/s{rng.randrange(20)}.py")
        deps = {f"T{rng.randrange(f * per if rng.random() < 0.9 and k > f * per else 0, k) + 1:05d}"
                for _ in range(2)} if k else set()
        tasks.append(task(
            f"T{k + 1:05d}", feature=f"F{f + 1:03d}", type="test" if k % 4 == 3 else None,
            files=tuple(files), deps=tuple(sorted(deps)),
        ))
    return document(*tasks, features=tuple(f"F{f + 1:03d}" for f in range(n_features)))


def test_a_plan_of_4000_tasks_in_100_features_is_acyclic_and_complete() -> None:
    doc = _synthetic(4000, 100, seed=3)
    plan = plan_from_document(doc)
    assert len(plan.tasks) == 4000
    graph = {t["id"]: t["dependencies"] for t in plan.tasks}
    assert find_cycle(graph) is None
    assert sum(len(t["inferred_dependencies"]) for t in plan.tasks) > 0

    ids = [t["id"] for t in plan.tasks]
    bit = {tid: 1 << k for k, tid in enumerate(ids)}
    closure: dict[str, int] = {}
    order = _topological(graph, lambda tid: tid)
    assert len(order) == len(ids)
    for tid in order:
        acc = 0
        for d in graph[tid]:
            acc |= bit[d] | closure[d]
        closure[tid] = acc
    tasks = by_id(plan)
    holders: dict[str, list[str]] = {}
    for t in plan.tasks:
        for f in t["likely_files"]:
            holders.setdefault(f, []).append(t["id"])
    for members in holders.values():
        assert len(members) <= BUCKET_LIMIT
        for x, a in enumerate(members):
            for b in members[x + 1:]:
                if not (closure[a] & bit[b] or closure[b] & bit[a]):
                    assert set(tasks[a]["conflict_groups"]) & set(tasks[b]["conflict_groups"])
    for t in plan.tasks:
        for d in t["inferred_dependencies"]:
            other = tasks[d]
            assert is_test_or_docs(t["type"]) and not is_test_or_docs(other["type"])
            assert other["feature_id"] == t["feature_id"]
            assert set(other["likely_files"]) & set(t["likely_files"])
    assert plan_from_document(doc).to_dict() == plan.to_dict()
