"""Streamable HTTP (standard library) and legacy SSE (SDK) transports of :mod:`anvil.mcp.client`.

Streamable HTTP request format, tried in this order:

1. **Sessionless 2026-07-28** (one POST, no handshake): headers ``MCP-Protocol-Version:
   2026-07-28``, ``Mcp-Method: tools/call`` and ``Mcp-Name: <tool>``; the body is the
   ``tools/call`` request whose ``params._meta`` carries the per-request envelope (protocol
   version, client capabilities, client info).
2. **Handshake era**, when the server does not take that request (HTTP 400/404/405/406/415, or a
   JSON-RPC "unsupported version"/"invalid request"): ``initialize`` -> ``notifications/initialized``
   -> ``tools/call``, echoing ``Mcp-Session-Id`` when the server issues one (and ending that
   session with a DELETE afterwards).

Replies may be ``application/json`` or ``text/event-stream``; both are read until the response
to our request id. Redirects are never followed (the ``Authorization`` header must not travel to
another place), and every failure is reported with the target's :meth:`~McpTarget.display` form.
Tests can answer the requests in-process through :mod:`anvil.mcp.channels`.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from anvil.engine.errors import AnvilError, AuthFailed, TargetUnavailable, UsageError
from anvil.mcp.channels import installed
from anvil.mcp.jsonrpc import (
    CLIENT_INFO,
    FULL_RESULT_META,
    Deadline,
    RpcError,
    check_initialize,
    initialize_params,
    not_mcp,
    response_for,
)
from anvil.mcp.target import McpTarget

MODERN_VERSION = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
MAX_REPLY_BYTES = 64 * 1024 * 1024
FALLBACK_STATUSES = frozenset({400, 404, 405, 406, 415})
FALLBACK_RPC_CODES = frozenset({-32022, -32600, -32000})
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADER_SAFE = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$")


def bearer_token(target: McpTarget, env: Mapping[str, str]) -> str | None:
    """The token from the variable named by ``target.token_env`` (None when no variable is named).

    Raises:
        UsageError: ``invalid_token_env`` (not a variable name), ``token_env_unset`` (missing or
            empty) or ``invalid_token`` (a value that cannot travel in a header). Messages name the
            variable, never its value.
    """
    name = target.token_env
    if not name:
        return None
    if not ENV_NAME.match(name):
        raise UsageError("--mcp-token-env takes an environment variable NAME (letters, digits, _)",
                         code="invalid_token_env")
    value = (env.get(name) or "").strip()
    if not value:
        raise UsageError(f"the token variable {name} (named by --mcp-token-env or ANVIL_MCP_TOKEN_ENV) is not set or "
                         "empty: export the token in it", code="token_env_unset")
    if not _HEADER_SAFE.match(value):
        raise UsageError(f"the token in {name} contains characters a header cannot carry", code="invalid_token")
    return value


def _header_value(value: str) -> str:
    """A header-safe rendering of ``value`` (base64 sentinel for anything unusual)."""
    if _HEADER_SAFE.match(value) and not value.startswith("=?base64?"):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def _opener() -> Any:
    """``urllib``'s opener that follows no redirect (loaded only for ``https://`` and test channels)."""
    import urllib.request

    class RefuseRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
            return None

    return urllib.request.build_opener(RefuseRedirects())


def _broken() -> tuple[type[BaseException], ...]:
    """What a failed exchange raises: OSError (and ValueError for a bad URL) always; ``http.client``'s
    errors when the ``urllib`` route loaded it (the plain ``http://`` route never does)."""
    found: tuple[type[BaseException], ...] = (OSError, ValueError)
    client = sys.modules.get("http.client")
    return found + (client.HTTPException,) if client is not None else found


@dataclass
class _Reply:
    status: int
    session_id: str | None
    message: dict[str, Any] | None  # the JSON-RPC response to our id, when present


