"""A whole bundle, planned to merged, through the CLI on every route: directly, over the CLI's own
stdio MCP server and over Streamable HTTP with a bearer token. Each member's work is done for real and
proven the way its claim says (``anvil proof run`` for each verification command, ``anvil submit
--proof FILE``, the artifact travelling as base64 over MCP); finalization holds every member to its
evidence contract. Each step gives the same output and exit code on every route (apart from what a
proof measures: its nonce-bearing digest, duration and output hash), the independence rules refuse the
same way everywhere, and a stalled coordinator is fenced out the same way everywhere."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from anvil.ops.scenarios import QUIET_PYTEST, do_work, proof_environment
from tests.loopback.support import ROUTES, TOKEN, Loopback, captured_logs, normalized

MEMBERS = (("T001", "shortlink/store.py"), ("T002", "shortlink/validate.py"), ("T003", "shortlink/api.py"))
REVIEW = ["bundle", "review", "B1", "--round", "1"]
MEASURED = frozenset({"digest", "duration_ms", "output_sha256", "output_bytes"})
"""What a proof measures of its run (a fresh nonce makes every digest unique): not compared across routes."""
PROOF_ENV = {name: value for name, value in proof_environment().items() if name == "PATH" or name in QUIET_PYTEST}

Step = tuple[list[str], str | None]


@pytest.fixture(scope="module")
def loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loopback]:
    with captured_logs() as log:
        lb = Loopback(tmp_path_factory.mktemp("bundle-flow"))
        with lb.http:
            yield lb
    assert TOKEN not in "\n".join(log)


def steady(document: Any) -> Any:
    """``document`` with what a proof measures replaced by ``<measured>``."""
    if isinstance(document, dict):
        return {k: "<measured>" if k in MEASURED else steady(v) for k, v in document.items()}
    if isinstance(document, list):
        return [steady(v) for v in document]
    return document


class Flow:
    """The steps of one route, each checked for its exit code and kept for the comparison."""

    def __init__(self, loopback: Loopback, route: str) -> None:
        self.loopback, self.route = loopback, route
        self.results: list[tuple[str, int, Any]] = []

    def run(self, argv: list[str], error: str | None = None) -> Any:
        cut = argv.index("--") if "--" in argv else len(argv)
        result = self.loopback.run([*argv[:cut], "--json", *argv[cut:]], self.route, PROOF_ENV)
        assert "Traceback" not in result.stderr, result.stderr
        document = normalized(result.stdout)
        if error is None:
            assert result.code == 0, (self.route, argv, document)
        else:
            assert result.code != 0 and document["error"]["code"] == error, (self.route, argv, document)
        self.results.append((" ".join(argv[:3]), result.code, steady(document)))
        return document

    def steps(self, steps: list[Step]) -> None:
        for argv, error in steps:
            self.run(argv, error)


OPENING: list[Step] = [
    (["bundle", "create", "B1", "T001", "T002", "T003", "--coordinator", "agent-1", "--actor", "lead"], None),
    (["bundle", "claim", "B1", "--actor", "agent-1", "--shared-tree"], None),
    (["claim", "T003", "--actor", "agent-1"], "dependencies_pending"),
]
CLOSING: list[Step] = [
    (["renew", "B1", "--target-kind", "bundle", "--actor", "agent-1", "--generation", "1"], None),
    (["bundle", "progress", "B1", "--actor", "agent-1", "--phase", "done", "--complete", "--generation", "1"], None),
    ([*REVIEW, "--actor", "agent-1", "--angle", "correctness", "--decision", "approve"],
     "bundle_reviewer_not_independent"),
    ([*REVIEW, "--actor", "reviewer-1", "--angle", "correctness", "--decision", "approve"], None),
    ([*REVIEW, "--actor", "REVIEWER-1", "--angle", "integration", "--decision", "approve"],
     "bundle_duplicate_reviewer"),
    ([*REVIEW, "--actor", "reviewer-2", "--angle", "integration", "--decision", "approve"], None),
    (["bundle", "finalize", "B1", "--actor", "lead"], None),
    (["bundle", "checkpoint", "B1", "--actor", "agent-1", "--commit", "abcdef1"], None),
    (["bundle", "reconcile", "B1", "--actor", "agent-1", "--commit", "abcdef1", "--merged"], None),
    (["bundle", "reconcile", "B1", "--actor", "agent-1", "--commit", "abcdef1", "--merged"], None),
    (["bundle", "show", "B1"], None),
]


def run_flow(loopback: Loopback, route: str) -> list[tuple[str, int, Any]]:
    loopback.reset("ready")
    flow = Flow(loopback, route)
    flow.steps(OPENING)
    for task_id, path in MEMBERS:
        claim = flow.run(["claim", task_id, "--actor", "agent-1"])
        do_work(loopback.root, task_id)
        next_steps = claim["continuation"]
        assert len(next_steps["prove"]) == 1, next_steps
        for step in next_steps["prove"]:  # exactly the commands the claim gave
            assert step["argv"][:3] == ["anvil", "proof", "run"]
            proof = flow.run(step["argv"][1:])
            assert proof["passed"] and proof["path"] == str(loopback.root / step["artifact"]), proof
        submitted = flow.run([*next_steps["submit"][1:], "--file", path])
        assert submitted["missing_claim_bound_proofs"] == [], submitted
        assert [p["trust_mode"] for p in submitted["claim_bound_command_proofs"]] == ["client_reported"]
    flow.steps(CLOSING)
    return flow.results


def test_a_proven_bundle_goes_from_plan_to_merge_identically_on_every_route(loopback: Loopback) -> None:
    outcomes = {route: run_flow(loopback, route) for route in ROUTES}
    assert outcomes["stdio"] == outcomes["direct"]
    assert outcomes["http"] == outcomes["direct"]
    steps = [document for _, _, document in outcomes["direct"]]
    proofs = [document for name, _, document in outcomes["direct"] if name.startswith("proof run")]
    assert [(p["task_id"], p["exit_code"], p["command"]) for p in proofs] == [
        ("T001", 0, "python -m unittest -q tests/test_store.py"),
        ("T002", 0, "python -m unittest -q tests/test_validate.py"),
        ("T003", 0, "python -m unittest -q tests/test_api_create.py")]
    finalized, first_reconcile, second_reconcile, shown = steps[-5], steps[-3], steps[-2], steps[-1]
    assert finalized["accepted"] == ["T001", "T002", "T003"] and finalized["evidence_gaps"] == {}
    assert first_reconcile["changes"] == ["merged"] and second_reconcile["changes"] == []
    bundle = shown["bundle"]
    assert bundle["status"] == "merged" and bundle["delivery"]["merged"] is True
    assert [m["status"] for m in bundle["members"]] == ["done"] * 3
    assert bundle["gate"]["independent_approvers"] == ["reviewer-1", "reviewer-2"]


class DayLater(datetime):
    """The system clock a day ahead: the clock of every route in this process (their engines all read
    ``anvil.engine.storage.store.system_clock``)."""

    @classmethod
    def now(cls, tz: Any = None) -> DayLater:  # type: ignore[override]
        return super().now(tz) + timedelta(days=1)


STALLED: list[Step] = [
    (["bundle", "claim", "B1", "--actor", "agent-2"], None),  # the 4-hour lease of agent-1 ran out
    (["renew", "B1", "--target-kind", "bundle", "--actor", "agent-1", "--generation", "1"], "stale_generation"),
    (["bundle", "progress", "B1", "--actor", "agent-1", "--phase", "late", "--generation", "1"], "stale_generation"),
    (["release", "B1", "--target-kind", "bundle", "--actor", "agent-1", "--generation", "1"], "stale_generation"),
    (["claim", "T001", "--actor", "agent-2"], None),
    (["bundle", "show", "B1"], None),
]


def test_a_stalled_coordinator_is_fenced_out_identically_on_every_route(loopback: Loopback,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = {}
    for route in ROUTES:
        loopback.reset("bundle_claimed")
        with monkeypatch.context() as clock:
            clock.setattr("anvil.engine.storage.store.datetime", DayLater)
            flow = Flow(loopback, route)
            flow.steps(STALLED)
        outcomes[route] = flow.results
    assert outcomes["stdio"] == outcomes["direct"]
    assert outcomes["http"] == outcomes["direct"]
    recovered, shown = outcomes["direct"][0][2], outcomes["direct"][-1][2]
    assert recovered["coordinator"] == "agent-2" and recovered["claim"]["generation"] == 2
    assert shown["bundle"]["claim"]["claimed_by"] == "agent-2" and shown["bundle"]["claim"]["generation"] == 2
