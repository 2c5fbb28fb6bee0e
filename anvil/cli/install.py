"""``anvil install HARNESS [--write] [--rollback]``: put anvil's skills and its MCP server entry where an
agent harness reads them, in the project. A CLI-only command: it is not an operation and has no MCP tool.

A dry run by default: every file the install would change is listed with its diff (a new skill file
by its size). ``--write`` first copies each file it changes into a backup under the user's anvil
home (with a manifest of which files did not exist), then writes; ``--rollback`` puts every file
back byte for byte and removes those the install created. A second ``--write`` keeps the first
backup, so a rollback always returns to the files as they were before anvil touched them.

Where each harness reads (project scope, from the harnesses' documentation):

* claude-code: skills in ``.claude/skills/``, servers in ``.mcp.json``;
* codex: skills in ``.agents/skills/``, servers in ``.codex/config.toml``, and a marked block in
  ``AGENTS.md`` naming the skills (removed by ``--rollback``, or by deleting the marked lines);
* gemini: ``.gemini/skills/`` and ``.gemini/settings.json``;
* cursor: ``.cursor/skills/`` and ``.cursor/mcp.json``;
* vscode (GitHub Copilot): ``.github/skills/`` and ``.vscode/mcp.json``.

With ``--user`` the same go to the user's own files instead (:data:`USER_FILES`: ``~/.claude/skills``
and ``~/.claude.json``; ``~/.agents/skills``, ``$CODEX_HOME/config.toml`` and ``$CODEX_HOME/AGENTS.md``;
``~/.gemini/``; ``~/.cursor/``; ``~/.copilot/skills`` and VS Code's user ``mcp.json``), and the server
finds the project from the directory the host starts it in.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anvil.cli.host_config import HOSTS, Request, check_request, merge, server_command, write_file
from anvil.engine.errors import InternalError, NotFound, Refused, UsageError

if TYPE_CHECKING:
    import typer

SKILL_DIRS = {"claude-code": ".claude/skills", "codex": ".agents/skills", "gemini": ".gemini/skills",
              "cursor": ".cursor/skills", "vscode": ".github/skills"}
HARNESSES = tuple(SKILL_DIRS)
AGENTS_FILE = "AGENTS.md"
BEGIN = "<!-- BEGIN anvil (written by `anvil install codex`; `anvil install codex --rollback` removes it) -->"
END = "<!-- END anvil -->"
MANIFEST = "manifest.json"
USER_FILES = {"claude-code": (".claude/skills", ".claude.json", None),
              "codex": (".agents/skills", ".codex/config.toml", ".codex/AGENTS.md"),
              "gemini": (".gemini/skills", ".gemini/settings.json", None),
              "cursor": (".cursor/skills", ".cursor/mcp.json", None),
              "vscode": (".copilot/skills", ".config/Code/User/mcp.json", None)}
"""With ``--user``: where each harness reads personal skills, servers and instructions, under the home."""
Harness = Enum("Harness", {name.replace("-", "_"): name for name in HARNESSES}, type=str)  # type: ignore[misc]


@dataclass(frozen=True, slots=True)
class Change:
    """One file the install writes: its path under the project, and its bytes before (None: absent) and after."""

    path: str
    before: bytes | None
    after: bytes

    @property
    def action(self) -> str:
        return "create" if self.before is None else ("unchanged" if self.before == self.after else "update")


def shipped_skills() -> dict[str, bytes]:
    """The skills in this package: name -> SKILL.md bytes."""
    base = Path(__file__).resolve().parents[1] / "skills"
    return {path.parent.name: path.read_bytes() for path in sorted(base.glob("*/SKILL.md"))}


def agents_block(skill_dir: str, skills: Mapping[str, bytes]) -> str:
    """The marked block of ``AGENTS.md`` that points Codex at anvil's skills."""
    lines = [BEGIN, "## anvil", "",
             "This project tracks its work in anvil (PRD to ready tasks, claims, proofs, reviews). Follow the "
             f"skill that fits the task, in `{skill_dir}/`:", ""]
    lines += [f"- `{name}`: `{skill_dir}/{name}/SKILL.md`" for name in skills]
    lines += ["", "anvil's MCP server is configured in Codex's `config.toml` as `anvil`.", END]
    return "\n".join(lines) + "\n"


BEGIN_PREFIX = "<!-- BEGIN anvil"
"""How a BEGIN marker starts, whatever install wrote its words (they may change between versions)."""


