"""Help screens: plain, fitted to the terminal, speaking of commands, flags and arguments as typed."""

from __future__ import annotations

import re

import pytest

from anvil.ops.registry import all_operations

COMMANDS = [" ".join(op.cli_path) for op in all_operations()]
TOOL_NAMES = {op.name for op in all_operations()}


def test_the_main_help_shows_a_first_workflow_the_actor_variable_and_the_exit_codes(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("--help")
    assert result.code == 0 and result.stderr == ""
    text = result.stdout
    assert "anvil init" in text and "anvil next" in text and "anvil claim T001" in text
    assert "ANVIL_ACTOR" in text and "Exit codes:" in text and "5 refused by a rule" in text
    for command in COMMANDS:
        assert f"  {command} " in text or f"  {command}\n" in text, command


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_speaks_the_command_line(cli, command: str) -> None:  # type: ignore[no-untyped-def]
    result = cli(*command.split(), "--help")
    assert result.code == 0, result.stderr
    text = result.stdout
    assert text.startswith(f"Usage: anvil {command}") and "<bool>" not in text and "{" not in text.splitlines()[0]
    assert "--dry-run" not in text or "--dry-run  " in text or "--dry-run\n" in text  # a flag shows no value
    body, _, last = text.rstrip("\n").rpartition("\n")
    assert last.startswith("MCP tool: ")  # the tool name, once, in the last line
    named = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", body)) & TOOL_NAMES
    assert not named, f"help names MCP tools instead of commands: {named}"


def test_repeatable_flags_say_so_and_file_lists_explain_the_comma_rule(cli) -> None:  # type: ignore[no-untyped-def]
    text = " ".join(cli("submit", "--help").stdout.split())
    assert re.search(r"--command COMMAND\s+Commands you ran \(proofs add theirs\)\. Repeatable\.", text)
    assert re.search(r"--proof TEXT\s+`anvil proof run` files\. Repeatable\.", text)
    assert "a comma separates paths too (--file a.py,b.py)" in text
    assert "Usage: anvil submit TASK_ID [OPTIONS]" in text


def test_a_flag_pair_is_shown_as_a_pair(cli) -> None:  # type: ignore[no-untyped-def]
    text = cli("apply", "--help").stdout
    assert "--approve / --reject" in text and "Required: pass --approve or --reject." in text


def test_help_fits_a_narrow_terminal(cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "60")
    for args in (["--help"], ["prd", "--help"], ["mcp-config", "--help"], *([*c.split(), "--help"] for c in COMMANDS)):
        lines = cli(*args).stdout.splitlines()
        assert all(len(line) <= 60 for line in lines), [line for line in lines if len(line) > 60]


def test_a_group_alone_shows_its_commands_as_a_usage_error(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("prd")
    assert result.code == 2 and "parse" in result.stderr and "find-decisions" in result.stderr
    bare = cli()
    assert bare.code == 2 and bare.stderr.startswith("anvil: the system of record")
