"""Shared fixtures: an isolated anvil environment, an in-process CLI runner, a real HTTP server process."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.backends import backend_env  # noqa: F401  (fixture: each storage backend in turn)
from tests.pgcluster import pg_cluster, pg_url  # noqa: F401  (fixtures: a throwaway PostgreSQL)

if TYPE_CHECKING:
    from tests.mcp.support import ServerProcess


LONG_TESTS = os.environ.get("ANVIL_LONG_TESTS", "").strip().lower() in ("1", "true", "yes", "on")
"""``ANVIL_LONG_TESTS=1`` runs the long concurrency workloads at full size (see :func:`sized`)."""


def sized(everyday: int, long: int) -> int:
    """A workload size: ``everyday`` in the default run, ``long`` with ``ANVIL_LONG_TESTS=1``.

    The everyday size must still prove the claim (several real processes really racing); the long
    size is for soaking the same code under more contention.
    """
    return long if LONG_TESTS else everyday


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self):  # type: ignore[no-untyped-def]
        import json

        return json.loads(self.stdout)


RAM_DISK = Path("/dev/shm")


def pytest_configure(config: pytest.Config) -> None:
    """Keep the run's temporary files on the machine's RAM disk when it has one.

    Every state write ends in fsync (SQLite ``synchronous=FULL`` and the event mirror); on a disk
    that costs milliseconds per write, and the suite makes thousands of them. Durability across
    power loss is nothing a test checks, so the tests' project and state directories live on tmpfs.
    An explicit ``--basetemp`` or ``PYTEST_DEBUG_TEMPROOT`` wins; pytest still numbers, locks and
    prunes the run directories there (the last three runs are kept).
    """
    keep_bytecode()
    if config.option.basetemp or os.environ.get("PYTEST_DEBUG_TEMPROOT"):
        return
    found = ram_disk()
    if found is not None:
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(found)


def keep_bytecode() -> None:
    """Let this run and every Python it starts reuse compiled bytecode, outside the checkout.

    Where the environment says ``PYTHONDONTWRITEBYTECODE`` (sandboxes and CI images often do), every
    anvil process the tests start (hundreds) would compile anvil from source again. Instead the
    bytecode goes to a cache directory of its own (``PYTHONPYCACHEPREFIX``, on the RAM disk when
    there is one), shared by the run's processes and later runs; Python checks each cached file
    against its source as always. Nothing is written into the checkout. An explicit
    ``PYTHONPYCACHEPREFIX`` wins.
    """
    if os.environ.get("PYTHONPYCACHEPREFIX") or sys.pycache_prefix:
        return
    import tempfile

    where = ram_disk() or Path(tempfile.gettempdir())
    prefix = where / f"anvil-test-bytecode-{os.getuid()}"
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
    sys.pycache_prefix = str(prefix)
    sys.dont_write_bytecode = False


def ram_disk() -> Path | None:
    """The machine's RAM disk when it is writable and has room (1 GiB free), else None."""
    try:
        usable = RAM_DISK.is_dir() and os.access(RAM_DISK, os.W_OK) and shutil.disk_usage(RAM_DISK).free > 1 << 30
    except OSError:
        usable = False
    return RAM_DISK if usable else None


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the cores this process may use (``--maxprocesses`` caps it).

    Many tests spend part of their time waiting (a server starting, a lease running out, a child
    process), and a core left idle by one worker's wait goes to the extra one: on two cores, three
    workers finish about 6 % sooner than two."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return cores + 1


def in_xdist_worker() -> bool:
    """Whether this process is a pytest-xdist worker (the suite runs with ``-n auto``)."""
    return bool(os.environ.get("PYTEST_XDIST_WORKER"))


LONG_FIRST = ("test_static_checks.py", "test_replicas.py", "test_claims_race.py", "test_loopback.py",
              "test_crash_campaign.py", "test_http_limits.py", "test_http_identity.py", "test_state_files.py",
              "test_approval.py", "test_processes.py", "test_serve.py", "test_seed_calls.py")
"""Test files whose tests take seconds each (long processes, real deadlines), or that run as one group
(:data:`ONE_WORKER`), handed out first under pytest-xdist: a long piece of work handed out last leaves
the other cores idle at the end of the run."""

ONE_WORKER = ("test_loopback.py", "test_seed_calls.py", "test_board.py", "test_resources.py", "test_completion.py",
              "test_client_log.py", "test_prompts.py", "test_bundle_flow.py", "test_error_codes.py")
"""Test files whose module-scoped fixture builds something costly (a project with its scenarios, a
server) or whose tests share a costly scan (cached on first use): each runs on one pytest-xdist worker
(one group per storage backend for the loopback matrix), so that work is done once rather than once
per worker."""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, hand out the tests of :data:`LONG_FIRST` first (mypy alone takes several
    seconds of CPU) and keep each file of :data:`ONE_WORKER` on one worker. Every worker reorders and
    groups the same way, so they still agree on the collection."""
    if in_xdist_worker():
        for item in items:
            if item.path.name in ONE_WORKER:
                callspec = getattr(item, "callspec", None)
                backend = callspec.params.get("loopback") if callspec is not None else None
                group = item.path.name if backend is None else f"{item.path.name}[{backend}]"
                item.add_marker(pytest.mark.xdist_group(group))
        rank = {name: i for i, name in enumerate(LONG_FIRST)}
        items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keeps its order


@pytest.fixture(scope="session", autouse=True)
def static_checks_beside_the_suite(request: pytest.FixtureRequest,
                                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """In a single-process run, start ruff and mypy at once when their tests are part of the run (they
    take the second core). Under pytest-xdist both cores run tests, so each check runs when its test does."""
    from tests import static_checks

    if not in_xdist_worker() and any(item.path.name == "test_static_checks.py" for item in request.session.items):
        static_checks.start(tmp_path_factory.getbasetemp())
    yield
    static_checks.stop()


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (the backend the MCP SDK and uvicorn use)."""
    return "asyncio"


