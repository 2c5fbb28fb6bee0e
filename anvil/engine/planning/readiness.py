"""The drafted -> reviewed gate: what a task still lacks before agents may pick it up."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from anvil.engine.prd.commands import command_problem

MESSAGE_LIMIT = 300

NO_ACCEPTANCE_CRITERIA = "no acceptance criteria"
NO_VERIFICATION = "no verification commands"


def readiness_problems(task: Mapping[str, Any]) -> list[str]:
    """List why a task is not ready to be marked reviewed.

    A field counts as missing when it is absent, not a list, or holds only blank or placeholder
    entries (TBD, TODO, N/A, ...).

    Args:
        task: A planned task dict.

    Returns:
        Short messages in a fixed order (acceptance criteria first, then verification, then each
        verification entry that no proof can run, such as a sentence: see
        :func:`anvil.engine.prd.commands.command_problem`), each at most 300 characters; empty when
        ready.

    Raises:
        Nothing: malformed fields count as missing.
    """
    problems: list[str] = []
    if not _has_entries(task.get("acceptance_criteria")):
        problems.append(NO_ACCEPTANCE_CRITERIA)
    verification = task.get("verification")
    if not _has_entries(verification):
        problems.append(NO_VERIFICATION)
    elif isinstance(verification, (list, tuple)):
        for command in verification:
            if isinstance(command, str) and command.strip():
                problem = command_problem(command)
                if problem is not None:
                    shown = " ".join(command.split())
                    shown = shown if len(shown) <= 80 else shown[:77] + "..."
                    text = (f"verification {shown!r} {problem}: no proof can run it, so write the command as the "
                            "bullet's one code span (any note after it) and plan again")
                    problems.append(text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT - 3] + "...")
    return problems


PLACEHOLDER = re.compile(r"^\W*(tbd|tba|todo|fixme|xxx|n/?a|none|\?+|\.{3}|…)\W*$", re.IGNORECASE)


def _has_entries(value: Any) -> bool:
    """A list with at least one entry that says something (not blank, not a placeholder like TBD)."""
    return isinstance(value, (list, tuple)) and any(
        isinstance(v, str) and v.strip() and not PLACEHOLDER.match(v.strip()) for v in value)
