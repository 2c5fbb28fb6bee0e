"""Shaping the MCP tool schemas: what pydantic generates, cut to what a client needs on every turn.

Tool lists are sent to a model on every turn, so every byte counts: titles, null defaults and
length limits go (limits are still enforced on every call), single-use definitions are inlined,
and inputs shared by many tools are described once, in the server instructions.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

from pydantic import BaseModel

from anvil.ops.registry import Operation

OUTPUT_NOISE = frozenset({"default", "additionalProperties", "required"})
# Unknown inputs are refused on every call whether or not the schema says so.
INPUT_NOISE = frozenset({"additionalProperties"})
# Upper size limits are enforced on every call; publishing them on every turn costs more than it helps.
WIRE_NOISE = frozenset({"maxLength", "maxItems", "minLength"})


SHARED_FIELDS: dict[str, str] = {
    "task_id": "a task id such as T001",
    "actor": "who is acting (an agent or person name); claims, progress and evidence are attributed to it",
    "prd_id": "which PRD (default: the only or the default PRD)",
    "idempotency_key": "retry key: repeating a call with the same key and input returns the first result "
                       "and writes nothing; the same key with another input, or from another actor, is refused",
    "dry_run": "run every check and report the result, but write nothing (anvil_dry_run is accepted as the same "
               "input)",
    "confirm": "required for the destructive variant of a call",
    "generation": "fencing token from claim_task: calls naming an older claim generation are refused",
    "claim_id": "fencing token from claim_task, like generation",
    "max_blast": "the highest blast_radius score (1-5) of a task to offer or take; tasks whose scores no "
                 "review_tasks confirmed are skipped",
    "max_review_risk": "the highest review_risk score (1-5) of a task to offer or take; tasks whose scores no "
                       "review_tasks confirmed are skipped",
    "wait_seconds": "when nothing is claimable, block up to this many seconds (at most 300, under a client's "
                    "request timeout) until a task is: woken by the write that frees one, not by polling; the "
                    "empty answer comes at the deadline; 0 answers at once",
    "cwd": "the project directory for this call: on a local server it selects the project (default: the "
           "server's own); over HTTP it must lie inside the project the server serves (relative paths are "
           "relative to it)",
    "bundle_id": "a bundle id such as B1",
    "target_kind": "what renew_claim and release_task act on: task (default), or bundle, when task_id names a "
                   "bundle whose coordinator claim is meant (a task and a bundle may share an id)",
    "lease_duration_seconds": "a claim's lease length in seconds (renew_claim extends it)",
    "git_mode": "what a claim does in git: off (nothing), branch (the caller's checkout switches to the claim "
                "branch) or worktree (a worktree of its own); on a claim tool it is this claim's (default: the "
                "project's), on configure_project the project's default",
    "worktree_path": "where a worktree-mode claim's worktree goes (absolute over MCP)",
    "git_plan": "facts about the caller's git checkout, sent by the anvil CLI; other clients omit it",
    "phase": "a progress label such as build, tests or done",
    "detail": "more about the phase",
    "commit_sha": "the commit delivered (a submission in a git mode: the claim branch's head, which the CLI reads)",
    "tree_sha": "the tree of commit_sha (the CLI sends it with the commit)",
    "pr_url": "the pull request delivered",
    "reason_code": "a rejection's kind: quality (the default; counts against the implementer's accept rate), "
                   "evidence (holds only while a verification command lacks a passing proof, or a named claim or "
                   "artifact is unproven) or process (holds only when the submission changed a file outside its "
                   "claim's files, or none); one that does not hold is recorded as quality",
    "quality_findings": "what is wrong with rejected work, any of: correctness, tests, regression, security, "
                        "performance, maintainability, documentation, scope; a rejection with findings counts as "
                        "quality",
    "strict": "on an approval, true holds it to a passing proof of every verification command even under an "
              "advisory evidence gate; null or false: the project's gate",
}
"""Inputs that mean the same on every tool: described once (server instructions, docs), not per tool."""

SHARED_OUTPUTS: dict[str, str] = {
    "dry_run": "on every result of a tool that writes: true when it was a dry run and nothing was written",
    "blocked_by": "on a task: the ids of its dependencies that are not done yet (a ready task with any is "
                  "waiting, not claimable)",
    "actor_identity": "on every result of a tool that writes: who made the call, as {actor, authenticated, "
                      "how (token, declared or default), role (of an authenticated token, else null), notice "
                      "(null when authenticated)}; only a per-agent token over HTTP makes authenticated true",
    "bundle": "on bundle tools, the bundle in full: {id, prd_id, status (planned, active, in_review, "
              "changes_requested, approved, merged, replan_required, superseded), coordinator, policy {max_tasks, "
              "max_serial_stages, max_reviews, max_rereviews, required_angles}, members [{task_id, title, status, "
              "stage, authorized}], claim (the live coordinator claim {id, bundle_id, claimed_by, generation, "
              "claimed_at, lease_expires_at}, or null), review_round, reviews [{round, reviewer, angle, decision, "
              "notes, reviewed_at, reviewer_role, reviewer_authenticated}], gate, delivery {commit_sha, pr_url, "
              "merged, checkpoints [{number, commit_sha, pr_url, source, actor, recorded_at}]}, supersedes, "
              "superseded_by, created_at, created_by}",
    "trust_level": "what a submission's proofs amount to: verified (someone other than the implementer re-ran "
                   "every contract command on the submitted commit), client_reported (passing proofs from the "
                   "implementer's own runs, signed or not) or unproven (no passing proof)",
    "commit_sha": "the commit a submission or review decision is about (a git mode: the claim branch's head), or "
                  "null",
    "gate": "the review gate of a bundle's current round: {round, required_angles, covered_angles, "
            "missing_angles, independent_approvers, required_approvals, blocking [{reviewer, angle, decision}], "
            "reviews_left, rounds_left, passed}",
    "task": "a task in full (as get_task returns it, without claim and history), or null: {id, prd_id, "
            "feature_id, title, description, status, priority, type, likely_files, dependencies, "
            "acceptance_criteria, verification, scores (or null), review_tier, conflict_warnings [{file, task_id, "
            "status}]: advisory, tasks under way or in review that share a likely file}",
    "claim": "a live claim, or null: {id, task_id (a task claim) or bundle_id (a bundle's coordinator claim), "
             "claimed_by, generation (the fencing token), claimed_at, lease_expires_at, expected_files (a task "
             "claim)}",
    "next_ready": "the next claimable task after this call, or null: {id, title, priority}",
    "review_tier": "on a task, how carefully its review should look, from its scores: light (blast_radius, "
                   "review_risk and complexity all 2 or less), max (blast_radius or review_risk 4 or more) or "
                   "standard (anything else, and unscored tasks)",
    "scores": "on a task, its six scores (complexity, parallelizability, context_load, blast_radius, review_risk, "
              "agent_suitability, each 1-5), or null before scoring",
    "rejection": "on a rejection, how it was classified, else null: {category (quality, evidence or process), "
                 "counting (only quality counts against the author's accept rate), reason, evidence_id, author, "
                 "reviewed_at, basis (the recorded facts an evidence or process category rests on), next_step "
                 "(what happens to the task now)}",
}
"""Output fields that mean the same on every tool: published as a plain object, described once."""

CONTINUATION_SCHEMA: dict[str, Any] = {"type": ["array", "object"]}
"""A claim's ``continuation``: its command lines (a compact result), or the object of argv arrays a
complete document carries (``anvil/result: full``, see :mod:`anvil.mcp.results`)."""

ENVELOPE_OUTPUTS = frozenset({"dry_run", "actor_identity"})
"""Output fields on every result of a tool that writes: described once in the server instructions
(:data:`SHARED_OUTPUTS`) and left out of each tool's output schema, which never forbids extra fields."""