def auth_failure(target: McpTarget, challenge: str | None) -> AuthFailed:
    """The error for a 401/403: a token that was missing (``auth_required``) or refused (``auth_failed``).

    ``challenge`` is the ``WWW-Authenticate`` header; an anvil server says ``error="invalid_token"``
    only when a token was sent and refused. Messages name the variable, never the token.
    """
    where = target.display()
    if target.token_env is None:
        return AuthFailed(f"the MCP server {where} needs a bearer token: put yours in an environment variable and "
                          "pass --mcp-token-env NAME (or set ANVIL_MCP_TOKEN_ENV=NAME)", code="auth_required")
    if challenge is not None and 'error="invalid_token"' not in challenge:
        return AuthFailed(f"the MCP server {where} got no usable bearer token from the variable "
                          f"{target.token_env} (--mcp-token-env)", code="auth_required")
    return AuthFailed(f"the MCP server {where} refused the bearer token in {target.token_env} (--mcp-token-env): it "
                      "is unknown, revoked or expired; ask a lead for a new one (`anvil token add`)",
                      code="auth_failed")


def _check_status(status: int, target: McpTarget, challenge: str | None = None) -> None:
    """Raise the error an HTTP status means, for statuses no JSON-RPC body can redeem."""
    if status in (401, 403):
        raise auth_failure(target, challenge)
    if 300 <= status < 400:
        raise TargetUnavailable(f"the MCP server {target.display()} redirected the request; use the final URL",
                                code="target_redirected")
    if status == 413:
        raise UsageError(f"the request is too large for the MCP server {target.display()}", code="payload_too_large")
    if status == 421:
        raise TargetUnavailable(f"the MCP server {target.display()} does not accept this host name "
                                "(add it to the server's allowed hosts)", code="host_not_allowed")
    if status >= 500:
        raise TargetUnavailable(f"the MCP server {target.display()} failed (HTTP {status})", code="target_unavailable")


def _raise_server_error(response: Any) -> None:
    """Raise the anvil error a 503 carries (a server that cannot use its state says so with its exit
    code, 8, so a call fails alike on every route); return when the body is not one."""
    from anvil.engine.errors import from_wire

    if (response.headers.get("content-type") or "").split(";")[0].strip().lower() != "application/json":
        return
    try:
        document = json.loads(response.read(MAX_REPLY_BYTES + 1))
    except (ValueError, OSError):
        return
    error = document.get("error") if isinstance(document, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str) and isinstance(error.get("exit_code"), int):
        raise from_wire(document)


def _read_json(response: Any, target: McpTarget) -> Any:
    body = response.read(MAX_REPLY_BYTES + 1)
    if len(body) > MAX_REPLY_BYTES:
        raise TargetUnavailable(f"the reply of {target.display()} is too large", code="reply_too_large")
    try:
        return json.loads(body) if body.strip() else None
    except ValueError:
        raise not_mcp(target) from None


def _read_sse(response: Any, request_id: int, target: McpTarget, deadline: Deadline) -> dict[str, Any] | None:
    """Read server-sent events until the JSON-RPC response to ``request_id`` (or the stream ends)."""
    data: list[str] = []
    total = 0
    while True:
        deadline.remaining()
        line = response.readline(MAX_REPLY_BYTES)
        total += len(line)
        if total > MAX_REPLY_BYTES:
            raise TargetUnavailable(f"the reply of {target.display()} is too large", code="reply_too_large")
        if not line:
            break
        text = line.decode("utf-8", errors="replace").rstrip("\r\n")
        if text.startswith("data:"):
            data.append(text[5:].removeprefix(" "))
        elif not text and data:
            try:
                message = json.loads("\n".join(data))
            except ValueError:
                raise not_mcp(target) from None
            data = []
            if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
                return message
    return None


