"""A stdio session that answers the anvil CLI's single call without importing the MCP SDK.

``anvil CMD --mcp stdio`` spawns a server for one exchange: ``initialize``,
``notifications/initialized``, one ``tools/call``. Importing the SDK (some 680 pydantic models)
costs that server more than the call itself, so the CLI's client asks for this path
(``ANVIL_MCP_LEAN=1`` in the child's environment; :mod:`anvil.mcp.stdio_client`): MCP hosts never
set it and are served by the SDK exactly as before.

The lean session serves only the messages whose SDK answer it reproduces, each built by the code
the SDK server uses (:mod:`anvil.mcp.calls`):

* ``initialize`` of a handshake-era version, with no client capabilities (none the server acts on:
  a client that can sample gets the SDK) and a plain ``clientInfo``;
* ``notifications/initialized`` and ``ping`` without parameters;
* ``tools/call`` of any tool with any arguments (unknown and hidden tools, invalid arguments, tool
  errors, bugs, ``anvil/result``/``anvil/text`` in ``_meta``), and the ``tools/list_changed``
  notification the first bundle's creation sends.

A call of a listed operation whose arguments satisfy its contract exactly (:func:`anvil.ops.speccheck.
check_arguments`) runs without pydantic or the registry: only the handler's module is imported, and the
output is dumped from its model's shape (:func:`anvil.ops.speccheck.dumped_output`; one it cannot vouch
for is checked by the output model after the call). Every other call is validated by the models.

Anything else (another method, other parameters, a request before ``initialize``, a batch, a
response, a line that is not strictly plain JSON) hands the session over to the SDK server: it is
fed the session's ``initialize`` again (its duplicate answer is dropped), the
``notifications/initialized`` it saw, the line that did not fit and then the rest of stdin. A
``tools/call`` already answered is never replayed, so none runs twice. Messages are served one at a
time, as the SDK serves a client that waits for each answer, which is what the CLI does.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

from anvil import __version__
from anvil.engine.errors import AnvilError, unexpected
from anvil.mcp import calls
from anvil.ops.contract import OpSpec, load_specs
from anvil.ops.speccheck import NotSure, check_arguments, dumped_output

if TYPE_CHECKING:
    from anvil.ops.registry import Operation

logger = logging.getLogger("anvil.mcp.server")  # the SDK server's logger: the same lines either way

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The handshake-era protocol versions the SDK accepts as asked (tests/mcp/test_lean.py checks the SDK's list)."""
MAX_DEPTH = 64
"""Deeper JSON goes to the SDK, whose parser has a nesting limit of its own."""
MAX_INT = 2**63
_MESSAGE_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_CALL_KEYS = frozenset({"name", "arguments", "_meta"})
_META_KEYS = frozenset({"anvil/result", "anvil/text"})

Invoke = Callable[..., dict[str, Any]]
Tools = Callable[[], calls.ToolCalls]


class _NotPlain(ValueError):
    """A line the lean session does not read the way the SDK's parser would for sure."""


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _NotPlain("duplicate key")
    return result


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotPlain("not finite")
    return value


def _bounded(text: str) -> int:
    value = int(text)
    if abs(value) >= MAX_INT:
        raise _NotPlain("too large")
    return value


def _refuse_constant(text: str) -> Any:
    raise _NotPlain(text)


