"""The one pipeline every call goes through: the caller's identity, reaping, the transaction,
idempotent retries.

The identity step checks every name, resolves the caller once, enforces roles and makes every
mutating result say who acted and how anvil knows. ``principal`` stands for what the HTTP gate
authenticated (tests/mcp/test_http_identity.py runs the same over real HTTP). Leases expire by
moving the injected engine clock (``advance_clock``), never by sleeping.
"""

from __future__ import annotations

import json

import pytest

from anvil.engine.identity import authenticated
from anvil.ops.invoke import invoke
from anvil.ops.registry import all_operations
from tests.ops.support import event_types, expire_leases, op, refused, scenario, status, store_of


def test_a_refused_mutation_still_reaps_expired_claims(anvil_env, monkeypatch) -> None:
    scenario(anvil_env, "ready")
    op(anvil_env, "claim_task", task_id="T001", actor="agent-1", lease_duration_seconds=30)
    expire_leases(monkeypatch, 60)
    assert refused(anvil_env, "renew_claim", task_id="T001", actor="agent-1", generation=1).code == \
        "stale_generation"
    assert "claim.expired" in event_types(anvil_env)
    assert status(anvil_env, "T001") == "ready"


def test_an_identical_retry_returns_the_original_result_without_a_second_event(anvil_env, cli) -> None:
    scenario(anvil_env, "ready")
    first = op(anvil_env, "claim_task", task_id="T001", actor="agent-1", idempotency_key="req-1")
    printed = cli("claim", "T002", "--actor", "agent-2", "--idempotency-key", "req-9", "--json")
    count = len(event_types(anvil_env))
    assert op(anvil_env, "claim_task", task_id="T001", actor="agent-1", idempotency_key="req-1") == first
    assert cli("claim", "T002", "--actor", "agent-2", "--idempotency-key", "req-9", "--json").stdout == printed.stdout
    assert len(event_types(anvil_env)) == count
    error = refused(anvil_env, "claim_task", task_id="T004", actor="agent-1", idempotency_key="req-1")
    conflict = cli("claim", "T004", "--actor", "agent-2", "--idempotency-key", "req-9", "--json")
    assert (error.code, error.exit_code) == ("idempotency_conflict", 5)
    assert conflict.code == 5 and conflict.json()["error"]["code"] == "idempotency_conflict"
    assert len(event_types(anvil_env)) == count


def test_item_6_the_same_key_from_another_actor_is_a_conflict_not_a_new_write(anvil_env) -> None:
    """Issue 24 item 6 (seed 002): a request id belongs to one request: another actor reusing it, even
    with the identical input, is refused and writes nothing (and is not told who used it)."""
    scenario(anvil_env, "ready")
    op(anvil_env, "claim_task", task_id="T001", actor="agent-1", idempotency_key="req-1")
    count = len(event_types(anvil_env))
    for task_id in ("T001", "T004"):
        error = refused(anvil_env, "claim_task", task_id=task_id, actor="agent-3", idempotency_key="req-1")
        assert (error.code, error.details) == ("idempotency_conflict", {"reason": "another_actor"})
        assert "agent-1" not in error.message
    assert len(event_types(anvil_env)) == count
    assert op(anvil_env, "claim_task", task_id="T002", actor="agent-3", idempotency_key="req-2")["generation"] == 1


# -- identity --------------------------------------------------------------------------------------

AGENT_1 = authenticated("agent-1", "agent")
AGENT_2 = authenticated("agent-2", "agent")
REVIEWER = authenticated("rita", "reviewer")
LEAD = authenticated("lead", "lead")


def as_(env: dict[str, str], principal, name: str, /, **args: object) -> dict:  # type: ignore[no-untyped-def]
    return invoke(name, args, env=env, cwd=env["ANVIL_ROOT"], principal=principal, remote=True)


def refused_as(env: dict[str, str], principal, name: str, /, **args: object):  # type: ignore[no-untyped-def]
    from anvil.engine.errors import AnvilError

    with pytest.raises(AnvilError) as caught:
        as_(env, principal, name, **args)
    return caught.value


