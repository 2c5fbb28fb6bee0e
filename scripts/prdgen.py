"""Generate synthetic but well-formed PRD markdown of any size (benchmarks and load tests).

The output follows the PRD format the parser reads (``# Project:``, ``## Summary``, ``## Goals``,
``## Requirements``, ``## Features`` with ``### F001: ...`` and ``## Tasks`` with ``### T001: ...``
blocks carrying ``**Feature:**``, ``**Priority:**``, ``**Type:**``, ``**Likely files:**``,
``**Dependencies:**``, ``**Acceptance criteria:**`` and ``**Verification:**``). It is
deterministic for a given set of arguments.

Shape of the generated plan:

- tasks are spread evenly over the features (``F001`` ... ``F<n>``), in feature order;
- every task has its own file (``src/<feature>/<task>.py``), so most tasks never conflict;
  with probability ``shared_file_ratio`` a task also lists one of a few files shared inside its
  feature (``src/<feature>/common_<k>.py``), which makes conflict groups and lets test tasks
  gain inferred dependencies, as in a real codebase;
- every ``test_every``-th task of a feature is a test task that lists the file of an earlier
  implementation task of the same feature (0 disables it);
- dependencies point only at earlier tasks: up to ``max_deps`` per task, mostly inside the feature
  within the last ``window`` tasks, sometimes (``cross_feature_ratio``) on a task of an earlier
  feature; so the explicit graph is always acyclic.

``python scripts/prdgen.py 200 --features 10 > prd.md`` writes one to stdout.
"""

from __future__ import annotations

import argparse
import random
import sys

PRIORITIES = ("critical", "high", "high", "medium", "medium", "medium", "low")


def task_id(index: int, width: int) -> str:
    """The id of the ``index``-th task (0-based), zero-padded to ``width`` digits."""
    return f"T{index + 1:0{width}d}"


