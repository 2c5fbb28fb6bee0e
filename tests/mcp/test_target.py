"""MCP targets: coherent kinds and URLs, and a display form that never shows credentials."""

from __future__ import annotations

from typing import Any

import pytest

from anvil.engine.errors import UsageError
from anvil.mcp.target import McpTarget, display_url

SECRET_URL = "http://127.0.0.1:9/mcp?api_key=QUERYSECRET#FRAGSECRET"


def test_a_target_displays_without_userinfo_query_or_fragment() -> None:
    target = McpTarget("http", SECRET_URL, "SOME_TOKEN")
    assert target.display() == "http://127.0.0.1:9/mcp"
    assert "SECRET" not in repr(target) and "SECRET" not in str(target)
    assert McpTarget("sse", "https://h.example:8443/sse?x=1").display() == "sse:https://h.example:8443/sse"
    assert McpTarget("stdio").display().startswith("stdio")


@pytest.mark.parametrize("url", ["http://user:S3CRETPW@h.example/mcp", "https://S3CRETPW@h.example/mcp"])
def test_a_target_url_with_credentials_is_refused_without_echoing_them(url: str) -> None:
    with pytest.raises(UsageError) as caught:
        McpTarget("http", url)
    assert caught.value.code == "credentials_in_url" and "S3CRETPW" not in caught.value.message


@pytest.mark.parametrize(("kind", "url"), [("http", "ftp://h/mcp"), ("http", None), ("sse", "h.example/sse"),
                                           ("stdio", "http://h/mcp")])
def test_an_incoherent_target_is_a_usage_error(kind: Any, url: str | None) -> None:
    with pytest.raises(UsageError):
        McpTarget(kind, url)


def test_displayed_targets_drop_userinfo_query_and_fragment() -> None:
    assert display_url("https://u:p@host:8443/mcp?token=abc#frag") == "https://host:8443/mcp"
