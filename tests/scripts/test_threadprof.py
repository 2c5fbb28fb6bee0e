"""scripts/threadprof.py on the CPU clock: a thread's waits cost nothing, its work what it took."""

from __future__ import annotations

import pstats
import threading
from pathlib import Path

import pytest

from scripts import threadprof


def _blocked_until(event: threading.Event) -> None:
    event.wait()


def _spin_for_cpu(n: int) -> int:
    return sum(i * i for i in range(n))


def test_on_the_cpu_clock_a_thread_still_waiting_at_the_dump_is_charged_nothing(tmp_path: Path) -> None:
    release = threading.Event()
    threadprof.start(clock="cpu")
    try:
        waiter = threading.Thread(target=_blocked_until, args=(release,))
        waiter.start()
        _spin_for_cpu(400_000)  # the dumping thread's own CPU: none of it is the waiter's
        out = tmp_path / "cpu.pstats"
        threadprof.dump(out)
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]
        release.set()
        waiter.join()
    stats = pstats.Stats(str(out)).stats  # type: ignore[attr-defined]
    cumulative = {func[2]: row[3] for func, row in stats.items()}
    assert cumulative["_spin_for_cpu"] > 0.005
    assert cumulative["_blocked_until"] < cumulative["_spin_for_cpu"] / 5


def test_an_unknown_clock_is_refused() -> None:
    with pytest.raises(ValueError, match="cpu or wall"):
        threadprof.start(clock="sundial")
