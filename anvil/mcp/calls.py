"""What a tool call answers, without the MCP SDK: shared by the SDK server and the lean stdio server.

:mod:`anvil.mcp.server` (the SDK's low-level server) and :mod:`anvil.mcp.lean` (a single-call stdio
session that never imports the SDK) both build a call's result here: which tools a caller sees,
the arguments validated with the operation's input model, the output checked with its output
model, and the result document in its wire form (``content``, ``isError``, ``structuredContent``),
exactly as the SDK puts a ``CallToolResult`` on the wire. Standard library, and pydantic only when
arguments or an output are validated with a model (imported then: the lean server's contract-checked
calls never import it).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from anvil.engine.errors import AnvilError, InternalError, UsageError
from anvil.engine.identity import Identity
from anvil.mcp import rendering, results

if TYPE_CHECKING:
    from anvil.ops.registry import Operation

call_logger = logging.getLogger("anvil.mcp.calls")

SERVER_NAME = "anvil"
PLANNING_ENV = "ANVIL_MCP_PLANNING"
BUNDLES_ENV = "ANVIL_MCP_BUNDLES"
FIRST_BUNDLE_TOOL = "create_bundle"
"""The bundle tool always listed where its surface is: it creates the bundle the others act on."""
INSTRUCTIONS = (
    "anvil records this codebase's requirements, tasks and claims. A failed call returns isError with "
    "{\"error\": {\"code\", \"message\"}}: act on the code. Bundle tools are listed once a bundle exists."
)
RESOURCE_OPERATIONS = frozenset({"list_tasks", "get_task", "generate_work_packet", "get_dependency_graph",
                                 "get_bundle", "generate_bundle_packet"})
"""Resources are served (and declared) only when every one of these operations is."""
PROMPT_OPERATIONS = frozenset({"get_next_task", "get_task", "generate_work_packet", "claim_task", "renew_claim",
                               "submit_progress", "submit_completion_evidence", "apply_review_decision"})
"""Prompts are served (and declared) only when every one of these operations is: the ones they read and
the ones their text tells the model to call."""
CALLER_META = "anvil/caller"
"""The ``_meta`` key of a tool result naming the caller a per-agent token authenticated (beside the
structured content, whose shape it leaves alone)."""
_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
SHOWABLE_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


def planning_enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``ANVIL_MCP_PLANNING`` asks for the planning tools (1/true/yes/on, any case)."""
    value = (os.environ if env is None else env).get(PLANNING_ENV, "")
    return value.strip().lower() in _TRUE_WORDS


