"""Seed parity: every tool of the reference server, called the way a client of it calls it (its field
names and shapes, optional fields sent as null), succeeds against anvil's MCP server, and answers
with the fields the reference promises. The proof-related inputs carry real values: artifacts made by
``anvil attest`` and ``anvil proof run`` on a git-bound claim, typed quality findings, ``strict``,
``shared_tree``.

docs/seed-differences.md lists where anvil deliberately differs.
"""

from __future__ import annotations

import base64
import functools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from anvil.engine.work.continuation import command_argv
from anvil.mcp.server import build_server
from anvil.ops.invoke import invoke
from anvil.ops.registry import all_operations
from anvil.ops.scenarios import QUIET_PYTEST, do_work, proof_environment
from tests.gitrepo import make_repo, plan_in_repo
from tests.loopback.support import Project, run_cli

pytestmark = pytest.mark.anyio
MEMBERS = ["T001", "T002", "T003"]
BUNDLE = {"bundle_id": "B1", "cwd": None}

# (scenario, tool, the seed-shaped arguments, output fields the reference promises)
CALLS: list[tuple[str, str, dict[str, Any], tuple[str, ...]]] = [
    ("ready", "get_project_summary", {}, ("task_counts", "active_claim_count", "ready_task_count")),
    ("claimed", "list_tasks", {"status": None, "feature_id": None, "claimed_by": "agent-1"}, ("tasks",)),
    ("ready", "get_task", {"task_id": "T001"}, ("review_tier", "acceptance_criteria")),
    ("claimed", "get_next_task", {"actor": "agent-2", "prd_id": None, "max_blast": None, "max_review_risk": None},
     ("task", "governor")),
    ("claimed", "generate_work_packet", {"task_id": "T001", "format": "json"}, ("format", "content")),
    ("claimed", "check_conflicts", {"task_id": "T004", "proposed_files": ["shortlink/store.py"]}, ("conflicts",)),
    ("ready", "get_dependency_graph", {"scope": "task", "target_id": "T003"}, ("nodes", "edges", "ready_to_claim")),
    ("planned", "edit_dependencies", {"actor": "lead", "add": [["T002", "T001"]], "remove": None, "prd_id": None,
                                      "cwd": None}, ("prd_id", "changed", "added", "removed")),
    ("ready", "claim_task", {"task_id": "T001", "claimed_by": "agent-1", "expected_files": None,
                             "lease_duration_seconds": 900, "shared_tree": True, "cwd": None},
     ("id", "task_id", "claimed_by", "lease_expires_at", "expected_files", "generation")),
    ("claimed", "release_task", {"task_id": "T001", "actor": "agent-1", "reason": None, "target_kind": "task",
                                 "cwd": None}, ("released", "claim_id", "actor_identity")),
    ("claimed", "renew_claim", {"task_id": "T001", "actor": "agent-1", "extend_seconds": 900, "target_kind": "task",
                                "cwd": None}, ("lease_expires_at", "renewed", "actor_identity")),
    ("claimed", "submit_progress", {"task_id": "T001", "actor": "agent-1", "notes": "store done", "phase": "build",
                                    "detail": "tests next", "cwd": None}, ("recorded",)),
    ("claimed", "submit_completion_evidence", {
        "task_id": "T001", "actor": "agent-1", "commands_run": ["pytest -q"], "files_changed": ["shortlink/store.py"],
        "output_excerpt": None, "pr_url": None, "commit_sha": None, "category": None, "cwd": None},
     ("evidence_id", "task_status", "next_ready")),
    ("claimed", "update_task_status", {"task_id": "T001", "to_status": "blocked", "actor": "agent-1",
                                       "reason": None}, ("from_status", "to_status")),
    ("ready", "create_bundle", {**BUNDLE, "prd_id": "default", "task_ids": MEMBERS, "coordinator": "agent-1",
                                "actor": "lead", "max_tasks": 12, "max_serial_stages": 6, "max_reviews": 3,
                                "max_rereviews": 1, "required_angles": ["correctness", "integration"]}, ("bundle",)),
    ("bundled", "list_bundles", {"prd_id": "default", "cwd": None}, ("bundles",)),
    ("bundled", "get_bundle", BUNDLE, ("bundle",)),
    ("bundled", "claim_bundle", {**BUNDLE, "actor": "agent-1", "lease_minutes": 240, "shared_tree": False},
     ("bundle", "claim", "coordinator", "warnings", "continuations")),
    ("bundle_claimed", "generate_bundle_packet", {**BUNDLE, "actor": "agent-1", "format": "markdown"},
     ("format", "content")),
    ("bundle_claimed", "submit_bundle_progress", {**BUNDLE, "actor": "agent-1", "phase": "build", "detail": None,
                                                  "member_task_ids": ["T001"]}, ("bundle", "ready", "blockers")),
    ("bundle_built", "submit_bundle_progress", {**BUNDLE, "actor": "agent-1", "phase": "done", "detail": None,
                                                "member_task_ids": None, "complete": True}, ("bundle", "ready")),
    ("bundle_in_review", "record_bundle_review", {**BUNDLE, "actor": "reviewer-1", "review_round": 1,
                                                  "angle": "correctness", "decision": "approve", "notes": None},
     ("bundle", "gate")),
    ("bundle_reviewed", "finalize_bundle_review", {**BUNDLE, "actor": "lead"}, ("bundle", "gate")),
    ("bundle_approved", "checkpoint_bundle", {**BUNDLE, "actor": "agent-1", "commit_sha": "abcdef1",
                                              "pr_url": None}, ("checkpoint",)),
    ("bundle_approved", "reconcile_bundle", {**BUNDLE, "actor": "agent-1", "commit_sha": None,
                                             "pr_url": "https://example.com/pr/1", "merged": True}, ("bundle",)),
    ("bundle_replaced", "supersede_bundle", {**BUNDLE, "actor": "lead", "replacement_bundle_id": "B2"}, ("bundle",)),
    ("bundle_claimed", "renew_claim", {"task_id": "B1", "actor": "agent-1", "extend_seconds": 900,
                                       "target_kind": "bundle", "cwd": None}, ("lease_expires_at", "renewed")),
    ("bundle_claimed", "release_task", {"task_id": "B1", "actor": "agent-1", "reason": None, "target_kind": "bundle",
                                        "cwd": None}, ("released", "claim_id")),
    ("empty", "init_project", {"name": "From MCP", "cwd": None}, ("project_id", "project_name", "state_dir",
                                                                  "created")),
    ("ready", "get_project_status", {"cwd": None, "prd_id": None},
     ("initialized", "task_counts", "total_tasks", "ready_queue_depth", "active_claim_count")),
    ("initialized", "parse_prd", {"file": "docs/prd.md", "prd_id": None, "cwd": None},
     ("prd_status", "errors", "error_count", "errors_shown", "errors_omitted", "errors_truncated",
      "error_messages_truncated", "prd_path")),
    ("parsed", "assess_prd", {"file": None, "prd_id": None, "cwd": None}, ("prd_source", "advisory", "count",
                                                                          "findings")),
    ("parsed", "review_prd", {"approve": False, "reviewer": "alice", "notes": None, "cwd": None},
     ("from_status", "to_status", "reviewer")),
    ("approved", "plan_tasks", {"cwd": None, "use_llm": True, "prune_force": False, "prd_id": None},
     ("feature_count", "task_count", "warnings", "warnings_shown", "warnings_truncated",
      "warning_messages_truncated", "llm_generated", "llm_provider", "pruned_task_ids", "pruned_feature_ids")),
    ("planned", "score_tasks", {"task_id": None, "prd_id": None, "all_prds": False, "cwd": None},
     ("prd_id", "all_prds", "scored", "skipped_already_scored")),
    ("scored", "review_tasks", {"cwd": None, "prd_id": None, "all_prds": False},
     ("promoted_to_reviewed", "promoted_to_ready", "blocked", "prd_id", "all_prds")),
    ("submitted", "apply_review_decision", {"task_id": "T001", "approve": True, "reviewer": "alice", "reason": None,
                                            "reason_code": None, "cwd": None},
     ("decision", "from_status", "to_status", "reviewer", "next_ready")),
    ("submitted", "apply_review_decision", {"task_id": "T001", "approve": False, "reviewer": "alice",
                                            "reason": "no tests", "reason_code": "quality", "quality_findings": None,
                                            "strict": None, "cwd": None},
     ("rejection", "rejection_metrics")),
    ("submitted", "apply_review_decision", {"task_id": "T001", "approve": True, "reviewer": "alice", "reason": None,
                                            "reason_code": None, "quality_findings": None, "strict": True,
                                            "cwd": None}, ("decision", "to_status", "evidence_gaps")),
    ("unproven", "apply_review_decision", {"task_id": "T001", "approve": False, "reviewer": "alice",
                                           "reason": "misses duplicates", "reason_code": "evidence",
                                           "quality_findings": ["correctness", "tests"], "strict": None, "cwd": None},
     ("rejection", "rejection_metrics", "quality_findings")),
    ("planned", "find_decisions", {"cwd": None}, ("prd_id", "prd_source", "decisions", "counts_by_kind", "total")),
    ("empty", "describe_surface", {}, ("api_version", "envelope", "cli", "mcp", "operation_catalog")),
]
SEED_TOOLS = 36


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    project = Project(tmp_path_factory.mktemp("seed-calls"))
    project.env.pop("ANVIL_ACTOR")  # a seed client names who acts in its arguments
    yield project


