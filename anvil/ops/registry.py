"""The operation registry: every operation is defined here once and derived everywhere else.

An :class:`Operation` names a pydantic ``Input`` and ``Output``, a handler (a dotted path to a
function in :mod:`anvil.ops.handlers`, imported only when called, so the direct CLI path never
pays for pydantic) and the metadata the surfaces need. The CLI commands, the MCP tools, the
``describe`` manifest, the docs reference and the loopback test cases are all generated from
:func:`all_operations`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from anvil.ops.runtime import OpMeta

Surface = Literal["execution", "planning"]
Effect = Literal["read", "mutating", "destructive"]
RESERVED_INPUTS: tuple[str, ...] = ("idempotency_key", "dry_run", "confirm")

# Modules whose import registers operations, in the order their commands are listed.
OPERATION_MODULES: tuple[str, ...] = (
    "anvil.ops.project",
    "anvil.ops.planning",
    "anvil.ops.execution",
)


Text = Annotated[str, StringConstraints(max_length=4096)]
"""A list item of an input (a file path, a command): bounded like every other input string."""


class OpInput(BaseModel):
    """Base of every operation input: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")


class MutatingInput(OpInput):
    """Base of inputs of operations that write; the framework applies these fields."""

    idempotency_key: str | None = Field(
        default=None, min_length=1, max_length=200,
        description="Retry key: same key and input returns the first result.",
    )
    dry_run: bool = Field(default=False, description="Check only; write nothing.")


class DestructiveInput(MutatingInput):
    """Base of inputs of operations that can destroy work without confirmation."""

    confirm: bool = Field(default=False, description="Needed for the destructive variant.")


class OpOutput(BaseModel):
    """Base of every operation output."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True, slots=True)
class Example:
    """One documented call, also run by the loopback suite on every path.

    ``scenario`` names the state built before the call (see :mod:`anvil.ops.scenarios`);
    ``error`` is the expected error code, or None for a success.
    """

    title: str
    input: dict[str, Any] = field(default_factory=dict)
    scenario: str = "initialized"
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation, defined once."""

    name: str
    description: str  # what it is for and when to call it, one or two sentences
    input_model: type[OpInput]
    output_model: type[OpOutput]
    handler: str  # "module:function" in anvil.ops.handlers, stdlib + engine only
    surface: Surface
    effect: Effect
    cli_path: tuple[str, ...]
    positional: tuple[str, ...] = ()
    examples: tuple[Example, ...] = ()
    cli_help: str = ""  # longer help for the CLI; the description is used when empty
    bootstrap: bool = False  # the handler creates the state itself (init)
    reaps: bool = False  # a read that reaps stale claims first
    prepare: str | None = None  # "module:function" run before the writer lock (slow, lock-free work)
    cli_names: dict[str, str] = field(default_factory=dict)  # field -> "--flag" or "--on/--off"
    quiet_field: str | None = None  # CLI -q: print only this field's id, exit 3 when it is null
    # The CLI exits with ``failure_exit`` when this output field is truthy ("!field": falsy), on
    # every route alike; the JSON document is printed as usual.
    failure_field: str | None = None
    failure_exit: int = 5

    @property
    def needs_actor(self) -> bool:
        return "actor" in self.input_model.model_fields

    @property
    def meta(self) -> OpMeta:
        return OpMeta(self.name, self.handler, self.effect, self.bootstrap, self.reaps, self.prepare)

    def input_schema(self) -> dict[str, Any]:
        return compact_schema(self.input_model.model_json_schema())

    def output_schema(self) -> dict[str, Any]:
        return compact_schema(self.output_model.model_json_schema(mode="serialization"), output=True)


_REGISTRY: dict[str, Operation] = {}


def register(op: Operation) -> Operation:
    """Add ``op`` to the registry.

    Raises:
        ValueError: the name or CLI path is already taken, or a reserved input is misused.
    """
    if op.name in _REGISTRY:
        raise ValueError(f"operation {op.name!r} registered twice")
    for other in _REGISTRY.values():
        if other.cli_path == op.cli_path:
            raise ValueError(f"CLI path {' '.join(op.cli_path)!r} used by {other.name!r} and {op.name!r}")
    base = {"read": OpInput, "mutating": MutatingInput, "destructive": DestructiveInput}[op.effect]
    wrong_base = op.effect == "mutating" and issubclass(op.input_model, DestructiveInput)
    if not issubclass(op.input_model, base) or wrong_base:
        raise ValueError(f"{op.name}: a {op.effect} operation's input must derive from {base.__name__}")
    for name in op.positional:
        if name not in op.input_model.model_fields:
            raise ValueError(f"{op.name}: positional {name!r} is not an input field")
    _REGISTRY[op.name] = op
    return op


