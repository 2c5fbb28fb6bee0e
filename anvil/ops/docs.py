"""Generates ``docs/reference.md`` (every operation's CLI command, MCP tool, inputs and examples) and
every count of tools written in the other docs.

A count in prose is written between markers, ``<!-- count:tools -->47<!-- /count -->``, and
:func:`with_counts` rewrites the number from the registry; tests fail while a file is stale or
names a number of tools outside the markers.
"""

from __future__ import annotations

import re
from pathlib import Path

from anvil.ops.cliargs import cli_argv_for
from anvil.ops.contract import ParamSpec
from anvil.ops.registry import all_operations
from anvil.ops.specgen import op_spec

ROOT = Path(__file__).resolve().parents[2]
DOC_PATH = ROOT / "docs" / "reference.md"
COUNTED_DOCS = (ROOT / "README.md", ROOT / "docs" / "seed-differences.md")
"""The docs whose tool counts :func:`with_counts` keeps current."""
COUNT = re.compile(r"<!-- count:([a-z_]+) -->(\d+)<!-- /count -->")


def tool_counts() -> dict[str, int]:
    """The counts the docs may name: every tool, the default (execution) surface, the planning surface."""
    operations = all_operations()
    execution = sum(1 for op in operations if op.surface == "execution")
    return {"tools": len(operations), "execution_tools": execution, "planning_tools": len(operations) - execution}


def with_counts(text: str) -> str:
    """``text`` with every marked count set to its value now.

    Raises:
        ValueError: a marker names an unknown count.
    """
    counts = tool_counts()

    def current(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in counts:
            raise ValueError(f"unknown count {name!r} (known: {', '.join(counts)})")
        return f"<!-- count:{name} -->{counts[name]}<!-- /count -->"

    return COUNT.sub(current, text)


def _type(param: ParamSpec) -> str:
    kind = param.kind
    text = {"list": f"list of {param.item or 'str'}", "pairs": "list of [source, target]"}.get(kind, kind)
    if param.choices:
        text = " \\| ".join(f"`{c}`" for c in param.choices)
    return text + (" or null" if param.nullable else "")


def render_reference() -> str:
    """The whole reference page, derived from the registry."""
    out = ["# Command and tool reference", "",
           "Generated from the operation registry by `python -m anvil.ops.docs`; do not edit by hand.",
           "Every command takes `--json`, `--mcp [TARGET]` and `--mcp-token-env NAME` (see the README).",
           "Without `--json` a result is shown for people: on a terminal fitted to its width and coloured",
           "(`NO_COLOR` turns colour off; `FORCE_COLOR` lays piped output out as on a terminal); piped, plain",
           "text that wraps only at `COLUMNS` when it is set, and a work packet is its raw markdown",
           "(docs/architecture.md, \"Human output\").", "",
           "An MCP tool's result is the output below in its compact form (issue 20): nulls, empty lists and "
           "empty objects are left out, so are `dry_run` when false, the ids a call sent (`task_id`, "
           "`generation`, `claim_id`, `bundle_id`, `command`) and `actor_identity` unless the server chose who "
           "acted; a claim's `continuation` is the list of its command lines; the text copy is a line in words. "
           "`_meta: {\"anvil/result\": \"full\"}` on a call, or `ANVIL_MCP_RESULT=full` on the server, gives "
           "the complete output (the CLI's `--json`, on every route); `_meta: {\"anvil/text\": \"json\"}` or "
           "`ANVIL_MCP_TEXT=json` makes the text copy the result's JSON.", ""]
    for op in all_operations():
        spec = op_spec(op)
        out += [f"## `anvil {' '.join(op.cli_path)}` / `{op.name}`", "",
                f"{op.description}", "",
                f"Surface: **{op.surface}** · effect: **{op.effect}**", ""]
        if op.cli_help:
            out += [op.cli_help, ""]
        out += ["| input | CLI | type | default | meaning |", "|---|---|---|---|---|"]
        for p in spec.params:
            cli = p.name.upper() if p.positional else f"`{p.flag}`" + (f" / `{p.off_flag}`" if p.off_flag else "")
            default = "required" if p.required else f"`{p.default!r}`"
            out.append(f"| `{p.name}` | {cli} | {_type(p)} | {default} | {p.help or '-'} |")
        out += ["", "Examples:", ""]
        for example in op.examples:
            argv = " ".join(_quote(a) for a in cli_argv_for(spec, example.input))
            outcome = f"fails with `{example.error}`" if example.error else "succeeds"
            out.append(f"- {example.title} (from *{example.scenario}*, {outcome}): `anvil {argv}`")
        out.append("")
    return "\n".join(out)


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


SHIPPED_DOCS = {"prd-format.md": "prd-format.md"}
"""Pages of ``docs/`` copied into the package (``anvil/docs/``), where ``anvil docs TOPIC`` reads them."""


def main() -> None:
    DOC_PATH.write_text(render_reference(), encoding="utf-8")
    for path in COUNTED_DOCS:
        path.write_text(with_counts(path.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {DOC_PATH} and the tool counts of {', '.join(p.name for p in COUNTED_DOCS)}")
    for source, shipped in SHIPPED_DOCS.items():
        target = Path(__file__).resolve().parents[1] / "docs" / shipped
        target.parent.mkdir(exist_ok=True)
        target.write_bytes((DOC_PATH.parent / source).read_bytes())
        print(f"wrote {target}")
    from anvil.ops import skillgen

    skillgen.main()  # the skills' command lines come from the same registry


if __name__ == "__main__":
    main()
