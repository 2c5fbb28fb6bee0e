"""The HTTP server closes slow and idle connections, caps how many it holds, and keeps reads
answering while writes queue on the writer lock; the stdio server answers what it read before EOF.

Real server processes on 127.0.0.1 and raw sockets; every wait is bounded by a socket timeout.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from anvil.cli.routing import resolve_route
from anvil.engine.errors import AnvilError, UsageError
from anvil.engine.storage.locking import LOCK_NAME
from anvil.engine.storage.paths import resolve_state
from anvil.mcp.client import call_tool
from anvil.mcp.http_limits import HttpLimits, resolve_limits
from tests.conftest import anvil_subprocess_env
from tests.mcp.support import TOKEN, ServerProcess
from tests.ops.support import scenario

DEADLINE = 1.0  # every deadline of the FAST server, in seconds
FAST = ("--header-timeout", str(DEADLINE), "--body-timeout", str(DEADLINE), "--keep-alive-timeout", str(DEADLINE))
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()


def request(port: int, body: bytes = INITIALIZE, *, length: int | None = None) -> bytes:
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\n\r\n")
    return head.encode() + body


@contextmanager
def connection(port: int) -> Iterator[socket.socket]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=15)
    try:
        yield sock
    finally:
        sock.close()


def closed_by_server(sock: socket.socket) -> bytes:
    """Read until the server closes; returns what it sent. A server that keeps the connection open
    past the socket's timeout fails the test (``TimeoutError``)."""
    reply = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return reply
        if not chunk:
            return reply
        reply += chunk


def idle(port: int) -> socket.socket:
    # Time enough for the server to act on its deadline on any machine; past it the server failed to.
    return socket.create_connection(("127.0.0.1", port), timeout=30 * DEADLINE)


def trickled_headers(port: int) -> socket.socket:
    sock = idle(port)
    try:
        for byte in request(port):  # one byte every 50 ms: each in time, the whole never (15 s)
            sock.sendall(bytes([byte]))
            time.sleep(0.05)  # the slow client itself, not a wait for the server
    except OSError:
        pass  # the server closed the connection under the client
    return sock


def half_a_body(port: int) -> socket.socket:
    sock = idle(port)
    sock.sendall(request(port, INITIALIZE[:10], length=len(INITIALIZE)))
    return sock


def kept_alive_after_a_request(port: int) -> socket.socket:
    sock = idle(port)
    sock.sendall(request(port))
    reply = b""
    while b"\r\n\r\n" not in reply:
        reply += sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 200"), reply[:80]
    return sock


