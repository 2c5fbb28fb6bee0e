"""Proof and attestation files are read by the CLI and sent as base64: the same commands work direct,
over stdio and against a remote server, from a linked worktree and from a directory outside the project."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from anvil.ops.scenarios import STORE_PY, TEST_STORE_PY
from tests.conftest import ANVIL, CliResult, anvil_subprocess_env
from tests.gitrepo import git, make_repo, plan_in_repo
from tests.mcp.support import TOKEN, ServerProcess


def test_proof_and_attestation_files_travel_from_a_linked_worktree_and_from_outside_the_project(
        anvil_env: dict[str, str], cli: Callable[..., CliResult], http_server_process: Callable[..., ServerProcess],
        tmp_path: Path) -> None:
    make_repo(Path(anvil_env["ANVIL_ROOT"]))
    plan_in_repo(anvil_env)
    claim = cli("claim", "T001", "--worktree", "--actor", "agent-1", "--json").json()
    linked = Path(claim["continuation"]["cd"])
    for name, text in (("shortlink/__init__.py", ""), ("shortlink/store.py", STORE_PY),
                       ("tests/test_store.py", TEST_STORE_PY)):
        (linked / name).parent.mkdir(parents=True, exist_ok=True)
        (linked / name).write_text(text)
    # No ANVIL_ROOT: the linked worktree finds its project. No PYTHONPATH: the proven command imports the
    # worktree's own tests package, not this checkout's (anvil is installed in the interpreter running the suite).
    worktree_env = {k: v for k, v in anvil_subprocess_env(anvil_env).items() if k not in ("ANVIL_ROOT", "PYTHONPATH")}

    def anvil(*args: str, cwd: Path, env: dict[str, str] = worktree_env) -> dict:  # type: ignore[type-arg]
        cut = args.index("--") if "--" in args else len(args)  # options end where a proven command starts
        proc = subprocess.run([*ANVIL, *args[:cut], "--json", *args[cut:]], env=env, cwd=cwd, capture_output=True,
                              text=True, timeout=90)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(proc.stdout)  # type: ignore[no-any-return]

    prove = claim["continuation"]["prove"][0]
    proof = anvil(*prove["argv"][1:], cwd=linked)  # the command the claim's continuation names
    assert proof["passed"] and proof["path"] == str(linked / prove["artifact"])
    attest = anvil("attest", "T001", "--actor", "agent-1", "--out", ".anvil/proofs/att.json", cwd=linked)
    git(linked, "add", "shortlink", "tests")
    git(linked, "commit", "-q", "-m", "T001")  # a submission hands in the claim branch's head
    # Over stdio from the linked worktree, with paths relative to it: the server resolves the main project.
    dry = anvil("submit", "T001", "--actor", "agent-1", "--proof", prove["artifact"], "--dry-run", "--mcp", "stdio",
                cwd=linked)
    assert [p["digest"] for p in dry["claim_bound_command_proofs"]] == [proof["digest"]]
    # Against an HTTP server, from a directory outside the project holding copies of the files.
    server = http_server_process()
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    shutil.copy(proof["path"], laptop / "proof.json")
    shutil.copy(attest["path"], laptop / "att.json")
    remote = [*("--mcp", f"http://127.0.0.1:{server.port}/mcp", "--mcp-token-env", "MCP_TEST_TOKEN")]
    laptop_env = worktree_env | {"MCP_TEST_TOKEN": TOKEN}
    progress = anvil("progress", "T001", "--actor", "agent-1", "--attestation-file", "att.json", *remote,
                     cwd=laptop, env=laptop_env)
    assert progress["attestation"]["digest"] == attest["digest"]
    submitted = anvil("submit", "T001", "--actor", "agent-1", "--proof", "proof.json", *remote, cwd=laptop,
                      env=laptop_env)
    assert [p["digest"] for p in submitted["claim_bound_command_proofs"]] == [proof["digest"]]
    assert not (Path(anvil_env["ANVIL_ROOT"]) / "proof.json").exists()
