"""The client's channels: the real process and network unless a test installs replacements for a block."""

from __future__ import annotations

import subprocess
import threading
import urllib.request
from typing import Any

import pytest

from anvil.engine.errors import TargetUnavailable
from anvil.mcp.channels import Channels, installed, using
from anvil.mcp.client import call_tool
from anvil.mcp.stdio_client import stdio_command
from anvil.mcp.target import McpTarget


class Refusing:
    """Channels that record what the client asked for and refuse it."""

    def __init__(self) -> None:
        self.spawned: list[tuple[list[str], dict[str, Any]]] = []
        self.opened: list[urllib.request.Request] = []

    def spawn(self, command: list[str], **options: Any) -> Any:
        self.spawned.append((command, options))
        raise OSError("no processes here")

    def open_http(self, request: urllib.request.Request, timeout: float | None = None) -> Any:
        self.opened.append(request)
        raise OSError("no network here")


def test_nothing_is_installed_outside_a_using_block() -> None:
    assert installed() is None
    channels = Channels(spawn=Refusing().spawn, open_http=Refusing().open_http)
    with using(channels):
        assert installed() is channels
        with using(Channels(spawn=Refusing().spawn, open_http=Refusing().open_http)) as inner:
            assert installed() is inner
        assert installed() is channels
    assert installed() is None


def test_installed_channels_stay_with_the_thread_that_installed_them() -> None:
    seen: list[Any] = []
    with using(Channels(spawn=Refusing().spawn, open_http=Refusing().open_http)):
        other = threading.Thread(target=lambda: seen.append(installed()))
        other.start()
        other.join(timeout=10)
    assert seen == [None]


def test_the_client_spawns_and_sends_through_the_installed_channels(anvil_env: dict[str, str]) -> None:
    refusing = Refusing()
    env = {**anvil_env, "LB_TOKEN": "tok-never-shown"}
    with using(Channels(spawn=refusing.spawn, open_http=refusing.open_http)):
        with pytest.raises(TargetUnavailable):
            call_tool(McpTarget("stdio"), "get_project_status", {}, env=env, cwd=anvil_env["ANVIL_ROOT"])
        with pytest.raises(TargetUnavailable):
            call_tool(McpTarget("http", "http://127.0.0.1:9/mcp", "LB_TOKEN"), "get_project_status", {}, env=env,
                      cwd=anvil_env["ANVIL_ROOT"])
    [(command, options)] = refusing.spawned
    assert command == stdio_command()
    assert options["stdin"] == options["stdout"] == subprocess.PIPE
    assert options["env"] == {"ANVIL_MCP_LEAN": "1", **env} and options["cwd"] == anvil_env["ANVIL_ROOT"]
    [request] = refusing.opened
    assert request.full_url == "http://127.0.0.1:9/mcp" and request.get_method() == "POST"
    assert request.get_header("Authorization") == "Bearer tok-never-shown"
