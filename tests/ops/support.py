"""Helpers shared by the operation tests: call an operation, expect a refusal, build a scenario."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anvil.engine.errors import AnvilError
from anvil.engine.storage.paths import resolve_state
from anvil.engine.storage.store import Store
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import build_scenario


def op(env: dict[str, str], name: str, **args: object) -> dict[str, Any]:
    """Run operation ``name`` directly with full validation."""
    return invoke(name, args, env=env, cwd=env["ANVIL_ROOT"])


def refused(env: dict[str, str], name: str, **args: object) -> AnvilError:
    """Run operation ``name`` and return the error it must raise."""
    with pytest.raises(AnvilError) as info:
        op(env, name, **args)
    return info.value


def scenario(env: dict[str, str], name: str) -> Path:
    """Build the named scenario and return the project root."""
    build_scenario(name, env, env["ANVIL_ROOT"])
    return Path(env["ANVIL_ROOT"])


def store_of(env: dict[str, str]) -> Store:
    return Store.open(resolve_state(env, env["ANVIL_ROOT"]))


def event_types(env: dict[str, str]) -> list[str]:
    with store_of(env) as store:
        return [event.type for event in store.events()]
