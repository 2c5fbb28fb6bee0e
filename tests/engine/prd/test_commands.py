"""Verification commands: the command a bullet holds, the note beside it, and whether it can run."""

from __future__ import annotations

import pytest

from anvil.engine.prd.commands import command_problem, reads_as_prose, split_verification


@pytest.mark.parametrize(("text", "command", "note"), [
    ("`pytest -q`", "pytest -q", ""),
    ("`pytest -q tests/x` (the live suites)", "pytest -q tests/x", "(the live suites)"),
    ("`make lint` - style only", "make lint", "style only"),
    ("`make lint`: style only", "make lint", "style only"),
    ("`` echo `date` `` prints the date", "echo `date`", "prints the date"),
    ("`$ pytest -q`", "pytest -q", ""),
    ("pytest -q tests/x", "pytest -q tests/x", ""),
    ("echo `date`", "echo `date`", ""),
    ("`a` && `b`", "`a` && `b`", ""),  # a shell line made of spans stays whole
    ("`a` | wc -l", "`a` | wc -l", ""),
    ("`unclosed", "`unclosed", ""),
])
def test_a_bullet_splits_into_its_command_and_the_note_after_it(text: str, command: str, note: str) -> None:
    assert split_verification(text) == (command, note)


@pytest.mark.parametrize("command", [
    "pytest -q", "python -m pytest -q tests/test_store.py", "npm run build", "Rscript test.R", "make test",
    "echo `date` > out.txt", "PYTHONPATH=. pytest", "sh -c 'exit 0'", "cargo test --all", "go test ./...",
    "git diff --exit-code", "test -f README.md",
])
def test_command_lines_can_be_proven(command: str) -> None:
    assert command_problem(command) is None


@pytest.mark.parametrize(("command", "problem"), [
    ("", "holds no command"),
    ("` `", "holds no command"),
    ("Run the suite by hand.", "reads as prose, not a command"),
    ("Check that the page loads for a logged-in user", "reads as prose, not a command"),
    ("Manual: open the dashboard at http://localhost:8000 and look", "reads as prose, not a command"),
    ("the output matches what the design document describes for every page", "reads as prose, not a command"),
    ("echo 'unbalanced", "has an unbalanced quote"),
    ("pytest\x00 -q", "holds a control character"),
])
def test_what_no_proof_can_run_is_named(command: str, problem: str) -> None:
    assert command_problem(command) == problem


def test_a_sentence_with_an_apostrophe_is_prose_not_a_quoting_error() -> None:
    assert reads_as_prose("Don't ship it until the review is done")
    assert command_problem("Don't ship it until the review is done") == "reads as prose, not a command"
