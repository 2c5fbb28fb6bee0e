"""The one pipeline every call goes through: reaping, the transaction, idempotent retries.

Leases expire by moving the engine clock (``ANVIL_TEST_NOW_OFFSET``), never by sleeping.
"""

from __future__ import annotations

from tests.ops.support import event_types, expire_leases, op, refused, scenario, status


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
    assert refused(anvil_env, "claim_task", task_id="T001", actor="agent-3", idempotency_key="req-1").code == \
        "already_claimed", "keys are scoped to the actor: another actor's call runs for real"
