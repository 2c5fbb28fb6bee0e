"""The machine-readable manifest of anvil's surface (``anvil describe`` / ``describe_surface``).

Everything here is derived from the plain-data contract (:mod:`anvil.ops.contract`), so the CLI
and the MCP tools can never disagree with it. ``api_version`` is a digest of what a caller
depends on: every operation's name, surface, effect, role, CLI path and flags, every input's
name, type, bounds and default, every output field, and the version of the JSON envelopes. It
changes exactly when one of those changes (help texts and descriptions are not part of it), so a
client can pin it and fail closed on anything else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from anvil.engine.storage.canonical import canonical_json, sha256_hex
from anvil.ops import cliflags
from anvil.ops.contract import OpSpec, ParamSpec

ENVELOPE_VERSION = "1"
"""The shape of the JSON documents: a result is the operation's output object; a failure is
``{"error": {"code", "message", "details"?, "exit_code"?}}``. Bumped when either shape changes."""
CATALOG_VERSION = 1
COMMON_FLAGS = ("--help", *(flag.names[0] for flag in cliflags.COMMON))
"""Flags every command takes besides its inputs."""
ROOT_FLAGS = ("--help", "--version")
EXTRA_CLI_COMMANDS: tuple[str, ...] = ("attest", "db copy", "install", "keys generate", "land", "mcp-config",
                                       "proof run", "serve", "verify-task")
"""CLI commands that are not operations (they start a server, or configure an MCP host on this machine)."""
_HELP_ONLY = frozenset({"help", "description"})


def _param_contract(param: ParamSpec) -> dict[str, Any]:
    return {k: v for k, v in param._asdict().items() if k not in _HELP_ONLY}


def operation_contract(spec: OpSpec) -> dict[str, Any]:
    """What a caller of one operation depends on (its texts for people left out)."""
    return {"name": spec.name, "surface": spec.surface, "effect": spec.effect, "role": spec.role,
            "runner": spec.runner_allowed,
            "cli_path": list(spec.cli_path), "needs_caller": spec.needs_caller,
            "params": [_param_contract(p) for p in spec.params], "output_fields": sorted(spec.output_fields),
            "failure": list(spec.failure) if spec.failure else None, "quiet_field": spec.quiet_field}


def contract_digest(specs: Sequence[OpSpec]) -> str:
    """The digest of the whole contract: every operation (in name order) and the envelope version."""
    body = {"envelope": ENVELOPE_VERSION,
            "operations": [operation_contract(s) for s in sorted(specs, key=lambda s: s.name)]}
    return sha256_hex(canonical_json(body))


def api_version(specs: Sequence[OpSpec]) -> str:
    """The version a client pins: ``c`` and the first 12 hex digits of :func:`contract_digest`."""
    return "c" + contract_digest(specs)[:12]


def command_flags(spec: OpSpec) -> list[str]:
    """Every long option the operation's command takes, sorted."""
    flags = set(COMMON_FLAGS)
    for param in spec.params:
        if not param.positional:
            flags.add(param.flag)
            if param.off_flag:
                flags.add(param.off_flag)
    if spec.quiet_field:
        flags.add(cliflags.QUIET.names[0])
    return sorted(flags)


def cli_surface(specs: Sequence[OpSpec]) -> dict[str, Any]:
    """The CLI's commands, each command's options, and the contract of every node (root, groups,
    commands) listing the long options that node itself owns."""
    commands = sorted([" ".join(s.cli_path) for s in specs] + list(EXTRA_CLI_COMMANDS))
    options = {" ".join(s.cli_path): command_flags(s) for s in specs}
    groups = sorted({s.cli_path[:i] for s in specs for i in range(1, len(s.cli_path))})
    contracts: list[dict[str, Any]] = [{"path": [], "kind": "group", "flags": list(ROOT_FLAGS)}]
    contracts += [{"path": list(g), "kind": "group", "flags": ["--help"]} for g in groups]
    contracts += [{"path": list(s.cli_path), "kind": "command", "flags": options[" ".join(s.cli_path)]}
                  for s in sorted(specs, key=lambda s: s.cli_path)]
    return {"commands": commands, "count": len(commands), "options": dict(sorted(options.items())),
            "contracts": contracts, "contract_count": len(contracts)}


def operation_catalog(specs: Sequence[OpSpec]) -> dict[str, Any]:
    """Every operation with its own contract version and the ways to call it."""
    operations = [{
        "operation_id": s.name, "operation_version": sha256_hex(canonical_json(operation_contract(s)))[:12],
        "effect": s.effect, "surface": s.surface, "role": s.role,
        "transport": {"mcp": {"tool": s.name},
                      "cli": {"command": " ".join(s.cli_path), "json_flag": "--json"}},
        "inputs": [p.name for p in s.params], "outputs": sorted(s.output_fields),
    } for s in sorted(specs, key=lambda s: s.name)]
    return {"catalog_version": CATALOG_VERSION, "operations": operations}


def manifest(specs: Sequence[OpSpec], engine_version: str, schema_version: int) -> dict[str, Any]:
    """The whole manifest ``describe_surface`` returns."""
    tools = sorted(s.name for s in specs)
    return {"api_version": api_version(specs), "engine_version": engine_version, "schema_version": schema_version,
            "envelope": ENVELOPE_VERSION, "cli": cli_surface(specs),
            "mcp": {"tools": tools, "execution_tools": sorted(s.name for s in specs if s.surface == "execution"),
                    "count": len(tools)},
            "operation_catalog": operation_catalog(specs)}