def _exchange(target: McpTarget, payload: dict[str, Any], headers: dict[str, str], deadline: Deadline,
              method: str = "POST") -> _Reply:
    """One HTTP request; reads the JSON-RPC response to ``payload['id']`` if it has one.

    Raises:
        AnvilError: unreachable, timed out, refused credentials, redirected, 413/421/5xx.
    """
    assert target.url is not None
    data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8") if method == "POST" else None
    channels = installed()
    try:
        if channels is None and target.url.startswith("http://"):
            from anvil.mcp.plainhttp import request as plain_request

            response: Any = plain_request(target.url, method, headers, data, deadline.remaining())
        else:
            import urllib.error
            import urllib.request

            request = urllib.request.Request(target.url, data=data, headers=headers, method=method)
            open_request = _opener().open if channels is None else channels.open_http
            try:
                response = open_request(request, timeout=deadline.remaining())
            except urllib.error.HTTPError as exc:
                response = exc
    except TimeoutError:
        raise deadline.expired() from None
    except _broken():
        raise TargetUnavailable(f"cannot reach the MCP server at {target.display()}",
                                code="target_unavailable") from None
    try:
        status = int(response.status if response.status is not None else response.code)
        if status == 503:
            _raise_server_error(response)
        _check_status(status, target, response.headers.get("www-authenticate"))
        session_id = response.headers.get("mcp-session-id")
        request_id = payload.get("id")
        if request_id is None or method != "POST":
            return _Reply(status, session_id, None)
        content_type = (response.headers.get("content-type") or "").split(";")[0].strip().lower()
        message: Any = None
        if content_type == "application/json":
            message = _read_json(response, target)
        elif content_type == "text/event-stream":
            message = _read_sse(response, request_id, target, deadline)
        if not (isinstance(message, dict) and message.get("id") == request_id):
            message = None
        return _Reply(status, session_id, message)
    except TimeoutError:
        raise deadline.expired() from None
    except _broken():
        raise TargetUnavailable(f"the connection to {target.display()} broke", code="target_unavailable") from None
    finally:
        response.close()


def _result(reply: _Reply, request_id: int, target: McpTarget) -> dict[str, Any]:
    result = response_for(reply.message, request_id, target)
    if result is None:
        if reply.status == 404:
            raise TargetUnavailable(f"no MCP endpoint at {target.display()}", code="not_mcp")
        raise not_mcp(target)
    return result


def _modern_wants_fallback(reply: _Reply) -> bool:
    if reply.message is None:
        return reply.status in FALLBACK_STATUSES
    error = reply.message.get("error")
    return isinstance(error, dict) and error.get("code") in FALLBACK_RPC_CODES


def call_http(target: McpTarget, name: str, arguments: dict[str, Any], env: Mapping[str, str],
              deadline: Deadline) -> dict[str, Any]:
    """Run one ``tools/call`` over Streamable HTTP; returns the raw result.

    Raises:
        RpcError: the server answered the call with a JSON-RPC error.
        AnvilError: see :func:`anvil.mcp.client.call_tool`.
    """
    token = bearer_token(target, env)
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "User-Agent": f"anvil-cli/{CLIENT_INFO['version']}"}
    if token is not None:
        base["Authorization"] = f"Bearer {token}"
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": arguments,
        "_meta": {**FULL_RESULT_META, META_VERSION: MODERN_VERSION, META_CAPABILITIES: {},
                  META_CLIENT_INFO: CLIENT_INFO}}}
    modern = {**base, "MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": "tools/call",
              "Mcp-Name": _header_value(name)}
    reply = _exchange(target, call, modern, deadline)
    if not _modern_wants_fallback(reply):
        return _result(reply, 1, target)
    return _call_http_legacy(target, name, arguments, base, deadline)


