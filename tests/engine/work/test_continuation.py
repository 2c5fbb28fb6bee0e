"""The continuation a claim returns, copy-pasted: each command run exactly as given, as a separate
process from the claim's worktree (no ANVIL_ROOT: anvil finds the project from the worktree)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from anvil.ops.scenarios import STORE_PY, TEST_STORE_PY
from tests.gitrepo import git, make_repo, plan_in_repo
from tests.ops.support import op

CHECKOUT = str(Path(__file__).resolve().parents[3])
# This checkout's CLI, importable without PYTHONPATH (which would leak into the proved commands: the
# work's own `tests` package must not resolve to anvil's).
ANVIL = [sys.executable, "-c", f"import sys; sys.path.insert(0, {CHECKOUT!r}); sys.argv[0] = 'anvil'; "
         "from anvil.cli.main import entry; entry()"]


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` exactly as given (``anvil`` is this checkout's CLI)."""
    assert argv[0] in ("anvil", "git")
    command = [*ANVIL, *argv[1:]] if argv[0] == "anvil" else argv
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_the_commands_a_worktree_claim_returns_work_when_run_as_given(anvil_env) -> None:
    root = make_repo(Path(anvil_env["ANVIL_ROOT"]))
    plan_in_repo(anvil_env)
    env = {k: v for k, v in anvil_env.items() if k not in ("ANVIL_ROOT", "PYTHONPATH")}
    claimed = _run(["anvil", "claim", "T001", "--worktree", "--actor", "agent-1", "--json"], root, env)
    assert claimed.returncode == 0, claimed.stderr
    steps = json.loads(claimed.stdout)["continuation"]
    tree = Path(steps["cd"])
    assert tree != root and git(tree, "branch", "--show-current").strip() == "agent/t001-sqlite-storage-layer"
    for name, text in (("shortlink/__init__.py", ""), ("shortlink/store.py", STORE_PY),
                       ("tests/test_store.py", TEST_STORE_PY)):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    attest, record = steps["attest_progress"]
    git(tree, "add", "shortlink", "tests")
    for argv in (attest, record, steps["renew"], *(p["argv"] for p in steps["prove"]), steps["commit"],
                 steps["submit"]):
        done = _run(argv, tree, env)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
    recorded = json.loads((tree / attest[-1]).read_bytes())["body"]["changed_paths"]
    assert [p["path"] for p in recorded] == ["shortlink/__init__.py", "shortlink/store.py", "tests/test_store.py"]
    assert all((tree / p["artifact"]).is_file() for p in steps["prove"])
    task = op(anvil_env, "get_task", task_id="T001")
    assert task["status"] == "needs_review"
    assert git(tree, "status", "--porcelain", "--untracked-files=all", ".anvil") == ""
    decided = op(anvil_env, "apply_review_decision", task_id="T001", actor="lead", approve=True)
    assert decided["decision"] == "accepted" and decided["evidence_gaps"] == []


def test_the_work_packet_shows_the_worktree_and_the_commands_to_prove_and_submit(anvil_env, cli) -> None:
    root = make_repo(Path(anvil_env["ANVIL_ROOT"]))
    plan_in_repo(anvil_env)
    claim = cli("claim", "T001", "--worktree", "--actor", "agent-1", "--json").json()
    packet = cli("packet", "T001").stdout
    assert f"worktree {claim['worktree_path']}" in packet and "## Evidence contract" in packet
    assert f"cd {shlex.quote(claim['continuation']['cd'])}" in packet
    for prove in claim["continuation"]["prove"]:
        assert shlex.join(prove["argv"]) in packet
    assert shlex.join(claim["continuation"]["submit"]) in packet
    assert root != Path(claim["worktree_path"])


def test_the_continuation_offers_only_commands_a_proof_can_run_and_lists_the_rest() -> None:
    from anvil.engine.work.continuation import continuation

    task = {"verification": ["pytest -q", "Run the suite by hand.", "echo `date` > out.txt"]}
    steps = continuation(task, {"task_id": "T001", "generation": 2, "actor": "agent-1", "git": None})
    assert [p["command"] for p in steps["prove"]] == ["pytest -q", "echo `date` > out.txt"]
    assert steps["unprovable"] == ["Run the suite by hand."]
    shell = [p["argv"] for p in steps["prove"]][1]
    assert shell[-3:] == ["sh", "-c", "echo `date` > out.txt"]
    for prove in steps["prove"]:  # each printed line is one valid shell command line
        assert shlex.split(shlex.join(prove["argv"])) == prove["argv"]


def test_remembered_command_parsing_answers_as_parsing_afresh_and_hands_out_its_own_argv() -> None:
    from anvil.engine.work import continuation

    commands = ["pytest  -q 'tests/a b.py'", "make test | tee log", "echo 'unbalanced", "FOO=1 make", "", "~/x"]
    for command in commands:
        assert continuation.normal_command(command) == continuation._normalise(command)
        assert continuation.normal_command(command) == continuation.normal_command(command)
        argv = continuation.command_argv(command)
        assert argv == list(continuation._parse_argv(command))
        argv.append("--changed-by-the-caller")
        assert continuation.command_argv(command) == list(continuation._parse_argv(command))
    assert continuation.normal_command("pytest   -q") == "pytest -q"
    assert continuation.command_argv("make test | tee log") == ["sh", "-c", "make test | tee log"]


def test_a_command_longer_than_the_cache_limit_is_parsed_without_being_remembered() -> None:
    from anvil.engine.work import continuation

    long_command = "pytest " + "x" * continuation.COMMAND_CACHE_MAX_LENGTH
    def remembered() -> tuple[int, int]:
        return (continuation._remembered_normal.cache_info().currsize,
                continuation._remembered_argv.cache_info().currsize)

    before = remembered()
    assert continuation.normal_command(long_command) == long_command
    assert continuation.command_argv(long_command) == ["pytest", "x" * continuation.COMMAND_CACHE_MAX_LENGTH]
    assert remembered() == before
