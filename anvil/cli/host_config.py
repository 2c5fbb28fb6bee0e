"""MCP host configuration: the entry that makes Claude Code, Codex, Cursor, VS Code or Gemini CLI
start (stdio) or reach (HTTP) anvil's server, and merging it into the host's project file.

Standard library only. Every document is parsed back before it is shown or written (JSON with
:mod:`json`, TOML with :mod:`tomllib`), so a printed configuration is valid for its host. A bearer
token is only ever referenced by the NAME of the environment variable holding it, in the syntax
each host expands (``${NAME}``, ``${env:NAME}`` or Codex's ``bearer_token_env_var``), never by value.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from anvil.engine.errors import InternalError, Refused, UsageError

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
LAYOUT_ENV = "ANVIL_STATE_LAYOUT"
PLANNING_ENV = "ANVIL_MCP_PLANNING"


@dataclass(frozen=True, slots=True)
class Host:
    """One MCP host: its project file, the key holding servers, and how it expands a variable."""

    name: str
    title: str
    project_file: str
    servers_key: str
    variable: str  # how a header value names an environment variable: "{name}" is replaced
    notes: tuple[str, ...] = ()

    @property
    def format(self) -> str:
        return "toml" if self.project_file.endswith(".toml") else "json"


HOSTS: dict[str, Host] = {host.name: host for host in (
    Host("claude-code", "Claude Code", ".mcp.json", "mcpServers", "${{{name}}}",
         ("Claude Code asks once before it uses servers from a project's .mcp.json.",)),
    Host("codex", "Codex", ".codex/config.toml", "mcp_servers", "",
         ("Codex reads a project's .codex/config.toml only when the project is trusted; the same table "
          "works in ~/.codex/config.toml.",)),
    Host("cursor", "Cursor", ".cursor/mcp.json", "mcpServers", "${{env:{name}}}"),
    Host("vscode", "VS Code", ".vscode/mcp.json", "servers", "${{env:{name}}}"),
    Host("gemini", "Gemini CLI", ".gemini/settings.json", "mcpServers", "${{{name}}}"),
)}


def server_command(executable: str | None = None) -> tuple[str, ...]:
    """The absolute command that starts this install's stdio server.

    Hosts start servers with their own environment, where this install's ``anvil`` is rarely on PATH
    (a virtual environment that is not activated), so the entry names the ``anvil`` script next to
    this interpreter, or the interpreter itself running ``anvil.mcp``. The interpreter's path is
    kept as it is (never resolved): a virtual environment's ``python`` is a link out of it.
    """
    python = os.path.abspath(executable or sys.executable)
    script = Path(python).parent / "anvil"
    if script.is_file() and os.access(script, os.X_OK):
        return (str(script), "serve")
    return (python, "-m", "anvil.mcp")


@dataclass(frozen=True, slots=True)
class Request:
    """What the configuration must say.

    Attributes:
        host: the MCP host.
        name: the server's name in the host's list.
        http_url: a deployed server's ``/mcp`` URL, or None for the local stdio server.
        token_env: the NAME of the variable holding the bearer token (HTTP only).
        env: variables the stdio server must be started with (the state layout, planning).
        command: the absolute command line that starts the stdio server (:func:`server_command`).
    """

    host: Host
    name: str = "anvil"
    http_url: str | None = None
    token_env: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    command: tuple[str, ...] = field(default_factory=server_command)


def check_request(request: Request) -> None:
    """Refuse what no host could use, or what would put a secret in the file.

    Raises:
        UsageError: ``usage`` (a bad server name, --token-env without --http), ``invalid_target``
            (not an http(s) URL, or one with credentials, a query or a fragment) or
            ``invalid_token_env`` (not a variable name).
    """
    if not SERVER_NAME.match(request.name):
        raise UsageError("--name takes letters, digits, '-' and '_' (at most 64)", code="usage")
    if request.token_env is not None:
        if request.http_url is None:
            raise UsageError("--token-env applies to a deployed server: add --http URL", code="usage")
        if not ENV_NAME.match(request.token_env):
            raise UsageError("--token-env takes an environment variable NAME (letters, digits, _), never the token",
                             code="invalid_token_env")
    if request.http_url is not None:
        parts = urlsplit(request.http_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError("--http takes the server's http(s)://HOST[:PORT]/mcp URL", code="invalid_target")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise UsageError("--http takes a URL without credentials, query or fragment (a token goes in the "
                             "variable named by --token-env)", code="invalid_target")


def server_entry(request: Request) -> dict[str, Any]:
    """The host's entry for anvil's server (the value under its name in the servers table)."""
    host = request.host
    if request.http_url is None:
        entry: dict[str, Any] = {"command": request.command[0], "args": list(request.command[1:])}
        if host.name in ("claude-code", "vscode"):
            entry = {"type": "stdio", **entry}
        if request.env:
            entry["env"] = dict(request.env)
        return entry
    if host.name == "codex":
        entry = {"url": request.http_url}
        if request.token_env:
            entry["bearer_token_env_var"] = request.token_env
        return entry
    url_key = "httpUrl" if host.name == "gemini" else "url"
    entry = {url_key: request.http_url}
    if host.name in ("claude-code", "vscode"):
        entry = {"type": "http", **entry}
    if request.token_env:
        entry["headers"] = {"Authorization": "Bearer " + host.variable.format(name=request.token_env)}
    return entry


# --- rendering ---------------------------------------------------------------------------------


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _toml_key(key: str) -> str:
    return key if re.match(r"^[A-Za-z0-9_-]+$", key) else _toml_string(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise InternalError(f"no TOML form for {type(value).__name__}", code="host_config_invalid")


def toml_table(name: str, entry: Mapping[str, Any], servers_key: str) -> str:
    """``[servers_key.name]`` with one line per field (tables inline)."""
    lines = [f"[{servers_key}.{_toml_key(name)}]"]
    lines += [f"{_toml_key(key)} = {_toml_value(value)}" for key, value in entry.items()]
    return "\n".join(lines) + "\n"


def render(request: Request) -> str:
    """The smallest document the host reads, holding only anvil's entry (validated).

    Raises:
        InternalError: ``host_config_invalid`` if the document does not parse back to the entry.
    """
    entry = server_entry(request)
    host = request.host
    if host.format == "toml":
        text = toml_table(request.name, entry, host.servers_key)
    else:
        text = json.dumps({host.servers_key: {request.name: entry}}, indent=2, ensure_ascii=False) + "\n"
    validate(text, host, request.name, entry)
    return text


def parse(text: str, host: Host) -> dict[str, Any]:
    """Parse a host document.

    Raises:
        ValueError: the text is not a valid document of the host's format (or not an object).
    """
    if host.format == "toml":
        return tomllib.loads(text)
    document = json.loads(text)
    if not isinstance(document, dict):
        raise ValueError("the top level is not an object")
    return document


def validate(text: str, host: Host, name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """Check that ``text`` parses in the host's format and holds exactly ``entry`` under ``name``.

    Returns:
        The parsed document.

    Raises:
        InternalError: ``host_config_invalid`` otherwise (a bug in this module).
    """
    try:
        document = parse(text, host)
        found = document.get(host.servers_key, {}).get(name)
    except (ValueError, AttributeError) as exc:
        raise InternalError(f"the generated {host.title} configuration does not parse ({type(exc).__name__})",
                            code="host_config_invalid") from exc
    if found != dict(entry):
        raise InternalError(f"the generated {host.title} configuration does not hold the entry",
                            code="host_config_invalid")
    return document


# --- merging into an existing project file ------------------------------------------------------


def merge(existing: str | None, request: Request) -> str:
    """``existing`` (the host's project file, or None) with anvil's entry added or replaced.

    Everything else is kept: other servers and settings, and for TOML the text itself (comments
    and layout), since only the lines of anvil's own table are replaced.

    Raises:
        Refused: ``host_config_unreadable`` when the existing file does not parse (comments in a
            JSON file, say): nothing is written, and the message says to add the entry by hand.
        InternalError: ``host_config_invalid`` if the result fails validation.
    """
    host, entry = request.host, server_entry(request)
    before: dict[str, Any] = {}
    if existing is not None and existing.strip():
        try:
            before = parse(existing, host)
        except ValueError:
            raise Refused(f"{host.project_file} is not plain {host.format.upper()} (comments or a syntax error?), "
                          "so it was left alone: add the printed entry by hand", code="host_config_unreadable") \
                from None
        servers = before.get(host.servers_key, {})
        if not isinstance(servers, dict):
            raise Refused(f"{host.project_file}: '{host.servers_key}' is not a table of servers; add the printed "
                          "entry by hand", code="host_config_unreadable")
    if host.format == "toml":
        text = _merge_toml(existing or "", request.name, entry, host.servers_key)
        try:
            tomllib.loads(text)
        except ValueError:  # the entry was written another way (an inline table, dotted keys)
            raise Refused(f"{host.project_file} defines '{request.name}' in a form this command does not rewrite "
                          "(an inline table or dotted keys), so it was left alone: edit that entry by hand",
                          code="host_config_unreadable") from None
    else:
        document = {**before, host.servers_key: {**before.get(host.servers_key, {}), request.name: entry}}
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    after = validate(text, host, request.name, entry)
    _check_kept(before, after, host, request.name)
    return text


def _merge_toml(existing: str, name: str, entry: Mapping[str, Any], servers_key: str) -> str:
    """Replace the lines of ``[servers_key.name]`` (and its sub-tables) or append the table."""
    header = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]\s*(#.*)?$")
    own = {f"{servers_key}.{name}", f'{servers_key}."{name}"'}
    kept: list[str] = []
    skipping = False
    for line in existing.splitlines():
        match = header.match(line)
        if match and not line.lstrip().startswith("[["):
            table = re.sub(r"\s*\.\s*", ".", match.group(1))
            skipping = table in own or any(table.startswith(prefix + ".") for prefix in own)
        if not skipping:
            kept.append(line)
    body = "\n".join(kept).rstrip("\n")
    return (body + "\n\n" if body else "") + toml_table(name, entry, servers_key)


def _check_kept(before: dict[str, Any], after: dict[str, Any], host: Host, name: str) -> None:
    """Everything but anvil's entry must be unchanged by a merge."""
    def without_entry(document: dict[str, Any]) -> dict[str, Any]:
        return {**document, host.servers_key: {k: v for k, v in document.get(host.servers_key, {}).items()
                                               if k != name}}

    if without_entry(before) != without_entry(after):
        raise InternalError(f"merging into {host.project_file} would change other settings", code="host_config_invalid")


def write_file(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all (through a temporary file beside it), making its folders.

    Raises:
        OSError: the file cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".anvil-tmp")
    temporary.write_bytes(data)
    temporary.replace(path)


def write(root: Path, request: Request) -> tuple[Path, int]:
    """Merge anvil's entry into the host's project file under ``root`` (created if missing).

    Returns:
        The file written and how many other servers it keeps.

    Raises:
        Refused: the existing file cannot be parsed (nothing is written).
        OSError: the file cannot be read or written.
    """
    path = root / request.host.project_file
    text = merge(path.read_text(encoding="utf-8") if path.is_file() else None, request)
    write_file(path, text.encode("utf-8"))
    others = [key for key in parse(text, request.host).get(request.host.servers_key, {}) if key != request.name]
    return path, len(others)
