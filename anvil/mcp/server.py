"""The anvil MCP server, generated from the operation registry with the SDK's low-level server.

Every registered :class:`~anvil.ops.registry.Operation` becomes one tool: its description, its
compact input and output JSON schemas, and annotations derived from its effect. A call validates
the arguments with the operation's pydantic input model, runs :func:`anvil.ops.invoke.invoke` in a
worker thread (the event loop keeps serving pings, cancellations and other calls meanwhile) and
answers with the validated output as ``structuredContent`` plus a compact JSON copy as text.

Failures are tool results with ``isError: true`` whose single text block is the JSON error
document ``{"error": {"code", "message", "exit_code", ...}}``: an MCP host shows it to its model,
and :mod:`anvil.mcp.client` rebuilds the exact :class:`~anvil.engine.errors.AnvilError` from it.
The document is deliberately *not* sent as ``structuredContent``: the TypeScript SDK client (used
by most hosts) validates any ``structuredContent`` against the tool's output schema even on error
results, so an error document there would turn a clean tool error into a protocol failure.

Which tools a caller sees depends on the surfaces the server lists and on who it is. Every caller is
listed the execution-surface tools, and the planning-surface ones too when planning is enabled
(``planning=True`` or ``ANVIL_MCP_PLANNING`` set to 1/true/yes/on): the lists stay within their byte
budget (tests/mcp/test_budgets.py). A request the HTTP gate authenticated with a per-agent token (its
identity travels in the ASGI scope, see :mod:`anvil.mcp.http_app`) is listed, of those, the tools its
role may call (agent: the execution loop; reviewer: also review decisions; lead: everything) and may
call any tool by name, listed or not, the runtime refusing by role with ``forbidden_by_role``: a lead
plans over HTTP with the CLI whatever the listing. For any other caller (stdio, or HTTP without
per-agent tokens) a hidden tool is indistinguishable from an unknown one.

The bundle tools (all but ``create_bundle``, which plans the first bundle) are listed only once the
project has a bundle, or always with ``ANVIL_MCP_BUNDLES`` set to 1/true/yes/on: a project that does
not use bundles does not pay for their schemas on every turn. A bundle tool that is not listed can
still be called by name (a client that knows it keeps working). The call that creates the first
bundle sends ``notifications/tools/list_changed`` to its session (handshake era; the capability
declares ``listChanged``); a 2026-07-28 client, which gets change notifications only on
``subscriptions/listen`` (not served), sees the tools on its next ``tools/list``.

Besides tools, the server offers resources (:mod:`anvil.mcp.resources`), prompts
(:mod:`anvil.mcp.prompts`) and completions (:mod:`anvil.mcp.completion`), each declared in the
capabilities only when the operations behind it are served, and logging
(:mod:`anvil.mcp.client_log`): every tool call is logged with its operation, actor and outcome.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from anvil import __version__
from anvil.engine.errors import AnvilError, InternalError, UsageError, for_callers, unexpected
from anvil.engine.identity import Identity, role_allows
from anvil.engine.vocab import ROLES
from anvil.mcp import client_log, prompts, rendering, resources, results
from anvil.mcp.completion import Completions, Lookup, default_lookup
from anvil.mcp.http_app import IDENTITY_SCOPE_KEY
from anvil.mcp.schema import shared_conventions
from anvil.mcp.toolschemas import tool_schemas
from anvil.ops.invoke import invoke as run_operation
from anvil.ops.lookup import has_bundles as project_has_bundles
from anvil.ops.registry import Operation
from anvil.ops.runtime import SamplingDeferred
from anvil.ops.validation import describe_validation_error, reserved_aliases

logger = logging.getLogger("anvil.mcp.server")
call_logger = logging.getLogger("anvil.mcp.calls")

SERVER_NAME = "anvil"
PLANNING_ENV = "ANVIL_MCP_PLANNING"
BUNDLES_ENV = "ANVIL_MCP_BUNDLES"
FIRST_BUNDLE_TOOL = "create_bundle"
"""The bundle tool always listed where its surface is: it creates the bundle the others act on."""
SAMPLING_TIMEOUT_SECONDS = 120.0
WAITING_CALLS = 256  # calls blocked in wait_seconds at once, beside the worker threads of all other calls
READ_THREADS = 24
WRITE_THREADS = 8
"""Worker threads for reads and for writes, apart: writes queue on the project's writer lock (up to
``ANVIL_LOCK_TIMEOUT`` each), and must never use up the threads reads need."""
INSTRUCTIONS = (
    "anvil records this codebase's requirements, tasks and claims. A failed call returns isError with "
    "{\"error\": {\"code\", \"message\"}}: act on the code. Bundle tools are listed once a bundle exists."
)
CALLER_META = "anvil/caller"
"""The ``_meta`` key of a tool result naming the caller a per-agent token authenticated (beside the
structured content, whose shape it leaves alone)."""
_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
_SHOWABLE_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")

Invoke = Callable[..., dict[str, Any]]
Sampler = Callable[[str, int], "str | None"]


def planning_enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``ANVIL_MCP_PLANNING`` asks for the planning tools (1/true/yes/on, any case)."""
    value = (os.environ if env is None else env).get(PLANNING_ENV, "")
    return value.strip().lower() in _TRUE_WORDS