@cache
def _load_all() -> None:
    for module in OPERATION_MODULES:
        importlib.import_module(module)


def all_operations() -> list[Operation]:
    """Every registered operation, in registration order."""
    _load_all()
    return list(_REGISTRY.values())


def get_operation(name: str) -> Operation:
    """The operation called ``name``.

    Raises:
        KeyError: no operation has that name.
    """
    _load_all()
    return _REGISTRY[name]


OUTPUT_NOISE = frozenset({"default", "additionalProperties", "required"})
# Unknown inputs are refused on every call whether or not the schema says so.
INPUT_NOISE = frozenset({"additionalProperties"})
# Upper size limits are enforced on every call; publishing them on every turn costs more than it helps.
WIRE_NOISE = frozenset({"maxLength", "maxItems", "minLength"})


SHARED_FIELDS: dict[str, str] = {
    "task_id": "a task id such as T001",
    "actor": "who is acting (an agent or person name); claims, progress and evidence are attributed to it",
    "prd_id": "which PRD (default: the only or the default PRD)",
    "idempotency_key": "retry key: repeating a call with the same key and input returns the first result "
                       "and writes nothing; the same key with another input is refused",
    "dry_run": "run every check and report the result, but write nothing",
    "confirm": "required for the destructive variant of a call",
    "generation": "fencing token from claim_task: calls naming an older claim generation are refused",
    "claim_id": "fencing token from claim_task, like generation",
}
"""Inputs that mean the same on every tool: described once (server instructions, docs), not per tool."""


def shared_conventions() -> str:
    """The text describing :data:`SHARED_FIELDS`, sent once as the MCP server's instructions."""
    lines = [f"- {name}: {text}." for name, text in SHARED_FIELDS.items()]
    return ("anvil is the system of record for this project's PRD, tasks and claims. Typical loop: "
            "get_next_task, claim_task, generate_work_packet, renew_claim while working, submit_progress, "
            "submit_completion_evidence. Inputs shared by many tools:\n" + "\n".join(lines))


def compact_schema(schema: dict[str, Any], *, output: bool = False) -> dict[str, Any]:
    """Drop what pydantic adds that a client does not need, so tool schemas stay small.

    Titles, null defaults and length limits always go (limits are still enforced); an optional
    input is published as its plain type (omit it for null). Output
    schemas also lose defaults, ``additionalProperties: false`` and
    ``required`` lists: anvil always sends every field, so they only cost bytes on every turn.
    """

    schema = _inline_single_use_defs(schema)

    def walk(node: Any, parent_key: str = "") -> Any:
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                noise = (output and key in OUTPUT_NOISE and not (key == "additionalProperties" and value)) or (
                    not output and key in INPUT_NOISE and value is False) or (key == "default" and value is False)
                if parent_key != "properties" and (key == "title" or key in WIRE_NOISE or noise
                                                   or (key == "default" and value is None)):
                    continue
                if parent_key == "properties" and key in SHARED_FIELDS and isinstance(value, dict):
                    value = {k: v for k, v in value.items() if k != "description"}
                out[key] = walk(value, key)
            # ``anyOf: [X, null]`` with a null default says the same as X plus the default.
            any_of = out.get("anyOf")
            if isinstance(any_of, list) and len(any_of) == 2 and {"type": "null"} in any_of:
                other = next(v for v in any_of if v != {"type": "null"})
                simple = set(other) <= {"type", "enum", "items", "minimum", "maximum", "minLength", "maxLength"}
                if simple and isinstance(other.get("type"), str):
                    del out["anyOf"]
                    merged = dict(other)
                    if output:
                        merged["type"] = [other["type"], "null"]
                        if "enum" in merged:
                            merged["enum"] = [*merged["enum"], None]
                    out = {**merged, **out}
            return out
        if isinstance(node, list):
            return [walk(v, parent_key) for v in node]
        return node

    return walk(schema)


def _inline_single_use_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace each ``$ref`` to a definition used once by the definition itself (shorter)."""
    defs = schema.get("$defs")
    if not defs:
        return schema
    import json

    text = json.dumps(schema)
    counts = {name: text.count(f'"#/$defs/{name}"') for name in defs}

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and counts.get(ref[8:]) == 1 and len(node) == 1:
                return resolve(defs[ref[8:]])
            return {k: resolve(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    out = resolve(schema)
    kept = {name: resolve(body) for name, body in defs.items() if counts[name] != 1}
    if kept:
        out["$defs"] = kept
    return out
