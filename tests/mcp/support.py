"""Helpers of the MCP tests: fake operations, a fake invoke, free ports, servers in a thread."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from anvil.engine.errors import Refused
from anvil.ops.registry import DestructiveInput, MutatingInput, Operation, OpInput, OpOutput
from tests.warm import WarmProcess

TOKEN = "tok-9f2c1d7e-never-print-me"


class EchoInput(OpInput):
    text: str = Field(min_length=1, max_length=50, description="What to echo.")
    times: int = Field(default=1, ge=1, le=5)


class EchoOutput(OpOutput):
    text: str
    sampled: str | None = None


class PlanInput(MutatingInput):
    title: str


class PlanOutput(OpOutput):
    planned: bool


class WipeInput(DestructiveInput):
    pass


class WipeOutput(OpOutput):
    wiped: bool


FAKE_OPERATIONS = [
    Operation(name="echo", description="Echo the text back.", input_model=EchoInput, output_model=EchoOutput,
              handler="tests:unused", surface="execution", effect="read", cli_path=("echo",)),
    Operation(name="plan_things", description="Plan things.", input_model=PlanInput, output_model=PlanOutput,
              handler="tests:unused", surface="planning", effect="mutating", cli_path=("plan",)),
    Operation(name="wipe", description="Wipe everything.", input_model=WipeInput, output_model=WipeOutput,
              handler="tests:unused", surface="execution", effect="destructive", cli_path=("wipe",)),
]


@dataclass
class FakeInvoke:
    """Stands in for ``runtime.invoke``: records calls and answers per operation."""

    calls: list[tuple[str, dict[str, Any], Any]] = field(default_factory=list)
    threads: list[int] = field(default_factory=list)
    principals: list[Any] = field(default_factory=list)
    remotes: list[bool] = field(default_factory=list)
    behaviour: dict[str, Callable[..., dict[str, Any]]] = field(default_factory=dict)

    def __call__(self, name: str, arguments: dict[str, Any], *, sampler: Any = None,
                 principal: Any = None, remote: bool = False, state: Any = None) -> dict[str, Any]:
        self.calls.append((name, arguments, sampler))
        self.principals.append(principal)
        self.remotes.append(remote)
        self.threads.append(threading.get_ident())
        if name in self.behaviour:
            return self.behaviour[name](arguments, sampler)
        if name == "echo":
            return {"text": arguments["text"] * arguments["times"]}
        if name == "plan_things":
            return {"planned": True}
        if name == "wipe":
            raise Refused("wiping is refused here", code="wipe_refused", details={"why": "test"})
        raise AssertionError(name)


@dataclass
class Result:
    """What ``anvil ... --json`` in a process of its own said: exit code, JSON document, standard error."""

    code: int
    doc: Any
    stderr: str

    @property
    def error(self) -> str | None:
        return self.doc.get("error", {}).get("code") if isinstance(self.doc, dict) else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, *, timeout: float = 30.0,
                  process: subprocess.Popen[bytes] | WarmProcess | None = None) -> None:
    """Poll until something accepts connections on 127.0.0.1:port (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"server exited early with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            threading.Event().wait(0.02)
    raise AssertionError(f"nothing listens on port {port}")


class ThreadedUvicorn:
    """An ASGI app served by uvicorn on 127.0.0.1 in a background thread."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> ThreadedUvicorn:
        self._thread.start()
        wait_for_port(self.port)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes] | WarmProcess
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> str:
        """Stop the server and return everything it wrote (stdout and stderr)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.log.read_text(encoding="utf-8", errors="replace")


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


Responder = Callable[[Recorded], tuple[int, dict[str, str], bytes]]


class FakeHttpServer:
    """A scripted HTTP server on 127.0.0.1 (standard library) that records every request."""

    def __init__(self, respond: Responder) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.requests: list[Recorded] = []
        self.release = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                record = Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                owner.requests.append(record)
                status, headers, payload = respond(record)
                try:
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (the timeout tests): there is nobody to answer

            do_POST = do_GET = do_DELETE = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> FakeHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


def json_reply(message: Any, status: int = 200, headers: dict[str, str] | None = None,
               ) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(message).encode()


def sse_reply(*messages: Any) -> tuple[int, dict[str, str], bytes]:
    events = b"".join(b"event: message\r\ndata: " + json.dumps(m).encode() + b"\r\n\r\n" for m in messages)
    return 200, {"Content-Type": "text/event-stream"}, events


async def sdk_call(url: str, era: str, name: str, arguments: dict[str, Any], token: str | None = TOKEN) -> Any:
    """Call ``name`` over Streamable HTTP with the SDK's own client (bearer ``token`` unless None)."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from anvil import __version__

    headers = auth(token) if token else {}
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=era,
                              read_timeout_seconds=30) as client:
                assert client.server_info is not None and client.server_info.version == __version__
                return await client.call_tool(name, arguments)


def auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
