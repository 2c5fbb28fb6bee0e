"""Bundle tools over MCP with the SDK's own client: a whole bundle on a real stdio server process, its
members' work proven with command proofs sent as base64; the same over a real HTTP server where
per-agent tokens say who coordinates and who reviews; and a stalled coordinator whose lease runs out
while the server's clock moves on."""

from __future__ import annotations

import base64
import functools
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from anvil.engine.proof.artifacts import PROOF, envelope
from anvil.engine.proof.runner import run_proof
from anvil.engine.storage.store import system_clock
from anvil.engine.work.continuation import command_argv
from anvil.mcp.server import build_server
from anvil.ops.invoke import invoke
from anvil.ops.registry import all_operations
from anvil.ops.scenarios import do_work, proof_environment
from tests import warm
from tests.conftest import anvil_subprocess_env
from tests.mcp.projects import build_project, use_project
from tests.mcp.support import ServerProcess, free_port, wait_for_port

pytestmark = pytest.mark.anyio
MEMBERS = (("T001", "shortlink/store.py"), ("T002", "shortlink/validate.py"), ("T003", "shortlink/api.py"))


class ToolError(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


async def call(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool; return its complete structured result (``anvil/result: full``: the flow reads fields a
    compact result leaves out when empty) or raise :class:`ToolError` with the error code."""
    import json

    result = await client.call_tool(name, arguments, meta={"anvil/result": "full"})
    if result.is_error:
        raise ToolError(json.loads(result.content[0].text)["error"]["code"])  # type: ignore[union-attr]
    assert result.structured_content is not None
    return result.structured_content


async def refused(client: Client, name: str, **arguments: Any) -> str:
    with pytest.raises(ToolError) as caught:
        await call(client, name, **arguments)
    return caught.value.code


async def prove_and_submit(client: Client, root: Path, task_id: str, path: str, **who: Any) -> dict[str, Any]:
    """Do member ``task_id``'s work in ``root``, prove each of its verification commands against its
    live claim (read over MCP) and submit the artifacts as base64."""
    task = await call(client, "get_task", task_id=task_id)
    do_work(root, task_id)
    proofs = [base64.b64encode(envelope(PROOF, run_proof(task["claim"], command_argv(command), root,
                                                         env=proof_environment()), None)).decode()
              for command in task["verification"]]
    submitted = await call(client, "submit_completion_evidence", task_id=task_id, files_changed=[path],
                           generation=task["claim"]["generation"], command_proof_artifacts_base64=proofs, **who)
    assert submitted["missing_claim_bound_proofs"] == [] and len(submitted["claim_bound_command_proofs"]) == 1
    return submitted


def review(round_: int, angle: str) -> dict[str, Any]:
    return {"bundle_id": "B1", "review_round": round_, "angle": angle, "decision": "approve"}


# -- stdio: one client, names declared ---------------------------------------------------------


async def test_a_bundle_runs_plan_to_merge_over_a_real_stdio_server(tmp_path: Path) -> None:
    env = anvil_subprocess_env({**build_project(tmp_path, "ready"), "ANVIL_MCP_PLANNING": "1"})
    params = StdioServerParameters(command=sys.executable, args=["-m", "anvil.mcp"], env=env, cwd=env["ANVIL_ROOT"])
    with anyio.fail_after(120):
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            await call(client, "create_bundle", bundle_id="B1", task_ids=["T001", "T002", "T003"],
                       coordinator="agent-1", actor="lead")
            claimed = await call(client, "claim_bundle", bundle_id="B1", actor="agent-1", shared_tree=True)
            generation = claimed["claim"]["generation"]
            renew = claimed["continuations"]["renew"]
            assert (await call(client, renew["tool"], **renew["arguments"]))["renewed"]
            for task_id, path in MEMBERS:
                await call(client, "claim_task", task_id=task_id, actor="agent-1")
                await prove_and_submit(client, Path(env["ANVIL_ROOT"]), task_id, path, actor="agent-1")
            done = await call(client, "submit_bundle_progress", bundle_id="B1", actor="agent-1", phase="done",
                              complete=True, generation=generation)
            assert done["bundle"]["status"] == "in_review"
            assert await refused(client, "record_bundle_review", actor="agent-1",
                                 **review(1, "correctness")) == "bundle_reviewer_not_independent"
            await call(client, "record_bundle_review", actor="reviewer-1", **review(1, "correctness"))
            assert await refused(client, "record_bundle_review", actor="Reviewer-1",
                                 **review(1, "integration")) == "bundle_duplicate_reviewer"
            gate = (await call(client, "record_bundle_review", actor="reviewer-2", **review(1, "integration")))["gate"]
            assert gate["passed"]
            finalized = await call(client, "finalize_bundle_review", bundle_id="B1", actor="lead")
            assert finalized["accepted"] == ["T001", "T002", "T003"] and finalized["evidence_gaps"] == {}
            await call(client, "checkpoint_bundle", bundle_id="B1", actor="agent-1", commit_sha="abcdef1")
            merged = await call(client, "reconcile_bundle", bundle_id="B1", actor="agent-1", commit_sha="abcdef1",
                                merged=True)
            assert merged["changes"] == ["merged"] and merged["bundle"]["status"] == "merged"
            listed = await call(client, "list_bundles")
            assert [(b["id"], b["status"]) for b in listed["bundles"]] == [("B1", "merged")]


# -- HTTP: per-agent tokens say who acts -------------------------------------------------------


@pytest.fixture
def team_server(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], Path]]:
    """The "ready" sample served over HTTP with per-agent tokens (no shared token, no planning mode)."""
    env = anvil_subprocess_env(build_project(tmp_path, "ready"))
    root = env["ANVIL_ROOT"]
    tokens = {name: invoke("add_token", {"name": name, "role": role}, env=env, cwd=root)["token"]
              for name, role in (("lead", "lead"), ("coder", "reviewer"), ("rev-a", "reviewer"),
                                 ("rev-b", "reviewer"), ("agent-x", "agent"))}
    port = free_port()
    log = tmp_path / "server.log"
    process = warm.WarmProcess("anvil", ["serve", "--http", "--port", str(port)], env=env, cwd=root, stdout=log)
    server = ServerProcess(process, port, log)
    try:
        wait_for_port(port, process=process)
        yield server.url, tokens, Path(root)
    finally:
        output = server.stop()
        assert not any(token in output for token in tokens.values())


@asynccontextmanager
async def as_(url: str, token: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="auto",
                          read_timeout_seconds=30) as client:
            yield client


async def test_over_http_tokens_decide_who_coordinates_and_who_may_review(
        team_server: tuple[str, dict[str, str], Path]) -> None:
    url, tokens, root = team_server
    with anyio.fail_after(180):
        async with as_(url, tokens["lead"]) as lead, as_(url, tokens["coder"]) as coder, \
                as_(url, tokens["rev-a"]) as rev_a, as_(url, tokens["rev-b"]) as rev_b, \
                as_(url, tokens["agent-x"]) as agent_x:
            created = await call(lead, "create_bundle", bundle_id="B1", task_ids=["T001", "T002", "T003"],
                                 coordinator="coder")
            assert created["actor_identity"]["authenticated"] and created["bundle"]["created_by"] == "lead"
            assert await refused(agent_x, "claim_bundle", bundle_id="B1") == "not_coordinator"
            claimed = await call(coder, "claim_bundle", bundle_id="B1", shared_tree=True)
            assert claimed["coordinator"] == "coder"
            for task_id, path in MEMBERS:
                await call(coder, "claim_task", task_id=task_id)
                await prove_and_submit(coder, root, task_id, path)
            await call(coder, "submit_bundle_progress", bundle_id="B1", phase="done", complete=True)
            assert await refused(agent_x, "record_bundle_review", **review(1, "correctness")) == "forbidden_by_role"
            assert await refused(coder, "record_bundle_review",
                                 **review(1, "correctness")) == "bundle_reviewer_not_independent"
            assert await refused(rev_a, "record_bundle_review", actor="rev-b",
                                 **review(1, "correctness")) == "actor_mismatch"
            await call(rev_a, "record_bundle_review", **review(1, "correctness"))
            assert await refused(rev_a, "record_bundle_review",
                                 **review(1, "integration")) == "bundle_duplicate_reviewer"
            await call(rev_b, "record_bundle_review", **review(1, "integration"))
            assert await refused(coder, "finalize_bundle_review",
                                 bundle_id="B1") == "bundle_reviewer_not_independent"
            finalized = await call(lead, "finalize_bundle_review", bundle_id="B1")
            assert finalized["evidence_gaps"] == {}
            reviewers = [(r["reviewer"], r["reviewer_authenticated"]) for r in finalized["bundle"]["reviews"]]
            assert reviewers == [("rev-a", True), ("rev-b", True)]
            merged = await call(coder, "reconcile_bundle", bundle_id="B1", pr_url="https://example.com/pr/1",
                                merged=True)
            assert merged["bundle"]["status"] == "merged"


# -- a stalled coordinator ----------------------------------------------------------------------


@pytest.fixture
def claimed_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return use_project(build_project(tmp_path, "bundle_claimed"), monkeypatch)


@asynccontextmanager
async def server_at(env: dict[str, str], seconds: float) -> AsyncIterator[Client]:
    """An in-process server whose clock runs ``seconds`` ahead of the real one."""

    def later() -> datetime:
        return system_clock() + timedelta(seconds=seconds)

    run = functools.partial(invoke, env=env, cwd=env["ANVIL_ROOT"], clock=later)
    async with Client(build_server(all_operations(), run), mode="legacy", read_timeout_seconds=30) as client:
        yield client


async def test_a_stalled_coordinator_is_fenced_out_after_its_lease_runs_out(claimed_bundle: dict[str, str]) -> None:
    day = 24 * 3600  # the scenario's coordinator lease is four hours
    with anyio.fail_after(60):
        async with server_at(claimed_bundle, day) as client:
            assert (await call(client, "list_bundles"))["bundles"][0]["claimed_by"] == "agent-1"
            recovered = await call(client, "claim_bundle", bundle_id="B1", actor="agent-2")
            assert recovered["claim"]["generation"] == 2 and recovered["coordinator"] == "agent-2"
            assert await refused(client, "renew_claim", task_id="B1", target_kind="bundle", actor="agent-1",
                                 generation=1) == "stale_generation"
            assert await refused(client, "submit_bundle_progress", bundle_id="B1", actor="agent-1", phase="late",
                                 generation=1) == "stale_generation"
            assert await refused(client, "release_task", task_id="B1", target_kind="bundle", actor="agent-1",
                                 generation=1) == "stale_generation"
            authorized = await call(client, "claim_task", task_id="T001", actor="agent-2")
            assert authorized["task_id"] == "T001"
