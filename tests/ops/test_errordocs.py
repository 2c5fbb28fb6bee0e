"""docs/errors.md and the README's exit-code table are generated from the catalogue and current."""

from __future__ import annotations

import pytest

from anvil.engine.error_codes import CATALOGUE, EXIT_CODES, catalogue_by_code
from anvil.ops.errordocs import DOC_PATH, README_PATH, TABLE_END, TABLE_START, readme_with_table, render_errors
from anvil.ops.registry import all_operations


def test_docs_errors_md_is_current() -> None:
    assert DOC_PATH.read_text(encoding="utf-8") == render_errors(), \
        "docs/errors.md is stale: run `python -m anvil.ops.errordocs`"


def test_the_readme_exit_code_table_is_current() -> None:
    readme = README_PATH.read_text(encoding="utf-8")
    assert readme == readme_with_table(readme), \
        "README.md's exit-code table is stale: run `python -m anvil.ops.errordocs`"


def test_the_readme_links_the_catalogue_and_shows_every_exit_code() -> None:
    readme = README_PATH.read_text(encoding="utf-8")
    table = readme[readme.index(TABLE_START):readme.index(TABLE_END)]
    assert [int(line.split("|")[1]) for line in table.splitlines()[3:]] == [row.exit_code for row in EXIT_CODES]
    assert "(docs/errors.md)" in readme


def test_the_page_gives_every_code_its_exit_code_meaning_and_remedy() -> None:
    page = render_errors()
    for entry in CATALOGUE:
        row = next(line for line in page.splitlines() if line.startswith(f"| `{entry.code}` |"))
        assert entry.meaning in row and entry.remedy in row
        section = page[:page.index(row)].rsplit("## Exit ", 1)[1]
        assert section.startswith(f"{entry.exit_code}:"), entry.code


def test_a_readme_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError):
        readme_with_table("# anvil\n\n| code | meaning |\n")


def test_every_error_a_documented_example_expects_is_catalogued() -> None:
    catalogue = catalogue_by_code()
    expected = {(op.name, example.error) for op in all_operations() for example in op.examples if example.error}
    assert expected and {pair for pair in expected if pair[1] not in catalogue} == set()


def test_the_deploy_guides_retry_table_is_current_and_covers_every_exit_code() -> None:
    from anvil.engine.error_codes import EXIT_CODES
    from anvil.ops.errordocs import DEPLOY_PATH, deploy_with_table

    deploy = DEPLOY_PATH.read_text(encoding="utf-8")
    assert deploy_with_table(deploy) == deploy, "docs/deploy.md's retry table is stale: run the errordocs module"
    for row in EXIT_CODES:
        assert f"\n| {row.exit_code} | {row.title} | {row.retry} |" in deploy


def test_a_postgresql_outage_is_transient_and_a_newer_schema_final() -> None:
    from anvil.engine.error_codes import CATALOGUE

    retry = {entry.code: entry.retry for entry in CATALOGUE}
    assert (retry["database_unavailable"], retry["state_busy"], retry["target_unavailable"]) == ("transient",) * 3
    assert (retry["schema_mismatch"], retry["not_mcp"], retry["invalid_input"]) == ("final",) * 3
