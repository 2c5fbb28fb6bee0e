"""The HTTP gate's rule: fixed when the server starts, only ever tightened, never open once tokens were required."""

from __future__ import annotations

import shutil

import pytest

from anvil.engine.storage.paths import resolve_state
from anvil.ops.access import Admission, Gatekeeper
from anvil.ops.board_access import BoardAccess
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import build_scenario


def test_a_gate_that_started_open_closes_for_good_once_it_sees_a_token(anvil_env: dict[str, str]) -> None:
    root = anvil_env["ANVIL_ROOT"]
    build_scenario("ready", anvil_env, root)
    gate, board = Gatekeeper(env=anvil_env, cwd=root), BoardAccess(None, env=anvil_env, cwd=root)
    assert gate.admit(None).admitted and board.viewer(None) is not None
    invoke("add_token", {"name": "lead", "role": "lead"}, env=anvil_env, cwd=root)
    assert gate.admit(None).failure == "missing" and board.viewer(None) is None
    state = resolve_state(anvil_env, root).state_dir
    shutil.rmtree(state)
    assert (gate.admit(None).admitted, gate.admit("guess").failure) == (False, "invalid")
    assert board.viewer(None) is None and board.login("guess") is None


def test_a_gate_started_with_tokens_issued_stays_closed_when_the_state_is_gone(anvil_env: dict[str, str]) -> None:
    root = anvil_env["ANVIL_ROOT"]
    build_scenario("ready", anvil_env, root)
    invoke("add_token", {"name": "lead", "role": "lead"}, env=anvil_env, cwd=root)
    gate = Gatekeeper(env=anvil_env, cwd=root)
    shutil.rmtree(resolve_state(anvil_env, root).state_dir)
    assert gate.tokens_required and not gate.admit(None).admitted


def test_a_loopback_gate_with_nothing_issued_stays_open(anvil_env: dict[str, str]) -> None:
    root = anvil_env["ANVIL_ROOT"]
    build_scenario("ready", anvil_env, root)
    gate = Gatekeeper(env=anvil_env, cwd=root)
    assert not gate.tokens_required and gate.admit(None).admitted


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_token_revoked_between_two_requests_is_refused_on_the_second(
        anvil_env: dict[str, str], request: pytest.FixtureRequest, backend: str) -> None:
    env = {**anvil_env, "ANVIL_DATABASE_URL": request.getfixturevalue("pg_url")} if backend == "postgresql" \
        else anvil_env
    root = env["ANVIL_ROOT"]
    build_scenario("ready", env, root)
    lead = invoke("add_token", {"name": "lead", "role": "lead"}, env=env, cwd=root)["token"]
    agent = invoke("add_token", {"name": "agent-1", "role": "agent", "expires": "90m"}, env=env, cwd=root
                   )["token"]
    gate = Gatekeeper(env=env, cwd=root)
    first = gate.admit(agent)
    assert first.admitted and first.identity is not None and first.identity.actor == "agent-1"
    invoke("revoke_token", {"name": "agent-1"}, env=env, cwd=root)
    assert gate.admit(agent) == Admission(False, failure="invalid")
    still = gate.admit(lead)
    assert still.admitted and still.identity is not None and still.identity.role == "lead"
    assert gate.admit(None) == Admission(False, failure="missing")
    assert gate.admit(lead[:-1] + ("A" if lead[-1] != "A" else "B")) == Admission(False, failure="invalid")
    assert gate.admit("anvil_tk999999_" + "x" * 43) == Admission(False, failure="invalid")
    invoke("revoke_token", {"name": "lead"}, env=env, cwd=root)
    assert gate.admit(lead) == Admission(False, failure="invalid")  # no tokens left: closed, never open
