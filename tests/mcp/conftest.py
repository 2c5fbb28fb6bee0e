"""Fixtures of the MCP tests (helpers live in :mod:`tests.mcp.support`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.mcp.support import FakeInvoke, ThreadedUvicorn


@pytest.fixture
def fake_invoke() -> FakeInvoke:
    return FakeInvoke()


@pytest.fixture
def serve_app() -> Iterator[Callable[[Any], ThreadedUvicorn]]:
    running: list[ThreadedUvicorn] = []

    def start(app: Any) -> ThreadedUvicorn:
        server = ThreadedUvicorn(app).__enter__()
        running.append(server)
        return server

    yield start
    for server in running:
        server.__exit__()
