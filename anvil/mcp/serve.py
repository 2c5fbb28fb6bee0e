"""Entry points that run the anvil MCP server: over stdio, or over Streamable HTTP with uvicorn.

Importing this module is cheap (no SDK); each function loads what it needs when called. These are
what ``python -m anvil.mcp`` and the CLI's ``anvil serve`` call.
"""

from __future__ import annotations

import io
import logging
import os
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

from anvil.engine.errors import UsageError
from anvil.mcp.http_app import DEFAULT_HOST, DEFAULT_PORT, MAX_BODY_BYTES, MCP_PATH, read_token
from anvil.mcp.stdio_client import LEAN_ENV

if TYPE_CHECKING:
    from mcp.server.lowlevel.server import Server

    from anvil.mcp.http_limits import HttpLimits  # imports asyncio: loaded by serve_http only
    from anvil.ops.registry import Operation


LOG_LEVEL_ENV = "ANVIL_MCP_LOG_LEVEL"
_LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def server_log_level(env: Mapping[str, str]) -> int:
    """The server log's level: ``ANVIL_MCP_LOG_LEVEL`` (debug/info/warning/error), warning by default.

    ``info`` adds one line per tool call (operation, actor, outcome, duration).

    Raises:
        UsageError: ``invalid_log_level`` for any other value.
    """
    name = env.get(LOG_LEVEL_ENV, "").strip().lower() or "warning"
    if name not in _LOG_LEVELS:
        raise UsageError(f"{LOG_LEVEL_ENV} must be one of {', '.join(_LOG_LEVELS)}", code="invalid_log_level")
    return _LOG_LEVELS[name]


def _configure_logging() -> None:
    """The server log to stderr (warnings and errors with tracebacks by default); never to the protocol stream.

    Raises:
        UsageError: ``ANVIL_MCP_LOG_LEVEL`` is not a level.
    """
    logging.basicConfig(level=server_log_level(os.environ), stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")


def _divert_stdout() -> BinaryIO:
    """Keep the real stdout for protocol messages only and send everything else to stderr.

    File descriptor 1 is re-pointed at stderr (so ``print``, stray library output and child
    processes cannot corrupt the stream) and ``sys.stdout`` becomes ``sys.stderr``.

    Returns:
        A binary stream on a private duplicate of the original stdout.

    Raises:
        OSError: the standard descriptors cannot be duplicated (stdout or stderr closed).
    """
    sys.stdout.flush()
    wire_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(wire_fd, "wb")


def _divert_stdin() -> BinaryIO:
    """Keep the real stdin for protocol messages only: file descriptor 0 is re-pointed at the null
    device (a child process reads end of input, never the protocol), as the SDK's transport does.

    Returns:
        A buffered binary stream on a private duplicate of the original stdin.

    Raises:
        OSError: the descriptors cannot be duplicated.
    """
    wire_fd = os.dup(0)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null_fd, 0)
    finally:
        os.close(null_fd)
    return os.fdopen(wire_fd, "rb")


def _build(planning: bool | None, extra_modules: Sequence[str] = (), *, bundles: bool | None = None) -> Server[Any]:
    from anvil.mcp._sdk import collector_paused, load_server_sdk

    load_server_sdk(extra_modules)
    with collector_paused():
        from anvil.mcp.server import build_server
        from anvil.ops.registry import all_operations

        return build_server(all_operations(), planning=planning, bundles=bundles)


DRAIN_SECONDS = 120.0
"""After end of input, how long the stdio server still waits for answers to requests it read."""