def _check_plain(value: Any, depth: int = 0) -> None:
    """Refuse nesting the SDK's parser might refuse, and text that is not valid Unicode (lone surrogates).

    Raises:
        _NotPlain: either.
    """
    if depth > MAX_DEPTH:
        raise _NotPlain("too deep")
    if isinstance(value, str):
        value.encode("utf-8")  # a lone surrogate raises UnicodeEncodeError, a ValueError
    elif isinstance(value, dict):
        for key, item in value.items():
            key.encode("utf-8")
            _check_plain(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_plain(item, depth + 1)


def parse_message(line: bytes) -> dict[str, Any] | None:
    """The JSON-RPC request or notification on ``line``, when it is plain enough to serve; else None.

    Plain: UTF-8 without a carriage return (the SDK's reader splits lines there too), one JSON object
    without duplicate keys, non-finite numbers or huge integers, at most :data:`MAX_DEPTH` deep, with
    ``jsonrpc`` 2.0, a string ``method``, an integer or string ``id`` when present and object
    ``params`` when present.
    """
    try:
        text = line.decode("utf-8")
        if "\r" in text:
            return None
        message = json.loads(text, object_pairs_hook=_unique_object, parse_float=_finite, parse_int=_bounded,
                             parse_constant=_refuse_constant)
        _check_plain(message)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or not set(message) <= _MESSAGE_KEYS or message.get("jsonrpc") != "2.0":
        return None
    if not isinstance(message.get("method"), str) or not isinstance(message.get("params", {}), dict):
        return None
    if "id" in message and (isinstance(message["id"], bool) or not isinstance(message["id"], int | str)):
        return None
    return message


def initialize_result(version: str, shown_names: frozenset[str]) -> dict[str, Any]:
    """The SDK server's ``initialize`` result at ``version`` for a server listing ``shown_names``."""
    from anvil.mcp.schema import shared_conventions

    capabilities: dict[str, Any] = {}
    resources = calls.RESOURCE_OPERATIONS <= shown_names
    prompts = calls.PROMPT_OPERATIONS <= shown_names
    if resources or prompts:
        capabilities["completions"] = {}
    capabilities["logging"] = {}
    if prompts:
        capabilities["prompts"] = {"listChanged": False}
    if resources:
        capabilities["resources"] = {"listChanged": False, "subscribe": False}
    capabilities["tools"] = {"listChanged": True}
    return {"capabilities": capabilities, "instructions": calls.INSTRUCTIONS + "\n" + shared_conventions(),
            "protocolVersion": version, "serverInfo": {"name": calls.SERVER_NAME, "version": __version__}}


def _servable_initialize(params: Mapping[str, Any]) -> str | None:
    """The protocol version of an ``initialize`` the lean session answers, else None."""
    info = params.get("clientInfo")
    plain_info = isinstance(info, dict) and set(info) == {"name", "version"} and all(
        isinstance(value, str) for value in info.values())
    version = params.get("protocolVersion")
    if set(params) == {"protocolVersion", "capabilities", "clientInfo"} and params["capabilities"] == {} \
            and plain_info and version in HANDSHAKE_VERSIONS:
        return str(version)
    return None


def _servable_call(params: Mapping[str, Any]) -> bool:
    meta = params.get("_meta")
    return (set(params) <= _CALL_KEYS and isinstance(params.get("name"), str)
            and (params.get("arguments") is None or isinstance(params["arguments"], dict))
            and (meta is None or (isinstance(meta, dict) and set(meta) <= _META_KEYS)))


@dataclass
class Handover:
    """What the SDK server is to be fed to take a session over.

    Attributes:
        replay: the lines it reads before the rest of the input, in order.
        suppressed_id: the id of the replayed ``initialize``, whose answer the client already has (None:
            nothing was answered yet).
        bundles_seen: the session already announced the bundle tools.
    """

    replay: list[bytes]
    suppressed_id: int | str | None
    bundles_seen: bool

    def source(self, rest: BinaryIO) -> BinaryIO:
        """The SDK's input: the replayed lines, then whatever ``rest`` still holds."""
        return io.BufferedReader(_Replayed(b"".join(self.replay), rest))


class _Replayed(io.RawIOBase):
    """Bytes already read, then the rest of a stream (read from its buffer: nothing read ahead is lost)."""

    def __init__(self, prefix: bytes, rest: BinaryIO) -> None:
        super().__init__()
        self._prefix = prefix
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._prefix:
            count = min(len(view), len(self._prefix))
            view[:count] = self._prefix[:count]
            self._prefix = self._prefix[count:]
            return count
        data = self._rest.read1(len(view)) if hasattr(self._rest, "read1") else self._rest.read(len(view))
        view[:len(data)] = data
        return len(data)


@dataclass
class LeanSession:
    """One stdio session served without the SDK, until its input ends or it needs the SDK."""

    shown_names: frozenset[str]
    load_tools: Tools
    wire: BinaryIO
    invoke: Invoke
    specs: Mapping[str, OpSpec] | None = None
    """The operation contract, for the calls it validates without pydantic (None: every call is validated
    with the models; see :meth:`_checked_call`)."""
    checked_options: Mapping[str, Any] = field(default_factory=dict)
    """What :func:`anvil.ops.invoke.invoke_checked` is given besides the call (the ``env`` and ``cwd`` an
    in-process server binds)."""
    bundles_seen: bool = False
    _initialize: tuple[bytes, int | str] | None = None
    _initialized: list[bytes] = field(default_factory=list)

    def serve(self, source: BinaryIO) -> Handover | None:
        """Answer ``source``'s messages; None at the end of input, else the handover to the SDK.

        Raises:
            OSError: the protocol stream cannot be written.
        """
        while True:
            line = source.readline()
            if not line:
                return None
            if not self._answer(line, parse_message(line)):
                return self._handover(line)

    def _handover(self, line: bytes) -> Handover:
        replay = [*([self._initialize[0]] if self._initialize else []), *self._initialized, line]
        return Handover(replay, self._initialize[1] if self._initialize else None, self.bundles_seen)

    def _answer(self, line: bytes, message: dict[str, Any] | None) -> bool:
        """Serve one message; False when the SDK must (nothing was written then)."""
        if message is None:
            return False
        method, params = message["method"], message.get("params")
        if "id" not in message:  # a notification: only the handshake's is the lean session's
            if method != "notifications/initialized" or params or self._initialize is None:
                return False
            self._initialized.append(line)
            return True
        request_id = message["id"]
        if self._initialize is None:
            version = _servable_initialize(params or {}) if method == "initialize" else None
            if version is None:
                return False
            self._initialize = (line, request_id)
            self._respond(request_id, initialize_result(version, self.shown_names))
            return True
        if method == "ping" and not params:
            self._respond(request_id, {})
            return True
        if method == "tools/call" and params is not None and _servable_call(params):
            self._respond(request_id, self._call(params["name"], params.get("arguments") or {}, params.get("_meta")))
            return True
        return False

    @property
    def tools(self) -> calls.ToolCalls:
        """Every operation of the registry (loaded on first use: a contract-checked call never needs it)."""
        return self.load_tools()

    def _call(self, name: str, arguments: dict[str, Any], meta: Mapping[str, Any] | None) -> dict[str, Any]:
        """The SDK server's ``call_tool`` for a stdio caller, run in this thread."""
        started = time.monotonic()
        error: AnvilError | None = None
        try:
            checked = self._checked_call(name, arguments, meta)
            prepared = self.tools.prepare(name, arguments) if checked is None else None
            if checked is not None:
                result, error = checked
            elif isinstance(prepared, AnvilError):
                error = prepared
                result = calls.error_result(error)
            else:
                assert prepared is not None
                op, validated = prepared
                result, error = self._run(
                    op.name, lambda: self.invoke(op.name, validated, sampler=None, principal=None, remote=False),
                    lambda raw: calls.checked_output(op, raw), arguments, meta)
        except Exception as exc:  # a bug, even while reporting an error: one result, one log line
            logger.exception("tool %r failed unexpectedly", name[:64])
            error = unexpected(exc)
            result = calls.error_result(error)
        try:
            calls.log_call(name, calls.acting_name(arguments), error, started)
        except Exception:  # logging never changes a call's result
            logger.exception("logging a tool call failed")
        return result

    def _checked_call(self, name: str, arguments: dict[str, Any], meta: Mapping[str, Any] | None
                      ) -> tuple[dict[str, Any], AnvilError | None] | None:
        """A listed operation's call whose arguments the contract check accepts, run without pydantic or
        the registry (:mod:`anvil.ops.speccheck`); None: the models validate it (anything else)."""
        spec = None if self.specs is None or name not in self.shown_names else self.specs.get(name)
        validated = None if spec is None else check_arguments(spec, arguments)
        if validated is None:
            return None
        from anvil.ops.invoke import invoke_checked

        def dump(raw: dict[str, Any]) -> dict[str, Any]:
            try:
                return dumped_output(name, raw)
            except NotSure:  # the call ran: its output is checked as the model checks any other
                return calls.checked_output(self.tools.by_name[name], raw)

        options = {**self.checked_options, "sampler": None, "principal": None, "remote": False}
        return self._run(name, lambda: invoke_checked(name, validated, **options), dump, arguments, meta)

    def _run(self, name: str, run: Callable[[], dict[str, Any]], check: Callable[[dict[str, Any]], dict[str, Any]],
             arguments: dict[str, Any], meta: Mapping[str, Any] | None) -> tuple[dict[str, Any], AnvilError | None]:
        try:
            output = check(run())
        except AnvilError as err:
            return calls.error_result(err), err
        if name == calls.FIRST_BUNDLE_TOOL and not self.bundles_seen:
            self.bundles_seen = True
            self._write({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return calls.success_result(name, output, arguments, meta), None

    def _respond(self, request_id: int | str, result: dict[str, Any]) -> None:
        self._write({"jsonrpc": "2.0", "id": request_id, "result": result})

    def _write(self, message: dict[str, Any]) -> None:
        self.wire.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
        self.wire.flush()


def serve_lean(source: BinaryIO, wire: BinaryIO, *, planning: bool | None = None,
               operations: Sequence[Operation] | None = None, invoke: Invoke | None = None) -> Handover | None:
    """Serve a stdio session without the SDK for as long as it can be; see the module docstring.

    Args:
        source: the protocol input (a buffered binary stream: its read-ahead stays for the handover).
        wire: where protocol messages go.
        planning: list the planning tools too; None reads ``ANVIL_MCP_PLANNING``.
        operations: the registered operations (default: the registry's).
        invoke: runs one operation (default: :func:`anvil.ops.invoke.invoke`; it, or a ``functools.partial`` of
            it, lets a call the contract check accepts run without pydantic: see :func:`_checked_options`).

    Returns:
        None when the input ended; else what the SDK server must be fed to take over.

    Raises:
        OSError: the protocol stream cannot be written.
        ValueError: two operations share a name.
    """
    from anvil.ops.invoke import invoke as run_operation

    specs: dict[str, OpSpec] | None = None
    options = _checked_options(invoke, run_operation)
    if operations is None and options is not None:
        specs = {spec.name: spec for spec in load_specs()}
        shown = calls.shown_names(list(specs.values()), planning=planning)
    else:
        shown = calls.ToolCalls.of(operations if operations is not None else _registry(), planning=planning).shown_names

    @functools.cache
    def load_tools() -> calls.ToolCalls:
        return calls.ToolCalls.of(operations if operations is not None else _registry(), planning=planning)

    session = LeanSession(shown, load_tools, wire, run_operation if invoke is None else invoke, specs,
                          options or {}, calls.bundles_forced())
    return session.serve(source)


def _checked_options(invoke: Invoke | None, run_operation: Invoke) -> dict[str, Any] | None:
    """The options a contract-checked call runs with: none for the default ``invoke``, the keywords of
    ``functools.partial(invoke, ...)`` (an in-process server's ``env`` and ``cwd``); None for any other
    ``invoke`` (a test's stand-in: every call goes to it, validated by the models)."""
    if invoke is None:
        return {}
    if isinstance(invoke, functools.partial) and invoke.func is run_operation and not invoke.args:
        return dict(invoke.keywords)
    return None


def _registry() -> list[Operation]:
    from anvil.ops.registry import all_operations

    return all_operations()
