"""Time the pure planning engine on synthetic PRDs of growing size.

Usage: ``python scripts/bench_planning_engine.py [sizes...]`` (default 500 1000 2000 4000).

Each task has about two dependencies (nine in ten inside its feature), two to four likely files
from its feature's pool and, one time in ten, a file shared across features; every fourth task
is a test task. Two shapes are timed: a fixed 100 features (so features grow with the PRD),
and a fixed 40 tasks per feature (so only the number of features grows).
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from anvil.engine.planning.dependencies import apply_dependency_edits  # noqa: E402
from anvil.engine.planning.planner import BUCKET_LIMIT, plan_from_document  # noqa: E402
from anvil.engine.planning.scoring import graph_stats, score_task  # noqa: E402
from anvil.engine.prd.model import Feature, PrdDocument, TaskSpec  # noqa: E402

REPEATS = 5


def synthetic_document(n_tasks: int, n_features: int = 100, seed: int = 7) -> PrdDocument:
    """A deterministic PRD with ``n_tasks`` tasks spread evenly over ``n_features`` features."""
    rng = random.Random(seed)
    features = tuple(Feature(f"F{f + 1:03d}", f"Feature {f + 1}", "", (), 0) for f in range(n_features))
    per_feature = max(1, n_tasks // n_features)
    tasks: list[TaskSpec] = []
    for k in range(n_tasks):
        f = min(k // per_feature, n_features - 1)
        first = f * per_feature
        pool = [f"src/f{f}/m{j}.py" for j in range(max(2, per_feature // 2))]
        files = rng.sample(pool, min(len(pool), rng.randint(2, 4)))
        if rng.random() < 0.1:
            files.append(f"src/shared/s{rng.randrange(max(20, n_tasks // 200))}.py")
        deps: list[str] = []
        for _ in range(2):
            lo = first if k > first and rng.random() < 0.9 else 0
            if k > lo:
                target = f"T{rng.randrange(lo, k) + 1:05d}"
                if target not in deps:
                    deps.append(target)
        kind = "test" if k % 4 == 3 else "docs" if k % 10 == 9 else "feature"
        tasks.append(TaskSpec(
            id=f"T{k + 1:05d}", title=f"Task {k + 1}", feature_id=f"F{f + 1:03d}", priority="medium",
            type=kind, likely_files=tuple(files), dependencies=tuple(deps),
            acceptance_criteria=("it works", "it is tested"), verification=("pytest -q",),
            description="Do the thing described here in a few words.", line=k + 1,
        ))
    return PrdDocument(project_name="bench", summary="", features=features, tasks=tuple(tasks))


def _best(action: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def _pairs_per_task(tasks: list[dict[str, Any]]) -> float:
    """Pairs of tasks sharing a file that the planner examines, per task: the real workload."""
    holders: dict[str, int] = {}
    for task in tasks:
        for name in task["likely_files"]:
            holders[name] = holders.get(name, 0) + 1
    pairs = sum(k * (k - 1) // 2 for k in holders.values() if k <= BUCKET_LIMIT)
    return pairs / max(1, len(tasks))


def _score_all(tasks: list[dict[str, Any]]) -> list[dict[str, int]]:
    stats = graph_stats(tasks)
    return [score_task(t, stats[t["id"]]) for t in tasks]


def bench(sizes: list[int]) -> None:
    """Print plan, scoring and dependency-edit timings (best of :data:`REPEATS`) for each size."""
    for title, per_feature in (("fixed 100 features", 0), ("fixed 40 tasks per feature", 40)):
        print(f"\n{title}")
        print(f"{'tasks':>6} {'plan ms':>8} {'us/task':>8} {'pairs/task':>10} {'score ms':>9} {'edit ms':>8} "
              f"{'inferred':>9} {'groups':>7}")
        for n in sizes:
            doc = synthetic_document(n, max(1, n // per_feature) if per_feature else 100)
            plan = plan_from_document(doc)
            plan_ms = _best(partial(plan_from_document, doc))
            score_ms = _best(partial(_score_all, plan.tasks))
            current = {t["id"]: t["dependencies"] for t in plan.tasks}
            edge = [[plan.tasks[-1]["id"], plan.tasks[0]["id"]]]
            edit_ms = _best(partial(apply_dependency_edits, current, edge, None))
            inferred = sum(len(t["inferred_dependencies"]) for t in plan.tasks)
            print(f"{n:>6} {plan_ms:>8.1f} {plan_ms * 1e3 / n:>8.1f} {_pairs_per_task(plan.tasks):>10.1f} "
                  f"{score_ms:>9.1f} {edit_ms:>8.1f} "
                  f"{inferred:>9} {len(plan.conflict_groups):>7}")


if __name__ == "__main__":
    bench([int(a) for a in sys.argv[1:]] or [500, 1000, 2000, 4000])
