"""``model_shapes.json``: each operation's input field order, and its output model as a shape
:func:`anvil.ops.speccheck.dumped` reads.

A shape says what pydantic leaves unchanged when it validates and dumps an output (see
:func:`anvil.ops.speccheck.dumped` for the forms). A model this module cannot describe exactly (a
constraint, a validator or serializer, an alias, a type pydantic converts such as a datetime or an
enum, a union of two JSON objects, a default that is not plain JSON) has no shape: its operation's
output is always dumped by pydantic. ``python -m anvil.ops.specgen`` regenerates it with the other
contract files (``python -m anvil.ops.shapegen`` alone); ``tests/ops/test_speccheck.py`` checks it is current.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from anvil.ops.registry import all_operations
from anvil.ops.speccheck import SHAPES_PATH, NotSure, _plain

SCALARS: dict[Any, str] = {str: "str", int: "int", float: "float", bool: "bool", Any: "any"}
PLAIN_CONFIG = frozenset({"extra", "defer_build", "title"})
JSON_KIND = {"str": "str", "int": "int", "float": "float", "bool": "bool", "lit": "str", "list": "list",
             "dict": "dict", "model": "dict"}


class Unshaped(Exception):
    """A model, field or type with no exact shape."""


def _kind(shape: Any) -> str:
    tag = shape if isinstance(shape, str) else shape[0]
    if tag not in JSON_KIND:
        raise Unshaped(f"a {tag} inside a union")
    return JSON_KIND[tag]


def type_shape(annotation: Any) -> Any:
    """The shape of ``annotation``.

    Raises:
        Unshaped: it has none.
    """
    if annotation in SCALARS:
        return SCALARS[annotation]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_shape(annotation)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        if not all(type(value) is str for value in args):
            raise Unshaped("a literal that is not text")
        return ["lit", list(args)]
    if origin is list and len(args) == 1:
        return ["list", type_shape(args[0])]
    if origin is dict and len(args) == 2 and args[0] is str:
        return ["dict", type_shape(args[1])]
    if origin in (typing.Union, types.UnionType):
        members = [arg for arg in args if arg is not type(None)]
        inner = type_shape(members[0]) if len(members) == 1 else ["union", [type_shape(m) for m in members]]
        if len(members) > 1 and len({_kind(m) for m in inner[1]}) != len(members):
            raise Unshaped("a union of members of one JSON type")
        return ["opt", inner] if len(members) < len(args) else inner
    raise Unshaped(f"type {annotation!r}")


def _field(name: str, info: FieldInfo) -> list[Any]:
    if info.metadata or info.alias or info.serialization_alias or info.validation_alias or info.exclude \
            or info.discriminator or info.json_schema_extra or info.frozen or info.validate_default:
        raise Unshaped(f"field {name} has options")
    shape = type_shape(info.annotation)
    if info.is_required():
        return [name, shape]
    default = info.get_default(call_default_factory=True)
    try:
        if _plain(default) != default or json.loads(json.dumps(default)) != default:
            raise Unshaped(f"field {name} has a default that is not plain JSON")
        typed = default is None or dumped_default(shape, default)
    except NotSure:
        typed = False
    if not typed:
        raise Unshaped(f"field {name} has a default of another type")
    return [name, shape, default]


def dumped_default(shape: Any, default: Any) -> bool:
    """Whether pydantic dumps ``default`` (not validated: pydantic keeps it as given) as it is."""
    from anvil.ops.speccheck import dumped

    dumped_value: Any = dumped(shape, default)
    return bool(dumped_value == default)


def model_shape(model: type[BaseModel]) -> list[Any]:
    """The shape of ``model``.

    Raises:
        Unshaped: it has none.
    """
    decorators = model.__pydantic_decorators__
    if any((decorators.validators, decorators.field_validators, decorators.root_validators,
            decorators.model_validators, decorators.field_serializers, decorators.model_serializers,
            decorators.computed_fields)):
        raise Unshaped(f"{model.__name__} has validators or serializers")
    if set(model.model_config) - PLAIN_CONFIG or model.model_config.get("extra") not in (None, "forbid", "ignore"):
        raise Unshaped(f"{model.__name__} has a configuration of its own")
    if "__get_pydantic_core_schema__" in vars(model):
        raise Unshaped(f"{model.__name__} builds its own schema")
    return ["model", [_field(name, info) for name, info in model.model_fields.items()]]


def build_shapes() -> dict[str, Any]:
    """Every operation's input field order (``inputs``) and output shape (``outputs``, None where it has none)."""
    outputs: dict[str, Any] = {}
    for op in all_operations():
        try:
            outputs[op.name] = model_shape(op.output_model)
        except Unshaped:
            outputs[op.name] = None
    return {"inputs": {op.name: list(op.input_model.model_fields) for op in all_operations()}, "outputs": outputs}


def render_shapes() -> str:
    """The text of ``model_shapes.json``."""
    return json.dumps(build_shapes(), ensure_ascii=False, separators=(",", ":")) + "\n"


def main() -> None:
    SHAPES_PATH.write_text(render_shapes(), encoding="utf-8")
    print(f"wrote {SHAPES_PATH}")


if __name__ == "__main__":
    main()
