"""The CLI's entry point: a reader that closes the pipe early ends any command quietly with exit 141."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import ANVIL, anvil_subprocess_env


def run_into_a_closed_pipe(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the first write fails with EPIPE
    try:
        return subprocess.run([*ANVIL, *args], stdout=write_end, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              env=anvil_subprocess_env(env), timeout=60, cwd=env["ANVIL_ROOT"])
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", [["--help"], ["status"], ["status", "--json"]], ids=" ".join)
def test_a_closed_stdout_ends_the_command_quietly_with_141(anvil_env: dict[str, str], args: list[str]) -> None:
    proc = run_into_a_closed_pipe(args, anvil_env)
    assert (proc.returncode, proc.stderr) == (141, b""), proc.stderr.decode()
