"""Behaviour of the drafted -> reviewed readiness gate."""

from __future__ import annotations

from typing import Any

import pytest

from anvil.engine.planning.readiness import NO_ACCEPTANCE_CRITERIA, NO_VERIFICATION, readiness_problems


def test_a_task_with_criteria_and_verification_is_ready() -> None:
    assert readiness_problems({"acceptance_criteria": ["it works"], "verification": ["pytest -q"]}) == []


def test_a_task_without_criteria_or_verification_lists_both_problems_in_order() -> None:
    assert readiness_problems({}) == ["no acceptance criteria", "no verification commands"]


def test_a_task_without_verification_commands_is_not_ready() -> None:
    assert readiness_problems({"acceptance_criteria": ["it works"], "verification": []}) == [NO_VERIFICATION]


def test_a_task_without_acceptance_criteria_is_not_ready() -> None:
    assert readiness_problems({"acceptance_criteria": [], "verification": ["make test"]}) == [NO_ACCEPTANCE_CRITERIA]


@pytest.mark.parametrize("value", [None, "", "pytest", [""], ["   "], [None], 3])
def test_blank_or_malformed_fields_count_as_missing(value: Any) -> None:
    assert readiness_problems({"acceptance_criteria": value, "verification": value}) == [
        NO_ACCEPTANCE_CRITERIA, NO_VERIFICATION,
    ]


def test_tuples_are_accepted_like_lists() -> None:
    assert readiness_problems({"acceptance_criteria": ("ok",), "verification": ("make",)}) == []


def test_a_verification_entry_no_proof_can_run_keeps_the_task_from_being_ready_with_the_reason() -> None:
    problems = readiness_problems({"acceptance_criteria": ["ok"],
                                   "verification": ["pytest -q", "Run the whole suite by hand."]})
    assert len(problems) == 1
    assert problems[0].startswith("verification 'Run the whole suite by hand.' reads as prose, not a command")
    assert len(problems[0]) <= 300


def test_a_long_unprovable_entry_is_quoted_bounded() -> None:
    [problem] = readiness_problems({"acceptance_criteria": ["ok"], "verification": ["Check " + "every page " * 200]})
    assert len(problem) <= 300 and "..." in problem