def shared_conventions() -> str:
    """The text describing :data:`SHARED_FIELDS`, sent once as the MCP server's instructions."""
    lines = [f"- {name}: {text}." for name, text in SHARED_FIELDS.items()]
    outputs = [f"- {name}: {text}." for name, text in SHARED_OUTPUTS.items()]
    return ("anvil is the system of record for this project's PRD, tasks and claims. Typical loop: "
            "get_next_task, claim_task, generate_work_packet, renew_claim while working, submit_progress, commit "
            "on the claim branch, prove each contract command (prove_command on a local server; over HTTP `anvil "
            "proof run TASK --mcp URL -- CMD`), submit_completion_evidence with proof_files (the enforcing gate "
            "refuses it without passing proofs; the claim stays live). Inputs shared by many tools:\n"
            + "\n".join(lines)
            + "\nOutputs shared by many tools (an array in a result holds strings unless its schema says "
            "otherwise):\n" + "\n".join(outputs))


def compact_schema(schema: dict[str, Any], *, output: bool = False) -> dict[str, Any]:
    """Drop what pydantic adds that a client does not need, so tool schemas stay small.

    Titles, null defaults and length limits always go (limits are still enforced); an optional
    input is published as its plain type (omit it for null). Output
    schemas also lose defaults, ``additionalProperties: false`` and
    ``required`` lists: anvil always sends every field, so they only cost bytes on every turn.
    """

    schema = _inline_single_use_defs(schema)

    def walk(node: Any, parent_key: str = "") -> Any:
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                # ``additionalProperties: true`` is JSON Schema's default; a schema for the values stays.
                noise = (output and key in OUTPUT_NOISE and not (key == "additionalProperties"
                                                                 and isinstance(value, dict))) or (
                    not output and key in INPUT_NOISE and value is False) or (key == "default" and value is False)
                if parent_key != "properties" and (key == "title" or key in WIRE_NOISE or noise
                                                   or (key == "default" and value is None)):
                    continue
                if parent_key == "properties" and key in SHARED_FIELDS and isinstance(value, dict):
                    value = {k: v for k, v in value.items() if k != "description"}
                if output and parent_key == "properties" and key in SHARED_OUTPUTS:
                    value = _shared_output(value)
                if output and parent_key == "properties" and key == "continuation":
                    value = CONTINUATION_SCHEMA
                out[key] = walk(value, key)
            # An array of strings in a result is published as an array: the instructions say arrays in
            # results hold strings unless their schema says otherwise.
            if output and out.get("type") == "array" and out.get("items") == {"type": "string"}:
                del out["items"]
            # ``anyOf: [X, null]`` with a null default says the same as X plus the default.
            any_of = out.get("anyOf")
            if isinstance(any_of, list) and len(any_of) == 2 and {"type": "null"} in any_of:
                other = next(v for v in any_of if v != {"type": "null"})
                simple = set(other) <= {"type", "enum", "items", "minimum", "maximum", "minLength", "maxLength"}
                if simple and isinstance(other.get("type"), str):
                    del out["anyOf"]
                    merged = dict(other)
                    if output:
                        merged["type"] = [other["type"], "null"]
                        if "enum" in merged:
                            merged["enum"] = [*merged["enum"], None]
                    out = {**merged, **out}
            return out
        if isinstance(node, list):
            return [walk(v, parent_key) for v in node]
        return node

    return _without_unused_defs(walk(schema))


