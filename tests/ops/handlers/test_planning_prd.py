"""Behaviour of the PRD lifecycle operations: parse, review, assess and find_decisions.

Every call goes through the real operation pipeline (``anvil.ops.runtime.invoke``) or the CLI.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.engine.prd.source import DEFAULT_MAX_BYTES
from anvil.engine.storage.paths import resolve_state
from anvil.engine.storage.store import Store
from anvil.ops.scenarios import SAMPLE_AT
from tests.ops.support import event_types, op, refused, scenario

# -- helpers -----------------------------------------------------------------------------------


def last_event(env: dict[str, str]):  # type: ignore[no-untyped-def]
    with Store.open(resolve_state(env, env["ANVIL_ROOT"])) as store:
        return list(store.events())[-1]


def managed_source(env: dict[str, str]) -> Path:
    return resolve_state(env, env["ANVIL_ROOT"]).prd_path


def sample(root: Path) -> str:
    return (root / SAMPLE_AT).read_text(encoding="utf-8")


def rewrite_sample(root: Path, old: str, new: str) -> None:
    text = sample(root)
    assert old in text
    (root / SAMPLE_AT).write_text(text.replace(old, new, 1), encoding="utf-8")


def approve(env: dict[str, str]) -> None:
    op(env, "review_prd", actor="lead")
    op(env, "review_prd", actor="lead", approve=True)


# -- parse -------------------------------------------------------------------------------------


def test_parse_errors_are_returned_in_the_result_and_nothing_is_recorded(anvil_env) -> None:
    root = scenario(anvil_env, "initialized")
    (root / "broken.md").write_text("just some notes, no project heading\n", encoding="utf-8")
    before = event_types(anvil_env)

    result = op(anvil_env, "parse_prd", file="broken.md")

    assert result["recorded"] is False
    assert result["error_count"] >= 1
    assert result["errors"][0]["code"] == "missing_project_heading"
    assert result["prd_status"] is None and result["revision"] == 0
    assert event_types(anvil_env) == before
    assert not managed_source(anvil_env).exists(), "a source with errors is not copied into the state"


def test_the_first_clean_parse_records_prd_parsed_at_revision_one_as_a_draft(anvil_env) -> None:
    scenario(anvil_env, "initialized")

    result = op(anvil_env, "parse_prd", file=SAMPLE_AT)

    assert (result["recorded"], result["revision"], result["prd_status"]) == (True, 1, "draft")
    assert (result["feature_count"], result["task_count"], result["error_count"]) == (3, 9, 0)
    event = last_event(anvil_env)
    assert event.type == "prd.parsed" and event.payload["revision"] == 1
    assert managed_source(anvil_env).read_bytes() == (Path(anvil_env["ANVIL_ROOT"]) / SAMPLE_AT).read_bytes()


def test_reparsing_an_unchanged_source_records_nothing(anvil_env) -> None:
    scenario(anvil_env, "parsed")
    before = event_types(anvil_env)

    result = op(anvil_env, "parse_prd", file=SAMPLE_AT)
    managed = op(anvil_env, "parse_prd")

    assert result["recorded"] is False and managed["recorded"] is False
    assert result["revision"] == managed["revision"] == 1
    assert event_types(anvil_env) == before


def test_parsing_without_any_source_fails_with_prd_source_missing(anvil_env) -> None:
    scenario(anvil_env, "initialized")
    assert refused(anvil_env, "parse_prd").code == "prd_source_missing"


def test_a_material_change_records_prd_revised_and_demotes_an_approved_prd_to_draft(anvil_env) -> None:
    root = scenario(anvil_env, "ready")
    rewrite_sample(root, "Saving the same URL twice returns two different codes.",
                   "Saving the same URL twice returns the same code.")

    result = op(anvil_env, "parse_prd", file=SAMPLE_AT)

    assert (result["recorded"], result["revision"], result["prd_status"], result["demoted"]) == \
        (True, 2, "draft", True)
    event = last_event(anvil_env)
    assert event.type == "prd.revised" and event.payload["approval_carried"] is False
    error = refused(anvil_env, "claim_task", task_id="T001", actor="agent-1")
    assert (error.code, error.exit_code) == ("prd_not_approved", 5)


def test_approving_the_revised_prd_makes_claims_possible_again(anvil_env) -> None:
    root = scenario(anvil_env, "ready")
    rewrite_sample(root, "Shortlink is a small URL-shortener", "Shortlink is a tiny URL-shortener")
    op(anvil_env, "parse_prd", file=SAMPLE_AT)

    approve(anvil_env)

    assert op(anvil_env, "claim_task", task_id="T001", actor="agent-1")["generation"] == 1


def test_a_change_of_trailing_whitespace_keeps_the_approval(anvil_env) -> None:
    root = scenario(anvil_env, "ready")
    rewrite_sample(root, "### F001: Link creation\n", "### F001: Link creation   \n")

    result = op(anvil_env, "parse_prd", file=SAMPLE_AT)

    assert (result["recorded"], result["revision"], result["prd_status"], result["demoted"]) == \
        (True, 2, "approved", False)
    assert last_event(anvil_env).payload["approval_carried"] is True
    assert op(anvil_env, "claim_task", task_id="T001", actor="agent-1")["generation"] == 1


def test_adding_blank_lines_is_not_a_material_change_and_keeps_the_approval(anvil_env) -> None:
    root = scenario(anvil_env, "ready")
    rewrite_sample(root, "## Goals\n", "\n\n\n## Goals\n")

    result = op(anvil_env, "parse_prd", file=SAMPLE_AT)

    assert result["recorded"] is True
    assert (result["prd_status"], result["demoted"]) == ("approved", False)
    assert op(anvil_env, "claim_task", task_id="T001", actor="agent-1")["generation"] == 1


def test_unparsed_edits_of_the_managed_source_wait_for_a_parse_and_claims_follow_the_approved_revision(
        anvil_env) -> None:
    """The approval binds the revision in the log, never the file: `next` and `claim` agree while
    someone edits the managed source, the edit is kept as it is, and parsing it is what demotes."""
    scenario(anvil_env, "ready")
    path = managed_source(anvil_env)
    edited = path.read_text(encoding="utf-8") + "\n## Goals\n\n- An unreviewed afterthought.\n"
    path.write_text(edited, encoding="utf-8")

    assert op(anvil_env, "get_next_task")["task"]["id"] == "T001"
    assert op(anvil_env, "claim_task", task_id="T001", actor="agent-1")["generation"] == 1
    assert path.read_text(encoding="utf-8") == edited, "someone's unparsed edits are never overwritten"

    result = op(anvil_env, "parse_prd")
    assert (result["recorded"], result["prd_status"], result["demoted"]) == (True, "draft", True)
    assert refused(anvil_env, "claim_task", task_id="T002", actor="agent-2").code == "prd_not_approved"
    assert op(anvil_env, "get_next_task")["task"] is None


def test_a_dry_run_parse_reports_the_revision_it_would_record_and_appends_nothing(anvil_env) -> None:
    root = scenario(anvil_env, "approved")
    rewrite_sample(root, "Shortlink is a small", "Shortlink is a compact")
    before = event_types(anvil_env)

    result = op(anvil_env, "parse_prd", file=SAMPLE_AT, dry_run=True)

    assert (result["recorded"], result["revision"], result["prd_status"]) == (True, 2, "draft")
    assert event_types(anvil_env) == before
    assert op(anvil_env, "get_project_status")["prd_status"] == "approved"


def test_a_dry_run_parse_of_a_changed_file_leaves_the_managed_source_and_claims_alone(anvil_env) -> None:
    root = scenario(anvil_env, "ready")
    managed_before = managed_source(anvil_env).read_bytes()
    rewrite_sample(root, "Shortlink is a small", "Shortlink is a compact")

    op(anvil_env, "parse_prd", file=SAMPLE_AT, dry_run=True)

    assert managed_source(anvil_env).read_bytes() == managed_before
    assert op(anvil_env, "claim_task", task_id="T001", actor="agent-1")["generation"] == 1


@pytest.mark.parametrize(("content", "code"), [
    (b"# Project: Big\n\n" + b"x" * DEFAULT_MAX_BYTES, "prd_too_large"),
    (b"# Project: Latin\n\nCaf\xe9 cr\xe8me\n", "prd_not_utf8"),
], ids=["oversized", "not-utf8"])
def test_an_unreadable_source_is_a_usage_error_and_records_nothing(anvil_env, content, code) -> None:
    root = scenario(anvil_env, "initialized")
    (root / "source.md").write_bytes(content)
    before = event_types(anvil_env)

    error = refused(anvil_env, "parse_prd", file="source.md")

    assert (error.code, error.exit_code) == (code, 2)
    assert "xxxx" not in error.message and "Caf" not in error.message, "messages never echo the source"
    assert event_types(anvil_env) == before


@pytest.mark.parametrize(("content", "code"), [
    (b"# Project: Big\n\n" + b"x" * DEFAULT_MAX_BYTES, "local_file_too_large"),  # the CLI reads --file itself
    (b"\xff\xfe# Project\n", "local_file_not_utf8"),
], ids=["oversized", "not-utf8"])
def test_the_cli_reports_an_unreadable_source_with_exit_2_and_no_traceback(anvil_env, cli, content, code) -> None:
    root = scenario(anvil_env, "initialized")
    (root / "source.md").write_bytes(content)

    as_json = cli("prd", "parse", "--file", "source.md", "--json")
    human = cli("prd", "parse", "--file", "source.md")

    assert as_json.code == 2 and as_json.json()["error"]["code"] == code
    assert human.code == 2 and human.stdout == ""
    assert code in human.stderr and len(human.stderr.strip().splitlines()) == 1
    assert "Traceback" not in human.stderr + as_json.stderr + as_json.stdout


def test_the_cli_prints_parse_errors_in_the_json_result_and_exits_2(anvil_env, cli) -> None:
    root = scenario(anvil_env, "initialized")
    (root / "broken.md").write_text("no heading\n", encoding="utf-8")

    result = cli("prd", "parse", "--file", "broken.md", "--json")

    assert result.code == 2
    assert result.json()["recorded"] is False and result.json()["error_count"] == 1


# -- review ------------------------------------------------------------------------------------


def test_review_moves_a_draft_to_reviewed_and_then_to_approved(anvil_env) -> None:
    scenario(anvil_env, "parsed")

    reviewed = op(anvil_env, "review_prd", actor="lead", notes="looks complete")
    approved = op(anvil_env, "review_prd", actor="lead", approve=True)

    assert (reviewed["from_status"], reviewed["to_status"]) == ("draft", "reviewed")
    assert (approved["from_status"], approved["to_status"], approved["revision"]) == ("reviewed", "approved", 1)
    assert event_types(anvil_env)[-2:] == ["prd.reviewed", "prd.approved"]


@pytest.mark.parametrize(("state", "approve_it"), [
    ("parsed", True),     # approving a draft
    ("approved", False),  # reviewing an approved PRD again
    ("approved", True),   # approving twice
], ids=["approve-draft", "review-approved", "approve-approved"])
def test_review_out_of_order_is_refused_with_wrong_status(anvil_env, state, approve_it) -> None:
    scenario(anvil_env, state)
    before = event_types(anvil_env)

    error = refused(anvil_env, "review_prd", actor="lead", approve=approve_it)

    assert (error.code, error.exit_code) == ("wrong_status", 5)
    assert event_types(anvil_env) == before


def test_reviewing_a_reviewed_prd_again_is_refused_with_wrong_status(anvil_env) -> None:
    scenario(anvil_env, "parsed")
    op(anvil_env, "review_prd", actor="lead")
    assert refused(anvil_env, "review_prd", actor="lead").code == "wrong_status"


def test_review_with_a_stale_expected_revision_is_refused_and_the_current_one_accepted(anvil_env) -> None:
    root = scenario(anvil_env, "parsed")
    rewrite_sample(root, "Shortlink is a small", "Shortlink is a compact")
    assert op(anvil_env, "parse_prd", file=SAMPLE_AT)["revision"] == 2
    before = event_types(anvil_env)

    error = refused(anvil_env, "review_prd", actor="lead", expected_revision=1)

    assert (error.code, error.exit_code) == ("stale_revision", 5)
    assert event_types(anvil_env) == before
    assert op(anvil_env, "review_prd", actor="lead", expected_revision=2)["to_status"] == "reviewed"


def test_review_before_any_parse_fails_with_prd_not_found(anvil_env) -> None:
    scenario(anvil_env, "initialized")
    error = refused(anvil_env, "review_prd", actor="lead")
    assert (error.code, error.exit_code) == ("prd_not_found", 6)


# -- assess and find_decisions -----------------------------------------------------------------

MINI_PRD = """# Project: Mini

