"""``anvil --help``, group help and command help, rendered from the registry as plain text.

One renderer for every help screen, fitted to the terminal like the rest of the human output
(:mod:`anvil.cli.tables`): flags that take no value show none, repeatable flags say so, arguments
are written as their names (``TASK_ID``), and the text speaks of commands (``anvil show``) rather
than MCP tool names, which appear once, in the last line of a command's help.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from anvil.cli.tables import Screen, clean, screen_for, wrap
from anvil.ops.cliargs import cli_argv_for
from anvil.ops.contract import ParamSpec
from anvil.ops.registry import Operation, all_operations
from anvil.ops.specgen import op_spec

SUMMARY = "anvil: the system of record for teams of AI coding agents."
GROUP_HELP = {"prd": "Parse, assess and review the PRD.", "review": "Review planned tasks.",
              "bundle": "Plan, claim, review and deliver execution bundles (milestones of tasks)."}
SECTIONS = (("Set up and look around", "anvil.ops.handlers.project"),
            ("PRD and planning", "anvil.ops.handlers.planning"), ("Work on tasks", ""),
            ("Execution bundles", "anvil.ops.handlers.bundles"))
WORKFLOW = (
    ("export ANVIL_ACTOR=lead", "who you are (or --actor NAME)"),
    ("anvil init", "once per project"),
    ("anvil prd parse --file docs/prd.md", "docs/prd-format.md"),
    ("anvil prd review && anvil prd review --approve", "review, approve"),
    ("anvil plan && anvil score && anvil review tasks", "tasks become ready"),
    ("export ANVIL_ACTOR=agent-1", "an agent takes work"),
    ("anvil next", "the best task now"),
    ("anvil claim T001 --worktree", "note the generation; in git: a worktree"),
    ("git commit -am 'T001: ...'", "in git: the branch head is handed in"),
    ("anvil proof run T001 --generation 1 -- CMD", "prove each verification command"),
    ("anvil submit T001 --proof FILE --generation 1", "hand in the proofs for review"),
    ("ANVIL_ACTOR=runner-1 anvil verify-task T001", "someone else re-proves that commit"),
    ("ANVIL_ACTOR=lead anvil apply T001 --approve", "or --reject --reason"),
)
ENVIRONMENT = (
    ("ANVIL_ACTOR", "who acts when --actor is not given"),
    ("ANVIL_ROOT", "the project root (default: the git main worktree around the working directory)"),
    ("ANVIL_STATE_LAYOUT", "'local' keeps state in <project>/.anvil/"),
    ("ANVIL_MCP_TARGET", "run every command through MCP (stdio or a URL) unless --mcp says otherwise"),
    ("NO_COLOR", "plain text on a terminal too"),
)
METAVARS = {"actor": "NAME", "reviewer": "NAME", "claimed_by": "NAME", "expected_files": "PATH",
            "files_changed": "PATH", "proposed_files": "PATH", "file": "PATH", "commands_run": "COMMAND",
            "idempotency_key": "KEY", "cursor": "CURSOR", "lease_duration_seconds": "SECONDS",
            "extend_seconds": "SECONDS", "wait_seconds": "SECONDS", "notes": "TEXT", "reason": "TEXT",
            "detail": "TEXT", "description": "TEXT", "output_excerpt": "TEXT", "pr_url": "URL",
            "commit_sha": "SHA", "limit": "N", "generation": "N", "expected_revision": "N", "name": "TEXT"}
PATH_LISTS = frozenset({"expected_files", "files_changed", "proposed_files"})
CLI_ONLY = {"get_board": (("--watch", "On a terminal, stay on screen and redraw on every change (woken by the write "
                                      "that makes it, not by polling); piped, print once. Ctrl-C stops."),)}
"""Flags of the command line alone (not inputs of the operation)."""
COMMON = (("--json", "Print exactly one JSON document on stdout (errors too)."),
          ("--mcp [TARGET]", "Run through MCP: bare or 'stdio' spawns the local server; an http(s):// URL or "
                             "sse:<url> calls a deployed one."),
          ("--mcp-token-env NAME", "Name of the environment variable holding the bearer token."),
          ("-h, --help", "Show this help."))


def _screen() -> Screen:
    screen = screen_for()
    width = min(screen.width or 80, 100)
    return Screen(width, screen.color, screen.tty)


def command_words(op: Operation) -> str:
    return "anvil " + " ".join(op.cli_path)


def for_people(text: str, operations: Sequence[Operation]) -> str:
    """``text`` with MCP tool names replaced by the commands that run them (``get_task`` -> ``anvil show``)."""
    names = {op.name: command_words(op) for op in operations}
    return re.sub(r"\b[a-z]+(?:_[a-z]+)+\b", lambda m: names.get(m.group(0), m.group(0)), text)


def metavar(param: ParamSpec) -> str:
    if param.positional:
        return param.name.upper() + ("..." if param.is_list else "")
    if param.kind == "bool":
        return ""
    if param.kind == "pairs":
        return "SOURCE:TARGET"
    if param.choices:
        joined = "|".join(param.choices)
        return joined if len(joined) <= 32 else "VALUE"
    return METAVARS.get(param.name, {"int": "N", "float": "NUMBER"}.get(param.item or param.kind, "TEXT"))


def _option(param: ParamSpec) -> tuple[str, str]:
    """The left column (flag and value) and the description of one input."""
    if param.positional:
        left = metavar(param)
    elif param.kind == "bool" and param.off_flag:
        left = f"{param.flag} / {param.off_flag}"
    else:
        left = f"{param.flag} {metavar(param)}".rstrip()
    notes = [param.help.rstrip(".") + "." if param.help else ""]
    if param.choices and metavar(param) == "VALUE":
        notes.append(f"One of: {', '.join(param.choices)}.")
    if param.ge is not None or param.le is not None:
        low = "" if param.ge is None else f"{param.ge:g}"
        high = "" if param.le is None else f"{param.le:g}"
        notes.append(f"From {low} to {high}." if low and high else f"At least {low}." if low else f"At most {high}.")
    if param.required and not param.positional and param.name != "actor":
        notes.append("Required.")
    if param.kind == "bool" and param.off_flag and param.required:
        notes.append(f"Required: pass {param.flag} or {param.off_flag}.")
        notes.remove("Required.")
    elif param.default not in (None, "", [], False) and not param.positional:
        notes.append(f"Default: {param.default}.")
    if param.is_list and not param.positional:
        notes.append("Repeatable" + ("; a comma separates paths too (--file a.py,b.py)." if param.name in PATH_LISTS
                                     else "."))
    return left, " ".join(n for n in notes if n)


def _rows(rows: Sequence[tuple[str, str]], screen: Screen, indent: int = 2) -> list[str]:
    """Two-column help rows: the description beside the left column, or under it when space is short."""
    width = screen.width or 80
    left_width = min(max((len(left) for left, _ in rows), default=0), 28)
    out: list[str] = []
    for left, text in rows:
        room = width - indent - left_width - 2
        lead = " " * indent + screen.style(left, "bold")
        if len(left) > left_width or room < 30:
            out.append(lead)
            out.extend(" " * (indent + 6) + line for line in wrap(clean(text), max(width - indent - 6, 20)))
            continue
        lines = wrap(clean(text), room) or [""]
        out.append((lead + " " * (left_width - len(left) + 2) + lines[0]).rstrip())
        out.extend(" " * (indent + left_width + 2) + line for line in lines[1:])
    return out


def _commented(lines: Sequence[tuple[str, str]], screen: Screen) -> list[str]:
    """Command lines with their comments beside them, or above them when the line would not fit."""
    width = screen.width or 80
    left = max(len(command) for command, _ in lines)
    out: list[str] = []
    for command, comment in lines:
        if 2 + left + 2 + 2 + len(comment) <= width:
            out.append(f"  {command.ljust(left)}  {screen.style('# ' + comment, 'dim')}")
        else:
            out.append(f"  {screen.style('# ' + comment, 'dim')}")
            parts = wrap(command, width - 4) or [command]  # a long command continues with a shell backslash
            out += [f"  {part}" + (" \\" if index < len(parts) - 1 else "") for index, part in enumerate(parts)]
    return out


def _para(text: str, screen: Screen, indent: str = "") -> list[str]:
    return [indent + line for line in wrap(clean(text), (screen.width or 80) - len(indent))]


def main_help() -> str:
    """``anvil --help``: what anvil is, a first workflow, the commands, the environment, the exit codes."""
    from anvil.engine.error_codes import EXIT_CODES

    screen = _screen()
    operations = all_operations()
    out = [SUMMARY, "", screen.style("Usage:", "bold") + " anvil COMMAND [ARGS] [--json] [--mcp [TARGET]]",
           "       anvil COMMAND --help", "", screen.style("A first run:", "bold")]
    out += _commented(WORKFLOW, screen)
    for title, module in SECTIONS:
        chosen = [op for op in operations if op.handler.startswith(module + ":")] if module else \
            [op for op in operations if not any(op.handler.startswith(m + ":") for _, m in SECTIONS if m)]
        rows = [(" ".join(op.cli_path), for_people(first_sentence(op.description), operations)) for op in chosen]
        if not module:
            rows.append(("serve", "Run anvil's MCP server (stdio, or Streamable HTTP with --http)."))
            rows.append(("mcp-config", "Configure an MCP host (Claude Code, Codex, Cursor, VS Code, Gemini CLI)."))
            rows.append(("install", "Install anvil's skills and MCP server into an agent harness (dry run by "
                                    "default)."))
            rows.append(("proof run", "Run a verification command in the claim's tree; write a bound proof."))
            rows.append(("attest", "Write a progress attestation of the claim's commit and changed files."))
            rows.append(("keys generate", "Make an Ed25519 key to sign proofs (trust it with `trust add`)."))
            rows.append(("verify-task", "Re-prove a submission on its exact commit as a verifier; record verified "
                                        "proofs."))
            rows.append(("land", "Land approved work: merge onto the target, re-prove the merged tree, "
                                 "fast-forward."))
        out += ["", screen.style(f"{title}:", "bold"), *_rows(rows, screen)]
    out += ["", screen.style("Environment:", "bold"), *_rows(ENVIRONMENT, screen)]
    codes = ", ".join(f"{code.exit_code} {code.title}" for code in EXIT_CODES)
    out += ["", screen.style("Exit codes:", "bold"), *_para(codes + " (docs/errors.md lists every error code).",
                                                            screen, "  ")]
    return "\n".join(out) + "\n"


def first_sentence(text: str) -> str:
    head = text.split(". ")[0].rstrip(".")
    return head + "."


def group_help(path: tuple[str, ...]) -> str:
    screen = _screen()
    operations = all_operations()
    chosen = [op for op in operations if op.cli_path[:len(path)] == path]
    words = " ".join(path)
    out = [GROUP_HELP.get(path[-1], ""), "", screen.style("Usage:", "bold") + f" anvil {words} COMMAND [ARGS]", "",
           screen.style("Commands:", "bold")]
    out += _rows([(" ".join(op.cli_path[len(path):]), for_people(first_sentence(op.description), operations))
                  for op in chosen], screen)
    return "\n".join(out).lstrip("\n") + "\n"


def command_help(op: Operation) -> str:
    """``anvil COMMAND --help``: usage, what it does, arguments, options, examples, the MCP tool."""
    screen = _screen()
    operations = all_operations()
    spec = op_spec(op)
    positionals = [p for p in spec.params if p.positional]
    usage = " ".join([command_words(op), *(metavar(p) if p.required else f"[{metavar(p)}]" for p in positionals),
                      "[OPTIONS]"])
    lines = wrap(usage, (screen.width or 80) - 7) or [usage]
    out = [screen.style("Usage:", "bold") + " " + lines[0], *("       " + line for line in lines[1:]), ""]
    out += _para(for_people(op.cli_help or op.description, operations), screen)
    if op.cli_help:
        out += ["", *_para(for_people(op.description, operations), screen)]
    if positionals:
        out += ["", screen.style("Arguments:", "bold"), *_rows([_option(p) for p in positionals], screen)]
    own = [p for p in spec.params if not p.positional and not p.reserved]
    reserved = [p for p in spec.params if p.reserved]
    rows = [_option(p) for p in own]
    if op.quiet_field:
        rows.append(("-q, --quiet", "Print only the id; exit 3 when there is none."))
    rows.extend(CLI_ONLY.get(op.name, ()))
    if rows:
        out += ["", screen.style("Options:", "bold"), *_rows(rows, screen)]
    common = [_option(p) for p in reserved] + list(COMMON)
    out += ["", screen.style("Common options:", "bold"), *_rows(common, screen)]
    examples = [(" ".join(shlex.quote(a) for a in ["anvil", *cli_argv_for(spec, ex.input)]), ex.title)
                for ex in op.examples if ex.error is None]
    if examples:
        out += ["", screen.style("Examples:", "bold")]
        for command, title in examples:
            out += _para(f"# {title}", screen, "  ") + _para(command, screen, "  ")
    out += ["", f"MCP tool: {op.name} ({op.surface}, {op.effect})."]
    return "\n".join(out) + "\n"


def mcp_config_help() -> str:
    """``anvil mcp-config --help`` (a CLI-only command, not an operation)."""
    from anvil.cli.host_config import HOSTS

    screen = _screen()
    out = [screen.style("Usage:", "bold") + " anvil mcp-config CLIENT [OPTIONS]", ""]
    out += _para("Print the MCP configuration that connects CLIENT to anvil: the local stdio server (anvil serve) by "
                 "default, or a deployed server with --http URL --token-env NAME, where the token is referenced by "
                 "its variable's name and never written. Every document is parsed back in its format (JSON or "
                 "TOML) before it is shown. --write merges it into the client's project file in the project root, "
                 "keeping every other server and setting.", screen)
    out += ["", screen.style("Arguments:", "bold"),
            *_rows([("CLIENT", "; ".join(f"{name} ({host.project_file})" for name, host in HOSTS.items()) + ".")],
                   screen)]
    out += ["", screen.style("Options:", "bold"), *_rows([
        ("--http URL", "A deployed server's /mcp URL (default: the local stdio server)."),
        ("--token-env NAME", "Environment variable holding the bearer token (with --http)."),
        ("--name TEXT", "The server's name in the client's list. Default: anvil."),
        ("--write", "Merge into the client's project file (created if missing); a file that does not parse is "
                    "left alone (exit 5)."),
        ("--layout local|workspace", "The project's state layout; local adds ANVIL_STATE_LAYOUT=local to the "
                                     "server's environment. Default: found from the project (.anvil/state.db)."),
        ("--planning", "Start the stdio server with the planning tools listed (ANVIL_MCP_PLANNING=1)."),
        ("--json", "Print exactly one JSON document on stdout (errors too)."),
        ("-h, --help", "Show this help.")], screen)]
    out += ["", screen.style("Examples:", "bold")]
    out += _commented((("anvil mcp-config claude-code --write", "the local stdio server, in .mcp.json"),
                       ("anvil mcp-config codex --http https://anvil.internal:8765/mcp --token-env ANVIL_TOKEN",
                        "a deployed server")), screen)
    return "\n".join(out) + "\n"


def install_help() -> str:
    """``anvil install --help`` (a CLI-only command, not an operation)."""
    from anvil.cli.host_config import HOSTS
    from anvil.cli.install import SKILL_DIRS, USER_FILES

    screen = _screen()
    out = [screen.style("Usage:", "bold") + " anvil install HARNESS [--write | --rollback] [--user] [OPTIONS]", ""]
    out += _para("Put anvil's skills (Agent Skills: a folder with a SKILL.md per skill) and its MCP server entry "
                 "where HARNESS reads them in this project. The entry starts this install's own anvil by its "
                 "absolute path. A dry run by default: every file it would change is printed with its diff. "
                 "--write backs up each file it changes (under the user's anvil home), then writes; --rollback "
                 "restores them byte for byte and removes the files it created.", screen)
    rows = [(name, f"{SKILL_DIRS[name]}/ and {HOSTS[name].project_file}" + (" and a marked block in AGENTS.md"
                                                                           if name == "codex" else ""))
            for name in SKILL_DIRS]
    out += ["", screen.style("Arguments:", "bold"), *_rows([("HARNESS", ", ".join(SKILL_DIRS) + ".")], screen)]
    out += ["", screen.style("Where it writes (in the project):", "bold"), *_rows(rows, screen)]
    personal = [(name, ", ".join(f"~/{p}" for p in USER_FILES[name] if p)) for name in SKILL_DIRS]
    out += ["", screen.style("With --user (in the home; Codex follows CODEX_HOME):", "bold"), *_rows(personal, screen)]
    out += ["", screen.style("Options:", "bold"), *_rows([
        ("--write", "Back up every file it changes, then write them."),
        ("--rollback", "Restore every file of the last --write byte for byte; remove the files it created."),
        ("--user", "The user's own skills and settings (under the home) instead of the project's."),
        ("--layout local|workspace", "The project's state layout; local adds ANVIL_STATE_LAYOUT=local to the "
                                     "server's environment. Default: found from the project (.anvil/state.db)."),
        ("--planning", "Start the stdio server with the planning tools listed (ANVIL_MCP_PLANNING=1)."),
        ("--json", "Print exactly one JSON document on stdout (errors too)."),
        ("-h, --help", "Show this help.")], screen)]
    out += ["", screen.style("Examples:", "bold")]
    out += _commented((("anvil install claude-code", "what it would write, as diffs"),
                       ("anvil install codex --write", "back up, then write"),
                       ("anvil install codex --rollback", "put every file back")), screen)
    return "\n".join(out) + "\n"


def help_for(argv: Sequence[str]) -> str | None:
    """The help ``argv`` asks for (``anvil``, ``anvil prd``, ``anvil claim --help``...), or None when the
    words name no command or group."""
    words = [a for a in argv if not a.startswith("-")]
    if words[:1] == ["mcp-config"]:
        return mcp_config_help()
    if words[:1] == ["install"]:
        return install_help()
    operations = all_operations()
    best: Operation | None = None
    for op in operations:
        n = len(op.cli_path)
        if tuple(words[:n]) == op.cli_path and (best is None or n > len(best.cli_path)):
            best = op
    if best is not None:
        return command_help(best)
    if not words:
        return main_help()
    groups = {op.cli_path[:i] for op in operations for i in range(1, len(op.cli_path))}
    if (words[0],) in groups:
        return group_help((words[0],))
    return None
