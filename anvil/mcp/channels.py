"""The two channels the CLI's MCP client opens: a spawned server process and an HTTP request.

By default :mod:`anvil.mcp.stdio_client` spawns with :class:`subprocess.Popen` and
:mod:`anvil.mcp.http_client` sends with :mod:`urllib.request`. Tests swap both for the length of a
``with using(Channels(...))`` block, so the CLI's own client code (argv parsing, routing, the
JSON-RPC exchange, error mapping, output) runs against an anvil server living in the test's process:
the stdio server on a pipe pair, the HTTP app called directly as an ASGI application.

Only Python code can install channels: no argument, option or environment variable reaches this,
and outside such a block the real process and network are always used. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Channels:
    """Replacements for the client's two ways out.

    Attributes:
        spawn: called exactly like ``subprocess.Popen(command, stdin=, stdout=, stderr=, cwd=, env=)``;
            returns an object with ``stdin`` and ``stdout`` (binary streams), ``wait(timeout)`` and
            ``kill()``.
        open_http: called like ``OpenerDirector.open(request, timeout=)`` with a
            ``urllib.request.Request``; returns a response with ``status``, ``headers``,
            ``read(n)``, ``readline(n)`` and ``close()`` (any status: redirects are not followed).
    """

    spawn: Callable[..., Any]
    open_http: Callable[..., Any]


_installed: ContextVar[Channels | None] = ContextVar("anvil_mcp_channels", default=None)


def installed() -> Channels | None:
    """The channels installed by :func:`using`, or None for the real process and network."""
    return _installed.get()


@contextmanager
def using(channels: Channels) -> Iterator[Channels]:
    """Route the CLI's MCP client through ``channels`` inside the block (tests only)."""
    token = _installed.set(channels)
    try:
        yield channels
    finally:
        _installed.reset(token)
