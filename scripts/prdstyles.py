"""Write the PRD style corpus: PRDs in the styles real authors use, each with the tasks it must give.

Usage: ``python scripts/prdstyles.py`` writes ``tests/engine/prd/styles/<name>.md`` and its
expectation ``<name>.json`` (the tasks, from the model the text is rendered from, and the located
diagnostics the text is written to provoke). ``tests/engine/prd/test_parser_styles.py`` checks
that the files are current and that each parses to its expectation; ``scripts/bench_conflicts.py``
plans them. The styles:

- ``reference_backlog``: a 28-task backlog in the reference package's style (code spans in titles,
  files and criteria, notes after verification commands, nested criteria, a task switched off in
  an HTML comment, a fenced verification block, hot files shared by several tasks);
- ``converted_backlog``: a 93-task backlog converted from Task Master (implementation details in
  fenced code holding headings and bold lines, test strategies in prose, tab-indented lists);
- ``windows_export``: the reference backlog saved with a byte order mark and CRLF line ends;
- ``deep_headings``: tasks written as ``#### T001:`` under ``## Tasks``;
- ``spec_kit_tasks`` and ``task_master_prd``: other tools' formats (one message each).
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "engine" / "prd" / "styles"


@dataclass
class Task:
    """One task of a model backlog: what its text says and what the parser must read from it."""

    id: str
    title: str
    feature: str
    files: list[str]
    deps: list[str] = field(default_factory=list)
    priority: str = "medium"
    type: str = "feature"
    criteria: list[str | list[str]] = field(default_factory=list)  # a list: nested bullets under the previous
    verify: list[tuple[str, str]] = field(default_factory=list)  # (command, note)
    fenced_verify: bool = False
    prose_verify: str = ""  # a bullet holding a sentence, not a command
    dep_note: str = ""
    description: str = ""
    disabled: bool = False  # written inside an HTML comment

    def expected(self) -> dict[str, Any]:
        criteria: list[str] = []
        for c in self.criteria:
            criteria.extend(c if isinstance(c, list) else [c])
        verification = [cmd for cmd, _ in self.verify] + ([self.prose_verify] if self.prose_verify else [])
        return {"id": self.id, "title": self.title, "feature_id": self.feature, "priority": self.priority,
                "type": self.type, "likely_files": self.files, "dependencies": self.deps,
                "acceptance_criteria": criteria, "verification": verification,
                "verification_notes": [{"command": c, "note": n} for c, n in self.verify
                                       if n and not self.fenced_verify]}


FEATURES = [("F001", "Storage", ["R001"]), ("F002", "Command line", ["R002"]), ("F003", "Server", ["R003"]),
            ("F004", "Docs", ["R004"])]
HEADER = """# Project: Ledger

## Summary

Ledger keeps a small team's task log for maintainers and reviewers: a command line that records
work, a local server that shows it, and a store that never loses an entry.

## Goals

- A maintainer records an entry with one command.
- A reviewer sees every entry of the day in one page.

## Non-Goals

- No accounts; the server listens on `127.0.0.1` only.

## Requirements

- R001: Entries survive a crash at any point of a write.
- R002: `ledger add TEXT` records an entry and prints its id.
- R003: `GET /entries` lists the entries of a day as JSON.
- R004: Every command and endpoint is documented.

## Acceptance Criteria

- `ledger add` answers in under 100 ms on a laptop.

## Assumptions

- One machine, one writer at a time.

## Risks

- A slow disk makes atomic writes slow: measure with `scripts/bench.py`.

## Features