@pytest.fixture
def anvil_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """A project root and anvil home under ``tmp_path``; the process env points at them.

    With ``ANVIL_TEST_BACKEND=postgresql`` every such project keeps its state in a fresh database
    of the session's PostgreSQL cluster instead: a development aid that runs the operation tests on
    the other backend (tests of SQLite files, the mirror, crash points and injected clocks do not
    apply there: the database's clock is the one clock).
    """
    database = request.getfixturevalue("pg_url") if os.environ.get("ANVIL_TEST_BACKEND", "").strip().lower() \
        == "postgresql" else None
    yield _isolate(tmp_path, monkeypatch, database)


@pytest.fixture(scope="module")
def module_anvil_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """``anvil_env`` made once for a whole module, for tests that never write a project's state (a
    stubbed backend): one environment lets a module reuse what is built from it (the Typer app)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield _isolate(tmp_path_factory.mktemp("env"), monkeypatch, None)


def _isolate(base: Path, monkeypatch: pytest.MonkeyPatch, database: str | None) -> dict[str, str]:
    """Point the process env and working directory at a new project root and anvil home under ``base``."""
    root = base / "project"
    root.mkdir()
    home = base / "home"
    for name in ("ANVIL_MCP_TARGET", "ANVIL_MCP_TOKEN_ENV", "ANVIL_STATE_LAYOUT", "ANVIL_ACTOR",
                 "ANVIL_MCP_PLANNING", "ANVIL_LOCK_TIMEOUT", "ANVIL_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    if database is not None:
        monkeypatch.setenv("ANVIL_DATABASE_URL", database)
    monkeypatch.setenv("ANVIL_HOME", str(home))
    monkeypatch.setenv("ANVIL_ROOT", str(root))
    monkeypatch.chdir(root)
    return dict(os.environ)


@pytest.fixture
def cli(anvil_env: dict[str, str]):  # type: ignore[no-untyped-def]
    """Run ``anvil ARGS`` in-process and capture its exit code and output."""
    from anvil.cli.main import main

    def run(*args: str) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(list(args))
        return CliResult(code, out.getvalue(), err.getvalue())

    return run


def _server_starter(anvil_env: dict[str, str], tmp_path: Path, *, warm: bool) -> Iterator[Callable[..., ServerProcess]]:
    from tests import warm as warm_processes
    from tests.mcp.support import TOKEN, ServerProcess, free_port, wait_for_port

    started: list[ServerProcess] = []

    def start(*extra: str, token: bool = True) -> ServerProcess:
        port = free_port()
        env = anvil_subprocess_env(anvil_env)
        args = ["--http", "--host", "127.0.0.1", "--port", str(port), *extra]
        if token:
            env["MCP_TEST_TOKEN"] = TOKEN
            args += ["--token-env", "MCP_TEST_TOKEN"]
        log = tmp_path / f"server-{port}.log"
        process: subprocess.Popen[bytes] | warm_processes.WarmProcess
        if warm:
            process = warm_processes.WarmProcess("anvil.mcp", args, env=env, cwd=anvil_env["ANVIL_ROOT"], stdout=log)
        else:
            with log.open("wb") as sink:
                process = subprocess.Popen([sys.executable, "-m", "anvil.mcp", *args], env=env, stdout=sink,
                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           cwd=anvil_env["ANVIL_ROOT"])
        server = ServerProcess(process, port, log)
        started.append(server)
        wait_for_port(port, process=process)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def http_server_process(anvil_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """Start ``python -m anvil.mcp --http`` on a free loopback port, with TOKEN in MCP_TEST_TOKEN, as a
    process forked warm (:mod:`tests.warm`)."""
    yield from _server_starter(anvil_env, tmp_path, warm=True)


@pytest.fixture
def spawned_http_server_process(anvil_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """The same server spawned exactly as a user starts it (a fresh ``python -m anvil.mcp``)."""
    yield from _server_starter(anvil_env, tmp_path, warm=False)


def anvil_subprocess_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` plus what a child Python needs to import this checkout."""
    child = dict(env)
    child["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + child.get("PYTHONPATH", "")
    return child


def interruptible() -> None:
    """``preexec_fn`` for a child a test interrupts with SIGINT: restore SIGINT's default action.

    A shell that starts pytest in the background (``pytest &``, no job control) sets SIGINT to
    ignored, children inherit that, and Python then never raises KeyboardInterrupt in them."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


ANVIL = [sys.executable, "-m", "anvil"]


def anvil_json(env: dict[str, str], *args: str, timeout: float = 60.0, **extra: str) -> tuple[int, Any]:
    """``anvil ARGS --json`` in a process of its own (forked warm, :mod:`tests.warm`) in ``env``'s project,
    with ``extra`` variables: the exit code and the JSON document. A traceback fails the test."""
    import json

    from tests import warm

    proc = warm.anvil([*args, "--json"], env={**env, **extra}, cwd=env["ANVIL_ROOT"], timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)
