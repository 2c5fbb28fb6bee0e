"""Commands the CLI hands back for pasting, made to work on the route the call took.

An operation's result names the next commands of a claim (its ``continuation``, the work packet's
"Next commands", a refusal's ``next_commands``) without knowing how the caller reached it: the
server cannot know the URL a client used or the variable its token is in. The CLI does, so before
a result is printed (``--json`` or human), each ``anvil`` command in it gets

- the route: ``--mcp TARGET`` and ``--mcp-token-env NAME`` of this call (the variable's name,
  never its value), placed before a ``--`` so a proved command stays untouched;
- no ``--actor`` when a token says who the caller is (the server reported the authenticated
  caller), since a token's identity is the only one it may act as;
- the directory it must run in: the claim's tree for a git-bound claim (the server's ``cd``),
  else the directory this call ran in.

A direct call's commands get no route words; their ``cd`` is filled in all the same.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from anvil.mcp.target import McpTarget

NEXT_COMMANDS = "## Next commands"


@dataclass(frozen=True, slots=True)
class Paste:
    """How commands printed for this call must read: its route, where it ran, who a token said it is."""

    route: McpTarget | None
    cwd: str
    token_actor: str | None = None  # the caller a per-agent token authenticated (None: no token said who)

    def route_words(self) -> list[str]:
        """``--mcp TARGET [--mcp-token-env NAME]`` of this call (nothing when direct)."""
        if self.route is None:
            return []
        if self.route.kind == "stdio":
            return ["--mcp", "stdio"]
        target = f"sse:{self.route.url}" if self.route.kind == "sse" else str(self.route.url)
        return ["--mcp", target, *(["--mcp-token-env", self.route.token_env] if self.route.token_env else [])]

    def argv(self, argv: list[str]) -> list[str]:
        """``argv`` as it works pasted after this call: an ``anvil`` command gets the route (before
        any ``--``) and loses ``--actor`` when a token says who; any other command is left alone."""
        if argv[:1] != ["anvil"]:
            return list(argv)
        cut = argv.index("--") if "--" in argv else len(argv)
        head, tail = list(argv[:cut]), list(argv[cut:])
        if self.token_actor is not None:
            kept: list[str] = []
            skip = False
            for word in head:
                if skip:
                    skip = False
                elif word == "--actor":
                    skip = True
                elif not word.startswith("--actor="):
                    kept.append(word)
            head = kept
        present = set(head)
        extra = [] if "--mcp" in present else self.route_words()
        return [*head, *extra, *tail]

    def line(self, text: str) -> str:
        """One shell line of commands joined by ``&&`` or ``;``, each ``anvil`` command adapted."""
        out = []
        for separator, part in _split_line(text):
            stripped = part.strip()
            try:
                words = shlex.split(stripped)
            except ValueError:
                out.append(separator + part)
                continue
            if words[:1] == ["anvil"]:
                comment = ""
                if "#" in words:  # a trailing comment stays a comment
                    at = words.index("#")
                    comment = "  # " + " ".join(words[at + 1:])
                    words = words[:at]
                lead = part[:len(part) - len(part.lstrip())]
                out.append(f"{separator}{lead}{shlex.join(self.argv(words))}{comment}")
            else:
                out.append(separator + part)
        return "".join(out)

    def directory(self, given: str | None) -> str:
        """Where a claim's commands run: the claim's tree when it has one, else this call's directory."""
        return given or self.cwd


def _split_line(text: str) -> list[tuple[str, str]]:
    """``a && b; c`` as ``[("", "a "), ("&&", " b"), (";", " c")]`` (separators outside quotes only)."""
    parts: list[tuple[str, str]] = []
    separator, current, quote = "", "", ""
    i = 0
    while i < len(text):
        char = text[i]
        if quote:
            current += char
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
            current += char
        elif text.startswith("&&", i) or char == ";":
            parts.append((separator, current))
            separator = "&&" if char == "&" else ";"
            current = ""
            i += 2 if char == "&" else 1
            continue
        else:
            current += char
        i += 1
    parts.append((separator, current))
    return parts


def continuation(steps: Mapping[str, Any], paste: Paste) -> dict[str, Any]:
    """A claim's continuation with every command adapted to ``paste`` and its directory filled in."""
    out = dict(steps)
    out["cd"] = paste.directory(steps.get("cd"))
    out["prove"] = [{**step, "argv": paste.argv(step["argv"])} for step in steps.get("prove") or []]
    for key in ("submit", "renew"):
        if steps.get(key):
            out[key] = paste.argv(steps[key])
    if steps.get("attest_progress"):
        out["attest_progress"] = [paste.argv(argv) for argv in steps["attest_progress"]]
    return out


def _claim(claim: Any, paste: Paste) -> Any:
    if isinstance(claim, dict) and isinstance(claim.get("continuation"), dict):
        return {**claim, "continuation": continuation(claim["continuation"], paste)}
    return claim


def packet_markdown(text: str, paste: Paste) -> str:
    """A work packet's markdown with its "Next commands" block adapted (a ``cd`` line first)."""
    lines = text.split("\n")
    try:
        start = lines.index(NEXT_COMMANDS)
    except ValueError:
        return text
    out = lines[:start + 1]
    inside = False
    for line in lines[start + 1:]:
        if not inside and line == "```bash":
            inside = True
            out.append(line)
            continue
        if inside and line == "```":
            inside = False
            if not any(seen.startswith("cd ") for seen in out[start:]):
                at = out.index("```bash", start) + 1
                out.insert(at, f"cd {shlex.quote(paste.cwd)}")
        out.append(paste.line(line) if inside and not line.startswith("cd ") else line)
    return "\n".join(out)


def adapt_result(op_name: str, result: dict[str, Any], paste: Paste) -> dict[str, Any]:
    """``result`` of ``op_name`` with the commands it names made to work pasted after this call."""
    if op_name == "claim_task":
        return _claim(result, paste)
    if op_name in ("claim_next_task", "get_task"):
        return {**result, "claim": _claim(result.get("claim"), paste)}
    if op_name == "generate_work_packet":
        content = result.get("content")
        if isinstance(content, str):
            return {**result, "content": packet_markdown(content, paste)}
        if isinstance(content, dict):
            return {**result, "content": {**content, "claim": _claim(content.get("claim"), paste)}}
    return result


def token_actor(result: Mapping[str, Any], reported: str | None) -> str | None:
    """Who a token said the caller is: the server's report of the call (a per-agent token), or a
    write's ``actor_identity`` when it says a token authenticated it."""
    identity = result.get("actor_identity")
    if isinstance(identity, dict) and identity.get("authenticated") is True and identity.get("how") == "token":
        return str(identity.get("actor"))
    return reported


def call_directory(cwd: str, given: Any) -> str:
    """The directory a call ran in: its ``cwd`` input (relative to the process's), or the process's."""
    return os.path.normpath(os.path.join(cwd, given)) if isinstance(given, str) and given else cwd
