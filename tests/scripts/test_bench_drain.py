"""The drain benchmark's meters and all-threads profiler: the figures are the script's, the shape is checked here."""

from __future__ import annotations

import argparse
import pstats
import threading
from pathlib import Path

import pytest

from scripts import threadprof


def _busy_work(n: int) -> int:
    return sum(i * i for i in range(n))


def test_the_profile_holds_the_work_of_threads_started_after_it(tmp_path: Path) -> None:
    threadprof.start()
    try:
        worker = threading.Thread(target=_busy_work, args=(20_000,))
        worker.start()
        worker.join()
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]
        out = tmp_path / "all.pstats"
        threadprof.dump(out)
    names = {func[2] for func in pstats.Stats(str(out)).stats}  # type: ignore[attr-defined]
    assert "_busy_work" in names  # run only in the worker thread
    assert "_busy_work" in threadprof.top(out, 50)


@pytest.mark.parametrize("agent_tokens", [False, True], ids=["shared-token", "agent-tokens"])
def test_a_small_drain_through_two_replicas_claims_every_task_once(tmp_path: Path, pg_url: str,
                                                                   agent_tokens: bool) -> None:
    from scripts.bench_drain import run

    args = argparse.Namespace(agents=3, tasks=12, replicas=2, budget=120.0, no_probe=False, wake_all=False,
                              profile=None, agent_tokens=agent_tokens, switch_interval=None)
    try:
        result = run(args, pg_url, tmp_path)
    finally:
        from anvil.engine.storage.postgres import forget_pool

        forget_pool()
    if result["meters_missing"]:
        pytest.fail(f"{result['meters_missing']} replica(s) wrote no meter file")
    assert result["errors"] == []
    assert result["claims"] == 12 and result["duplicate_claims"] == 0
    assert result["integrity"]["chain_ok"] and result["integrity"]["replay_ok"]
    assert result["productive_writes"] >= 24 and result["locks"] >= result["productive_writes"]
    assert result["hold_ms"] is not None and result["hold_ms"]["p50"] > 0
    assert result["round_trips_in_lock"] is not None and result["round_trips_in_lock"]["p50"] >= 1
    assert set(result["latency"]) >= {"claim_next_task", "submit_completion_evidence"}
