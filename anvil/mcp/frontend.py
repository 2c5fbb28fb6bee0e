"""The one command line of anvil's MCP server: ``python -m anvil.mcp`` and ``anvil serve`` both run it.

Options are defined once here (standard library ``argparse``), so both entry points accept the
same flags, refuse the same mistakes with exit 2, read the same environment and print errors in
the same one-line form. ``--help`` and ``--version`` answer at once: they never import the MCP
SDK, open any state or read stdin, so a catalog smoke test (``docker run --rm IMAGE --help``)
stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from anvil import __version__
from anvil.engine.errors import AnvilError, UsageError
from anvil.ops.boundary import run_guarded

HTTP_ONLY = ("--host", "--port", "--token-env", "--allowed-host", "--allowed-origin", "--header-timeout",
             "--body-timeout", "--keep-alive-timeout", "--max-connections", "--max-client-connections")

ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("ANVIL_ROOT", "Project root to serve (default: the git main worktree of the working directory). "
                   "In a container, bind-mount the project at /project and set ANVIL_ROOT=/project; "
                   "keep its state in-tree with ANVIL_STATE_LAYOUT=local."),
    ("ANVIL_STATE_LAYOUT", "'local' keeps state in <project>/.anvil/ instead of the per-user workspace."),
    ("ANVIL_HOME", "Overrides the per-user data directory holding project workspaces."),
    ("ANVIL_DATABASE_URL", "postgresql://user@host:port/database keeps the project's state in PostgreSQL, so any "
                           "number of replicas can serve it (see docs/deploy.md); unset: the embedded SQLite state. "
                           "Shown only without its password."),
    ("ANVIL_MCP_PLANNING", "1/true/yes/on lists the planning tools too; by default only execution tools "
                           "are on the wire (a hidden tool answers like an unknown one)."),
    ("ANVIL_MCP_ALLOWED_HOSTS", "Comma-separated extra Host header values accepted over HTTP (as --allowed-host)."),
    ("ANVIL_MCP_ALLOWED_ORIGINS", "Comma-separated extra Origin values accepted over HTTP (as --allowed-origin)."),
    ("ANVIL_MCP_LOG_LEVEL", "The server log on stderr: debug, info, warning (default) or error; info adds one line "
                            "per tool call with its operation, actor and outcome (never arguments or tokens)."),
    ("ANVIL_BOARD_MAX_STREAMS", "Over HTTP: how many browsers may follow the team board (/board) live at once on "
                                "this server (default 32); more get 503 and retry."),
    ("ANVIL_BOARD_SESSION_SECRET", "Over HTTP: the secret team-board sessions are signed with (32+ characters); every "
                                   "replica sets the same one. Unset: a random one per server process."),
    ("ANVIL_MCP_FAST_IMPORT", "0 turns off the server's deferred SDK package initialisation."),
    ("ANVIL_HTTP_HEADER_TIMEOUT", "Over HTTP: seconds a client has to send a request's headers (as --header-timeout)."),
    ("ANVIL_HTTP_BODY_TIMEOUT", "Over HTTP: seconds a client has to send a request's body (as --body-timeout)."),
    ("ANVIL_HTTP_KEEP_ALIVE_TIMEOUT", "Over HTTP: seconds an idle kept-alive connection stays open (as "
                                      "--keep-alive-timeout)."),
    ("ANVIL_HTTP_MAX_CONNECTIONS", "Over HTTP: open connections served at once; more get 503 (as --max-connections)."),
    ("ANVIL_HTTP_MAX_CLIENT_CONNECTIONS", "Over HTTP: open connections from one client address; more from it get 503 "
                                          "(as --max-client-connections; raise it behind a proxy)."),
    ("ANVIL_LOCK_TIMEOUT", "Seconds a write waits for the project's writer lock before failing with state_busy "
                           "(exit 9, nothing written; default 30)."),
    ("<--token-env NAME>", "Over HTTP: the variable NAMED by --token-env holds a shared bearer token. Required "
                           "when --host is not a loopback address, unless the project has per-agent tokens "
                           "(`anvil token add`): then every request needs one of those, acts as its name and role, "
                           "and the shared token is no longer accepted. Never pass a token itself."),
)


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing its own usage error and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')", code="usage")


def port_number(text: str) -> int:
    """``--port``'s value: a TCP port from 0 (any free one) to 65535.

    Raises:
        argparse.ArgumentTypeError: not a whole number in that range (argparse reports it as usage).
    """
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a port number (0-65535)")
    return port


def usage(prog: str) -> str:
    return (f"{prog} [--help] [--version] [--planning] [--stdio]\n"
            f"       {prog} --http [--host H] [--port N] [--token-env NAME] "
            "[--allowed-host H]... [--allowed-origin O]... [--sse]\n"
            "           [--header-timeout S] [--body-timeout S] [--keep-alive-timeout S] "
            "[--max-connections N] [--max-client-connections N]")


def parser(prog: str) -> argparse.ArgumentParser:
    """The server's options (help is rendered by :func:`help_text`, not by argparse)."""
    p = _Parser(prog=prog, usage=usage(prog), add_help=False)
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("-V", "--version", action="store_true")
    p.add_argument("--planning", action="store_true")
    p.add_argument("--http", action="store_true")
    p.add_argument("--stdio", action="store_true")
    p.add_argument("--sse", action="store_true")
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=port_number, default=None)
    p.add_argument("--token-env", default=None)
    p.add_argument("--allowed-host", action="append", default=[])
    p.add_argument("--allowed-origin", action="append", default=[])
    p.add_argument("--header-timeout", default=None)
    p.add_argument("--body-timeout", default=None)
    p.add_argument("--keep-alive-timeout", default=None)
    p.add_argument("--max-connections", default=None)
    p.add_argument("--max-client-connections", default=None)
    return p


