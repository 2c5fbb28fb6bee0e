"""The lean stdio path answers exactly what the SDK server answers, and hands over what it cannot.

The property test drives the lean path (:func:`anvil.mcp.serve.run_session` with ``lean=True``,
handover included) and the SDK server (``_run_stdio`` over ``build_server``) with the same
generated sessions against one real project, and compares every line they write and their order.
The SDK server is given each message once it answered the previous request, as the CLI sends
them: the lean path serves one message at a time, so a pipelining client could see the SDK answer
a later message (``logging/setLevel``, ``tools/list``) while an earlier call still runs. The only
normalisation: what is a time (``duration_ms`` in log notifications, timestamps such as a read's
``as_of``), since the two runs happen one after the other. Write tools are called with
``dry_run`` (their transaction is rolled back), so both runs see the same state.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import mcp_types.version
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from anvil.engine.errors import TargetUnavailable, UsageError
from anvil.mcp import lean
from anvil.mcp.channels import Channels, using
from anvil.mcp.jsonrpc import Deadline
from anvil.mcp.serve import _run_stdio, run_session
from anvil.mcp.server import build_server
from anvil.mcp.stdio_client import call_stdio
from anvil.mcp.target import McpTarget
from anvil.ops.contract import spec_named
from anvil.ops.invoke import invoke as run_operation
from anvil.ops.registry import all_operations
from anvil.ops.speccheck import check_arguments
from anvil.ops.validation import validate_input
from tests.conftest import anvil_subprocess_env, sized
from tests.mcp.projects import build_project, use_project
from tests.mcp.support import FAKE_OPERATIONS, FakeInvoke

OPERATIONS = all_operations()
UNSAFE = frozenset({"init_project", "rebuild_state", "prove_command", "parse_prd", "add_token", "plan_tasks"})
"""Left out of generated calls: they write outside the rolled-back transaction (files, commands, secrets)."""
TOOL_NAMES = sorted(op.name for op in OPERATIONS if op.name not in UNSAFE)
WRITES = frozenset(op.name for op in OPERATIONS if op.effect != "read")
CLIENT = {"name": "prop", "version": "1"}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A planned, ready project this process serves (cwd and variables point at it)."""
    env = build_project(tmp_path_factory.mktemp("lean"), "ready")
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield use_project(env, monkeypatch)


def encode(message: Any) -> bytes:
    return message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"


def sdk_session(lines: list[bytes], planning: bool) -> list[bytes]:
    wire = io.BytesIO()
    anyio.run(_run_stdio, build_server(OPERATIONS, planning=planning), wire, io.BytesIO(b"".join(lines)))
    return wire.getvalue().splitlines()


