"""Task rows and their public view: the review tier rule."""

from __future__ import annotations

from typing import Any

import pytest

from anvil.engine.planning.scoring import (
    DIMENSIONS,
)
from anvil.engine.tasks import review_tier

FULL = dict.fromkeys(DIMENSIONS, 3)


@pytest.mark.parametrize(
    ("scores", "tier"),
    [
        (None, "standard"),
        ({}, "standard"),
        (FULL | {"blast_radius": 4}, "max"),
        (FULL | {"review_risk": 5}, "max"),
        (FULL | {"blast_radius": 2, "review_risk": 2, "complexity": 2}, "light"),
        (FULL | {"blast_radius": 2, "review_risk": 2, "complexity": 3}, "standard"),
        (FULL | {"blast_radius": 3, "review_risk": 1, "complexity": 1}, "standard"),
        (FULL, "standard"),
        ({"blast_radius": 4}, "max"),
        ({"blast_radius": 1, "review_risk": 1}, "standard"),
        (FULL | {"blast_radius": 1, "review_risk": 1, "complexity": 0}, "standard"),
    ],
)
def test_review_tier_follows_the_documented_rule(scores: dict[str, Any] | None, tier: str) -> None:
    assert review_tier(scores) == tier


def test_a_comma_separates_file_paths_on_every_surface_as_in_the_prd() -> None:
    from anvil.engine.tasks import normalise_files

    assert normalise_files(["a.py,b.py", " ./c.py , a.py", ""]) == ["a.py", "b.py", "c.py"]
