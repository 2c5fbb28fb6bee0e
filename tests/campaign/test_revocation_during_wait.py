"""Revocation during a wait: a ``claim_next_task`` that waits (``wait_seconds``) when its token is
revoked claims nothing when a task frees up: it is refused ``auth_failed`` (exit 4) at the point it acts.

The in-process tests are deterministic whatever the interleaving (the admitted identity is handed to
the call, as the HTTP gate does); the HTTP test runs the same attack on a real server process and
asserts the invariant (the revoked name never holds a claim) whichever side of the gate the
revocation lands on.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from anvil.engine import credentials
from anvil.engine.errors import AnvilError
from anvil.engine.identity import Identity
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import build_scenario
from tests import warm
from tests.conftest import ANVIL, anvil_subprocess_env
from tests.mcp.support import ServerProcess, free_port, wait_for_port
from tests.ops.support import store_of


def _drain(env: dict[str, str]) -> list[str]:
    """Claim every claimable task as agent-1 (nothing is left for a waiter); returns their ids."""
    held = []
    while (claim := invoke("claim_next_task", {"actor": "agent-1"}, env=env, cwd=env["ANVIL_ROOT"])["claim"]):
        held.append(claim["task_id"])
    return held


def _admitted(env: dict[str, str], name: str) -> tuple[str, Identity]:
    """A token for ``name`` and the identity the HTTP gate admits it as."""
    token = invoke("add_token", {"name": name, "role": "agent"}, env=env, cwd=env["ANVIL_ROOT"])["token"]
    with store_of(env) as store:
        identity = credentials.verify(store.conn, token, store.clock())
    assert identity is not None and identity.token_id is not None
    return token, identity


def _claims_of(env: dict[str, str], name: str) -> list[str]:
    with store_of(env) as store:
        return [row[0] for row in store.conn.execute("SELECT task_id FROM claims WHERE actor = ?", (name,))]


def test_a_token_revoked_after_admission_claims_nothing(anvil_env: dict[str, str]) -> None:
    root = anvil_env["ANVIL_ROOT"]
    build_scenario("ready", {**anvil_env, "ANVIL_ACTOR": "lead"}, root)
    _, identity = _admitted(anvil_env, "agent-2")
    invoke("revoke_token", {"name": "agent-2", "actor": "lead"}, env=anvil_env, cwd=root)
    with pytest.raises(AnvilError) as info:
        invoke("claim_next_task", {}, env=anvil_env, cwd=root, principal=identity, remote=True)
    assert (info.value.code, info.value.exit_code) == ("auth_failed", 4)
    assert _claims_of(anvil_env, "agent-2") == []


def test_a_waiting_claim_whose_token_is_revoked_claims_nothing_when_a_task_frees_up(
        anvil_env: dict[str, str]) -> None:
    root = anvil_env["ANVIL_ROOT"]
    build_scenario("ready", {**anvil_env, "ANVIL_ACTOR": "lead"}, root)
    held = _drain(anvil_env)
    _, identity = _admitted(anvil_env, "agent-2")
    outcome: list[object] = []

    def wait_and_claim() -> None:
        try:
            outcome.append(invoke("claim_next_task", {"wait_seconds": 30}, env=anvil_env, cwd=root,
                                  principal=identity, remote=True))
        except AnvilError as error:
            outcome.append(error)

    waiter = threading.Thread(target=wait_and_claim)
    waiter.start()
    invoke("revoke_token", {"name": "agent-2", "actor": "lead"}, env=anvil_env, cwd=root)
    invoke("release_task", {"task_id": held[0], "actor": "lead", "confirm": True, "reason": "free it"},
           env=anvil_env, cwd=root)
    waiter.join(timeout=60)
    assert not waiter.is_alive()
    assert isinstance(outcome[0], AnvilError) and outcome[0].code == "auth_failed", outcome
    assert _claims_of(anvil_env, "agent-2") == []


def test_over_http_a_revoked_waiter_never_holds_a_claim(anvil_env: dict[str, str], tmp_path: Path) -> None:
    env = anvil_subprocess_env({k: v for k, v in anvil_env.items() if k != "ANVIL_ACTOR"})
    root = env["ANVIL_ROOT"]
    build_scenario("ready", {**env, "ANVIL_ACTOR": "lead"}, root)
    held = _drain(env)
    invoke("add_token", {"name": "lead", "role": "lead"}, env=env, cwd=root)
    token, _ = _admitted(env, "agent-2")
    port = free_port()
    log = tmp_path / "server.log"
    server = ServerProcess(warm.WarmProcess("anvil", ["serve", "--http", "--port", str(port)], env=env, cwd=root,
                                            stdout=log), port, log)
    try:
        wait_for_port(port, process=server.process)
        waiter = subprocess.Popen([*ANVIL, "claim-next", "--wait", "30", "--json", "--mcp", server.url,
                                   "--mcp-token-env", "AGENT_TOKEN"], env={**env, "AGENT_TOKEN": token}, cwd=root,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        invoke("revoke_token", {"name": "agent-2", "actor": "lead"}, env=env, cwd=root)
        invoke("release_task", {"task_id": held[0], "actor": "lead", "confirm": True, "reason": "free it"},
               env=env, cwd=root)
        out, err = waiter.communicate(timeout=90)
        assert waiter.returncode == 4 and '"auth_failed"' in out, out + err
    finally:
        assert token not in server.stop()
    assert _claims_of(env, "agent-2") == []
