"""The MCP logging capability: log messages sent to the client, at the level the client asked for.

A handshake-era client sets its level once with ``logging/setLevel``; the level is kept with its
connection (stdio keeps one connection for the whole session; stateless HTTP makes every request
a connection of its own, so there a level holds for nothing but that request). A 2026-07-28
client asks per request, in the request's ``_meta``. Until a client asks, nothing is sent: a log
line costs a model tokens, so it must be wanted.

What anvil logs to the client: one line per tool call, with the operation, the acting name and
the outcome (``ok`` or the stable error code), never arguments, messages or secrets.
"""

from __future__ import annotations

import logging
from typing import Any, get_args

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

logger = logging.getLogger("anvil.mcp.client_log")

LEVELS: tuple[str, ...] = get_args(types.LoggingLevel)
"""The protocol's levels, least severe first."""
LEVEL_META_KEY = "io.modelcontextprotocol/logLevel"
_STATE_KEY = "anvil.log_level"
LOGGER_NAME = "anvil"


def _connection_state(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any] | None:
    """The connection's scratch state (kept across the requests of one connection), if reachable."""
    state = getattr(getattr(ctx.session, "_connection", None), "state", None)
    return state if isinstance(state, dict) else None


async def set_level(ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
    """``logging/setLevel``: remember the client's level for its connection."""
    state = _connection_state(ctx)
    if state is not None:
        state[_STATE_KEY] = params.level
    return types.EmptyResult()


def requested_level(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The least severe level the client wants for this request, or None for no log messages."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        level = (ctx.meta or {}).get(LEVEL_META_KEY)
    else:
        state = _connection_state(ctx)
        level = state.get(_STATE_KEY) if state is not None else None
    return level if level in LEVELS else None


def wanted(ctx: ServerRequestContext[Any, Any], level: str) -> bool:
    """Whether the client asked for messages at ``level``."""
    floor = requested_level(ctx)
    return floor is not None and LEVELS.index(level) >= LEVELS.index(floor)


async def send(ctx: ServerRequestContext[Any, Any], level: types.LoggingLevel, data: Any) -> bool:
    """Send one log message about the current request, if the client wants that level.

    Delivery is best effort: a client that went away loses the message, the request goes on.

    Returns:
        Whether the message was handed to the transport.
    """
    if not wanted(ctx, level):
        return False
    note = types.LoggingMessageNotification(
        params=types.LoggingMessageNotificationParams(level=level, logger=LOGGER_NAME, data=data))
    try:
        await ctx.session.send_notification(note, related_request_id=ctx.request_id)
    except Exception as exc:  # best effort: never fail the request over a log line
        logger.debug("log message not delivered (%s)", type(exc).__name__)
        return False
    return True
