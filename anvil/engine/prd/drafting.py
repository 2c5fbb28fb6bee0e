"""The LLM backstop's text side: the prompt asking for a ``## Tasks`` section, and reading the reply.

No model is called here; the caller supplies the reply (MCP sampling through the client's own
model). The reply is trusted only after it parses cleanly as part of the PRD.
"""

from __future__ import annotations

import re

from anvil.engine.errors import Refused, bound_text
from anvil.engine.prd.parser import parse_prd

MAX_REPLY_CHARS = 200_000
_FENCE = re.compile(r"^```[a-zA-Z]*\s*$|^```\s*$", re.MULTILINE)


def build_prompt(source: str) -> str:
    """Ask for tasks in anvil's PRD format for the features of ``source``."""
    return (
        "You are planning engineering work. Below is a PRD with features but no tasks. Write ONLY a markdown "
        "section that starts with the line '## Tasks' and contains 2-6 tasks per feature. Each task is:\n"
        "### T001: Short imperative title\n"
        "**Feature:** F001\n**Priority:** low|medium|high|critical\n**Type:** feature|test|docs|chore\n"
        "**Likely files:** path/one.py, path/two.py\n**Dependencies:** none (or T001, T002)\n"
        "**Acceptance criteria:**\n- an observable, testable outcome\n"
        "**Verification:**\n- `a shell command that checks it`\n\n"
        "Number tasks T001, T002, ... in order; only depend on earlier tasks; use only the feature ids in the "
        "PRD. No prose outside the section.\n\n--- PRD ---\n" + source
    )


def extract_tasks_section(reply: str) -> str:
    """The ``## Tasks`` section from a model reply, fences and chatter removed.

    Raises:
        Refused: the reply holds no task headings (code ``llm_tasks_unusable``).
    """
    text = _FENCE.sub("", reply[:MAX_REPLY_CHARS])
    start = re.search(r"^##\s+Tasks\s*$", text, re.MULTILINE | re.IGNORECASE)
    if start is None:
        first_task = re.search(r"^###\s+T\d+", text, re.MULTILINE)
        if first_task is None:
            raise Refused("the model's reply contained no tasks", code="llm_tasks_unusable")
        return "## Tasks\n\n" + text[first_task.start():].strip() + "\n"
    section = text[start.start():]
    after = re.search(r"^##\s+(?!Tasks)\S", section[3:], re.MULTILINE)
    return (section[: after.start() + 3] if after else section).strip() + "\n"


def append_tasks(source: str, section: str) -> str:
    """``source`` with the drafted section appended, checked to parse cleanly with tasks.

    Raises:
        Refused: the combined PRD has parse errors or still no tasks.
    """
    combined = source.rstrip() + "\n\n" + section
    result = parse_prd(combined)
    if result.errors or result.document is None or not result.document.tasks:
        first = result.errors[0].message if result.errors else "no tasks"
        raise Refused(bound_text(f"the drafted tasks do not parse cleanly ({first})", 300),
                      code="llm_tasks_unusable")
    return combined
