"""cProfile every thread of a process (``cProfile`` alone sees only the thread that enabled it).

:func:`start` profiles the calling thread and every thread started after it (through
``threading.setprofile``: a new thread's first profile event swaps in a profiler of its own);
:func:`dump` merges them into one ``pstats`` file. Used by ``scripts/bench_drain.py --profile``
to see where a replica's and the clients' time goes (py-spy is not installed here).
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import threading
from pathlib import Path
from typing import Any

_PROFILES: list[cProfile.Profile] = []
_GUARD = threading.Lock()


def _own_profiler(frame: Any, event: str, arg: Any) -> None:
    """The first profile event of a new thread: give the thread its own profiler (it replaces this hook)."""
    profiler = cProfile.Profile()
    with _GUARD:
        _PROFILES.append(profiler)
    profiler.enable()


def start() -> None:
    """Profile this thread and every thread started from now on."""
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
