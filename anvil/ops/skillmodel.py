"""The parts a shipped skill is written in (:mod:`anvil.ops.skillsrc`): command lines named by operation and
inputs, CLI-only command lines by their words, shell lines, and the skill itself. Rendered by
:mod:`anvil.ops.skillgen`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Op:
    """A command line of an operation: its name, inputs, and common flags (``--json``, ``--quiet``)."""

    op: str
    args: Mapping[str, Any] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    comment: str = ""


@dataclass(frozen=True, slots=True)
class Client:
    """A command line of a CLI-only command, as its words after ``anvil``."""

    words: tuple[str, ...]
    comment: str = ""


@dataclass(frozen=True, slots=True)
class Shell:
    """A line that is not anvil (``git commit``), shown as written; the skill tests run it with bash."""

    text: str
    comment: str = ""


Line = Op | Client | Shell


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill: its frontmatter, its body (markdown with ``{{key}}`` for a command block or
    ``{{refusals:key}}`` for a table of error codes), its command lines and refusal lists."""

    name: str
    description: str
    body: str
    lines: Mapping[str, Line]
    blocks: Mapping[str, tuple[str, ...]]
    refusals: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