def _wrap(text: str, indent: int, width: int = 100) -> str:
    import textwrap

    return textwrap.fill(text, width=width, initial_indent=" " * indent, subsequent_indent=" " * indent)


def help_text(prog: str = "python -m anvil.mcp") -> str:
    """The ``--help`` page: usage, every registered tool with its surface, and the environment."""
    from anvil.mcp.http_app import DEFAULT_HOST, DEFAULT_PORT, MAX_BODY_BYTES, MCP_PATH
    from anvil.mcp.http_limits import (
        DEFAULT_BODY_TIMEOUT,
        DEFAULT_HEADER_TIMEOUT,
        DEFAULT_KEEP_ALIVE_TIMEOUT,
        DEFAULT_MAX_CLIENT_CONNECTIONS,
        DEFAULT_MAX_CONNECTIONS,
    )
    from anvil.ops.contract import load_specs

    ops = load_specs()
    execution = [op for op in ops if op.surface == "execution"]
    lines = [
        f"anvil MCP server {__version__}", "", "usage: " + usage(prog), "",
        "Serves anvil's operations as MCP tools over stdio (default) or Streamable HTTP.", "",
        "options:",
        "  -h, --help            show this page and exit",
        "  -V, --version         print the version and exit",
        "  --planning            list the planning tools too (same as ANVIL_MCP_PLANNING=1)",
        "  --stdio               serve stdio (the default; for a container whose default command serves HTTP)",
        f"  --http                serve Streamable HTTP at http://HOST:PORT{MCP_PATH} (stateless, JSON replies)",
        "                        and the read-only team board at http://HOST:PORT/board",
        f"  --host H              address to bind (default {DEFAULT_HOST}; others need a token)",
        f"  --port N              TCP port (default {DEFAULT_PORT}; 0 picks a free one)",
        "  --token-env NAME      environment variable holding a shared bearer token (until per-agent tokens)",
        "  --allowed-host H      extra accepted Host header (repeatable)",
        "  --allowed-origin O    extra accepted Origin header (repeatable)",
        "  --sse                 serve HTTP and also the legacy SSE transport at /sse (stateful)",
        f"  --header-timeout S    seconds a client has to send request headers (default {DEFAULT_HEADER_TIMEOUT:g})",
        f"  --body-timeout S      seconds a client has to send a request body (default {DEFAULT_BODY_TIMEOUT:g})",
        f"  --keep-alive-timeout S  seconds an idle connection stays open (default {DEFAULT_KEEP_ALIVE_TIMEOUT:g})",
        f"  --max-connections N   connections served at once; more get 503 (default {DEFAULT_MAX_CONNECTIONS})",
        "  --max-client-connections N  connections from one client address; more get 503 "
        f"(default {DEFAULT_MAX_CLIENT_CONNECTIONS})",
        f"  (request bodies are limited to {MAX_BODY_BYTES // 1024} KiB; the options from --host on need --http",
        "   or --sse)",
        "",
        f"tools ({len(ops)} registered; {len(execution)} execution tools on the wire by default, "
        f"all {len(ops)} with planning):",
    ]
    width = max((len(op.name) for op in ops), default=0)
    for op in ops:
        lines.append(f"  {op.name:<{width}}  {op.surface:<9}  {op.effect:<11}  {op.description.split('. ')[0]}")
    lines += ["", "environment:"]
    for name, text in ENVIRONMENT:
        lines += [f"  {name}", _wrap(text, 6)]
    return "\n".join(lines) + "\n"


