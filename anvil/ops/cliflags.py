"""The flags many commands share, declared once: the fast parser, the Typer app, the help and the
CLI manifest (:mod:`anvil.ops.manifest`, what ``describe`` reports) read this table.

Standard library only, so the fast path can read it without loading Typer. It lives with the
operation contract rather than in ``anvil.cli`` because the manifest, which the ops layer builds,
lists these flags too.
"""

from __future__ import annotations

from typing import NamedTuple


class Flag(NamedTuple):
    """One shared flag: the parameter name a Typer command receives it as, its spellings, its help,
    and the metavar of its value (None: a switch)."""

    param: str
    names: tuple[str, ...]
    help: str
    metavar: str | None = None
    bare: str | None = None  # the value of the flag given without one (a bare --mcp is stdio)


JSON = Flag("json_", ("--json",), "Print exactly one JSON document on stdout (errors too).")
MCP = Flag("mcp_", ("--mcp",), "Run through MCP: bare or 'stdio' spawns the local server; an http(s):// URL or "
                               "sse:<url> calls a deployed one.", "[TARGET]", bare="stdio")
MCP_TOKEN_ENV = Flag("mcp_token_env_", ("--mcp-token-env",), "Name of the environment variable holding the bearer "
                                                             "token.", "NAME")
QUIET = Flag("quiet_", ("--quiet", "-q"), "Print only the id; exit 3 when there is none.")
ACTOR = Flag("actor", ("--actor",), "Who you are (default: ANVIL_ACTOR; over HTTP, the token's name).", "NAME")
BRANCH = Flag("branch_", ("--branch",), "In git: claim on a new branch of this checkout (--git-mode branch).")
WORKTREE = Flag("worktree_", ("--worktree",), "In git: claim in an isolated worktree; --worktree=PATH puts it at "
                                              "PATH (--git-mode worktree [--worktree-path PATH]).", "[=PATH]")
LAYOUT = Flag("layout", ("--layout",), "The project's state layout (default: found from the project).",
              "local|workspace")
PLANNING = Flag("planning", ("--planning",), "Start the server with the planning tools listed.")
"""``--layout`` and ``--planning``: how ``mcp-config`` and ``install`` configure the local stdio server."""
ROUTE = (MCP, MCP_TOKEN_ENV)
COMMON = (JSON, *ROUTE)
"""On every command that runs operations."""
GIT_SHORTCUTS = (BRANCH, WORKTREE)
"""On the claim commands: shortcuts for their --git-mode and --worktree-path inputs."""
CLAIM_COMMANDS = ("claim", "claim-next")
PANEL = "Common options"


def expand_git_shortcuts(args: list[str]) -> list[str]:
    """``--branch``, ``--worktree`` and ``--worktree=PATH`` on the claim commands, as the flags of their inputs."""
    if not args[:1] or args[0] not in CLAIM_COMMANDS:
        return args
    out: list[str] = []
    for token in args:
        if token in BRANCH.names:
            out += ["--git-mode", "branch"]
        elif token in WORKTREE.names:
            out += ["--git-mode", "worktree"]
        elif token.startswith(WORKTREE.names[0] + "="):
            out += ["--git-mode", "worktree", "--worktree-path", token.partition("=")[2]]
        else:
            out.append(token)
    return out


def bare_flags_valued(args: list[str]) -> list[str]:
    """A flag with a bare value given alone (last, or before another option) as ``--flag=VALUE``."""
    out = list(args)
    bare = {name: flag.bare for flag in COMMON for name in flag.names if flag.bare is not None}
    for i, token in enumerate(out):
        if token in bare and (i + 1 == len(out) or out[i + 1].startswith("-")):
            out[i] = f"{token}={bare[token]}"
    return out
