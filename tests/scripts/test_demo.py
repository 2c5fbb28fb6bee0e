"""The README quickstart (`bash scripts/demo.sh`) runs the full loop, lands the work on the remote and ends
with a verified log."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "scripts" / "demo.sh"


def test_the_quickstart_demo_runs_the_worktree_and_proof_loop_to_a_verified_log(tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "anvil").exists() or shutil.which("git") is None:
        pytest.skip("the demo runs the installed `anvil` command: pip install -e . in this interpreter's venv")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANVIL_", "PYTHONPATH"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", TMPDIR=str(tmp_path), NO_COLOR="1")
    done = subprocess.run(["bash", str(DEMO)], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"claimed T\d+ \(generation 1\) in worktree .*\.worktrees/", out)
    assert "event action  progress.attested" in out and "signed by ed25519:" in out
    assert "evidence contract is unproven at the verified level" in done.stderr  # before anyone verified
    assert re.search(r"verified: task T\d+ at commit [0-9a-f]{12}", out) and "by runner-1" in out
    assert "VERIFIED: an identity other than the implementer re-ran every contract command" in out
    assert re.search(r"decision\s+T\d+ accepted", out) and re.search(r"trust\s+VERIFIED", out)
    assert re.search(r"replay ok\s+yes", out)
    assert re.search(r"landed T\d+ on main on origin at [0-9a-f]{12} \(1 command\(s\) re-proven", out)
    assert re.search(r"^[0-9a-f]{7,} T\d+: storage layer$", out, re.M)  # the remote's main holds the work
