"""Anvil processes forked from a warm template: real, separate processes without the start-up cost.

``python -m anvil`` spends about 0.07 s of CPU before it does anything, and ``python -m anvil.mcp``
about 0.6 s (the interpreter, then the MCP SDK's pydantic models); the suite starts hundreds of
them. Here each process is forked from a template process (multiprocessing's forkserver) that has
imported anvil, its CLI and the SDK once (:mod:`tests.warm_template`), and then runs the module's
``__main__`` exactly as ``python -m`` does (``runpy``), with its own environment, working
directory, argv, standard streams, signal dispositions, atexit run and exit code. The template
never runs a test or opens a connection, so nothing but imported modules is shared.

Use it where a process is the vehicle of a test (a server to talk to, a CLI call that must run in
its own process). Spawn ``python -m`` where the start of the interpreter is the subject: what an
entry point imports, interpreter flags, the cost of a fresh process.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

TEMPLATE = "tests.warm_template"
CHECKOUT = Path(__file__).resolve().parents[1]
_FORKS = multiprocessing.get_context("forkserver")
_FORKS.set_forkserver_preload([TEMPLATE])
_checked: list[int] = []  # the template process found to have imported TEMPLATE


def _template_loaded(reply: Any) -> None:
    reply.send(TEMPLATE in sys.modules)


def forks() -> multiprocessing.context.ForkServerContext:
    """The forkserver context, with its template process running (one per pytest process).

    The template is started from the checkout root: Python 3.11's forkserver ignores the parent's
    ``sys.path`` and imports its preload list relative to its own working directory, skipping (silently)
    a module it cannot import. A template without :mod:`tests.warm_template` would still work, slowly,
    so it is refused here instead.

    Raises:
        RuntimeError: the template process did not import :mod:`tests.warm_template`.
    """
    from multiprocessing import forkserver

    if forkserver._forkserver._forkserver_pid in _checked:  # type: ignore[attr-defined]
        forkserver.ensure_running()  # restarts a template that died (the new one is checked below)
    else:
        here, saved = os.getcwd(), dict(os.environ)
        os.chdir(CHECKOUT)
        for name in [n for n in os.environ if n.startswith("ANVIL_") or n == "PYTEST_CURRENT_TEST"]:
            del os.environ[name]  # the template (and a child keeping its environment) owes nothing to a test
        try:
            forkserver.ensure_running()
        finally:
            os.chdir(here)
            os.environ.update(saved)
    pid = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    if pid not in _checked:
        receive, send = _FORKS.Pipe(duplex=False)
        probe = _FORKS.Process(target=_template_loaded, args=(send,), daemon=True)
        probe.start()
        loaded = receive.recv() if receive.poll(60) else False
        probe.join(30)
        receive.close()
        send.close()
        if not loaded:
            raise RuntimeError(f"the warm template process did not import {TEMPLATE}")
        _checked.append(pid)
    return _FORKS


def _open_onto(fd: int, path: str, flags: int) -> None:
    opened = os.open(path, flags, 0o600)
    if opened != fd:
        os.dup2(opened, fd)
        os.close(opened)


def _exit_code(stop: SystemExit) -> int:
    """What the interpreter makes of ``SystemExit(code)`` at the top level."""
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code & 0xFF
    print(stop.code, file=sys.stderr)
    return 1


def _child(module: str, argv: list[str], env: dict[str, str], cwd: str, stdin: str, stdout: str,
           stderr: str, safe_path: bool = False) -> None:
    """In the forked process: become ``python -m MODULE ARGV`` in ``env`` and ``cwd``, then exit."""
    import atexit
    import runpy
    import traceback

    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _open_onto(0, stdin, os.O_RDONLY)
    _open_onto(1, stdout, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    _open_onto(2, stderr, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    encoding = env.get("PYTHONIOENCODING", "utf-8").split(":")[0] or "utf-8"
    sys.stdin = open(0, encoding=encoding, closefd=False)  # noqa: SIM115  (the process's own stream)
    sys.stdout = open(1, "w", encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding=encoding, errors="backslashreplace", closefd=False)  # noqa: SIM115
    sys.argv = [module, *argv]  # runpy puts the module's __main__ path in argv[0], as -m does
    if not safe_path:  # python -P leaves the directory out
        sys.path.insert(0, os.getcwd())  # as -m does (anvil itself is already imported from the template)
    code = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        code = _exit_code(stop)
    except KeyboardInterrupt:
        traceback.print_exc()
        code = 130
    except BaseException:  # noqa: BLE001  (the interpreter's own last resort: traceback, exit 1)
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


class WarmProcess:
    """A forked ``python -m MODULE`` with the parts of :class:`subprocess.Popen` the tests use."""

    def __init__(self, module: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | os.PathLike[str],
                 stdout: str | os.PathLike[str], stderr: str | os.PathLike[str] | None = None,
                 stdin: str | os.PathLike[str] | None = None, safe_path: bool = False) -> None:
        self.args = [sys.executable, *(["-P"] if safe_path else []), "-m", module, *argv]
        self._process = forks().Process(target=_child, args=(
            module, list(argv), dict(env), str(cwd), str(stdin or os.devnull), str(stdout), str(stderr or stdout),
            safe_path), daemon=True)  # a test that fails before stopping it leaves nothing running after the session
        self._process.start()
        self.pid = self._process.pid
        self.returncode: int | None = None
        self.stdin: BinaryIO | None = None  # set by spawn_piped
        self.stdout: BinaryIO | None = None
        self._scratch: str | None = None

    def poll(self) -> int | None:
        if self.returncode is None and self._process.exitcode is not None:
            self.returncode = self._process.exitcode
            self._process.close()
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """The exit code (negative: the signal that ended it).

        Raises:
            subprocess.TimeoutExpired: still running after ``timeout`` seconds.
        """
        if self.returncode is None:
            self._process.join(timeout)
            if self.poll() is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def spawn_piped(command: Sequence[str], *, stdin: Any = None, stdout: Any = None, stderr: Any = None,
                cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> WarmProcess:
    """``subprocess.Popen([python, (-P,) -m, MODULE, *ARGV], stdin=PIPE, stdout=PIPE, ...)``, forked warm.

    The shape of :attr:`anvil.mcp.channels.Channels.spawn`: the CLI's stdio client then talks to a real
    server process over real pipes (named pipes in a scratch directory, removed when the process has
    ended), and only the interpreter start is saved. Standard error goes nowhere.

    Raises:
        ValueError: ``command`` is not ``python -m MODULE`` (with at most ``-P``) or asks for no pipes.
    """
    if stdin != subprocess.PIPE or stdout != subprocess.PIPE or command[0] != sys.executable or "-m" not in command:
        raise ValueError(f"spawn_piped runs python -m with piped stdin and stdout, not {command!r}")
    at = list(command).index("-m")
    flags, module, argv = list(command[1:at]), command[at + 1], list(command[at + 2:])
    if set(flags) - {"-P"}:
        raise ValueError(f"spawn_piped knows only the -P flag, not {flags!r}")
    scratch = tempfile.mkdtemp(prefix="anvil-warm-pipes-")
    into, out_of = os.path.join(scratch, "stdin"), os.path.join(scratch, "stdout")
    os.mkfifo(into)
    os.mkfifo(out_of)
    process = WarmProcess(module, argv, env=dict(os.environ if env is None else env), cwd=cwd or os.getcwd(),
                          stdin=into, stdout=out_of, stderr=os.devnull, safe_path="-P" in flags)
    process._scratch = scratch
    # The child opens its stdin, then its stdout; opening each end here in that order meets it. The
    # first wait is bounded (a child that died before opening its stdin never would).
    deadline = time.monotonic() + 60
    while True:
        try:
            writer = os.open(into, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO or process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise
            threading.Event().wait(0.002)
    os.set_blocking(writer, True)
    process.stdin = open(writer, "wb")  # noqa: SIM115  (owned by the process object, as Popen's are)
    process.stdout = open(out_of, "rb")  # noqa: SIM115
    return process


def run(module: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | os.PathLike[str],
        input: str | None = None, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([python, "-m", module, *argv], capture_output=True, text=True, ...)``, forked warm.

    Raises:
        subprocess.TimeoutExpired: the process ran longer than ``timeout`` (it is killed).
    """
    with tempfile.TemporaryDirectory(prefix="anvil-warm-") as scratch:
        streams = Path(scratch)
        stdin = None
        if input is not None:
            stdin = streams / "stdin"
            stdin.write_text(input, encoding="utf-8")
        process = WarmProcess(module, argv, env=env, cwd=cwd, stdin=stdin, stdout=streams / "stdout",
                              stderr=streams / "stderr")
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)
            raise
        out, err = (streams / name for name in ("stdout", "stderr"))
        return subprocess.CompletedProcess(process.args, code, out.read_text(encoding="utf-8") if out.exists() else "",
                                           err.read_text(encoding="utf-8") if err.exists() else "")


def anvil(argv: Sequence[str], *, env: Mapping[str, str], cwd: str | os.PathLike[str], input: str | None = None,
          timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``python -m anvil ARGV`` in its own (warm-forked) process: exit code, stdout and stderr as text."""
    return run("anvil", argv, env=env, cwd=cwd, input=input, timeout=timeout)
