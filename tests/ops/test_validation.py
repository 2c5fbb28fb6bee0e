"""Validation messages name the fields at fault and what is wrong, never the values."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from anvil.engine.errors import UsageError
from anvil.ops.registry import get_operation
from anvil.ops.validation import describe_validation_error, field_label, validate_input


def failure(op: str, arguments: dict[str, object]) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        get_operation(op).input_model.model_validate(arguments)
    return caught.value


def test_a_message_names_the_field_and_the_rule_but_not_the_value() -> None:
    exc = failure("submit_completion_evidence", {"task_id": "T001", "actor": "a", "commands_run": ["x"] * 201,
                                                 "category": "s3cr3t"})
    text = describe_validation_error(exc)
    assert text.startswith("invalid input: commands_run ") and "200" in text
    assert "category must be one of completion, diagnostic, blocked, advisory or promotion_quality" in text
    assert "s3cr3t" not in text


@pytest.mark.parametrize(("op", "arguments", "reason"), [
    ("claim_task", {"task_id": "T001", "actor": "a", "lease_duration_seconds": 0}, "lease_duration_seconds must be "
                                                                                   "at least 1"),
    ("claim_task", {"task_id": "T001", "actor": "a", "lease_duration_seconds": 10**9},
     "lease_duration_seconds must be at most 604800"),
    ("claim_task", {"task_id": "", "actor": "a"}, "task_id must not be empty"),
    ("claim_task", {"task_id": "T" * 65, "actor": "a"}, "task_id takes at most 64 characters"),
    ("list_tasks", {"limit": "many"}, "limit must be a whole number"),
    ("list_tasks", {"status": "later"}, "status must be one of proposed, drafted"),
])
def test_a_message_says_which_rule_the_value_breaks(op: str, arguments: dict[str, object], reason: str) -> None:
    text = describe_validation_error(failure(op, arguments))
    assert reason in text and "many" not in text and "later" not in text


def test_a_surface_can_name_fields_its_own_way() -> None:
    exc = failure("check_conflicts", {"task_id": "T001", "proposed_files": [], "bogus": 1})
    text = describe_validation_error(exc, {"proposed_files": "--file"})
    assert "--file " in text and "proposed_files" not in text and "bogus is not a known input" in text
    exc = failure("submit_completion_evidence", {"task_id": "T001", "actor": "a", "commands_run": ["x"] * 201})
    text = describe_validation_error(exc, {"commands_run": "--command"})
    assert text.startswith("invalid input: --command ") and "200" in text


def test_a_nested_problem_keeps_its_path_after_the_surface_name() -> None:
    assert field_label(("add", 0, 1), {"add": "--add"}) == "--add.0.1"
    assert field_label(("add", 0)) == "add.0"
    assert field_label(()) == "input"
    assert len(field_label(("x" * 100,))) == 60


def test_validate_input_passes_the_names_through_and_raises_invalid_input() -> None:
    with pytest.raises(UsageError) as caught:
        validate_input(get_operation("submit_completion_evidence"), {"task_id": "T001", "actor": "a",
                                                                     "commands_run": ["x"] * 201},
                       names={"commands_run": "--command"})
    assert caught.value.code == "invalid_input" and "--command" in caught.value.message
