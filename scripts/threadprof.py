"""cProfile every thread of a process (``cProfile`` alone sees only the thread that enabled it).

:func:`start` profiles the calling thread and every thread started after it (through
``threading.setprofile``: a new thread's first profile event swaps in a profiler of its own);
:func:`dump` merges them into one ``pstats`` file. Used by ``scripts/bench_drain.py --profile``
to see where a replica's and the clients' time goes (py-spy is not installed here).

By default the profilers count wall-clock time, so a thread's waits (for the lock, the database, the
GIL) dominate; with ``THREADPROF_CLOCK=cpu`` in the environment (or ``start(clock="cpu")``) they count
each thread's own CPU time (``time.thread_time``), which shows where the CPU of a call goes. The
variable has no ``ANVIL_`` prefix so that ``scripts/bench_loop.fresh_env`` passes it to the replicas.
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CLOCK_ENV = "THREADPROF_CLOCK"
"""``cpu``: profile on each thread's CPU clock; anything else (or unset): wall clock."""
_PROFILES: list[cProfile.Profile] = []
_GUARD = threading.Lock()
_CPU_CLOCK: list[bool] = [False]


def _cpu_clock(clock: str | None) -> bool:
    """Whether ``clock`` (``cpu`` or ``wall``; None: the environment's choice) is the CPU clock.

    Raises:
        ValueError: an unknown clock.
    """
    chosen = (clock if clock is not None else os.environ.get(CLOCK_ENV, "wall")).strip().lower()
    if chosen not in ("cpu", "wall", ""):
        raise ValueError(f"unknown profile clock {chosen!r}: use cpu or wall")
    return chosen == "cpu"


def _thread_cpu_timer() -> Callable[[], float]:
    """A timer reading the CPU clock of the calling thread, whichever thread later calls it.

    Not ``time.thread_time``: :func:`dump` closes the frames still open in other threads from the
    dumping thread, and with ``thread_time`` those would be charged the dumping thread's clock.
    """
    clock_id = time.pthread_getcpuclockid(threading.get_ident())
    return lambda: time.clock_gettime(clock_id)


def _own_profiler(frame: Any, event: str, arg: Any) -> None:
    """The first profile event of a new thread: give the thread its own profiler (it replaces this hook)."""
    profiler = cProfile.Profile(_thread_cpu_timer()) if _CPU_CLOCK[0] else cProfile.Profile()
    with _GUARD:
        _PROFILES.append(profiler)
    profiler.enable()


def start(clock: str | None = None) -> None:
    """Profile this thread and every thread started from now on.

    Args:
        clock: ``cpu`` (each thread's CPU time) or ``wall``; None reads :data:`CLOCK_ENV`.

    Raises:
        ValueError: an unknown clock.
    """
    _CPU_CLOCK[0] = _cpu_clock(clock)
    threading.setprofile(_own_profiler)
    _own_profiler(None, "call", None)


def dump(path: Path) -> None:
    """Write the merged profile of every profiled thread to ``path`` (a ``pstats`` file)."""
    with _GUARD:
        profiles = list(_PROFILES)
    for profiler in profiles:
        profiler.disable()  # only stops the calling thread's; the others' results are read as they are
    stats: pstats.Stats | None = None
    for profiler in profiles:
        try:
            profiler.create_stats()
        except Exception:  # noqa: BLE001 - a profiler that is mid-update in its thread: skip it
            continue
        if stats is None:
            stats = pstats.Stats(profiler)
        else:
            stats.add(profiler)
    if stats is not None:
        stats.dump_stats(str(path))


def top(path: Path, limit: int = 30, sort: str = "cumulative") -> str:
    """The ``limit`` heaviest functions of the profile at ``path``, as text."""
    buffer = io.StringIO()
    stats = pstats.Stats(str(path), stream=buffer)
    stats.sort_stats(sort).print_stats(limit)
    return buffer.getvalue()


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(top(Path(name), 40, "tottime"))
        print(top(Path(name), 60, "cumulative"))