def _split_env(name: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, "").split(",") if part.strip()]


def run(argv: Sequence[str], prog: str) -> int:
    """Parse ``argv`` and serve; returns the exit code (serving stdio normally never returns).

    Raises:
        AnvilError: a usage error (exit 2), or the server could not start.
    """
    args = parser(prog).parse_args(list(argv))
    if args.help:
        sys.stdout.write(help_text(prog))
        return 0
    if args.version:
        sys.stdout.write(f"anvil {__version__}\n")
        return 0
    planning = True if args.planning else None
    if args.stdio and (args.http or args.sse):
        raise UsageError("--stdio and --http/--sse are two different servers: choose one", code="usage")
    limit_values = {"header_timeout": args.header_timeout, "body_timeout": args.body_timeout,
                    "keep_alive_timeout": args.keep_alive_timeout, "max_connections": args.max_connections,
                    "max_client_connections": args.max_client_connections}
    if args.http or args.sse:
        from anvil.mcp.http_app import DEFAULT_HOST, DEFAULT_PORT
        from anvil.mcp.http_limits import resolve_limits
        from anvil.mcp.serve import serve_http

        limits = resolve_limits(limit_values, os.environ)
        serve_http(args.host or DEFAULT_HOST, DEFAULT_PORT if args.port is None else args.port, args.token_env,
                   allowed_hosts=[*args.allowed_host, *_split_env("ANVIL_MCP_ALLOWED_HOSTS")],
                   allowed_origins=[*args.allowed_origin, *_split_env("ANVIL_MCP_ALLOWED_ORIGINS")],
                   planning=planning, legacy_sse=args.sse, limits=limits)
        return 0
    given = [flag for flag, value in (("--host", args.host), ("--port", args.port), ("--token-env", args.token_env),
                                       ("--allowed-host", args.allowed_host),
                                       ("--allowed-origin", args.allowed_origin),
                                       *(("--" + k.replace("_", "-"), v) for k, v in limit_values.items()))
             if value not in (None, [])]
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        raise UsageError(f"{', '.join(given)} only {verb} to the HTTP server: add --http (stdio takes none of them)",
                         code="usage")
    from anvil.mcp.serve import serve_stdio

    serve_stdio(planning=planning)
    return 0


def report_line(error: AnvilError) -> int:
    """Show ``error`` as the one stderr line every anvil surface prints; returns its exit code."""
    sys.stderr.write(error.line() + "\n")
    sys.stderr.flush()
    return error.exit_code


def main(argv: Sequence[str] | None = None, prog: str = "python -m anvil.mcp") -> int:
    """The server command line's error boundary: every failure becomes one stderr line and its exit code.

    ``anvil serve`` calls it too (with ``prog="anvil serve"``), so both entry points parse, refuse
    and report identically. A bug becomes the one internal-error line (its traceback only with
    ``ANVIL_DEBUG=1``), never a traceback on its own.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    return run_guarded(lambda: run(args, prog), report_line, os.environ)
