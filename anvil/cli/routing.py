"""Per-call routing: run directly, or as an MCP client of a stdio, HTTP or SSE server.

One rule, used by every command: the ``--mcp`` flag wins over ``ANVIL_MCP_TARGET``; ``direct``,
``off``, ``none`` or empty mean direct; a bare ``--mcp`` means ``stdio``. The bearer token is read
only from the environment variable *named* by ``--mcp-token-env`` (wins) or
``ANVIL_MCP_TOKEN_ENV``, at connect time; its value never passes through here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from anvil.engine.errors import UsageError

DIRECT_WORDS = frozenset({"", "direct", "off", "none"})
STDIO_WORDS = frozenset({"stdio", "local"})
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class Route:
    """Where a call runs. ``kind`` is direct, stdio, http or sse."""

    kind: str
    url: str | None = None
    token_env: str | None = None

    @property
    def direct(self) -> bool:
        return self.kind == "direct"


def safe_display(url: str) -> str:
    """``url`` without userinfo, query or fragment (what errors may show)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<unparseable URL>"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _check_url(url: str, shown_as: str) -> None:
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError:
        raise UsageError(f"invalid MCP target URL {shown_as}", code="invalid_target") from None
    if parts.scheme not in ("http", "https"):
        raise UsageError("MCP target must be stdio, an http(s):// URL or sse:<url>", code="invalid_target")
    if "@" in parts.netloc:
        raise UsageError("MCP target URLs must not carry credentials; pass a token with --mcp-token-env NAME",
                         code="credentials_in_url")
    if not parts.hostname:
        raise UsageError(f"MCP target URL {shown_as} has no host", code="invalid_target")


def resolve_route(flag: str | None, token_env_flag: str | None, env: Mapping[str, str]) -> Route:
    """Decide where this call runs.

    Args:
        flag: the ``--mcp`` value (``"stdio"`` for a bare ``--mcp``), None when not given.
        token_env_flag: the ``--mcp-token-env`` value, None when not given.
        env: the process environment.

    Raises:
        UsageError: unknown scheme, credentials in the URL, a bad variable name, or a token
            variable named on the command line for a target that is not on the network.
    """
    raw = flag if flag is not None else env.get("ANVIL_MCP_TARGET", "")
    target = raw.strip()
    lowered = target.lower()
    token_env = token_env_flag if token_env_flag is not None else (env.get("ANVIL_MCP_TOKEN_ENV", "").strip() or None)
    if token_env is not None and not ENV_NAME.match(token_env):
        raise UsageError("--mcp-token-env takes an environment variable NAME (letters, digits, _)",
                         code="invalid_token_env")
    if lowered in DIRECT_WORDS or lowered in STDIO_WORDS:
        if token_env_flag is not None:
            raise UsageError("--mcp-token-env needs a network MCP target (an http(s):// or sse: URL)",
                             code="token_without_network_target")
        return Route("direct") if lowered in DIRECT_WORDS else Route("stdio")
    if lowered.startswith("sse:"):
        url = target[4:]
        _check_url(url, safe_display(url))
        return Route("sse", url, token_env)
    if lowered.startswith(("http://", "https://")):
        _check_url(target, safe_display(target))
        return Route("http", target, token_env)
    raise UsageError("MCP target must be stdio, an http(s):// URL or sse:<url>", code="invalid_target")