"""


def reference_tasks() -> list[Task]:
    """The 28-task backlog (and one switched-off task) the reference-style files render."""
    t: list[Task] = []

    def add(title: str, feature: str, files: list[str], deps: list[str] | None = None, **kw: Any) -> None:
        tid = f"T{len(t) + 1:03d}"
        crit: list[str | list[str]] = kw.pop("criteria", [f"`{files[0]}` does what the title says, with a test."])
        verify = kw.pop("verify", [(f"python -m pytest -q tests/test_{Path(files[0]).stem}.py", "")])
        t.append(Task(tid, title, feature, files, deps or [], criteria=crit, verify=verify, **kw))

    add("Entry model with `id`, `text` and `at`", "F001", ["ledger/model.py", "tests/test_model.py", "CHANGELOG.md"],
        priority="high", description="A frozen dataclass; ids are ULIDs so they sort by time.")
    add("Atomic `Store.save()`", "F001", ["ledger/store.py", "ledger/index.py", "ledger/output.py"], ["T001"],
        priority="high",
        criteria=["A crash between write and rename leaves the old file whole.",
                  "Concurrent writers:", ["the last writer wins;", "no reader sees a partial file."]],
        verify=[("python -m pytest -q tests/test_store.py", "(the unit suite)"),
                ("python -m pytest -q tests/test_store_crash.py", "needs a real disk")])
    add("`Store.load()` tolerates a torn tail", "F001", ["ledger/store.py", "ledger/config.py"], ["T001"])
    add("Store file lock", "F001", ["ledger/store.py", "ledger/lock.py", "ledger/cli.py", "docs/design.md"], ["T001"],
        description="`fcntl.flock` on POSIX; a held lock makes the second writer wait, never fail.")
    add("Day index", "F001", ["ledger/index.py", "tests/test_index.py", "docs/design.md"], ["T001"])
    add("Store migration of old files", "F001", ["ledger/migrate.py", "ledger/index.py"], ["T002", "T003"],
        dep_note="(needs the new save path)")
    add("`ledger add TEXT`", "F002", ["ledger/cli.py", "tests/test_cli.py"], ["T002"], priority="high")
    add("`ledger list --day DATE`", "F002", ["ledger/cli.py", "CHANGELOG.md"], ["T005"])
    add("`ledger edit ID`", "F002", ["ledger/cli.py", "tests/conftest.py"], ["T002"])
    add("`ledger rm ID`", "F002", ["ledger/cli_rm.py", "tests/test_cli_rm.py"], ["T002"],
        verify=[("python -m pytest -q tests/test_cli_rm.py", ""), ("ledger rm --help", "prints the usage")],
        fenced_verify=True)
    add("Shell completion", "F002", ["ledger/completion.py", "tests/test_completion.py", "ledger/cli.py"], ["T007"],
        priority="low")
    add("`--json` on every command", "F002", ["ledger/output.py", "ledger/index.py", "ledger/cli.py"], ["T007"])
    add("Config file `~/.ledger.toml`", "F002", ["ledger/config.py", "tests/test_config.py", "CHANGELOG.md"])
    add("Colour only on a terminal", "F002", ["ledger/output.py", "tests/test_output.py", "ledger/config.py"], ["T013"],
        priority="low")
    add("HTTP server on `127.0.0.1`", "F003", ["ledger/server.py", "tests/test_server.py", "ledger/config.py"],
        ["T002"],
        priority="high")
    add("`GET /entries?day=`", "F003", ["ledger/routes.py", "tests/test_routes.py", "ledger/output.py"],
        ["T015", "T005"])
    add("`POST /entries`", "F003", ["ledger/routes.py", "CHANGELOG.md", "ledger/cli.py"], ["T015"])
    add("Server-sent updates", "F003", ["ledger/events.py", "tests/test_events.py", "CHANGELOG.md"], ["T015"])
    add("Day page (HTML)", "F003", ["ledger/page.py", "ledger/static/day.html", "docs/reference.md"], ["T016"],
        prose_verify="Open the day page in a browser and check every entry shows.")
    add("Access log", "F003", ["ledger/accesslog.py", "tests/test_accesslog.py"], ["T015"], priority="low")
    add("Graceful shutdown", "F003", ["ledger/server.py", "tests/test_shutdown.py"], ["T015"])
    add("README quick start", "F004", ["README.md", "docs/quickstart.md", "ledger/server.py"], type="docs")
    add("Command reference", "F004", ["docs/reference.md"], ["T007"], type="docs")
    add("HTTP API reference", "F004", ["docs/reference.md", "docs/api.md"], ["T016", "T017"], type="docs")
    add("Man page", "F004", ["docs/ledger.1"], ["T023"], type="docs", priority="low")
    add("Store design note", "F004", ["docs/design.md", "docs/store.md"], ["T002"], type="docs")
    add("Changelog", "F004", ["CHANGELOG.md", "docs/design.md", "ledger/server.py"], ["T022"], type="docs",
        priority="low")
    add("End-to-end test of add, list and the day page", "F004",
        ["tests/test_e2e.py", "ledger/cli.py", "ledger/output.py"],
        ["T007", "T016"], type="test")
    add("Sharded store (later)", "F001", ["ledger/shards.py", "ledger/store.py"], ["T002"], disabled=True)
    return t


def render_task(task: Task, level: int = 3) -> list[str]:
    out = [f"{'#' * level} {task.id}: {task.title}", ""]
    if task.description:
        out += [task.description, ""]
    deps = ", ".join(task.deps) or "none"
    out += [f"**Feature:** {task.feature}", f"**Priority:** {task.priority}", f"**Type:** {task.type}",
            f"**Likely files:** {', '.join(f'`{f}`' for f in task.files)}",
            f"**Dependencies:** {deps}{' ' + task.dep_note if task.dep_note else ''}", "**Acceptance criteria:**"]
    for c in task.criteria:
        out += [f"  - {sub}" for sub in c] if isinstance(c, list) else [f"- {c}"]
    out.append("**Verification:**")
    if task.fenced_verify:
        out += ["```bash", *(f"$ {cmd}" if k == 0 else cmd for k, (cmd, _) in enumerate(task.verify)),
                "# (comment lines are skipped)", "```"]
    else:
        for cmd, note in task.verify:
            out.append(f"- `{cmd}`" + (f" {note}" if note.startswith("(") else f" \u2014 {note}" if note else ""))
    if task.prose_verify:
        out.append(f"- {task.prose_verify}")
    return out + [""]


def features_text() -> list[str]:
    out: list[str] = []
    for fid, title, reqs in FEATURES:
        out += [f"### {fid}: {title}", "", f"Everything about {title.lower()}.", "",
                f"**Requirements:** {', '.join(reqs)}", ""]
    return out


def reference_backlog(level: int = 3) -> tuple[str, list[Task], list[tuple[str, str, str]]]:
    """The text, its model tasks, and the diagnostics it provokes as (severity, code, the line's start)."""
    tasks = reference_tasks()
    lines = HEADER.split("\n") + features_text() + ["## Tasks", ""]
    for task in tasks:
        body = render_task(task, level)
        lines += ["<!-- switched off until the store is sharded:", *body, "-->", ""] if task.disabled else body
    expected = [("warning", "note_in_reference", "**Dependencies:** T002, T003 (needs"),
                ("warning", "unprovable_verification", "- Open the day page"),
                ("warning", "commented_out_task", f"{'#' * level} T029:")]
    if level != 3:
        expected += [("warning", "wrong_heading_level", f"{'#' * level} {t.id}:") for t in tasks if not t.disabled]
    return "\n".join(lines), [t for t in tasks if not t.disabled], expected


def converted_backlog(n: int = 93) -> tuple[str, list[Task], list[tuple[str, str, str]]]:
    """A long backlog converted from Task Master: details in fences, strategies in prose, tab lists."""
    rng = random.Random(22)
    tasks: list[Task] = []
    lines = HEADER.split("\n") + features_text() + ["## Tasks", ""]
    for k in range(1, n + 1):
        tid = f"T{k:03d}"
        feature = FEATURES[k % len(FEATURES)][0]
        deps = sorted({f"T{rng.randrange(1, k):03d}" for _ in range(rng.randint(0, 2))}) if k > 1 else []
        module = f"ledger/part{k % 17:02d}.py"
        files = [module, f"tests/test_part{k:03d}.py"] + (["ledger/shared.py"] if k % 9 == 0 else [])
        task = Task(tid, f"Converted task {k}: step `{k}` of the plan", feature, files, deps,
                    priority=("low", "medium", "high")[k % 3],
                    criteria=[f"Step {k} is observable through `ledger status`.",
                              [f"the status shows step {k};", "nothing else changes."]],
                    verify=[(f"python -m pytest -q tests/test_part{k:03d}.py", "(converted test strategy)")])
        tasks.append(task)
        lines += [f"### {tid}: {task.title}", "",
                  f"Implementation details from Task Master (task {k}):", "",
                  "```python", "# ### T999: a heading inside code is not a task", "**Priority:** not a field",
                  f"def step_{k}() -> None: ...", "```", "",
                  "Test strategy: run the part's tests, then the status command.", "",
                  f"**Feature:** {feature}", f"**Priority:** {task.priority}", "**Type:** feature",
                  f"**Likely files:** {', '.join(files)}", f"**Dependencies:** {', '.join(deps) or 'none'}",
                  "**Acceptance criteria:**", f"-\t{task.criteria[0]}",
                  *(f"\t-\t{sub}" for sub in task.criteria[1]), "**Verification:**",
                  f"- `{task.verify[0][0]}` {task.verify[0][1]}", ""]
    return "\n".join(lines), tasks, []


SPEC_KIT = """# Tasks: Ledger

**Input**: Design documents from `/specs/001-ledger/`
**Prerequisites**: plan.md (required), spec.md

## Format: `[ID] [P?] [Story] Description`

## Phase 1: Setup (Shared Infrastructure)

- [ ] T001 Create project structure per implementation plan
- [ ] T002 [P] Initialize a Python project with its test dependencies
- [ ] T003 [P] [US1] Entry model in ledger/model.py
"""
TASK_MASTER = """<context>
# Overview
Ledger keeps a team's task log.

# Core Features
Record entries; list them by day.

# User Experience
Maintainers and reviewers.
</context>
<PRD>
# Technical Architecture
A command line, a store and a local server.

# Development Roadmap
Store first, then the command line.

# Logical Dependency Chain
Store, command line, server, docs.

# Risks and Mitigations
Slow disks.
</PRD>
"""


def corpus() -> dict[str, tuple[str, dict[str, Any]]]:
    """Every style file: name -> (text, expectation)."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, (text, tasks, diags) in (("reference_backlog", reference_backlog()),
                                       ("converted_backlog", converted_backlog()),
                                       ("deep_headings", reference_backlog(level=4))):
        out[name] = (text + "\n", {"tasks": [t.expected() for t in tasks], "diagnostics": _locate(text, diags)})
    text, tasks, diags = reference_backlog()
    windows = "\ufeff" + (text + "\n").replace("\n", "\r\n")
    out["windows_export"] = (windows, {"tasks": [t.expected() for t in tasks], "diagnostics": _locate(text, diags)})
    for name, text, what in (("spec_kit_tasks", SPEC_KIT, "spec-kit tasks.md"),
                             ("task_master_prd", TASK_MASTER, "Task Master PRD")):
        out[name] = (text, {"tasks": [], "diagnostics": [["error", "foreign_format", 1 if name != "spec_kit_tasks"
                                                           else SPEC_KIT.split("\n").index(
                                                               "- [ ] T001 Create project structure per "
                                                               "implementation plan") + 1]],
                            "foreign": what})
    return out


def _locate(text: str, diags: list[tuple[str, str, str]]) -> list[list[Any]]:
    """Each diagnostic at the 1-based line of the first line starting with its text, sorted by line."""
    lines = text.split("\n")
    located = [[sev, code, next(i + 1 for i, line in enumerate(lines) if line.startswith(start))]
               for sev, code, start in diags]
    return sorted(located, key=lambda d: (d[2], d[1]))


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (text, expected) in corpus().items():
        (OUT / f"{name}.md").write_bytes(text.encode("utf-8"))
        (OUT / f"{name}.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {OUT / name}.md ({len(expected['tasks'])} tasks)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
