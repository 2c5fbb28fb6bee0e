"""Issue 20 item 6: every byte an agent reads from the MCP server is budgeted, and kept in CI.

Measured with the SDK client against a real project: a spawned ``python -m anvil.mcp`` (stdio) and a
real ``anvil serve --http`` holding per-agent tokens. Byte counts are deterministic (ids, timestamps
and proof paths have fixed lengths), so these are tests, not benchmarks; each prints what it measured.

* tools/list (the tool definitions as the SDK client receives them, plus the server instructions):
  stdio, and over HTTP for an agent, a reviewer, a lead and a runner token, in a project without
  bundles, each at most :data:`MAX_TOOLS_LIST_BYTES`.
* An agent's task loop to an approvable submission (claim_next_task, generate_work_packet,
  prove_command, submit_completion_evidence; the arguments it writes plus the results it reads, as
  the SDK serialises them): at most :data:`MAX_AGENT_LOOP_BYTES`. This is the MCP-only agent of the
  issue's "Must hold": tools alone, over stdio, and its task ends approved.
* A reviewer's decision loop (list_tasks of needs_review, get_task, apply_review_decision): at most
  :data:`MAX_REVIEW_LOOP_BYTES`.
* Over HTTP the server runs no command: the agent claims and reads its packet with tools and proves
  and submits with the CLI (``anvil proof run ... --mcp URL``, ``anvil submit ... --mcp URL``, which
  sends the proof for it). The command lines it writes count; what the CLI prints is reported beside
  the budget (it is human output, not a tool result, and names this machine's paths).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from anvil.ops.invoke import invoke
from anvil.ops.scenarios import VERIFY_COMMAND, do_work, proof_environment
from tests import warm
from tests.mcp.projects import build_project
from tests.mcp.support import ServerProcess, free_port, wait_for_port

pytestmark = pytest.mark.anyio
MAX_TOOLS_LIST_BYTES = 20_000
"""Tool definitions plus the server instructions (issue 20; 24,789 B over stdio and up to 57,364 B for a
lead token before it)."""
MAX_AGENT_LOOP_BYTES = 3_500
"""One task from claim to an approvable submission (9,603 B over stdio before issue 20's compact
results; 3,445 B now)."""
MAX_REVIEW_LOOP_BYTES = 2_500
"""One review decision, from the queue to approval (5,647 B over stdio before; 2,341 B now)."""
PEOPLE = {"agent-1": "agent", "rita": "reviewer", "lead": "lead", "ci": "runner"}
TOKEN_VAR = "ANVIL_BUDGET_TOKEN"


def size(value: Any) -> int:
    """Bytes of ``value`` as compact JSON (UTF-8), the form it travels in."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


async def listing_bytes(client: Client) -> tuple[int, int, int]:
    """The tools/list a client receives: (tools, bytes of the definitions, bytes of the instructions)."""
    tools = (await client.list_tools()).tools
    defined = sum(size(tool.model_dump(mode="json", by_alias=True, exclude_none=True)) for tool in tools)
    return len(tools), defined, len((client.instructions or "").encode("utf-8"))


@dataclass
class Meter:
    """Calls tools and counts what the agent writes (arguments) and reads (the results, as serialised)."""

    client: Client
    spent: int = 0
    cli_output: int = 0

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.client.call_tool(name, arguments)
        assert not result.is_error, (name, result.content)
        spent = size(arguments) + size(result.model_dump(mode="json", by_alias=True, exclude_none=True))
        print(f"  {name}: {spent} B")
        self.spent += spent
        return dict(result.structured_content or {})

    def wrote(self, line: str, output: str) -> None:
        """A CLI command the agent wrote (counted) and the output it printed (reported: the CLI's human
        output is not a tool result, and holds this machine's paths)."""
        self.spent += len(line.encode())
        self.cli_output += len(output.encode())
        print(f"  {line.split(' --')[0]}: {len(line.encode())} B written, {len(output.encode())} B printed")


def stdio_params(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "anvil.mcp"], env=env, cwd=env["ANVIL_ROOT"])


@asynccontextmanager
async def http_client(url: str, token: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy",
                          read_timeout_seconds=60) as client:
            yield client


@dataclass
class Served:
    env: dict[str, str]
    root: Path
    server: ServerProcess
    tokens: dict[str, str]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """The "ready" sample served by ``anvil serve --http`` with a token per person, no planning mode."""
    env = {k: v for k, v in build_project(tmp_path, "ready").items()
           if k not in ("ANVIL_MCP_PLANNING", "ANVIL_MCP_BUNDLES", "ANVIL_ACTOR", "PYTHONPATH")}
    env.update({k: v for k, v in proof_environment().items() if k == "PATH"})
    root = Path(env["ANVIL_ROOT"])
    tokens = {name: invoke("add_token", {"name": name, "role": role, "actor": "lead"}, env=env,
                           cwd=str(root))["token"] for name, role in PEOPLE.items()}
    port = free_port()
    process = warm.WarmProcess("anvil", ["serve", "--http", "--port", str(port)], env=env, cwd=root,
                               stdout=tmp_path / "server.log")
    server = ServerProcess(process, port, tmp_path / "server.log")
    try:
        wait_for_port(port, process=process)
        yield Served(env, root, server, tokens)
    finally:
        log = server.stop()
        assert all(token not in log for token in tokens.values())


