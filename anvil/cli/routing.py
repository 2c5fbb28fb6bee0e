"""Per-call routing: run directly, or as an MCP client of a stdio, HTTP or SSE server.

One rule, used by every command: the ``--mcp`` flag wins over ``ANVIL_MCP_TARGET``; ``direct``,
``off``, ``none`` or empty mean direct; a bare ``--mcp`` means ``stdio``. The bearer token is read
only from the environment variable *named* by ``--mcp-token-env`` (wins) or
``ANVIL_MCP_TOKEN_ENV``, at connect time; its value never passes through here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from anvil.engine.errors import UsageError
from anvil.mcp.target import McpTarget

DIRECT_WORDS = frozenset({"", "direct", "off", "none"})
STDIO_WORDS = frozenset({"stdio", "local"})
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def resolve_route(flag: str | None, token_env_flag: str | None, env: Mapping[str, str]) -> McpTarget | None:
    """Decide where this call runs: None for direct, else the MCP target.

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
        return None if lowered in DIRECT_WORDS else McpTarget("stdio")
    if lowered.startswith("sse:"):
        return McpTarget("sse", target[4:], token_env)
    if lowered.startswith(("http://", "https://")):
        return McpTarget("http", target, token_env)
    if flag is None:  # it came from the environment: say so, or the user hunts for a flag they never gave
        raise UsageError("ANVIL_MCP_TARGET is not an MCP target: set it to stdio, an http(s):// URL or sse:<url>, "
                         "or unset it to run directly", code="invalid_target")
    raise UsageError("MCP target must be stdio, an http(s):// URL or sse:<url>", code="invalid_target")
