"""The Typer app: exactly the described commands, Typer's Rich help grouped in panels, the one error
map wording every usage error, and shell completion from the project."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from anvil.ops.registry import all_operations
from tests.conftest import CliResult

COMMANDS = [" ".join(op.cli_path) for op in all_operations()]
TOOL_NAMES = {op.name for op in all_operations()}
CLIENT_COMMANDS = ["serve", "mcp-config", "install", "db copy", "proof run", "attest", "keys generate",
                   "verify-task", "land"]


def test_describe_lists_every_command_and_tool(cli: Callable[..., CliResult]) -> None:
    doc = cli("describe", "--json").json()
    assert doc["mcp"]["tools"] == sorted(op.name for op in all_operations())
    assert "serve" in doc["cli"]["commands"] and "status" in doc["cli"]["commands"]


def test_the_typer_app_has_exactly_the_described_commands(anvil_env: dict[str, str],
                                                          cli: Callable[..., CliResult]) -> None:
    import typer

    from anvil.cli.app import build_app

    def walk(command: Any, prefix: tuple[str, ...] = ()) -> Any:
        for name, sub in getattr(command, "commands", {}).items():
            if getattr(sub, "commands", None):
                yield from walk(sub, (*prefix, name))
            else:
                yield " ".join((*prefix, name))

    commands = sorted(walk(typer.main.get_command(build_app(anvil_env))))
    assert commands == cli("describe", "--json").json()["cli"]["commands"]


def test_the_main_help_groups_commands_in_panels_with_a_first_run_and_the_exit_codes(
        cli: Callable[..., CliResult]) -> None:
    result = cli("--help")
    assert result.code == 0 and result.stderr == ""
    text = result.stdout
    for panel in ("Set up and look around", "PRD and planning", "Work on tasks", "Execution bundles", "A first run",
                  "Environment", "Exit codes"):
        assert f"─ {panel}" in text, panel
    assert "anvil claim T001 --worktree" in text and "ANVIL_ACTOR" in text and "refused by a rule" in text
    for command in {c.split()[0] for c in COMMANDS + CLIENT_COMMANDS}:
        assert re.search(rf"│ {re.escape(command)} ", text), command
    assert "--install-completion" in text and "--show-completion" in text


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_speaks_the_command_line(cli: Callable[..., CliResult], command: str) -> None:
    result = cli(*command.split(), "--help")
    assert result.code == 0, result.stderr
    text = result.stdout
    assert text.lstrip().startswith(f"Usage: anvil {command} ")
    body, _, last = text.rstrip().rpartition("\n")
    assert last.strip().startswith("MCP tool: ")  # the tool name, once, in the last line
    named = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", body)) & TOOL_NAMES
    assert not named, f"help names MCP tools instead of commands: {named}"


@pytest.mark.parametrize("command", CLIENT_COMMANDS)
def test_every_client_side_command_has_typer_help(cli: Callable[..., CliResult], command: str) -> None:
    result = cli(*command.split(), "--help")
    assert result.code == 0, result.stderr
    assert result.stdout.lstrip().startswith(f"Usage: anvil {command} ")
    assert "--json" in result.stdout or command == "serve"


@pytest.mark.parametrize("command", ["", "status", "claim", *CLIENT_COMMANDS])
def test_no_switch_shows_a_value_type_in_help(cli: Callable[..., CliResult], command: str) -> None:
    result = cli(*command.split(), "--help")
    assert result.code == 0, result.stderr
    assert "--help" in result.stdout and "<bool>" not in result.stdout


@pytest.mark.parametrize("command", ["claim", "claim-next"])
def test_the_claim_commands_show_their_git_shortcuts(cli: Callable[..., CliResult], command: str) -> None:
    text = cli(command, "--help").stdout
    assert "Git shortcuts" in text and "--branch" in text and "--worktree[=PATH]" in text


def test_repeatable_flags_say_so_and_file_lists_explain_the_comma_rule(cli: Callable[..., CliResult]) -> None:
    text = " ".join(cli("submit", "--help").stdout.replace("│", " ").split())
    assert re.search(r"--command COMMAND Commands you ran \(proofs add theirs\)\. Repeatable\.", text)
    assert "a comma separates paths too (--file a.py,b.py)" in text


def test_a_flag_pair_is_shown_as_a_pair(cli: Callable[..., CliResult]) -> None:
    text = cli("apply", "--help").stdout
    assert re.search(r"--approve\s+--reject", text)


def test_examples_are_whole_command_lines_that_paste(cli: Callable[..., CliResult],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from anvil.cli.app import pasteable

    monkeypatch.setenv("COLUMNS", "60")
    lines = pasteable(["anvil", "submit", "T001", "--actor", "agent-1", "--command", "pytest -q", "--generation",
                       "1", "--file", "src/a.py", "--file", "src/b.py"], 40)
    assert all(len(line) <= 40 for line in lines) and all(line.endswith(" \\") for line in lines[:-1])
    import shlex

    assert shlex.split(" ".join(line.removesuffix(" \\") for line in lines))[6] == "pytest -q"


def test_help_fits_a_narrow_terminal(cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    for args in (["--help"], ["prd", "--help"], ["mcp-config", "--help"], ["serve", "--help"],
                 *([*c.split(), "--help"] for c in COMMANDS[:12])):
        lines = cli(*args).stdout.splitlines()
        assert all(len(line) <= 60 for line in lines), [line for line in lines if len(line) > 60]


def test_a_group_alone_shows_its_commands_as_a_usage_error(cli: Callable[..., CliResult]) -> None:
    result = cli("prd")
    assert result.code == 2 and "parse" in result.stderr and "find-decisions" in result.stderr
    bare = cli()
    assert bare.code == 2 and "anvil: the system of record" in bare.stderr and bare.stdout == ""


@pytest.mark.parametrize(("argv", "wording"), [
    (["show"], "TASK_ID is required (see 'anvil show --help')"),
    (["claim"], "TASK_ID is required (see 'anvil claim --help')"),
    (["token", "add"], "NAME is required (see 'anvil token add --help')"),
    (["proof", "run"], "TASK_ID is required (see 'anvil proof run --help')"),
    (["mcp-config"], "CLIENT is required (one of: claude-code"),
])
def test_a_missing_argument_is_missing_input_naming_it(cli: Callable[..., CliResult], argv: list[str],
                                                      wording: str) -> None:
    result = cli(*argv, "--json")
    assert (result.code, result.json()["error"]["code"]) == (2, "missing_input")
    assert wording in result.json()["error"]["message"]
    human = cli(*argv)
    assert human.code == 2 and human.stderr.count("\n") == 1 and human.stderr.endswith("[missing_input]\n")


@pytest.mark.parametrize(("argv", "code", "wording"), [
    (["status", "--jsn"], "usage", "No such option: --jsn (Possible options: --json)"),
    (["shw"], "usage", "No such command 'shw'. Did you mean 'show'?"),
    (["list", "--limit", "x"], "invalid_input", "--limit must be a whole number"),
    (["install", "emacs"], "invalid_input", "HARNESS must be one of: claude-code, codex, gemini, cursor, vscode"),
    (["serve", "--http", "--port", "70000"], "invalid_input", "--port must be a whole number from 0 to 65535"),
    (["land", "--all", "--timeout", "x"], "invalid_input", "--timeout must be a number from 1 to 604800"),
    (["attest", "T001", "--bogus"], "usage", "No such option: --bogus"),
])
def test_every_command_words_usage_errors_through_the_one_map(cli: Callable[..., CliResult], argv: list[str],
                                                             code: str, wording: str) -> None:
    result = cli(*argv)
    assert (result.code, result.stdout) == (2, ""), result.stdout
    assert wording in result.stderr and result.stderr.endswith(f" [{code}]\n") and result.stderr.count("\n") == 1


def complete(cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch, line: str) -> list[str]:
    monkeypatch.setenv("_ANVIL_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", line)
    monkeypatch.setenv("COMP_CWORD", str(len(line.split()) - (0 if line.endswith(" ") else 1)))
    result = cli()
    assert result.code == 0 and result.stderr == "", result.stderr
    return result.stdout.split()


def test_completion_completes_commands_task_ids_and_choices(cli: Callable[..., CliResult],
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           anvil_env: dict[str, str]) -> None:
    from anvil.ops.scenarios import build_scenario

    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    assert complete(cli, monkeypatch, "anvil cl") == ["claim", "claim-next"]
    assert complete(cli, monkeypatch, "anvil show T00")[:2] == ["T001", "T002"]
    assert complete(cli, monkeypatch, "anvil list --status re") == ["reviewed", "ready", "rejected"]


def test_completion_stays_quiet_where_there_is_no_project(cli: Callable[..., CliResult],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    assert complete(cli, monkeypatch, "anvil show T") == []
    monkeypatch.setenv("ANVIL_ROOT", "/nonexistent/anvil-project")
    assert complete(cli, monkeypatch, "anvil show T") == []


def test_the_completion_script_is_shown_for_a_shell(cli: Callable[..., CliResult]) -> None:
    result = cli("--show-completion", "bash")
    assert result.code == 0 and "_ANVIL_COMPLETE" in result.stdout