def _call_http_legacy(target: McpTarget, name: str, arguments: dict[str, Any], base: dict[str, str],
                      deadline: Deadline) -> dict[str, Any]:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()}
    reply = _exchange(target, init, base, deadline)
    version = check_initialize(_result(reply, 1, target), target)
    headers = {**base, "MCP-Protocol-Version": version}
    if reply.session_id:
        if not _HEADER_SAFE.match(reply.session_id):
            raise not_mcp(target)
        headers["Mcp-Session-Id"] = reply.session_id
    try:
        _exchange(target, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers, deadline)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments,
                                                                             "_meta": FULL_RESULT_META}}
        return _result(_exchange(target, call, headers, deadline), 2, target)
    finally:
        if reply.session_id:
            try:
                _exchange(target, {}, headers, deadline, method="DELETE")
            except AnvilError:
                pass


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _state_error_of(target: McpTarget, headers: Mapping[str, str] | None, deadline: Deadline) -> AnvilError | None:
    """The anvil error a server that answered 503 states in its body, read with one plain request (the
    SDK's SSE client drops the body of the stream it could not open); None when it states none."""
    try:
        _exchange(target, {"jsonrpc": "2.0", "id": 0, "method": "ping"},
                  {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   **(headers or {})}, deadline)
    except AnvilError as stated:
        return stated if stated.exit_code == 8 else None
    return None


def _map_sse_failure(exc: BaseException, target: McpTarget, deadline: Deadline,
                     headers: Mapping[str, str] | None = None) -> BaseException:
    """The AnvilError (or RpcError) an exception from the SDK's SSE client stands for (``headers``: the
    ones the stream was opened with)."""
    import httpx2
    from mcp.shared.exceptions import MCPError

    leaves = _leaves(exc)
    for leaf in leaves:
        if isinstance(leaf, AnvilError | RpcError):
            return leaf
        if isinstance(leaf, TimeoutError | httpx2.TimeoutException):
            return deadline.expired()
        if isinstance(leaf, httpx2.HTTPStatusError):
            status = leaf.response.status_code
            if status == 503:
                stated = _state_error_of(target, headers, deadline)
                if stated is not None:
                    return stated
            try:
                _check_status(status, target, leaf.response.headers.get("www-authenticate"))
            except AnvilError as mapped:
                return mapped
            return TargetUnavailable(f"cannot open the SSE stream of {target.display()} (HTTP {status})",
                                     code="target_unavailable")
    for leaf in leaves:
        if isinstance(leaf, MCPError) and leaf.code not in (-32603, -32000):
            return RpcError(leaf.code)
    return TargetUnavailable(f"cannot reach the MCP server at {target.display()}", code="target_unavailable")


def call_sse(target: McpTarget, name: str, arguments: dict[str, Any], env: Mapping[str, str],
             deadline: Deadline) -> dict[str, Any]:
    """Run one ``tools/call`` over the legacy SSE transport with the SDK; returns the raw result.

    Raises:
        RpcError: the server answered the call with a JSON-RPC error.
        AnvilError: see :func:`anvil.mcp.client.call_tool`.
    """
    import logging

    import anyio

    token = bearer_token(target, env)
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    logging.getLogger("mcp").setLevel(logging.CRITICAL)  # SDK tracebacks must not reach the CLI user

    async def run() -> dict[str, Any]:
        import mcp_types as types
        from mcp import Client
        from mcp.client.sse import sse_client

        assert target.url is not None
        left = deadline.remaining()
        with anyio.fail_after(left):
            transport = sse_client(target.url, headers=headers, timeout=min(left, 30.0), sse_read_timeout=left)
            async with Client(transport, mode="legacy", read_timeout_seconds=left, cache=None) as client:
                meta = types.RequestParamsMeta(**FULL_RESULT_META)  # type: ignore[typeddict-item]
                request = types.CallToolRequest(params=types.CallToolRequestParams(
                    name=name, arguments=arguments, _meta=meta))
                result = await client.session.send_request(request, types.CallToolResult)
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    try:
        return anyio.run(run)
    except TimeoutError:
        raise deadline.expired() from None
    except Exception as exc:  # ExceptionGroups from the SDK's task groups included
        raise _map_sse_failure(exc, target, deadline, headers) from None
