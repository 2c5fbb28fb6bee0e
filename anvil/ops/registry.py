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

from anvil.engine.identity import NAME_MAX_LENGTH, runner_may
from anvil.engine.vocab import IdentitySource, Role

Surface = Literal["execution", "planning"]
Effect = Literal["read", "mutating", "destructive"]
RESERVED_INPUTS: tuple[str, ...] = ("idempotency_key", "dry_run", "confirm")

# Modules whose import registers operations, in the order their commands are listed.
OPERATION_MODULES: tuple[str, ...] = (
    "anvil.ops.project",
    "anvil.ops.planning",
    "anvil.ops.execution",
    "anvil.ops.verification",
    "anvil.ops.landing",
    "anvil.ops.bundles",
    "anvil.ops.team",
    "anvil.ops.trust",
)


Text = Annotated[str, StringConstraints(max_length=4096)]
"""A list item of an input (a file path, a command): bounded like every other input string."""


@dataclass(frozen=True, slots=True)
class NameFormat:
    """Marks a text input that names a person; the runtime applies the name rule to it
    (:func:`anvil.engine.identity.check_name`) on every route.

    ``caller`` fields name whoever makes the call (``actor``, and the old ``reviewer`` alias): an
    authenticated request fills them in and refuses any other name. ``person`` fields name
    someone else (a filter, a token's owner).
    """

    kind: Literal["caller", "person"]


CALLER = NameFormat("caller")
PERSON = NameFormat("person")
Caller = Annotated[str, StringConstraints(min_length=1, max_length=NAME_MAX_LENGTH), CALLER]
"""An input naming the caller (see :class:`NameFormat`)."""
Person = Annotated[str, StringConstraints(min_length=1, max_length=NAME_MAX_LENGTH), PERSON]
"""An input naming a person other than the caller (see :class:`NameFormat`)."""
ACTOR_HELP = "Who acts (default: ANVIL_ACTOR; over HTTP with a token, the token's name)."


class OpInput(BaseModel):
    """Base of every operation input: unknown fields and non-finite numbers are refused.

    ``cwd`` is applied by the runtime, on every operation: on a local call (direct or stdio) it
    selects the project, as running the call in that directory would; over HTTP it must lie
    inside the project the server serves.
    """

    # defer_build: a model's validator is built on its first use, not when its module is imported, so a
    # process that serves one call (a stdio server spawned by the CLI) builds only that call's models.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, defer_build=True)

    cwd: str | None = Field(default=None, min_length=1, max_length=4096,
                            description="Run in this project directory (over HTTP: inside the served project).")


class MutatingInput(OpInput):
    """Base of inputs of operations that write; the framework applies these fields.

    ``actor`` is whoever makes the call: recorded as the author of the events, filled in from an
    authenticated request's token, and required where an operation sets ``needs_caller``.
    """

    actor: Caller | None = Field(default=None, description=ACTOR_HELP)
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

    model_config = ConfigDict(extra="forbid", defer_build=True)


class ActorIdentity(OpOutput):
    """Who made a call, and how anvil knows it."""

    actor: str
    authenticated: bool
    how: IdentitySource
    role: Role | None
    notice: str | None


class MutatingOutput(OpOutput):
    """Base of the outputs of operations that write; the runtime fills these fields in one place
    (:func:`anvil.ops.runtime.execute`)."""

    actor_identity: ActorIdentity
    dry_run: bool = Field(description="True: a dry run, nothing was written.")


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
    quiet_field: str | None = None  # CLI -q: print only this field's id, exit contract.QUIET_EMPTY_EXIT when it is null
    # The CLI exits with ``failure_exit`` when this output field is truthy ("!field": falsy), on
    # every route alike; the JSON document is printed as usual.
    failure_field: str | None = None
    failure_exit: int = 5
    # The least a token's role must be to call this (agent < reviewer < lead); None: agent for
    # the execution surface, lead for planning.
    role: Role | None = None
    # A runner token (which may only read, verify and land) may call this too. Reads open to every
    # agent are open to runners without it.
    runner: bool = False
    needs_caller: bool = False  # refuse the call when nobody is named (no actor, ANVIL_ACTOR or token)
    secret_fields: tuple[str, ...] = ()  # output fields shown once: never kept for retries or shown by a dry run
    # Inputs naming a local file the CLI reads itself: {path field: content field}. The CLI sends the
    # file's text as the content field (and no path), so the call works the same against a remote
    # server; a path that reaches the server is resolved there, inside the served project.
    local_files: dict[str, str] = field(default_factory=dict)
    # The output field that is null while there is nothing to hand out; the input ``wait_seconds``
    # then blocks until it is not (see anvil.ops.runtime.execute).
    wait_field: str | None = None
    # Inputs naming local files the CLI reads and sends base64-encoded: {path field: base64 field}. A
    # list path field fills a list base64 field. The call then works the same against a remote server.
    base64_files: dict[str, str] = field(default_factory=dict)
    # Runs on the caller's machine only: a local (stdio) server lists and runs it, an HTTP server
    # leaves it out of its tool list and its handler refuses a remote call.
    local_only: bool = False
    # The description an HTTP server lists instead (what differs where the server is not the caller's).
    remote_description: str = ""

    @property
    def needs_actor(self) -> bool:
        return "actor" in self.input_model.model_fields

    @property
    def min_role(self) -> Role:
        """The least role a token needs to call this operation."""
        return self.role or ("agent" if self.surface == "execution" else "lead")

    @property
    def runner_allowed(self) -> bool:
        """Whether a runner token may call this operation."""
        return runner_may(self.effect, self.min_role, self.runner)



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
    if issubclass(op.output_model, MutatingOutput) != (op.effect != "read"):
        raise ValueError(f"{op.name}: the outputs of operations that write, and only those, derive from "
                         "MutatingOutput")
    if op.role == "runner":
        raise ValueError(f"{op.name}: runner is not a rank; set runner=True to open the operation to runners")
    if op.needs_caller and "actor" not in op.input_model.model_fields:
        raise ValueError(f"{op.name}: needs_caller without an actor input")
    for name in op.secret_fields:
        if name not in op.output_model.model_fields:
            raise ValueError(f"{op.name}: secret field {name!r} is not an output field")
    if op.wait_field and ("wait_seconds" not in op.input_model.model_fields
                          or op.wait_field not in op.output_model.model_fields):
        raise ValueError(f"{op.name}: wait_field needs a wait_seconds input and an output field of that name")
    for path_field, content_field in op.base64_files.items():
        if path_field not in op.input_model.model_fields or content_field not in op.input_model.model_fields:
            raise ValueError(f"{op.name}: file input {path_field!r} -> {content_field!r} names an unknown input")
    for name in op.positional:
        if name not in op.input_model.model_fields:
            raise ValueError(f"{op.name}: positional {name!r} is not an input field")
    for path_field, content_field in op.local_files.items():
        if path_field not in op.input_model.model_fields or content_field not in op.input_model.model_fields:
            raise ValueError(f"{op.name}: local file {path_field!r} -> {content_field!r} names an unknown input")
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