def with_block(existing: str | None, block: str) -> str:
    """``existing`` AGENTS.md text with the marked block replaced, or appended after a blank line.

    Raises:
        Refused: ``host_config_unreadable``: a BEGIN marker without an END marker after it, or more
            than one block (the file was edited by hand; which text is anvil's cannot be told).
    """
    text = existing or ""
    start = text.find(BEGIN_PREFIX)
    if start == -1:
        return (text.rstrip("\n") + "\n\n" if text.strip() else "") + block
    end = text.find(END, start)
    if end == -1 or text.find(BEGIN_PREFIX, start + 1, end) != -1 or text.find(BEGIN_PREFIX, end) != -1:
        raise Refused("AGENTS.md holds a damaged anvil block (a BEGIN marker without its END marker, or two "
                      "blocks), so it was left alone: delete the block by hand (from '<!-- BEGIN anvil' to "
                      "'<!-- END anvil -->') and run the install again", code="host_config_unreadable")
    tail = text[end + len(END):]
    return text[:start] + block + (tail[1:] if tail.startswith("\n") else tail)


@dataclass(frozen=True, slots=True)
class Locations:
    """Where an install writes: a base directory and, under it, the skills folder, the MCP file and
    (Codex) the instructions file that gets the marked block."""

    scope: str
    base: Path
    skills: str
    mcp: str
    agents: str | None


def locations(harness: str, scope: str, root: Path, env: Mapping[str, str]) -> Locations:
    """The files of ``harness`` in the project at ``root`` (``project``) or the user's home (``user``).

    Raises:
        UsageError: an unknown harness, or ``--user`` without a home directory.
    """
    if harness not in SKILL_DIRS:
        raise UsageError(f"unknown harness {harness!r} (one of: {', '.join(HARNESSES)})", code="usage")
    if scope == "project":
        return Locations(scope, root, SKILL_DIRS[harness], HOSTS[harness].project_file,
                         AGENTS_FILE if harness == "codex" else None)
    home = env.get("HOME", "").strip()
    if not home:
        raise UsageError("--user needs HOME: the harnesses read personal settings from the home directory",
                         code="usage")
    base = Path(home)
    skills, mcp, agents = USER_FILES[harness]
    if harness == "codex" and env.get("CODEX_HOME", "").strip():  # Codex's own home, wherever it is
        codex_home = Path(env["CODEX_HOME"]).expanduser()
        mcp, agents = str(codex_home / "config.toml"), str(codex_home / "AGENTS.md")
    if harness == "vscode":
        mcp = {"darwin": "Library/Application Support/Code/User/mcp.json",
               "win32": "AppData/Roaming/Code/User/mcp.json"}.get(sys.platform, mcp)
        if sys.platform.startswith("linux") and env.get("XDG_CONFIG_HOME", "").strip():
            mcp = str(Path(env["XDG_CONFIG_HOME"]) / "Code" / "User" / "mcp.json")
    return Locations(scope, base, skills, mcp, agents)


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def plan(harness: str, where: Locations, variables: Mapping[str, str], command: tuple[str, ...] | None = None,
         name: str = "anvil") -> list[Change]:
    """Every file ``anvil install HARNESS`` writes in ``where``, in the order it writes them.

    Raises:
        UsageError: a bad server name.
        Refused: ``host_config_unreadable`` when the harness's MCP file does not parse.
    """
    host = HOSTS[harness]
    request = Request(host, name, None, None, dict(variables), command or server_command())
    check_request(request)
    skills = shipped_skills()
    base = where.base
    changes = [Change(f"{where.skills}/{skill}/SKILL.md", _read(base / where.skills / skill / "SKILL.md"), text)
               for skill, text in skills.items()]
    before = _read(base / where.mcp)
    merged = merge(before.decode("utf-8") if before is not None else None, request)
    changes.append(Change(where.mcp, before, merged.encode("utf-8")))
    if where.agents is not None:
        agents = _read(base / where.agents)
        shown = where.skills if where.scope == "project" else f"~/{where.skills}"
        text = with_block(agents.decode("utf-8") if agents is not None else None, agents_block(shown, skills))
        changes.append(Change(where.agents, agents, text.encode("utf-8")))
    return changes


