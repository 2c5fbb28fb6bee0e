"""Run a test on both storage backends: the embedded SQLite store and the PostgreSQL store.

``backend_env`` is ``anvil_env`` on SQLite, and the same plus ``ANVIL_DATABASE_URL`` naming a fresh
database on the session's throwaway PostgreSQL cluster (see :mod:`tests.pgcluster`).
"""

from __future__ import annotations

import pytest

BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(params=BACKENDS)
def backend_env(request: pytest.FixtureRequest, anvil_env: dict[str, str],
                monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An isolated project environment on each storage backend in turn."""
    if request.param == "postgresql":
        url: str = request.getfixturevalue("pg_url")
        monkeypatch.setenv("ANVIL_DATABASE_URL", url)
        return {**anvil_env, "ANVIL_DATABASE_URL": url}
    return anvil_env


def backend_of(env: dict[str, str]) -> str:
    return "postgresql" if env.get("ANVIL_DATABASE_URL") else "sqlite"
