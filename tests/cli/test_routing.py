"""The routing rule: flag over environment, direct words, stdio words, URLs, refusals."""

from __future__ import annotations

import pytest

from anvil.cli.routing import resolve_route
from anvil.engine.errors import UsageError
from anvil.mcp.target import McpTarget


@pytest.mark.parametrize(
    ("flag", "env", "expected"),
    [
        (None, {}, None),
        (None, {"ANVIL_MCP_TARGET": "  Direct "}, None),
        (None, {"ANVIL_MCP_TARGET": "OFF"}, None),
        (None, {"ANVIL_MCP_TARGET": "none"}, None),
        (None, {"ANVIL_MCP_TARGET": ""}, None),
        ("stdio", {}, McpTarget("stdio")),
        ("LOCAL", {}, McpTarget("stdio")),
        ("direct", {"ANVIL_MCP_TARGET": "stdio"}, None),
        (None, {"ANVIL_MCP_TARGET": "stdio"}, McpTarget("stdio")),
        ("http://127.0.0.1:9/mcp", {}, McpTarget("http", "http://127.0.0.1:9/mcp")),
        ("https://anvil.example/mcp", {"ANVIL_MCP_TOKEN_ENV": "TOK"},
         McpTarget("http", "https://anvil.example/mcp", "TOK")),
        ("sse:https://anvil.example/sse", {}, McpTarget("sse", "https://anvil.example/sse")),
        (None, {"ANVIL_MCP_TARGET": "stdio", "ANVIL_MCP_TOKEN_ENV": "TOK"}, McpTarget("stdio")),
    ],
)
def test_the_target_resolves_by_the_one_rule(flag: str | None, env: dict[str, str], expected: McpTarget | None) -> None:
    assert resolve_route(flag, None, env) == expected


def test_the_token_flag_wins_over_the_environment_default() -> None:
    route = resolve_route("https://h/mcp", "FROM_FLAG", {"ANVIL_MCP_TOKEN_ENV": "FROM_ENV"})
    assert route.token_env == "FROM_FLAG"


@pytest.mark.parametrize(
    ("flag", "token_flag", "code"),
    [
        ("ftp://host/mcp", None, "invalid_target"),
        ("T001", None, "invalid_target"),
        ("https://user:secret@host/mcp", None, "credentials_in_url"),
        ("sse:https://user@host/sse", None, "credentials_in_url"),
        ("stdio", "TOKEN", "token_without_network_target"),
        ("direct", "TOKEN", "token_without_network_target"),
        (None, "TOKEN", "token_without_network_target"),
        ("https://host/mcp", "not a name", "invalid_token_env"),
        ("http://:80/mcp", None, "invalid_target"),
    ],
)
def test_bad_targets_are_refused_with_a_usage_error(flag: str | None, token_flag: str | None, code: str) -> None:
    with pytest.raises(UsageError) as info:
        resolve_route(flag, token_flag, {})
    assert info.value.code == code
    assert info.value.exit_code == 2
    assert "secret" not in info.value.message


def test_a_bad_target_from_the_environment_names_the_variable() -> None:
    from anvil.cli.routing import resolve_route
    from anvil.engine.errors import UsageError

    with pytest.raises(UsageError) as from_env:
        resolve_route(None, None, {"ANVIL_MCP_TARGET": "bogus"})
    assert from_env.value.code == "invalid_target" and "ANVIL_MCP_TARGET" in from_env.value.message
    with pytest.raises(UsageError) as from_flag:
        resolve_route("bogus", None, {"ANVIL_MCP_TARGET": "bogus"})
    assert "ANVIL_MCP_TARGET" not in from_flag.value.message