async def _run_stdio(server: Server[Any], wire: BinaryIO, source: BinaryIO | None = None,
                     suppressed_id: int | str | None = None) -> None:
    """Serve one stdio session: protocol messages out on ``wire``, in from ``source`` (default: stdin).

    ``suppressed_id`` is the id of a replayed ``initialize`` the client already has the answer to (a
    session the lean path handed over, see :mod:`anvil.mcp.lean`): the server's first response with
    that id is not written.

    The caller keeps owning ``wire`` and ``source``: the text layers put over them are flushed and
    detached at the end, never closed. At end of input, every request already read is answered
    before the session ends: the SDK ends a session as soon as its input closes, dropping calls
    still running, so a client that writes its request and closes stdin at once would get no
    answer. Messages are relayed through this function, which holds the server's input open until
    each request it passed on has its response (or error) written, at most ``DRAIN_SECONDS``.
    """
    import anyio
    from mcp.server.stdio import stdio_server

    text = io.TextIOWrapper(wire, encoding="utf-8", newline="\n")
    reader = None if source is None else io.TextIOWrapper(source, encoding="utf-8", errors="replace")
    stdin = None if reader is None else anyio.wrap_file(reader)
    pending: set[Any] = set()
    answered = anyio.Event()
    suppress = [suppressed_id] if suppressed_id is not None else []

    async with stdio_server(stdin=stdin, stdout=anyio.wrap_file(text)) as (read_stream, write_stream):
        to_server, server_reads = anyio.create_memory_object_stream[Any](64)
        server_writes, from_server = anyio.create_memory_object_stream[Any](64)

        async def relay_in() -> None:
            nonlocal answered
            async with to_server:
                async for item in read_stream:
                    message = getattr(item, "message", None)
                    if getattr(message, "method", None) is not None and getattr(message, "id", None) is not None:
                        pending.add(message.id)  # type: ignore[union-attr]
                    await to_server.send(item)
                with anyio.move_on_after(DRAIN_SECONDS):
                    while pending:
                        await answered.wait()
                        answered = anyio.Event()

        async def relay_out() -> None:
            async with from_server, write_stream:
                async for item in from_server:
                    message = getattr(item, "message", None)
                    is_response = getattr(message, "method", None) is None
                    if is_response and suppress and getattr(message, "id", None) == suppress[0]:
                        suppress.clear()
                    else:
                        await write_stream.send(item)
                    if is_response and getattr(message, "id", None) in pending:
                        pending.discard(message.id)  # type: ignore[union-attr]
                        answered.set()

        # Every stream is closed however the session ends (closing twice is harmless).
        async with read_stream, to_server, server_reads, server_writes, from_server, \
                anyio.create_task_group() as tg:
            tg.start_soon(relay_in)
            tg.start_soon(relay_out)
            await server.run(server_reads, server_writes, server.create_initialization_options())
    text.detach()  # flushes
    if reader is not None:
        reader.detach()


