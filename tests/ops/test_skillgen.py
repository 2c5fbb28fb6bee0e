"""The shipped skills and AGENTS.md: current with the registry, in the Agent Skills format, and every command
line parses against the real CLI (so a renamed flag or input fails here before an agent meets it)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml

from anvil.cli.install import shipped_skills
from anvil.cli.skillcheck import check_parses
from anvil.engine.errors import AnvilError
from anvil.ops.skillgen import SAMPLE_VALUES, argv_of, command_lines, generated, render_line, render_skill, substitute
from anvil.ops.skillmodel import Client, Op, Skill
from anvil.ops.skillsrc import SKILLS

ROOT = Path(__file__).resolve().parents[2]
NAMES = [skill.name for skill in SKILLS]


def test_the_generated_skills_and_agents_md_are_current() -> None:
    stale = [str(path.relative_to(ROOT)) for path, text in generated().items()
             if not path.is_file() or path.read_text(encoding="utf-8") != text]
    assert not stale, f"run `python -m anvil.ops.skillgen` (or anvil.ops.docs): stale {stale}"


def test_the_four_skills_ship_in_the_package_data() -> None:
    assert set(NAMES) == {"anvil-execute", "anvil-review", "anvil-plan", "anvil-resolve-decisions"}
    assert sorted(shipped_skills()) == sorted(NAMES)
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "skills/*/SKILL.md" in data["tool"]["setuptools"]["package-data"]["anvil"]


@pytest.mark.parametrize("name", NAMES)
def test_each_skill_has_agent_skills_frontmatter_naming_its_folder(name: str) -> None:
    text = shipped_skills()[name].decode("utf-8")
    assert text.startswith("---\n")
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["name"] == name and set(front) == {"name", "description"}
    assert 0 < len(front["description"]) <= 1024


@pytest.mark.parametrize(("skill", "key"), [(s, k) for s in SKILLS for k in command_lines(s)],
                         ids=[f"{s.name}:{k}" for s in SKILLS for k in command_lines(s)])
def test_every_command_line_parses_against_the_real_cli(skill: Skill, key: str) -> None:
    line = command_lines(skill)[key]
    assert render_line(line) in shipped_skills()[skill.name].decode("utf-8")
    ran = check_parses(substitute(argv_of(line), SAMPLE_VALUES))
    words = argv_of(line)
    assert ran == (line.op if isinstance(line, Op) else " ".join(words[:2 if words[0] == "proof" else 1]))


def test_a_renamed_input_or_flag_fails_the_build() -> None:
    with pytest.raises(ValueError, match="not inputs"):
        render_line(Op("claim_task", {"task_id": "$TASK", "lease_seconds": 60}))
    with pytest.raises(AnvilError):  # a flag the CLI does not know (as after a rename)
        check_parses(["renew", "T001", "--generations", "1"])
    with pytest.raises(AnvilError):
        check_parses(["proof", "run", "T001", "--generations", "1", "--", "true"])
    with pytest.raises(ValueError, match="the fast parser does not take"):
        check_parses(["list", "--status", "submitted"])  # not a status: the CLI refuses it


def test_a_skill_with_a_command_line_in_no_block_or_a_retired_code_is_refused() -> None:
    base = SKILLS[0]
    orphan = Skill(base.name, base.description, "{{a}}", {"a": Op("get_next_task"), "b": Op("get_task")},
                   {"a": ("a",)})
    with pytest.raises(ValueError, match="lines in no block"):
        render_skill(orphan)
    unknown = Skill(base.name, base.description, "{{refusals:r}}", {}, {}, {"r": ("no_such_code",)})
    with pytest.raises(KeyError):
        render_skill(unknown)


def test_variables_stay_bare_for_the_shell_and_values_are_quoted() -> None:
    line = render_line(Client(("proof", "run", "$TASK", "--generation", "$GEN", "--", "$COMMAND")))
    assert line == "anvil proof run $TASK --generation $GEN -- $COMMAND"
    released = render_line(Op("release_task", {"task_id": "$TASK", "reason": "a b"}))
    assert released == "anvil release $TASK --reason 'a b'"
    assert substitute(["x", "$COMMAND"], {"COMMAND": ("a", "b")}) == ["x", "a", "b"]
