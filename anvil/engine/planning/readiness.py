"""The drafted -> reviewed gate: what a task still lacks before agents may pick it up."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

NO_ACCEPTANCE_CRITERIA = "no acceptance criteria"
NO_VERIFICATION = "no verification commands"


def readiness_problems(task: Mapping[str, Any]) -> list[str]:
    """List why a task is not ready to be marked reviewed.

    A field counts as missing when it is absent, not a list, or holds only blank or placeholder
    entries (TBD, TODO, N/A, ...).

    Args:
        task: A planned task dict.

    Returns:
        Fixed short messages in a fixed order (acceptance criteria first); empty when ready.

    Raises:
        Nothing: malformed fields count as missing.
    """
    problems: list[str] = []
    if not _has_entries(task.get("acceptance_criteria")):
        problems.append(NO_ACCEPTANCE_CRITERIA)
    if not _has_entries(task.get("verification")):
        problems.append(NO_VERIFICATION)
    return problems


PLACEHOLDER = re.compile(r"^\W*(tbd|tba|todo|fixme|xxx|n/?a|none|\?+|\.{3}|…)\W*$", re.IGNORECASE)


def _has_entries(value: Any) -> bool:
    """A list with at least one entry that says something (not blank, not a placeholder like TBD)."""
    return isinstance(value, (list, tuple)) and any(
        isinstance(v, str) and v.strip() and not PLACEHOLDER.match(v.strip()) for v in value)
