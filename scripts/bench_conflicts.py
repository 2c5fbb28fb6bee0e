"""Compare how parallel plans are: conflict groups before and after issue 22, drained in rounds.

Usage: ``python scripts/bench_conflicts.py [--before REV]``

For each PRD (the style corpus of ``scripts/prdstyles.py``, the sample, and the planning
benchmark's generated backlogs), the tasks are planned twice: by the planner as it was at
``--before`` (default: the commit before issue 22, loaded from git) and by this checkout's. Both
plans are drained by the same simulation (``anvil.engine.planning.planner.drain``: each round
every task whose dependencies are done starts, in offer order, unless it shares a conflict group
or a likely file with a task started that round). Reported per plan: conflict groups, task pairs
kept apart (sharing a group) and how many of those share no likely file, rounds to finish, and
the startable width (most tasks started in one round).

The reference package is not installable here; the issue quotes its figures on its own 28-task
backlog (16 rounds and width 6 with anvil's old groups, 45 of 147 kept-apart pairs sharing no
file; 11 rounds and width 8 with the reference), printed beside ``reference_backlog``, which is
written in that style.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from anvil.engine.planning.planner import drain, plan_from_document  # noqa: E402
from anvil.engine.prd.parser import parse_prd  # noqa: E402
from scripts.prdgen import generate_prd  # noqa: E402
from scripts.prdstyles import corpus  # noqa: E402

BEFORE = "0c35f05"
QUOTED = "the reference package's own 28-task backlog (issue 22): old anvil 16 rounds, width 6; reference 11, width 8"


def planner_at(rev: str) -> types.ModuleType:
    """The planner module as it was at ``rev``, loaded under a name of its own."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:anvil/engine/planning/planner.py"],
                            capture_output=True, text=True, check=True).stdout
    spec = importlib.util.spec_from_loader("planner_before", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    exec(compile(source, f"{rev}:planner.py", "exec"), module.__dict__)  # our own history, not input
    return module


def measure(tasks: list[dict[str, Any]], groups: list[dict[str, Any]]) -> dict[str, Any]:
    files = {t["id"]: set(t["likely_files"]) for t in tasks}
    apart: set[tuple[str, str]] = set()
    for group in groups:
        members = group["tasks"]
        apart.update((a, b) for x, a in enumerate(members) for b in members[x + 1:])
    drained = drain(tasks)
    return {"groups": len(groups), "apart": len(apart), "no_file": sum(1 for a, b in apart if not files[a] & files[b]),
            "rounds": drained.rounds, "width": drained.width}


def compare(old: types.ModuleType, text: str) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """The measures of ``text`` planned by ``old`` and by this checkout, and this checkout's plan."""
    doc = parse_prd(text).document
    assert doc is not None
    before_plan, after_plan = old.plan_from_document(doc), plan_from_document(doc)
    return (measure(before_plan.tasks, before_plan.conflict_groups),
            measure(after_plan.tasks, after_plan.conflict_groups), after_plan)


def prds() -> list[tuple[str, str]]:
    texts = [(name, text) for name, (text, expected) in corpus().items() if expected["tasks"]
             and name in ("reference_backlog", "converted_backlog")]
    texts.append(("sample", (ROOT / "anvil" / "engine" / "prd" / "sample.md").read_text(encoding="utf-8")))
    for n in (200, 1000):
        texts.append((f"generated {n}", generate_prd(n, max(n // 20, 1), seed=3, test_every=4, shared_file_ratio=0.1,
                                                     cross_feature_ratio=0.05, compact=True)))
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=BEFORE, help="the revision whose planner is 'before'")
    args = parser.parse_args(argv)
    old = planner_at(args.before)
    print(f"{'PRD':<20} {'tasks':>5}   {'groups':>9}   {'pairs apart':>13}   {'no file shared':>14}   "
          f"{'rounds':>9}   {'width':>9}")
    for name, text in prds():
        b, a, plan = compare(old, text)
        print(f"{name:<20} {len(plan.tasks):>5}   {b['groups']:>4}->{a['groups']:<4}   {b['apart']:>6}->{a['apart']:<6}"
              f"   {b['no_file']:>6}->{a['no_file']:<7}   {b['rounds']:>4}->{a['rounds']:<4}   "
              f"{b['width']:>4}->{a['width']:<4}")
        if name == "reference_backlog":
            print(f"{'':<20} {QUOTED}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
