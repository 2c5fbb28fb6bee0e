"""The surface manifest: CLI options and contracts, the operation catalogue, and an api_version that
changes exactly when the contract does."""

from __future__ import annotations

from anvil.ops import manifest
from anvil.ops.contract import ParamSpec, load_specs
from tests.ops.support import op


def test_the_api_version_ignores_texts_for_people_but_follows_every_contract_change() -> None:
    specs = list(load_specs())
    base = manifest.api_version(specs)
    first = specs[0]
    reworded = first._replace(description="something else entirely",
                              params=tuple(p._replace(help="reworded") for p in first.params))
    assert manifest.api_version([reworded, *specs[1:]]) == base
    assert manifest.api_version(list(reversed(specs))) == base
    changes = [
        first._replace(params=(*first.params, ParamSpec("extra", "str", "--extra"))),
        first._replace(output_fields=(*first.output_fields, "extra")),
        first._replace(params=tuple(p._replace(max_len=(p.max_len or 0) + 1) for p in first.params)),
        first._replace(cli_path=("renamed",)),
        first._replace(effect="destructive" if first.effect != "destructive" else "mutating"),
    ]
    versions = {manifest.api_version([changed, *specs[1:]]) for changed in changes}
    assert base not in versions and len(versions) == len(changes)
    assert manifest.api_version(specs[1:]) != base  # an operation removed


def test_the_manifest_lists_each_commands_options_and_every_node_of_the_cli(anvil_env) -> None:
    described = op(anvil_env, "describe_surface")
    assert described["api_version"] == manifest.api_version(load_specs()) and described["envelope"] == "1"
    cli = described["cli"]
    assert cli["options"]["claim"] == sorted({"--help", "--json", "--mcp", "--mcp-token-env", "--actor", "--cwd",
                                              "--dry-run", "--idempotency-key", "--file", "--lease", "--claimed-by",
                                              "--git-mode", "--worktree-path", "--git-plan", "--shared-tree",
                                              "--expected-revision"})
    assert "--quiet" in cli["options"]["next"] and "--no-llm" in cli["options"]["plan"]
    nodes = {tuple(c["path"]): c for c in cli["contracts"]}
    assert nodes[()]["flags"] == ["--help", "--version"] and nodes[("bundle",)]["kind"] == "group"
    assert nodes[("bundle", "claim")]["flags"] == cli["options"]["bundle claim"]
    assert cli["contract_count"] == len(cli["contracts"]) == len(load_specs()) + 1 + len(
        {s.cli_path[:-1] for s in load_specs() if len(s.cli_path) > 1})
    catalog = described["operation_catalog"]
    entry = next(e for e in catalog["operations"] if e["operation_id"] == "claim_bundle")
    assert entry["transport"] == {"mcp": {"tool": "claim_bundle"}, "cli": {"command": "bundle claim",
                                                                             "json_flag": "--json"}}
    assert catalog["catalog_version"] == 1 and len(catalog["operations"]) == described["mcp"]["count"]
