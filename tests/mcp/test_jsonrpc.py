"""The client's JSON-RPC helpers: tool results become outputs or the exact AnvilError."""

from __future__ import annotations

import json

import pytest

from anvil.engine.errors import InternalError, Refused
from anvil.mcp.jsonrpc import tool_output
from anvil.mcp.target import McpTarget


def test_a_tool_error_document_is_rebuilt_into_the_same_error() -> None:
    document = {"error": {"code": "wrong_status", "message": "task is done", "exit_code": 5, "details": {"a": 1}}}
    result = {"isError": True, "content": [{"type": "text", "text": json.dumps(document)}]}
    with pytest.raises(Refused) as caught:
        tool_output(result, McpTarget("stdio"))
    assert (caught.value.code, caught.value.message, caught.value.details) == ("wrong_status", "task is done", {"a": 1})


def test_a_tool_error_without_a_document_is_a_fixed_internal_error() -> None:
    result = {"isError": True, "content": [{"type": "text", "text": "Traceback: secret stuff"}]}
    with pytest.raises(InternalError) as caught:
        tool_output(result, McpTarget("stdio"))
    assert "secret" not in caught.value.message


def test_a_success_without_structured_content_falls_back_to_the_json_text() -> None:
    result = {"content": [{"type": "text", "text": '{"ok": true}'}]}
    assert tool_output(result, McpTarget("stdio")) == {"ok": True}
    with pytest.raises(InternalError):
        tool_output({"content": [{"type": "text", "text": "[1, 2]"}]}, McpTarget("stdio"))
