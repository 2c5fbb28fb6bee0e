"""What a tool result carries to a model: the compact document and its short text copy (issue 20 item 6),
through the real server and SDK client against a real project; and the full document the CLI asks for."""

from __future__ import annotations

import functools
import json
from typing import Any

import anyio
import pytest
from mcp import Client

from anvil.engine.work.continuation import proof_file
from anvil.mcp.rendering import MAX_TEXT, render
from anvil.mcp.results import compact, continuation_lines, tells_the_caller
from anvil.mcp.server import build_server
from anvil.ops.invoke import invoke
from anvil.ops.registry import all_operations
from anvil.ops.scenarios import VERIFY_COMMAND
from tests.ops.support import scenario

pytestmark = pytest.mark.anyio


async def _calls(env: dict[str, str], root: str, *calls: tuple[str, dict[str, Any], dict[str, Any] | None]
                 ) -> list[Any]:
    server = build_server(all_operations(), functools.partial(invoke, env=env, cwd=root), planning=True)
    with anyio.fail_after(60):
        async with Client(server, mode="legacy", read_timeout_seconds=60) as client:
            return [await client.call_tool(name, arguments, meta=meta) for name, arguments, meta in calls]


async def test_a_claim_reads_as_command_lines_without_nulls_and_the_full_document_is_the_direct_one(
        anvil_env: dict[str, str]) -> None:
    root = str(scenario(anvil_env, "ready"))
    direct = invoke("claim_task", {"task_id": "T002", "actor": "agent-1", "dry_run": True}, env=anvil_env, cwd=root)
    shaped, full = await _calls(anvil_env, root, ("claim_task", {"task_id": "T001", "actor": "agent-1"}, None),
                                ("claim_task", {"task_id": "T002", "actor": "agent-1", "dry_run": True},
                                 {"anvil/result": "full"}))
    claim = shaped.structured_content
    assert "task_id" not in claim and "actor_identity" not in claim and "dry_run" not in claim
    assert None not in claim.values() and [] not in claim.values()
    assert claim["continuation"] == [
        "anvil proof run T001 --generation 1 --actor agent-1 -- python -m unittest -q tests/test_store.py",
        f"anvil submit T001 --generation 1 --actor agent-1 --proof {proof_file('T001', 1, VERIFY_COMMAND)}",
        "anvil renew T001 --generation 1 --actor agent-1"]
    assert shaped.content[0].text == "Claimed the task, generation 1."
    assert {k for k in full.structured_content if k not in ("id", "claimed_at", "lease_expires_at")} == \
        {k for k in direct if k not in ("id", "claimed_at", "lease_expires_at")}
    assert full.structured_content["actor_identity"] == direct["actor_identity"]
    assert json.loads(full.content[0].text) == full.structured_content


def test_actor_identity_is_sent_only_when_the_server_chose_the_name() -> None:
    declared = {"actor": "agent-1", "authenticated": False, "how": "declared", "role": None, "notice": "fixed"}
    token = {"actor": "agent-1", "authenticated": True, "how": "token", "role": "agent", "notice": None}
    assert not tells_the_caller(declared, {"actor": "Agent-1"})  # the caller named it (any case)
    assert not tells_the_caller(declared, {"reviewer": "agent-1"})
    assert not tells_the_caller(token, {})  # its token named it (and the result's _meta says so)
    assert tells_the_caller(declared, {})  # the server's ANVIL_ACTOR
    chosen = compact({"renewed": True, "actor_identity": {**declared, "how": "default"}, "dry_run": False}, {})
    assert chosen == {"renewed": True, "actor_identity": {"actor": "agent-1", "authenticated": False,
                                                          "how": "default"}}
    assert "Acting as agent-1 (default" in render("renew_claim", chosen)


def test_compaction_keeps_false_zero_and_empty_text_and_items_of_arrays() -> None:
    output = {"passed": False, "exit_code": 0, "output_excerpt": "", "rows": [{"a": None, "b": []}, {"c": 1}],
              "nothing": None, "none": [], "empty": {}, "dry_run": True, "generation": 3, "task_id": "T9"}
    assert compact(output, {"generation": 3, "task_id": "T1"}) == {
        "passed": False, "exit_code": 0, "output_excerpt": "", "rows": [{}, {"c": 1}], "dry_run": True,
        "task_id": "T9"}


def test_a_continuation_keeps_its_order_and_names_what_no_command_proves() -> None:
    steps = {"cd": "/work/my tree", "prove": [{"command": "pytest", "artifact": "a.json",
                                              "argv": ["anvil", "proof", "run", "T1", "--", "pytest"]}],
             "attest_progress": [["anvil", "attest", "T1"], ["anvil", "progress", "T1"]],
             "commit": ["git", "commit", "-am", "T1: x"], "submit": ["anvil", "submit", "T1"],
             "renew": ["anvil", "renew", "T1"], "unprovable": ["look at it"]}
    assert continuation_lines(steps) == [
        "cd '/work/my tree'", "anvil proof run T1 -- pytest", "anvil attest T1", "anvil progress T1",
        "git commit -am 'T1: x'", "anvil submit T1", "anvil renew T1",
        "# not a runnable command, prove it another way: look at it"]
    fenced = {"prove": [{"argv": ["anvil", "proof", "run", "T1", "--actor", "Ann", "--", "x", "--actor", "Ann"]}],
              "submit": ["anvil", "submit", "T1", "--actor", "bob"]}
    assert continuation_lines(fenced, token_actor="ann") == [  # a token names ann: her --actor goes
        "anvil proof run T1 -- x --actor Ann", "anvil submit T1 --actor bob"]


def test_every_text_copy_is_short_and_a_renderer_never_fails_a_call() -> None:
    assert render("get_task", {"id": "T1"}) == "id: T1."  # a document it cannot read: its plain fields
    long = render("list_tasks", {"tasks": [{"id": f"T{n:03d}", "status": "ready"} for n in range(500)],
                                 "count": 500})
    assert len(long) <= MAX_TEXT and long.startswith("500 tasks: T000 ready") and "and 492 more" in long
    assert render("anything", {"title": "x" * 500, "ok": True}) == "title: 500 characters; ok: true."


async def test_a_host_can_ask_for_the_json_text(anvil_env: dict[str, str]) -> None:
    root = str(scenario(anvil_env, "ready"))
    (texted,) = await _calls(anvil_env, root, ("get_next_task", {}, {"anvil/text": "json"}))
    assert json.loads(texted.content[0].text) == texted.structured_content
    assert texted.structured_content["task"]["id"] == "T001"
