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
import mcp_types as types
import pytest
from mcp import Client

from anvil.engine.work.continuation import command_argv
from anvil.mcp.server import build_server
from anvil.ops.invoke import invoke
from anvil.ops.registry import all_operations
from anvil.ops.scenarios import QUIET_PYTEST, do_work, proof_environment
from tests.gitrepo import git, make_repo, plan_in_repo
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
    # Commands as text and no proof: the enforcing gate refuses that (docs/seed-differences.md), an advisory one
    # takes it as the reference does.
    ("claimed_advisory", "submit_completion_evidence", {
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


@pytest.fixture(autouse=True)
def reference_shaped_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client of the reference reads every field it promises, null and empty ones included: it runs the
    server with ``ANVIL_MCP_RESULT=full`` (results are compact by default; docs/seed-differences.md)."""
    monkeypatch.setenv("ANVIL_MCP_RESULT", "full")


def test_the_calls_cover_every_tool_of_the_seed() -> None:
    tools = {tool for _, tool, _, _ in CALLS}
    assert len(tools) == SEED_TOOLS and tools <= {op.name for op in all_operations()}


async def call_tool(project: Project, tool: str, arguments: dict[str, Any], *, mode: str = "legacy",
                    planning: bool = True, env: dict[str, str] | None = None, **options: Any) -> Any:
    """A seed-shaped call of ``tool`` on the project as it is, through the SDK client: its result
    (``mode`` the protocol negotiation, ``env`` more variables, ``options`` the client's, e.g. a
    sampling callback)."""
    run = functools.partial(invoke, env={**project.env, **(env or {})}, cwd=str(project.root))
    with anyio.fail_after(30):
        async with Client(build_server(all_operations(), run, planning=planning), mode=mode,
                          read_timeout_seconds=30, **options) as client:
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
    git(root, "add", "shortlink", "tests")
    git(root, "commit", "-q", "-m", "T001")  # the seed's commit_sha is null: the server reads the branch head

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
        attestation["digest"], claim["generation"], "client_reported")
    assert receipt["kind"] in ("commit", "paths")
    assert submitted["task_status"] == "needs_review" and submitted["missing_claim_bound_proofs"] == []
    (accepted,) = submitted["claim_bound_command_proofs"]
    assert (accepted["digest"], accepted["command"], accepted["trust_mode"]) == (
        proof["digest"], command, "client_reported")
    assert submitted["commit_sha"] == git(root, "rev-parse", "HEAD").strip()


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


# -- issue 24: seed-shaped calls, one per item -----------------------------------------------------------

FEATURES_ONLY = """# Project: Notes

## Summary

A note-taking CLI for a solo developer who wants plain files.

## Requirements

- R001: A user can add a note from the command line.

## Features

### F001: Adding notes

Append a note with a timestamp to the notes file.

**Requirements:** R001
"""
DRAFT = """## Tasks

### T001: Append notes to the file

**Feature:** F001
**Priority:** high
**Likely files:** notes/cli.py
**Dependencies:** none
**Acceptance criteria:**
- `notes add hello` appends a line ending in hello.
**Verification:**
- `python -m pytest -q tests/test_cli.py`
"""


def local(project: Project, tool: str, **arguments: Any) -> dict[str, Any]:
    """A direct call on the project (setting a scene), as its caller names itself."""
    return invoke(tool, arguments, env=project.env, cwd=str(project.root))


async def test_item_1_plan_tasks_samples_a_default_sdk_client_and_refuses_one_that_cannot(project: Project) -> None:
    project.reset("initialized")
    (project.root / "notes.md").write_text(FEATURES_ONLY, encoding="utf-8")
    local(project, "parse_prd", file="notes.md")
    local(project, "review_prd", actor="lead")
    local(project, "review_prd", actor="lead", approve=True)
    seed = {"cwd": None, "use_llm": True, "prune_force": False, "prd_id": None}
    assert await refused(project, "plan_tasks", seed) == "no_tasks"

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text=DRAFT), model="m")

    result = await call_tool(project, "plan_tasks", seed, mode="auto", sampling_callback=sample)
    assert result.is_error is False, result.content
    planned = result.structured_content
    assert (planned["llm_generated"], planned["llm_provider"], planned["task_count"]) == (True, "mcp_sampling", 1)


async def test_item_2_describe_surface_carries_the_build_identity_the_seed_names(project: Project) -> None:
    described = await call(project, "empty", "describe_surface", {})
    for field in ("api_version", "engine_version", "display_version", "build_kind", "commit", "tag", "tag_distance",
                  "dirty", "schema_version", "envelope", "built_at", "version"):
        assert field in described, field
    assert described["api_version"].startswith("c") and described["build_kind"] in (
        "source_checkout", "package_build", "unknown")


async def test_item_4_claim_bundle_in_a_worktree_isolated_project_says_isolation_holds(project: Project) -> None:
    project.reset("bundled")
    local(project, "configure_project", git_mode="worktree", actor="lead")
    result = await call_tool(project, "claim_bundle", {**BUNDLE, "actor": "agent-1", "lease_minutes": 240,
                                                       "shared_tree": False})
    assert result.is_error is False and result.structured_content["warnings"] == []


async def test_item_5_a_risk_ceiling_offers_only_confirmed_scores(project: Project) -> None:
    project.reset("planned")
    local(project, "review_tasks", actor="lead")
    local(project, "score_tasks", actor="lead")
    ask = {"actor": "agent-2", "prd_id": None, "max_blast": 5, "max_review_risk": None}
    assert (await call_tool(project, "get_next_task", ask)).structured_content["task"] is None
    local(project, "review_tasks", actor="lead")
    assert (await call_tool(project, "get_next_task", ask)).structured_content["task"]["id"] == "T001"


async def test_item_6_a_request_id_belongs_to_one_actor_fencing_holds_after_release_and_revisions_are_checked(
        project: Project) -> None:
    project.reset("ready")
    first = await call_tool(project, "claim_task", {"task_id": "T001", "claimed_by": "agent-1",
                                                    "idempotency_key": "44444444-4444-4444-8444-444444444444"})
    assert first.is_error is False
    assert await refused(project, "claim_task", {"task_id": "T002", "claimed_by": "agent-2",
                                                 "idempotency_key": "44444444-4444-4444-8444-444444444444"}) == \
        "idempotency_conflict"
    local(project, "configure_project", require_fencing=True, actor="lead")
    local(project, "release_task", task_id="T001", actor="agent-1", generation=1)
    assert await refused(project, "submit_progress", {"task_id": "T001", "actor": "agent-1", "notes": "late",
                                                      "phase": None, "detail": None, "cwd": None}) == \
        "fencing_required"
    revision = (await call_tool(project, "get_task", {"task_id": "T002"})).structured_content["revision"]
    assert await refused(project, "claim_task", {"task_id": "T002", "claimed_by": "agent-2",
                                                 "expected_revision": "0" * 64}) == "stale_revision"
    claimed = await call_tool(project, "claim_task", {"task_id": "T002", "claimed_by": "agent-2",
                                                      "expected_revision": revision})
    assert claimed.is_error is False


async def test_item_8_status_scoring_assessment_files_and_the_reserved_dry_run(project: Project) -> None:
    status = await call(project, "ready", "get_project_status", {"cwd": None, "prd_id": None})
    scoped = await call_tool(project, "get_project_status", {"cwd": None, "prd_id": None},
                             env={"ANVIL_PRD": "elsewhere"})
    assert status["total_tasks"] > 0 and scoped.structured_content["total_tasks"] == 0
    assert await refused(project, "get_project_status", {"cwd": str(project.base / "no-such-dir"),
                                                         "prd_id": None}) == "root_missing"
    assert await refused(project, "score_tasks", {"task_id": None, "prd_id": "nope", "all_prds": False,
                                                  "cwd": None}) == "prd_not_found"
    (project.root / "broken.md").write_text(FEATURES_ONLY + "\n## Tasks\n\n### T001: x\n\n**Feature:** F9\n",
                                            encoding="utf-8")
    assessed = await call_tool(project, "assess_prd", {"file": "broken.md", "prd_id": None, "cwd": None})
    assert assessed.structured_content["error_count"] >= 1 and assessed.structured_content["findings"] == []
    rehearsed = await call_tool(project, "claim_task", {"task_id": "T001", "claimed_by": "agent-1",
                                                        "expected_files": [], "anvil_dry_run": True})
    assert rehearsed.is_error is False, rehearsed.content
    assert (rehearsed.structured_content["dry_run"], rehearsed.structured_content["expected_files"]) == (True, [])
    assert local(project, "get_task", task_id="T001")["claim"] is None


async def test_item_9_a_reviewer_on_the_default_surface_decides_without_the_planning_tools(project: Project) -> None:
    project.reset("submitted")
    result = await call_tool(project, "apply_review_decision", {
        "task_id": "T001", "approve": True, "reviewer": "alice", "reason": None, "reason_code": None, "cwd": None},
        planning=False)
    assert result.is_error is False and result.structured_content["to_status"] == "done"


async def test_item_11_the_graph_as_mermaid_outlines_the_critical_path_with_a_class(project: Project) -> None:
    graph = await call(project, "claimed", "get_dependency_graph", {"scope": "all", "target_id": None,
                                                                    "format": "mermaid"})
    assert f"  class {','.join(graph['critical_path'])} critical\n" in graph["diagram"]
    assert "\n  style " not in graph["diagram"]


async def test_item_12_a_prd_from_outside_the_project_is_reread(project: Project) -> None:
    project.reset("initialized")
    outside = project.base / "specs" / "prd.md"
    outside.parent.mkdir(exist_ok=True)
    outside.write_text(FEATURES_ONLY + "\n" + DRAFT, encoding="utf-8")
    first = await call_tool(project, "parse_prd", {"source": outside.read_text(encoding="utf-8"),
                                                   "source_path": str(outside), "prd_id": None, "cwd": None})
    assert first.structured_content["recorded"] is True
    outside.write_text(outside.read_text(encoding="utf-8").replace("Adding notes", "Adding a note"),
                       encoding="utf-8")
    again = await call_tool(project, "parse_prd", {"file": None, "prd_id": None, "cwd": None})
    assert (again.structured_content["recorded"], again.structured_content["revision"]) == (True, 2)


async def test_item_13_approving_with_open_decisions_warns_and_a_rejection_says_what_follows(
        project: Project) -> None:
    project.reset("parsed")
    local(project, "review_prd", actor="lead")
    approved = await call_tool(project, "review_prd", {"approve": True, "reviewer": "alice", "notes": None,
                                                       "cwd": None})
    assert approved.structured_content["warnings"] and approved.structured_content["open_decisions"] == 1
    rejected = await call(project, "submitted", "apply_review_decision", {
        "task_id": "T001", "approve": False, "reviewer": "alice", "reason": "redo", "reason_code": None,
        "cwd": None})
    assert "back in drafted" in rejected["rejection"]["next_step"]