def bundles_forced(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``ANVIL_MCP_BUNDLES`` asks for the bundle tools before any bundle exists (1/true/yes/on)."""
    value = (os.environ if env is None else env).get(BUNDLES_ENV, "")
    return value.strip().lower() in _TRUE_WORDS


def is_bundle_tool(op: Operation) -> bool:
    """Whether ``op`` is listed only once the project has a bundle (every bundle operation but
    :data:`FIRST_BUNDLE_TOOL`)."""
    return op.cli_path[:1] == ("bundle",) and op.name != FIRST_BUNDLE_TOOL


class AnvilServer(Server[Any]):
    """The SDK's low-level server, declaring ``tools.listChanged`` wherever it is run (stdio, HTTP,
    in-process), since the tool list grows when the first bundle is created."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        """The SDK's options, with ``tools_changed`` on unless the caller passes its own."""
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions)


def visible_operations(operations: Sequence[Operation], *, planning: bool | None = None) -> list[Operation]:
    """The operations a server lists to unauthenticated callers: execution ones, or all of them with
    planning enabled."""
    show_all = planning_enabled() if planning is None else planning
    return [op for op in operations if show_all or op.surface == "execution"]


def operations_for_role(operations: Sequence[Operation], role: str) -> list[Operation]:
    """The operations a token with ``role`` may call (and sees listed), whatever the planning setting."""
    return [op for op in operations if role_allows(role, op.min_role, runner=op.runner_allowed)]


def request_principal(ctx: ServerRequestContext[Any, Any]) -> Identity | None:
    """The identity the HTTP gate authenticated for this request; None over stdio or without
    per-agent tokens."""
    scope = getattr(ctx.request, "scope", None)
    principal = scope.get(IDENTITY_SCOPE_KEY) if isinstance(scope, dict) else None
    return principal if isinstance(principal, Identity) else None


def tool_for(op: Operation) -> types.Tool:
    """The MCP tool definition of ``op``."""
    read = op.effect == "read"
    inputs, outputs = tool_schemas(op)
    # readOnlyHint false is the protocol's default, and idempotentHint means something only beside it: both
    # left out, as is destructiveHint on a read (it too is meaningful only when the tool writes).
    annotations = types.ToolAnnotations(
        read_only_hint=True if read else None,
        destructive_hint=None if read else op.effect == "destructive",
        open_world_hint=False,
    )
    return types.Tool(
        name=op.name,
        description=op.description,
        input_schema=inputs,
        output_schema=outputs,
        annotations=annotations,
    )


