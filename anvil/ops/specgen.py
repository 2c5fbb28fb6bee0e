"""Derives the plain-data contract (:mod:`anvil.ops.contract`) from the registry's pydantic models.

Generation is strict: a field whose type, constraint or validator has no exact form in
:class:`~anvil.ops.contract.ParamSpec` is an error, never dropped, so the CLI's fast path can never
accept a value that pydantic refuses. Two files are generated and checked for freshness by the
tests: ``surface.json`` (read on the direct CLI path) and ``inputs.py`` (one ``TypedDict`` per
operation, the static type of each handler's input). Regenerate both with
``python -m anvil.ops.specgen``.
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import annotated_types
from pydantic.fields import FieldInfo

from anvil.ops.contract import SPEC_PATH, OpSpec, ParamSpec
from anvil.ops.registry import RESERVED_INPUTS, NameFormat, Operation, all_operations

INPUTS_PATH = Path(__file__).with_name("inputs.py")
ORDER_PATH = Path(__file__).with_name("output_order.json")
SCALARS: dict[Any, str] = {str: "str", int: "int", float: "float", bool: "bool"}
BOUNDS: dict[type, str] = {annotated_types.Ge: "ge", annotated_types.Le: "le", annotated_types.Gt: "gt",
                           annotated_types.Lt: "lt", annotated_types.MinLen: "min_len",
                           annotated_types.MaxLen: "max_len"}


class SpecError(TypeError):
    """A model field cannot be expressed exactly in the plain-data contract."""


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    origin = get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1 and len(get_args(annotation)) == 2:
            return members[0], True
    return annotation, False


def _bounds(where: str, metadata: list[Any]) -> dict[str, Any]:
    """The bounds in ``metadata``, refusing anything else (patterns, strictness, custom validators...)."""
    import dataclasses

    from pydantic import StringConstraints

    out: dict[str, Any] = {}
    for item in metadata:
        kind = BOUNDS.get(type(item))
        if isinstance(item, NameFormat):
            out["format"] = item.kind
        elif kind is not None:
            out[kind] = getattr(item, kind if kind in ("ge", "le", "gt", "lt") else kind.replace("len", "length"))
        elif type(item).__name__ == "AllowInfNan" and item.allow_inf_nan is False:
            continue  # floats are always finite in the contract
        elif isinstance(item, StringConstraints):
            for f in dataclasses.fields(item):
                value = getattr(item, f.name)
                if value is None:
                    continue
                if f.name not in ("min_length", "max_length"):
                    raise SpecError(f"{where}: constraint {f.name}={value!r} has no form in the contract")
                out[f.name.replace("length", "len")] = value
        else:
            raise SpecError(f"{where}: constraint {item!r} has no form in the contract")
    return out


def _list_item(where: str, item: Any) -> tuple[str, dict[str, Any]]:
    if item in SCALARS:
        return SCALARS[item], {}
    if get_origin(item) is Annotated:
        base, *constraints = get_args(item)
        if base is str:
            bounds = _bounds(where, list(constraints))
            return "str", {"item_" + k: v for k, v in bounds.items()}
    raise SpecError(f"{where}: list items of type {item!r} have no form in the contract")


def param_spec(op: Operation, name: str, info: FieldInfo) -> ParamSpec:
    """The contract of one input field.

    Raises:
        SpecError: the field's type, a constraint or a validator has no exact form in the contract.
    """
    where = f"{op.name}.{name}"
    annotation, nullable = _unwrap_optional(info.annotation)
    extra: dict[str, Any] = {}
    if get_origin(annotation) is Annotated:  # an optional constrained type: Annotated[str, ...] | None
        annotation, *inner = get_args(annotation)
        extra.update(_bounds(where, list(inner)))
    origin = get_origin(annotation)
    item: str | None = None
    choices: tuple[str, ...] | None = None
    if annotation in SCALARS:
        kind = SCALARS[annotation]
    elif origin is Literal:
        values = get_args(annotation)
        if not all(isinstance(v, str) for v in values):
            raise SpecError(f"{where}: only text choices have a form in the contract")
        kind, choices = "str", tuple(values)
    elif origin is list and get_origin(get_args(annotation)[0]) is list:
        kind = "pairs"
        if get_args(get_args(annotation)[0]) != (str,):
            raise SpecError(f"{where}: pairs are lists of text")
    elif origin is list:
        kind = "list"
        item, item_bounds = _list_item(where, get_args(annotation)[0])
        extra.update(item_bounds)
    else:
        raise SpecError(f"{where}: type {annotation!r} has no form in the contract")
    extra.update(_bounds(where, list(info.metadata)))
    if kind not in ("int", "float") and {"ge", "le", "gt", "lt"} & set(extra):
        raise SpecError(f"{where}: numeric bounds on a {kind} field")
    if "format" in extra and (kind != "str" or choices):
        raise SpecError(f"{where}: only plain text fields can name a person")
    required = info.is_required()
    default = None if required else info.get_default(call_default_factory=True)
    flag = op.cli_names.get(name) or ("--yes" if name == "confirm" else "--" + name.replace("_", "-"))
    off_flag: str | None = None
    if "/" in flag:
        flag, off_flag = flag.split("/", 1)
    elif kind == "bool" and default is True:
        off_flag = "--no-" + flag[2:]
    return ParamSpec(name=name, kind=kind, flag=flag, item=item, nullable=nullable, required=required,
                     positional=name in op.positional, reserved=name in RESERVED_INPUTS,
                     help=info.description or "", default=default, off_flag=off_flag, choices=choices, **extra)


def _check_validators(op: Operation) -> None:
    decorators = op.input_model.__pydantic_decorators__
    custom = [*decorators.field_validators, *decorators.model_validators, *decorators.root_validators]
    if custom:
        raise SpecError(f"{op.name}: validators {sorted(custom)} have no form in the contract; express the rule "
                        "as a constraint or check it in the handler")
    if op.input_model.model_config.get("allow_inf_nan", True):
        raise SpecError(f"{op.name}: inputs must refuse non-finite floats (allow_inf_nan=False)")


_SPECS: dict[str, OpSpec] = {}


def op_spec(op: Operation) -> OpSpec:
    """The contract of ``op`` (derived once per process).

    Raises:
        SpecError: see :func:`param_spec`.
    """
    cached = _SPECS.get(op.name)
    if cached is None:
        cached = _SPECS[op.name] = _derive(op)
    return cached


def _derive(op: Operation) -> OpSpec:
    _check_validators(op)
    params = [param_spec(op, name, info) for name, info in op.input_model.model_fields.items()]
    order = {name: i for i, name in enumerate(op.positional)}
    params.sort(key=lambda p: (not p.positional, order.get(p.name, 0)))
    return OpSpec(name=op.name, description=op.description, handler=op.handler, surface=op.surface,
                  effect=op.effect, cli_path=op.cli_path, params=tuple(params),
                  output_fields=tuple(sorted(op.output_model.model_fields)), needs_actor=op.needs_actor,
                  bootstrap=op.bootstrap, reaps=op.reaps, prepare=op.prepare,
                  failure=(op.failure_field, op.failure_exit) if op.failure_field else None,
                  quiet_field=op.quiet_field, role=op.min_role, runner=op.runner,
                  needs_caller=op.needs_caller, secret_fields=op.secret_fields,
                  local_files=tuple(op.local_files.items()), wait_field=op.wait_field,
                  base64_files=tuple(op.base64_files.items()))


def build_spec() -> dict[str, Any]:
    from anvil import __version__

    return {"anvil_version": __version__, "operations": [op_spec(op).to_json() for op in all_operations()]}


def render_spec() -> str:
    return json.dumps(build_spec(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


PY_TYPES = {"str": "str", "int": "int", "float": "float", "bool": "bool"}


def _vocabularies() -> dict[tuple[str, ...], str]:
    """The vocabulary types of :mod:`anvil.engine.vocab`, by their values."""
    from anvil.engine import vocab

    return {get_args(value): name for name, value in vars(vocab).items()
            if get_origin(value) is Literal and name[0].isupper()}


def _py_type(param: ParamSpec, named: dict[tuple[str, ...], str], used: set[str]) -> str:
    if param.kind == "pairs":
        text = "list[list[str]]"
    elif param.kind == "list":
        text = f"list[{PY_TYPES[param.item or 'str']}]"
    elif param.choices:
        text = named.get(param.choices) or "Literal[" + ", ".join(repr(c) for c in param.choices) + "]"
        used.add(text)
    else:
        text = PY_TYPES[param.kind]
    return f"{text} | None" if param.nullable else text


def input_class_name(op_name: str) -> str:
    return "".join(part.capitalize() for part in op_name.split("_")) + "Input"


def render_inputs() -> str:
    """``inputs.py``: the validated input of every operation as a ``TypedDict``."""
    named, used = _vocabularies(), set[str]()
    body: list[str] = []
    for op in all_operations():
        spec = op_spec(op)
        body += ["", f"class {input_class_name(op.name)}(TypedDict):", f'    """Input of ``{op.name}``."""']
        body += [""] * bool(spec.params) + [f"    {p.name}: {_py_type(p, named, used)}" for p in spec.params]
        body.append("")
    vocab = sorted(name for name in used if not name.startswith("Literal["))
    literal = any(name.startswith("Literal[") for name in used)
    out = ['"""Validated operation inputs, one ``TypedDict`` per operation: the static type of each handler\'s',
           "input. Generated from the registry by ``python -m anvil.ops.specgen``; do not edit by hand.", "",
           "Handlers import these under ``TYPE_CHECKING`` only: at run time an input is the plain dict the",
           'validators produced, so the direct CLI path pays nothing for the types."""', "",
           "from __future__ import annotations", "",
           f"from typing import {'Literal, ' if literal else ''}TypedDict", ""]
    if vocab:
        line = f"from anvil.engine.vocab import {', '.join(vocab)}"
        if len(line) > 120:  # the project's line limit; isort's wrapped form beyond it
            line = "from anvil.engine.vocab import (\n" + "".join(f"    {name},\n" for name in vocab) + ")"
        out += [line, ""]
    return "\n".join(out + body).rstrip() + "\n"