def unauthenticated_slow_body(port: int) -> socket.socket:
    sock = idle(port)
    sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 500\r\n\r\n{")
    return sock


SLOW_CLIENTS = [idle, trickled_headers, half_a_body, kept_alive_after_a_request, unauthenticated_slow_body]


def test_slow_and_idle_connections_are_closed_at_their_deadlines(
        http_server_process: Callable[..., ServerProcess]) -> None:
    """Header, body and keep-alive deadlines of 1 s: every kind of slow client is cut off by the server
    (all of them at once, each on its own connection), never before its deadline and never with an
    answer to a request it did not finish. No upper wall-clock figure: a loaded machine only makes
    the server late, and a server that never closes fails on the socket's timeout."""
    server = http_server_process(*FAST)

    def cut_off(client: Callable[[int], socket.socket]) -> tuple[float, bytes]:
        started = time.monotonic()
        sock = client(server.port)
        try:
            reply = closed_by_server(sock)
        finally:
            sock.close()
        return time.monotonic() - started, reply

    with ThreadPoolExecutor(max_workers=len(SLOW_CLIENTS)) as pool:
        seen = dict(zip([c.__name__ for c in SLOW_CLIENTS], pool.map(cut_off, SLOW_CLIENTS), strict=True))
    assert all(took >= DEADLINE for took, _ in seen.values()), seen  # none closed early
    unfinished = ("idle", "trickled_headers", "half_a_body", "unauthenticated_slow_body")
    assert all(not seen[name][1].startswith(b"HTTP/1.1 200") for name in unfinished), seen


def test_connections_past_the_cap_are_answered_503_and_closed(
        http_server_process: Callable[..., ServerProcess]) -> None:
    server = http_server_process("--max-connections", "3", "--header-timeout", "20")
    held = [socket.create_connection(("127.0.0.1", server.port), timeout=15) for _ in range(3)]
    try:  # accepted in order, so the fourth finds three open
        with connection(server.port) as extra:
            reply = b""
            while True:
                chunk = extra.recv(65536)
                if not chunk:
                    break
                reply += chunk
        assert reply.startswith(b"HTTP/1.1 503"), reply[:80]
    finally:
        for sock in held:
            sock.close()
    with connection(server.port) as sock:  # room again once they are gone
        sock.sendall(request(server.port))
        assert sock.recv(12).startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("args", [["--header-timeout", "0"], ["--body-timeout", "soon"], ["--max-connections", "2.5"],
                                  ["--max-client-connections", "0"],
                                  ["--keep-alive-timeout", "-1"]], ids=" ".join)
def test_a_bad_limit_is_a_usage_error(anvil_env: dict[str, str], args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "anvil.mcp", "--http", "--port", "0", *args],
                          env=anvil_subprocess_env(anvil_env), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and args[0] in proc.stderr, proc.stderr


def test_limits_come_from_flags_then_the_environment_then_defaults() -> None:
    assert resolve_limits({}, {}) == HttpLimits()
    assert HttpLimits().max_client_connections == 64
    assert resolve_limits({}, {"ANVIL_HTTP_MAX_CLIENT_CONNECTIONS": "5"}).max_client_connections == 5
    env = {"ANVIL_HTTP_HEADER_TIMEOUT": "3", "ANVIL_HTTP_MAX_CONNECTIONS": "9"}
    assert resolve_limits({"header_timeout": "2"}, env) == HttpLimits(header_timeout=2.0, max_connections=9)
    with pytest.raises(UsageError) as info:
        resolve_limits({}, {"ANVIL_HTTP_BODY_TIMEOUT": "0"})
    assert "ANVIL_HTTP_BODY_TIMEOUT" in info.value.message


def test_limit_options_without_http_are_refused(anvil_env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "anvil.mcp", "--max-connections", "5"],
                          env=anvil_subprocess_env(anvil_env), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "--max-connections" in proc.stderr


def blocked_waiters(lock: Any) -> int:
    inode = lock.stat().st_ino
    return sum(1 for line in Path("/proc/locks").read_text().splitlines()
               if "->" in line and line.split()[-3].endswith(f":{inode}"))


def test_reads_answer_while_writes_queue_on_a_held_writer_lock(
        anvil_env: dict[str, str], http_server_process: Callable[..., ServerProcess]) -> None:
    scenario(anvil_env, "ready")
    lock = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"]).state_dir / LOCK_NAME
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl,os,sys; fd=os.open(sys.argv[1], os.O_RDWR); "
                               "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
                               str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    env = {**anvil_env, "MCP_TEST_TOKEN": TOKEN}
    anvil_env["ANVIL_LOCK_TIMEOUT"] = "4"  # the server's environment
    try:
        server = http_server_process()
        target = resolve_route(server.url, "MCP_TEST_TOKEN", env)
        assert target is not None

        def write(n: int) -> str:
            try:
                call_tool(target, "claim_task", {"task_id": "T001", "actor": f"agent-{n}"}, env=env,
                          cwd=env["ANVIL_ROOT"], timeout=120)
                return "ok"
            except AnvilError as error:
                return error.code

        with ThreadPoolExecutor(max_workers=24) as pool:
            writes = [pool.submit(write, n) for n in range(20)]
            deadline = time.monotonic() + 30
            while blocked_waiters(lock) == 0:  # the writes have reached the server and queue on the lock
                assert time.monotonic() < deadline
                time.sleep(0.02)
            status = call_tool(target, "get_project_status", {}, env=env, cwd=env["ANVIL_ROOT"], timeout=30)
            # Answered while every write still waits on the lock (none reached its 4 s lock timeout).
            assert status["initialized"] and not any(w.done() for w in writes)
            assert holder.stdin is not None
            holder.stdin.close()
            outcomes = [w.result(timeout=120) for w in writes]
        assert outcomes.count("ok") == 1 and set(outcomes) <= {"ok", "already_claimed", "state_busy"}, outcomes
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        if not holder.stdin.closed:
            holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()


def test_stdio_answers_a_request_followed_at_once_by_end_of_input(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "initialized")
    messages = [
        json.loads(INITIALIZE),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_project_status", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_next_task", "arguments": {}}},
    ]
    stdin = "".join(json.dumps(m) + "\n" for m in messages)
    proc = subprocess.run([sys.executable, "-m", "anvil.mcp"], input=stdin, env=anvil_subprocess_env(anvil_env),
                          cwd=anvil_env["ANVIL_ROOT"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    answers: dict[Any, Any] = {}
    for line in proc.stdout.splitlines():
        document = json.loads(line)
        answers[document.get("id")] = document
    assert set(answers) >= {1, 2, 3}, proc.stdout
    assert answers[2]["result"]["structuredContent"]["initialized"] is True
