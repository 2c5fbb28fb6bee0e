"""A small crash campaign in the default suite (``scripts/crash_campaign.py`` runs long ones).

Writer processes are SIGKILLed at random points while the others keep writing; each killed
writer's unanswered call is retried with its idempotency key. Afterwards no acknowledged write is
missing (each one's idempotency event holds the exact result the writer got), no task was ever
claimed twice, and ``verify`` passes (database file, hash chain, mirror equal to the database,
replay equality).
"""

from __future__ import annotations

from scripts.crash_campaign import prepare, run_campaign
from tests.conftest import LONG_TESTS, anvil_subprocess_env

SECONDS = 2.5 if LONG_TESTS else 1.5  # per round: writers are killed every 0.05-0.4 s


def test_writers_killed_at_random_points_lose_no_acknowledged_write(anvil_env: dict[str, str]) -> None:
    env = anvil_subprocess_env(anvil_env)
    prepare(env, tasks=40)
    figures = run_campaign(env, rounds=2, writers=3, seconds=SECONDS, seed=20261130)
    assert figures.problems == [], figures.problems
    assert figures.lost == 0
    assert figures.kills >= 6 and figures.acknowledged > figures.kills, figures.line()
