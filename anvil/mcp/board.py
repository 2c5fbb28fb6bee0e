"""The team board at ``/board`` on the HTTP server: a read-only page, live over server-sent events.

Routes (everything else under ``/board`` is 404):

| route | what |
|---|---|
| ``GET /board`` | the page (HTML; its script and style come from ``/board/static/``) |
| ``POST /board/session`` | exchange a token, sent once as JSON ``{"token": ...}``, for a session cookie |
| ``POST /board/logout`` | end the session (the cookie is cleared) |
| ``GET /board/api/state`` | one snapshot (JSON) |
| ``GET /board/api/events`` | server-sent events: a ``snapshot`` now and after every change |

Tokens follow the ``/mcp`` rules (:mod:`anvil.ops.board_access`): the session cookie is HttpOnly,
``SameSite=Strict``, scoped to ``/board`` and signed so that any replica can check it; a token is
never accepted in a URL. Host and Origin are checked like ``/mcp`` (an Origin must be the page's
own or a configured one). Each replica serves at most ``max_streams`` event streams at once (more
get ``503``); a stream ends after ``stream_seconds`` and the browser reconnects, which checks the
session again. A stream wakes on the commit that changes the state, never by polling.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from importlib import resources as package_files
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from anvil.engine.errors import AnvilError, for_callers
from anvil.engine.sessions import SESSION_SECONDS
from anvil.ops import board as board_data
from anvil.ops.board_access import BoardAccess, Viewer

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.types import Receive, Scope, Send

logger = logging.getLogger("anvil.mcp.board")

BOARD_PATH = "/board"
COOKIE = "anvil_board"
MAX_STREAMS = 32
STREAM_SECONDS = 300.0
KEEPALIVE_SECONDS = 15.0
RECONNECT_MS = 1000
MAX_LOGIN_BYTES = 4096
ASSETS = {"board.js": "text/javascript; charset=utf-8", "board.css": "text/css; charset=utf-8"}
_PAGE_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
                "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
_COMMON_HEADERS = {"x-content-type-options": "nosniff", "referrer-policy": "no-referrer",
                   "x-frame-options": "DENY"}


def asset(name: str) -> bytes:
    """A file of the board's page, shipped in the package."""
    return package_files.files("anvil.mcp").joinpath("board_assets", name).read_bytes()


def _matches(value: str, patterns: list[str]) -> bool:
    """``value`` equals a pattern, or a ``name:*`` pattern with any port."""
    return any(value == p or (p.endswith(":*") and value.startswith(p[:-1])) for p in patterns)


