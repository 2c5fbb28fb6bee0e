"""Fixtures of the storage tests: a freshly initialized project in a local state directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.engine.project import InitRequest, init_project
from anvil.engine.storage.paths import StateLocation


@pytest.fixture
def location(tmp_path: Path) -> StateLocation:
    loc = StateLocation(tmp_path / "root", tmp_path / "state", "local")
    loc.root.mkdir()
    init_project(loc, InitRequest(name="Demo", actor="tester"))
    return loc