def _field_order(model: Any, seen: frozenset[Any] = frozenset()) -> dict[str, Any]:
    """``{field: nested order or None}`` in ``model``'s field order (lists and optional values seen through)."""

    from pydantic import BaseModel

    def nested(annotation: Any) -> dict[str, Any] | None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return None if annotation in seen else _field_order(annotation, seen | {model})
        return next((found for arg in typing.get_args(annotation) if (found := nested(arg)) is not None), None)

    return {name: nested(info.annotation) for name, info in model.model_fields.items()}


def render_output_order() -> str:
    """``output_order.json``: the field order of every operation's output, nested models included, so
    human output lists a result's fields in one order whichever route (or replay) delivered it."""
    orders = {op.name: _field_order(op.output_model) for op in all_operations()}
    return json.dumps(orders, ensure_ascii=False, separators=(",", ":")) + "\n"


def main() -> None:
    from anvil.ops.shapegen import SHAPES_PATH, render_shapes

    Path(SPEC_PATH).write_text(render_spec(), encoding="utf-8")
    INPUTS_PATH.write_text(render_inputs(), encoding="utf-8")
    ORDER_PATH.write_text(render_output_order(), encoding="utf-8")
    SHAPES_PATH.write_text(render_shapes(), encoding="utf-8")
    print(f"wrote {SPEC_PATH}, {INPUTS_PATH}, {ORDER_PATH} and {SHAPES_PATH}")


if __name__ == "__main__":
    main()
