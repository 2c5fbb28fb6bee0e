"""Connection exhaustion: one client with no token holding idle sockets cannot take the server from others.

The attacker connects from 127.0.0.2 (the loopback range has many addresses), the honest client from
127.0.0.1; both reach a real server process on 127.0.0.1. Every loop is bounded in count, every
socket has a timeout.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

from tests.mcp.support import ServerProcess
from tests.mcp.test_http_limits import request

ATTACKER = "127.0.0.2"


def _open(port: int, source: str) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=15, source_address=(source, 0))


def _reply(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (bounded by the socket timeout)."""
    reply = b""
    while chunk := sock.recv(65536):
        reply += chunk
    return reply


def _answered(port: int) -> bytes:
    with _open(port, "127.0.0.1") as sock:
        sock.sendall(request(port))
        return sock.recv(12)


def test_one_address_holding_idle_sockets_leaves_room_for_everyone_else(
        http_server_process: Callable[..., ServerProcess]) -> None:
    server = http_server_process("--max-connections", "8", "--max-client-connections", "3", "--header-timeout", "30")
    held: list[socket.socket] = []
    try:
        for _ in range(3):
            held.append(_open(server.port, ATTACKER))
        refused = []
        for _ in range(10):  # more than the whole server cap, reopened as they are closed
            with _open(server.port, ATTACKER) as extra:
                refused.append(_reply(extra))
        assert all(r.startswith(b"HTTP/1.1 503") and b"from your address" in r for r in refused), refused[:1]
        assert [_answered(server.port) for _ in range(5)] == [b"HTTP/1.1 200"] * 5
    finally:
        for sock in held:
            sock.close()
    for _ in range(50):  # the address gets its room back once the server has seen its sockets close
        with _open(server.port, ATTACKER) as sock:
            sock.sendall(request(server.port))
            status = sock.recv(12)
        if status != b"HTTP/1.1 503":
            break
    assert status == b"HTTP/1.1 200"
