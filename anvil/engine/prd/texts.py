"""Texts that ship with anvil about the PRD format: the starting template and the format reference.

Both are package data (``template.md`` here, ``anvil/docs/prd-format.md``), so ``anvil prd
template`` and ``anvil docs prd-format`` work from an installed package with no checkout. The
format reference is a copy of ``docs/prd-format.md`` that ``python -m anvil.ops.docs`` keeps in step.
"""

from __future__ import annotations

import os
from pathlib import Path

from anvil.engine.errors import ConfirmationRequired, UsageError

TEMPLATE = Path(__file__).with_name("template.md")
DOCS = Path(__file__).resolve().parents[2] / "docs"
TOPICS = {"prd-format": ("The anvil PRD format", DOCS / "prd-format.md")}
"""Documentation topics shipped in the package: name -> (title, file)."""


def template_text() -> str:
    """The starting PRD ``anvil prd template`` prints."""
    return TEMPLATE.read_text(encoding="utf-8")


def topic_text(topic: str) -> tuple[str, str]:
    """The title and markdown of a shipped documentation topic.

    Raises:
        UsageError: ``unknown_topic``: no such topic.
    """
    if topic not in TOPICS:
        raise UsageError(f"no documentation topic {topic[:40]!r}: the topics are {', '.join(TOPICS)}",
                         code="unknown_topic")
    title, path = TOPICS[topic]
    return title, path.read_text(encoding="utf-8")


def write_new_file(path: Path, text: str, *, overwrite: bool, flag: str = "--yes") -> None:
    """Write ``text`` to ``path`` atomically, refusing to replace an existing file unless told to.

    Raises:
        ConfirmationRequired: ``path`` exists and ``overwrite`` is false.
        UsageError: ``path`` is a directory, or it cannot be written (``file_not_writable``).
    """
    shown = str(path)[:200]
    if path.is_dir():
        raise UsageError(f"{shown} is a directory: name a file to write", code="file_not_writable")
    if path.exists() and not overwrite:
        raise ConfirmationRequired(f"{shown} exists already: repeat with {flag} to replace it",
                                   code="confirmation_required")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"{shown} cannot be written ({type(exc).__name__})", code="file_not_writable") from None