def lean_requested(env: Mapping[str, str]) -> bool:
    """Whether the client asked for the lean single-call path (``ANVIL_MCP_LEAN``, set by the CLI's stdio client)."""
    return env.get(LEAN_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def run_session(wire: BinaryIO, source: BinaryIO | None, *, planning: bool | None, lean: bool,
                build: Callable[[bool | None], Server[Any]], invoke: Callable[..., dict[str, Any]] | None = None,
                operations: Sequence[Operation] | None = None) -> bool:
    """Serve one stdio session: lean first when asked (:mod:`anvil.mcp.lean`), with the SDK server otherwise.

    Args:
        wire: where protocol messages go.
        source: the protocol input (required when ``lean``); None: the process's stdin.
        planning: list the planning tools too; None reads ``ANVIL_MCP_PLANNING``.
        lean: serve without the SDK for as long as the session allows.
        build: builds the SDK server, given whether the bundle tools were announced already
            (None: as ``ANVIL_MCP_BUNDLES`` says); called only if the SDK is needed.
        invoke: runs one operation on the lean path (default: :func:`anvil.ops.invoke.invoke`).
        operations: the operations the lean path serves (default: the registry's).

    Returns:
        Whether the SDK server served (part of) the session.

    Raises:
        OSError: the protocol stream cannot be read or written.
        ImportError: the MCP SDK is needed and not installed.
    """
    handover = None
    if lean:
        from anvil.mcp.lean import serve_lean

        assert source is not None
        handover = serve_lean(source, wire, planning=planning, operations=operations, invoke=invoke)
        if handover is None:
            return False
    import anyio

    if handover is None:
        anyio.run(_run_stdio, build(None), wire, source)
    else:
        assert source is not None
        anyio.run(_run_stdio, build(True if handover.bundles_seen else None), wire, handover.source(source),
                  handover.suppressed_id)
    return True


def serve_stdio(*, planning: bool | None = None, exit_process: bool = True) -> None:
    """Serve MCP over stdin/stdout until the client closes stdin.

    Args:
        planning: list the planning tools too; None reads ``ANVIL_MCP_PLANNING``.
        exit_process: when the session ends cleanly, flush and leave with ``os._exit(0)``,
            skipping interpreter teardown (a few hundred ms of garbage collection over the SDK's
            objects). Pass False to return instead.

    Raises:
        UsageError: ``stdio_unavailable`` when standard input or output is closed.
        OSError: stdout cannot be set aside for the protocol.
        ImportError: the MCP SDK is not installed.
    """
    if sys.stdin is None or sys.stdout is None:
        raise UsageError("the stdio server needs open standard input and output: start it from an MCP client, "
                         "or serve HTTP with --http", code="stdio_unavailable")
    lean = lean_requested(os.environ)
    os.environ.pop(LEAN_ENV, None)  # the request is this process's, not its calls' children's
    wire = _divert_stdout()
    _configure_logging()
    _exit_on_interrupt()
    run_session(wire, _divert_stdin() if lean else None, planning=planning, lean=lean,
                build=lambda bundles: _build(planning) if bundles is None else _build(planning, bundles=bundles))
    if exit_process:
        sys.stderr.flush()
        os._exit(0)


def _exit_on_interrupt() -> None:
    """Make the first Ctrl-C end the stdio server at once with exit 130.

    Left to the event loop, a KeyboardInterrupt waits for the thread that reads stdin, which in a
    terminal never returns: the server ignored Ctrl-C. Ending the process is safe: a write in flight
    is a transaction the next open rolls back, as after any kill. An ignored SIGINT (a background
    job) stays ignored.
    """
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return

    def interrupted(signum: int, frame: object) -> None:
        sys.stderr.write("anvil: error: interrupted [interrupted]\n")
        sys.stderr.flush()
        os._exit(130)

    signal.signal(signal.SIGINT, interrupted)


BOARD_STREAMS_ENV = "ANVIL_BOARD_MAX_STREAMS"


def board_streams(env: Mapping[str, str]) -> int:
    """How many live board connections one server holds at once: ``ANVIL_BOARD_MAX_STREAMS`` (default 32).

    Raises:
        UsageError: the variable is not a whole number from 1 to 10000.
    """
    from anvil.mcp.board import MAX_STREAMS

    text = env.get(BOARD_STREAMS_ENV, "").strip()
    if not text:
        return MAX_STREAMS
    if not text.isdigit() or not 1 <= int(text) <= 10_000:
        raise UsageError(f"{BOARD_STREAMS_ENV} must be a whole number from 1 to 10000", code="usage")
    return int(text)


def serve_http(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token_env: str | None = None,
    *,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    planning: bool | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    legacy_sse: bool = False,
    env: Mapping[str, str] | None = None,
    limits: HttpLimits | None = None,
) -> None:
    """Serve MCP over Streamable HTTP at ``http://host:port/mcp`` until interrupted.

    Args:
        host: the address to bind; anything but loopback requires ``token_env``.
        port: the TCP port.
        token_env: the NAME of the environment variable holding the bearer token.
        allowed_hosts: extra Host header values to accept (a public name behind a proxy).
        allowed_origins: extra Origin header values to accept.
        planning: list the planning tools too; None reads ``ANVIL_MCP_PLANNING``.
        max_body_bytes: the request body limit (larger bodies get 413).
        legacy_sse: also serve the legacy SSE transport at ``/sse`` (stateful; single replica).
        env: where to read the token variable (default: the process environment).
        limits: header, body and keep-alive timeouts and the connection cap (see ``http_limits``).

    Raises:
        UsageError: a non-loopback host without a token (shared or per-agent), or a named token
            variable that is unset.
        AnvilError: the served project's state cannot be read.
    """
    from anvil.ops.access import tokens_in_use

    # Tool calls serve the project this process's environment and directory select; so does the gate.
    state_env, state_cwd = os.environ, os.getcwd()
    board_streams(state_env)  # refuse a bad setting before anything starts
    per_agent = tokens_in_use(state_env, state_cwd)
    token = read_token(host, token_env, os.environ if env is None else env, per_agent=per_agent)
    listener = _listen(host, port)
    port = listener.getsockname()[1]
    _configure_logging()
    server = _build(planning, ("uvicorn",))

    import uvicorn

    from anvil.mcp.http_app import build_http_app
    from anvil.mcp.http_limits import HttpLimits, guarded_protocol

    limits = limits or HttpLimits()

    app = build_http_app(server, host=host, token=token, allowed_hosts=allowed_hosts,
                         allowed_origins=allowed_origins, max_body_bytes=max_body_bytes, legacy_sse=legacy_sse,
                         state_env=state_env, state_cwd=state_cwd,
                         board_options={"max_streams": board_streams(state_env)}, tokens_issued=per_agent)
    del token
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            server_header=False, timeout_graceful_shutdown=5, http=guarded_protocol(limits),
                            timeout_keep_alive=limits.keep_alive_timeout)  # type: ignore[arg-type]
    shown_host = f"[{host}]" if ":" in host else host
    auth = ("per-agent tokens" if per_agent else "bearer token required" if token_env
            else "no authentication (loopback only; per-agent tokens once issued)")
    print(f"anvil MCP server listening on http://{shown_host}:{port}{MCP_PATH} ({auth}); team board at "
          f"http://{shown_host}:{port}/board{_state_shown(state_env)}", file=sys.stderr, flush=True)
    uvicorn.Server(config).run(sockets=[listener])


def _state_shown(env: Mapping[str, str]) -> str:
    """Where the state lives, when it is a PostgreSQL database (shown without its password)."""
    from anvil.engine.storage.paths import database_url
    from anvil.engine.storage.postgres import display_database_url

    url = database_url(env)
    return f"; state in PostgreSQL at {display_database_url(url)}" if url else ""


def _listen(host: str, port: int) -> socket.socket:
    """Bind before announcing anything, so a busy port is a clean usage error, not a late crash.

    Raises:
        UsageError: the address cannot be bound (in use, not local, no permission).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        listener.listen(128)
    except OSError as exc:
        listener.close()
        raise UsageError(f"cannot listen on {host}:{port} ({exc.strerror or exc})", code="address_unavailable") \
            from None
    return listener