def test_every_mutating_result_says_the_caller_is_self_declared_on_a_direct_call(anvil_env) -> None:
    result = op(anvil_env, "init_project", name="Demo", actor="lead")
    assert result["actor_identity"]["actor"] == "lead"
    assert result["actor_identity"]["authenticated"] is False and result["actor_identity"]["how"] == "declared"
    assert "self-declared" in result["actor_identity"]["notice"]
    config = op(anvil_env, "configure_project")
    assert config["actor_identity"] == {**config["actor_identity"], "actor": "anvil", "how": "default"}


def test_every_mutating_operation_outputs_actor_identity_and_no_read_does() -> None:
    for operation in all_operations():
        has = "actor_identity" in operation.output_model.model_fields
        assert has == (operation.effect != "read"), operation.name


def test_anvil_actor_names_the_caller_when_no_actor_is_given(anvil_env, monkeypatch) -> None:
    scenario(anvil_env, "ready")
    env = {**anvil_env, "ANVIL_ACTOR": "agent-3"}
    claim = op(env, "claim_task", task_id="T001")
    assert claim["claimed_by"] == "agent-3" and claim["actor_identity"]["how"] == "declared"
    error = refused({**anvil_env, "ANVIL_ACTOR": "agent\u200b3"}, "renew_claim", task_id="T001")
    assert error.code == "invalid_actor" and "ANVIL_ACTOR" in error.message


