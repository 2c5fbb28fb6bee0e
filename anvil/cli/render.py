"""Human output with Rich: generic tables for any operation result, plus a few tailored views."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from anvil.ops.registry import Operation

console = Console()


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value) if all(not isinstance(v, (dict, list)) for v in value) \
            else f"{len(value)} items"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_cell(v)}" for k, v in value.items() if v not in (0, None, [], ""))  or "-"
    return str(value)


def rows_table(rows: list[dict[str, Any]], title: str | None = None) -> Table:
    """A table of homogeneous records (columns from the first row)."""
    table = Table(title=title, show_lines=False, header_style="bold")
    columns = list(rows[0]) if rows else []
    for column in columns:
        table.add_column(column.replace("_", " "))
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
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lists.append((key, value))
        else:
            table.add_row(key.replace("_", " "), _cell(value))
    console.print(table)
    for key, rows in lists:
        console.print(rows_table(rows, title=key.replace("_", " ")))


RENDERERS: dict[str, Callable[[dict[str, Any]], None]] = {}


def renders(name: str) -> Callable[[Callable[[dict[str, Any]], None]], Callable[[dict[str, Any]], None]]:
    def decorate(func: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
        RENDERERS[name] = func
        return func

    return decorate


def render_result(op: Operation, result: dict[str, Any]) -> None:
    RENDERERS.get(op.name, render_generic)(result)
