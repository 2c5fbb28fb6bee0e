"""Helpers shared by the operation tests: call an operation, expect a refusal, build a scenario, read
the state, write small PRDs."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from anvil.engine.errors import AnvilError
from anvil.engine.storage.integrity import verify
from anvil.engine.storage.paths import resolve_state
from anvil.engine.storage.store import Store, system_clock
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import SAMPLE_AT, build_scenario


class ShiftedClock:
    """An engine clock injected into calls: the system clock moved ``offset`` ahead."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def __call__(self) -> datetime:
        return system_clock() + self.offset


ENGINE_CLOCK = ShiftedClock()
"""The clock every :func:`op` call runs with; move it with :func:`advance_clock`."""


def advance_clock(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Run later calls of :func:`op` ``seconds`` in the future (undone after the test).

    Skips the test under ``ANVIL_TEST_BACKEND=postgresql`` (see ``anvil_env``): a PostgreSQL state
    stamps every write with the database's clock, so an engine clock moved here does not reach it.
    """
    if os.environ.get("ANVIL_TEST_BACKEND", "").strip().lower() == "postgresql":
        pytest.skip("moves the engine's clock, which a PostgreSQL state does not use (it writes at the "
                    "database's time): run it on the default backend")
    monkeypatch.setattr(ENGINE_CLOCK, "offset", timedelta(seconds=seconds))


def op(env: dict[str, str], name: str, /, **args: object) -> dict[str, Any]:
    """Run operation ``name`` directly with full validation, on :data:`ENGINE_CLOCK`."""
    return invoke(name, args, env=env, cwd=env["ANVIL_ROOT"], clock=ENGINE_CLOCK)


def refused(env: dict[str, str], name: str, /, **args: object) -> AnvilError:
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


def status(env: dict[str, str], task_id: str) -> str:
    return op(env, "get_task", task_id=task_id)["status"]


def set_config(env: dict[str, str], **values: object) -> None:
    """Test-only: there is no operation that changes the project config, so edit the row."""
    with store_of(env) as store:
        (raw,) = store.conn.execute("SELECT config FROM project").fetchone()
        store.conn.execute("UPDATE project SET config = ?", (json.dumps({**json.loads(raw), **values}),))


def submit(env: dict[str, str], task_id: str, actor: str, **args: object) -> dict:
    """Hand in ``task_id`` with ``pytest -q`` as text, proving nothing. The enforcing gate refuses such
    completion evidence, so it goes in while the gate is set to advisory for this one call (without
    an event: the state is as if the project had tightened its gate since); tests of the refusal
    itself call the operation."""
    with store_of(env) as store:
        (raw,) = store.conn.execute("SELECT config FROM project").fetchone()
    gate = json.loads(raw).get("evidence_gate") or "enforcing"
    completes = args.get("category") in (None, "completion", "promotion_quality")
    if gate == "enforcing" and completes and not args.get("command_proof_artifacts_base64"):
        set_config(env, evidence_gate="advisory")
        try:
            return op(env, "submit_completion_evidence", task_id=task_id, actor=actor, commands_run=["pytest -q"],
                      **args)
        finally:
            set_config(env, evidence_gate=gate)
    return op(env, "submit_completion_evidence", task_id=task_id, actor=actor, commands_run=["pytest -q"], **args)


def finish(env: dict[str, str], task_id: str, actor: str = "agent-1", reviewer: str = "lead") -> None:
    """Get a task done without proving its commands: the evidence gate is relaxed to advisory
    (tests of the gate itself live in tests/cli/test_client.py and test_reporting.py)."""
    op(env, "claim_task", task_id=task_id, actor=actor)
    submit(env, task_id, actor)
    op(env, "configure_project", evidence_gate="advisory", actor="lead")
    op(env, "apply_review_decision", task_id=task_id, approve=True, actor=reviewer)


def expire_leases(monkeypatch: pytest.MonkeyPatch, seconds: int = 3600) -> None:
    advance_clock(monkeypatch, seconds)


def mini_task(task_id: str, priority: str = "high", files: str = "", deps: str = "none") -> str:
    return (f"### {task_id}: Task {task_id}\n\n**Feature:** F001\n**Priority:** {priority}\n**Type:** feature\n"
            f"**Likely files:** {files or task_id.lower() + '.py'}\n**Dependencies:** {deps}\n"
            f"**Acceptance criteria:**\n- {task_id} works.\n**Verification:**\n- `pytest -q`\n")


def mini_prd(*tasks: str) -> str:
    return ("# Project: Mini\n\n## Summary\n\nSupport agents use Mini.\n\n## Requirements\n\n- R001: It works.\n\n"
            "## Features\n\n### F001: Core\n\nThe core.\n\n**Requirements:** R001\n\n## Tasks\n\n"
            + "\n".join(tasks))


def events(env: dict[str, str]) -> list:
    with Store.open(resolve_state(env, env["ANVIL_ROOT"])) as store:
        return list(store.events())


def assert_replays(env: dict[str, str]) -> None:
    with Store.open(resolve_state(env, env["ANVIL_ROOT"])) as store:
        report = verify(store)
    assert report["ok"], report["problems"]


def task(env: dict[str, str], task_id: str) -> dict:
    return op(env, "get_task", task_id=task_id)


def statuses(env: dict[str, str]) -> dict[str, str]:
    return {t["id"]: t["status"] for t in op(env, "list_tasks")["tasks"]}


def edit_sample(root: Path, edit: Callable[[str], str]) -> None:
    path = root / SAMPLE_AT
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
