"""One HTTP/1.1 request over a plain socket: the CLI's client for ``http://`` MCP targets.

``urllib.request`` brings ``http.client``, the ``email`` package (to parse headers) and ``ssl`` with
it, about a fifth of a CLI call's start-up, none of which a plain ``http://`` request to a local or
private server needs. This module speaks just what :mod:`anvil.mcp.http_client` uses: one request
(``Connection: close``), the status line and headers, and a body by ``Content-Length``, chunked, or
until the server closes, read whole or line by line (server-sent events). Redirects are never
followed (the caller treats a 3xx as an error). ``https://`` keeps going through ``urllib``.

Every failure is an :class:`OSError` (a malformed reply is :class:`PlainHttpError`), a timeout a
:class:`TimeoutError`, as the caller expects of a socket.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import IO
from urllib.parse import urlsplit

MAX_HEAD_LINE = 65536
MAX_HEADERS = 100


class PlainHttpError(OSError):
    """The peer's reply is not HTTP/1.x, or it ended early."""


class Headers:
    """Response headers by lower-cased name; a repeated one reads as its first value, as ``urllib``'s do."""

    def __init__(self, pairs: list[tuple[str, str]]):
        self._values: dict[str, str] = {}
        for name, value in pairs:
            self._values.setdefault(name.lower(), value)

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._values.get(name.lower(), default)


class PlainResponse:
    """The reply: ``status`` (``code`` too), ``headers``, ``read(n)``, ``readline(n)``, ``close()``."""

    def __init__(self, sock: socket.socket, reader: IO[bytes], status: int, headers: Headers, *, head: bool):
        self._sock, self._reader = sock, reader
        self.status = self.code = status
        self.headers = headers
        self._buffer = b""
        # framing as http.client decides it: only an exact "chunked" is chunked, and a Content-Length
        # that is not a non-negative integer is ignored (the body runs to the close)
        self._chunked = (headers.get("transfer-encoding") or "").lower() == "chunked"
        length = headers.get("content-length")
        self._left: int | None = None
        if head or status in (204, 304) or 100 <= status < 200:
            self._left = 0
        elif not self._chunked and length:
            try:
                self._left = int(length)
            except ValueError:
                self._left = None
            if self._left is not None and self._left < 0:
                self._left = None
        self._ended = False

    def _more(self) -> bytes:
        """The next piece of the body; empty at its end."""
        if self._ended:
            return b""
        if self._chunked:
            line = self._reader.readline(MAX_HEAD_LINE)
            if not line.endswith(b"\n"):
                raise PlainHttpError("the reply ended inside a chunk header")
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise PlainHttpError("the reply has an invalid chunk size") from None
            if size == 0:
                for _ in range(MAX_HEADERS):  # trailers, up to the empty line
                    if self._reader.readline(MAX_HEAD_LINE).strip() == b"":
                        break
                self._ended = True
                return b""
            data = self._reader.read(size)
            if len(data) < size or not self._reader.readline(MAX_HEAD_LINE).endswith(b"\n"):
                raise PlainHttpError("the reply ended inside a chunk")
            return data
        if self._left is not None:
            if self._left == 0:
                self._ended = True
                return b""
            data = self._reader.read1(min(self._left, 65536))  # type: ignore[attr-defined]
            if not data:
                raise PlainHttpError("the reply ended before its Content-Length")
            self._left -= len(data)
            return bytes(data)
        data = self._reader.read1(65536)  # type: ignore[attr-defined]
        if not data:
            self._ended = True
        return bytes(data)

    def read(self, limit: int = -1) -> bytes:
        """Up to ``limit`` bytes of the body (everything when negative)."""
        while limit < 0 or len(self._buffer) < limit:
            piece = self._more()
            if not piece:
                break
            self._buffer += piece
        cut = len(self._buffer) if limit < 0 else limit
        out, self._buffer = self._buffer[:cut], self._buffer[cut:]
        return out

    def readline(self, limit: int = -1) -> bytes:
        """One line of the body with its ``\\n`` (at most ``limit`` bytes); empty at the end."""
        while b"\n" not in self._buffer and (limit < 0 or len(self._buffer) < limit):
            piece = self._more()
            if not piece:
                break
            self._buffer += piece
        end = self._buffer.find(b"\n")
        cut = end + 1 if end >= 0 else len(self._buffer)
        if limit >= 0:
            cut = min(cut, limit)
        out, self._buffer = self._buffer[:cut], self._buffer[cut:]
        return out

    def close(self) -> None:
        try:
            self._reader.close()
        finally:
            self._sock.close()


def request(url: str, method: str, headers: Mapping[str, str], body: bytes | None, timeout: float) -> PlainResponse:
    """Send one request to the ``http://`` ``url`` and read the reply's head.

    Raises:
        ValueError: ``url`` is not an ``http://`` URL with a host.
        OSError: the connection failed or the reply is not HTTP (:class:`PlainHttpError`).
        TimeoutError: no answer within ``timeout`` seconds (per socket operation).
    """
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError("not an http:// URL")
    port = parts.port or 80
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.netloc.rpartition("@")[2]
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Connection: close", "Accept-Encoding: identity"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    sock = socket.create_connection((parts.hostname, port), timeout=timeout)
    reader: IO[bytes] | None = None
    try:
        sock.sendall(head + (body or b""))
        reader = sock.makefile("rb")
        status, pairs = _read_head(reader)
        return PlainResponse(sock, reader, status, Headers(pairs), head=method == "HEAD")
    except BaseException:
        if reader is not None:
            reader.close()  # the socket closes only once its file is closed too
        sock.close()
        raise


def _read_head(reader: IO[bytes]) -> tuple[int, list[tuple[str, str]]]:
    while True:  # interim 1xx replies come before the real one
        line = reader.readline(MAX_HEAD_LINE)
        parts = line.decode("latin-1").split(None, 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise PlainHttpError("the peer did not answer with HTTP/1.x")
        status = int(parts[1])
        pairs: list[tuple[str, str]] = []
        for _ in range(MAX_HEADERS + 1):
            raw = reader.readline(MAX_HEAD_LINE)
            if not raw.endswith(b"\n"):
                raise PlainHttpError("the reply's head ended early")
            text = raw.decode("latin-1").rstrip("\r\n")
            if not text:
                break
            name, sep, value = text.partition(":")
            if not sep:
                raise PlainHttpError("the reply has a malformed header")
            pairs.append((name.strip(), value.lstrip(" \t")))  # trailing blanks kept, as urllib keeps them
        else:
            raise PlainHttpError("the reply has too many headers")
        if status != 100 and not 102 <= status < 200:
            return status, pairs
