"""Every command, human and --json, ends quietly when its reader has closed the pipe: 141 (or 0, or the
command's own error code), never 1, and nothing on stderr but anvil's own error lines.

One child process imports anvil once and forks per command; each fork's stdout is a real pipe
whose reading end is already closed, so the first write fails with EPIPE.
"""

from __future__ import annotations

import json
import subprocess
import sys

from anvil.ops.cliargs import cli_argv_for
from anvil.ops.registry import all_operations
from anvil.ops.specgen import op_spec
from tests.conftest import anvil_subprocess_env
from tests.ops.support import scenario

CHILD = r"""
import importlib, json, os, sys
from anvil.cli.main import entry
import anvil.cli.app, anvil.cli.render, anvil.cli.fast, anvil.ops.invoke  # imported once, before the forks
from anvil.ops.registry import all_operations
for op in all_operations():
    importlib.import_module(op.handler.partition(":")[0])
anvil.cli.app.build_app(dict(os.environ))
results = []
for argv in json.loads(sys.argv[1]):
    err = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    pid = os.fork()
    if pid == 0:
        read_end, write_end = os.pipe()
        os.close(read_end)
        os.dup2(write_end, 1)
        os.dup2(err, 2)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        sys.argv = ["anvil", *argv]
        try:
            entry()  # what the console script runs: main, then the final flush
            code = 98
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 97
        except BaseException as exc:
            print(f"escaped: {type(exc).__name__}", file=sys.stderr)
            code = 99
        sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    os.close(err)
    with open(sys.argv[2], encoding="utf-8", errors="replace") as handle:
        results.append([argv, os.waitstatus_to_exitcode(status), handle.read()])
print(json.dumps(results))
"""


def command_lines() -> list[list[str]]:
    lines: list[list[str]] = [["--help"], ["claim", "--help"], ["--version"]]
    for op in all_operations():
        example = next((e for e in op.examples if e.error is None), None)
        argv = cli_argv_for(op_spec(op), example.input) if example else list(op.cli_path)
        lines += [argv, [*argv, "--json"]]
    return lines


def test_every_command_exits_quietly_into_a_closed_pipe(anvil_env: dict[str, str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    scenario(anvil_env, "claimed")
    lines = command_lines()
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(lines), str(tmp_path / "stderr")],
                          env=anvil_subprocess_env(anvil_env), cwd=anvil_env["ANVIL_ROOT"], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout)
    assert len(results) == len(lines)
    bad = []
    for argv, code, err in results:
        stray = [line for line in err.splitlines() if line and not line.startswith("anvil: error:")]
        if code == 1 or code == 99 or stray:
            bad.append((argv, code, err[-300:]))
    assert bad == [], bad
    assert sum(1 for _, code, _ in results if code == 141) > len(lines) // 2, "most commands print, so most are 141"
