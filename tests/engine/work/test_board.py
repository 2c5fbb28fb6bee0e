"""The board's read model: columns, live claims (expired ones marked), the review queue, recent events
without their payloads."""

from __future__ import annotations

import json

from anvil.engine.storage.paths import resolve_state
from anvil.engine.storage.store import Store
from anvil.engine.work.board import board_view
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import build_scenario


def view(env: dict[str, str], now: str) -> dict:  # type: ignore[type-arg]
    with Store.open(resolve_state(env, env["ANVIL_ROOT"])) as store, store.snapshot() as conn:
        return board_view(conn, now)


def test_a_snapshot_holds_every_task_the_claims_the_review_queue_and_the_head(anvil_env: dict[str, str]) -> None:
    build_scenario("submitted", anvil_env, anvil_env["ANVIL_ROOT"])
    invoke("claim_task", {"task_id": "T002", "actor": "agent-2"}, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])
    snapshot = view(anvil_env, "2000-01-01T00:00:00.000+00:00")
    listed = invoke("list_tasks", {"limit": 1000}, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])["tasks"]
    assert [t["id"] for t in snapshot["tasks"]] == [t["id"] for t in listed]
    assert [(c["task_id"], c["actor"], c["expired"]) for c in snapshot["claims"]] == [("T002", "agent-2", False)]
    assert next(t for t in snapshot["tasks"] if t["id"] == "T002")["claimed_by"] == "agent-2"
    (waiting,) = snapshot["review_queue"]
    assert (waiting["task_id"], waiting["submitted_by"]) == ("T001", "agent-1") and waiting["submitted_at"]
    assert snapshot["events"][0]["seq"] == snapshot["head"] and snapshot["events"][0]["task_id"] == "T002"
    assert sum(snapshot["counts"].values()) == len(listed)


def test_a_lease_that_ran_out_is_shown_expired_without_being_reaped(anvil_env: dict[str, str]) -> None:
    build_scenario("claimed", anvil_env, anvil_env["ANVIL_ROOT"])
    later = view(anvil_env, "2999-01-01T00:00:00.000+00:00")
    assert [(c["task_id"], c["expired"]) for c in later["claims"]] == [("T001", True)]
    assert view(anvil_env, "2000-01-01T00:00:00.000+00:00")["head"] == later["head"]  # nothing was written


def test_events_carry_type_actor_time_and_task_but_never_their_payload(anvil_env: dict[str, str], cli) -> None:  # type: ignore[no-untyped-def]
    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    granted = cli("token", "add", "agent-7", "--role", "agent", "--json")
    assert granted.code == 0, granted.stderr
    snapshot = view(anvil_env, "2000-01-01T00:00:00.000+00:00")
    assert set(snapshot["events"][0]) == {"seq", "ts", "actor", "type", "task_id"}
    text = json.dumps(snapshot)
    assert granted.json()["token"] not in text and "digest" not in text


def test_each_submitted_task_shows_the_trust_level_of_its_proofs(anvil_env: dict[str, str]) -> None:
    build_scenario("verified", anvil_env, anvil_env["ANVIL_ROOT"])
    snapshot = view(anvil_env, "2000-01-01T00:00:00.000+00:00")
    trust = {t["id"]: t["trust_level"] for t in snapshot["tasks"]}
    assert trust["T001"] == "verified" and trust["T002"] is None  # T002 has no submission
    (waiting,) = snapshot["review_queue"]
    assert (waiting["task_id"], waiting["trust_level"], waiting["commit_sha"][:6]) == ("T001", "verified", "c0ffee")
    status = invoke("get_project_status", {}, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])
    assert status["review_trust"] == {"verified": 1, "client_reported": 0, "unproven": 0}


def test_the_landing_queue_shows_approved_work_then_what_landed(anvil_env: dict[str, str]) -> None:
    from anvil.ops.scenarios import EXAMPLE_COMMIT, LANDED_COMMIT, verification_result

    build_scenario("landing", anvil_env, anvil_env["ANVIL_ROOT"])
    snapshot = view(anvil_env, "2000-01-01T00:00:00.000+00:00")
    assert [(q["task_id"], q["state"], q["approved_commit"]) for q in snapshot["landing_queue"]] == [
        ("T001", "approved", EXAMPLE_COMMIT)]
    invoke("land_task", {"task_ids": ["T001"], "actor": "runner-1", "outcome": "landed", "target": "main",
                         "remote": "origin", "approved_commits": [EXAMPLE_COMMIT], "landed_commit": LANDED_COMMIT,
                         "result_artifacts_base64": [verification_result("runner-1", "b", commit=LANDED_COMMIT)]},
           env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])
    snapshot = view(anvil_env, "2000-01-01T00:00:00.000+00:00")
    assert [(q["task_id"], q["state"], q["landed_commit"]) for q in snapshot["landing_queue"]] == [
        ("T001", "landed", LANDED_COMMIT)]
    assert next(t for t in snapshot["tasks"] if t["id"] == "T001")["landed"] is True
    assert view(anvil_env, "2000-01-01T00:00:00.000+00:00")["landing_queue"] == snapshot["landing_queue"]


def test_the_board_is_bounded_and_its_pages_cover_every_task_of_a_column_once(anvil_env: dict[str, str]) -> None:
    build_scenario("submitted", anvil_env, anvil_env["ANVIL_ROOT"])
    listed = invoke("list_tasks", {"limit": 1000}, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])["tasks"]
    with Store.open(resolve_state(anvil_env, anvil_env["ANVIL_ROOT"])) as store, store.snapshot() as conn:
        first = board_view(conn, "2000-01-01T00:00:00.000+00:00", page_size=1)
        columns = {c["state"]: c for c in first["columns"]}
        assert sum(c["count"] for c in columns.values()) == len(listed)
        assert len(first["tasks"]) == sum(c["shown"] for c in columns.values()) <= len(columns)
        assert "column=<state>" in first["paging"]["how"]
        for state, column in columns.items():
            seen, cursor = [], None
            while True:
                page = board_view(conn, "2000-01-01T00:00:00.000+00:00", page_size=1, column=state, cursor=cursor)
                seen += [t["id"] for t in page["tasks"]]
                cursor = next(c for c in page["columns"] if c["state"] == state)["next_cursor"]
                if cursor is None:
                    break
            assert len(seen) == len(set(seen)) == column["count"]
        waiting = [t["id"] for t in listed if t["status"] == "needs_review"]
        queue = board_view(conn, "2000-01-01T00:00:00.000+00:00", page_size=1, column="review")
        assert queue["review_count"] == len(waiting) and len(queue["review_queue"]) == min(1, len(waiting))
