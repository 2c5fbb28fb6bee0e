"""Every handler uses its whole input: a field added to an operation cannot be silently ignored."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap

import pytest

from anvil.ops.registry import all_operations
from anvil.ops.specgen import op_spec

FRAMEWORK_OWNED = frozenset({"idempotency_key", "dry_run", "wait_seconds", "cwd"})
"""Inputs the runtime applies itself (retries, dry runs, waiting, the project directory); a handler may
ignore them."""
AUTHOR = "actor"
"""On a mutating operation the runtime records the actor as the author of its events."""
CALLER_FORMAT = "caller"
"""Inputs naming the caller (``actor`` and the old ``reviewer`` alias) are resolved by the runtime
into ``ctx.caller``; a handler may read the identity from there instead."""


def _function_source(module: object, name: str) -> ast.FunctionDef:
    func = getattr(module, name)
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def consumed_fields(module_name: str, function: str) -> set[str]:
    """The ``args["..."]`` keys read by ``function``, following same-module helpers it hands ``args`` to."""
    module = importlib.import_module(module_name)
    seen: set[str] = set()
    fields: set[str] = set()
    pending = [function]
    while pending:
        name = pending.pop()
        if name in seen or not callable(getattr(module, name, None)):
            continue
        seen.add(name)
        node = _function_source(module, name)
        param = node.args.args[1].arg if len(node.args.args) > 1 else "args"
        for sub in ast.walk(node):
            if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and sub.value.id == param \
                    and isinstance(sub.slice, ast.Constant):
                fields.add(sub.slice.value)
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) \
                    and any(isinstance(a, ast.Name) and a.id == param for a in sub.args):
                pending.append(sub.func.id)
    return fields


@pytest.mark.parametrize("op", all_operations(), ids=lambda op: op.name)
def test_every_input_field_is_consumed_by_the_handler_or_owned_by_the_framework(op) -> None:  # type: ignore[no-untyped-def]
    module_name, _, function = op.handler.partition(":")
    consumed = consumed_fields(module_name, function)
    if op.prepare:
        prepare_module, _, prepare_function = op.prepare.partition(":")
        consumed |= consumed_fields(prepare_module, prepare_function)
    declared = {p.name for p in op_spec(op).params}
    owned = FRAMEWORK_OWNED | ({AUTHOR} if op.effect != "read" else set()) | {
        p.name for p in op_spec(op).params if p.format == CALLER_FORMAT}
    unused = declared - consumed - owned
    assert not unused, f"{op.name}: the handler never reads {sorted(unused)}"
    unknown = consumed - declared
    assert not unknown, f"{op.name}: the handler reads {sorted(unknown)}, which the input does not declare"
