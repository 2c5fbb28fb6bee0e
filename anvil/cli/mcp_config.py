"""``anvil mcp-config CLIENT``: print (or merge into the host's project file) the MCP configuration
that connects an MCP host to anvil. A CLI-only command: it is not an operation and has no MCP tool.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any

import typer

from anvil.cli.host_config import HOSTS, LAYOUT_ENV, PLANNING_ENV, Request, check_request, render, write
from anvil.engine.errors import InternalError, UsageError

Client = Enum("Client", {name.replace("-", "_"): name for name in HOSTS}, type=str)  # type: ignore[misc]


def stdio_env(env: Mapping[str, str], cwd: str, layout: str | None, planning: bool) -> dict[str, str]:
    """The variables the host must start the stdio server with.

    The state layout is passed when it is local (named by ``--layout``, by ``ANVIL_STATE_LAYOUT``, or
    found: the project has ``.anvil/state.db``): hosts start servers with their own environment, in
    which the default layout would look for the state elsewhere.

    Raises:
        UsageError: ``invalid_layout`` for a layout that is neither local nor workspace.
    """
    from anvil.engine.storage.paths import project_root

    chosen = (layout or env.get(LAYOUT_ENV, "")).strip().lower()
    if chosen not in ("", "local", "workspace"):
        raise UsageError("--layout must be 'local' or 'workspace'", code="invalid_layout")
    if not chosen and (project_root(env, cwd) / ".anvil" / "state.db").is_file():
        chosen = "local"
    variables = {LAYOUT_ENV: "local"} if chosen == "local" else {}
    if planning:
        variables[PLANNING_ENV] = "1"
    return variables


def mcp_config(client: str, *, http_url: str | None, token_env: str | None, name: str, write_file: bool,
               layout: str | None, planning: bool, env: Mapping[str, str], cwd: str) -> dict[str, Any]:
    """The configuration for ``client``, written into its project file with ``write_file``.

    Raises:
        UsageError: invalid options (see :func:`anvil.cli.host_config.check_request`).
        Refused: ``host_config_unreadable`` when the project file to merge into does not parse.
        InternalError: ``host_config_write_failed`` when the file cannot be written.
    """
    from anvil.engine.storage.paths import project_root

    host = HOSTS[client]
    if http_url is not None and (layout is not None or planning):
        raise UsageError("--layout and --planning configure the local stdio server; a deployed server (--http) "
                         "is configured where it runs", code="usage")
    variables = stdio_env(env, cwd, layout, planning) if http_url is None else {}
    request = Request(host, name, http_url, token_env, variables)
    check_request(request)
    document = render(request)
    root = project_root(env, cwd)
    result: dict[str, Any] = {
        "client": host.name, "format": host.format, "project_file": host.project_file, "server_name": name,
        "transport": "stdio" if http_url is None else "http", "document": document, "written": None,
        "kept_servers": None, "env": variables, "notes": list(host.notes),
    }
    if token_env is not None:
        result["notes"].append(f"Set {token_env} in the environment {host.title} starts from: the file names the "
                               "variable, never the token.")
    if http_url is None and variables.get(LAYOUT_ENV) == "local":
        result["notes"].append("The project keeps its state in .anvil/ (local layout), so the server is started "
                               "with ANVIL_STATE_LAYOUT=local.")
    if write_file:
        try:
            path, kept = write(root, request)
        except OSError as exc:
            raise InternalError(f"could not write {root / host.project_file} ({exc.strerror or type(exc).__name__})",
                                code="host_config_write_failed") from None
        result["written"], result["kept_servers"] = str(path), kept
    return result


def register(app: typer.Typer, group: Callable[[str, str | None], typer.Typer], panel: str) -> None:
    """Add the ``mcp-config`` command to ``app``."""
    from typer.core import TyperCommand

    from anvil.cli.app import option, with_panels
    from anvil.ops import cliflags as flags

    examples = [("anvil mcp-config claude-code --write", "the local stdio server, in .mcp.json"),
                ("anvil mcp-config codex --http https://anvil.internal:8765/mcp --token-env ANVIL_TOKEN",
                 "a deployed server")]
    cls = with_panels(TyperCommand, [("Clients and the project file --write merges into",
                                       [(name, host.project_file) for name, host in HOSTS.items()]),
                                      ("Examples", examples)])

    @app.command(name="mcp-config", rich_help_panel=panel, cls=cls, help=(
        "Print the MCP configuration that connects CLIENT to anvil: the local stdio server by default, or a "
        "deployed server with --http URL --token-env NAME (the token is referenced by its variable's name, "
        "never written). --write merges it into the client's project file, keeping every other entry."),
        short_help="Configure an MCP host (Claude Code, Codex, Cursor, VS Code, Gemini CLI).")
    def command(
        client: Client = typer.Argument(..., help="The MCP host: " + ", ".join(HOSTS) + ".", metavar="CLIENT",
                                        show_default=False),
        http_url: str | None = typer.Option(None, "--http", metavar="URL",
                                            help="A deployed server's /mcp URL (default: the local stdio server)."),
        token_env: str | None = typer.Option(None, "--token-env", metavar="NAME",
                                             help="Environment variable holding the bearer token (with --http)."),
        name: str = typer.Option("anvil", "--name", help="The server's name in the host's list."),
        write_file: bool = typer.Option(False, "--write", help="Merge into the host's project file in the "
                                                               "project root (created if missing)."),
        layout: str | None = option(flags.LAYOUT, None), planning: bool = option(flags.PLANNING, None),
        json_: bool = option(flags.JSON),
    ) -> int:
        result = mcp_config(client.value, http_url=http_url, token_env=token_env, name=name, write_file=write_file,
                            layout=layout, planning=planning, env=os.environ, cwd=os.getcwd())
        from anvil.cli.output import emit

        emit(result, json_, lambda shown: shown["document"].splitlines())
        if not json_:  # what was done, and the notes, on stderr: stdout is the document alone
            kept = result["kept_servers"]
            said = [f"wrote {result['written']} ({name} entry; {kept} other server{'s' if kept != 1 else ''} kept)"
                    if result["written"] else f"# {HOSTS[client.value].title}: put this in {result['project_file']} "
                    "(or run with --write)", *(f"# {note}" for note in result["notes"])]
            sys.stderr.write("\n".join(said) + "\n")
        return 0