## Summary

A link shortener. [NEEDS DECISION: which database?]

## Open Questions

- How long should links live?
- None

## Requirements

- R001: Links can be created.

## Features

### F001: Core

The core.

**Requirements:** R001

## Tasks

### T010: Later task

**Feature:** F001
**Priority:** high
**Likely files:** b.py
**Acceptance criteria:**
- It is fast. [NEEDS DECISION: how fast?]

### T002: Earlier task

**Feature:** F001
**Priority:** high
**Likely files:** a.py
**Verification:**
- `pytest -q`
"""


def test_assess_prd_returns_advisory_findings_and_records_nothing(anvil_env) -> None:
    root = scenario(anvil_env, "parsed")
    (root / "mini.md").write_text(MINI_PRD, encoding="utf-8")
    before = event_types(anvil_env)

    result = op(anvil_env, "assess_prd", file="mini.md")
    managed = op(anvil_env, "assess_prd")

    assert result["advisory"] is True and result["count"] == len(result["findings"]) > 0
    assert [f["id"] for f in result["findings"]] == [f"BR-{i:03d}" for i in range(1, result["count"] + 1)]
    assert all(f["challenge_question"] for f in result["findings"])
    assert managed["advisory"] is True
    assert event_types(anvil_env) == before


def test_item_8_assess_prd_of_a_prd_with_parse_errors_returns_the_errors_and_no_findings(anvil_env) -> None:
    """Issue 24 item 8: findings on a PRD that does not parse would judge another document than the one
    meant; the errors come back instead (as parse_prd reports them) and no finding."""
    root = scenario(anvil_env, "initialized")
    broken = MINI_PRD.replace("**Feature:** F001", "**Feature:** F999", 1)
    assert broken != MINI_PRD
    (root / "broken.md").write_text(broken, encoding="utf-8")
    parsed = op(anvil_env, "parse_prd", file="broken.md", dry_run=True)
    result = op(anvil_env, "assess_prd", file="broken.md")
    assert parsed["error_count"] >= 1 and result["error_count"] == parsed["error_count"]
    assert result["errors"] == parsed["errors"] and (result["count"], result["findings"]) == (0, [])


def test_assess_prd_refuses_a_non_utf8_source(anvil_env) -> None:
    root = scenario(anvil_env, "initialized")
    (root / "latin.md").write_bytes(b"# Project: Caf\xe9\n")
    error = refused(anvil_env, "assess_prd", file="latin.md")
    assert (error.code, error.exit_code) == ("prd_not_utf8", 2)


def test_find_decisions_lists_markers_then_open_questions_then_missing_fields(anvil_env) -> None:
    root = scenario(anvil_env, "initialized")
    (root / "mini.md").write_text(MINI_PRD, encoding="utf-8")
    op(anvil_env, "parse_prd", file="mini.md")
    before = event_types(anvil_env)

    result = op(anvil_env, "find_decisions")

    kinds = [d["kind"] for d in result["decisions"]]
    assert kinds == ["needs_decision", "needs_decision", "open_question", "missing_field", "missing_field"]
    assert [d["id"] for d in result["decisions"]] == ["ND-001", "ND-002", "OQ-001", "MF-001", "MF-002"]
    assert [d["text"] for d in result["decisions"][:3]] == ["which database?", "how fast?",
                                                            "How long should links live?"]
    assert [d["location"] for d in result["decisions"][3:]] == ["T002", "T010"], "missing fields in task-id order"
    assert result["counts_by_kind"] == {"needs_decision": 2, "open_question": 1, "missing_field": 2}
    assert result["total"] == 5
    assert event_types(anvil_env) == before


def test_find_decisions_fails_when_there_is_no_prd_source(anvil_env) -> None:
    scenario(anvil_env, "initialized")
    assert refused(anvil_env, "find_decisions").code == "prd_source_missing"


def test_a_prd_file_outside_the_project_is_refused(anvil_env, tmp_path) -> None:
    scenario(anvil_env, "initialized")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# Project: X\n", encoding="utf-8")
    error = refused(anvil_env, "parse_prd", file=str(outside))
    assert (error.code, error.exit_code) == ("file_outside_project", 2)
    assert str(outside) not in error.message


def test_find_decisions_on_a_file_judges_that_files_tasks(anvil_env) -> None:
    root = scenario(anvil_env, "planned")
    verification = "**Verification:**\n- `python -m unittest -q tests/test_store.py`"
    other = (root / "docs" / "prd.md").read_text().replace(verification, "")
    (root / "other.md").write_text(other, encoding="utf-8")
    found = op(anvil_env, "find_decisions", file="other.md")
    missing = [d["location"] for d in found["decisions"] if d["kind"] == "missing_field"]
    assert missing and all(location.startswith("T001") for location in missing)


def test_approving_reports_the_decisions_still_open(anvil_env) -> None:
    scenario(anvil_env, "parsed")
    reviewed = op(anvil_env, "review_prd", actor="lead")
    assert reviewed["warnings"] == [], "only an approval warns"
    approved = op(anvil_env, "review_prd", actor="lead", approve=True)
    assert approved["open_decisions"] == 1, "the sample PRD has one open question"


def test_item_13_approving_a_prd_with_open_decisions_warns(anvil_env, cli) -> None:  # type: ignore[no-untyped-def]
    """Issue 24 item 13: the approval goes through, and says what is still open and where to look."""
    scenario(anvil_env, "parsed")
    op(anvil_env, "review_prd", actor="lead")
    shown = cli("prd", "review", "--approve", "--actor", "lead")
    assert shown.code == 0 and "1 open decision(s)" in shown.stdout and "anvil prd find-decisions" in shown.stdout
    assert op(anvil_env, "get_project_status")["prd_status"] == "approved"


def test_a_parse_without_a_file_rereads_the_file_the_prd_came_from(anvil_env, cli) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    from tests.ops.support import op, scenario

    root = scenario(anvil_env, "parsed")  # parsed from docs/prd.md through the CLI's own reading
    first = cli("prd", "parse", "--file", "docs/prd.md", "--json").json()
    assert first["source_file"] == "docs/prd.md" and first["recorded"] is False
    prd = Path(root, "docs", "prd.md")
    prd.write_text(prd.read_text().replace("Visit counting", "Visit counter"))
    again = op(anvil_env, "parse_prd")
    assert (again["recorded"], again["revision"], again["source_file"]) == (True, 2, "docs/prd.md")
    assert "differs from the managed copy" in again["source_notice"]
    assert "(unchanged)" in op(anvil_env, "parse_prd")["source_notice"]
    prd.unlink()
    gone = op(anvil_env, "parse_prd")
    assert gone["recorded"] is False and "is not readable in the project: parsed the managed copy" in \
        gone["source_notice"]


def test_item_12_a_prd_parsed_from_a_file_outside_the_project_is_reread_by_a_later_parse(  # type: ignore[no-untyped-def]
        anvil_env, cli, tmp_path) -> None:
    """Issue 24 item 12: the first parse says a parse without --file re-reads the file; for a file
    outside the project that used to answer "unchanged" and ignore the edits. A server over the
    network, which cannot read the caller's file, refuses instead of pretending."""
    from anvil.engine.errors import AnvilError
    from anvil.ops.invoke import invoke

    root = scenario(anvil_env, "initialized")
    outside = tmp_path / "specs" / "prd.md"
    outside.parent.mkdir()
    outside.write_bytes((root / SAMPLE_AT).read_bytes())
    first = cli("prd", "parse", "--file", str(outside), "--json").json()
    assert first["recorded"] is True and first["source_file"] == str(outside.resolve())
    outside.write_text(outside.read_text().replace("Visit counting", "Visit counter"))
    again = cli("prd", "parse", "--json").json()
    assert (again["recorded"], again["revision"]) == (True, 2), again
    assert "re-read" in again["source_notice"] and "differs from the managed copy" in again["source_notice"]
    assert "(unchanged)" in op(anvil_env, "parse_prd")["source_notice"]
    with pytest.raises(AnvilError) as info:
        invoke("parse_prd", {}, env=anvil_env, cwd=str(root), remote=True)
    assert info.value.code == "prd_source_outside" and info.value.details == {"source_file": str(outside.resolve())}


def test_a_parse_without_a_file_refuses_when_the_file_and_the_managed_copy_both_changed(anvil_env) -> None:
    root = scenario(anvil_env, "parsed")
    rewrite_sample(root, "Shortlink is a small", "Shortlink is a compact")
    copy = managed_source(anvil_env)
    copy.write_text(copy.read_text(encoding="utf-8").replace("Shortlink is a small", "Shortlink is a tiny"),
                    encoding="utf-8")
    before = event_types(anvil_env)
    error = refused(anvil_env, "parse_prd")
    assert error.code == "prd_sources_diverged" and "docs/prd.md" in error.message and "--file" in error.message
    assert event_types(anvil_env) == before
    assert op(anvil_env, "parse_prd", file=SAMPLE_AT)["recorded"] is True  # the one named wins
