"""Long engine work reports its progress to whoever listens, and costs nothing when nobody does."""

from __future__ import annotations

from pathlib import Path

from anvil.engine import progress
from anvil.engine.prd.parser import parse_prd
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import SAMPLE_PRD, build_scenario


def listen() -> tuple[list[tuple[str, int, int]], progress.Reporter]:
    seen: list[tuple[str, int, int]] = []
    return seen, lambda stage, done, total: seen.append((stage, done, total))


def test_parsing_reports_lines_up_to_the_total() -> None:
    seen, reporter = listen()
    text = Path(SAMPLE_PRD).read_text()
    with progress.reporting(reporter):
        parse_prd(text)
    assert seen[0] == ("parsing the PRD", 0, len(text.split("\n")))
    assert seen[-1][1] == seen[-1][2]
    parse_prd(text)  # nobody listens: nothing is reported anywhere
    assert len(seen) == 2


def test_planning_replaying_and_copying_report_their_stages(anvil_env: dict[str, str]) -> None:
    root = anvil_env["ANVIL_ROOT"]
    seen, reporter = listen()
    build_scenario("approved", anvil_env, root)
    with progress.reporting(reporter):
        invoke("plan_tasks", {"use_llm": False}, env=anvil_env, cwd=root)
        invoke("rebuild_state", {"confirm": True}, env=anvil_env, cwd=root)
        invoke("init_project", {"force": True, "confirm": True}, env=anvil_env, cwd=root)
    stages = {stage for stage, _, _ in seen}
    assert {"planning", "replaying the event log", "copying the state"} <= stages
    assert ("planning", 4, 4) in seen
