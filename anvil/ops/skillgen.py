"""Generates the agent skills shipped in the package (``anvil/skills/<name>/SKILL.md``) and the
repository's ``AGENTS.md``, with every command line derived from the operation registry.

A skill's source (:mod:`anvil.ops.skillsrc`) names each command by its operation and inputs
(:class:`Op`) or, for the commands that run on the caller's machine (``proof run``, ``attest``,
``verify-task``, ``install``), by its words (:class:`Client`). A renamed input fails the generator
(``cli_argv_for`` refuses an unknown input); a renamed flag changes the generated text, which
``tests/ops/test_skillgen.py`` compares with the shipped files, and that test parses every command
line against the real CLI (:func:`anvil.cli.skillcheck.check_parses`).

Command lines may name the skill's variables (``$TASK``, ``$GEN``, ...), written unquoted so a shell
expands them; :func:`substitute` gives the argv a line means for given values.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from anvil.ops.skillmodel import Client, Line, Op, Shell, Skill

ROOT = Path(__file__).resolve().parents[2]
SKILLS_DIR = Path(__file__).resolve().parents[1] / "skills"
AGENTS_PATH = ROOT / "AGENTS.md"
VARIABLE = re.compile(r"^\$[A-Z][A-Z0-9_]*$")
NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def _word(arg: str) -> str:
    """One shell word: a variable stays bare (the shell expands it), anything else is quoted."""
    return arg if VARIABLE.match(arg) else shlex.quote(arg)


def op_argv(line: Op) -> list[str]:
    """The words after ``anvil`` for an operation's line.

    Raises:
        KeyError: no such operation.
        ValueError: an argument is not an input of the operation.
    """
    from anvil.ops.cliargs import cli_argv_for
    from anvil.ops.registry import get_operation
    from anvil.ops.specgen import op_spec

    spec = op_spec(get_operation(line.op))
    return [*cli_argv_for(spec, dict(line.args)), *line.flags]


def argv_of(line: Op | Client) -> list[str]:
    """The words after ``anvil`` of a command line."""
    return op_argv(line) if isinstance(line, Op) else list(line.words)


def render_line(line: Line) -> str:
    """The line as printed in a skill (``anvil ...`` with its comment)."""
    text = line.text if isinstance(line, Shell) else "anvil " + " ".join(_word(a) for a in argv_of(line))
    return text + (f"   # {line.comment}" if line.comment else "")


def substitute(argv: Sequence[str], values: Mapping[str, str | Sequence[str]]) -> list[str]:
    """``argv`` with each variable word replaced by its value (a sequence value becomes several words).

    Raises:
        KeyError: a variable has no value.
    """
    out: list[str] = []
    for word in argv:
        if VARIABLE.match(word):
            value = values[word[1:]]
            out.extend([value] if isinstance(value, str) else list(value))
        else:
            out.append(word)
    return out


SAMPLE_VALUES: dict[str, str | Sequence[str]] = {
    "TASK": "T001", "GEN": "1", "PROOF": ".anvil/proofs/t001.json", "ATTEST": ".anvil/proofs/t001-progress.json",
    "COMMAND": ("python", "-m", "unittest", "-q", "tests/test_store.py"), "PRD": "docs/prd.md",
    "NEW_PRD": "docs/new-prd.md", "URL": "https://anvil.internal:8765/mcp", "TOKEN_VAR": "ANVIL_TOKEN",
    "HARNESS": "claude-code",
}
"""Values a command line's variables take when it is parsed (any well-formed value does)."""


# --- rendering ----------------------------------------------------------------------------------


def _refusal_table(codes: Sequence[str]) -> str:
    from anvil.engine.error_codes import CATALOGUE

    known = {entry.code: entry for entry in CATALOGUE}
    rows = ["| code | exit | what it means | what to do |", "|---|---|---|---|"]
    for code in codes:
        entry = known[code]  # a code renamed or retired fails the generator
        if entry.retired:
            raise ValueError(f"{code} is retired")
        rows.append(f"| `{code}` | {entry.exit_code} | {entry.meaning} | {entry.remedy} |")
    return "\n".join(rows)


def render_skill(skill: Skill) -> str:
    """The whole SKILL.md: YAML frontmatter, then the body with every block and table filled in.

    Raises:
        ValueError: a bad name or description, or a placeholder naming nothing.
        KeyError: a block names an unknown line.
    """
    if not NAME.match(skill.name) or len(skill.name) > 64:
        raise ValueError(f"skill name {skill.name!r}: lowercase letters, digits and hyphens, at most 64")
    if not 0 < len(skill.description) <= 1024 or "\n" in skill.description:
        raise ValueError(f"{skill.name}: the description is one line of at most 1024 characters")
    import json

    front = f"---\nname: {skill.name}\ndescription: {json.dumps(skill.description)}\n---\n\n# {skill.name}\n\n"
    used: set[str] = set()

    def fill(match: re.Match[str]) -> str:
        kind, _, key = match.group(1).rpartition(":")
        if kind == "refusals":
            return _refusal_table(skill.refusals[key])
        if kind:
            raise ValueError(f"{skill.name}: unknown placeholder {match.group(0)}")
        used.update(skill.blocks[key])
        return "```sh\n" + "\n".join(render_line(skill.lines[k]) for k in skill.blocks[key]) + "\n```"

    body = re.sub(r"\{\{([a-z_:-]+)\}\}", fill, skill.body.strip("\n"))
    unused = set(skill.lines) - used
    if unused:
        raise ValueError(f"{skill.name}: lines in no block: {sorted(unused)}")
    return front + body + "\n\n<!-- Generated by `python -m anvil.ops.skillgen` from anvil/ops/skillsrc.py. -->\n"


def render_agents(skills: Sequence[Skill]) -> str:
    """``AGENTS.md``: how an agent works in this repository, and the skills anvil ships."""
    from anvil.ops.skillsrc import AGENTS_BODY

    listing = "\n".join(f"- `{s.name}` (`anvil/skills/{s.name}/SKILL.md`): {s.description}" for s in skills)
    return AGENTS_BODY.strip("\n").replace("{{skills}}", listing) + "\n"


def generated() -> dict[Path, str]:
    """Every generated file and its text now."""
    from anvil.ops.skillsrc import SKILLS

    files = {SKILLS_DIR / skill.name / "SKILL.md": render_skill(skill) for skill in SKILLS}
    files[AGENTS_PATH] = render_agents(SKILLS)
    return files


def command_lines(skill: Skill) -> dict[str, Op | Client]:
    """The skill's anvil command lines by key (its shell lines left out)."""
    return {key: line for key, line in skill.lines.items() if not isinstance(line, Shell)}


def main() -> None:
    for path, text in generated().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
