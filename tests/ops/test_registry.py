"""The registry is the single definition: every operation is complete and derivable."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from anvil.ops.registry import RESERVED_INPUTS, all_operations
from anvil.ops.scenarios import SCENARIOS
from anvil.ops.specgen import op_spec

OPS = all_operations()


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_every_operation_has_help_examples_and_a_success_and_docs(op) -> None:  # type: ignore[no-untyped-def]
    assert 20 <= len(op.description) <= 240, "a description says what the tool is for and when to call it"
    assert op.examples, "every operation documents at least one example"
    assert any(e.error is None for e in op.examples), "at least one example succeeds"
    for example in op.examples:
        assert example.scenario in SCENARIOS
        if example.error == "invalid_input":
            with pytest.raises(ValidationError):
                op.input_model.model_validate(example.input)
        else:
            op.input_model.model_validate(example.input)
    for name, field in op.input_model.model_fields.items():
        assert field.description or name in op.positional or name == "actor" or name in RESERVED_INPUTS, \
            f"{op.name}.{name} has no help text"


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_every_input_field_has_a_command_line_form(op) -> None:  # type: ignore[no-untyped-def]
    spec = op_spec(op)
    flags = [p.flag for p in spec.params] + [p.off_flag for p in spec.params if p.off_flag]
    assert len(flags) == len(set(flags))
    assert not {"--json", "--mcp", "--mcp-token-env"} & set(flags)


def test_operation_names_and_cli_paths_are_unique() -> None:
    assert len({op.name for op in OPS}) == len(OPS)
    assert len({op.cli_path for op in OPS}) == len(OPS)


def test_mutating_operations_take_the_reserved_inputs() -> None:
    for op in OPS:
        fields = set(op.input_model.model_fields)
        if op.effect == "read":
            assert not fields & set(RESERVED_INPUTS), op.name
        else:
            assert {"idempotency_key", "dry_run"} <= fields, op.name
            assert ("confirm" in fields) == (op.effect == "destructive"), op.name


def test_only_and_every_writing_operation_has_a_mutating_output() -> None:
    import pytest

    from anvil.ops.execution import ClaimInput, ListOutput
    from anvil.ops.registry import Operation, register

    with pytest.raises(ValueError, match="MutatingOutput"):
        register(Operation(name="bad_claim", description="x", input_model=ClaimInput, output_model=ListOutput,
                           handler="x:y", surface="execution", effect="mutating", cli_path=("bad-claim",)))
