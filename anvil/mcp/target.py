"""Where an MCP call goes: this install's stdio server, a Streamable HTTP URL or a legacy SSE URL.

Standard library only: the CLI builds a target on its hot path, which must not pay for the SDK.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from anvil.engine.errors import UsageError

TargetKind = Literal["stdio", "http", "sse"]


def display_url(url: str) -> str:
    """``url`` reduced to scheme, host, port and path: no userinfo, query or fragment.

    This is the only form of a target URL that may appear in a message, a log line or an error.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<unparseable URL>"
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    return f"{parts.scheme}://{netloc}{parts.path}"


@dataclass(frozen=True, slots=True)
class McpTarget:
    """An MCP server to call.

    Attributes:
        kind: ``stdio`` (spawn ``python -m anvil.mcp``), ``http`` (Streamable HTTP) or ``sse``.
        url: the endpoint for ``http``/``sse``; None for ``stdio``.
        token_env: the NAME of the environment variable holding the bearer token, if any.
    """

    kind: TargetKind
    url: str | None = None
    token_env: str | None = None

    def __post_init__(self) -> None:
        """Check the target is coherent.

        Raises:
            UsageError: a network target without an http(s) URL, a URL carrying credentials,
                or a stdio target with a URL.
        """
        if self.kind == "stdio":
            if self.url is not None:
                raise UsageError("a stdio MCP target takes no URL", code="invalid_target")
            return
        if self.kind not in ("http", "sse") or not self.url:
            raise UsageError("an MCP target is stdio, an http(s):// URL or sse:<url>", code="invalid_target")
        try:
            parts = urlsplit(self.url)
            _ = parts.port
        except ValueError:
            raise UsageError("the MCP target URL is not valid", code="invalid_target") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError("an MCP target is stdio, an http(s):// URL or sse:<url>", code="invalid_target")
        if "@" in parts.netloc:
            raise UsageError("MCP target URLs must not carry credentials; pass a token with --mcp-token-env NAME",
                             code="credentials_in_url")

    def display(self) -> str:
        """A printable name for the target that never shows credentials, query or fragment."""
        if self.kind == "stdio" or self.url is None:
            return "stdio (python -m anvil.mcp)"
        shown = display_url(self.url)
        return f"sse:{shown}" if self.kind == "sse" else shown

    def __repr__(self) -> str:
        token = f", token_env={self.token_env!r}" if self.token_env else ""
        return f"McpTarget({self.kind!r}, {self.display()!r}{token})"

    __str__ = display
