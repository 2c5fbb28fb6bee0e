"""``anvil db``: administer where the project's state lives (``anvil db copy --to URL``).

A command of the machine that holds the state, never an MCP tool: a server must not be a way to
make its host connect to any database a caller names. It runs inside the CLI's error boundary
(errors print like every other command's, ``--json`` included) and never shows a connection
string with its password.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import NoReturn

from anvil.engine.errors import UsageError

DESCRIPTION = ("Copy this project's state (the whole event log) into an empty PostgreSQL database, "
               "project it there and verify: the hash chain, a replay of the log, and the copied "
               "projection against this one.")
EPILOG = ("The target URL must not carry a password on the command line: use PGPASSWORD, ~/.pgpass, or "
          "put the URL in a variable and name it with --to-env. Afterwards set ANVIL_DATABASE_URL to the "
          "same database on every machine (see docs/deploy.md).")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')", code="usage")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="anvil db", description="Where the project's state lives.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    copy = commands.add_parser("copy", help="copy the state into PostgreSQL and verify it there",
                               description=DESCRIPTION, epilog=EPILOG)
    copy.add_argument("--to", metavar="URL", help="postgresql://user@host:port/database (no password)")
    copy.add_argument("--to-env", metavar="NAME", help="the variable holding the target URL")
    copy.add_argument("--json", action="store_true", help="print one JSON document")
    return parser


def main(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Run ``anvil db ARGS``; returns the exit code.

    Raises:
        AnvilError: usage errors and any failure of the copy (reported by the CLI's boundary).
    """
    parser = _parser()
    args = parser.parse_args(list(argv))
    if args.command != "copy":
        parser.print_help()
        return 0 if args.command is None and not argv else 2
    from anvil.engine.storage.paths import resolve_state
    from anvil.engine.storage.postgres import URL_ENV, same_database
    from anvil.engine.storage.store import Store
    from anvil.engine.storage.transfer import copy_state, target_url

    url = target_url(args.to, args.to_env, dict(env))
    location = resolve_state(env, os.getcwd())
    if location.database_url and same_database(location.database_url, url):
        # ANVIL_DATABASE_URL already names the target (set for after the move): the source is the
        # project's embedded SQLite state.
        location = resolve_state({k: v for k, v in env.items() if k != URL_ENV}, os.getcwd())
    with Store.open(location) as source:
        report = copy_state(source, location, url)
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2, sort_keys=True) + "\n")
    else:
        verdict = "verified" if report["ok"] else "NOT verified"
        chain = "ok" if report["chain_ok"] else "broken"
        replay = "equal" if report["replay_ok"] else "differs"
        projection = "equal" if report["projection_equal"] else "differs"
        sys.stdout.write(f"copied {report['events_copied']} events to {report['database']}: {verdict} (chain {chain}, "
                         f"replay {replay}, projection {projection})\n")
        for problem in report["problems"]:
            sys.stdout.write(f"  {problem}\n")
    return 0 if report["ok"] else 8