def test_a_call_that_needs_a_caller_is_refused_without_one(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    for name, args in (("apply_review_decision", {"task_id": "T001", "approve": True}),
                       ("review_prd", {}), ("claim_task", {"task_id": "T002"})):
        error = refused(anvil_env, name, **args)
        assert (error.code, error.exit_code) == ("missing_actor", 2), name
        assert "--actor" in error.message and "ANVIL_ACTOR" in error.message


@pytest.mark.parametrize(("name", "args", "where"), [
    ("claim_task", {"task_id": "T001", "actor": "agent\u202e1"}, "--actor"),
    ("apply_review_decision", {"task_id": "T001", "approve": True, "reviewer": "le\u0430d"}, "--reviewer"),
    ("list_tasks", {"claimed_by": "agent\x1b[0m"}, "--claimed-by"),
    ("get_next_task", {"actor": "agent\x00"}, "--actor"),
    ("add_token", {"name": "\u0430gent-1", "role": "agent"}, "NAME"),
    ("revoke_token", {"name": "agent 1"}, "NAME"),
    ("list_tokens", {"name": "agent\u200d1"}, "--name"),
])
def test_every_input_that_names_a_person_is_held_to_the_name_rule(anvil_env, name: str, args: dict,  # type: ignore[type-arg]
                                                                   where: str) -> None:
    scenario(anvil_env, "submitted")
    error = refused(anvil_env, name, **args)
    assert (error.code, error.exit_code) == ("invalid_actor", 2)
    assert where in error.message


def test_the_reviewer_alias_is_accepted_only_when_it_names_the_caller(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    error = refused(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead", reviewer="bob")
    assert error.code == "reviewer_not_caller" and "--reviewer" in error.message
    result = op(anvil_env, "apply_review_decision", task_id="T001", approve=True, reviewer="Lead", actor="lead")
    assert result["reviewer"] == "lead" and result["to_status"] == "done"


def test_the_reviewer_alias_alone_names_the_caller_for_older_clients(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    result = op(anvil_env, "apply_review_decision", task_id="T001", approve=True, reviewer="lead")
    assert result["reviewer"] == "lead" and result["actor_identity"]["actor"] == "lead"


@pytest.mark.parametrize("spelling", ["agent-1", "AGENT-1", "Agent-1", "ａｇｅｎｔ-1"])
def test_self_review_is_refused_whatever_the_spelling(anvil_env, spelling: str) -> None:
    scenario(anvil_env, "submitted")
    assert refused(anvil_env, "apply_review_decision", task_id="T001", approve=True,
                   actor=spelling).code == "self_review_forbidden"


def test_ownership_holds_whatever_the_spelling(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    assert op(anvil_env, "renew_claim", task_id="T001", actor="AGENT-1")["renewed"]
    assert [t["id"] for t in op(anvil_env, "list_tasks", claimed_by="Agent-1")["tasks"]] == ["T001"]
    assert refused(anvil_env, "renew_claim", task_id="T001", actor="agent-2").code == "not_owner"


# -- an authenticated caller -----------------------------------------------------------------------


def test_an_authenticated_call_fills_in_the_actor_and_says_how_it_knows(anvil_env) -> None:
    scenario(anvil_env, "ready")
    claim = as_(anvil_env, AGENT_1, "claim_task", task_id="T001")
    assert claim["claimed_by"] == "agent-1"
    assert claim["actor_identity"] == {"actor": "agent-1", "authenticated": True, "how": "token", "role": "agent",
                                       "notice": None}
    assert as_(anvil_env, AGENT_1, "renew_claim", task_id="T001", actor="Agent-1")["renewed"]


def test_an_authenticated_call_naming_another_actor_is_refused(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    error = refused_as(anvil_env, AGENT_2, "renew_claim", task_id="T001", actor="agent-1")
    assert (error.code, error.exit_code) == ("actor_mismatch", 4)
    assert "agent-2" in error.message and "--actor" in error.message
    assert refused_as(anvil_env, AGENT_2, "renew_claim", task_id="T001").code == "not_owner"


def test_the_server_environment_never_names_a_remote_caller(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    env = {**anvil_env, "ANVIL_ACTOR": "agent-1"}
    error = refused_as(env, None, "renew_claim", task_id="T001")
    assert error.code == "missing_actor"


def test_roles_decide_what_an_authenticated_caller_may_do(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    error = refused_as(anvil_env, AGENT_2, "apply_review_decision", task_id="T001", approve=True)
    assert (error.code, error.exit_code) == ("forbidden_by_role", 4) and "reviewer" in error.message
    assert refused_as(anvil_env, REVIEWER, "plan_tasks").code == "forbidden_by_role"
    assert refused_as(anvil_env, AGENT_1, "add_token", name="x", role="lead").code == "forbidden_by_role"
    decided = as_(anvil_env, REVIEWER, "apply_review_decision", task_id="T001", approve=False,
                  reason="no test for expiry", reason_code="quality")
    assert decided["reviewer"] == "rita"
    review = op(anvil_env, "get_task", task_id="T001")["history"]["reviews"][0]
    assert (review["reviewer"], review["reviewer_role"], review["reviewer_authenticated"], review["reason_code"]) \
        == ("rita", "reviewer", True, "quality")


def test_an_agent_cannot_move_tasks_between_drafted_and_ready(anvil_env) -> None:
    scenario(anvil_env, "ready")
    error = refused_as(anvil_env, AGENT_1, "update_task_status", task_id="T002", to_status="drafted")
    assert error.code == "forbidden_by_role"
    assert as_(anvil_env, LEAD, "update_task_status", task_id="T002", to_status="drafted")["to_status"] == "drafted"


def test_taking_over_a_claim_needs_the_lead_role_and_is_recorded_as_a_takeover(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    error = refused_as(anvil_env, AGENT_2, "release_task", task_id="T001", confirm=True)
    assert (error.code, error.exit_code) == ("forbidden_by_role", 4)
    assert refused_as(anvil_env, LEAD, "release_task", task_id="T001").code == "confirmation_required"
    assert as_(anvil_env, LEAD, "release_task", task_id="T001", confirm=True)["released"]
    with store_of(anvil_env) as store:
        last = list(store.events())[-1]
    assert last.type == "claim.released" and last.actor == "lead"
    assert (last.payload["forced"], last.payload["holder"], last.payload["by_role"], last.payload["authenticated"]) \
        == (True, "agent-1", "lead", True)


def test_an_idempotent_retry_matches_whatever_the_spelling_of_the_caller(anvil_env) -> None:
    scenario(anvil_env, "ready")
    first = op(anvil_env, "claim_task", task_id="T001", actor="agent-1", idempotency_key="k1")
    again = op(anvil_env, "claim_task", task_id="T001", actor="AGENT-1", idempotency_key="k1")
    assert again["id"] == first["id"] and again["actor_identity"]["actor"] == "AGENT-1"
    with store_of(anvil_env) as store:
        rows = store.conn.execute("SELECT actor, result FROM idempotency").fetchall()
    assert [row[0] for row in rows] == ["agent-1"] and "actor_identity" not in json.loads(rows[0][1])
def test_every_mutating_result_says_whether_it_wrote(anvil_env) -> None:
    from anvil.ops.registry import all_operations

    scenario(anvil_env, "ready")
    count = len(event_types(anvil_env))
    rehearsal = op(anvil_env, "claim_task", task_id="T001", actor="agent-1", dry_run=True)
    assert rehearsal["dry_run"] is True and len(event_types(anvil_env)) == count
    assert op(anvil_env, "claim_task", task_id="T001", actor="agent-1")["dry_run"] is False
    assert op(anvil_env, "init_project", force=True, confirm=True, dry_run=True)["dry_run"] is True
    assert "dry_run" not in op(anvil_env, "list_tasks")
    writers = [o.name for o in all_operations() if o.effect != "read"]
    assert all("dry_run" in o.output_model.model_fields for o in all_operations() if o.name in writers)


def _drained(anvil_env) -> None:  # type: ignore[no-untyped-def]
    """The sample with T001 and T002 (the only tasks free of dependencies) claimed: nothing is claimable."""
    scenario(anvil_env, "ready")
    op(anvil_env, "claim_task", task_id="T001", actor="agent-1")
    op(anvil_env, "claim_task", task_id="T002", actor="agent-2")
    assert op(anvil_env, "get_next_task")["task"] is None


def _waiter(anvil_env, *args: str):  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    from tests.conftest import anvil_subprocess_env

    return subprocess.Popen([sys.executable, "-m", "anvil", *args, "--json"], env=anvil_subprocess_env(anvil_env),
                            cwd=anvil_env["ANVIL_ROOT"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _until_waiting(anvil_env, process) -> None:  # type: ignore[no-untyped-def]
    """Bounded wait until ``process`` sleeps on its pipe in the state's waiters directory."""
    import os
    import time

    if os.environ.get("ANVIL_TEST_BACKEND", "").strip().lower() == "postgresql":
        pytest.skip("watches a SQLite state's waiter pipes; a PostgreSQL waiter listens on the database "
                    "(tests/engine/storage and tests/mcp cover that): run it on the default backend")

    from anvil.engine.storage.paths import resolve_state

    waiters = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"]).state_dir / "waiters"
    deadline = time.monotonic() + 60
    while not (waiters.is_dir() and any(p.suffix == ".fifo" for p in waiters.iterdir())):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the waiter never started waiting"
        time.sleep(0.02)


def test_next_wait_is_woken_by_the_write_that_frees_a_task(anvil_env) -> None:
    import json
    import time

    _drained(anvil_env)
    waiter = _waiter(anvil_env, "next", "--wait", "120", "--actor", "agent-3")
    try:
        _until_waiting(anvil_env, waiter)
        started = time.monotonic()
        op(anvil_env, "release_task", task_id="T002", actor="agent-2")
        out, err = waiter.communicate(timeout=60)
    finally:
        waiter.kill()
    assert waiter.returncode == 0, err
    assert json.loads(out)["task"]["id"] == "T002" and time.monotonic() - started < 120  # before its wait ran out


def test_claim_next_wait_claims_the_task_a_write_frees_and_answers_null_at_the_deadline(anvil_env) -> None:
    import json

    _drained(anvil_env)
    waiter = _waiter(anvil_env, "claim-next", "--wait", "120", "--actor", "agent-3", "--idempotency-key", "k1")
    try:
        _until_waiting(anvil_env, waiter)
        op(anvil_env, "release_task", task_id="T001", actor="agent-1")
        out, err = waiter.communicate(timeout=60)
    finally:
        waiter.kill()
    claim = json.loads(out)["claim"]
    assert (claim["task_id"], claim["claimed_by"]) == ("T001", "agent-3"), err
    empty = op(anvil_env, "claim_next_task", actor="agent-4", wait_seconds=1, idempotency_key="k2")
    assert empty["claim"] is None and "wait on unfinished dependencies" in empty["reason"]
    op(anvil_env, "release_task", task_id="T002", actor="agent-2")
    again = op(anvil_env, "claim_next_task", actor="agent-4", wait_seconds=1, idempotency_key="k2")
    assert again["claim"]["task_id"] == "T002", "an empty answer given while waiting is not kept for retries"


def test_a_waiting_claim_takes_the_writer_lock_only_when_there_is_something_to_claim(anvil_env,
                                                                                   monkeypatch) -> None:
    import threading

    from anvil.engine.storage.store import Transaction

    _drained(anvil_env)
    locks, waiter_thread = [], []
    opened = Transaction.__init__

    def counting(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        if threading.get_ident() in waiter_thread:  # a write transaction: the writer lock is held (both backends)
            locks.append(1)
        opened(self, *args, **kwargs)

    monkeypatch.setattr(Transaction, "__init__", counting)
    result: dict = {}  # type: ignore[type-arg]

    def wait() -> None:
        waiter_thread.append(threading.get_ident())
        result.update(op(anvil_env, "claim_next_task", actor="agent-3", wait_seconds=120))

    waiter = threading.Thread(target=wait)
    waiter.start()
    try:
        for n in range(3):  # quiet writes: they wake the waiter, which looks, finds nothing and waits again
            op(anvil_env, "submit_progress", task_id="T002", actor="agent-2", notes=f"still on it {n}")
        op(anvil_env, "release_task", task_id="T001", actor="agent-1")
    finally:
        waiter.join(timeout=60)
    assert result["claim"]["task_id"] == "T001"
    assert len(locks) == 1, "the waiter took the lock only for the claim that found a task"


def test_a_lease_running_out_wakes_a_waiter_without_any_write(anvil_env) -> None:
    import json

    scenario(anvil_env, "ready")
    op(anvil_env, "claim_task", task_id="T001", actor="agent-1")
    op(anvil_env, "claim_task", task_id="T002", actor="agent-2", lease_duration_seconds=2)
    count = len(event_types(anvil_env))
    waiter = _waiter(anvil_env, "next", "--wait", "120")
    out, err = waiter.communicate(timeout=60)
    assert json.loads(out)["task"]["id"] == "T002", err
    assert event_types(anvil_env)[count:] == ["claim.expired"]  # the waiter's own read reaped it


# -- cwd: which project a call works on --------------------------------------------------------


def test_a_local_call_with_cwd_works_on_the_project_that_directory_selects(anvil_env, tmp_path) -> None:
    scenario(anvil_env, "ready")
    other = tmp_path / "other"
    other.mkdir()
    elsewhere = invoke("get_project_status", {"cwd": str(other)}, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])
    assert elsewhere["initialized"] is False  # ANVIL_ROOT names the first project; cwd wins for this call
    invoke("init_project", {"name": "Other", "cwd": str(other)}, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])
    here = invoke("get_project_status", {"cwd": "."}, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])
    there = invoke("get_project_status", {"cwd": str(other)}, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])
    assert (here["project_name"], here["total_tasks"]) == ("Demo", 9)
    assert (there["project_name"], there["total_tasks"]) == ("Other", 0)
    error = refused(anvil_env, "get_project_status", cwd=str(tmp_path / "missing"))
    assert error.code == "root_missing" and "missing" not in error.message


def test_over_the_network_cwd_may_only_point_inside_the_served_project(anvil_env, tmp_path) -> None:
    root = scenario(anvil_env, "ready")
    (root / "src").mkdir()

    def remote(cwd: str) -> dict:
        return invoke("get_project_status", {"cwd": cwd}, env=anvil_env, cwd=str(root), remote=True)

    assert remote("src")["total_tasks"] == remote(str(root / "src"))["total_tasks"] == 9
    for outside in ("..", str(tmp_path), "/"):
        with pytest.raises(Exception) as caught:
            remote(outside)
        assert getattr(caught.value, "code", None) == "cwd_outside_project", outside


def test_names_that_passed_are_remembered_boundedly_and_a_bad_one_is_refused_every_time(anvil_env,
                                                                                       monkeypatch) -> None:
    from anvil.ops import runtime

    scenario(anvil_env, "ready")
    monkeypatch.setattr(runtime, "VALID_NAMES_REMEMBERED", 3)
    monkeypatch.setattr(runtime, "_VALID_NAMES", set())
    for _ in range(2):
        assert refused(anvil_env, "get_next_task", actor="agent\u202e1").code == "invalid_actor"
    for name in ("agent-1", "agent-2", "agent-3", "agent-4"):
        op(anvil_env, "get_next_task", actor=name)
        assert name in runtime._VALID_NAMES
    assert len(runtime._VALID_NAMES) <= 3 and "agent\u202e1" not in runtime._VALID_NAMES
    assert refused(anvil_env, "get_next_task", actor="agent\u202e1").code == "invalid_actor"
