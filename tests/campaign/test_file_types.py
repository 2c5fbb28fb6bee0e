"""File-type attacks: a file named to the CLI or a local server that is a device, a FIFO or a link to one.

Each was once read whole (``/dev/zero`` grew the process to 23 GB) or forever (``/dev/urandom``, a
FIFO nobody writes). Each call here must be refused at once with ``local_file_not_regular`` and
write nothing; the subprocess timeout bounds a regression to seconds, not an OOM kill.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.campaign.support import StdioSession
from tests.conftest import ANVIL, anvil_subprocess_env
from tests.ops.support import events, scenario

TARGETS = ["/dev/zero", "/dev/urandom", "fifo", "link-to-zero"]


def _target(root: Path, name: str) -> str:
    if name == "fifo":
        os.mkfifo(root / "pipe")
        return "pipe"
    if name == "link-to-zero":
        (root / "zero.json").symlink_to("/dev/zero")  # inside the project, innocently named
        return "zero.json"
    return name


@pytest.mark.parametrize("name", TARGETS)
@pytest.mark.parametrize("flags", [("progress", "T001", "--attestation-file"),
                                   ("submit", "T001", "--file", "a.py", "--proof")], ids=["progress", "submit"])
def test_the_cli_refuses_a_file_that_is_not_regular_at_once(anvil_env: dict[str, str], name: str,
                                                             flags: tuple[str, ...]) -> None:
    root = scenario(anvil_env, "claimed")
    before = len(events(anvil_env))
    proc = subprocess.run([*ANVIL, *flags, _target(root, name), "--actor", "agent-1", "--json"],
                          env=anvil_subprocess_env(anvil_env), cwd=root, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert '"local_file_not_regular"' in proc.stdout
    assert len(events(anvil_env)) == before


@pytest.mark.parametrize("name", TARGETS)
def test_a_stdio_server_refuses_a_named_file_that_is_not_regular(anvil_env: dict[str, str], name: str) -> None:
    root = scenario(anvil_env, "claimed")
    before = len(events(anvil_env))
    target = _target(root, name)
    with StdioSession(anvil_env) as session:
        progress = session.call("submit_progress", {"task_id": "T001", "actor": "agent-1",
                                                    "attestation_file": target})
        proof = session.call("submit_completion_evidence", {"task_id": "T001", "actor": "agent-1",
                                                             "commands_run": [], "files_changed": ["a.py"],
                                                             "proof_files": [target]})
        assert "Traceback" not in session.close()
    assert progress["error"]["code"] == proof["error"]["code"] == "local_file_not_regular"
    assert len(events(anvil_env)) == before


def test_a_prd_file_that_is_a_device_link_is_refused(anvil_env: dict[str, str]) -> None:
    root = Path(anvil_env["ANVIL_ROOT"])
    (root / "prd.md").symlink_to("/dev/zero")
    for route in ([], ["--mcp", "stdio"]):
        proc = subprocess.run([*ANVIL, "prd", "parse", "--file", "prd.md", *route, "--json"],
                              env=anvil_subprocess_env(anvil_env), cwd=root, capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 2 and '"local_file_not_regular"' in proc.stdout, proc.stdout + proc.stderr