def bundles_forced(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``ANVIL_MCP_BUNDLES`` asks for the bundle tools before any bundle exists (1/true/yes/on)."""
    value = (os.environ if env is None else env).get(BUNDLES_ENV, "")
    return value.strip().lower() in _TRUE_WORDS


class Tool(Protocol):
    """What tool visibility reads of an operation: its registry entry or its contract spec alike."""

    @property
    def name(self) -> str: ...

    @property
    def surface(self) -> str: ...

    @property
    def cli_path(self) -> tuple[str, ...]: ...


def is_bundle_tool(op: Tool) -> bool:
    """Whether ``op`` is listed only once the project has a bundle (every bundle operation but
    :data:`FIRST_BUNDLE_TOOL`)."""
    return op.cli_path[:1] == ("bundle",) and op.name != FIRST_BUNDLE_TOOL


def visible_operations(operations: Sequence[Operation], *, planning: bool | None = None) -> list[Operation]:
    """The operations a server lists to unauthenticated callers: execution ones, or all of them with
    planning enabled."""
    shown = shown_names(operations, planning=planning)
    return [op for op in operations if op.name in shown]


def shown_names(tools: Sequence[Tool], *, planning: bool | None = None) -> frozenset[str]:
    """The names of the tools a server lists to unauthenticated callers (see :func:`visible_operations`)."""
    show_all = planning_enabled() if planning is None else planning
    return frozenset(tool.name for tool in tools if show_all or tool.surface == "execution")


def compact_json(document: Any) -> str:
    """``document`` as compact JSON text (the text copy of a tool result)."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def _text_result(text: str, *, is_error: bool, structured: dict[str, Any] | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {"content": [{"text": text, "type": "text"}], "isError": is_error}
    if structured is not None:
        document["structuredContent"] = structured
    return document


def error_result(error: AnvilError) -> dict[str, Any]:
    """The tool result carrying ``error`` (wire form): ``isError`` with the JSON error document as text."""
    return _text_result(compact_json(error.to_wire(with_exit_code=True)), is_error=True)


def success_result(op_name: str, output: dict[str, Any], arguments: Mapping[str, Any],
                   meta: Mapping[str, Any] | None = None, token_actor: str | None = None) -> dict[str, Any]:
    """The tool result of ``output`` (wire form; ``op_name`` called with ``arguments`` and the call's
    ``_meta``, by ``token_actor`` when a per-agent token said who): the compact document as structured
    content and a short text copy (or its JSON, when asked), or the complete document and its JSON for
    a call that asked for it (see :mod:`anvil.mcp.results`)."""
    if results.wants_full(meta):
        return _text_result(compact_json(output), is_error=False, structured=output)
    document = results.compact(output, arguments, token_actor)
    text = compact_json(document) if results.text_form(meta) == "json" else rendering.render(op_name, document)
    return _text_result(text, is_error=False, structured=document)


def unknown_tool(name: str) -> UsageError:
    """The error for a tool that does not exist or is hidden (the two must look identical)."""
    shown = f" {name!r}" if SHOWABLE_NAME.match(name) else ""
    return UsageError(f"unknown tool{shown} (planning tools are listed only when the server runs with "
                      "ANVIL_MCP_PLANNING=1, or to a lead's per-agent token)", code="unknown_tool")


def acting_name(arguments: Mapping[str, Any]) -> str | None:
    """The name a call acts as (its actor, or the reviewer of a review decision), for the call log."""
    for key in ("actor", "reviewer"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value[:100]
    return None


def outcome_level(error: AnvilError | None) -> str:
    """The client log level of a call's outcome line."""
    if error is None:
        return "info"
    return "error" if isinstance(error, InternalError) else "warning"


def log_call(name: str, actor: str | None, error: AnvilError | None, started: float,
             outcome: str | None = None) -> dict[str, Any]:
    """Write a call's line to the server log; returns the same fields for the client's log.

    Raises:
        Exception: never on purpose; callers guard it (logging never changes a call's result).
    """
    shown_name = name if SHOWABLE_NAME.match(name) else "(unknown)"
    outcome = outcome or ("ok" if error is None else error.code)
    elapsed_ms = round((time.monotonic() - started) * 1000)
    call_logger.info("tool %s actor=%r outcome=%s ms=%d", shown_name, actor, outcome, elapsed_ms)
    return {"operation": shown_name, "actor": actor, "outcome": outcome, "duration_ms": elapsed_ms}


@dataclass(frozen=True, slots=True)
class ToolCalls:
    """The tools one server answers: every operation by name, and those it lists to unauthenticated callers."""

    by_name: Mapping[str, Operation]
    shown_names: frozenset[str]

    @classmethod
    def of(cls, operations: Sequence[Operation], *, planning: bool | None = None) -> ToolCalls:
        """The tools of ``operations`` with the planning surface listed or not.

        Raises:
            ValueError: two operations share a name.
        """
        by_name: dict[str, Operation] = {}
        for op in operations:
            if op.name in by_name:
                raise ValueError(f"two operations are named {op.name!r}")
            by_name[op.name] = op
        return cls(by_name, shown_names(operations, planning=planning))

    def prepare(self, name: str, arguments: Mapping[str, Any],
                principal: Identity | None = None) -> tuple[Operation, dict[str, Any]] | AnvilError:
        """The operation ``name`` and its validated arguments (JSON form), or the error to answer with.

        A hidden tool is unknown to a caller without a per-agent token.
        """
        from pydantic import ValidationError

        from anvil.ops.validation import describe_validation_error, reserved_aliases

        op = self.by_name.get(name)
        if op is None or (principal is None and op.name not in self.shown_names):
            return unknown_tool(name)
        try:
            validated = op.input_model.model_validate(reserved_aliases(op, arguments))
        except ValidationError as exc:
            return UsageError(describe_validation_error(exc), code="invalid_input")
        except UsageError as err:
            return err
        return op, validated.model_dump(mode="json")


def checked_output(op: Operation, raw: Mapping[str, Any]) -> dict[str, Any]:
    """An operation's raw output validated with its output model, in JSON form.

    Raises:
        pydantic.ValidationError: the operation returned something its output model refuses (a bug).
    """
    output: dict[str, Any] = op.output_model.model_validate(raw).model_dump(mode="json")
    return output
