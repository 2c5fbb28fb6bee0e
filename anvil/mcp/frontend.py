"""What anvil's MCP server is started with: ``python -m anvil.mcp`` and ``anvil serve`` both end here.

The command line itself is one Typer command (``anvil/cli/serve.py``, reached from
``python -m anvil.mcp`` too), so both entry points accept the same flags, refuse the same mistakes
with exit 2 and print the same help; this module holds what it serves with: the options checked
together, the help's tool list and environment, and the start of either server. A host starting
the stdio server (no options, or only ``--planning``/``--stdio``) skips the command line entirely:
that start stays as light as it was. ``--help`` and ``--version`` never import the MCP SDK, open
any state or read stdin.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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
    ("ANVIL_MCP_LEAN", "Over stdio: 1 (the CLI's --mcp stdio sets it) answers the handshake and tool calls without "
                       "the MCP SDK, handing anything else to it; 0 or unset: the SDK server."),
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


STDIO_FLAGS = frozenset({"--planning", "--stdio"})


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """The server's options as the command line gave them (None: not given)."""

    planning: bool = False
    http: bool = False
    stdio: bool = False
    sse: bool = False
    host: str | None = None
    port: int | None = None
    token_env: str | None = None
    allowed_host: tuple[str, ...] = ()
    allowed_origin: tuple[str, ...] = ()
    header_timeout: str | None = None
    body_timeout: str | None = None
    keep_alive_timeout: str | None = None
    max_connections: str | None = None
    max_client_connections: str | None = None


def plain_stdio(argv: Sequence[str]) -> ServeOptions | None:
    """The options of a plain stdio start (how MCP hosts start the server), else None (parse the command line)."""
    if len(set(argv)) != len(argv) or not set(argv) <= STDIO_FLAGS:
        return None
    return ServeOptions(planning="--planning" in argv, stdio="--stdio" in argv)


def tool_rows() -> list[tuple[str, str]]:
    """The help's list of tools: name, then surface, effect and summary."""
    from anvil.ops.contract import load_specs

    return [(op.name, f"{op.surface:<9}  {op.effect:<11}  {op.description.split('. ')[0]}") for op in load_specs()]


def tools_title() -> str:
    from anvil.ops.contract import load_specs

    ops = load_specs()
    execution = sum(op.surface == "execution" for op in ops)
    return (f"Tools ({len(ops)} registered; {execution} execution tools on the wire by default, all {len(ops)} with "
            "planning)")


def _split_env(name: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, "").split(",") if part.strip()]


def serve(args: ServeOptions) -> int:
    """Serve with ``args``; returns the exit code (serving stdio normally never returns).

    Raises:
        AnvilError: a usage error (exit 2), or the server could not start.
    """
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
             if value not in (None, [], ())]
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


def guarded(body: Callable[[], int]) -> int:
    """The server's error boundary: every failure becomes one stderr line and its exit code (a bug the one
    internal-error line, its traceback only with ``ANVIL_DEBUG=1``), never a traceback on its own."""
    return run_guarded(body, report_line, os.environ)
