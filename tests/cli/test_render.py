"""Human output: Rich tables on stdout, PRD text shown verbatim."""

from __future__ import annotations

from anvil.ops.scenarios import build_scenario


def test_human_status_is_a_table_not_json(cli) -> None:  # type: ignore[no-untyped-def]
    cli("init", "--name", "Demo", "--json")
    result = cli("summary")
    assert result.code == 0 and "project name" in result.stdout and "{" not in result.stdout


def test_human_list_and_next_are_tables_and_quiet_next_prints_the_id(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    listing = cli("list")
    assert listing.code == 0 and "┃ id" in listing.stdout and "T009" in listing.stdout
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
