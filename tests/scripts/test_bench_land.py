"""The landing benchmark's workload: the figures are the script's, the shape is checked here."""

from __future__ import annotations

from pathlib import Path

from scripts.bench_land import git, land, setup


def test_the_benchmark_queue_lands_every_task_and_the_remote_holds_each_approved_commit(tmp_path: Path) -> None:
    env, clone = setup(tmp_path, 3)
    _, one = land(env, clone, "T001")
    _, rest = land(env, clone, "--all")
    assert [i["task_ids"] for i in one["landed"]] == [["T001"]]
    assert sorted(t for i in rest["landed"] for t in i["task_ids"]) == ["T002", "T003"] and rest["bounced"] == []
    head = git(tmp_path / "remote.git", "rev-parse", "main").strip()
    for n in range(1, 4):
        assert git(tmp_path / "remote.git", "show", f"{head}:piece_{n}.txt") == f"piece {n}\n"
