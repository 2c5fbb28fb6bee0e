"""What a successful tool result carries: the structured document a model reads, and its text copy.

Hosts such as Claude Code, VS Code and Copilot hand a model the ``structuredContent`` of a result
and show people its text; others hand the model the text. Both are paid for on every call, so:

* **structured content, compact** (the default): the operation's output without what says nothing:
  nulls, empty lists and empty objects are left out (every output schema lists its properties without ``required``,
  so an absent field reads as null or empty), ``dry_run`` only when true, ``actor_identity`` only
  when it tells the caller something it does not know (see :func:`tells_the_caller`), no identifier
  that repeats an argument of the call unchanged (:data:`ECHOED_INPUTS`), and a
  claim's ``continuation`` as the list of its command lines, in order, instead of argv arrays.
* **text, short**: a line or two in words (:mod:`anvil.mcp.rendering`) instead of a second copy of
  the document.

A host whose model reads the text asks for the JSON text instead: ``ANVIL_MCP_TEXT=json`` in the
server's environment (for a stdio server, the ``env`` of the host's MCP configuration), or
``_meta: {"anvil/text": "json"}`` on one ``tools/call``. The anvil CLI, which renders the
operation's complete document on every route, asks for it with ``_meta: {"anvil/result": "full"}``:
the output exactly as the direct route returns it, with its compact JSON as text (the form every
result had before issue 20); ``ANVIL_MCP_RESULT=full`` gives every caller that form (a client
written against the reference's result shape). Errors are not shaped: their text is always the
JSON error document.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import Any

from anvil.engine.identity import name_key

TEXT_ENV = "ANVIL_MCP_TEXT"
"""The server's text copy: ``human`` (the default) or ``json`` (the compact document as JSON)."""
TEXT_META = "anvil/text"
"""A ``tools/call`` ``_meta`` key choosing the text copy of that one result (``human`` or ``json``)."""
RESULT_META = "anvil/result"
"""A ``tools/call`` ``_meta`` key: ``full`` asks for the complete document (the anvil CLI sends it),
``compact`` for the compact one."""
RESULT_ENV = "ANVIL_MCP_RESULT"
"""``full`` makes every result of the server the complete document (for clients written against the
reference's result shape); anything else: compact."""
RESULT_FORMS = ("full", "compact")
TEXT_FORMS = ("human", "json")
ACTING_INPUTS = ("actor", "claimed_by", "reviewer")
ECHOED_INPUTS = ("task_id", "generation", "claim_id", "bundle_id", "command")
"""Identifiers a result repeats from its call: left out when they are exactly what the call sent."""
"""The inputs a caller names who acts with: a result need not tell it back."""


def text_form(meta: Mapping[str, Any] | None, env: Mapping[str, str] | None = None) -> str:
    """The text copy a call asked for: its ``_meta`` choice, else ``ANVIL_MCP_TEXT``, else human."""
    asked = (meta or {}).get(TEXT_META)
    if isinstance(asked, str) and asked.strip().lower() in TEXT_FORMS:
        return asked.strip().lower()
    configured = (os.environ if env is None else env).get(TEXT_ENV, "").strip().lower()
    return configured if configured in TEXT_FORMS else "human"


def wants_full(meta: Mapping[str, Any] | None, env: Mapping[str, str] | None = None) -> bool:
    """Whether a call gets the complete document: its ``_meta`` ``anvil/result`` (``full`` or
    ``compact``), else ``ANVIL_MCP_RESULT`` (``full``: every result whole), else compact."""
    asked = (meta or {}).get(RESULT_META)
    if asked in RESULT_FORMS:
        return asked == "full"
    return (os.environ if env is None else env).get(RESULT_ENV, "").strip().lower() == "full"


def tells_the_caller(identity: Mapping[str, Any], arguments: Mapping[str, Any]) -> bool:
    """Whether ``actor_identity`` says something the caller does not know.

    It does not when the caller named the actor itself (``actor``, ``claimed_by`` or ``reviewer``)
    or when its per-agent token did (the caller holds the token; the result's ``_meta`` names who it
    stands for). It does when the server chose the name: from its own ``ANVIL_ACTOR``, or the default.
    """
    if identity.get("how") == "token":
        return False
    actor = identity.get("actor")
    named = [arguments.get(key) for key in ACTING_INPUTS]
    return not any(isinstance(name, str) and isinstance(actor, str) and name_key(name) == name_key(actor)
                   for name in named)


def _without_actor(argv: list[str], actor: str | None) -> list[str]:
    """``argv`` without ``--actor ACTOR`` (before any ``--``) when a token names ``actor`` anyway."""
    if actor is None or argv[:1] != ["anvil"]:
        return argv
    cut = argv.index("--") if "--" in argv else len(argv)
    head = argv[:cut]
    for at in range(len(head) - 1):
        if head[at] == "--actor" and name_key(head[at + 1]) == name_key(actor):
            return [*head[:at], *head[at + 2:], *argv[cut:]]
    return argv


def continuation_lines(steps: Mapping[str, Any], token_actor: str | None = None) -> list[str]:
    """A claim's continuation as command lines in the order they run: ``cd``, each proof, the
    attestation and progress report, the commit, the submission, then the heartbeat (``renew``);
    without ``--actor`` when the caller's token (``token_actor``) says who acts."""
    def line(argv: list[str]) -> str:
        return shlex.join(_without_actor(list(argv), token_actor))

    lines = [f"cd {shlex.quote(steps['cd'])}"] if steps.get("cd") else []
    lines += [line(step["argv"]) for step in steps.get("prove") or [] if step.get("argv")]
    lines += [line(argv) for argv in steps.get("attest_progress") or []]
    for key in ("commit", "submit", "renew"):
        if steps.get(key):
            lines.append(line(steps[key]))
    lines += [f"# not a runnable command, prove it another way: {entry}" for entry in steps.get("unprovable") or []]
    return lines


def _is_continuation(key: str, value: Any) -> bool:
    return key == "continuation" and isinstance(value, dict) and "submit" in value and "prove" in value


def _without_nothing(value: Any, token_actor: str | None) -> Any:
    """``value`` with every null, empty list and empty object left out of its objects (arrays keep their
    items), and each continuation as its command lines."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if _is_continuation(key, item):
                out[key] = continuation_lines(item, token_actor)
                continue
            item = _without_nothing(item, token_actor)
            if item is None or item == [] or item == {}:
                continue
            out[key] = item
        return out
    if isinstance(value, list):
        return [_without_nothing(item, token_actor) for item in value]
    return value


def compact(output: Mapping[str, Any], arguments: Mapping[str, Any], token_actor: str | None = None
            ) -> dict[str, Any]:
    """The structured content a model reads of ``output``, the result of a call with ``arguments`` (by
    the caller a per-agent token authenticated as ``token_actor``, if one did)."""
    document = dict(output)
    if document.get("dry_run") is False:
        del document["dry_run"]
    identity = document.get("actor_identity")
    if isinstance(identity, dict):
        if tells_the_caller(identity, arguments):
            document["actor_identity"] = {k: v for k, v in identity.items() if k != "notice"}
        else:
            del document["actor_identity"]
    for key in ECHOED_INPUTS:
        if key in document and document[key] == arguments.get(key) and not isinstance(document[key], bool):
            del document[key]  # an echo of the call: the caller sent it
    shaped: dict[str, Any] = _without_nothing(document, token_actor)
    return shaped
