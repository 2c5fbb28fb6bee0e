"""Streamable HTTP serving of the anvil MCP server at ``/mcp``.

Policy, in the order a request meets it:

1. **Bearer token** (:class:`AccessGate`, outermost), decided per request by
   :class:`anvil.ops.access.Gatekeeper` from the served project's state: once the project has
   issued per-agent tokens (``anvil token add``) every request must present a live one and acts as
   its identity and role (the identity travels to the tool call in the ASGI scope); before that,
   the server's one shared token (read at start from the variable *named* by ``--token-env``; only
   its digest is kept) is required if configured. Whether a token is required at all is fixed when
   the server starts and only ever tightened: a server that required one then never admits a
   request without one, whatever happens to the state. Tokens are compared by digest in constant time.
   A refused request gets ``401`` with a ``WWW-Authenticate: Bearer`` challenge that says whether
   the token was missing or invalid. Binding anything but a loopback address without a token
   (shared or per-agent) is refused before the server starts. This is a small ASGI gate rather than
   the SDK's ``TokenVerifier``/``AuthSettings`` pair: those model an OAuth resource server (they
   require an authorization-server ``issuer_url`` and keep the raw token in the request scope).
2. **Host and Origin** (the SDK's ``TransportSecuritySettings``, always enabled): loopback names are
   allowed by default, plus the bound address and any configured extras. A deployment behind a
   proxy must list its public host name (and browser origins, if any).
3. **Body size** (the SDK's limit): bodies above ``max_body_bytes`` (12 MiB: the largest PRD, sent
   as text by a remote CLI, fits with its JSON escapes) get ``413``.
4. **Stateless JSON** Streamable HTTP: no session is kept between requests, so any number of
   replicas can serve one database. Both protocol eras are served: the sessionless 2026-07-28
   single POST and the initialize handshake. A 2026-07-28 request is answered with JSON too, unless
   it asked for log messages (``_meta`` log level) and one is sent: then the answer is an event
   stream carrying the log line before the result (:func:`stream_modern_notifications`); a
   handshake-era request always gets JSON (its ``logging/setLevel`` holds for its own stateless
   request only).

The legacy SSE transport (``GET /sse`` + ``POST /messages/``) can be enabled for old clients; it is
stateful by nature, so a multi-replica deployment should leave it off.

A server that serves a project also serves the read-only team board at ``/board``
(:mod:`anvil.mcp.board`), under the same token rules but with a session cookie instead of a
bearer header, since a browser page cannot send one.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from anvil.engine.errors import AnvilError, UsageError, for_callers
from anvil.ops.access import Gatekeeper, tokens_in_use

if TYPE_CHECKING:
    from mcp.server.lowlevel.server import Server
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.types import ASGIApp, Receive, Scope, Send

MCP_PATH = "/mcp"
BOARD_PATH = "/board"
MAX_BODY_BYTES = 12 << 20  # room for the largest PRD (4 MiB) sent as text in JSON, escapes included
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REALM = 'realm="anvil"'
TOKEN_REQUIRED = ("refusing to listen on a non-loopback address without a bearer token: pass --token-env NAME, "
                  "or issue per-agent tokens first (`anvil token add NAME --role ROLE`)")
IDENTITY_SCOPE_KEY = "anvil.identity"
"""Where :class:`AccessGate` leaves the authenticated :class:`~anvil.engine.identity.Identity` (or
None) in the ASGI scope; the tool call reads it from the SDK's request context."""
HELD_STATE_SCOPE_KEY = "anvil.held_state"
"""Where :class:`AccessGate` leaves the state its admission opened (:class:`~anvil.ops.access.HeldState`,
or None) for the request's tool call; the gate releases it when the request ends."""
_CHALLENGES = {
    "missing": ('error_description="no bearer token was sent"',
                {"error": "missing_token", "error_description": "this server needs a bearer token"}),
    "invalid": ('error="invalid_token", error_description="the bearer token is unknown, revoked or expired"',
                {"error": "invalid_token", "error_description": "the bearer token is unknown, revoked or expired"}),
}


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` only accepts connections from this machine."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def read_token(host: str, token_env: str | None, env: Mapping[str, str], *, per_agent: bool = False) -> str | None:
    """The shared bearer token the server will require, read from the variable named ``token_env``.

    Args:
        host: the address to bind.
        token_env: the NAME of the environment variable holding the token, or None.
        env: the environment to read it from.
        per_agent: the served project has per-agent tokens (then no shared token is needed).

    Returns:
        The token, or None (a loopback server, or per-agent tokens).

    Raises:
        UsageError: ``invalid_token_env`` (not a variable name), ``token_env_unset`` (the named
            variable is missing or empty) or ``token_required`` (a non-loopback bind without a token).
    """
    if token_env is not None:
        if not ENV_NAME.match(token_env):
            raise UsageError("--token-env takes an environment variable NAME (letters, digits, _)",
                             code="invalid_token_env")
        value = env.get(token_env, "")
        if not value.strip():
            raise UsageError(f"the token variable {token_env} is not set or empty", code="token_env_unset")
        return value
    if not is_loopback(host) and not per_agent:
        raise UsageError(TOKEN_REQUIRED, code="token_required")
    return None


def _host_patterns(host: str) -> list[str]:
    """Host-header patterns for ``host``: with any port, and without one."""
    name = host.strip()
    if ":" in name and not name.startswith("["):
        name = f"[{name}]"  # a bare IPv6 address
    if re.search(r":\d+$", name) or name.endswith(":*"):
        return [name]
    return [name, f"{name}:*"]


def security_settings(host: str, allowed_hosts: Sequence[str] = (),
                      allowed_origins: Sequence[str] = ()) -> TransportSecuritySettings:
    """Host/Origin checks: loopback names, the bound address (unless a wildcard) and the extras."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = [*LOOPBACK_NAMES]
    if host.strip() not in ("", "0.0.0.0", "::", "[::]"):
        names.append(host)
    hosts: list[str] = []
    for name in [*names, *allowed_hosts]:
        hosts.extend(p for p in _host_patterns(name) if p not in hosts)
    origins: list[str] = []
    for name in LOOPBACK_NAMES:
        bracketed = f"[{name}]" if ":" in name else name
        origins.extend([f"http://{bracketed}", f"http://{bracketed}:*"])
    origins.extend(o.rstrip("/") for o in allowed_origins if o.rstrip("/") not in origins)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


def _presented_token(scope: Scope) -> tuple[str | None, bool]:
    """(the bearer token, whether an Authorization header was sent at all)."""
    values = [v for k, v in scope.get("headers", ()) if k.lower() == b"authorization"]
    if len(values) != 1:
        return None, bool(values)
    scheme, _, presented = values[0].partition(b" ")
    if scheme.lower() != b"bearer" or not presented.strip():
        return None, True
    try:
        return presented.strip().decode("ascii"), True
    except UnicodeDecodeError:
        return None, True


class AccessGate:
    """ASGI middleware admitting only requests whose bearer token the gatekeeper accepts.

    The decision reads the project's state, so it runs in a worker thread; the admitted identity
    is put in the scope under :data:`IDENTITY_SCOPE_KEY`, and the store the decision read under
    :data:`HELD_STATE_SCOPE_KEY` (the tool call runs on it rather than open the state again), closed
    when the request ends unless the call took it.
    """

    def __init__(self, app: ASGIApp, gatekeeper: Gatekeeper) -> None:
        self._app = app
        self._gatekeeper = gatekeeper

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass admitted requests (and lifespan events) through; answer others with 401 (503 when the
        state cannot be read: fail closed)."""
        import anyio.to_thread

        if scope["type"] == "websocket":  # nothing is served over websockets
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        presented, sent = _presented_token(scope)
        admit = functools.partial(self._gatekeeper.admit, presented, hold=_runs_an_operation(scope))
        try:
            admission = await anyio.to_thread.run_sync(admit)
        except AnvilError as error:
            _log_state_error(error)
            await _answer(send, 503, for_callers(error).to_wire(with_exit_code=True), [])
            return
        if not admission.admitted:
            failure = admission.failure or "invalid"
            if failure == "missing" and sent:
                failure = "invalid"  # a malformed Authorization header is not a missing one
            await _refuse(send, failure)
            return
        scope[IDENTITY_SCOPE_KEY] = admission.identity
        scope[HELD_STATE_SCOPE_KEY] = admission.held
        try:
            await self._app(scope, receive, send)
        finally:
            if admission.held is not None:
                admission.held.release()


_OPERATION_METHODS = (b"tools/call", b"resources/read", b"prompts/get")


def _runs_an_operation(scope: Scope) -> bool:
    """Whether the request may run an operation in its own scope, so its admission's store is worth
    keeping: a POST to :data:`MCP_PATH` that does not name another method in its ``Mcp-Method``
    header (a handshake-era request names none). Never a ``GET`` (a long-lived event stream)."""
    if scope.get("method") != "POST" or scope.get("path") != MCP_PATH:
        return False
    named = [value.strip() for key, value in scope.get("headers", ()) if key.lower() == b"mcp-method"]
    return not named or named[0] in _OPERATION_METHODS


def _log_state_error(error: AnvilError) -> None:
    """The full error for the operator (stderr), since the caller only sees its code."""
    import logging

    logging.getLogger("anvil.mcp").warning("refused a request: %s", error.line())


async def _refuse(send: Send, failure: str) -> None:
    challenge, body = _CHALLENGES[failure]
    await _answer(send, 401, body, [(b"www-authenticate", f"Bearer {_REALM}, {challenge}".encode("ascii"))])


async def _answer(send: Send, status: int, document: Any, headers: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps(document).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode("ascii")), *headers]})
    await send({"type": "http.response.body", "body": body})


class _SseEndpoints:
    """The legacy SSE transport's two ASGI endpoints, serving ``server``."""

    def __init__(self, server: Server[Any], settings: TransportSecuritySettings, max_body_bytes: int) -> None:
        from mcp.server.sse import SseServerTransport

        self._server = server
        self._transport = SseServerTransport("/messages/", security_settings=settings,
                                             max_request_body_size=max_body_bytes)

    async def stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``GET /sse``: one long-lived event stream per client session."""
        async with self._transport.connect_sse(scope, receive, send) as (read, write):
            await self._server.run(read, write, self._server.create_initialization_options())

    async def post(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``POST /messages/?session_id=...``: a client message for an open stream."""
        await self._transport.handle_post_message(scope, receive, send)


class _Asgi:
    """Adapts a bound ASGI coroutine method so Starlette routes it as an app, not a view."""

    def __init__(self, handler: Any) -> None:
        self._handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._handler(scope, receive, send)


def build_http_app(
    server: Server[Any],
    *,
    host: str = DEFAULT_HOST,
    token: str | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    max_body_bytes: int = MAX_BODY_BYTES,
    legacy_sse: bool = False,
    state_env: Mapping[str, str] | None = None,
    state_cwd: str = ".",
    board_options: Mapping[str, Any] | None = None,
    tokens_issued: bool | None = None,
) -> ASGIApp:
    """The ASGI application serving ``server`` at ``/mcp`` (and optionally legacy SSE).

    Args:
        server: the server from :func:`anvil.mcp.server.build_server`.
        host: the bound address (allowed as a Host header unless it is a wildcard).
        token: the shared bearer token to require, or None for none (loopback only, unless the
            gatekeeper's project has per-agent tokens; see :func:`read_token`).
        allowed_hosts: extra Host header values (``name`` or ``name:port``).
        allowed_origins: extra Origin values (``https://app.example``).
        max_body_bytes: the request body limit.
        legacy_sse: also serve ``GET /sse`` and ``POST /messages/``.
        state_env: the environment that selects the served project (with ``state_cwd``): each request
            is then checked against its per-agent tokens. None: the shared token alone decides.
        state_cwd: the working directory that selects the served project.
        board_options: options of the team board (:class:`anvil.mcp.board.Board`), served at
            ``/board`` whenever the app serves a project (``state_env`` given).
        tokens_issued: whether the project held per-agent tokens when the server started (read
            before it listened); None reads the state here. Fixes the gate's rule for good.

    Raises:
        UsageError: a token is missing for a non-loopback host.
    """
    from starlette.routing import Route

    if tokens_issued is None:
        tokens_issued = state_env is not None and tokens_in_use(state_env, state_cwd)
    if token is None and not is_loopback(host) and not tokens_issued:
        raise UsageError(TOKEN_REQUIRED, code="token_required")
    settings = security_settings(host, allowed_hosts, allowed_origins)
    routes: list[Route] = []
    if legacy_sse:
        sse = _SseEndpoints(server, settings, max_body_bytes)
        routes = [Route("/sse", endpoint=_Asgi(sse.stream), methods=["GET"]),
                  Route("/messages/", endpoint=_Asgi(sse.post), methods=["POST"])]
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        transport_security=settings,
        max_request_body_size=max_body_bytes,
        host=host,
        custom_starlette_routes=routes or None,
    )
    stream_modern_notifications(server, max_body_bytes)
    if token is not None or state_env is not None:
        app = AccessGate(app, Gatekeeper(token, env=state_env, cwd=state_cwd, tokens_issued=tokens_issued))
    if state_env is None:
        return app
    from anvil.mcp.board import board_for

    board = board_for(token, settings, env=state_env, cwd=state_cwd, tokens_issued=tokens_issued,
                      **(board_options or {}))
    return _WithBoard(board, app)


def stream_modern_notifications(server: Server[Any], max_body_bytes: int) -> None:
    """Let a 2026-07-28 request that accepts an event stream be answered as one when the call sends a
    notification (a log line the request asked for), while handshake-era requests keep JSON replies.

    The SDK has one ``json_response`` switch for both eras, and with it on, a 2026-07-28 request's
    notifications are dropped: no log message could ever reach a Streamable HTTP client. Its
    2026-07-28 entry without that switch still answers JSON whenever the call sends nothing within
    its window, so requests that asked for no log look exactly as before. This routes that era's
    requests to the entry with streaming allowed (the SDK's own entry, with the manager's settings);
    everything else goes where the SDK sends it.
    """
    from mcp.server._streamable_http_modern import handle_modern_request
    from mcp.server.transport_security import RequestBodyLimitMiddleware
    from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    manager = server.session_manager
    sdk_route = manager.asgi_app
    version_header = MCP_PROTOCOL_VERSION_HEADER.lower().encode("ascii")

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        version = headers.get(version_header, b"").decode("latin-1") or None
        if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS or b"text/event-stream" not in \
                headers.get(b"accept", b""):
            await sdk_route(scope, receive, send)
            return
        await handle_modern_request(manager.app, manager.security_settings, False,
                                    manager._lifespan_state, scope, receive, send)

    manager.asgi_app = RequestBodyLimitMiddleware(route, max_body_bytes)


class _WithBoard:
    """Sends ``/board`` and everything under it to the board (which checks its own sessions), the rest
    (``/mcp``, legacy SSE, lifespan events) to the gated MCP application."""

    def __init__(self, board: ASGIApp, app: ASGIApp) -> None:
        self.board = board
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == BOARD_PATH or path.startswith(BOARD_PATH + "/"):
            await self.board(scope, receive, send)
        else:
            await self._app(scope, receive, send)