class Board:
    """The board's ASGI application (mounted by :func:`anvil.mcp.http_app.build_http_app`)."""

    def __init__(self, access: BoardAccess, settings: TransportSecuritySettings, *, env: Mapping[str, str],
                 cwd: str, max_streams: int = MAX_STREAMS, stream_seconds: float = STREAM_SECONDS,
                 keepalive_seconds: float = KEEPALIVE_SECONDS) -> None:
        """Serve the board of the project ``env``/``cwd`` select, admitting viewers through ``access``."""
        self._access = access
        self._settings = settings
        self._env, self._cwd = dict(env), cwd
        self._max_streams = max_streams
        self._stream_seconds = stream_seconds
        self._keepalive = keepalive_seconds
        self._streams = 0
        self._waits = anyio.CapacityLimiter(max_streams)  # waiting streams never take the tool calls' threads

    @property
    def open_streams(self) -> int:
        """How many event streams this replica is serving now."""
        return self._streams

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        refusal = self._check_origin(request)
        response = refusal or await self._route(request)
        for key, value in _COMMON_HEADERS.items():
            response.headers.setdefault(key, value)
        await response(scope, receive, send)

    def _check_origin(self, request: Request) -> Response | None:
        """DNS-rebinding and cross-site checks: an allowed Host, and an Origin that is the page's own
        (or a configured one)."""
        host = request.headers.get("host", "")
        if not _matches(host, list(self._settings.allowed_hosts)):
            return Response("Invalid Host header", status_code=421)
        origin = request.headers.get("origin")
        if origin is not None and urlsplit(origin).netloc != host \
                and not _matches(origin.rstrip("/"), list(self._settings.allowed_origins)):
            return Response("Invalid Origin header", status_code=403)
        return None

    async def _route(self, request: Request) -> Response:
        path, method = request.url.path.rstrip("/") or "/", request.method
        if path == BOARD_PATH and method in ("GET", "HEAD"):
            return Response(asset("board.html"), media_type="text/html; charset=utf-8",
                            headers={"content-security-policy": _PAGE_POLICY, "cache-control": "no-store"})
        if path.startswith(BOARD_PATH + "/static/") and method in ("GET", "HEAD"):
            name = path.rsplit("/", 1)[1]
            if name in ASSETS:
                return Response(asset(name), media_type=ASSETS[name], headers={"cache-control": "no-cache"})
        elif path == BOARD_PATH + "/session" and method == "POST":
            return await self._login(request)
        elif path == BOARD_PATH + "/logout" and method == "POST":
            response = Response(status_code=204)
            response.delete_cookie(COOKIE, path=BOARD_PATH, httponly=True, samesite="strict",
                                   secure=_secure(request))
            return response
        elif path == BOARD_PATH + "/api/state" and method == "GET":
            return await self._state(request)
        elif path == BOARD_PATH + "/api/events" and method == "GET":
            return await self._events(request)
        return JSONResponse({"error": "not_found"}, status_code=404)

    async def _viewer(self, request: Request) -> Viewer | None:
        return await anyio.to_thread.run_sync(self._access.viewer, request.cookies.get(COOKIE))

    async def _login(self, request: Request) -> Response:
        if not request.headers.get("content-type", "").lower().startswith("application/json"):
            return JSONResponse({"error": "send the token as JSON: {\"token\": ...}"}, status_code=415)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_LOGIN_BYTES:
                return JSONResponse({"error": "request too large"}, status_code=413)
        try:
            token = json.loads(body).get("token")
        except (ValueError, AttributeError):
            token = None
        if not isinstance(token, str) or not token.strip():
            return JSONResponse({"error": "missing_token"}, status_code=400)
        try:
            login = await anyio.to_thread.run_sync(self._access.login, token.strip())
        except AnvilError as error:
            return JSONResponse(for_callers(error).to_wire(with_exit_code=True), status_code=503)
        del token
        if login is None:
            return JSONResponse({"error": "invalid_token", "error_description": "the token is unknown, revoked or "
                                 "expired"}, status_code=401)
        response = JSONResponse({"viewer": login.viewer._asdict()}, status_code=200)
        if login.cookie is not None:
            response.set_cookie(COOKIE, login.cookie, max_age=SESSION_SECONDS, path=BOARD_PATH, httponly=True,
                                samesite="strict", secure=_secure(request))
        return response

    async def _state(self, request: Request) -> Response:
        try:
            viewer = await self._viewer(request)
            if viewer is None:
                return _login_required()
            snapshot = await anyio.to_thread.run_sync(board_data.snapshot, self._env, self._cwd)
        except AnvilError as error:
            return JSONResponse(for_callers(error).to_wire(with_exit_code=True), status_code=503)
        return JSONResponse({**snapshot, "viewer": viewer._asdict()}, headers={"cache-control": "no-store"})

    async def _events(self, request: Request) -> Response:
        try:
            viewer = await self._viewer(request)
        except AnvilError as error:
            return JSONResponse(for_callers(error).to_wire(with_exit_code=True), status_code=503)
        if viewer is None:
            return _login_required()
        if self._streams >= self._max_streams:
            return JSONResponse({"error": "too many live board connections on this server; retry shortly"},
                                status_code=503, headers={"retry-after": "5"})
        self._streams += 1
        return _CountedStream(self._stream(request), self._release_stream, media_type="text/event-stream",
                              headers={"cache-control": "no-store", "x-accel-buffering": "no"})

    def _release_stream(self) -> None:
        self._streams -= 1

    async def _stream(self, request: Request) -> AsyncIterator[str]:
        """A snapshot now and after every change; keepalives between; the end after ``stream_seconds``."""
        cancelled = threading.Event()
        deadline = time.monotonic() + self._stream_seconds
        seen = -1
        try:
            yield f"retry: {RECONNECT_MS}\n\n"
            while True:
                snapshot = await anyio.to_thread.run_sync(board_data.snapshot, self._env, self._cwd)
                if snapshot["head"] != seen:
                    seen = snapshot["head"]
                    yield f"id: {seen}\nevent: snapshot\ndata: {json.dumps(snapshot, separators=(',', ':'))}\n\n"
                else:
                    yield ": keepalive\n\n"
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                await anyio.to_thread.run_sync(board_data.wait_for_change, self._env, self._cwd, seen,
                                               min(self._keepalive, remaining), cancelled,
                                               limiter=self._waits, abandon_on_cancel=True)
                if await self._viewer(request) is None:  # logged out, token revoked or expired
                    yield "event: logout\ndata: {}\n\n"
                    break
        except AnvilError as error:
            logger.warning("board stream ended: %s", error.code)
            yield f"event: failure\ndata: {json.dumps({'code': error.code})}\n\n"
        finally:
            cancelled.set()


class _CountedStream(StreamingResponse):
    """An event stream that gives its slot back however it ends (even before its first byte)."""

    def __init__(self, content: AsyncIterator[str], release: Callable[[], None], **options: Any) -> None:
        super().__init__(content, **options)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


def _login_required() -> Response:
    return JSONResponse({"error": "login_required", "error_description": "sign in with a token first (POST "
                         "/board/session)"}, status_code=401, headers={"cache-control": "no-store"})


def _secure(request: Request) -> bool:
    """Whether the browser reached us over HTTPS (directly, or through a proxy that says so)."""
    return request.url.scheme == "https" or request.headers.get("x-forwarded-proto", "").lower() == "https"


def board_for(shared_token: str | None, settings: TransportSecuritySettings, *, env: Mapping[str, str],
              cwd: str, tokens_issued: bool | None = None, **options: Any) -> Board:
    """The board of the project ``env``/``cwd`` select, under the token rules of its ``/mcp``."""
    return Board(BoardAccess(shared_token, env=env, cwd=cwd, tokens_issued=tokens_issued), settings, env=env,
                 cwd=cwd, **options)
