"""Identity attacks: look-alike names are the same person, agents cannot note tasks that are not theirs,
and reading the event log does not let anyone mint a board session."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import pytest

from anvil.engine import credentials, sessions
from anvil.engine.errors import AnvilError
from anvil.engine.identity import name_key, name_problem, same_person
from anvil.ops.board_access import BoardAccess
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import build_scenario
from tests.ops.support import events, store_of


@pytest.mark.parametrize("look_alike", ["alıce", "ᴀlice", "ａｌｉｃｅ", "ALICE", "alıcᴇ"])
def test_latin_look_alikes_pass_the_name_rule_but_are_alice(look_alike: str) -> None:
    assert name_problem(look_alike) is None and same_person(look_alike, "alice")
    assert name_key(look_alike) == "alice"


def test_names_that_only_look_different_stay_apart() -> None:
    assert not same_person("josé", "jose") and not same_person("işık", "isik")
    assert name_key("agent-7") == "agent-7"  # an ASCII name keeps the key it always had


def test_a_look_alike_of_the_implementer_cannot_review_their_work(anvil_env: dict[str, str]) -> None:
    build_scenario("submitted", anvil_env, anvil_env["ANVIL_ROOT"])  # T001 submitted by agent-1
    with pytest.raises(AnvilError) as info:
        invoke("apply_review_decision", {"task_id": "T001", "approve": True, "actor": "ᴀgent-1"}, env=anvil_env,
               cwd=anvil_env["ANVIL_ROOT"])
    assert info.value.code == "self_review_forbidden"


def _identity(env: dict[str, str], name: str, role: str):  # type: ignore[no-untyped-def]
    token = invoke("add_token", {"name": name, "role": role}, env=env, cwd=env["ANVIL_ROOT"])["token"]
    with store_of(env) as store:
        return credentials.verify(store.conn, token, store.clock())


def test_an_agent_cannot_note_an_unclaimed_task_it_did_not_last_claim(anvil_env: dict[str, str]) -> None:
    root = anvil_env["ANVIL_ROOT"]
    build_scenario("claimed", {**anvil_env, "ANVIL_ACTOR": "lead"}, root)  # agent-1 holds T001
    invoke("release_task", {"task_id": "T001", "actor": "agent-1", "confirm": True}, env=anvil_env, cwd=root)
    stranger, owner, lead = (_identity(anvil_env, n, r) for n, r in
                             (("agent-2", "agent"), ("agent-1", "agent"), ("lead", "lead")))
    before = len(events(anvil_env))
    for task_id in ("T001", "T002"):  # released by agent-1; never claimed
        with pytest.raises(AnvilError) as info:
            invoke("submit_progress", {"task_id": task_id, "notes": "mine"}, env=anvil_env, cwd=root,
                   principal=stranger, remote=True)
        assert info.value.code == "not_owner"
    assert len(events(anvil_env)) == before
    invoke("submit_progress", {"task_id": "T001", "notes": "after release"}, env=anvil_env, cwd=root,
           principal=owner, remote=True)
    invoke("submit_progress", {"task_id": "T002", "notes": "triage"}, env=anvil_env, cwd=root, principal=lead,
           remote=True)


def test_a_session_cannot_be_minted_from_the_event_log(anvil_env: dict[str, str]) -> None:
    root = anvil_env["ANVIL_ROOT"]
    build_scenario("ready", anvil_env, root)
    token = invoke("add_token", {"name": "lead", "role": "lead"}, env=anvil_env, cwd=root)["token"]
    granted = next(e for e in events(anvil_env) if e.type == "token.granted")
    digest, token_id = bytes.fromhex(granted.payload["digest"]), granted.payload["token_id"]
    access = BoardAccess(None, env=anvil_env, cwd=root)
    now = int(time.time())
    old_key = hmac.new(digest, b"anvil board session v1", hashlib.sha256).digest()  # what the log used to allow
    for key in (old_key, sessions.session_key(digest, b"\0" * 32)):
        assert access.viewer(sessions.seal(key, token_id, now)) is None
    login = access.login(token)
    assert login is not None and login.cookie is not None and access.viewer(login.cookie) is not None
    assert json.dumps(granted.payload).find(token) < 0
