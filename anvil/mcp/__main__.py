"""``python -m anvil.mcp``: run the anvil MCP server (stdio by default, or Streamable HTTP).

``--help`` and ``--version`` answer and exit 0 at once: they never import the MCP SDK, open any
state or read stdin, so a catalog smoke test (``docker run --rm IMAGE --help``) stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from anvil import __version__

USAGE = (
    "python -m anvil.mcp [--help] [--version] [--planning]\n"
    "       python -m anvil.mcp --http [--host H] [--port N] [--token-env NAME] "
    "[--allowed-host H]... [--allowed-origin O]... [--sse]"
)

ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("ANVIL_ROOT", "Project root to serve (default: the git main worktree of the working directory). "
                   "In a container, bind-mount the project at /project and set ANVIL_ROOT=/project; "
                   "keep its state in-tree with ANVIL_STATE_LAYOUT=local."),
    ("ANVIL_STATE_LAYOUT", "'local' keeps state in <project>/.anvil/ instead of the per-user workspace."),
    ("ANVIL_HOME", "Overrides the per-user data directory holding project workspaces."),
    ("ANVIL_MCP_PLANNING", "1/true/yes/on lists the planning tools too; by default only execution tools "
                           "are on the wire (a hidden tool answers like an unknown one)."),
    ("ANVIL_MCP_ALLOWED_HOSTS", "Comma-separated extra Host header values accepted by --http."),
    ("ANVIL_MCP_ALLOWED_ORIGINS", "Comma-separated extra Origin values accepted by --http."),
    ("ANVIL_MCP_FAST_IMPORT", "0 turns off the server's deferred SDK package initialisation."),
    ("<--token-env NAME>", "With --http: the variable NAMED by --token-env holds the bearer token. "
                           "Required when --host is not a loopback address; never pass the token itself."),
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m anvil.mcp", usage=USAGE, add_help=False)
    parser.add_argument("-h", "--help", action="store_true")
    parser.add_argument("-V", "--version", action="store_true")
    parser.add_argument("--planning", action="store_true")
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--sse", action="store_true")
    parser.add_argument("--host", default=None)
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--token-env", default=None)
    parser.add_argument("--allowed-host", action="append", default=[])
    parser.add_argument("--allowed-origin", action="append", default=[])
    return parser


def _wrap(text: str, indent: int, width: int = 100) -> str:
    import textwrap

    return textwrap.fill(text, width=width, initial_indent=" " * indent, subsequent_indent=" " * indent)


def help_text() -> str:
    """The ``--help`` page: usage, every registered tool with its surface, and the environment."""
    from anvil.mcp.http import DEFAULT_HOST, DEFAULT_PORT, MAX_BODY_BYTES, MCP_PATH
    from anvil.ops.registry import all_operations

    ops = all_operations()
    execution = [op for op in ops if op.surface == "execution"]
    lines = [
        f"anvil MCP server {__version__}", "", "usage: " + USAGE, "",
        "Serves anvil's operations as MCP tools over stdio (default) or Streamable HTTP.", "",
        "options:",
        "  -h, --help            show this page and exit",
        "  -V, --version         print the version and exit",
        "  --planning            list the planning tools too (same as ANVIL_MCP_PLANNING=1)",
        f"  --http                serve Streamable HTTP at http://HOST:PORT{MCP_PATH} (stateless, JSON replies)",
        f"  --host H              address to bind (default {DEFAULT_HOST}; others need --token-env)",
        f"  --port N              TCP port (default {DEFAULT_PORT})",
        "  --token-env NAME      environment variable holding the bearer token",
        "  --allowed-host H      extra accepted Host header (repeatable)",
        "  --allowed-origin O    extra accepted Origin header (repeatable)",
        "  --sse                 also serve the legacy SSE transport at /sse (stateful)",
        f"  (request bodies are limited to {MAX_BODY_BYTES // 1024} KiB)",
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (serving stdio normally never returns)."""
    args = _parser().parse_args(argv)
    if args.help:
        sys.stdout.write(help_text())
        return 0
    if args.version:
        sys.stdout.write(f"anvil {__version__}\n")
        return 0
    from anvil.engine.errors import AnvilError

    planning = True if args.planning else None
    try:
        if args.http or args.sse:
            from anvil.mcp.http import DEFAULT_HOST, DEFAULT_PORT
            from anvil.mcp.serve import serve_http

            serve_http(args.host or DEFAULT_HOST, DEFAULT_PORT if args.port is None else args.port, args.token_env,
                       allowed_hosts=[*args.allowed_host, *_split_env("ANVIL_MCP_ALLOWED_HOSTS")],
                       allowed_origins=[*args.allowed_origin, *_split_env("ANVIL_MCP_ALLOWED_ORIGINS")],
                       planning=planning, legacy_sse=args.sse)
            return 0
        if args.host or args.port is not None or args.token_env:
            sys.stderr.write("python -m anvil.mcp: --host, --port and --token-env need --http\n")
            return 2
        from anvil.mcp.serve import serve_stdio

        serve_stdio(planning=planning)
        return 0
    except AnvilError as err:
        sys.stderr.write(f"anvil: error: {err.message}\n")
        return err.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
