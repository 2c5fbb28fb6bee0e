"""Input validation with the operation's pydantic model, with bounded, value-free messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from anvil.engine.errors import UsageError
from anvil.ops.registry import Operation

MAX_FIELDS_NAMED = 5


def describe_validation_error(exc: ValidationError) -> str:
    """One line naming the offending fields and what is wrong, never their values."""
    parts: list[str] = []
    for error in exc.errors()[:MAX_FIELDS_NAMED]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "input"
        kind = error.get("type", "invalid")
        reason = {
            "missing": "is required",
            "extra_forbidden": "is not a known input",
            "literal_error": "is not one of the allowed values",
        }.get(kind, str(error.get("msg", "is invalid")).split(" [")[0][:120])
        parts.append(f"{where[:60]} {reason}")
    extra = len(exc.errors()) - len(parts)
    return "invalid input: " + "; ".join(parts) + (f" (+{extra} more)" if extra > 0 else "")


def validate_input(op: Operation, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """Validate and complete ``arguments`` (defaults filled) for ``op``.

    Raises:
        UsageError: the arguments do not fit the operation's input (code ``invalid_input``).
    """
    if arguments is not None and not isinstance(arguments, Mapping):
        raise UsageError("invalid input: arguments must be an object", code="invalid_input")
    try:
        model = op.input_model.model_validate(dict(arguments or {}))
    except ValidationError as exc:
        raise UsageError(describe_validation_error(exc), code="invalid_input") from None
    return model.model_dump(mode="json")
