"""The approval gate reads only the database: `next`, `claim` and `verify` agree at every kill point
of a parse, and the managed PRD copy is a cache rewritten from the log.

A parse with ``--file`` commits the new revision, then copies the file over the managed source. A
process killed between the two used to leave every claim refused (the gate compared the stale copy)
while `next` offered tasks, and re-parsing the stale copy reverted the PRD.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anvil.engine.storage.paths import resolve_state
from anvil.ops.scenarios import SAMPLE_AT
from tests.conftest import anvil_json
from tests.faults import killed, run_killed_at
from tests.ops.support import scenario

POINTS = ["before_commit", "committed", "mirrored", "after_commit_actions"]


def cli(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    return anvil_json(env, *args)


def managed(env: dict[str, str]) -> Path:
    return resolve_state(env, env["ANVIL_ROOT"]).prd_path


def assert_next_claim_and_verify_agree(env: dict[str, str]) -> None:
    code, offer = cli(env, "next", "--actor", "agent-1")
    assert code == 0, offer
    task = offer["task"]
    if task is not None:
        code, claim = cli(env, "claim", task["id"], "--actor", "agent-1")
        assert code == 0, ("next offered a task that claim refuses", claim)
    else:
        code, refusal = cli(env, "claim", "T001", "--actor", "agent-1")
        assert code != 0, "claim took a task while next offered none"
    assert cli(env, "verify")[1]["ok"]


@pytest.mark.parametrize("point", POINTS)
def test_a_parse_killed_at_any_point_leaves_next_claim_and_verify_in_agreement(anvil_env: dict[str, str],
                                                                               point: str) -> None:
    root = scenario(anvil_env, "ready")
    source = root / SAMPLE_AT
    revised = source.read_text(encoding="utf-8").replace("## Goals\n", "\n\n\n## Goals\n")  # layout only
    source.write_text(revised, encoding="utf-8")

    proc = run_killed_at(anvil_env, point, "prd", "parse", "--file", SAMPLE_AT, "--json")
    assert killed(proc), proc.stdout
    assert_next_claim_and_verify_agree(anvil_env)

    # Without --file the file the PRD was parsed from is read again: the edit a killed parse never
    # recorded is recorded now, and one that was committed is not recorded twice (nor reverted).
    code, again = cli(anvil_env, "prd", "parse")
    committed = point != "before_commit"
    assert code == 0 and again["recorded"] is not committed, again
    assert again["source_file"] == SAMPLE_AT
    assert managed(anvil_env).read_text(encoding="utf-8") == revised
    assert cli(anvil_env, "verify")[1]["ok"]


@pytest.mark.parametrize("point", ["committed"])
def test_an_approval_killed_after_its_commit_is_an_approval(anvil_env: dict[str, str], point: str) -> None:
    scenario(anvil_env, "parsed")
    assert cli(anvil_env, "prd", "review", "--reviewer", "lead")[0] == 0
    proc = run_killed_at(anvil_env, point, "prd", "review", "--approve", "--reviewer", "lead", "--json")
    assert killed(proc)
    assert cli(anvil_env, "status")[1]["prd_status"] == "approved"
    for args in (["plan", "--no-llm"], ["score"], ["review", "tasks"]):
        assert cli(anvil_env, *args)[0] == 0, args
    assert_next_claim_and_verify_agree(anvil_env)


def test_a_deleted_managed_copy_is_rewritten_from_the_log(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "ready")
    copy = managed(anvil_env)
    recorded = copy.read_bytes()
    copy.unlink()
    assert cli(anvil_env, "claim", "T001", "--actor", "agent-1")[0] == 0, "claims never needed the file"
    assert cli(anvil_env, "prd", "assess")[0] == 0
    assert copy.read_bytes() == recorded
