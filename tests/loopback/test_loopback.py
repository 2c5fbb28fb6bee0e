"""The loopback proof: every example of every operation gives the same output (the ``--json``
document and the human screen) and exit code whether the CLI runs it directly, through its own
stdio MCP server, or through a Streamable HTTP server with a bearer token.

The cases come from the registry, so an operation is covered the moment it is registered. All
three routes run in this process (see :mod:`tests.loopback.support`): the CLI's own argv parsing,
routing, MCP client and output code run unchanged, the servers are the real ones, and only the
pipe and the socket between them are replaced. ``test_processes.py`` runs the same comparison
with real processes for a few cases per route. Idempotent retries are checked on every route too,
and a replay must read as the first answer did.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from anvil.ops.cliargs import cli_argv_for
from anvil.ops.registry import all_operations
from anvil.ops.specgen import op_spec
from tests.backends import BACKENDS
from tests.loopback.support import (
    PIPED,
    ROUTES,
    TOKEN,
    Loopback,
    captured_logs,
    human,
    normalized,
)

CASES = [(op, i, ex) for op in all_operations() for i, ex in enumerate(op.examples)]
RUN_FIGURES = ("duration_ms", "output_excerpt")
FIGURE = re.compile(r"\d+(\.\d+)?")
SQLITE_ONLY = {"rebuild_state": "rebuild_not_applicable"}  # operations on the embedded state's files


@pytest.fixture(scope="module", params=BACKENDS)
def loopback(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loopback]:
    """The three routes on one project, on each storage backend in turn."""
    cluster = request.getfixturevalue("pg_cluster") if request.param == "postgresql" else None
    with captured_logs() as log:
        lb = Loopback(tmp_path_factory.mktemp("loopback"), cluster)
        try:
            with lb.http:
                yield lb
        finally:
            lb.close()
    assert TOKEN not in "\n".join(log), "the bearer token leaked into the server log"


@pytest.mark.parametrize(("op", "index", "example"), CASES, ids=[f"{op.name}-{i}" for op, i, _ in CASES])
def test_every_path_gives_the_same_output_and_exit_code(loopback: Loopback, op, index: int, example) -> None:  # type: ignore[no-untyped-def]
    argv = cli_argv_for(op_spec(op), example.input)
    results = {}
    for route in ROUTES:
        loopback.reset(example.scenario)
        result = loopback.run([*argv, "--json"], route)
        assert TOKEN not in result.stdout + result.stderr
        assert "Traceback" not in result.stderr, result.stderr
        if route != "direct" and not example.error:
            assert result.reached_server, f"the {route} call never reached its server"
        results[route] = (result.code, normalized(result.stdout))
    if op.local_only:
        # Runs on the caller's machine: over HTTP the server refuses (after the same checks of the input),
        # and a run's own figures (its duration, the proof's nonce and digest) differ from run to run.
        http_code, http_document = results.pop("http")
        if not example.error:
            assert http_code == 5 and http_document["error"]["code"] == "proof_needs_local_run", http_document
            results = {route: (code, {k: v for k, v in document.items() if k not in RUN_FIGURES})
                       for route, (code, document) in results.items()}
        else:
            results["http"] = (http_code, http_document)
    assert results["stdio"] == results["direct"], "stdio differs from direct"
    assert results.get("http", results["direct"]) == results["direct"], "http differs from direct"
    code, document = results["direct"]
    expected = example.error
    if loopback.database is not None and op.name in SQLITE_ONLY:
        expected = SQLITE_ONLY[op.name]  # the same refusal on every route
    if expected:
        assert code != 0 and document["error"]["code"] == expected, document
    else:
        assert code == 0, document
        if not op.local_only:
            assert op.output_model.model_validate(document).model_dump(mode="json") == document


@pytest.mark.parametrize("loopback", ["sqlite"], indirect=True)
@pytest.mark.parametrize(("op", "index", "example"), CASES, ids=[f"{op.name}-{i}" for op, i, _ in CASES])
def test_every_path_gives_the_same_human_output_and_exit_code(loopback: Loopback, op, index: int, example) -> None:  # type: ignore[no-untyped-def]
    """Without --json the CLI shows the result through its renderer: a routed result (validated into its
    model by pydantic, fields in the model's order) must print what the direct result prints. The
    renderer reads the same documents on both backends, so SQLite alone runs this matrix."""
    argv = cli_argv_for(op_spec(op), example.input)
    shown = {}
    for route in ROUTES if not op.local_only else ("direct", "stdio"):  # http refuses a local run (above)
        if route == "direct" or op.effect != "read" or "write" in example.input:  # a read changes nothing
            loopback.reset(example.scenario)
        result = loopback.run(argv, route, PIPED)
        assert "Traceback" not in result.stderr and "\x1b" not in result.stdout, result.stderr
        shown[route] = (result.code, human(result.stdout), human(result.stderr))
        if op.local_only:  # a run's own figures (duration, output) differ from run to run
            shown[route] = (result.code, FIGURE.sub("<n>", shown[route][1]), shown[route][2])
    assert shown["direct"][1] or shown["direct"][2], "nothing was shown"
    assert shown["stdio"] == shown["direct"], "stdio shows something else than direct"
    assert shown.get("http", shown["direct"]) == shown["direct"], "http shows something else than direct"


IDEMPOTENT = [(op, i, ex) for op, i, ex in CASES if not ex.error and op.effect != "read" and not op.local_only
              and not op.bootstrap  # init makes the state the idempotency records live in
              and "idempotency_key" in op.input_model.model_fields and "idempotency_key" not in ex.input]


@pytest.mark.parametrize(("op", "index", "example"), IDEMPOTENT, ids=[f"{op.name}-{i}" for op, i, _ in IDEMPOTENT])
def test_an_idempotent_replay_shows_what_the_first_call_showed(loopback: Loopback, op, index: int, example) -> None:  # type: ignore[no-untyped-def]
    """A replay answers from the stored canonical JSON (keys sorted): it must still read as the first answer."""
    argv = cli_argv_for(op_spec(op), {**example.input, "idempotency_key": f"replay-{index}"})
    for route in ("direct", "stdio"):
        loopback.reset(example.scenario)
        first, again = (loopback.run(argv, route, PIPED) for _ in range(2))
        assert first.code == again.code == 0, first.stderr + again.stderr
        assert human(again.stdout) == human(first.stdout), f"the replay on {route} reads differently"


@pytest.mark.parametrize("route", ROUTES)
def test_an_idempotent_retry_returns_the_first_result_on_every_route(loopback: Loopback, route: str) -> None:
    loopback.reset("ready")

    def claim(*args: str) -> tuple[int, dict[str, Any]]:
        result = loopback.run(["claim", "T001", "--json", *args], route)
        assert result.reached_server == (route != "direct")
        return result.code, json.loads(result.stdout)

    first = claim("--actor", "agent-1", "--idempotency-key", "k-1")
    again = claim("--actor", "agent-1", "--idempotency-key", "k-1")
    changed = claim("--actor", "agent-1", "--idempotency-key", "k-1", "--lease", "60")
    assert first[0] == 0 and again == first
    assert changed[0] == 5 and changed[1]["error"]["code"] == "idempotency_conflict"
