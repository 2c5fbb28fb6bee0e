"""The CLI's three routes in one process: direct, its stdio MCP server, its Streamable HTTP server.

The CLI runs exactly as a user runs it (``anvil.cli.main.main`` with the user's argv, reading the
process environment and working directory), and its MCP client runs its own code end to end
(routing, the stdlib JSON-RPC exchange, error mapping, output validation). Only the two channels
the client opens are swapped, through :mod:`anvil.mcp.channels`:

* **stdio**: instead of spawning ``python -P -m anvil.mcp --planning``, the server that command
  starts (``build_server`` over the registry, served by ``anvil.mcp.serve._run_stdio``) runs in a
  thread on a pair of OS pipes, with the environment and working directory the child would get.
* **http**: instead of a socket, each ``urllib`` request the client builds is handed to the ASGI
  application ``anvil serve --http`` would run (``build_http_app`` with the bearer token read the
  way the server reads it), called directly on an event loop that also runs its lifespan.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anvil.mcp.channels import Channels, using
from anvil.ops.registry import all_operations
from anvil.ops.scenarios import build_scenario
from tests.mcp.support import free_port

if TYPE_CHECKING:
    from tests.pgcluster import PgCluster

SERVER_EXIT_LIMIT = 30.0  # seconds a stdio server thread may take to end after its client closed stdin


TOKEN_VAR = "ANVIL_LOOPBACK_TOKEN"
TOKEN = "lbk-7f3c9e1d5a2b4c6e8f0a1b2c3d4e5f60"
# ISO times, also the compact form without colons that backup names carry
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:?\d{2}:?\d{2}(\.\d+)?(\+00:?00|Z)")
SNAPSHOT_MAX_AGE = 120.0  # seconds; claims in a scenario hold 900 s leases, so a snapshot stays current


ROUTE_WORDS = re.compile(r'(,\s*"--mcp(?:-token-env)?",\s*"[^"]*")|( --mcp(?:-token-env)? [^\s"\\;)]+)')
"""The route flags the CLI adds to the commands a result names for pasting (anvil.cli.hints): the
one place where a routed call's output differs from a direct one's."""
RUN_HINT = re.compile(r" \(run: [^\n]*\)(?= \[\w+\]$)", re.MULTILINE)
"""On a routed call, an error naming its fix repeats the command with the route flags (output.error_line)."""
COUNTDOWN = re.compile(r"\b\d{2}:\d{2}:\d{2} UTC|\b\d+[smhd]( \d+[smh])?\b")
"""A clock time or a span (``13:12:46 UTC``, ``in 14m``, ``24s ago``): human output tells times that way."""
PIPED = {"COLUMNS": "", "NO_COLOR": "", "FORCE_COLOR": ""}
"""Human output as a pipe gets it: no width, so nothing folds and every time stays one token."""


PADDING = re.compile(r"(?<=\S) {2,}")
"""Gaps between columns: a span's width (``in 15m`` against ``in 14m 59s``) moves the columns after it."""


def human(text: str) -> str:
    """Human output with every timestamp, clock time, span and pasted route flag left out, and the gaps
    between columns made one width."""
    shown = RUN_HINT.sub("", ROUTE_WORDS.sub("", COUNTDOWN.sub("<left>", TIMESTAMP.sub("<time>", text))))
    return PADDING.sub("  ", shown)


def normalized(stdout: str) -> Any:
    """The JSON document on ``stdout`` with every timestamp replaced by ``<time>`` and the route flags
    of pasteable commands left out."""
    return json.loads(ROUTE_WORDS.sub("", TIMESTAMP.sub("<time>", stdout)))