def _shared_output(value: Any) -> dict[str, Any]:
    """A shared output field as its bare type (``object``, or ``[object, null]`` when it may be null)."""
    if not isinstance(value, dict):
        return {"type": "object"}
    variants = value.get("anyOf", [value])
    nullable = {"type": "null"} in variants
    kinds = [v.get("type", "object") for v in variants if v != {"type": "null"}]
    kind = kinds[0] if len(kinds) == 1 and isinstance(kinds[0], str) else "object"
    return {"type": [kind, "null"] if nullable else kind}


def _without_unused_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop the definitions nothing refers to any more (shaping may have replaced their only use)."""
    defs = schema.get("$defs")
    if not defs:
        return schema
    body = {k: v for k, v in schema.items() if k != "$defs"}
    used: set[str] = set()
    pending = [json.dumps(body)]
    while pending:
        text = pending.pop()
        for name in defs:
            if name not in used and f'"#/$defs/{name}"' in text:
                used.add(name)
                pending.append(json.dumps(defs[name]))
    return {**body, "$defs": {name: defs[name] for name in defs if name in used}} if used else body


def _inline_single_use_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace each ``$ref`` to a definition used once by the definition itself (shorter)."""
    defs = schema.get("$defs")
    if not defs:
        return schema
    text = json.dumps(schema)
    counts = {name: text.count(f'"#/$defs/{name}"') for name in defs}

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and counts.get(ref[8:]) == 1 and len(node) == 1:
                return resolve(defs[ref[8:]])
            return {k: resolve(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    out = resolve(schema)
    kept = {name: resolve(body) for name, body in defs.items() if counts[name] != 1}
    if kept:
        out["$defs"] = kept
    return out


def input_schema(op: Operation) -> dict[str, Any]:
    """The compact input schema of ``op``'s tool (a fresh copy: the caller may change it)."""
    return copy.deepcopy(_input_schema(op.input_model))


def output_schema(op: Operation) -> dict[str, Any]:
    """The compact output schema of ``op``'s tool (without :data:`ENVELOPE_OUTPUTS`, sent on every write),
    a fresh copy."""
    return copy.deepcopy(_output_schema(op.output_model))


# A model's JSON schema never changes, and pydantic takes milliseconds to generate one: each is made
# once per process, however many servers the process builds (the test suite builds hundreds).

@functools.cache
def _input_schema(model: type[BaseModel]) -> dict[str, Any]:
    return compact_schema(model.model_json_schema())


@functools.cache
def _output_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = compact_schema(model.model_json_schema(mode="serialization"), output=True)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        schema["properties"] = {k: v for k, v in properties.items() if k not in ENVELOPE_OUTPUTS}
    return schema
