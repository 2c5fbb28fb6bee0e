"""Input validation with the operation's pydantic model, with bounded, value-free messages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from anvil.engine.errors import UsageError
from anvil.ops.contract import RESERVED_ALIASES
from anvil.ops.registry import Operation

MAX_FIELDS_NAMED = 5
REASONS = {
    "missing": "is required",
    "extra_forbidden": "is not a known input",
    "int_parsing": "must be a whole number", "int_type": "must be a whole number",
    "int_from_float": "must be a whole number", "float_parsing": "must be a number", "float_type": "must be a number",
    "finite_number": "must be a finite number", "bool_parsing": "must be true or false",
    "bool_type": "must be true or false", "string_type": "must be text", "list_type": "must be a list",
    "dict_type": "must be an object",
}
BOUND_REASONS = {
    "greater_than_equal": ("ge", "must be at least {}"), "less_than_equal": ("le", "must be at most {}"),
    "greater_than": ("gt", "must be more than {}"), "less_than": ("lt", "must be less than {}"),
    "string_too_long": ("max_length", "takes at most {} characters"),
}


def field_label(loc: Sequence[str | int], names: Mapping[str, str] | None = None) -> str:
    """How a message names the input at ``loc``: its top-level field as the surface calls it, then the path.

    Args:
        loc: pydantic's location of the problem (``("edges", 0)``).
        names: the surface's name for each top-level field (a CLI could pass ``{"commands_run":
            "--command"}``); a field it does not name keeps its own name.

    Returns:
        The label, at most 60 characters (``"input"`` for the arguments as a whole).
    """
    if not loc:
        return "input"
    head = str(loc[0])
    label = ".".join([(names or {}).get(head, head), *(str(part) for part in loc[1:])])
    return label[:60]


def _reason(error: Mapping[str, Any]) -> str:
    """What is wrong, in words that never quote the value: the rule it breaks (bounds, allowed values)."""
    kind = str(error.get("type", "invalid"))
    ctx = error.get("ctx") or {}
    if kind in REASONS:
        return REASONS[kind]
    if kind == "literal_error" and isinstance(ctx.get("expected"), str):
        return "must be one of " + ctx["expected"].replace("'", "")
    if kind in BOUND_REASONS and ctx.get(BOUND_REASONS[kind][0]) is not None:
        key, text = BOUND_REASONS[kind]
        return text.format(ctx[key])
    if kind == "string_too_short":
        least = ctx.get("min_length", 1)
        return "must not be empty" if least == 1 else f"takes at least {least} characters"
    if kind in ("too_short", "too_long") and ctx.get("field_type") == "List":
        if kind == "too_short":
            least = ctx.get("min_length", 1)
            return f"needs at least {least} value" + ("s" if least != 1 else "")
        return f"takes at most {ctx.get('max_length')} values"
    return str(error.get("msg", "is invalid")).split(" [")[0][:120]


def describe_validation_error(exc: ValidationError, names: Mapping[str, str] | None = None) -> str:
    """One line naming the offending fields and what is wrong, never their values.

    Args:
        exc: the validation failure.
        names: how the calling surface names the input fields (see :func:`field_label`); by
            default every field is named as in the operation's input model.

    Returns:
        ``"invalid input: <field> <reason>; ..."`` naming at most five problems.
    """
    errors = exc.errors()
    parts = [f"{field_label(error.get('loc', ()), names)} {_reason(error)}" for error in errors[:MAX_FIELDS_NAMED]]
    extra = len(errors) - len(parts)
    return "invalid input: " + "; ".join(parts) + (f" (+{extra} more)" if extra > 0 else "")


def validate_input(op: Operation, arguments: Mapping[str, Any] | None, *,
                   names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Validate and complete ``arguments`` (defaults filled) for ``op``.

    Args:
        op: the operation.
        arguments: the untrusted input.
        names: how the calling surface names the input fields in messages (see :func:`field_label`).

    Raises:
        UsageError: the arguments do not fit the operation's input (code ``invalid_input``).
    """
    if arguments is not None and not isinstance(arguments, Mapping):
        raise UsageError("invalid input: arguments must be an object", code="invalid_input")
    try:
        model = op.input_model.model_validate(reserved_aliases(op, arguments or {}))
    except ValidationError as exc:
        raise UsageError(describe_validation_error(exc, names), code="invalid_input") from None
    return model.model_dump(mode="json")


def reserved_aliases(op: Operation, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` with each alias of a reserved input the operation takes renamed to that input.

    An alias the operation does not take (a read has no ``dry_run``) stays, and is refused as unknown.

    Raises:
        UsageError: ``invalid_input`` when the alias and the input are both given and disagree.
    """
    out = dict(arguments)
    for alias, name in RESERVED_ALIASES.items():
        if alias not in out or name not in op.input_model.model_fields:
            continue
        value = out.pop(alias)
        if name in out and out[name] != value:
            raise UsageError(f"invalid input: {alias} and {name} are one input and disagree; pass one of them",
                             code="invalid_input", details={"field": alias})
        out[name] = value
    return out
