"""Shaping the MCP tool schemas: what pydantic generates, cut to what a client needs on every turn.

Tool lists are sent to a model on every turn, so every byte counts: titles, null defaults and
length limits go (limits are still enforced on every call), single-use definitions are inlined,
and inputs shared by many tools are described once, in the server instructions.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

    from anvil.ops.registry import Operation

OUTPUT_NOISE = frozenset({"default", "additionalProperties", "required"})
# Unknown inputs are refused on every call whether or not the schema says so.
INPUT_NOISE = frozenset({"additionalProperties"})
# Upper size limits are enforced on every call; publishing them on every turn costs more than it helps.
WIRE_NOISE = frozenset({"maxLength", "maxItems", "minLength"})


SHARED_FIELDS: dict[str, str] = {
    "task_id": "",
    "actor": "who acts (omit it with a per-agent token)",
    "prd_id": "",
    "idempotency_key": "a retry with the same key and input returns the first result, writing nothing",
    "dry_run": "check everything, write nothing",
    "confirm": "needed by a destructive variant",
    "generation": "the fencing token your claim returned (claim_id: its id, the same); an older one is refused",
    "claim_id": "",
    "max_blast": "with max_review_risk: the highest confirmed score (1-5) to take",
    "max_review_risk": "",
    "wait_seconds": "when nothing is claimable, block up to this many seconds (at most 300) until a task is",
    "cwd": "",
    "bundle_id": "",
    "target_kind": "bundle: task_id names a bundle's coordinator claim",
    "lease_duration_seconds": "",
    "git_mode": "",
    "worktree_path": "",
    "git_plan": "set by the anvil CLI; omit",
    "phase": "",
    "detail": "",
    "commit_sha": "",
    "tree_sha": "",
    "pr_url": "",
    "reason_code": "quality (default; counts against the accept rate), evidence (a proof is missing) or process "
                   "(a file outside the claim changed)",
    "quality_findings": "correctness, tests, regression, security, performance, maintainability, documentation, "
                        "scope",
    "strict": "an approval needs a passing proof of every verification command whatever the gate",
}
"""Inputs that mean the same on every tool: described once, in the server instructions (an empty text:
its name says it), not in each tool's schema."""

SHARED_OUTPUTS: dict[str, str] = {
    "dry_run": "on every result of a tool that writes: true for a dry run, else left out",
    "actor_identity": "on every result of a tool that writes whose actor the server chose (neither the call nor "
                      "its token named it): {actor, authenticated, how}",
    "blocked_by": "dependencies not done yet",
    "task": "{id, title, status, priority, acceptance_criteria, verification, likely_files, dependencies, scores, "
            "review_tier}",
    "claim": "{id, task_id or bundle_id, claimed_by, generation, lease_expires_at, expected_files, continuation "
             "(its next command lines)}",
    "next_ready": "{id, title, priority}",
    "review_tier": "on a task, how carefully its review should look: light, standard or max",
    "scores": "",
    "trust_level": "verified (re-run by another than the implementer), client_reported or unproven",
    "commit_sha": "",
    "rejection": "",
    "bundle": "{id, status, coordinator, members, claim, reviews, gate, delivery}",
    "gate": "",
}
"""Output fields that mean the same on every tool: published as a plain object, described once (an
empty text: its name says it)."""

CONTINUATION_SCHEMA: dict[str, Any] = {"type": ["array", "object"]}
"""A claim's ``continuation``: its command lines (a compact result), or the object of argv arrays a
complete document carries (``anvil/result: full``, see :mod:`anvil.mcp.results`)."""

ENVELOPE_OUTPUTS = frozenset({"dry_run", "actor_identity"})
"""Output fields on every result of a tool that writes: described once in the server instructions
(:data:`SHARED_OUTPUTS`) and left out of each tool's output schema, which never forbids extra fields."""

LOOP = ("Loop: claim_next_task, generate_work_packet, renew_claim every 5 minutes, commit on the claim branch, "
        "prove each verification command (prove_command locally; over HTTP `anvil proof run TASK --mcp URL -- "
        "CMD`), submit_completion_evidence with proof_files: without passing proofs the enforcing gate refuses it "
        "(submission_unproven) and the claim stays live.")
"""The agent's loop as the evidence gate enforces it, first in the instructions."""


def shared_conventions() -> str:
    """The loop, and the text describing :data:`SHARED_FIELDS` and :data:`SHARED_OUTPUTS`, sent once as
    the MCP server's instructions."""
    lines = [f"- {name}: {text}." for name, text in SHARED_FIELDS.items() if text]
    outputs = [f"- {name}: {text}." for name, text in SHARED_OUTPUTS.items() if text]
    return (LOOP + " Results leave out nulls, empty lists and ids the call sent; arrays hold strings unless "
            "typed.\nInputs:\n" + "\n".join(lines) + "\nOutputs:\n" + "\n".join(outputs))


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
