"""Idempotency records are events: the hash chain covers them, so a forged row fails verify."""

from __future__ import annotations

import json
import sqlite3

from anvil.engine.storage.integrity import verify
from tests.ops.support import op, scenario, store_of


def test_a_keyed_call_records_its_result_in_the_log(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "ready")
    first = op(anvil_env, "claim_task", task_id="T001", actor="agent-1", idempotency_key="k1")
    again = op(anvil_env, "claim_task", task_id="T001", actor="agent-1", idempotency_key="k1")
    assert again == first
    with store_of(anvil_env) as store:
        recorded = [e for e in store.events() if e.type == "idempotency.recorded"]
        assert verify(store)["ok"]
    assert len(recorded) == 1
    kept = {k: v for k, v in first.items() if k not in ("actor_identity", "dry_run")}  # the runtime adds these
    assert (recorded[0].actor, recorded[0].payload["key"], recorded[0].payload["result"]) == ("agent-1", "k1", kept)


def test_a_forged_idempotency_row_fails_verify(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "ready")
    with store_of(anvil_env) as store:
        db = store.location.db_path
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO idempotency (actor, operation, key, request_digest, result, created_at, seq) "
                 "VALUES ('agent-1', 'claim_task', 'forged', 'x', ?, '2026-01-01T00:00:00.000+00:00', 1)",
                 (json.dumps({"id": "C999999"}),))
    conn.commit()
    conn.close()
    with store_of(anvil_env) as store:
        report = verify(store)
    assert not report["ok"] and not report["replay_ok"]
    assert any("idempotency" in p for p in report["problems"]), report["problems"]


def test_a_tampered_stored_result_fails_verify(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "ready")
    op(anvil_env, "claim_task", task_id="T001", actor="agent-1", idempotency_key="k1")
    with store_of(anvil_env) as store:
        db = store.location.db_path
    conn = sqlite3.connect(db)
    conn.execute("UPDATE idempotency SET result = ? WHERE key = 'k1'", (json.dumps({"generation": 7}),))
    conn.commit()
    conn.close()
    with store_of(anvil_env) as store:
        assert not verify(store)["ok"]


def test_a_refused_or_dry_run_call_records_no_key(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "claimed")
    for args in ({"task_id": "T001", "actor": "agent-2"}, {"task_id": "T002", "actor": "agent-2", "dry_run": True}):
        try:
            op(anvil_env, "claim_task", idempotency_key="k-none", **args)
        except Exception:  # noqa: BLE001 - the refusal is the point
            pass
    with store_of(anvil_env) as store:
        assert not [e for e in store.events() if e.type == "idempotency.recorded"]