def test_the_calls_cover_every_tool_of_the_seed() -> None:
    tools = {tool for _, tool, _, _ in CALLS}
    assert len(tools) == SEED_TOOLS and tools <= {op.name for op in all_operations()}


async def call_tool(project: Project, tool: str, arguments: dict[str, Any]) -> Any:
    """A seed-shaped call of ``tool`` on the project as it is, through the SDK client: its result."""
    run = functools.partial(invoke, env=project.env, cwd=str(project.root))
    with anyio.fail_after(30):
        async with Client(build_server(all_operations(), run, planning=True), mode="legacy",
                          read_timeout_seconds=30) as client:
            return await client.call_tool(tool, arguments)


async def call(project: Project, scenario: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    project.reset(scenario)
    result = await call_tool(project, tool, arguments)
    assert result.is_error is False, (tool, result.content)
    assert result.structured_content is not None
    return result.structured_content


@pytest.mark.parametrize(("scenario", "tool", "arguments", "promised"), CALLS,
                         ids=[f"{tool}-{i}" for i, (_, tool, _, _) in enumerate(CALLS)])
async def test_a_seed_shaped_call_succeeds_with_the_promised_fields(project: Project, scenario: str, tool: str,
                                                                    arguments: dict[str, Any],
                                                                    promised: tuple[str, ...]) -> None:
    output = await call(project, scenario, tool, arguments)
    missing = [name for name in promised if name not in output]
    assert not missing, f"{tool} lacks {missing}"


async def test_the_promised_values_mean_what_the_seed_says(project: Project) -> None:
    offered = await call(project, "claimed", "get_next_task", {"actor": "agent-2"})
    assert offered["task"]["conflict_warnings"] == []  # tests/ops/handlers/test_claiming.py shows one
    governor = offered["governor"]
    assert governor["window_start"] < governor["as_of"] and governor["configured_floor"] is None
    parsed = await call(project, "initialized", "parse_prd", {"file": "docs/prd.md"})
    assert (parsed["prd_path"], parsed["errors_shown"], parsed["errors_truncated"]) == ("custom", 0, False)
    managed = await call(project, "parsed", "parse_prd", {})
    assert managed["prd_path"] == "default"
    assert (await call(project, "parsed", "assess_prd", {}))["prd_source"] == "default"
    scored = await call(project, "planned", "score_tasks", {"all_prds": True})
    assert (scored["all_prds"], scored["prd_id"]) == (True, None)
    # On unproven evidence an evidence rejection stays evidence, resting on the gaps; a process rejection needs
    # a recorded process fact (issue 24 item 5), which unproven work inside its claim's files lacks.
    rejected = await call(project, "unproven", "apply_review_decision", {
        "task_id": "T001", "approve": False, "reviewer": "alice", "reason": "no proof", "reason_code": "evidence"})
    assert rejected["rejection"]["category"] == "evidence" and rejected["rejection"]["counting"] is False
    assert rejected["rejection"]["basis"]
    metrics = rejected["rejection_metrics"]
    assert (metrics["numerator"], metrics["denominator"], metrics["counting"]) == (0, 0, False)
    process = await call(project, "unproven", "apply_review_decision", {
        "task_id": "T001", "approve": False, "reviewer": "alice", "reason": "wrong file", "reason_code": "process"})
    assert (process["rejection"]["category"], process["rejection"]["counting"]) == ("quality", True)
    # Typed findings are about the work: the rejection counts as quality whatever reason is asserted.
    found = await call(project, "unproven", "apply_review_decision", {
        "task_id": "T001", "approve": False, "reviewer": "alice", "reason": "misses duplicates",
        "reason_code": "evidence", "quality_findings": ["correctness"], "strict": None})
    assert found["rejection"]["category"] == "quality" and found["rejection"]["counting"] is True
    assert found["quality_findings"] == ["correctness"]
    # strict holds even an advisory project to the proofs; the proven sample passes it.
    strict = {"task_id": "T001", "approve": True, "reviewer": "alice", "strict": True}
    assert (await call(project, "submitted", "apply_review_decision", strict))["evidence_gaps"] == []
    project.reset("unproven_advisory")
    assert await refused(project, "apply_review_decision", strict) == "claim_unproven"
    assert (await call(project, "unproven_advisory", "apply_review_decision", {**strict, "strict": None}))[
        "evidence_gaps"] == ["no passing proof of `python -m unittest -q tests/test_store.py`"]
    shared = await call(project, "ready", "claim_task", {"task_id": "T001", "claimed_by": "agent-1",
                                                         "shared_tree": True})
    assert (shared["claimed_by"], shared["git_metadata"], shared["worktree_path"]) == ("agent-1", None, None)


async def refused(project: Project, tool: str, arguments: dict[str, Any]) -> str:
    """The error code of a seed-shaped call on the project as it is."""
    result = await call_tool(project, tool, arguments)
    assert result.is_error is True, (tool, result.structured_content)
    return str(json.loads(result.content[0].text)["error"]["code"])  # type: ignore[union-attr]


async def test_a_seed_shaped_attestation_and_command_proofs_are_verified_and_recorded(tmp_path: Path) -> None:
    """The reference's attestation_base64 and command_proof_artifacts_base64, carrying real artifacts
    that the anvil CLI made (``anvil attest``, ``anvil proof run``) on a git-bound claim."""
    root = make_repo(tmp_path / "repo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANVIL_")}
    env.update(ANVIL_ROOT=str(root), ANVIL_HOME=str(tmp_path / "home"),
               **{k: v for k, v in proof_environment().items() if k == "PATH" or k in QUIET_PYTEST})
    plan_in_repo(env)

    def cli(*argv: str) -> dict[str, Any]:
        result = run_cli([*argv], env, str(root))
        assert result.code == 0, result.stdout + result.stderr
        return dict(json.loads(result.stdout))

    claim = cli("claim", "T001", "--branch", "--actor", "agent-1", "--json")
    do_work(root, "T001")
    attestation = cli("attest", "T001", "--actor", "agent-1", "--json")
    (command,) = [step["command"] for step in claim["continuation"]["prove"]]
    proof = cli("proof", "run", "T001", "--actor", "agent-1", "--json", "--", *command_argv(command))

    def encoded(path: str) -> str:
        return base64.b64encode(Path(path).read_bytes()).decode()

    run = functools.partial(invoke, env=env, cwd=str(root))
    with anyio.fail_after(60):
        async with Client(build_server(all_operations(), run), mode="legacy", read_timeout_seconds=60) as client:
            progress = await client.call_tool("submit_progress", {
                "task_id": "T001", "actor": "agent-1", "notes": None, "phase": "build", "detail": None,
                "attestation_base64": encoded(attestation["path"]), "cwd": None})
            evidence = await client.call_tool("submit_completion_evidence", {
                "task_id": "T001", "actor": "agent-1", "commands_run": [command],
                "files_changed": ["shortlink/store.py"], "output_excerpt": None, "pr_url": None, "commit_sha": None,
                "category": None, "command_proof_artifacts_base64": [encoded(proof["path"])], "cwd": None})
    assert progress.is_error is False and evidence.is_error is False, (progress.content, evidence.content)
    recorded, submitted = progress.structured_content, evidence.structured_content
    assert recorded is not None and submitted is not None
    assert recorded["recorded"] is True and recorded["event_action"] == "progress.attested"
    receipt = recorded["attestation"]
    assert (receipt["digest"], receipt["generation"], receipt["trust_mode"]) == (
        attestation["digest"], claim["generation"], "claim_owner_self_attested")
    assert receipt["kind"] in ("commit", "paths")
    assert submitted["task_status"] == "needs_review" and submitted["missing_claim_bound_proofs"] == []
    (accepted,) = submitted["claim_bound_command_proofs"]
    assert (accepted["digest"], accepted["command"], accepted["trust_mode"]) == (
        proof["digest"], command, "claim_owner_self_attested")


async def test_a_non_owners_release_is_refused_unless_it_is_an_explicit_takeover(project: Project) -> None:
    project.reset("claimed")
    run = functools.partial(invoke, env=project.env, cwd=str(project.root))
    async with Client(build_server(all_operations(), run, planning=True), mode="legacy",
                      read_timeout_seconds=30) as client:
        refused = await client.call_tool("release_task", {"task_id": "T001", "actor": "agent-2"})
        assert refused.is_error is True
        error = json.loads(refused.content[0].text)["error"]  # type: ignore[union-attr]
        assert error["code"] == "confirmation_required" and error["details"]["owner"] == "agent-1"
        still = await client.call_tool("get_task", {"task_id": "T001"})
        assert still.structured_content["claim"]["claimed_by"] == "agent-1"  # type: ignore[index]
        taken = await client.call_tool("release_task", {"task_id": "T001", "actor": "lead", "confirm": True})
        assert taken.is_error is False
