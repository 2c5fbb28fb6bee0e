"""Behaviour of batch dependency edits and cycle detection."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anvil.engine.errors import AnvilError, NotFound, Refused, UsageError
from anvil.engine.planning.dependencies import DependencyEdit, apply_dependency_edits, find_cycle
from tests.conftest import sized


def graph(**deps: list[str]) -> dict[str, list[str]]:
    return dict(deps)


def base() -> dict[str, list[str]]:
    return graph(T1=[], T2=["T1"], T3=["T1"], T4=[])


def test_an_added_edge_is_appended_and_reported() -> None:
    edit = apply_dependency_edits(base(), [["T3", "T2"]], None)
    assert edit == DependencyEdit(new={"T3": ["T1", "T2"]}, changed=["T3"], added=[["T3", "T2"]], removed=[])


def test_appended_dependencies_keep_request_order() -> None:
    edit = apply_dependency_edits(base(), [["T4", "T3"], ["T4", "T1"], ["T4", "T2"]], None)
    assert edit.new == {"T4": ["T3", "T1", "T2"]}


def test_removes_are_applied_before_adds() -> None:
    edit = apply_dependency_edits(base(), [["T1", "T2"]], [["T2", "T1"]])
    assert edit.new == {"T1": ["T2"], "T2": []}
    assert edit.changed == ["T1", "T2"]
    assert edit.added == [["T1", "T2"]] and edit.removed == [["T2", "T1"]]


def test_re_adding_an_existing_edge_or_removing_a_missing_one_changes_nothing() -> None:
    edit = apply_dependency_edits(base(), [["T2", "T1"]], [["T4", "T1"]])
    assert edit == DependencyEdit()


def test_a_repeated_edge_in_one_request_takes_effect_once() -> None:
    edit = apply_dependency_edits(base(), [["T4", "T1"], ["T4", "T1"]], None)
    assert edit.new == {"T4": ["T1"]} and edit.added == [["T4", "T1"]]


def test_an_edge_removed_and_re_added_moves_to_the_end_without_being_reported() -> None:
    current = graph(T1=[], T2=[], T3=["T1", "T2"])
    edit = apply_dependency_edits(current, [["T3", "T1"]], [["T3", "T1"]])
    assert edit == DependencyEdit(new={"T3": ["T2", "T1"]}, changed=["T3"], added=[], removed=[])


def test_the_current_graph_is_never_modified() -> None:
    current = base()
    apply_dependency_edits(current, [["T4", "T1"]], [["T2", "T1"]])
    assert current == base()


def test_tuples_are_accepted_as_pairs() -> None:
    assert apply_dependency_edits(base(), [("T4", "T1")], None).added == [["T4", "T1"]]


@pytest.mark.parametrize(
    ("add", "remove"),
    [
        ("T1,T2", None),
        ({"T1": "T2"}, None),
        ([["T1"]], None),
        ([["T1", "T2", "T3"]], None),
        ([["T1", 2]], None),
        ([None], None),
        ([["T4", "T1"]], [["T1", None]]),
        ([["T4", "T1"]], "x"),
    ],
)
def test_a_malformed_edge_is_refused(add: Any, remove: Any) -> None:
    with pytest.raises(UsageError) as caught:
        apply_dependency_edits(base(), add, remove)
    assert caught.value.code == "malformed_edge"


@pytest.mark.parametrize(("add", "remove"), [(None, None), ([], None), ([], [])])
def test_an_empty_request_is_refused(add: Any, remove: Any) -> None:
    with pytest.raises(UsageError) as caught:
        apply_dependency_edits(base(), add, remove)
    assert caught.value.code == "no_edges"


def test_too_many_edges_are_refused_counting_adds_and_removes_together() -> None:
    with pytest.raises(UsageError) as caught:
        apply_dependency_edits(base(), [["T4", "T1"]] * 2, [["T2", "T1"]], cap=2)
    assert caught.value.code == "too_many_edges"
    assert apply_dependency_edits(base(), [["T4", "T1"]], [["T2", "T1"]], cap=2).changed == ["T2", "T4"]


def test_an_unknown_task_is_not_found_even_on_the_target_side() -> None:
    for edge in (["T9", "T1"], ["T1", "T9"]):
        with pytest.raises(NotFound) as caught:
            apply_dependency_edits(base(), None, [edge])
        assert caught.value.code == "unknown_task"


def test_a_source_outside_the_allowed_set_is_refused_but_targets_may_be_outside() -> None:
    with pytest.raises(Refused) as caught:
        apply_dependency_edits(base(), [["T4", "T1"]], None, sources_allowed={"T2", "T3"})
    assert caught.value.code == "source_outside_prd"
    edit = apply_dependency_edits(base(), [["T3", "T4"]], None, sources_allowed={"T2", "T3"})
    assert edit.added == [["T3", "T4"]]


def test_a_self_dependency_is_refused() -> None:
    with pytest.raises(UsageError) as caught:
        apply_dependency_edits(base(), [["T1", "T1"]], None)
    assert caught.value.code == "self_dependency"


def test_an_edit_that_closes_a_cycle_is_refused() -> None:
    with pytest.raises(Refused) as caught:
        apply_dependency_edits(base(), [["T1", "T3"]], None)
    assert caught.value.code == "dependency_cycle"


def test_a_cycle_is_judged_after_removals() -> None:
    edit = apply_dependency_edits(base(), [["T1", "T3"]], [["T3", "T1"]])
    assert edit.new == {"T1": ["T3"], "T3": []}


def test_one_bad_edge_refuses_the_whole_batch() -> None:
    with pytest.raises(NotFound):
        apply_dependency_edits(base(), [["T4", "T1"], ["T4", "T9"]], None)


def test_shape_errors_win_over_unknown_tasks_and_unknown_tasks_over_cycles() -> None:
    with pytest.raises(UsageError):
        apply_dependency_edits(base(), [["T9", "T1"], ["T1"]], None)
    with pytest.raises(NotFound):
        apply_dependency_edits(base(), [["T1", "T3"], ["T1", "T9"]], None)


SECRET = "sk-live-SECRET-9f8e7d"


@pytest.mark.parametrize(
    ("add", "kwargs"),
    [
        ([[SECRET]], {}),
        ([[SECRET, "T1"]], {}),
        ([["T1", SECRET]], {}),
        ([["T4", "T1"]] * 3, {"cap": 2}),
        ([["T1", "T1"]], {}),
        ([["T4", "T1"]], {"sources_allowed": {SECRET}}),
    ],
)
def test_error_messages_never_echo_the_request(add: Any, kwargs: dict[str, Any]) -> None:
    with pytest.raises(AnvilError) as caught:
        apply_dependency_edits(base(), add, None, **kwargs)
    wire = str(caught.value.to_wire())
    assert SECRET not in wire and "T1" not in wire and "T4" not in wire


def test_a_cycle_error_shows_the_cycle() -> None:
    with pytest.raises(Refused) as caught:
        apply_dependency_edits(base(), [["T1", "T2"]], None)
    assert caught.value.message == "the edit would create a dependency cycle: T1 -> T2 -> T1 (each depends on the next)"


def test_a_large_batch_on_a_long_chain_is_accepted() -> None:
    n = 5000
    current = {f"T{k}": ([f"T{k - 1}"] if k else []) for k in range(n)}
    add = [[f"T{k}", f"T{k - 2}"] for k in range(2, n)]
    edit = apply_dependency_edits(current, add, None, cap=10_000)
    assert len(edit.added) == n - 2 and len(edit.changed) == n - 2


def test_find_cycle_returns_none_for_an_acyclic_graph() -> None:
    assert find_cycle(base()) is None
    assert find_cycle({}) is None


def test_find_cycle_returns_the_cycle_in_edge_order() -> None:
    assert find_cycle(graph(A=["B"], B=["C"], C=["A"], D=["A"])) == ["A", "B", "C"]
    assert find_cycle(graph(A=["A"])) == ["A"]
    assert find_cycle(graph(D=["A"], A=["B"], B=["A"])) == ["A", "B"]


def test_find_cycle_treats_unknown_dependencies_as_leaves() -> None:
    assert find_cycle(graph(A=["Z"], B=["A", "Y"])) is None


def test_find_cycle_handles_a_very_long_chain_without_recursion() -> None:
    n = 100_000
    chain = {f"T{k}": ([f"T{k + 1}"] if k + 1 < n else []) for k in range(n)}
    assert find_cycle(chain) is None
    chain[f"T{n - 1}"] = ["T0"]
    cycle = find_cycle(chain)
    assert cycle is not None and len(cycle) == n


# --- properties -------------------------------------------------------------------------------

IDS = ["T1", "T2", "T3", "T4", "T5"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4) | st.sampled_from(IDS),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)
edge_lists = st.lists(st.lists(st.sampled_from([*IDS, "T9"]), min_size=2, max_size=2), max_size=8)


@st.composite
def acyclic_graphs(draw: st.DrawFn) -> dict[str, list[str]]:
    return {tid: draw(st.lists(st.sampled_from(IDS[:k]), unique=True)) if k else [] for k, tid in enumerate(IDS)}


@settings(max_examples=sized(100, 400), deadline=None)  # the full 400 with ANVIL_LONG_TESTS=1
@given(acyclic_graphs(), edge_lists | json_values, edge_lists | json_values, st.none() | st.sets(st.sampled_from(IDS)))
def test_edits_never_produce_a_cycle_and_only_raise_anvil_errors(
    current: dict[str, list[str]], add: Any, remove: Any, allowed: set[str] | None,
) -> None:
    try:
        edit = apply_dependency_edits(current, add, remove, sources_allowed=allowed, cap=6)
    except AnvilError as error:
        assert error.code in {
            "malformed_edge", "too_many_edges", "no_edges", "unknown_task",
            "source_outside_prd", "self_dependency", "dependency_cycle",
        }
        return
    final = {tid: edit.new.get(tid, deps) for tid, deps in current.items()}
    assert find_cycle(final) is None
    assert edit.changed == sorted(edit.new)
    for tid, deps in edit.new.items():
        assert deps != current[tid] and len(set(deps)) == len(deps)
    for source, target in edit.added:
        assert target in final[source] and target not in current[source]
    for source, target in edit.removed:
        assert target not in final[source] and target in current[source]
    before = {(s, t) for s, deps in current.items() for t in deps}
    after = {(s, t) for s, deps in final.items() for t in deps}
    assert after - before == {tuple(e) for e in edit.added}
    assert before - after == {tuple(e) for e in edit.removed}


@settings(max_examples=sized(100, 200), deadline=None)
@given(st.dictionaries(st.sampled_from(IDS), st.lists(st.sampled_from(IDS), max_size=3), max_size=5))
def test_find_cycle_agrees_with_a_topological_sort(g: dict[str, list[str]]) -> None:
    nodes = set(g) | {d for deps in g.values() for d in deps}
    remaining = {n: len(set(g.get(n, []))) for n in nodes}
    done = [n for n, c in remaining.items() if not c]
    seen = 0
    while done:
        node = done.pop()
        seen += 1
        for parent in nodes:
            if node in set(g.get(parent, [])):
                remaining[parent] -= 1
                if not remaining[parent]:
                    done.append(parent)
    cycle = find_cycle(g)
    assert (cycle is None) == (seen == len(nodes))
    if cycle is not None:
        for k, node in enumerate(cycle):
            assert cycle[(k + 1) % len(cycle)] in g[node]