def generate_prd(n_tasks: int = 200, n_features: int = 10, *, seed: int = 0, max_deps: int = 2,
                 dep_probability: float = 0.6, window: int = 8, cross_feature_ratio: float = 0.05,
                 shared_file_ratio: float = 0.1, shared_files_per_feature: int = 3, test_every: int = 0,
                 compact: bool = False, project: str = "Synthetic load", first_task: int = 1,
                 id_width: int | None = None, folder_prefix: str = "") -> str:
    """Return PRD markdown with ``n_tasks`` tasks across ``n_features`` features.

    Args:
        n_tasks: How many tasks (at least 1).
        n_features: How many features (at least 1, at most ``n_tasks``).
        seed: Seed of the deterministic random choices.
        max_deps: Most explicit dependencies of one task.
        dep_probability: Chance of each of the ``max_deps`` dependency draws.
        window: Same-feature dependencies point at one of the last ``window`` tasks of the feature.
        cross_feature_ratio: Chance that a dependency draw targets a task of an earlier feature.
        shared_file_ratio: Chance that a task also lists a file shared inside its feature.
        shared_files_per_feature: How many shared files each feature has.
        test_every: Every this-many-th task of a feature is a test task (0: none).
        compact: Shorter tasks (no description, one criterion) so thousands fit under 1 MB.
        project: The project name.
        first_task: The number of the first task id (several PRDs of one project need distinct ids).
        id_width: Digits of the task ids (default: enough for ``n_tasks``).
        folder_prefix: Prefix of every file path (keeps the files of several PRDs apart).

    Returns:
        The markdown text (UTF-8 safe, LF line ends, trailing newline).
    """
    if n_tasks < 1 or n_features < 1:
        raise ValueError("need at least one task and one feature")
    n_features = min(n_features, n_tasks)
    rng = random.Random(seed)
    width = id_width or max(3, len(str(first_task + n_tasks - 1)))
    offset = first_task - 1
    fwidth = max(3, len(str(n_features)))
    per_feature = [n_tasks // n_features + (1 if f < n_tasks % n_features else 0) for f in range(n_features)]

    out: list[str] = [f"# Project: {project}", ""]
    out += ["## Summary", "",
            f"A generated PRD with {n_tasks} tasks across {n_features} features, used to measure and",
            "load-test planning and the agent work loop.", ""]
    out += ["## Goals", "", "- Every task can be planned, claimed, submitted and reviewed.", ""]
    out += ["## Non-Goals", "", "- Realistic prose.", ""]
    out += ["## Requirements", ""]
    out += [f"- R{f + 1:0{fwidth}d}: Capability {f + 1} works end to end and is covered by tests."
            for f in range(n_features)]
    out += ["", "## Features", ""]
    for f in range(n_features):
        fid = f"F{f + 1:0{fwidth}d}"
        out += [f"### {fid}: Capability {f + 1}", ""]
        if not compact:
            out += [f"Everything needed for capability {f + 1}.", ""]
        out += [f"**Requirements:** R{f + 1:0{fwidth}d}", ""]
    out += ["## Tasks", ""]

    index = 0
    first_of_feature: list[int] = []
    for f in range(n_features):
        fid = f"F{f + 1:0{fwidth}d}"
        folder = f"{folder_prefix}src/{fid.lower()}"
        start = index
        first_of_feature.append(start)
        impl_files: list[str] = []  # files of this feature's implementation tasks so far
        for k in range(per_feature[f]):
            tid = task_id(offset + index, width)
            is_test = test_every > 0 and k > 0 and (k + 1) % test_every == 0 and bool(impl_files)
            own = (f"{folder_prefix}tests/{fid.lower()}/test_{tid.lower()}.py" if is_test
                   else f"{folder}/{tid.lower()}.py")
            files = [own]
            if is_test:
                files.append(impl_files[-1 - rng.randrange(min(len(impl_files), 3))])
            elif rng.random() < shared_file_ratio:
                files.append(f"{folder}/common_{rng.randrange(shared_files_per_feature)}.py")
            if not is_test:
                impl_files.append(own)
            deps: list[str] = []
            for _ in range(max_deps):
                if rng.random() >= dep_probability:
                    continue
                if f > 0 and rng.random() < cross_feature_ratio:
                    target = rng.randrange(0, start)
                elif k > 0:
                    target = rng.randrange(max(start, index - window), index)
                else:
                    continue
                dep = task_id(offset + target, width)
                if dep not in deps:
                    deps.append(dep)
            priority = PRIORITIES[rng.randrange(len(PRIORITIES))]
            if compact:  # the fewest bytes the format allows, so 4,000 tasks stay under 1 MB
                out += [f"### {tid}: Part {k + 1} of {fid}", f"**Feature:** {fid}", f"**Priority:** {priority}"]
                if is_test:
                    out.append("**Type:** test")
                out.append(f"**Likely files:** {', '.join(files)}")
                if deps:
                    out.append(f"**Dependencies:** {', '.join(deps)}")
                out += ["**Acceptance criteria:**", "- Checks pass.", "**Verification:**",
                        f"- `pytest {folder}`", ""]
            else:
                out += [f"### {tid}: {'Test' if is_test else 'Build'} part {k + 1} of capability {f + 1}", "",
                        f"Implement step {k + 1} of {fid} in `{own}` and keep the module covered.", "",
                        f"**Feature:** {fid}", f"**Priority:** {priority}",
                        f"**Type:** {'test' if is_test else 'feature'}",
                        f"**Likely files:** {', '.join(files)}",
                        f"**Dependencies:** {', '.join(deps) if deps else 'none'}",
                        "**Acceptance criteria:**",
                        f"- `{own}` exposes the behaviour described for step {k + 1}.",
                        "- Invalid input is rejected with a typed error and no partial write.",
                        "**Verification:**", f"- `pytest -q {own if is_test else 'tests/' + fid.lower()}`", ""]
            index += 1
    return "\n".join(out).rstrip("\n") + "\n"


def chained_prd(n_tasks: int) -> str:
    """A long, regular PRD: 20 requirements and features, ``n_tasks`` tasks (``T0001`` ...) with a
    paragraph of description each, each depending on the task before it and on the one seven back
    (4,000 tasks are about 2.3 MB). The parser's size benchmark and its test read it."""
    parts = ["# Project: Big", "## Summary", "Developers use it.", "## Requirements"]
    parts += [f"- R{i:03d}: requirement {i}" for i in range(1, 21)]
    parts.append("## Features")
    for f in range(1, 21):
        parts += [f"### F{f:03d}: Feature {f}", "Description.", f"**Requirements:** R{f:03d}", ""]
    parts.append("## Tasks")
    for t in range(1, n_tasks + 1):
        deps = ", ".join(f"T{d:04d}" for d in (t - 1, t - 7) if d >= 1) or "none"
        parts += [f"### T{t:04d}: Task number {t} does something useful", "",
                  "A paragraph of description that explains the task in enough words to be realistic. " * 3,
                  f"**Feature:** F{t % 20 + 1:03d}", "**Priority:** high", "**Type:** feature",
                  f"**Likely files:** src/mod{t % 50}.py, tests/test_mod{t % 50}.py", f"**Dependencies:** {deps}",
                  "**Acceptance criteria:**", "- returns 200 within 50 ms", "- errors carry a stable code",
                  "**Verification:**", f"- `pytest -q tests/test_mod{t % 50}.py`", ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", type=int, nargs="?", default=200)
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test-every", type=int, default=0)
    parser.add_argument("--compact", action="store_true")
    args = parser.parse_args(argv)
    sys.stdout.write(generate_prd(args.tasks, args.features, seed=args.seed, test_every=args.test_every,
                                  compact=args.compact))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