async def test_every_tools_list_stays_within_its_budget_with_the_instructions(served: Served) -> None:
    measured: dict[str, tuple[int, int, int]] = {}
    with anyio.fail_after(120):
        async with Client(stdio_params(served.env), mode="legacy", read_timeout_seconds=60) as client:
            measured["stdio (no token)"] = await listing_bytes(client)
        for name, role in PEOPLE.items():
            async with http_client(served.server.url, served.tokens[name]) as client:
                measured[f"http, {role} token"] = await listing_bytes(client)
    for who, (count, defined, told) in measured.items():
        print(f"{who}: {count} tools, {defined} B + {told} B of instructions = {defined + told} B")
    assert all(defined + told <= MAX_TOOLS_LIST_BYTES for _, defined, told in measured.values()), measured
    assert measured["http, runner token"][0] < measured["http, agent token"][0] < measured["http, lead token"][0]


async def test_an_mcp_only_agent_gets_a_task_approved_over_stdio_within_the_loop_budgets(tmp_path: Path) -> None:
    # No PYTHONPATH to this checkout: its ``tests`` package would shadow the sample's (anvil is installed).
    env = {k: v for k, v in build_project(tmp_path, "ready").items()
           if k not in ("ANVIL_MCP_PLANNING", "ANVIL_ACTOR", "PYTHONPATH")}
    env.update({k: v for k, v in proof_environment().items() if k == "PATH"})
    root = Path(env["ANVIL_ROOT"])
    with anyio.fail_after(120):
        async with Client(stdio_params(env), mode="legacy", read_timeout_seconds=60) as client:
            agent, reviewer = Meter(client), Meter(client)
            print("agent loop (stdio):")
            claim = (await agent.call("claim_next_task", {"actor": "agent-1"}))["claim"]
            task, generation = claim["task_id"], claim["generation"]
            packet = await agent.call("generate_work_packet", {"task_id": task})
            assert VERIFY_COMMAND in packet["content"]
            do_work(root, task)
            proof = await agent.call("prove_command", {"task_id": task, "actor": "agent-1",
                                                       "generation": generation, "command": VERIFY_COMMAND})
            assert proof["passed"] and proof["exit_code"] == 0
            handed = await agent.call("submit_completion_evidence", {"task_id": task, "actor": "agent-1",
                                                                     "generation": generation,
                                                                     "proof_files": [proof["path"]]})
            assert handed["task_status"] == "needs_review"
            print("review loop (stdio):")
            queue = await reviewer.call("list_tasks", {"status": "needs_review"})
            assert [row["id"] for row in queue["tasks"]] == [task]
            shown = await reviewer.call("get_task", {"task_id": task})
            assert shown["history"]["evidence"][0]["trust"]["trust_level"] == "client_reported"
            decided = await reviewer.call("apply_review_decision", {"task_id": task, "approve": True,
                                                                    "actor": "rita"})
    assert decided["to_status"] == "done" and decided["decision"] == "accepted"
    print(f"agent loop {agent.spent} B (budget {MAX_AGENT_LOOP_BYTES}); review loop {reviewer.spent} B "
          f"(budget {MAX_REVIEW_LOOP_BYTES})")
    assert agent.spent <= MAX_AGENT_LOOP_BYTES and reviewer.spent <= MAX_REVIEW_LOOP_BYTES


async def test_an_http_agent_and_reviewer_stay_within_the_loop_budgets(served: Served) -> None:
    env = {**served.env, TOKEN_VAR: served.tokens["agent-1"]}
    route = ["--mcp", served.server.url, "--mcp-token-env", TOKEN_VAR]
    with anyio.fail_after(180):
        async with http_client(served.server.url, served.tokens["agent-1"]) as client:
            agent = Meter(client)
            print("agent loop (http, agent token):")
            claim = (await agent.call("claim_next_task", {}))["claim"]
            task = claim["task_id"]
            assert "actor_identity" not in claim  # the token said who: nothing to tell
            assert all("--actor" not in line for line in claim["continuation"]), claim["continuation"]
            await agent.call("generate_work_packet", {"task_id": task})
            do_work(served.root, task)
            for line in claim["continuation"]:
                words = shlex.split(line)
                if words[:3] == ["anvil", "proof", "run"] or words[:2] == ["anvil", "submit"]:
                    cut = words.index("--") if "--" in words else len(words)
                    argv = [*words[1:cut], *route, *words[cut:]]
                    ran = await anyio.to_thread.run_sync(
                        lambda argv=argv: warm.anvil(argv, env=env, cwd=served.root, timeout=120))
                    assert ran.returncode == 0, (line, ran.stdout, ran.stderr)
                    agent.wrote(shlex.join(["anvil", *argv]), ran.stdout + ran.stderr)
        async with http_client(served.server.url, served.tokens["rita"]) as client:
            reviewer = Meter(client)
            print("review loop (http, reviewer token):")
            await reviewer.call("list_tasks", {"status": "needs_review"})
            await reviewer.call("get_task", {"task_id": task})
            decided = await reviewer.call("apply_review_decision", {"task_id": task, "approve": True})
    assert decided["to_status"] == "done"
    print(f"agent loop {agent.spent} B (budget {MAX_AGENT_LOOP_BYTES}) and {agent.cli_output} B of CLI output; "
          f"review loop {reviewer.spent} B (budget {MAX_REVIEW_LOOP_BYTES})")
    assert agent.spent <= MAX_AGENT_LOOP_BYTES and reviewer.spent <= MAX_REVIEW_LOOP_BYTES