def request_id_of(line: bytes) -> Any:
    """The id of the request on ``line`` (None for anything else: a notification, a response, a batch, junk)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message.get("id") if isinstance(message, dict) and "method" in message else None


def answering_each(serve: Callable[[BinaryIO, BinaryIO], Any], lines: list[bytes]) -> list[bytes]:
    """What ``serve(wire, source)`` writes for a client that sends each message once the previous
    request is answered (what the CLI does)."""
    to_server, from_client = os.pipe()
    to_client, from_server = os.pipe()
    source, wire = os.fdopen(to_server, "rb"), os.fdopen(from_server, "wb")
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(serve(wire, source)))
    thread.start()
    written: list[bytes] = []
    with os.fdopen(from_client, "wb") as stdin, os.fdopen(to_client, "rb") as stdout:
        for line in lines:
            stdin.write(line)
            stdin.flush()
            waited = request_id_of(line)
            while waited is not None and not any(
                    (answer := json.loads(out)).get("id") == waited and "method" not in answer for out in written):
                out = stdout.readline()
                assert out, "the server ended without answering"
                written.append(out)
        stdin.close()
        thread.join(60)
        wire.close()
        source.close()
        written.extend(stdout.read().splitlines(keepends=True))
    assert result, "the server failed"
    return [line.rstrip(b"\n") for line in written]


def sdk_session_answering_each(lines: list[bytes], planning: bool) -> list[bytes]:
    server = build_server(OPERATIONS, planning=planning)
    return answering_each(lambda wire, source: anyio.run(_run_stdio, server, wire, source), lines)


def lean_session_answering_each(lines: list[bytes], planning: bool) -> tuple[list[bytes], bool]:
    used_sdk: list[bool] = []

    def serve(wire: BinaryIO, source: BinaryIO) -> None:
        used_sdk.append(run_session(wire, source, planning=planning, lean=True,
                                    build=lambda bundles: build_server(OPERATIONS, planning=planning, bundles=bundles)))

    return answering_each(serve, lines), used_sdk[0]


def lean_session(lines: list[bytes], planning: bool, **options: Any) -> tuple[list[bytes], bool]:
    wire = io.BytesIO()
    used_sdk = run_session(wire, io.BytesIO(b"".join(lines)), planning=planning, lean=True,
                           build=lambda bundles: build_server(options.get("operations", OPERATIONS),
                                                              options.get("invoke", run_operation),
                                                              planning=planning, bundles=bundles),
                           invoke=options.get("invoke"), operations=options.get("operations"))
    return wire.getvalue().splitlines(), used_sdk


TIMESTAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)")


def timeless(line: bytes) -> bytes:
    """``line`` with its timestamps (a read's "as of" now, a creation time) replaced by one placeholder."""
    return TIMESTAMP.sub(b"TIME", line)


def by_message(lines: list[bytes]) -> tuple[dict[str, bytes], list[Any]]:
    """Responses by id (the SDK answers concurrent requests in any order), and notifications in order."""
    responses: dict[str, bytes] = {}
    notifications: list[Any] = []
    for line in map(timeless, lines):
        message = json.loads(line)
        if "id" in message and "method" not in message:
            assert repr(message["id"]) not in responses
            responses[repr(message["id"])] = line
        else:
            data = message.get("params", {}).get("data")
            if isinstance(data, dict) and "duration_ms" in data:
                data["duration_ms"] = 0
            notifications.append(message)
    return responses, notifications


def initialize(request_id: Any, version: Any = "2025-11-25", capabilities: Any = None,
               client: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {} if capabilities is None else capabilities,
                       "clientInfo": CLIENT if client is None else client}}


VERSIONS = st.sampled_from([*lean.HANDSHAKE_VERSIONS, "2026-07-28", "1999-01-01", 20250618])
CAPABILITIES = st.sampled_from([{}, {"sampling": {}}, {"roots": {"listChanged": True}}, {"elicitation": {}}])
CLIENTS = st.sampled_from([CLIENT, {"name": "x"}, {"name": "x", "version": "2", "title": "X"}])
VALUES = st.one_of(st.sampled_from(["T001", "T002", "T999", "agent-1", "", "ready", "x" * 300]),
                   st.integers(-3, 300), st.booleans(), st.none(), st.lists(st.sampled_from(["T001", "a"]), max_size=3))
KEYS = st.sampled_from(["task_id", "actor", "limit", "status", "bundle_id", "reviewer", "decision", "claim_id",
                        "generation", "wait_seconds", "max_blast", "cursor", "unknown_field", "summary", "cwd"])
ARGUMENTS = st.one_of(st.none(), st.dictionaries(KEYS, VALUES, max_size=4), st.just(["not", "an", "object"]))
META = st.one_of(st.none(), st.sampled_from([
    {"anvil/result": "full"}, {"anvil/result": "compact"}, {"anvil/text": "json"}, {"anvil/text": "human"},
    {"anvil/text": 3}, {"anvil/result": "full", "anvil/text": "json"}, {"progressToken": 7}, {"other": 1}]))


BY_NAME = {op.name: op for op in OPERATIONS}


def documented_arguments(name: str) -> st.SearchStrategy[Any]:
    """The arguments of the tool's documented examples (valid by its contract: they take the contract-checked
    path), or random ones."""
    examples = [example.input for example in BY_NAME[name].examples] if name in BY_NAME else []
    return st.one_of(ARGUMENTS, *([st.sampled_from(examples)] * 4 if examples else []))


@st.composite
def tool_call(draw: st.DrawFn, request_id: Any) -> dict[str, Any]:
    name = draw(st.one_of(st.sampled_from(TOOL_NAMES), st.sampled_from(["nope", "", "bad name!"])))
    params: dict[str, Any] = {"name": name}
    arguments = draw(documented_arguments(name))
    if name in WRITES and isinstance(arguments, dict):
        arguments = {**arguments, "dry_run": True}
    if arguments is not None or draw(st.booleans()):
        params["arguments"] = arguments
    meta = draw(META)
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


LEAN_STEPS = ["call", "call", "call", "ping", "string_id"]
OTHER_STEPS = ["ping_meta", "list", "malformed", "set_level", "cancel", "batch", "initialized", "response",
               "initialize"]


