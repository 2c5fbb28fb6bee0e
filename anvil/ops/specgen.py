"""Builds the surface spec (``anvil/ops/surface.json``) from the registry.

The spec is the registry flattened to plain JSON: command paths, handler paths and every input
field as a CLI parameter. The direct CLI path reads it instead of importing pydantic, and a test
fails when it drifts from the registry (regenerate with ``python -m anvil.ops.specgen``).
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import annotated_types
from pydantic.fields import FieldInfo

from anvil.ops.registry import RESERVED_INPUTS, Operation, all_operations
from anvil.ops.spec import SPEC_PATH

SCALARS: dict[Any, str] = {str: "str", int: "int", float: "float", bool: "bool"}


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    origin = get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1 and len(get_args(annotation)) == 2:
            return members[0], True
    return annotation, False


def param_spec(op: Operation, name: str, info: FieldInfo) -> dict[str, Any]:
    """The CLI parameter for one input field.

    Raises:
        TypeError: the field's type cannot be expressed on the command line.
    """
    annotation, nullable = _unwrap_optional(info.annotation)
    spec: dict[str, Any] = {"name": name, "nullable": nullable, "required": info.is_required(),
                            "positional": name in op.positional, "help": info.description or ""}
    origin = get_origin(annotation)
    if annotation in SCALARS:
        spec["kind"] = SCALARS[annotation]
    elif origin is Literal:
        spec["kind"], spec["choices"] = "str", list(get_args(annotation))
    elif origin is list and get_args(annotation)[0] in SCALARS:
        spec["kind"], spec["item"] = "list", SCALARS[get_args(annotation)[0]]
    elif origin is list and get_origin(get_args(annotation)[0]) is Annotated:
        item, *constraints = get_args(get_args(annotation)[0])
        if item is not str or len(constraints) != 1 or getattr(constraints[0], "max_length", None) is None \
                or getattr(constraints[0], "min_length", None) is not None:
            raise TypeError(f"{op.name}.{name}: only bounded-length text list items have a CLI form")
        spec["kind"], spec["item"], spec["item_max_len"] = "list", "str", constraints[0].max_length
    elif origin is list and get_origin(get_args(annotation)[0]) is list:
        spec["kind"] = "pairs"
    else:
        raise TypeError(f"{op.name}.{name}: type {annotation!r} has no CLI form")
    if not info.is_required():
        default = info.get_default(call_default_factory=True)
        spec["default"] = default
    for item in info.metadata:
        for attr, key in (("ge", "ge"), ("le", "le"), ("gt", "gt"), ("lt", "lt"),
                          ("min_length", "min_len"), ("max_length", "max_len")):
            value = getattr(item, attr, None)
            if value is not None and isinstance(item, (annotated_types.BaseMetadata,)):
                spec[key] = value
    flag = op.cli_names.get(name) or ("--yes" if name == "confirm" else "--" + name.replace("_", "-"))
    if "/" in flag:
        flag, off = flag.split("/", 1)
        spec["off_flag"] = off
    elif spec["kind"] == "bool" and spec.get("default") is True:
        spec["off_flag"] = "--no-" + flag[2:]
    spec["flag"] = flag
    spec["reserved"] = name in RESERVED_INPUTS
    return spec


def op_spec(op: Operation) -> dict[str, Any]:
    params = [param_spec(op, name, info) for name, info in op.input_model.model_fields.items()]
    order = {name: i for i, name in enumerate(op.positional)}
    params.sort(key=lambda p: (not p["positional"], order.get(p["name"], 0)))
    return {"name": op.name, "handler": op.handler, "effect": op.effect, "surface": op.surface,
            "bootstrap": op.bootstrap, "reaps": op.reaps, "prepare": op.prepare, "cli_path": list(op.cli_path),
            "needs_actor": op.needs_actor, "params": params,
            "output_fields": sorted(op.output_model.model_fields),
            "failure": [op.failure_field, op.failure_exit] if op.failure_field else None}


def build_spec() -> dict[str, Any]:
    from anvil import __version__

    return {"anvil_version": __version__, "operations": [op_spec(op) for op in all_operations()]}


def render_spec() -> str:
    return json.dumps(build_spec(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> None:
    Path(SPEC_PATH).write_text(render_spec(), encoding="utf-8")
    print(f"wrote {SPEC_PATH}")


if __name__ == "__main__":
    main()
