"""The code passes the linter and the type checker (handlers against their generated input types).

Both run as subprocesses (``tests/static_checks.py``): in a single-process run they start at the
beginning (``tests/conftest.py``), beside the other tests, and these tests wait for their verdicts;
under pytest-xdist these tests are handed out first and run them.
"""

from __future__ import annotations

import pytest

from tests import static_checks


def test_ruff_finds_nothing(tmp_path_factory: pytest.TempPathFactory) -> None:
    code, stdout, stderr = static_checks.verdict("ruff", tmp_path_factory.getbasetemp())
    assert code == 0, stdout[-3000:] + stderr[-1000:]


def test_mypy_finds_nothing(tmp_path_factory: pytest.TempPathFactory) -> None:
    code, stdout, stderr = static_checks.verdict("mypy", tmp_path_factory.getbasetemp())
    assert code == 0, stdout[-3000:] + stderr[-1000:]
