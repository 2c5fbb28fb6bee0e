"""``anvil board`` on a terminal: a column per status, live claims with their countdown, the review
queue, the tasks waiting on dependencies and the latest events; ``--watch`` redraws it on every change.

The board is drawn from one ``get_board`` result, so it looks the same
whichever route produced it; countdowns count from the result's own ``now`` (the state's clock).
The watch loop asks ``get_board`` to wait for the next change (``after_seq`` + ``wait_seconds``):
the write that changes the state wakes it (no polling); between changes it redraws only to keep
the countdowns current (every 15 s, every second in a lease's last two minutes), in place, with
Rich's live display. Piped, or with ``--json``, the board is printed once.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from anvil.cli.render import STATUS_STYLE, View, parse_time, span, task_state
from anvil.cli.tables import Column, clean, console, renderable, screen_for, styled, table
from anvil.cli.trustview import TRUST_STYLE

COLUMN_ORDER = ("drafted", "reviewed", "ready", "waiting", "claimed", "in_progress", "blocked", "needs_review",
                "done")
TITLES = {"needs_review": "review", "in_progress": "in progress"}
MIN_COLUMN = 18
RECENT = 6


def _seconds_left(claim: Mapping[str, Any], now: datetime | None) -> float | None:
    end = parse_time(str(claim.get("lease_expires_at", "")))
    return None if end is None or now is None else (end - now).total_seconds()


def columns(result: Mapping[str, Any]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """The non-empty status columns, in the order work moves through them."""
    by_state: dict[str, list[Mapping[str, Any]]] = {}
    for task in result["tasks"]:
        by_state.setdefault(task_state(task), []).append(task)
    order = [s for s in COLUMN_ORDER if s in by_state] + sorted(s for s in by_state if s not in COLUMN_ORDER)
    return [(state, by_state[state]) for state in order]


def column_count(result: Mapping[str, Any], state: str, shown: int) -> int:
    """How many tasks a column holds in all (the board shows only a page of each)."""
    for column in result.get("columns") or ():
        if column.get("state") == state:
            return int(column.get("count", shown))
    return shown


def _side_by_side(cols: list[tuple[str, list[Mapping[str, Any]]]], width: int, result: Mapping[str, Any]
                  ) -> list[Any]:
    from rich.table import Table

    grid = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 2, 0, 0))
    size = min((width - 2 * (len(cols) - 1)) // len(cols), 36)
    for state, tasks in cols:
        heading = f"{TITLES.get(state, state).upper()} ({column_count(result, state, len(tasks))})"
        grid.add_column(styled(heading, "bold", STATUS_STYLE.get(state, "")), width=size, no_wrap=True)
    for row in range(max(len(tasks) for _, tasks in cols)):
        grid.add_row(*(clean(f"{ts[row]['id']} {ts[row]['title']}") if row < len(ts) else "" for _, ts in cols))
    return [grid]


def _stacked(cols: list[tuple[str, list[Mapping[str, Any]]]], view: View, result: Mapping[str, Any]) -> list[Any]:
    rows = [{"state": TITLES.get(s, s), "count": str(column_count(result, s, len(ts))),
             "tasks": ", ".join(t["id"] for t in ts) + (" …" if column_count(result, s, len(ts)) > len(ts) else "")}
            for s, ts in cols]
    return table(rows, (Column("status", "state"), Column("tasks", "count"), Column("ids", "tasks", text=True)),
                 view.screen)


def render_board(result: dict[str, Any], view: View) -> list[Any]:
    """The whole board fitted to the screen."""
    screen = view.screen
    now = parse_time(str(result.get("now", "")))
    clock = now.strftime("%H:%M:%S UTC") if now else "-"
    total = sum(result.get("counts", {}).values()) if result.get("counts") else len(result["tasks"])
    out = [styled(clean(f"{result['project']} · {total} tasks · event {result['head']} · "
                              f"{clock}"), "bold"), ""]
    cols = columns(result)
    width = screen.width or 160
    if not cols:
        out.append("no tasks yet: anvil prd parse, anvil plan, anvil review tasks")
    elif width >= len(cols) * (MIN_COLUMN + 2):
        out += _side_by_side(cols, width, result)
    else:
        out += _stacked(cols, view, result)
    claims = result["claims"]
    if claims:
        rows = []
        for claim in claims:
            left = _seconds_left(claim, now)
            lease = "expired" if claim.get("expired") or (left is not None and left <= 0) else \
                f"ends in {span(left)}" if left is not None else "-"
            rows.append({"task": claim["task_id"], "holder": claim["actor"], "gen": str(claim["generation"]),
                         "lease": lease})
        out += ["", *table(rows, (Column("task", "task"), Column("holder", "holder"), Column("gen", "gen", drop=1),
                            Column("lease", "lease", style={"expired": "red"})), screen, f"Claims ({len(claims)})")]
    queue = result["review_queue"]
    if queue:
        rows = [{"task": q["task_id"], "by": q.get("submitted_by") or "-", "since": _since(q.get("submitted_at"), now),
                 "trust": q.get("trust_level") or "-", "title": q["title"]} for q in queue]
        out += ["", *table(rows, (Column("task", "task"), Column("submitted by", "by"),
                                  Column("waiting", "since", drop=1), Column("trust", "trust", style=TRUST_STYLE),
                                  Column("title", "title", text=True)), screen,
                     f"Review queue ({result.get('review_count', len(queue))})")]
    landing = result.get("landing_queue") or []
    if landing:
        rows = [{"task": q["task_id"], "state": q["state"], "commit": str(q.get("landed_commit") or
                                                                          q.get("approved_commit") or "-")[:12],
                 "detail": q.get("detail") or q.get("title") or "-"} for q in landing]
        out += ["", *table(rows, (Column("task", "task"), Column("state", "state"), Column("commit", "commit", drop=1),
                            Column("detail", "detail", text=True)), screen, f"Landing queue ({len(landing)})")]
    waiting = [t for t in result["tasks"] if task_state(t) == "waiting"]
    if waiting:
        rows = [{"task": t["id"], "on": ", ".join(t["blocked_by"]), "title": t["title"]} for t in waiting]
        shape = (Column("task", "task"), Column("waits on", "on"), Column("title", "title", text=True))
        out += ["", *table(rows, shape, screen, f"Waiting on dependencies ({len(waiting)})")]
    events = result["events"][:RECENT]
    if events:
        rows = [{"seq": str(e["seq"]), "when": _since(e["ts"], now), "actor": e["actor"], "type": e["type"],
                 "task": e.get("task_id") or "-"} for e in events]
        out += ["", *table(rows, (Column("seq", "seq", drop=2), Column("when", "when"), Column("actor", "actor"),
                            Column("event", "type"), Column("task", "task", drop=1)), screen, "Latest events")]
    return out


def _since(stamp: Any, now: datetime | None) -> str:
    moment = parse_time(str(stamp)) if stamp else None
    if moment is None or now is None:
        return "-"
    return f"{span((now - moment).total_seconds())} ago"


def next_refresh(result: Mapping[str, Any]) -> float:
    """Seconds until the board must be redrawn for its countdowns when nothing changes."""
    now = parse_time(str(result.get("now", "")))
    lefts = [left for claim in result["claims"] if (left := _seconds_left(claim, now)) is not None and left > 0]
    return 1.0 if lefts and min(lefts) <= 120 else 15.0


def watch(call: Any, env: Mapping[str, str], cwd: str) -> int:
    """Keep the board of ``call`` (a parsed ``anvil board``) on the terminal, redrawn on every change.

    Returns:
        0 when the user stops it (Ctrl-C).

    Raises:
        AnvilError: a call failed (the first one, or the route went away).
    """
    from rich.console import Group
    from rich.live import Live

    from anvil.cli.output import run_call

    screen = screen_for(sys.stdout, env)
    head: int | None = None
    wait = 0.0
    try:
        with Live(console=console(screen, sys.stdout), auto_refresh=False) as live:
            while True:
                args = {**call.args, "after_seq": head, "wait_seconds": int(wait) if head is not None else 0}
                _, result, _ = run_call(call.op, args, route=call.route, as_json=False, env=env, cwd=cwd, fast=True)
                shown = render_board(result, View(screen, call.args, env))
                live.update(Group(*map(renderable, shown), styled("(watching: Ctrl-C to stop)", "dim")), refresh=True)
                head, wait = int(result["head"]), max(next_refresh(result), 1.0)
    except KeyboardInterrupt:
        return 130  # interrupted: what Ctrl-C means for every anvil command

