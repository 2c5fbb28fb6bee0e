"""The operation contract as plain data: one spec type for every surface (standard library only).

The types are ``NamedTuple``s rather than dataclasses: immutable and typed alike, but a fifth of the
cost to define, which the direct CLI path pays on every call.

:class:`OpSpec` and :class:`ParamSpec` are what the CLI (both parsers), the runtime, the MCP client
backend and the generated docs read. :mod:`anvil.ops.specgen` derives them from the registry's
pydantic models and refuses any constraint it cannot express here, so a value the fast path
accepts is a value pydantic accepts too. ``surface.json`` is their serialized form, read on the
direct CLI path without importing pydantic.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from anvil.engine.identity import runner_may

SPEC_PATH = Path(__file__).with_name("surface.json")
PARAM_KINDS = ("str", "int", "float", "bool", "list", "pairs")
MAX_WAIT_SECONDS = 300
"""The longest ``wait_seconds`` one call may ask for: under MCP clients' request timeouts."""
RESERVED_ALIASES = {"anvil_dry_run": "dry_run"}
"""Other names of reserved inputs: ``anvil_dry_run`` is the reference's reserved name of ``dry_run``."""
QUIET_EMPTY_EXIT = 3  # the CLI's exit code for ``-q`` when the operation's quiet field is null


class ParamSpec(NamedTuple):
    """One input field of an operation, as the CLI and the validators see it.

    ``kind`` is a scalar kind, ``list`` (of ``item``) or ``pairs`` (a list of [source, target]).
    Bounds (``ge``/``le``/``gt``/``lt`` for numbers, ``min_len``/``max_len`` for text and lists,
    ``item_min_len``/``item_max_len`` for list items) are every constraint the field has: spec
    generation fails rather than leave one out. Floats are always finite. ``format`` is ``caller``
    or ``person`` for text that names someone: the runtime applies the name rule to it, and
    resolves ``caller`` fields against the request's identity.
    """

    name: str
    kind: str
    flag: str
    item: str | None = None
    nullable: bool = False
    required: bool = False
    positional: bool = False
    reserved: bool = False
    help: str = ""
    default: Any = None
    off_flag: str | None = None
    choices: tuple[str, ...] | None = None
    ge: float | None = None
    le: float | None = None
    gt: float | None = None
    lt: float | None = None
    min_len: int | None = None
    max_len: int | None = None
    item_min_len: int | None = None
    item_max_len: int | None = None
    format: str | None = None

    @property
    def is_list(self) -> bool:
        return self.kind in ("list", "pairs")

    def fresh_default(self) -> Any:
        """The default value, as a new object (lists are copied)."""
        return list(self.default) if isinstance(self.default, list) else self.default


class OpSpec(NamedTuple):
    """One operation as every surface sees it.

    ``failure`` is ``(field, exit_code)``: the CLI exits with that code when the output field is
    truthy (``!field``: falsy), whichever route ran. ``quiet_field`` is the output field ``-q``
    prints the id of. ``role`` is the least role a token needs to call the operation;
    ``needs_caller`` refuses a call that names nobody; ``secret_fields`` are output fields shown
    once (never kept for idempotent retries, blanked in a dry run). ``wait_field`` is the output
    field that is null while there is nothing to hand out: with ``wait_seconds`` the runtime
    blocks until it is not, woken by the write that changes the state (or returns the empty answer
    at the deadline).
    """

    name: str
    description: str
    handler: str  # "module:function"
    surface: str  # execution | planning
    effect: str  # read | mutating | destructive
    cli_path: tuple[str, ...]
    params: tuple[ParamSpec, ...]
    output_fields: tuple[str, ...]
    needs_actor: bool = False
    bootstrap: bool = False  # the handler creates the state itself (init)
    reaps: bool = False  # a read that reaps stale claims first
    prepare: str | None = None  # "module:function" run before the writer lock
    failure: tuple[str, int] | None = None
    quiet_field: str | None = None
    role: str = "agent"
    runner: bool = False  # a runner token may call it (verification and landing; reads open to agents are)
    needs_caller: bool = False
    secret_fields: tuple[str, ...] = ()
    local_files: tuple[tuple[str, str], ...] = ()  # (path field, content field): the CLI reads the file
    wait_field: str | None = None  # null while there is nothing to hand out; ``wait_seconds`` waits for it
    base64_files: tuple[tuple[str, str], ...] = ()  # (path field, base64 content field): the CLI reads the files

    def param(self, name: str) -> ParamSpec:
        """The parameter called ``name``.

        Raises:
            KeyError: the operation has no such input.
        """
        for param in self.params:
            if param.name == name:
                return param
        raise KeyError(name)

    @property
    def mutating(self) -> bool:
        return self.effect != "read"

    @property
    def runner_allowed(self) -> bool:
        """Whether a runner token may call this operation."""
        return runner_may(self.effect, self.role, self.runner)

    def to_json(self) -> dict[str, Any]:
        """The serialized form kept in ``surface.json`` (fields at their default are left out)."""
        out: dict[str, Any] = {}
        for name, value in self._asdict().items():
            if name == "params":
                value = [_param_json(p) for p in value]
            elif name == "local_files":
                value = [list(pair) for pair in value] if value else value
            elif name == "base64_files":
                value = [list(pair) for pair in value] if value else value
            elif isinstance(value, tuple):
                value = list(value)
            if name in ("cli_path", "params", "output_fields") or value != self._field_defaults.get(name, ...):
                out[name] = value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OpSpec:
        params = tuple(ParamSpec(**{**p, "choices": tuple(p["choices"]) if "choices" in p else None})
                       for p in data["params"])
        failure = data.get("failure")
        return cls(**{**data, "cli_path": tuple(data["cli_path"]), "params": params,
                      "output_fields": tuple(data["output_fields"]),
                      "secret_fields": tuple(data.get("secret_fields", ())),
                      "failure": (failure[0], failure[1]) if failure else None,
                      "local_files": tuple((pair[0], pair[1]) for pair in data.get("local_files", ())),
                      "base64_files": tuple((pair[0], pair[1]) for pair in data.get("base64_files", ()))})


def _param_json(param: ParamSpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in param._asdict().items():
        if isinstance(value, tuple):
            value = list(value)
        if name in ("name", "kind", "flag") or value != param._field_defaults.get(name, ...):
            out[name] = value
    return out


@cache
def load_specs() -> tuple[OpSpec, ...]:
    """Every operation's spec, in registry order, from ``surface.json``."""
    document = json.loads(SPEC_PATH.read_text(encoding="utf-8"))
    return tuple(OpSpec.from_json(op) for op in document["operations"])


def spec_named(name: str) -> OpSpec:
    """The spec of the operation ``name``.

    Raises:
        KeyError: no such operation.
    """
    for spec in load_specs():
        if spec.name == name:
            return spec
    raise KeyError(name)
