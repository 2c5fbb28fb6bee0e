"""The conflict-group benchmark's workloads: the figures are the script's, the shape is checked here."""

from __future__ import annotations

import subprocess

import pytest

from scripts.bench_conflicts import BEFORE, compare, planner_at, prds


def test_on_every_benchmark_prd_no_pair_is_kept_apart_without_a_shared_file_and_no_plan_drains_slower() -> None:
    try:
        old = planner_at(BEFORE)
    except subprocess.CalledProcessError:
        pytest.skip(f"this checkout has no commit {BEFORE} (the planner before issue 22)")
    by_name = {}
    for name, text in prds():
        before, after, after_plan = compare(old, text)
        assert after["no_file"] == 0 and after["apart"] <= before["apart"]
        assert after["rounds"] <= before["rounds"] and after["width"] >= before["width"]
        assert (after_plan.startable_width, after_plan.drain_rounds) == (after["width"], after["rounds"])
        by_name[name] = (before, after)
    before, after = by_name["reference_backlog"]
    assert before["no_file"] > 0 and after["rounds"] < before["rounds"] and after["width"] > before["width"]