def diff(change: Change) -> str:
    """A unified diff of the change (a new skill file is summarised by its size)."""
    if change.action == "unchanged":
        return ""
    after = change.after.decode("utf-8")
    if change.before is None and change.path.endswith("SKILL.md"):
        return f"new file, {len(after.splitlines())} lines, {len(change.after)} bytes\n"
    before = (change.before or b"").decode("utf-8", "replace")
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile="/dev/null" if change.before is None else f"a/{change.path}",
                                        tofile=f"b/{change.path}"))


def backup_dir(env: Mapping[str, str], where: Locations, harness: str) -> Path:
    """Where the backups of ``harness``'s install go: the user's anvil home (never the project), one
    folder per project (or ``user`` for the home's files)."""
    from anvil.engine.storage.paths import user_data_home, workspace_key

    key = workspace_key(where.base) if where.scope == "project" else "user"
    return user_data_home(env) / "installs" / key / harness


def write(changes: list[Change], root: Path, backups: Path) -> None:
    """Back up every file about to change (once per install), then write the changes.

    Raises:
        OSError: a file or backup cannot be written.
    """
    manifest_path = backups / MANIFEST
    manifest: dict[str, Any] = json.loads(manifest_path.read_text("utf-8")) if manifest_path.is_file() else \
        {"root": str(root), "files": {}}
    files: dict[str, Any] = manifest["files"]
    for change in changes:
        if change.action != "unchanged" and change.path not in files:  # a rollback restores the first backup
            entry: dict[str, Any] = {"existed": change.before is not None, "created_dirs": []}
            if change.before is not None:
                entry["backup"] = hashlib.sha256(change.path.encode("utf-8")).hexdigest()[:24]
                write_file(backups / "files" / entry["backup"], change.before)
            else:
                parent = (root / change.path).parent
                while parent != parent.parent and not parent.exists():
                    entry["created_dirs"].append(str(parent))
                    parent = parent.parent
            files[change.path] = entry
        if change.path in files:  # what the install wrote last: a rollback says when a file was edited since
            files[change.path]["written"] = hashlib.sha256(change.after).hexdigest()
    write_file(manifest_path, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    for change in changes:
        if change.action != "unchanged":
            write_file(root / change.path, change.after)


def rollback(root: Path, backups: Path) -> list[dict[str, Any]]:
    """Restore every file the install changed, byte for byte, and remove those it created; a file
    edited since the install (by the harness, say) is restored too, and said to be (``edited``).

    Raises:
        NotFound: ``install_not_found`` when there is no install to roll back.
        OSError: a file cannot be restored.
    """
    manifest_path = backups / MANIFEST
    if not manifest_path.is_file():
        raise NotFound("nothing to roll back: no `anvil install --write` of this harness in this project",
                       code="install_not_found")
    files: dict[str, Any] = json.loads(manifest_path.read_text("utf-8"))["files"]
    done: list[dict[str, Any]] = []
    for relative, entry in sorted(files.items()):
        path = root / relative
        now = _read(path)
        edited = now is not None and hashlib.sha256(now).hexdigest() != entry.get("written")
        if entry["existed"]:
            write_file(path, (backups / "files" / entry["backup"]).read_bytes())
            done.append({"path": relative, "action": "restore", "edited": edited})
        else:
            if path.is_file():
                path.unlink()
            done.append({"path": relative, "action": "delete", "edited": edited})
            for made in entry["created_dirs"]:  # innermost first; only while empty
                try:
                    Path(made).rmdir()
                except OSError:
                    break
    import shutil

    shutil.rmtree(backups)
    return done


def install(harness: str, *, write_files: bool, roll_back: bool, layout: str | None, planning: bool,
            env: Mapping[str, str], cwd: str, user: bool = False) -> dict[str, Any]:
    """Plan (and with ``write_files`` make, or with ``roll_back`` undo) the install of ``harness``.

    With ``user`` the files are the user's own (under the home) instead of the project's; the server
    then finds the project from the directory the host starts it in.

    Raises:
        UsageError: an unknown harness, ``--write`` with ``--rollback``, or a bad ``--layout``.
        Refused: ``host_config_unreadable`` (the MCP file does not parse; nothing is written).
        NotFound: ``install_not_found`` (``--rollback`` with nothing installed).
        InternalError: ``install_write_failed`` when a file cannot be written or restored.
    """
    from anvil.cli.mcp_config import stdio_env
    from anvil.engine.storage.paths import project_root

    if write_files and roll_back:
        raise UsageError("--write and --rollback do not go together", code="conflicting_flags")
    where = locations(harness, "user" if user else "project", project_root(env, cwd), env)
    root = where.base
    backups = backup_dir(env, where, harness)
    result: dict[str, Any] = {"harness": harness, "scope": where.scope, "root": str(root), "mode": "dry_run",
                              "files": [], "backup": None, "notes": list(HOSTS[harness].notes) if not user else []}
    try:
        if roll_back:
            result.update(mode="rollback", files=rollback(root, backups))
            return result
        variables = stdio_env(env, cwd, layout, planning) if not user else stdio_env({}, "/", layout or "workspace",
                                                                                     planning)
        changes = plan(harness, where, variables)
        result["command"] = list(server_command())
        result["files"] = [{"path": c.path, "action": c.action, "diff": diff(c)} for c in changes]
        if write_files:
            write(changes, root, backups)
            result.update(mode="write", backup=str(backups))
    except OSError as exc:
        raise InternalError(f"could not write the install's files ({exc.strerror or type(exc).__name__}); a "
                            "rollback restores what was written", code="install_write_failed") from None
    return result


def render(result: Mapping[str, Any]) -> list[str]:
    """The human form of :func:`install`'s result."""
    mode = result["mode"]
    if mode == "rollback":
        return [*(f"{f['action']}d {f['path']}" + (" (edited after the install: those edits are undone too)"
                                                   if f["edited"] else "") for f in result["files"]),
                f"rolled back the {result['harness']} install in {result['root']}"]
    out: list[str] = []
    for item in result["files"]:
        verb = {"create": "create", "update": "update", "unchanged": "keep"}[item["action"]]
        out.append(f"{verb if mode == 'dry_run' else verb + 'd' if verb != 'keep' else 'kept'} {item['path']}")
        if item["diff"] and mode == "dry_run":
            out += ["    " + line for line in item["diff"].rstrip("\n").splitlines()]
    again = f"`anvil install {result['harness']}{' --user' if result['scope'] == 'user' else ''}"
    out.append(f"dry run: nothing written; run {again} --write` to write these files (each is backed up first)"
               if mode == "dry_run" else f"backed up to {result['backup']}; {again} --rollback` restores them")
    return out + [f"# {note}" for note in result["notes"]]


def register(app: typer.Typer, group: Callable[[str, str | None], typer.Typer], panel: str) -> None:
    """Add the ``install`` command to ``app`` (a Typer app)."""
    import typer
    from typer.core import TyperCommand

    from anvil.cli.app import option, with_panels
    from anvil.ops import cliflags as flags

    project = [(name, f"{SKILL_DIRS[name]}/ and {HOSTS[name].project_file}" + (
        " and a marked block in AGENTS.md" if name == "codex" else "")) for name in SKILL_DIRS]
    personal = [(name, ", ".join(f"~/{p}" for p in USER_FILES[name] if p)) for name in SKILL_DIRS]
    examples = [("anvil install claude-code", "what it would write, as diffs"),
                ("anvil install codex --write", "back up, then write"),
                ("anvil install codex --rollback", "put every file back")]
    cls = with_panels(TyperCommand, [("Where it writes (in the project)", project),
                                      ("With --user (in the home; Codex follows CODEX_HOME)", personal),
                                      ("Examples", examples)])

    @app.command(name="install", rich_help_panel=panel, cls=cls, help=(
        "Put anvil's skills and its MCP server entry where HARNESS reads them in this project. A dry run by "
        "default: prints every file it would change, with a diff. --write backs each file up, then writes; "
        "--rollback restores them byte for byte."),
        short_help="Install anvil's skills and MCP server into an agent harness (dry run by default).")
    def command(
        harness: Harness = typer.Argument(..., help="The harness: " + ", ".join(HARNESSES) + ".",  # type: ignore[valid-type]
                                               metavar="HARNESS", show_default=False),
        write_files: bool = typer.Option(False, "--write", help="Back up, then write the files."),
        roll_back: bool = typer.Option(False, "--rollback", help="Restore the files of the last --write."),
        user: bool = typer.Option(False, "--user", help="The user's own files (under the home) instead of the "
                                                        "project's."),
        layout: str | None = option(flags.LAYOUT, None), planning: bool = option(flags.PLANNING, None),
        json_: bool = option(flags.JSON),
    ) -> int:
        from anvil.cli.output import emit

        emit(install(harness.value, write_files=write_files, roll_back=roll_back,  # type: ignore[attr-defined]
                     layout=layout, planning=planning, env=os.environ, cwd=os.getcwd(), user=user), json_, render)
        return 0