class Project:
    """One project location shared by the routes, restored to a scenario before every run.

    Each scenario is built once (by running its operations) and kept as a copy of the project and
    state directories; a run starts from a fresh copy at the same paths. On PostgreSQL the scenario's
    database is kept as a copy too, and its rows in memory: a run starts from those rows put back
    into the same database (or from a copy of the saved database when a call changed the schema).
    """

    def __init__(self, base: Path, cluster: PgCluster | None = None) -> None:
        self.base = base
        self.cluster = cluster  # None: the embedded SQLite state; else a database on this cluster
        self.root = base / "project"
        self.home = base / "home"
        self.root.mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANVIL_")}
        env.update(ANVIL_ROOT=str(self.root), ANVIL_HOME=str(self.home), ANVIL_MCP_PLANNING="1",
                   ANVIL_ACTOR="loopback-agent")
        self.database: str | None = None
        if cluster is not None:
            self.database = cluster.create_database()
            env["ANVIL_DATABASE_URL"] = cluster.url(self.database)
        self.env = env
        self._snapshots: dict[str, float] = {}
        self._rows: dict[str, tuple[str, dict[str, bytes]]] = {}  # scenario -> (schema structure, table rows)
        self._conn: Any = None  # the resets' connection to the database (PostgreSQL)
        self._current: str | None = None  # the database's catalog rows right after the last reset

    def _clear(self, *, database: bool = True) -> None:
        shutil.rmtree(self.home, ignore_errors=True)
        for child in self.root.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        if database and self.cluster is not None and self.database is not None:
            self._copy_database("template0", self.database)

    def _copy_database(self, template: str, name: str) -> None:
        from anvil.engine.storage.postgres import forget_pool

        assert self.cluster is not None
        self._disconnect()
        forget_pool()  # idle connections of this process (the in-process servers' too)
        self.cluster.copy_database(template, name)

    def reset(self, scenario: str) -> None:
        saved = self.base / "snapshots" / scenario
        if time.monotonic() - self._snapshots.get(scenario, -SNAPSHOT_MAX_AGE) >= SNAPSHOT_MAX_AGE:
            self._clear()
            build_scenario(scenario, self.env, str(self.root))
            shutil.rmtree(saved, ignore_errors=True)
            shutil.copytree(self.root, saved / "project")
            if self.home.exists():
                shutil.copytree(self.home, saved / "home")
            if self.database is not None:
                self._copy_database(self.database, f"{self.database}_{scenario}")
                self._rows[scenario] = self._save_rows()
            self._snapshots[scenario] = time.monotonic()
            return
        self._clear(database=False)
        shutil.copytree(saved / "project", self.root, dirs_exist_ok=True)
        if (saved / "home").exists():
            shutil.copytree(saved / "home", self.home)
        if self.database is not None and not self._restore_rows(scenario):
            self._copy_database(f"{self.database}_{scenario}", self.database)
            self._note_schema()

    # A database is restored by replacing the rows of its tables (the usual case: a call writes rows,
    # never tables) when nothing changed its schema since the last reset and its tables are the ones
    # the scenario has; else it is copied whole from the scenario's saved copy, which costs several
    # times more. One connection does the restores (a new one per reset costs a server process).

    def _fingerprint(self, conn: Any) -> str:
        """The catalog rows of the public schema's relations: any DDL (a table, column, index or
        constraint made, changed or dropped) writes one of them, which changes its ``xmin``."""
        return repr(conn.execute(
            "SELECT relname, relkind, relnatts, relfilenode, xmin::text FROM pg_class "
            "WHERE relnamespace = 'public'::regnamespace ORDER BY relname").fetchall())

    def _structure(self, conn: Any) -> str:
        """The public schema's relations and their column counts (equal for two builds by the same
        migrations, whose catalog rows differ)."""
        return repr(conn.execute(
            "SELECT relname, relkind, relnatts FROM pg_class "
            "WHERE relnamespace = 'public'::regnamespace ORDER BY relname").fetchall())

    def _tables(self, conn: Any) -> list[str]:
        return [row[0] for row in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename").fetchall()]

    def _connection(self) -> Any:
        """The connection the resets use (opened on first use, outside autocommit)."""
        import psycopg

        assert self.cluster is not None and self.database is not None
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.cluster.url(self.database))
            self._conn.execute("SET lock_timeout = '30s'")
            self._conn.commit()
        return self._conn

    def _disconnect(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._current = None

    def close(self) -> None:
        """Close the resets' database connection (the project's files stay)."""
        self._disconnect()

    def _note_schema(self) -> None:
        """Remember the database's catalog rows as they are now, right after a reset."""
        conn = self._connection()
        self._current = self._fingerprint(conn)
        conn.commit()

    def _save_rows(self) -> tuple[str, dict[str, bytes]]:
        conn = self._connection()
        rows: dict[str, bytes] = {}
        for table in self._tables(conn):
            with conn.cursor().copy(f'COPY public."{table}" TO STDOUT') as copy:
                rows[table] = b"".join(bytes(chunk) for chunk in copy)
        structure = self._structure(conn)
        conn.commit()
        self._note_schema()
        return structure, rows

    def _restore_rows(self, scenario: str) -> bool:
        """Put back the scenario's rows; False (nothing changed) when the schema may differ."""
        structure, rows = self._rows[scenario]
        # The pooled connections of this process (the in-process servers' too) may stay: they are
        # in autocommit mode and idle, so they hold no lock and read the restored rows.
        conn = self._connection()
        try:
            if (self._current is None or self._fingerprint(conn) != self._current
                    or self._structure(conn) != structure or set(self._tables(conn)) != set(rows)):
                conn.rollback()
                return False
            conn.execute("".join(f'DELETE FROM public."{table}";' for table in rows))  # DELETE, not TRUNCATE:
            for table, data in rows.items():  # a handful of rows, and no new files
                if data:
                    with conn.cursor().copy(f'COPY public."{table}" FROM STDIN') as copy:
                        copy.write(data)
            conn.commit()
        except Exception:
            self._disconnect()
            raise
        return True


@dataclass
class RouteResult:
    code: int
    stdout: str
    stderr: str
    reached_server: bool = False  # set by the caller: did an MCP route get as far as its server?


@contextmanager
def process_state(env: Mapping[str, str], cwd: str) -> Iterator[None]:
    """Make ``env`` the whole process environment and ``cwd`` the working directory, then restore both."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)


def run_cli(argv: list[str], env: Mapping[str, str], cwd: str) -> RouteResult:
    """``anvil ARGV`` in this process with ``env`` as its environment; exit code and output captured."""
    from anvil.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with process_state(env, cwd), redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return RouteResult(code, out.getvalue(), err.getvalue())


# -- stdio: the spawned server, as a thread on a pipe pair ---------------------------------------


@functools.lru_cache(maxsize=8)
def _built_server(planning: bool, env: tuple[tuple[str, str], ...], cwd: str) -> Any:
    from anvil.mcp.server import build_server
    from anvil.ops.invoke import invoke
    from anvil.ops.registry import all_operations

    return build_server(all_operations(), functools.partial(invoke, env=dict(env), cwd=cwd), planning=planning)


def stdio_server_for(planning: bool, env: Mapping[str, str], cwd: str) -> Any:
    """The server ``python -P -m anvil.mcp`` builds for this environment and working directory.

    A child process builds it afresh every time; here one build serves every session with the
    same inputs (building the tools' JSON schemas is most of the cost of a call, and the SDK's
    server takes any number of sessions one after another, as over HTTP).
    """
    return _built_server(planning, tuple(sorted(env.items())), cwd)


class StdioServerThread:
    """What ``python -P -m anvil.mcp --planning`` is to the CLI, running in a thread of this process.

    Built by :func:`spawn_stdio_server` with ``subprocess.Popen``'s arguments; offers what the
    client uses of a ``Popen``: ``stdin``, ``stdout``, ``wait`` and ``kill``.
    """

    def __init__(self, planning: bool, env: Mapping[str, str], cwd: str) -> None:
        server = stdio_server_for(planning, env, cwd)
        self._planning, self._env, self._cwd = planning, dict(env), cwd
        self.used_sdk: bool | None = None
        to_server, from_client = os.pipe()
        to_client, from_server = os.pipe()
        self.stdin = os.fdopen(from_client, "wb")
        self.stdout = os.fdopen(to_client, "rb")
        self.returncode: int | None = None
        self.failure: BaseException | None = None
        self.killed = False
        source, wire = os.fdopen(to_server, "rb"), os.fdopen(from_server, "wb")
        self._thread = threading.Thread(target=self._serve, args=(server, wire, source), daemon=True,
                                        name="anvil-stdio-server")
        self._thread.start()

    def _serve(self, server: Any, wire: io.BufferedWriter, source: io.BufferedReader) -> None:
        from anvil.mcp.serve import lean_requested, run_session
        from anvil.ops.invoke import invoke

        try:  # lean when the client asks, as the process does (the built server stands in for a fresh one)
            self.used_sdk = run_session(wire, source, planning=self._planning, lean=lean_requested(self._env),
                                        build=lambda bundles: server,
                                        invoke=functools.partial(invoke, env=dict(self._env), cwd=self._cwd))
            self.returncode = 0
        except BaseException as exc:  # reported by wait(): a server failure must fail the test
            self.failure = exc
            self.returncode = 1
        finally:
            wire.close()  # the client's reader sees the end of the stream, as when a process exits
            source.close()

    def wait(self, timeout: float | None = None) -> int:
        self._thread.join(SERVER_EXIT_LIMIT if timeout is None else timeout)
        if self._thread.is_alive():
            if timeout is not None:
                raise subprocess.TimeoutExpired("anvil.mcp (in-process)", timeout)
            raise AssertionError(f"the in-process stdio server did not end within {SERVER_EXIT_LIMIT} s")
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        self.killed = True  # a thread cannot be killed; the test fails on this flag instead


def spawn_stdio_server(command: list[str], *, stdin: int, stdout: int, stderr: int | None, cwd: str,
                       env: Mapping[str, str], started: list[StdioServerThread] | None = None) -> StdioServerThread:
    """The ``spawn`` channel: start in a thread the server ``command`` would start in a process."""
    from anvil.mcp.stdio_client import stdio_command

    assert command == stdio_command(), command
    assert stdin == stdout == subprocess.PIPE
    server = StdioServerThread(planning="--planning" in command, env=env, cwd=cwd)
    if started is not None:
        started.append(server)
    return server


# -- http: the ASGI app, called directly -----------------------------------------------------------


class AsgiResponse:
    """The part of an ``http.client.HTTPResponse`` the client reads."""

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        self.status = self.code = status
        self.headers = Message()
        for name, value in headers:
            self.headers[name.decode("latin-1")] = value.decode("latin-1")
        self._body = io.BytesIO(body)

    def read(self, size: int = -1) -> bytes:
        return self._body.read(size)

    def readline(self, size: int = -1) -> bytes:
        return self._body.readline(size)

    def close(self) -> None:
        self._body.close()


class AsgiHttpServer:
    """An ASGI application served in this process: its lifespan runs on a private event loop, and
    :meth:`open_http` (the ``open_http`` channel) hands it each request as a loopback server would."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 8765) -> None:
        self.app, self.host, self.port = app, host, port
        self.url = f"http://{host}:{port}/mcp"
        self.requests = 0
        self._state: dict[str, Any] = {}
        self._stack: Any = None

    def __enter__(self) -> AsgiHttpServer:
        from contextlib import ExitStack

        import anyio.from_thread

        stack = ExitStack()
        portal = stack.enter_context(anyio.from_thread.start_blocking_portal("asyncio"))
        stack.enter_context(portal.wrap_async_context_manager(self._lifespan()))
        self._stack, self._portal = stack, portal
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    @asynccontextmanager
    async def _lifespan(self) -> Any:
        import anyio

        to_app, app_inbox = anyio.create_memory_object_stream[dict[str, Any]](4)
        app_outbox, from_app = anyio.create_memory_object_stream[dict[str, Any]](4)
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": self._state}

        async def receive() -> dict[str, Any]:
            return await app_inbox.receive()

        async def send(message: dict[str, Any]) -> None:
            await app_outbox.send(message)

        async with to_app, app_inbox, app_outbox, from_app, anyio.create_task_group() as tasks:
            tasks.start_soon(self.app, scope, receive, send)
            with anyio.fail_after(30):
                await to_app.send({"type": "lifespan.startup"})
                started = await from_app.receive()
            assert started["type"] == "lifespan.startup.complete", started
            try:
                yield
            finally:
                with anyio.fail_after(30):
                    await to_app.send({"type": "lifespan.shutdown"})
                    stopped = await from_app.receive()
                assert stopped["type"] == "lifespan.shutdown.complete", stopped

    def open_http(self, request: urllib.request.Request, timeout: float | None = None) -> AsgiResponse:
        """Answer ``request`` with the app, as the server process would answer it on the wire.

        Raises:
            TimeoutError: the app did not answer within ``timeout`` seconds.
        """
        parts = urllib.parse.urlsplit(request.full_url)
        assert (parts.hostname, parts.port) == (self.host, self.port), request.full_url
        body = request.data if isinstance(request.data, bytes) else b""
        headers = dict(request.header_items())
        # what http.client and urllib add on the way out
        headers.setdefault("Host", parts.netloc)
        headers.setdefault("User-agent", f"Python-urllib/{sys.version_info.major}.{sys.version_info.minor}")
        headers.setdefault("Accept-Encoding", "identity")
        if request.data is not None:
            headers.setdefault("Content-length", str(len(body)))
        headers["Connection"] = "close"
        scope = {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
            "method": request.get_method(), "scheme": parts.scheme, "path": urllib.parse.unquote(parts.path),
            "raw_path": parts.path.encode("ascii"), "query_string": parts.query.encode("ascii"), "root_path": "",
            "headers": [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()],
            "client": ("127.0.0.1", 40000 + self.requests % 20000), "server": (self.host, self.port),
            "state": dict(self._state),
        }
        self.requests += 1
        status, response_headers, content = self._portal.call(self._call, scope, body, timeout)
        return AsgiResponse(status, response_headers, content)

    async def _call(self, scope: dict[str, Any], body: bytes,
                    timeout: float | None) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        import anyio

        start: dict[str, Any] = {}
        chunks: list[bytes] = []
        answered = anyio.Event()
        requested = False

        async def receive() -> dict[str, Any]:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": body, "more_body": False}
            await answered.wait()  # like urllib, the client hangs up once the reply is complete
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    answered.set()

        with anyio.fail_after(timeout):
            await self.app(scope, receive, send)
        assert start, "the app ended without a response"
        return start["status"], list(start.get("headers", [])), b"".join(chunks)


@contextmanager
def captured_logs() -> Iterator[list[str]]:
    """Everything logged in this process inside the block (the in-process servers' log)."""
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Collect(level=logging.DEBUG)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lines
    finally:
        root.removeHandler(handler)


# -- the three routes together ----------------------------------------------------------------

ROUTES = ("direct", "stdio", "http")


class Loopback(Project):
    """The project of :class:`Project` with the three routes in this process."""

    def __init__(self, base: Path, cluster: PgCluster | None = None) -> None:
        super().__init__(base, cluster)
        self.server_env = {**self.env, TOKEN_VAR: TOKEN}
        self.stdio_servers: list[StdioServerThread] = []
        self.http = AsgiHttpServer(self._http_app(), port=free_port())
        self.channels = Channels(spawn=functools.partial(spawn_stdio_server, started=self.stdio_servers),
                                 open_http=self.http.open_http)

    def _http_app(self) -> Any:
        """What ``anvil serve --http --token-env ANVIL_LOOPBACK_TOKEN`` serves, in this process's env."""
        from anvil.mcp.http_app import DEFAULT_HOST, build_http_app, read_token
        from anvil.mcp.server import build_server, planning_enabled
        from anvil.ops.invoke import invoke

        server = build_server(all_operations(), functools.partial(invoke, env=self.server_env, cwd=str(self.root)),
                              planning=planning_enabled(self.server_env))
        token = read_token(DEFAULT_HOST, TOKEN_VAR, self.server_env)
        # As the real server, the gate reads the project's per-agent tokens on every request (the
        # examples never issue one, so the shared token decides).
        return build_http_app(server, host=DEFAULT_HOST, token=token, state_env=self.server_env,
                              state_cwd=str(self.root))

    def route_flags(self, route: str) -> list[str]:
        """The flags that send a CLI call on ``route``."""
        return {"direct": [], "stdio": ["--mcp", "stdio"],
                "http": ["--mcp", self.http.url, "--mcp-token-env", TOKEN_VAR]}[route]

    def run(self, argv: list[str], route: str, extra_env: dict[str, str] | None = None) -> RouteResult:
        extra = {name: self.route_flags(name) for name in ("direct", "stdio", "http")}
        env = {**self.env, **(extra_env or {}), **({TOKEN_VAR: TOKEN} if route == "http" else {})}
        requests_before = self.http.requests
        cut = argv.index("--") if "--" in argv else len(argv)  # what follows -- is a command, not options
        with using(self.channels):
            result = run_cli([*argv[:cut], *extra[route], *argv[cut:]], env, str(self.root))
        spawned, self.stdio_servers[:] = list(self.stdio_servers), []
        for server in spawned:
            assert server.wait() == 0 and not server.killed, server.failure
            assert server.used_sdk is False  # the CLI's single call is answered by the lean path, SDK-free
        # no route leaks into another: stdio servers only for stdio, HTTP requests only for http
        assert len(spawned) <= (route == "stdio") and (self.http.requests == requests_before or route == "http")
        result.reached_server = bool(spawned) or self.http.requests > requests_before
        return result
