"""prove_command: an MCP agent of a local (stdio) server proves its contract commands with tools
alone, with the runner of ``anvil proof run``; an HTTP server lists no such tool and never runs one."""

from __future__ import annotations

import functools
from typing import Any

import anyio
import pytest
from mcp import Client

from anvil.mcp.server import build_server
from anvil.ops.invoke import invoke
from anvil.ops.registry import all_operations
from anvil.ops.scenarios import VERIFY_COMMAND, do_work, proof_environment
from tests.mcp.support import TOKEN, ThreadedUvicorn
from tests.ops.support import op, refused, scenario

pytestmark = pytest.mark.anyio


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return dict(result.structured_content or {})


async def test_an_mcp_only_agent_claims_proves_and_hands_in_work_with_tools_alone(anvil_env) -> None:
    env = {**anvil_env, **{k: v for k, v in proof_environment().items() if k == "PATH"}}
    root = scenario(env, "ready")
    server = build_server(all_operations(), functools.partial(invoke, env=env, cwd=str(root)))
    with anyio.fail_after(60):
        async with Client(server, mode="legacy", read_timeout_seconds=60) as client:
            assert "prove_command" in {tool.name for tool in (await client.list_tools()).tools}
            claim = await _call(client, "claim_task", {"task_id": "T001", "actor": "agent-1"})
            do_work(root, "T001")
            outside = await client.call_tool("prove_command", {"task_id": "T001", "actor": "agent-1",
                                                               "command": "echo hi"})
            assert outside.is_error and "proof_command_not_in_contract" in outside.content[0].text
            proof = await _call(client, "prove_command", {"task_id": "T001", "actor": "agent-1",
                                                          "generation": claim["generation"],
                                                          "command": VERIFY_COMMAND})
            assert proof["passed"] and proof["exit_code"] == 0 and (root / proof["path"]).is_file()
            assert f"--proof {proof['path']}" in next(line for line in claim["continuation"]
                                                       if line.startswith("anvil submit"))
            handed = await _call(client, "submit_completion_evidence", {
                "task_id": "T001", "actor": "agent-1", "generation": claim["generation"],
                "proof_files": [proof["path"]], "files_changed": ["shortlink/store.py"]})
    assert handed["task_status"] == "needs_review" and "missing_claim_bound_proofs" not in handed  # empty: left out
    evidence = op(anvil_env, "get_task", task_id="T001")["history"]["evidence"][0]
    assert evidence["trust"]["trust_level"] == "client_reported"
    assert evidence["proofs"][0]["command"] == VERIFY_COMMAND and evidence["proofs"][0]["exit_code"] == 0


def test_a_failing_command_is_a_failed_proof_the_submission_then_refuses(anvil_env) -> None:
    scenario(anvil_env, "claimed")  # the work is not done: the test module is missing
    proof = op(anvil_env, "prove_command", task_id="T001", actor="agent-1", command=VERIFY_COMMAND)
    assert proof["passed"] is False and proof["exit_code"] != 0 and proof["output_excerpt"]
    error = refused(anvil_env, "submit_completion_evidence", task_id="T001", actor="agent-1",
                    proof_files=[proof["path"]])
    assert error.code == "proof_failed"


def test_a_dry_run_checks_the_claim_and_the_command_and_runs_nothing(anvil_env) -> None:
    root = scenario(anvil_env, "claimed")
    out = op(anvil_env, "prove_command", task_id="T001", actor="agent-1", command=VERIFY_COMMAND, dry_run=True)
    assert out["exit_code"] is None and out["path"] is None and not (root / ".anvil" / "proofs").exists()
    assert refused(anvil_env, "prove_command", task_id="T001", actor="agent-2", command=VERIFY_COMMAND,
                   dry_run=True).code == "not_owner"


async def _http_tools(url: str) -> set[str]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy",
                          read_timeout_seconds=30) as client:
            return {f"{tool.name}: {tool.description}" for tool in (await client.list_tools()).tools}


async def test_an_http_server_lists_no_proving_tool_and_refuses_to_run_a_command(anvil_env) -> None:
    from anvil.engine.errors import AnvilError
    from anvil.mcp.http_app import build_http_app

    root = scenario(anvil_env, "claimed")
    with pytest.raises(AnvilError) as remote:
        invoke("prove_command", {"task_id": "T001", "actor": "agent-1", "command": VERIFY_COMMAND}, env=anvil_env,
               cwd=str(root), remote=True)
    assert remote.value.code == "proof_needs_local_run" and "anvil proof run T001 --mcp URL" in remote.value.message
    assert not (root / ".anvil" / "proofs").exists(), "nothing ran"
    server = build_server(all_operations(), functools.partial(invoke, env=anvil_env, cwd=str(root)))
    with ThreadedUvicorn(build_http_app(server, token=TOKEN, state_env=anvil_env, state_cwd=str(root))) as running:
        with anyio.fail_after(30):
            listed = await _http_tools(running.url)
    assert not any(line.startswith("prove_command:") for line in listed)
    submit = next(line for line in listed if line.startswith("submit_completion_evidence:"))
    assert "No command runs here" in submit and "anvil proof run" in submit  # the list says how to prove
