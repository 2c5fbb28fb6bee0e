"""Human output: plain tables and label lists on stdout, PRD text shown verbatim."""

from __future__ import annotations

from anvil.ops.scenarios import build_scenario


def test_human_status_is_a_table_not_json(cli) -> None:  # type: ignore[no-untyped-def]
    cli("init", "--name", "Demo", "--json")
    result = cli("summary")
    assert result.code == 0 and "Demo (demo)" in result.stdout and "{" not in result.stdout


def test_human_list_and_next_are_tables_and_quiet_next_prints_the_id(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    listing = cli("list")
    assert listing.code == 0 and listing.stdout.startswith("id    status") and "T009" in listing.stdout
    offered = cli("next")
    assert offered.code == 0 and "next task" in offered.stdout
    quiet = cli("next", "-q")
    assert (quiet.code, quiet.stdout.strip()) == (0, "T001")


def test_prd_text_that_looks_like_markup_is_shown_verbatim(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    from anvil.ops.invoke import invoke

    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    prd = Path(anvil_env["ANVIL_ROOT"], "docs", "prd.md")
    prd.write_text(prd.read_text().replace("SQLite storage layer", "Escape [/b] tags in [bold]output"))
    for name, args in (("parse_prd", {"file": "docs/prd.md"}), ("review_prd", {"actor": "lead"}),
                       ("review_prd", {"actor": "lead", "approve": True}), ("plan_tasks", {}), ("review_tasks", {})):
        invoke(name, args, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])
    for args in (("list",), ("show", "T001"), ("next", "--actor", "a")):
        result = cli(*args)
        assert result.code == 0 and "Traceback" not in result.stderr, result.stderr
    assert "[bold]output" in cli("show", "T001").stdout


def test_a_packet_piped_is_the_raw_markdown(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    build_scenario("claimed_advisory", anvil_env, anvil_env["ANVIL_ROOT"])
    content = cli("packet", "T001", "--json").json()["content"]
    assert cli("packet", "T001").stdout == content
    assert "`python -m unittest -q tests/test_store.py`" in content and not any(
        line != line.rstrip() for line in content.splitlines())


def test_a_packet_on_a_terminal_keeps_every_word() -> None:
    from anvil.cli.render import View, render
    from anvil.cli.tables import Screen

    content = "# T001: Title\n\nStatus: ready\n\n## Acceptance criteria\n\n- `links` table " + "word " * 30 + "\n"
    lines = render("generate_work_packet", {"task_id": "T001", "format": "markdown", "content": content},
                   View(Screen(40, False, True), {}, {}))
    assert all(len(line) <= 40 for line in lines)
    marks = str.maketrans("", "", "#`•-")  # markdown drawn: headings, code spans and bullets lose their marks
    assert " ".join(lines).translate(marks).split() == content.translate(marks).split()
    assert "# T001" not in "\n".join(lines) and any(line.strip() == "T001: Title" for line in lines)


def test_a_dry_run_says_nothing_was_written(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    shown = cli("claim", "T001", "--actor", "agent-1", "--dry-run")
    assert shown.code == 0 and shown.stdout.startswith("dry run: nothing was written")
    assert cli("claim", "T001", "--actor", "agent-1", "--dry-run", "--json").json()["dry_run"] is True
    assert cli("list", "--status", "claimed", "--json").json()["tasks"] == []
    real = cli("claim", "T001", "--actor", "agent-1")
    assert real.code == 0 and "dry run" not in real.stdout and "claim id" in real.stdout


def test_config_shows_every_setting_even_when_off(cli) -> None:  # type: ignore[no-untyped-def]
    cli("init", "--json")
    lines = cli("config").stdout.splitlines()
    assert [line.split("  ")[0] for line in lines] == ["self review", "accept rate floor", "accept rate window days",
                                                        "review queue cap", "require fencing", "git mode",
                                                        "evidence gate", "require verified", "land target",
                                                        "land remote", "land method", "land delete branch"]
    assert lines[7].endswith("auto (in force: off)")  # no git mode: client_reported proofs count
    assert lines[8].endswith("off") and lines[10].endswith("merge")  # landing is off until a target is set
    assert lines[0].endswith("off") and lines[2].endswith("7")
    changed = cli("config", "--review-queue-cap", "0").stdout
    assert "review queue cap         0  (changed)" in changed


def test_next_suggests_a_claim_command_that_works_as_printed(cli, anvil_env, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    assert "claim it: anvil claim T001 --actor NAME" in cli("next").stdout
    assert "claim it: anvil claim T001 --actor agent-7" in cli("next", "--actor", "agent-7").stdout
    monkeypatch.setenv("ANVIL_ACTOR", "agent-8")
    hint = [line for line in cli("next").stdout.splitlines() if line.startswith("claim it:")][0]
    assert hint == "claim it: anvil claim T001"
    assert cli(*hint.removeprefix("claim it: anvil ").split()).code == 0


def test_claim_next_shows_the_claim_as_a_label_list(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    lines = cli("claim-next", "--actor", "agent-1").stdout.splitlines()
    assert lines[0] == "task        T001" and lines[1] == "claimed by  agent-1" and lines[3] == "generation  1"
    assert cli("claim-next", "--actor", "agent-1", "--max-blast", "1").stdout.startswith("task        T")


def test_a_narrow_terminal_gets_whole_words_within_its_width(cli, anvil_env, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    monkeypatch.setenv("COLUMNS", "60")
    for args in (("list",), ("show", "T003"), ("status",), ("next",), ("prd", "find-decisions")):
        lines = cli(*args).stdout.splitlines()
        assert lines and all(len(line) <= 60 for line in lines), (args, [x for x in lines if len(x) > 60])
    listing = cli("list").stdout
    assert "Daily statistics" in listing and "statisti\n" not in listing


def test_a_bundle_is_shown_with_its_members_gate_and_the_next_heartbeat(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    build_scenario("bundled", anvil_env, anvil_env["ANVIL_ROOT"])
    claimed = cli("bundle", "claim", "B1", "--actor", "agent-1", "--shared-tree")
    assert claimed.code == 0 and "anvil renew B1 --target-kind bundle --generation 1" in claimed.stdout
    shown = cli("bundle", "show", "B1").stdout
    assert shown.startswith("B1  active") and "no review round yet" in shown
    assert [line.split()[:3] for line in shown.splitlines() if line.startswith("T00")] == [
        ["T001", "1", "ready"], ["T002", "1", "ready"], ["T003", "2", "ready"]]
    listed = cli("bundle", "list").stdout.splitlines()
    assert listed[0].split() == ["id", "status", "coordinator", "tasks", "round", "held", "by"]
    assert listed[1].split() == ["B1", "active", "agent-1", "3", "0", "agent-1"]
    assert cli("bundle", "packet", "B1").stdout == cli("bundle", "packet", "B1", "--json").json()["content"]


def test_parse_errors_are_a_table_of_lines_and_messages(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    cli("init", "--json")
    Path(anvil_env["ANVIL_ROOT"], "prd.md").write_text(
        "# Project: P\n\n## Tasks\n\n### T001: A\n\nPriority: urgent\n**Dependencies:** T009 (later)\n")
    shown = cli("prd", "parse", "--file", "prd.md")
    assert shown.code == 2 and shown.stdout.split("\n")[0].split() == [
        "prd", "default:", "nothing", "recorded:", "fix", "the", "errors", "below", "and", "parse", "again"]
    lines = shown.stdout.splitlines()
    assert any(line.startswith("7     error     invalid_priority") for line in lines), lines
    assert any(line.startswith("7     warning   unbolded_field") for line in lines), lines
    assert any(line.startswith("8     warning   note_in_reference") for line in lines), lines


def test_the_work_loop_reads_as_sentences(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    build_scenario("claimed_advisory", anvil_env, anvil_env["ANVIL_ROOT"])
    note = cli("submit", "T001", "--actor", "agent-1", "--command", "pytest -x", "--category", "diagnostic").stdout
    assert note.startswith("noted ") and "your claim (generation 1) goes on" in note and "next ready" not in note
    handed = cli("submit", "T001", "--actor", "agent-1", "--command", "pytest -q").stdout.splitlines()
    assert handed[0].startswith("handed in   T001 for review") and handed[2] == "trust       unproven"
    assert handed[3] == "next ready  T002 URL validation (high)"
    warning = " ".join(handed[4:-2])  # prose folds at the screen's width (COLUMNS=80 under xdist)
    assert warning.startswith("warning: no passing proof of python -m unittest -q tests/test_store.py: the advisory")
    assert handed[-2] == "claim it: anvil claim T002 --actor agent-1"  # a command is never folded
    decided = cli("apply", "T001", "--reject", "--reason", "no index", "--actor", "lead").stdout.splitlines()
    assert decided[0].split() == ["decision", "T001", "rejected:", "back", "to", "drafted"]
    assert any(line.split() == ["reason", "no", "index"] for line in decided)


def test_item_13_the_review_tier_is_shown_with_what_it_means(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    """Issue 24 item 13: "tier" was explained nowhere; show, next and the packet say what it asks."""
    from anvil.engine.tasks import TIER_MEANINGS
    from anvil.mcp.schema import shared_conventions

    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    tier = cli("show", "T001", "--json").json()["review_tier"]
    for argv in (["show", "T001"], ["next"], ["packet", "T001"]):
        shown = cli(*argv)
        assert shown.code == 0 and TIER_MEANINGS[tier] in " ".join(shown.stdout.split()), argv
    assert "- review_tier: on a task, how carefully its review should look" in shared_conventions()


def test_item_13_a_rejection_prints_what_happens_next(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    build_scenario("submitted", anvil_env, anvil_env["ANVIL_ROOT"])
    shown = cli("apply", "T001", "--reject", "--reason", "redo", "--actor", "lead")
    flat = " ".join(shown.stdout.split())
    assert shown.code == 0 and "back in drafted" in flat and "anvil review tasks" in flat
    assert "counts against" in flat


def test_show_tells_where_a_task_landed_or_why_it_bounced() -> None:
    from anvil.cli.render import landing_line

    landed = {"outcome": "landed", "lander": "ci", "landed_commit": "a" * 40, "approved_commit": "b" * 40}
    assert landing_line(landed) == "landed by ci at aaaaaaaaaaaa (approved commit bbbbbbbbbbbb)"
    conflict = {"outcome": "bounced", "reason": "conflict", "lander": "ci", "conflict_paths": ["x.py"],
                "touched_by": {"x.py": ["T001"]}}
    assert landing_line(conflict) == "landing bounced (conflict, ci): conflicts in x.py (landed by T001)"
    failed = {"outcome": "bounced", "reason": "proof_failed", "lander": "ci", "failed_command": "pytest -q",
              "excerpt": "1 failed"}
    assert landing_line(failed).endswith("`pytest -q` failed on the merged tree: 1 failed")


def test_force_color_styles_piped_output_and_no_color_wins(cli, anvil_env, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    build_scenario("claimed", anvil_env, anvil_env["ANVIL_ROOT"])
    monkeypatch.delenv("COLUMNS", raising=False)
    piped = cli("list").stdout
    assert "\x1b[" not in piped and max(len(line) for line in piped.splitlines()) > 80  # one row per line
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[32mready" in cli("list").stdout  # status colours
    packet = cli("packet", "T001").stdout
    assert "\x1b[" in packet and "# T001" not in packet  # laid out as on a terminal: markdown drawn
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in cli("list").stdout and "# T001" not in cli("packet", "T001").stdout


def test_a_result_reads_alike_whatever_order_its_keys_came_in() -> None:
    from anvil.cli.render import View, render
    from anvil.cli.tables import Screen

    first = {"decided_count": 1, "refused_count": 0, "next_ready": None, "dry_run": False,
             "decided": [{"task_id": "T001", "decision": "accepted", "reviewer": "lead", "rejection_metrics":
                          {"window_days": 7, "counting": True}}], "refused": []}

    def reversed_keys(value):  # type: ignore[no-untyped-def]
        if isinstance(value, dict):
            return {key: reversed_keys(value[key]) for key in reversed(list(value))}
        return [reversed_keys(v) for v in value] if isinstance(value, list) else value

    view = View(Screen(None, False, False), {}, {})
    shown = render("apply_review_decisions", first, view)
    assert shown == render("apply_review_decisions", reversed_keys(first), view)
    assert "counting=yes, window_days=7" in "\n".join(shown)  # a free-form record: keys sorted
