"""A whole bundle, planned to merged, through the CLI on every route: directly, over the CLI's own
stdio MCP server and over Streamable HTTP with a bearer token. Each step gives the same output and
exit code on every route, and the independence rules refuse the same way everywhere."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.loopback.support import ROUTES, TOKEN, Loopback, captured_logs, normalized

MEMBERS = (("T001", "shortlink/store.py"), ("T002", "shortlink/validate.py"), ("T003", "shortlink/api.py"))
REVIEW = ["bundle", "review", "B1", "--round", "1"]

FLOW: list[tuple[list[str], str | None]] = [
    (["bundle", "create", "B1", "T001", "T002", "T003", "--coordinator", "agent-1", "--actor", "lead"], None),
    (["bundle", "claim", "B1", "--actor", "agent-1", "--shared-tree"], None),
    (["claim", "T003", "--actor", "agent-1"], "dependencies_pending"),
    *[step for task_id, path in MEMBERS for step in (
        (["claim", task_id, "--actor", "agent-1"], None),
        (["submit", task_id, "--actor", "agent-1", "--command", "pytest -q", "--file", path], None))],
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


@pytest.fixture(scope="module")
def loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loopback]:
    with captured_logs() as log:
        lb = Loopback(tmp_path_factory.mktemp("bundle-flow"))
        with lb.http:
            yield lb
    assert TOKEN not in "\n".join(log)


def run_flow(loopback: Loopback, route: str) -> list[tuple[int, Any]]:
    loopback.reset("ready")
    results = []
    for argv, error in FLOW:
        result = loopback.run([*argv, "--json"], route)
        assert "Traceback" not in result.stderr, result.stderr
        document = normalized(result.stdout)
        if error is None:
            assert result.code == 0, (route, argv, document)
        else:
            assert result.code == 5 and document["error"]["code"] == error, (route, argv, document)
        results.append((result.code, document))
    return results


def test_a_bundle_goes_from_plan_to_merge_identically_on_every_route(loopback: Loopback) -> None:
    outcomes = {route: run_flow(loopback, route) for route in ROUTES}
    assert outcomes["stdio"] == outcomes["direct"]
    assert outcomes["http"] == outcomes["direct"]
    steps = outcomes["direct"]
    finalized, first_reconcile, second_reconcile, (_, shown) = steps[-5], steps[-3], steps[-2], steps[-1]
    assert finalized[1]["accepted"] == ["T001", "T002", "T003"]
    assert first_reconcile[1]["changes"] == ["merged"] and second_reconcile[1]["changes"] == []
    bundle = shown["bundle"]
    assert bundle["status"] == "merged" and bundle["delivery"]["merged"] is True
    assert [m["status"] for m in bundle["members"]] == ["done"] * 3
    assert bundle["gate"]["independent_approvers"] == ["reviewer-1", "reviewer-2"]
