"""Connection limits of the HTTP server: slow or idle clients cannot hold it open.

uvicorn bounds only the idle time between two requests on a kept-alive connection. A client that
connects and sends nothing, trickles its headers, or stops half-way through a body would hold
its connection (and a file descriptor) forever, authenticated or not. The protocol class built
here adds, per connection:

- a header deadline: the request line and headers must arrive within ``header_timeout`` seconds
  of the connection opening (or of the first byte of the next request on a kept-alive one);
- a body deadline: the body must arrive within ``body_timeout`` seconds of the headers;
- a connection cap: past ``max_connections`` open connections a new one is answered ``503`` and
  closed at once;
- a per-client cap, checked before anything is read (so before authentication): past
  ``max_client_connections`` open connections from one peer address, a new one from that address
  is answered ``503`` and closed, so one client (with or without a token) holding idle sockets
  cannot take the whole server cap from the others. Behind a proxy every client shares the proxy's
  address: raise it there (or let the proxy limit its clients);

and passes ``keep_alive_timeout`` to uvicorn for the idle time between requests. A connection
that misses a deadline is closed; an application waiting for the body sees a disconnect.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from anvil.engine.errors import UsageError

DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_BODY_TIMEOUT = 30.0
DEFAULT_KEEP_ALIVE_TIMEOUT = 5.0
DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_MAX_CLIENT_CONNECTIONS = 64

ENV_NAMES = {
    "header_timeout": "ANVIL_HTTP_HEADER_TIMEOUT",
    "body_timeout": "ANVIL_HTTP_BODY_TIMEOUT",
    "keep_alive_timeout": "ANVIL_HTTP_KEEP_ALIVE_TIMEOUT",
    "max_connections": "ANVIL_HTTP_MAX_CONNECTIONS",
    "max_client_connections": "ANVIL_HTTP_MAX_CLIENT_CONNECTIONS",
}
_COUNTS = ("max_connections", "max_client_connections")
FLAGS = {name: "--" + name.replace("_", "-") for name in ENV_NAMES}
BUSY_RESPONSE = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 22\r\n"
                 b"connection: close\r\n\r\ntoo many connections\r\n")
CLIENT_BUSY_RESPONSE = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 40\r\n"
                        b"retry-after: 1\r\nconnection: close\r\n\r\ntoo many connections from your address\r\n")


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """How long a client may take and how many may be connected at once."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    keep_alive_timeout: float = DEFAULT_KEEP_ALIVE_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_client_connections: int = DEFAULT_MAX_CLIENT_CONNECTIONS


def _number(name: str, raw: Any, source: str) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value <= 0 or (name in _COUNTS and value != int(value)):
        kind = "a whole number above 0" if name in _COUNTS else "a number of seconds above 0"
        raise UsageError(f"{source} must be {kind}", code="usage")
    return value


def resolve_limits(given: Mapping[str, Any], env: Mapping[str, str]) -> HttpLimits:
    """The limits from command-line values (``None``: not given), else the environment, else defaults.

    Raises:
        UsageError: a value is not a positive number (a positive whole number for the cap).
    """
    values: dict[str, Any] = {}
    for name, variable in ENV_NAMES.items():
        raw = given.get(name)
        source = FLAGS[name]
        if raw is None and env.get(variable, "").strip():
            raw, source = env[variable].strip(), variable
        if raw is not None:
            number = _number(name, raw, source)
            values[name] = int(number) if name in _COUNTS else number
    return HttpLimits(**values)


def guarded_protocol(limits: HttpLimits) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with the header and body deadlines and the connection caps of ``limits``."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    per_peer: dict[str, int] = {}  # open connections by peer address (all on the server's one event loop)

    class GuardedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._deadline: asyncio.TimerHandle | None = None
            self._phase: str | None = None
            self._peer: str | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            peer = transport.get_extra_info("peername")
            self._peer = str(peer[0]) if isinstance(peer, tuple) and peer else None
            if self._peer is not None:
                per_peer[self._peer] = per_peer.get(self._peer, 0) + 1
                if per_peer[self._peer] > limits.max_client_connections:
                    transport.write(CLIENT_BUSY_RESPONSE)
                    transport.close()
                    return
            if len(self.connections) > limits.max_connections:
                transport.write(BUSY_RESPONSE)
                transport.close()
                return
            self._arm("headers", limits.header_timeout)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            state = self.conn.their_state
            if self.transport.is_closing():
                self._disarm()
            elif state is h11.IDLE:
                self._arm("headers", limits.header_timeout)
            elif state is h11.SEND_BODY:
                self._arm("body", limits.body_timeout)
            else:
                self._disarm()  # the request is complete: the application has it

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._peer is not None:
                left = per_peer.get(self._peer, 1) - 1
                if left > 0:
                    per_peer[self._peer] = left
                else:
                    per_peer.pop(self._peer, None)
                self._peer = None
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            if self._phase == "headers":
                self._disarm()
            super().on_response_complete()

        def _arm(self, phase: str, seconds: float) -> None:
            if self._phase == phase:
                return  # the deadline runs from the start of the phase, not from the last byte
            self._disarm()
            self._phase = phase
            self._deadline = self.loop.call_later(seconds, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline, self._phase = None, None

        def _expire(self) -> None:
            self._deadline, self._phase = None, None
            if not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol
