"""The anvil MCP server, generated from the operation registry with the SDK's low-level server.

Every registered :class:`~anvil.ops.registry.Operation` becomes one tool: its description, its
compact input and output JSON schemas, and annotations derived from its effect. A call validates
the arguments with the operation's pydantic input model, runs the operation (:func:`run_operation`) in a
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
import time
from collections.abc import Callable, Sequence
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
from anvil.engine.errors import AnvilError, UsageError, for_callers, unexpected
from anvil.engine.identity import Identity, role_allows
from anvil.engine.vocab import ROLES
from anvil.mcp import client_log, prompts, resources
from anvil.mcp.calls import (
    CALLER_META,
    FIRST_BUNDLE_TOOL,
    INSTRUCTIONS,
    SERVER_NAME,
    ToolCalls,
    acting_name,
    bundles_forced,
    checked_output,
    error_result,
    is_bundle_tool,
    log_call,
    outcome_level,
    planning_enabled,  # noqa: F401  (re-exported: the server's documented switch)
    success_result,
    visible_operations,
)
from anvil.mcp.completion import Completions, Lookup, default_lookup
from anvil.mcp.http_app import HELD_STATE_SCOPE_KEY, IDENTITY_SCOPE_KEY
from anvil.mcp.schema import shared_conventions
from anvil.mcp.toolschemas import tool_schemas
from anvil.ops.access import HeldState
from anvil.ops.invoke import run_validated as run_prepared_operation
from anvil.ops.lookup import has_bundles as project_has_bundles
from anvil.ops.registry import Operation
from anvil.ops.runtime import SamplingDeferred
from anvil.ops.validation import describe_validation_error

logger = logging.getLogger("anvil.mcp.server")

SAMPLING_TIMEOUT_SECONDS = 120.0
WAITING_CALLS = 256  # calls blocked in wait_seconds at once, beside the worker threads of all other calls
READ_THREADS = 24
WRITE_THREADS = 8
"""Worker threads for reads and for writes, apart: writes queue on the project's writer lock (up to
``ANVIL_LOCK_TIMEOUT`` each), and must never use up the threads reads need."""
Invoke = Callable[..., dict[str, Any]]
Sampler = Callable[[str, int], "str | None"]


HEADER_ANNOTATION = "x-mcp-header"
"""The schema keyword that declares an ``Mcp-Param-*`` header (2026-07-28 Streamable HTTP)."""


def header_checked_schemas(schemas: dict[str, Any]) -> dict[str, Any]:
    """The input schemas the SDK must compare ``Mcp-Param-*`` headers against: those that mention
    :data:`HEADER_ANNOTATION` anywhere. The SDK walks the called tool's whole schema twice on every
    2026-07-28 call; for a schema that declares no header the walk can find nothing to compare
    (headers no schema declares are not looked at), so the server's ``get_tool_input_schema``
    answers None for it, which the SDK documents as "nothing to validate"."""
    return {name: schema for name, schema in schemas.items() if HEADER_ANNOTATION in json.dumps(schema)}


def tracing_configured() -> bool:
    """Whether an OpenTelemetry tracer provider is installed (by code or ``OTEL_PYTHON_TRACER_PROVIDER``)."""
    from opentelemetry import trace

    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


class TracingWhenConfigured:
    """The SDK's OpenTelemetry middleware, run only while a tracer provider is installed.

    The SDK puts it on every server (a SERVER span per message, a no-op without a provider, yet it
    extracts the trace context and builds the span's attributes on every request) and documents
    dropping it from ``Server.middleware`` as the way to opt out. anvil keeps it for whoever
    installs a provider (then spans come as before, from that request on) and skips it otherwise.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        """Trace through the SDK's middleware when a provider is installed, else go straight on."""
        if tracing_configured():
            return await self._inner(ctx, call_next)
        return await call_next(ctx)


def trace_only_when_configured(server: Server[Any]) -> None:
    """Replace the SDK's OpenTelemetry middleware on ``server`` by :class:`TracingWhenConfigured`."""
    from mcp.server._otel import OpenTelemetryMiddleware

    server.middleware = [TracingWhenConfigured(m) if isinstance(m, OpenTelemetryMiddleware) else m
                         for m in server.middleware]


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


def operations_for_role(operations: Sequence[Operation], role: str) -> list[Operation]:
    """The operations a token with ``role`` may call (and sees listed), whatever the planning setting."""
    return [op for op in operations if role_allows(role, op.min_role, runner=op.runner_allowed)]


def request_held_state(ctx: ServerRequestContext[Any, Any]) -> HeldState | None:
    """The state the HTTP gate opened for this request and kept for its call (None: none)."""
    scope = getattr(ctx.request, "scope", None)
    held = scope.get(HELD_STATE_SCOPE_KEY) if isinstance(scope, dict) else None
    return held if isinstance(held, HeldState) else None


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


def tool_result(document: dict[str, Any]) -> types.CallToolResult:
    """The SDK model of a tool result built in wire form by :mod:`anvil.mcp.calls`."""
    return types.CallToolResult.model_validate(document)


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


def run_operation(name: str, arguments: dict[str, Any], **options: Any) -> dict[str, Any]:
    """Run ``name`` with ``arguments`` the call already validated with the operation's input model (JSON
    form, :meth:`~anvil.mcp.calls.ToolCalls.prepare`): :func:`anvil.ops.invoke.invoke` without validating
    them a second time (``options``: its keywords).

    Raises:
        AnvilError: any failure of the operation itself.
    """
    from anvil.ops.registry import get_operation
    from anvil.ops.specgen import op_spec

    return run_prepared_operation(lambda op_name: op_spec(get_operation(op_name)), name, arguments, **options)


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
        invoke: runs one operation: ``invoke(name, arguments, *, sampler, principal, remote, state) ->
            dict``, raising ``AnvilError``; ``state`` is the request's :class:`~anvil.ops.access.HeldState`
            (None: none), which it may take (see :func:`anvil.ops.invoke.invoke`). Called in a worker thread.
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
    calls = ToolCalls.of(operations, planning=planning)
    shown = visible_operations(operations, planning=planning)
    shown_names = calls.shown_names
    tools_by_name = {op.name: tool_for(op) for op in operations}
    tools = [tools_by_name[op.name] for op in shown]
    local_only = frozenset(op.name for op in operations if op.local_only)
    remote_tools = {op.name: tools_by_name[op.name].model_copy(update={"description": op.remote_description})
                    for op in operations if op.remote_description and op.name in tools_by_name}
    tools_by_role = {role: [tools_by_name[op.name] for op in operations_for_role(operations, role)
                            if op.name in shown_names] for role in ROLES}
    input_schemas = header_checked_schemas({name: tool.input_schema for name, tool in tools_by_name.items()})
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
            actor = principal.actor if principal is not None else acting_name(params.arguments or {})
            result, error = await run_tool(ctx, params)
            if principal is not None:  # who the token says the caller is: the CLI's pasted hints leave --actor out
                result.meta = {**(result.meta or {}), CALLER_META: principal.actor}
        except SamplingDeferred as deferred:  # a 2026-07-28 client is asked to sample, then calls again
            result = input_required(deferred)
        except Exception as exc:  # a bug, even while reporting an error: one result, one log line
            logger.exception("tool %r failed unexpectedly", params.name[:64])
            error = unexpected(exc)
            result = tool_result(error_result(error))
        await log_outcome(ctx, params.name, actor, error, started,
                       outcome="input_required" if isinstance(result, types.InputRequiredResult) else None)
        return result

    async def log_outcome(ctx: ServerRequestContext[Any, Any], name: str, actor: str | None,
                          error: AnvilError | None, started: float, *, outcome: str | None = None) -> None:
        """One line per call, to the server log and (at the level it asked for) to the client."""
        try:
            fields = log_call(name, actor, error, started, outcome)
            await client_log.send(ctx, outcome_level(error), fields)  # type: ignore[arg-type]
        except Exception:  # logging never changes a call's result
            logger.exception("logging a tool call failed")

    async def run_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
                       ) -> tuple[types.CallToolResult, AnvilError | None]:
        principal = request_principal(ctx)
        prepared = calls.prepare(params.name, params.arguments or {}, principal)
        if isinstance(prepared, AnvilError):
            return tool_result(error_result(prepared)), prepared
        op, arguments = prepared
        try:
            output = await run_validated(ctx, op, arguments, params)
        except AnvilError as err:
            return tool_result(error_result(for_callers(err) if ctx.request is not None else err)), err
        if op.name == FIRST_BUNDLE_TOOL and not bundles_seen[0]:
            await announce_bundle_tools(ctx)
        return tool_result(success_result(op.name, output, params.arguments or {}, params.meta,
                                          principal.actor if principal is not None else None)), None

    async def run_validated(ctx: ServerRequestContext[Any, Any], op: Operation, arguments: dict[str, Any],
                            params: types.CallToolRequestParams | None = None) -> dict[str, Any]:
        sampler = _sampler_for(ctx, params) if params is not None else None
        # A waiting call (wait_seconds) sleeps in its thread until the state changes: it runs on its
        # own thread budget, so waiting agents never hold up other calls, and a client that cancels
        # it is answered at once (the thread ends by its bounded deadline).
        waiting = bool(op.wait_field and arguments.get("wait_seconds"))
        limiter = waiters if waiting else limiter_for(op)
        held = request_held_state(ctx)
        if held is not None and limiter.available_tokens < 1:
            held.release()  # a call that queues for a thread does not keep a database connection meanwhile
            held = None
        run = functools.partial(invoke, op.name, arguments, sampler=sampler,
                                principal=request_principal(ctx), remote=ctx.request is not None, state=held)
        raw = await anyio.to_thread.run_sync(run, limiter=limiter, abandon_on_cancel=waiting)
        return checked_output(op, raw)

    async def read_operation(ctx: ServerRequestContext[Any, Any], name: str, arguments: dict[str, Any]
                             ) -> dict[str, Any]:
        """Run a read operation for a resource or a prompt (validated like a tool call)."""
        op = calls.by_name[name]
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
    trace_only_when_configured(server)
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
