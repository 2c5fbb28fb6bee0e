"""Behaviour of rule-based task scoring and score validation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anvil.engine.errors import Refused, UsageError
from anvil.engine.planning.scoring import (
    DIMENSIONS,
    GraphStats,
    graph_stats,
    score_task,
    validate_score_batch,
    validate_scores,
)
from anvil.engine.tasks import review_tier
from tests.conftest import sized


def planned(**fields: Any) -> dict[str, Any]:
    task: dict[str, Any] = {
        "id": "T001", "feature_id": "F001", "title": "Add a health endpoint", "priority": "medium",
        "type": "feature", "description": "Expose GET /health returning the service version as JSON.",
        "likely_files": ["src/app/health.py"], "dependencies": [], "inferred_dependencies": [],
        "acceptance_criteria": ["GET /health returns 200", "the body names the version"],
        "verification": ["pytest tests/test_health.py -q"], "conflict_groups": [],
    }
    task.update(fields)
    return task


FULL = dict.fromkeys(DIMENSIONS, 3)


def test_dimensions_are_the_six_documented_ones_in_order() -> None:
    assert DIMENSIONS == (
        "complexity", "parallelizability", "context_load", "blast_radius", "review_risk", "agent_suitability",
    )


def test_a_small_well_specified_task_scores_as_easy_and_agent_suitable() -> None:
    scores = score_task(planned(), GraphStats())
    assert scores == {
        "complexity": 1, "parallelizability": 5, "context_load": 1,
        "blast_radius": 1, "review_risk": 1, "agent_suitability": 5,
    }
    assert review_tier(scores) == "light"


def test_a_vague_task_scores_low_for_agents_and_high_for_review() -> None:
    scores = score_task(
        {"id": "T001", "title": "Improve things", "description": "", "likely_files": [],
         "acceptance_criteria": [], "verification": []},
        GraphStats(),
    )
    assert scores["agent_suitability"] == 1
    assert scores["review_risk"] == 3


def test_more_criteria_files_and_prose_raise_complexity_and_context_load() -> None:
    small = score_task(planned(), GraphStats())
    big = score_task(
        planned(
            acceptance_criteria=[f"criterion {k}" for k in range(6)],
            likely_files=[f"src/m{k}.py" for k in range(5)],
            description="word " * 300,
        ),
        GraphStats(dependencies=5),
    )
    assert big["complexity"] == 5 > small["complexity"]
    assert big["context_load"] == 5 > small["context_load"]


def test_a_docs_task_is_simpler_than_the_same_feature_task() -> None:
    files = [f"docs/p{k}.md" for k in range(4)]
    feature = score_task(planned(likely_files=files), GraphStats())
    docs = score_task(planned(type="docs", likely_files=files), GraphStats())
    assert docs["complexity"] == feature["complexity"] - 1


def test_conflict_peers_and_dependents_lower_parallelizability() -> None:
    assert score_task(planned(), GraphStats(conflict_peers=1))["parallelizability"] == 4
    assert score_task(planned(), GraphStats(conflict_peers=6))["parallelizability"] == 2
    assert score_task(planned(), GraphStats(conflict_peers=6, dependents=6))["parallelizability"] == 1


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("migrations/0007_add_users.py", 3),
        ("src/app/auth/session.py", 3),
        ("db/schema.sql", 3),
        ("src/app/api/routes.py", 3),
        ("src/app/config.py", 2),
        ("src/core/engine.py", 2),
        ("src/app/__init__.py", 2),
        ("pyproject.toml", 2),
        ("src/app/health.py", 1),
    ],
)
def test_blast_radius_follows_the_riskiest_file(path: str, expected: int) -> None:
    assert score_task(planned(likely_files=[path]), GraphStats())["blast_radius"] == expected


def test_many_dependents_widen_the_blast_radius_and_force_max_review() -> None:
    scores = score_task(planned(likely_files=["migrations/0001.py"]), GraphStats(dependents=5))
    assert scores["blast_radius"] == 5
    assert review_tier(scores) == "max"


def test_sensitive_words_and_missing_verification_raise_review_risk() -> None:
    calm = score_task(planned(), GraphStats())["review_risk"]
    one = score_task(planned(title="Rotate the API token"), GraphStats())["review_risk"]
    many = score_task(
        planned(description="Encrypt passwords, purge stale secrets and handle payment data loss."),
        GraphStats(),
    )["review_risk"]
    unverified = score_task(planned(verification=[]), GraphStats())["review_risk"]
    assert (calm, one, many, unverified) == (1, 2, 3, 2)


def test_word_matching_needs_whole_words() -> None:
    assert score_task(planned(title="Refactor the author list and dropdown"), GraphStats())["review_risk"] == 1


def test_blank_entries_count_as_missing() -> None:
    scores = score_task(planned(acceptance_criteria=["  "], verification=[""]), GraphStats())
    assert scores == score_task(planned(acceptance_criteria=[], verification=[]), GraphStats())


@settings(max_examples=sized(100, 300), deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["title", "description", "type", "likely_files", "acceptance_criteria", "verification"]),
        st.none() | st.integers() | st.text(max_size=400) | st.lists(st.text(max_size=40), max_size=12),
    ),
    st.builds(GraphStats, *[st.integers(min_value=0, max_value=50)] * 4),
)
def test_every_score_is_an_integer_from_one_to_five_and_deterministic(task: dict[str, Any], stats: GraphStats) -> None:
    scores = score_task(task, stats)
    assert list(scores) == list(DIMENSIONS)
    validate_scores(scores)
    assert score_task(dict(task), stats) == scores


# --- graph_stats ------------------------------------------------------------------------------


def test_graph_stats_counts_dependents_depth_and_conflict_peers() -> None:
    tasks = [
        {"id": "T1", "dependencies": [], "conflict_groups": ["CG001"]},
        {"id": "T2", "dependencies": ["T1"], "conflict_groups": ["CG001", "CG002"]},
        {"id": "T3", "dependencies": ["T1", "T2", "T404"], "conflict_groups": ["CG002"]},
        {"id": "T4", "dependencies": [], "conflict_groups": ["CG001"]},
    ]
    stats = graph_stats(tasks)
    assert stats["T1"] == GraphStats(dependents=2, dependencies=0, depth=0, conflict_peers=2)
    assert stats["T2"] == GraphStats(dependents=1, dependencies=1, depth=1, conflict_peers=3)
    assert stats["T3"] == GraphStats(dependents=0, dependencies=2, depth=2, conflict_peers=1)
    assert stats["T4"] == GraphStats(dependents=0, dependencies=0, depth=0, conflict_peers=2)


def test_graph_stats_survives_a_cycle_and_missing_fields() -> None:
    stats = graph_stats([{"id": "A", "dependencies": ["B"]}, {"id": "B", "dependencies": ["A"]}, {"id": "C"}])
    assert stats["A"].dependents == stats["B"].dependents == 1
    assert stats["C"] == GraphStats()


def test_graph_stats_handles_a_long_chain_in_linear_time() -> None:
    n = 50_000
    stats = graph_stats([{"id": f"T{k}", "dependencies": [f"T{k - 1}"] if k else []} for k in range(n)])
    assert stats[f"T{n - 1}"].depth == n - 1


@pytest.mark.parametrize("bad", [[{"title": "x"}], [{"id": 1}], ["T1"]])
def test_graph_stats_refuses_tasks_without_a_string_id(bad: list[Any]) -> None:
    with pytest.raises(UsageError):
        graph_stats(bad)


# --- validate_scores --------------------------------------------------------------------------


def test_complete_scores_pass_validation() -> None:
    validate_scores(FULL)
    validate_scores(dict.fromkeys(DIMENSIONS, 1) | {"review_risk": 5})


@pytest.mark.parametrize(
    "scores",
    [
        {k: v for k, v in FULL.items() if k != "review_risk"},
        {},
        FULL | {"complexity": 0},
        FULL | {"complexity": 6},
        FULL | {"complexity": 2.5},
        FULL | {"complexity": "3"},
        FULL | {"complexity": True},
        FULL | {"complexity": None},
    ],
)
def test_incomplete_or_out_of_range_scores_are_refused(scores: dict[str, Any]) -> None:
    with pytest.raises(Refused) as caught:
        validate_scores(scores)
    assert caught.value.code == "score_incomplete"


@pytest.mark.parametrize("scores", [FULL | {"secret-dimension": 3}, [3] * 6, None])
def test_unknown_dimensions_and_non_objects_are_invalid_input(scores: Any) -> None:
    with pytest.raises(UsageError) as caught:
        validate_scores(scores)
    assert caught.value.code == "invalid_input"
    assert "secret" not in caught.value.message


def test_a_batch_is_refused_when_any_member_is_incomplete() -> None:
    validate_score_batch({"T1": FULL, "T2": FULL})
    with pytest.raises(Refused):
        validate_score_batch({"T1": FULL, "T2": FULL | {"blast_radius": 9}})
    with pytest.raises(UsageError):
        validate_score_batch([FULL])


# --- review_tier ------------------------------------------------------------------------------
