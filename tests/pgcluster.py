"""A throwaway PostgreSQL cluster for the test session, and a fresh database per test.

The session starts one cluster (``initdb`` + ``pg_ctl`` into a temporary directory, listening on
127.0.0.1 at a free port) the first time a test asks for PostgreSQL, and stops it when the session
ends; its data directory is on the machine's RAM disk when there is one (as the tests' own files, see
``tests/conftest.py``: creating and dropping a database is five times faster there). Under
pytest-xdist each worker process has its own cluster. ``initdb`` refuses to run as root, so as root
the server runs as an unprivileged user (the distribution's ``postgres`` user when present, else one
created for it). Each test gets its own
database (``pg_url``), dropped afterwards.

Where PostgreSQL or the psycopg driver is missing the PostgreSQL tests are skipped with a reason
saying how to install it; with ``CI=true`` they fail instead, so CI never passes by skipping.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from glob import glob
from pathlib import Path

import pytest

SUPERUSER = "postgres"
SERVICE_USER = "anvilpg"
INSTALL_HINT = ("install the PostgreSQL server (Debian: `apt-get update && apt-get install postgresql`; "
                "the binaries may live in /usr/lib/postgresql/<version>/bin) and the driver "
                "(`pip install -e '.[test]'`, which brings psycopg[binary])")
SERVER_SETTINGS = "-c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=64MB"
FAST_SETTINGS = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"  # throwaway data: no durability


def find_server_binaries() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``: on PATH, else the newest Debian install."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl:
        here = Path(initdb).resolve().parent
        if (here / "pg_ctl").exists():
            return here
        return Path(initdb).parent
    candidates = sorted(glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    return Path(candidates[-1]).parent if candidates else None


def _service_user() -> str | None:
    """The unprivileged user the server runs as (None: run as ourselves, we are not root)."""
    if os.geteuid() != 0:
        return None
    for name in (SUPERUSER, SERVICE_USER):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
                   check=True, capture_output=True)
    return SERVICE_USER


def _scratch_root() -> str | None:
    """Where the cluster's directory goes: the RAM disk when usable, else the system's temp directory."""
    from tests.conftest import ram_disk

    found = ram_disk()
    return str(found) if found is not None else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PgCluster:
    """One running throwaway cluster; ``url(database)`` addresses a database on it."""

    def __init__(self, bindir: Path, *, durable: bool = False):
        self.bindir = bindir
        self.settings = SERVER_SETTINGS if durable else f"{SERVER_SETTINGS} {FAST_SETTINGS}"
        self.user = _service_user()
        self.base = Path(tempfile.mkdtemp(prefix="anvil-pg-", dir=_scratch_root()))
        self.data = self.base / "data"
        self.port = 0
        self.version = 0  # the server's version number (e.g. 150018), known once started
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.base, entry.pw_uid, entry.pw_gid)
        os.chmod(self.base, 0o755)

    def _run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bindir / argv[0]), *argv[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=self.base)

    def start(self) -> None:
        """initdb, then start on a free port (a port taken meanwhile is retried).

        Raises:
            RuntimeError: the cluster could not be created or started.
        """
        made = self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
                         "--no-locale", "-N")
        if made.returncode != 0:
            raise RuntimeError(f"initdb failed: {made.stderr.strip()[-500:]}")
        for _ in range(5):
            self.port = _free_port()
            started = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.base / "server.log"), "-w", "-t", "60",
                                "-o", f"-k {self.base} -p {self.port} {self.settings}", "start")
            if started.returncode == 0:
                self.version = self._server_version()
                return
        log = (self.base / "server.log").read_text(errors="replace")[-800:] if (self.base / "server.log").exists() \
            else started.stderr
        raise RuntimeError(f"pg_ctl start failed: {log.strip()}")

    def _server_version(self) -> int:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            row = conn.execute("SHOW server_version_num").fetchone()
        return int(row[0]) if row else 0

    def _copy_clause(self) -> str:
        """Copy a template by its files: with durability off that is the cheapest way (PostgreSQL 15+;
        older servers know no other way)."""
        return " STRATEGY FILE_COPY" if self.version >= 150000 else ""

    def stop(self) -> None:
        if self.data.exists():
            self._run("pg_ctl", "-D", str(self.data), "stop", "-m", "immediate", "-w")
        shutil.rmtree(self.base, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database; returns its name."""
        import psycopg

        name = "anvil_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{self._copy_clause()}')
        return name

    def copy_database(self, template: str, name: str) -> None:
        """Make ``name`` a copy of ``template`` (replacing ``name``); nobody may be connected to ``template``."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"{self._copy_clause()}')

    def drop_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _unavailable(reason: str) -> None:
    message = f"PostgreSQL tests need a PostgreSQL server: {reason}; {INSTALL_HINT}"
    if os.environ.get("CI", "").strip().lower() == "true":
        pytest.fail(message + " (CI=true: a missing PostgreSQL fails the run)", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """The session's throwaway PostgreSQL cluster (skipped, or failed with CI=true, when unavailable)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("the psycopg driver is not installed")
    bindir = find_server_binaries()
    if bindir is None:
        _unavailable("initdb and pg_ctl were not found")
        raise AssertionError("unreachable")
    cluster = PgCluster(bindir)
    try:
        cluster.start()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        cluster.stop()
        _unavailable(f"the throwaway cluster did not start ({exc})")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> Iterator[str]:
    """A connection URL of a fresh, empty database on the session's cluster."""
    name = pg_cluster.create_database()
    try:
        yield pg_cluster.url(name)
    finally:
        pg_cluster.drop_database(name)
