"""The plain-socket HTTP client of ``http://`` targets: bodies by length, chunked or to the close, line by
line for server-sent events, malformed replies as OSError, and no TLS or mail machinery imported."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

import pytest

from anvil.mcp.plainhttp import PlainHttpError, request


def serve_once(answer: bytes) -> tuple[int, list[bytes], threading.Thread, socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    received: list[bytes] = []

    def run() -> None:
        conn, _ = server.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            received.append(data)
            conn.sendall(answer)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return server.getsockname()[1], received, thread, server


def exchange(answer: bytes, method: str = "POST", body: bytes | None = b"{}") -> tuple[object, list[bytes]]:
    port, received, thread, server = serve_once(answer)
    try:
        response = request(f"http://127.0.0.1:{port}/mcp?x=1", method, {"Accept": "application/json"}, body, 10)
        thread.join(timeout=10)
        return response, received
    finally:
        server.close()


def test_a_reply_with_a_length_is_read_whole_and_the_request_names_host_and_length() -> None:
    response, received = exchange(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n"
                                  b"Mcp-Session-Id: s1\r\n\r\n{\"a\":1}")
    try:
        assert (response.status, response.headers.get("content-type"), response.headers.get("MCP-SESSION-ID")) == \
            (200, "application/json", "s1")
        assert response.read(1 << 20) == b'{"a":1}' and response.read(10) == b""
    finally:
        response.close()
    head = received[0].decode()
    assert head.startswith("POST /mcp?x=1 HTTP/1.1\r\n")
    assert "\r\nHost: 127.0.0.1:" in head and "\r\nContent-Length: 2\r\n" in head
    assert "\r\nAccept: application/json\r\n" in head


def test_a_chunked_event_stream_is_read_line_by_line_across_chunks() -> None:
    body = b"data: {\"id\"" + b":1}\n\n"
    chunks = b"".join(f"{len(part):x}\r\n".encode() + part + b"\r\n" for part in (body[:7], body[7:])) + b"0\r\n\r\n"
    response, _ = exchange(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n"
                           + chunks)
    try:
        assert response.readline(1 << 20) == b'data: {"id":1}\n'
        assert response.readline(1 << 20) == b"\n"
        assert response.readline(1 << 20) == b""
    finally:
        response.close()


def test_a_body_without_length_runs_to_the_close_and_an_error_status_is_returned_not_raised() -> None:
    response, _ = exchange(b"HTTP/1.1 404 Not Found\r\nWWW-Authenticate: Bearer\r\n\r\nno such thing", "DELETE", None)
    try:
        assert response.status == 404 and response.read(-1) == b"no such thing"
    finally:
        response.close()


@pytest.mark.parametrize("answer", [b"SSH-2.0-OpenSSH\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
                                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"])
def test_a_reply_that_is_not_http_or_ends_early_is_an_os_error(answer: bytes) -> None:
    with pytest.raises(OSError) as info:
        response, _ = exchange(answer)
        try:
            response.read(1 << 20)
        finally:
            response.close()
    assert isinstance(info.value, PlainHttpError)


def test_the_http_route_imports_no_tls_mail_or_http_client_machinery() -> None:
    code = ("import sys; from anvil.mcp import client; from anvil.mcp.target import McpTarget\n"
            "try:\n client.call_tool(McpTarget(kind='http', url='http://127.0.0.1:9/mcp', token_env=None), "
            "'get_project_status', {}, env={}, cwd='.', timeout=2)\n"
            "except Exception as exc: print(type(exc).__name__)\n"
            "print(sorted(m for m in ('ssl', 'email', 'http.client', 'urllib.request') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.splitlines()[-2:] == ["TargetUnavailable", "[]"], out.stderr
