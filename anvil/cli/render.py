"""Human output with Rich: generic tables for any operation result, plus a few tailored views."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from anvil.ops.registry import Operation

# Piped output (agents, logs) gets a wide console instead of Rich's 80-column fallback.
console = Console(width=None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "0") or 0) or 160)


def _cell(value: Any) -> str:
    """A value as table text; everything from the data is escaped (PRD text may hold [brackets])."""
    return escape(_plain(value))


def _plain(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value) if all(not isinstance(v, (dict, list)) for v in value) \
            else f"{len(value)} items"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_plain(v)}" for k, v in value.items() if v not in (0, None, [], "")) or "-"
    return str(value)


def rows_table(rows: list[dict[str, Any]], title: str | None = None) -> Table:
    """A table of homogeneous records (columns from the first row)."""
    table = Table(title=title and escape(title), show_lines=False, header_style="bold")
    columns = list(rows[0]) if rows else []
    for column in columns:
        table.add_column(escape(column.replace("_", " ")))
    for row in rows:
        table.add_row(*(_cell(row.get(c)) for c in columns))
    return table


def render_generic(result: dict[str, Any]) -> None:
    """Scalars as a two-column table, then each list of records as its own table."""
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold cyan")
    table.add_column()
    lists: list[tuple[str, list[dict[str, Any]]]] = []
    for key, value in result.items():
        if key == "actor_identity" and isinstance(value, dict):
            table.add_row("acted as", escape(acted_as(value)))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lists.append((key, value))
        else:
            table.add_row(escape(key.replace("_", " ")), _cell(value))
    console.print(table)
    for key, rows in lists:
        console.print(rows_table(rows, title=key.replace("_", " ")))


def acted_as(identity: dict[str, Any]) -> str:
    """The ``actor_identity`` of a result in a few words."""
    how = {"token": f"authenticated by token, role {identity.get('role')}", "declared": "self-declared",
           "default": "nobody named"}.get(str(identity.get("how")), str(identity.get("how")))
    return f"{identity.get('actor')} ({how})"


RENDERERS: dict[str, Callable[[dict[str, Any]], None]] = {}


def renders(name: str) -> Callable[[Callable[[dict[str, Any]], None]], Callable[[dict[str, Any]], None]]:
    def decorate(func: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
        RENDERERS[name] = func
        return func

    return decorate


def render_result(op: Operation, result: dict[str, Any]) -> None:
    RENDERERS.get(op.name, render_generic)(result)


STATUS_STYLE = {"ready": "green", "claimed": "yellow", "in_progress": "yellow", "blocked": "red",
                "needs_review": "magenta", "done": "dim", "drafted": "cyan"}


def _task_table(tasks: list[dict[str, Any]], title: str | None = None) -> Table:
    table = Table(title=title, header_style="bold")
    for column in ("id", "status", "priority", "feature", "tier", "title"):
        table.add_column(column, overflow="fold" if column == "title" else "ellipsis",
                         no_wrap=column != "title")
    for task in tasks:
        style = STATUS_STYLE.get(task["status"], "")
        status = escape(task["status"])
        table.add_row(escape(task["id"]), f"[{style}]{status}[/]" if style else status, escape(task["priority"]),
                      escape(task.get("feature_id") or "-"), escape(task.get("review_tier", "-")),
                      escape(task["title"]))
    return table


@renders("list_tasks")
def _render_list(result: dict[str, Any]) -> None:
    if not result["tasks"]:
        console.print("no tasks match")
        return
    console.print(_task_table(result["tasks"]))
    if result["next_cursor"]:
        console.print(f"more: --cursor {result['next_cursor']}", style="dim", markup=False)


@renders("get_next_task")
def _render_next(result: dict[str, Any]) -> None:
    task = result["task"]
    if task is None:
        console.print(f"nothing to claim: {result['reason']}", style="yellow", markup=False)
        return
    console.print(_task_table([task], title="next task"))
    console.print(f"claim it: anvil claim {task['id']}", style="dim", markup=False)


@renders("get_task")
def _render_task(result: dict[str, Any]) -> None:
    console.print(f"[bold]{escape(result['id'])}[/]: {escape(result['title'])}  ({escape(result['status'])}, "
                  f"{escape(result['priority'])}, review tier {escape(result['review_tier'])})")
    if result["description"]:
        console.print(result["description"], markup=False)
    for label, key in (("Acceptance criteria", "acceptance_criteria"), ("Verification", "verification"),
                       ("Likely files", "likely_files"), ("Dependencies", "dependencies")):
        if result[key]:
            console.print(f"[bold]{label}[/]")
            for item in result[key]:
                console.print(f"  - {item}", markup=False)
    recent = result.get("history", {})
    for evidence in recent.get("evidence", [])[:1]:
        console.print(f"[bold]Latest evidence[/] {escape(evidence['id'])} by {escape(evidence['actor'])} "
                      f"({escape(evidence['category'])}, {escape(evidence['submitted_at'])})")
        for command in evidence["commands_run"]:
            console.print(f"  $ {command}", markup=False)
        if evidence["files_changed"]:
            console.print("  files: " + ", ".join(evidence["files_changed"]), markup=False)
    for review in recent.get("reviews", []):
        reason = f": {review['reason']}" if review["reason"] else ""
        console.print(f"review {review['decision']} by {review['reviewer']}{reason}", markup=False)
    if result["claim"]:
        claim = result["claim"]
        console.print(f"claimed by {claim['claimed_by']} (generation {claim['generation']}) until "
                      f"{claim['lease_expires_at']}", markup=False)


@renders("generate_work_packet")
def _render_packet(result: dict[str, Any]) -> None:
    content = result["content"]
    if isinstance(content, str):
        from rich.markdown import Markdown

        console.print(Markdown(content))
    else:
        import json

        console.print_json(json.dumps(content))


@renders("add_token")
def _render_token(result: dict[str, Any]) -> None:
    who = f"{result['actor']} (role {result['role']}, id {result['token_id']})"
    if result["token"] is None:
        console.print(f"no token shown for {who}: a dry run, or the retry of an earlier call", markup=False)
        return
    console.print(f"token for {who}, expires {result['expires_at'] or 'never'}:", markup=False)
    console.print(result["token"], markup=False, soft_wrap=True)
    console.print("Store it now: it is shown only once. Give it to its holder in an environment variable and "
                  "point --mcp-token-env at that variable.", style="yellow", markup=False)
