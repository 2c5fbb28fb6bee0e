"""``anvil db``: administer where the project's state lives (``anvil db copy --to URL``).

A command of the machine that holds the state, never an MCP tool: a server must not be a way to
make its host connect to any database a caller names. It runs inside the CLI's error boundary
(errors print like every other command's, ``--json`` included) and never shows a connection
string with its password.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import typer

from anvil.ops import cliflags as flags

DESCRIPTION = ("Copy this project's state (the whole event log) into an empty PostgreSQL database, "
               "project it there and verify: the hash chain, a replay of the log, and the copied "
               "projection against this one.")
EPILOG = ("The target URL must not carry a password on the command line: use PGPASSWORD, ~/.pgpass, or "
          "put the URL in a variable and name it with --to-env. Afterwards set ANVIL_DATABASE_URL to the "
          "same database on every machine (see docs/deploy.md).")


def register(app: typer.Typer, group: Callable[[str, str | None], typer.Typer], panel: str) -> None:
    """Add ``db copy`` to ``app``."""
    from anvil.cli.app import option

    @group("db", panel).command(name="copy", help=DESCRIPTION, epilog=EPILOG,
                                short_help="Copy the state into PostgreSQL and verify it there.")
    def copy(
        to: str | None = typer.Option(None, "--to", metavar="URL",
                                      help="postgresql://user@host:port/database (no password)."),
        to_env: str | None = typer.Option(None, "--to-env", metavar="NAME",
                                          help="The variable holding the target URL."),
        json_: bool = option(flags.JSON),
    ) -> int:
        return copy_state_to(to, to_env, json_, os.environ)


def copy_state_to(to: str | None, to_env: str | None, as_json: bool, env: Mapping[str, str]) -> int:
    """Run ``anvil db copy``; returns the exit code.

    Raises:
        AnvilError: usage errors and any failure of the copy (reported by the CLI's boundary).
    """
    from anvil.engine.storage.paths import resolve_state
    from anvil.engine.storage.postgres import URL_ENV, same_database
    from anvil.engine.storage.store import Store
    from anvil.engine.storage.transfer import copy_state, target_url

    url = target_url(to, to_env, dict(env))
    location = resolve_state(env, os.getcwd())
    if location.database_url and same_database(location.database_url, url):
        # ANVIL_DATABASE_URL already names the target (set for after the move): the source is the
        # project's embedded SQLite state.
        location = resolve_state({k: v for k, v in env.items() if k != URL_ENV}, os.getcwd())
    with Store.open(location) as source:
        report = copy_state(source, location, url)
    from anvil.cli.output import emit

    emit(report, as_json, _lines)
    return 0 if report["ok"] else 8


def _lines(report: dict[str, Any]) -> list[str]:
    verdict = "verified" if report["ok"] else "NOT verified"
    chain = "ok" if report["chain_ok"] else "broken"
    replay, projection = ("equal" if report[key] else "differs" for key in ("replay_ok", "projection_equal"))
    return [f"copied {report['events_copied']} events to {report['database']}: {verdict} (chain {chain}, replay "
            f"{replay}, projection {projection})", *(f"  {problem}" for problem in report["problems"])]