@st.composite
def step(draw: st.DrawFn, request_id: int, kinds: list[str]) -> Any:
    kind = draw(st.sampled_from(kinds))
    if kind == "call":
        return draw(tool_call(request_id))
    if kind == "string_id":
        return draw(tool_call(f"req-{request_id}"))
    return {
        "ping": {"jsonrpc": "2.0", "id": request_id, "method": "ping"},
        "ping_meta": {"jsonrpc": "2.0", "id": request_id, "method": "ping", "params": {"_meta": {"k": 1}}},
        "list": {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"},
        "malformed": b"{not json\n",
        "set_level": {"jsonrpc": "2.0", "id": request_id, "method": "logging/setLevel", "params": {"level": "info"}},
        "cancel": {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id - 1}},
        "batch": [{"jsonrpc": "2.0", "id": request_id, "method": "ping"}],
        "initialized": {"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}},
        "response": {"jsonrpc": "2.0", "id": request_id, "result": {}},
        "initialize": initialize(request_id),
    }[kind]


@st.composite
def session(draw: st.DrawFn) -> list[bytes]:
    """A session the lean path serves to the end (then perhaps one message it hands over), or any session."""
    messages: list[Any] = []
    plain = draw(st.booleans())
    opening = "initialize" if plain else draw(st.sampled_from(["initialize", "initialize", "call_first", "ping_first"]))
    if plain:
        messages.append(initialize(1, draw(st.sampled_from(lean.HANDSHAKE_VERSIONS))))
    elif opening == "initialize":
        messages.append(initialize(1, draw(VERSIONS), draw(CAPABILITIES), draw(CLIENTS)))
        if draw(st.booleans()):
            messages.append({"jsonrpc": "2.0", "method": "notifications/initialized"})
    else:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        messages.append(draw(tool_call(1)) if opening == "call_first" else ping)
    count = draw(st.integers(1, 4))
    kinds = LEAN_STEPS if plain else LEAN_STEPS + OTHER_STEPS
    messages.extend(draw(step(request_id, kinds)) for request_id in range(2, 2 + count))
    if plain and draw(st.booleans()):
        messages.append(draw(step(2 + count, OTHER_STEPS)))
    return [encode(message) for message in messages]


@settings(max_examples=sized(40, 300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                              HealthCheck.too_slow])
@given(lines=session(), planning=st.booleans())
def test_the_lean_path_answers_every_session_exactly_as_the_sdk_server(project: dict[str, str], lines: list[bytes],
                                                                       planning: bool) -> None:
    expected = sdk_session_answering_each(lines, planning)
    served, used_sdk = lean_session_answering_each(lines, planning)
    event("handed over to the SDK" if used_sdk else "served lean to the end")
    event(f"{contract_checked_calls(lines, planning)} calls contract-checked")
    assert by_message(served) == by_message(expected)
    assert [json.loads(line).get("id") for line in served] == [json.loads(line).get("id") for line in expected]


def contract_checked_calls(lines: list[bytes], planning: bool) -> int:
    """How many of the session's calls the lean path runs without pydantic (listed tools, arguments the
    contract check accepts); the SDK server validates every one with the models."""
    shown = {op.name for op in OPERATIONS if planning or op.surface == "execution"}
    count = 0
    for line in lines:
        message = lean.parse_message(line)
        params = (message or {}).get("params") or {}
        arguments = params.get("arguments") or {}
        if (message or {}).get("method") == "tools/call" and params.get("name") in shown and isinstance(
                arguments, dict) and check_arguments(spec_named(params["name"]), arguments) is not None:
            count += 1
    return count


def valid(name: str, arguments: dict[str, Any]) -> bool:
    try:
        validate_input(BY_NAME[name], arguments)
    except UsageError:
        return False
    return True


DOCUMENTED = [(name, i, example.input) for name in TOOL_NAMES for i, example in enumerate(BY_NAME[name].examples)
              if "write" not in example.input]  # a file written is there for the second run


@pytest.mark.parametrize(("name", "index", "arguments"), DOCUMENTED, ids=[f"{n}-{i}" for n, i, _ in DOCUMENTED])
def test_a_contract_checked_call_answers_byte_for_byte_what_the_sdk_server_answers(
        project: dict[str, str], name: str, index: int, arguments: dict[str, Any]) -> None:
    arguments = {**arguments, "dry_run": True} if name in WRITES else arguments
    for meta in ({"anvil/result": "full"}, None if index == 0 else {"anvil/text": "json"}):
        call = {"name": name, "arguments": arguments, **({"_meta": meta} if meta else {})}
        lines = [encode(initialize(1)), encode({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                 encode({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})]
        assert contract_checked_calls(lines, True) == int(valid(name, arguments))  # every valid one is checked
        served, used_sdk = lean_session(lines, True)
        assert used_sdk is False
        assert [timeless(line) for line in served] == [timeless(line) for line in sdk_session(lines, True)]


def imported_modules(log: str) -> set[str]:
    """The modules a ``-X importtime`` and ``-v`` log shows imported (``-v`` also shows ``importlib.import_module``,
    which ``-X importtime`` leaves out on Python 3.11: the registry and the runtime load modules that way)."""
    timed = {row.rsplit("|", 1)[-1].strip() for row in log.splitlines() if row.startswith("import time:")}
    loaded = {row.split("'")[1] for row in log.splitlines() if row.startswith("import '")}
    return timed | loaded


def test_a_lean_status_call_imports_neither_pydantic_nor_the_operations_it_does_not_call(
        anvil_env: dict[str, str]) -> None:
    from anvil.ops.registry import OPERATION_MODULES
    from anvil.ops.scenarios import build_scenario

    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    env = {**anvil_subprocess_env(anvil_env), "ANVIL_MCP_DEBUG": "1", "PYTHONPROFILEIMPORTTIME": "1",
           "PYTHONVERBOSE": "1"}  # the debug switch passes the spawned server's stderr (its import log) through
    command = [sys.executable, "-P", "-m", "anvil", "status", "--json"]
    routed = subprocess.run([*command, "--mcp", "stdio"], capture_output=True, env=env, cwd=anvil_env["ANVIL_ROOT"],
                            timeout=60, check=True)
    direct = subprocess.run(command, capture_output=True, env=anvil_subprocess_env(anvil_env),
                            cwd=anvil_env["ANVIL_ROOT"], timeout=60, check=True)
    imported = imported_modules(routed.stderr.decode())
    assert {"anvil.mcp.lean", "anvil.ops.handlers.project"} <= imported  # the server served the call lean
    assert not {name for name in imported if name.split(".")[0] in ("pydantic", "pydantic_core", "mcp")}
    handlers = {name for name in imported if name.startswith("anvil.ops.handlers.")}
    assert handlers == {"anvil.ops.handlers.project"}
    assert not imported & {*OPERATION_MODULES, "anvil.ops.registry", "anvil.ops.validation", "anvil.ops.specgen"}
    assert json.loads(routed.stdout) == json.loads(direct.stdout)


def test_the_cli_exchange_is_answered_without_the_sdk(project: dict[str, str]) -> None:
    lines = [encode(initialize(1)), encode({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             encode({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "get_task", "arguments": {"task_id": "T001"},
                                "_meta": {"anvil/result": "full"}}})]
    served, used_sdk = lean_session(lines, True)
    assert used_sdk is False
    assert served == sdk_session(lines, True)  # byte for byte, in the same order


@pytest.mark.parametrize("later", [{"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
                                   {"jsonrpc": "2.0", "id": 3, "method": "resources/list"}])
def test_a_session_that_asks_for_more_is_handed_to_the_sdk_after_its_lean_answers(
        project: dict[str, str], later: dict[str, Any]) -> None:
    lines = [encode(initialize(1)), encode({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             encode({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_tasks"}}),
             encode(later)]
    served, used_sdk = lean_session(lines, True)
    assert used_sdk is True
    assert [json.loads(line)["id"] for line in served] == [1, 2, 3]  # the replayed initialize is not answered twice
    assert by_message(served) == by_message(sdk_session(lines, True))


def test_a_tool_call_is_never_run_twice_across_a_handover() -> None:
    invoke = FakeInvoke()
    lines = [encode(initialize(1)), encode({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                            "params": {"name": "echo", "arguments": {"text": "once"}}}),
             encode({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
             encode({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                     "params": {"name": "echo", "arguments": {"text": "twice"}}})]
    served, used_sdk = lean_session(lines, False, operations=FAKE_OPERATIONS, invoke=invoke)
    assert used_sdk is True
    assert [call[1]["text"] for call in invoke.calls] == ["once", "twice"]
    assert sorted(json.loads(line)["id"] for line in served) == [1, 2, 3, 4]


def test_a_bug_in_a_tool_is_the_same_internal_error_on_both_paths() -> None:
    def broken(arguments: dict[str, Any], sampler: Any) -> dict[str, Any]:
        raise RuntimeError("secret detail")

    lines = [encode(initialize(1)), encode({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                            "params": {"name": "echo", "arguments": {"text": "x"}}})]
    invoke = FakeInvoke(behaviour={"echo": broken})
    served, used_sdk = lean_session(lines, False, operations=FAKE_OPERATIONS, invoke=invoke)
    wire = io.BytesIO()
    anyio.run(_run_stdio, build_server(FAKE_OPERATIONS, invoke, planning=False), wire, io.BytesIO(b"".join(lines)))
    assert used_sdk is False and served == wire.getvalue().splitlines()
    assert b"secret detail" not in b"".join(served) and b'"code\\":\\"internal\\"' in served[1]


def test_the_first_bundle_announces_the_bundle_tools_as_the_sdk_server_does(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "create_bundle", "arguments": {"bundle_id": "B1", "task_ids": ["T001", "T002"],
                                                              "coordinator": "agent-1", "actor": "lead"}}}
    lines = [encode(initialize(1)), encode(call), encode({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})]
    answers = []
    for path in ("sdk", "lean"):  # each on a project of its own: the call writes
        use_project(build_project(tmp_path / path, "ready"), monkeypatch)
        answers.append(sdk_session_answering_each(lines, True) if path == "sdk" else lean_session(lines, True)[0])
    sdk, served = answers
    assert any(json.loads(line).get("method") == "notifications/tools/list_changed" for line in served)

    assert [timeless(line) for line in served] == [timeless(line) for line in sdk]  # in the same order too


def test_the_lean_handshake_versions_are_the_sdks() -> None:
    assert lean.HANDSHAKE_VERSIONS == mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS


@pytest.mark.parametrize("line", [b"", b"\n", b"[]\n", b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n',
                                  b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}\n',
                                  b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":NaN}}\n',
                                  b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\\ud800"}}\n',
                                  b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":' + b"[" * 100 + b"]" * 100
                                  + b"}}\n", b'{"jsonrpc":"2.0","id":true,"method":"ping"}\n',
                                  b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}\n', b"\xff\n"])
def test_a_line_that_is_not_plain_json_rpc_is_left_to_the_sdk(line: bytes) -> None:
    assert lean.parse_message(line) is None


def test_the_spawned_server_never_imports_the_sdk_for_the_cli_exchange(anvil_env: dict[str, str]) -> None:
    from anvil.ops.scenarios import build_scenario

    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    lines = [encode(initialize(1)), encode({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             encode({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_project_status"}})]
    env = {**anvil_subprocess_env(anvil_env), "ANVIL_MCP_LEAN": "1"}
    result = subprocess.run([sys.executable, "-X", "importtime", "-P", "-m", "anvil.mcp", "--planning"],
                            input=b"".join(lines), capture_output=True, env=env, cwd=anvil_env["ANVIL_ROOT"],
                            timeout=60, check=True)
    imported = {row.rsplit("|", 1)[-1].strip() for row in result.stderr.decode().splitlines() if "|" in row}
    assert "anvil.mcp.lean" in imported
    assert not {name for name in imported if name.split(".")[0] in ("mcp", "mcp_types", "anyio", "starlette",
                                                                     "uvicorn")}
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    assert [reply["id"] for reply in replies] == [1, 2]
    assert replies[1]["result"]["structuredContent"]["initialized"] is True
    assert os.environ.get("ANVIL_MCP_LEAN") is None


@pytest.mark.parametrize(("caller", "server"), [({}, "1"), ({"ANVIL_MCP_LEAN": "0"}, "0")])
def test_the_cli_asks_for_the_lean_path_unless_its_caller_said_no(caller: dict[str, str], server: str) -> None:
    spawned: list[dict[str, str]] = []

    def spawn(command: list[str], **options: Any) -> Any:
        spawned.append(options["env"])
        raise OSError("not started")

    with using(Channels(spawn=spawn, open_http=spawn)), pytest.raises(TargetUnavailable):
        call_stdio("get_project_status", {}, {"PATH": "/bin", **caller}, "/", Deadline(5, McpTarget("stdio")))
    assert [env["ANVIL_MCP_LEAN"] for env in spawned] == [server]