def compact_json(document: Any) -> str:
    """``document`` as compact JSON text (the text copy of a tool result)."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def error_result(error: AnvilError) -> types.CallToolResult:
    """The tool result carrying ``error``: ``isError`` with the JSON error document as text."""
    text = compact_json(error.to_wire(with_exit_code=True))
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def success_result(op_name: str, output: dict[str, Any], arguments: Mapping[str, Any],
                   meta: Mapping[str, Any] | None = None, token_actor: str | None = None) -> types.CallToolResult:
    """The tool result of ``output`` (``op_name`` called with ``arguments`` and the call's ``_meta``, by
    ``token_actor`` when a per-agent token said who): the compact document as structured content and a
    short text copy (or its JSON, when asked), or the complete document and its JSON for a call that
    asked for it (see :mod:`anvil.mcp.results`)."""
    if results.wants_full(meta):
        return types.CallToolResult(content=[types.TextContent(text=compact_json(output))], structured_content=output)
    document = results.compact(output, arguments, token_actor)
    text = compact_json(document) if results.text_form(meta) == "json" else rendering.render(op_name, document)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=document)


def unknown_tool(name: str) -> UsageError:
    """The error for a tool that does not exist or is hidden (the two must look identical)."""
    shown = f" {name!r}" if _SHOWABLE_NAME.match(name) else ""
    return UsageError(f"unknown tool{shown} (planning tools are listed only when the server runs with "
                      "ANVIL_MCP_PLANNING=1, or to a lead's per-agent token)", code="unknown_tool")


def _sampler_for(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Sampler | None:
    """A sampler for the worker thread, or None when the client cannot sample.

    Sampling needs a client that declared the capability. A handshake-era client on a channel that
    carries server-to-client requests (stdio) is asked at once, in a request of the server's own. A
    2026-07-28 client (any transport) is asked the way that revision asks: the call is answered with
    an ``input_required`` result carrying the sampling request, and the client's retry of the call
    carries the reply (:func:`_deferred_sampler`). A handshake-era client on stateless HTTP cannot
    be asked (its reply would have nowhere to land).
    """
    session = ctx.session
    wanted = types.ClientCapabilities(sampling=types.SamplingCapability())
    if not session.check_client_capability(wanted):
        return None
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return _deferred_sampler(params)
    if not session.can_send_request:
        return None
    token = anyio.lowlevel.current_token()
    related = ServerMessageMetadata(related_request_id=ctx.request_id)

    async def ask(prompt: str, max_tokens: int) -> str | None:
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[types.SamplingMessage(role="user", content=types.TextContent(text=prompt))],
                max_tokens=max_tokens,
            )
        )
        with anyio.fail_after(SAMPLING_TIMEOUT_SECONDS):
            result = await session.send_request(request, types.CreateMessageResult, metadata=related)
        content = result.content
        return content.text if isinstance(content, types.TextContent) else None

    def sample(prompt: str, max_tokens: int) -> str | None:
        try:
            return anyio.from_thread.run(ask, prompt, max_tokens, token=token)
        except Exception as exc:  # the operation falls back to its non-sampled behaviour
            logger.warning("sampling request failed (%s)", type(exc).__name__)
            return None

    return sample


SAMPLING_INPUT = "draft"
"""The key of the sampling request in an ``input_required`` result (and of its reply in the retry)."""


def _prompt_state(prompt: str) -> str:
    """The ``requestState`` of a deferred sampling request: which prompt the reply answers."""
    return "sampling:" + hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def _deferred_sampler(params: types.CallToolRequestParams) -> Sampler:
    """The sampler of a 2026-07-28 call: the reply the client's retry carries, when it answers this
    very prompt; otherwise :class:`SamplingDeferred`, which asks the client (see :func:`input_required`).

    A reply drafted for another prompt (the PRD changed between the two rounds) is not used: the
    client is asked again. The reply is the client's model's text, no more trusted than a reply to a
    handshake-era sampling request.
    """
    responses = params.input_responses or {}

    def sample(prompt: str, max_tokens: int) -> str | None:
        reply = responses.get(SAMPLING_INPUT)
        if reply is None or params.request_state != _prompt_state(prompt):
            raise SamplingDeferred(prompt, max_tokens)
        content = getattr(reply, "content", None)
        return content.text if isinstance(content, types.TextContent) else None

    return sample


def input_required(deferred: SamplingDeferred) -> types.InputRequiredResult:
    """The ``input_required`` result asking a 2026-07-28 client to sample and call again."""
    request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(text=deferred.prompt))],
        max_tokens=deferred.max_tokens))
    return types.InputRequiredResult(input_requests={SAMPLING_INPUT: request},
                                     request_state=_prompt_state(deferred.prompt))


def _acting_name(arguments: Mapping[str, Any]) -> str | None:
    """The name a call acts as (its actor, or the reviewer of a review decision), for the call log."""
    for key in ("actor", "reviewer"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value[:100]
    return None


def _outcome_level(error: AnvilError | None) -> types.LoggingLevel:
    if error is None:
        return "info"
    return "error" if isinstance(error, InternalError) else "warning"


def build_server(
    operations: Sequence[Operation],
    invoke: Invoke = run_operation,
    *,
    planning: bool | None = None,
    lookup: Lookup = default_lookup,
    resource_page_size: int = resources.PAGE_SIZE,
    bundles: bool | None = None,
    has_bundles: Callable[[], bool] = project_has_bundles,
) -> Server[Any]:
    """Build the MCP server exposing ``operations`` as tools (and resources, prompts, completions, logging).

    Args:
        operations: the registered operations (usually ``all_operations()``).
        invoke: runs one operation: ``invoke(name, arguments, *, sampler, principal, remote) -> dict``,
            raising ``AnvilError``. Called in a worker thread.
        planning: list planning-surface tools to unauthenticated callers too; None reads
            ``ANVIL_MCP_PLANNING``.
        lookup: finds ids by prefix for completions (blocking; called in a worker thread).
        resource_page_size: how many tasks one ``resources/list`` page names.
        bundles: list the bundle tools before any bundle exists; None reads ``ANVIL_MCP_BUNDLES``.
        has_bundles: whether the served project has a bundle (blocking; called in a worker thread
            by ``tools/list`` until it first says yes).

    Returns:
        A low-level SDK ``Server`` named ``anvil`` reporting anvil's version; run it with
        :func:`anvil.mcp.serve.serve_stdio` or mount it with :mod:`anvil.mcp.http_app`.

    Raises:
        ValueError: two operations share a name.
    """
    shown = visible_operations(operations, planning=planning)
    by_name: dict[str, Operation] = {}
    for op in operations:
        if op.name in by_name:
            raise ValueError(f"two operations are named {op.name!r}")
        by_name[op.name] = op
    shown_names = {op.name for op in shown}
    tools_by_name = {op.name: tool_for(op) for op in operations}
    tools = [tools_by_name[op.name] for op in shown]
    local_only = frozenset(op.name for op in operations if op.local_only)
    remote_tools = {op.name: tools_by_name[op.name].model_copy(update={"description": op.remote_description})
                    for op in operations if op.remote_description and op.name in tools_by_name}
    tools_by_role = {role: [tools_by_name[op.name] for op in operations_for_role(operations, role)
                            if op.name in shown_names] for role in ROLES}
    input_schemas = {name: tool.input_schema for name, tool in tools_by_name.items()}
    bundle_names = frozenset(op.name for op in operations if is_bundle_tool(op))
    bundles_seen = [bundles_forced() if bundles is None else bundles]  # a bundle is never deleted: yes stays yes
    waiters = anyio.CapacityLimiter(WAITING_CALLS)
    limiters: dict[bool, anyio.CapacityLimiter] = {}

    def limiter_for(op: Operation | None) -> anyio.CapacityLimiter:
        reads = op is None or op.effect == "read"  # None: a read outside the registry (tools/list's bundle check)
        if reads not in limiters:  # created on first use, inside the server's event loop
            limiters[reads] = anyio.CapacityLimiter(READ_THREADS if reads else WRITE_THREADS)
        return limiters[reads]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        principal = request_principal(ctx)
        listed = tools_by_role[principal.role or "agent"] if principal is not None else tools
        if not bundles_seen[0] and bundle_names & {tool.name for tool in listed}:
            bundles_seen[0] = await bundles_exist()
        if not bundles_seen[0]:
            listed = [tool for tool in listed if tool.name not in bundle_names]
        if ctx.request is not None:  # over HTTP: the server runs nowhere near the caller's tree
            listed = [remote_tools.get(tool.name, tool) for tool in listed if tool.name not in local_only]
        return types.ListToolsResult(tools=listed)

    async def bundles_exist() -> bool:
        try:
            return await anyio.to_thread.run_sync(has_bundles, limiter=limiter_for(None))
        except AnvilError as exc:  # an unreadable state lists no bundle tools; the calls say what is wrong
            logger.warning("could not tell whether the project has bundles: %s", exc.code)
            return False

    async def announce_bundle_tools(ctx: ServerRequestContext[Any, Any]) -> None:
        """Tell the session its tool list grew (the first bundle now exists); best effort."""
        bundles_seen[0] = True
        try:
            await ctx.session.send_notification(types.ToolListChangedNotification(),
                                                related_request_id=ctx.request_id)
        except Exception as exc:  # a client that went away misses it; the call's result stands
            logger.debug("tools/list_changed not delivered (%s)", type(exc).__name__)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """A tool call's error boundary: whatever happens, the client gets a result, never a traceback."""
        started = time.monotonic()
        actor: str | None = None
        result: types.CallToolResult | types.InputRequiredResult
        error: AnvilError | None = None
        try:
            principal = request_principal(ctx)
            actor = principal.actor if principal is not None else _acting_name(params.arguments or {})
            result, error = await run_tool(ctx, params)
            if principal is not None:  # who the token says the caller is: the CLI's pasted hints leave --actor out
                result.meta = {**(result.meta or {}), CALLER_META: principal.actor}
        except SamplingDeferred as deferred:  # a 2026-07-28 client is asked to sample, then calls again
            result = input_required(deferred)
        except Exception as exc:  # a bug, even while reporting an error: one result, one log line
            logger.exception("tool %r failed unexpectedly", params.name[:64])
            error = unexpected(exc)
            result = error_result(error)
        await log_call(ctx, params.name, actor, error, started,
                       outcome="input_required" if isinstance(result, types.InputRequiredResult) else None)
        return result

    async def log_call(ctx: ServerRequestContext[Any, Any], name: str, actor: str | None,
                       error: AnvilError | None, started: float, *, outcome: str | None = None) -> None:
        """One line per call, to the server log and (at the level it asked for) to the client."""
        try:
            shown_name = name if _SHOWABLE_NAME.match(name) else "(unknown)"
            outcome = outcome or ("ok" if error is None else error.code)
            elapsed_ms = round((time.monotonic() - started) * 1000)
            call_logger.info("tool %s actor=%r outcome=%s ms=%d", shown_name, actor, outcome, elapsed_ms)
            await client_log.send(ctx, _outcome_level(error), {"operation": shown_name, "actor": actor,
                                                               "outcome": outcome, "duration_ms": elapsed_ms})
        except Exception:  # logging never changes a call's result
            logger.exception("logging a tool call failed")

    async def run_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
                       ) -> tuple[types.CallToolResult, AnvilError | None]:
        principal = request_principal(ctx)
        op = by_name.get(params.name)
        if op is None or (principal is None and op.name not in shown_names):
            error: AnvilError = unknown_tool(params.name)
            return error_result(error), error
        try:
            validated = op.input_model.model_validate(reserved_aliases(op, params.arguments or {}))
        except ValidationError as exc:
            error = UsageError(describe_validation_error(exc), code="invalid_input")
            return error_result(error), error
        except UsageError as err:
            return error_result(err), err
        try:
            output = await run_validated(ctx, op, validated.model_dump(mode="json"), params)
        except AnvilError as err:
            return error_result(for_callers(err) if ctx.request is not None else err), err
        if op.name == FIRST_BUNDLE_TOOL and not bundles_seen[0]:
            await announce_bundle_tools(ctx)
        return success_result(op.name, output, params.arguments or {}, params.meta,
                              principal.actor if principal is not None else None), None

    async def run_validated(ctx: ServerRequestContext[Any, Any], op: Operation, arguments: dict[str, Any],
                            params: types.CallToolRequestParams | None = None) -> dict[str, Any]:
        sampler = _sampler_for(ctx, params) if params is not None else None
        run = functools.partial(invoke, op.name, arguments, sampler=sampler,
                                principal=request_principal(ctx), remote=ctx.request is not None)
        # A waiting call (wait_seconds) sleeps in its thread until the state changes: it runs on its
        # own thread budget, so waiting agents never hold up other calls, and a client that cancels
        # it is answered at once (the thread ends by its bounded deadline).
        waiting = bool(op.wait_field and arguments.get("wait_seconds"))
        raw = await anyio.to_thread.run_sync(run, limiter=waiters if waiting else limiter_for(op),
                                             abandon_on_cancel=waiting)
        output: dict[str, Any] = op.output_model.model_validate(raw).model_dump(mode="json")
        return output

    async def read_operation(ctx: ServerRequestContext[Any, Any], name: str, arguments: dict[str, Any]
                             ) -> dict[str, Any]:
        """Run a read operation for a resource or a prompt (validated like a tool call)."""
        op = by_name[name]
        try:
            validated = op.input_model.model_validate(arguments)
        except ValidationError as exc:
            raise UsageError(describe_validation_error(exc), code="invalid_input") from None
        return await run_validated(ctx, op, validated.model_dump(mode="json"))

    server: Server[Any] = AnvilServer(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS + "\n" + shared_conventions(),
        get_tool_input_schema=input_schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    # Registered after construction: the constructor warns about the handshake-era logging
    # capability, which anvil still serves to the clients that use it.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, client_log.set_level)
    served_prompts: dict[str, frozenset[str]] = {}
    template_uris: list[str] = []
    if resources.REQUIRED_OPERATIONS <= shown_names:
        catalog = resources.Resources(read_operation, page_size=resource_page_size)
        server.add_request_handler("resources/list", types.PaginatedRequestParams, catalog.list)
        server.add_request_handler("resources/templates/list", types.PaginatedRequestParams, catalog.list_templates)
        server.add_request_handler("resources/read", types.ReadResourceRequestParams, catalog.read)
        template_uris = [template.uri_template for template in resources.TEMPLATES]
    if prompts.REQUIRED_OPERATIONS <= shown_names:
        prompt_set = prompts.Prompts(read_operation)
        server.add_request_handler("prompts/list", types.PaginatedRequestParams, prompt_set.list)
        server.add_request_handler("prompts/get", types.GetPromptRequestParams, prompt_set.get)
        served_prompts = dict(prompts.PROMPT_ARGUMENTS)
    if served_prompts or template_uris:
        completions = Completions(served_prompts, template_uris, lookup)
        server.add_request_handler("completion/complete", types.CompleteRequestParams, completions.complete)
    return server
