"""Streamable HTTP serving of the anvil MCP server at ``/mcp``.

Policy, in the order a request meets it:

1. **Bearer token** (:class:`BearerTokenGate`, outermost). The token is read once, at start, from
   the environment variable *named* by ``token_env``; only its SHA-256 digest is kept, and
   presented tokens are hashed and compared with :func:`hmac.compare_digest` (constant time, and
   no length leak). A missing or wrong token gets ``401`` with ``WWW-Authenticate: Bearer``.
   Binding anything but a loopback address without a token is refused before the server starts.
   This is a small ASGI gate rather than the SDK's ``TokenVerifier``/``AuthSettings`` pair: those
   model an OAuth resource server (they require an authorization-server ``issuer_url`` and keep the
   raw token in the request scope), while anvil has one shared secret and nothing to advertise.
2. **Host and Origin** (the SDK's ``TransportSecuritySettings``, always enabled): loopback names are
   allowed by default, plus the bound address and any configured extras. A deployment behind a
   proxy must list its public host name (and browser origins, if any).
3. **Body size** (the SDK's limit): bodies above ``max_body_bytes`` (1 MiB) get ``413``.
4. **Stateless JSON** Streamable HTTP: no session is kept between requests, so any number of
   replicas can serve one database. Both protocol eras are served: the sessionless 2026-07-28
   single POST and the initialize handshake.

The legacy SSE transport (``GET /sse`` + ``POST /messages/``) can be enabled for old clients; it is
stateful by nature, so a multi-replica deployment should leave it off.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from anvil.engine.errors import UsageError

if TYPE_CHECKING:
    from mcp.server.lowlevel.server import Server
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.types import ASGIApp, Receive, Scope, Send

MCP_PATH = "/mcp"
MAX_BODY_BYTES = 1 << 20
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REALM = 'realm="anvil"'


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` only accepts connections from this machine."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def read_token(host: str, token_env: str | None, env: Mapping[str, str]) -> str | None:
    """The bearer token the server will require, read from the variable named ``token_env``.

    Args:
        host: the address to bind.
        token_env: the NAME of the environment variable holding the token, or None.
        env: the environment to read it from.

    Returns:
        The token, or None for an unauthenticated loopback server.

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
    if not is_loopback(host):
        raise UsageError("refusing to listen on a non-loopback address without a bearer token; "
                         "pass --token-env NAME", code="token_required")
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


class BearerTokenGate:
    """ASGI middleware admitting only HTTP requests that carry the expected bearer token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        """Wrap ``app``; only a digest of ``token`` is kept."""
        self._app = app
        self._digest = hashlib.sha256(token.encode("utf-8")).digest()

    def _admits(self, scope: Scope) -> tuple[bool, bool]:
        """(admitted, credentials_presented)."""
        values = [v for k, v in scope.get("headers", ()) if k.lower() == b"authorization"]
        if len(values) != 1:
            return False, bool(values)
        scheme, _, presented = values[0].partition(b" ")
        if scheme.lower() != b"bearer" or not presented.strip():
            return False, True
        digest = hashlib.sha256(presented.strip()).digest()
        return hmac.compare_digest(digest, self._digest), True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass admitted requests (and lifespan events) through; answer others with 401."""
        if scope["type"] == "websocket":  # nothing is served over websockets
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        admitted, presented = self._admits(scope)
        if admitted:
            await self._app(scope, receive, send)
            return
        challenge = f'Bearer {_REALM}, error="invalid_token"' if presented else f"Bearer {_REALM}"
        body = json.dumps({"error": "invalid_token", "error_description": "a valid bearer token is required"})
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode("ascii")),
                (b"www-authenticate", challenge.encode("ascii")),
            ],
        })
        await send({"type": "http.response.body", "body": body.encode("ascii")})


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
) -> ASGIApp:
    """The ASGI application serving ``server`` at ``/mcp`` (and optionally legacy SSE).

    Args:
        server: the server from :func:`anvil.mcp.server.build_server`.
        host: the bound address (allowed as a Host header unless it is a wildcard).
        token: the bearer token to require, or None for none (loopback only; see :func:`read_token`).
        allowed_hosts: extra Host header values (``name`` or ``name:port``).
        allowed_origins: extra Origin values (``https://app.example``).
        max_body_bytes: the request body limit.
        legacy_sse: also serve ``GET /sse`` and ``POST /messages/``.

    Raises:
        UsageError: a token is missing for a non-loopback host.
    """
    from starlette.routing import Route

    if token is None and not is_loopback(host):
        raise UsageError("refusing to listen on a non-loopback address without a bearer token; "
                         "pass --token-env NAME", code="token_required")
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
    return BearerTokenGate(app, token) if token is not None else app
