"""The caller-side commands end to end in real git repositories: ``anvil proof run``, ``anvil attest``,
``anvil keys generate``, and what submit, progress, renew and apply make of their artifacts."""

from __future__ import annotations

import base64
import contextlib
import json
import os
from pathlib import Path

import pytest

from anvil.engine.errors import UsageError
from anvil.ops.scenarios import STORE_PY, TEST_STORE_PY
from tests import warm
from tests.gitrepo import branches, git, make_repo, plan_in_repo, worktrees
from tests.mcp.support import TOKEN
from tests.ops.support import assert_replays, op, store_of

VERIFY = ["python", "-m", "unittest", "-q", "tests/test_store.py"]


def _do_work(root: Path, *, commit: bool = True) -> None:
    """T001's work written in ``root`` (and committed on the branch checked out there)."""
    for name, text in (("shortlink/__init__.py", ""), ("shortlink/store.py", STORE_PY),
                       ("tests/test_store.py", TEST_STORE_PY)):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    if commit:
        git(root, "add", "shortlink", "tests")
        git(root, "commit", "-q", "-m", "T001: storage layer")


@pytest.fixture
def claimed(anvil_env, cli):  # type: ignore[no-untyped-def]
    """T001 claimed by agent-1 on a branch of a real repository, with its work done and committed."""
    root = make_repo(Path(anvil_env["ANVIL_ROOT"]))
    plan_in_repo(anvil_env)
    claim = cli("claim", "T001", "--branch", "--actor", "agent-1", "--json").json()
    _do_work(root)
    return root, claim


def _prove(cli, *extra: str, command: list[str] = VERIFY) -> dict:  # type: ignore[no-untyped-def]
    out = cli("proof", "run", "T001", "--actor", "agent-1", "--json", *extra, "--", *command)
    return {**out.json(), "exit": out.code}


def test_a_proven_verification_command_is_submitted_and_approved(claimed, cli) -> None:
    root, claim = claimed
    proof = _prove(cli)
    assert proof["exit"] == 0 and proof["passed"] and proof["trust_mode"] == "client_reported"
    assert proof["signed_by"] is None
    assert proof["path"] == str(root / claim["continuation"]["prove"][0]["artifact"])
    assert proof["cwd"] == str(root) and proof["argv"] == VERIFY
    assert git(root, "status", "--porcelain", "--untracked-files=all", ".anvil") == ""  # git ignores proofs
    out = cli("submit", "T001", "--actor", "agent-1", "--generation", str(claim["generation"]), "--proof",
              proof["path"], "--file", "shortlink/store.py", "--json").json()
    assert out["commands_run"] == ["python -m unittest -q tests/test_store.py"]
    assert [p["digest"] for p in out["claim_bound_command_proofs"]] == [proof["digest"]]
    assert out["missing_claim_bound_proofs"] == [] and out["missing_legacy_evidence"] == []
    assert out["hook_command_proofs"] == []
    decided = cli("apply", "T001", "--approve", "--actor", "lead", "--json").json()
    assert decided["decision"] == "accepted" and decided["evidence_gaps"] == []
    assert_replays(dict(os.environ))


def test_unproven_work_is_refused_at_approval_and_advisory_records_the_gap(claimed, cli) -> None:
    _, claim = claimed
    unproven = cli("submit", "T001", "--actor", "agent-1", "--command", " ".join(VERIFY), "--json")
    assert unproven.json()["error"]["code"] == "submission_unproven"  # the enforcing gate keeps the claim live
    cli("config", "--evidence-gate", "advisory", "--actor", "lead", "--json")
    cli("submit", "T001", "--actor", "agent-1", "--command", " ".join(VERIFY), "--json")
    cli("config", "--evidence-gate", "enforcing", "--actor", "lead", "--json")  # tightened since
    refused = cli("apply", "T001", "--approve", "--actor", "lead", "--json")
    error = refused.json()["error"]
    assert refused.code == 5 and error["code"] == "claim_unproven" and "tests/test_store.py" in error["message"]
    assert op(dict(os.environ), "get_task", task_id="T001")["status"] == "needs_review"
    cli("config", "--evidence-gate", "advisory", "--actor", "lead", "--json")
    decided = cli("apply", "T001", "--approve", "--actor", "lead", "--json").json()
    assert decided["decision"] == "accepted"
    assert decided["evidence_gaps"] == ["no passing proof of `python -m unittest -q tests/test_store.py`"]


def test_an_evidence_rejection_of_completely_proven_work_counts_as_quality(claimed, cli) -> None:
    proof = _prove(cli)
    cli("submit", "T001", "--actor", "agent-1", "--proof", proof["path"], "--json")
    out = cli("apply", "T001", "--reject", "--reason", "meh", "--reason-code", "evidence", "--actor", "lead",
              "--json").json()
    assert out["reason_code"] == "quality"


def test_tampered_and_reencoded_artifacts_are_refused(claimed, cli) -> None:
    proof = _prove(cli)
    path = Path(proof["path"])
    original = path.read_bytes()
    document = json.loads(original)
    document["body"]["exit_code"] = 0
    document["body"]["output_excerpt"] = "all good"
    path.write_bytes(json.dumps(document, sort_keys=True, separators=(",", ":")).encode())
    out = cli("submit", "T001", "--actor", "agent-1", "--proof", str(path), "--json")
    assert out.code == 5 and out.json()["error"]["code"] == "proof_tampered"
    path.write_bytes(json.dumps(json.loads(original), indent=1).encode())
    out = cli("submit", "T001", "--actor", "agent-1", "--proof", str(path), "--json")
    assert out.code == 2 and out.json()["error"]["code"] == "proof_invalid"
    assert op(dict(os.environ), "get_task", task_id="T001")["status"] == "claimed"


def test_one_failing_proof_refuses_the_whole_batch(claimed, cli) -> None:
    good = _prove(cli)
    bad = _prove(cli, command=["python", "-c", "raise SystemExit(3)"])
    assert bad["exit"] == 5 and bad["exit_code"] == 3 and not bad["passed"]
    out = cli("submit", "T001", "--actor", "agent-1", "--proof", good["path"], "--proof", bad["path"], "--json")
    assert out.code == 5 and out.json()["error"]["code"] == "proof_failed"
    twice = cli("submit", "T001", "--actor", "agent-1", "--proof", good["path"], "--proof", good["path"], "--json")
    assert twice.json()["error"]["code"] == "proof_duplicate"


def test_a_proof_from_another_generation_is_refused_and_never_replayed(claimed, cli) -> None:
    root, claim = claimed
    proof = _prove(cli)
    kept = Path(proof["path"]).read_bytes()
    assert cli("release", "T001", "--actor", "agent-1", "--generation", "1", "--json").code == 0
    again = cli("claim", "T001", "--branch", "--actor", "agent-1", "--json").json()
    assert again["generation"] == 2 and again["branch"].endswith("-g2")  # a branch of its own
    git(root, "commit", "-q", "--allow-empty", "-m", "resume T001")  # the work is there from generation 1
    Path(proof["path"]).write_bytes(kept)
    out = cli("submit", "T001", "--actor", "agent-1", "--proof", proof["path"], "--json")
    assert out.code == 5 and out.json()["error"]["code"] == "proof_stale"
    fresh = _prove(cli)
    assert cli("submit", "T001", "--actor", "agent-1", "--proof", fresh["path"], "--json").code == 0
    cli("apply", "T001", "--reject", "--reason", "again", "--actor", "lead", "--json")
    cli("task-status", "T001", "ready", "--actor", "lead", "--json")
    cli("claim", "T001", "--branch", "--actor", "agent-1", "--json")
    git(root, "commit", "-q", "--allow-empty", "-m", "resume T001 again")
    replayed = cli("submit", "T001", "--actor", "agent-1", "--proof", fresh["path"], "--json")
    assert replayed.json()["error"]["code"] in ("proof_stale", "proof_duplicate")


def test_signed_proofs_need_a_trusted_key_and_replay_re_verifies_them(claimed, cli, tmp_path) -> None:
    key = cli("keys", "generate", "--out", str(tmp_path / "k.pem"), "--json").json()
    assert (os.stat(tmp_path / "k.pem").st_mode & 0o777) == 0o600
    assert "PRIVATE KEY" not in json.dumps(key)
    proof = _prove(cli, "--key-file", str(tmp_path / "k.pem"))
    out = cli("submit", "T001", "--actor", "agent-1", "--proof", proof["path"], "--json")
    assert out.code == 5 and out.json()["error"]["code"] == "proof_untrusted_signer"
    added = cli("trust", "add", key["public_key"], "--label", "ci", "--actor", "lead", "--json").json()
    assert added["key_id"] == key["key_id"] and added["added"]
    out = cli("submit", "T001", "--actor", "agent-1", "--proof", proof["path"], "--json").json()
    assert out["claim_bound_command_proofs"][0]["trust_mode"] == "client_reported"  # a signature binds who
    assert out["claim_bound_command_proofs"][0]["issuer_id"] == key["key_id"]
    assert op(dict(os.environ), "verify_state")["ok"]  # replay re-checks the signature against the list
    listed = cli("trust", "list", "--json").json()
    assert [k["key_id"] for k in listed["keys"]] == [key["key_id"]]
    assert cli("trust", "remove", key["key_id"], "--actor", "lead", "--json").code == 0
    assert op(dict(os.environ), "verify_state")["ok"]  # accepted before the removal: still valid
    rebuilt = cli("rebuild", "--yes", "--json")  # the database again from the log: the signature re-checked
    assert rebuilt.code == 0, rebuilt.stdout
    with store_of(dict(os.environ)) as store:
        assert store.conn.execute("SELECT trust_mode, issuer_id FROM command_proofs").fetchall() == [
            ("client_reported", key["key_id"])]


def test_an_attestation_is_recorded_and_consumed_once_by_the_next_renewal(claimed, cli) -> None:
    root, claim = claimed
    made = cli("attest", "T001", "--actor", "agent-1", "--json").json()
    assert made["commit"] != claim["git_metadata"]["claim_start_sha"] and made["changed_paths"] >= 2
    out = cli("progress", "T001", "--actor", "agent-1", "--attestation-file", made["path"], "--json").json()
    assert out["event_action"] == "progress.attested" and out["attestation"]["kind"] == "commit"
    again = cli("progress", "T001", "--actor", "agent-1", "--attestation-file", made["path"], "--json")
    assert again.json()["error"]["code"] == "proof_duplicate"
    first = cli("renew", "T001", "--actor", "agent-1", "--json").json()
    assert first["progress"]["digest"] == out["attestation"]["digest"]
    assert cli("renew", "T001", "--actor", "agent-1", "--json").json()["progress"] is None
    notes = cli("progress", "T001", "--actor", "agent-1", "--notes", "all done, trust me", "--json").json()
    assert notes["event_action"] == "progress.noted"
    assert cli("renew", "T001", "--actor", "agent-1", "--json").json()["progress"] is None


def test_an_attestation_over_http_travels_as_base64(claimed, cli) -> None:
    root, _ = claimed
    (root / "extra.txt").write_text("new\n")
    made = cli("attest", "T001", "--actor", "agent-1", "--json").json()
    data = base64.b64encode(Path(made["path"]).read_bytes()).decode()
    out = op(dict(os.environ), "submit_progress", task_id="T001", actor="agent-1", attestation_base64=data)
    assert out["attestation"]["kind"] == "commit" and out["attestation"]["changed_paths"] >= 1


@pytest.mark.parametrize("route", ["stdio", "http"])
def test_the_full_loop_runs_routed_with_git_work_on_the_callers_checkout_only(
        route, anvil_env, cli, http_server_process, monkeypatch, tmp_path) -> None:
    with contextlib.ExitStack() as stack:
        _full_loop(route, anvil_env, cli, http_server_process, monkeypatch, tmp_path, stack)


def _full_loop(route, anvil_env, cli, http_server_process, monkeypatch, tmp_path, stack) -> None:
    served = make_repo(Path(anvil_env["ANVIL_ROOT"]))  # the state's project: a server must never touch it
    plan_in_repo(anvil_env)
    mine = tmp_path / "agent-checkout"
    git(tmp_path, "clone", "-q", str(served), str(mine))
    target = ["--mcp", "stdio"]
    if route == "stdio":  # each call's server process is forked warm, on real pipes (tests/warm.py)
        from anvil.mcp.channels import Channels, using
        from anvil.mcp.http_client import _opener

        stack.enter_context(using(Channels(spawn=warm.spawn_piped, open_http=_opener().open)))
    if route == "http":
        monkeypatch.setenv("MCP_TEST_TOKEN", TOKEN)
        target = ["--mcp", http_server_process().url, "--mcp-token-env", "MCP_TEST_TOKEN"]
    monkeypatch.chdir(mine)
    claimed = cli("claim", "T001", "--worktree", "--actor", "agent-1", "--json", *target)
    assert claimed.code == 0, claimed.stdout
    claim = claimed.json()
    tree = Path(claim["worktree_path"])
    assert tree == Path(f"{mine}.worktrees/t001-sqlite-storage-layer") and str(tree) in worktrees(mine)
    assert branches(served) == ["main"] and worktrees(served) == [str(served)]
    _do_work(tree, commit=False)
    monkeypatch.chdir(tree)
    made = cli("attest", "T001", "--actor", "agent-1", "--json", *target).json()
    noted = cli("progress", "T001", "--actor", "agent-1", "--attestation-file", made["path"], "--json", *target)
    assert noted.json()["event_action"] == "progress.attested"
    proof = cli("proof", "run", "T001", "--actor", "agent-1", "--json", *target, "--", *VERIFY)
    assert proof.code == 0 and proof.json()["cwd"] == str(tree)
    git(tree, "add", "shortlink", "tests")
    git(tree, "commit", "-q", "-m", "T001: storage layer")
    out = cli("submit", "T001", "--actor", "agent-1", "--proof", proof.json()["path"], "--json", *target)
    assert out.code == 0, out.stdout
    assert [p["digest"] for p in out.json()["claim_bound_command_proofs"]] == [proof.json()["digest"]]
    decided = op(anvil_env, "apply_review_decision", task_id="T001", actor="lead", approve=True)
    assert decided["decision"] == "accepted" and decided["evidence_gaps"] == []
    assert branches(served) == ["main"] and worktrees(served) == [str(served)]


def test_a_remote_caller_gets_no_git_work_and_no_file_reads_from_the_server(anvil_env, http_server_process) -> None:
    from anvil.cli.backend import backend_for
    from anvil.cli.routing import resolve_route
    from anvil.engine.errors import Refused
    from anvil.ops.contract import spec_named

    served = make_repo(Path(anvil_env["ANVIL_ROOT"]))
    plan_in_repo(anvil_env)
    url = http_server_process().url
    env = {**anvil_env, "MCP_TEST_TOKEN": TOKEN}
    backend = backend_for(resolve_route(url, "MCP_TEST_TOKEN", env), env, str(served))
    with pytest.raises(Refused) as refused:
        backend.invoke(spec_named("claim_task"), {"task_id": "T001", "actor": "agent-1", "git_mode": "worktree"})
    assert refused.value.code == "git_plan_required"
    assert branches(served) == ["main"] and worktrees(served) == [str(served)]
    backend.invoke(spec_named("claim_task"), {"task_id": "T001", "actor": "agent-1", "git_mode": "off"})
    (served / "proof.json").write_bytes(b"{}")
    with pytest.raises(UsageError) as named:  # a path is the caller's: the server never reads its own disk for it
        backend.invoke(spec_named("submit_completion_evidence"), {"task_id": "T001", "actor": "agent-1",
                                                                  "proof_files": [str(served / "proof.json")]})
    assert named.value.code == "invalid_input" and "base64" in str(named.value)


def test_an_oversized_artifact_is_refused_on_both_sides_and_nothing_is_recorded(claimed, cli, tmp_path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b"{" + b" " * 66000 + b"}")
    out = cli("submit", "T001", "--actor", "agent-1", "--proof", str(big), "--json")
    assert out.code == 2 and out.json()["error"]["code"] == "proof_oversized"
    sent = base64.b64encode(big.read_bytes()).decode()  # a caller that skips the CLI's check
    with pytest.raises(UsageError) as refused:
        op(dict(os.environ), "submit_completion_evidence", task_id="T001", actor="agent-1",
           command_proof_artifacts_base64=[base64.b64encode(Path(_prove(cli)["path"]).read_bytes()).decode(), sent])
    assert refused.value.code == "proof_oversized"
    assert op(dict(os.environ), "get_task", task_id="T001")["status"] == "claimed"


def test_no_signing_key_material_reaches_output_artifacts_errors_or_the_state(claimed, cli, monkeypatch,
                                                                            tmp_path) -> None:
    key = cli("keys", "generate", "--out", str(tmp_path / "k.pem"), "--json")
    pem = (tmp_path / "k.pem").read_text()
    secret = pem.splitlines()[1]  # the base64 line of the private key
    cli("trust", "add", key.json()["public_key"], "--actor", "lead", "--json")
    monkeypatch.setenv("ANVIL_SIGNING_KEY", pem)
    seen = [key.stdout, key.stderr]
    leak = ["python", "-c", "import os; print(os.environ.get('ANVIL_SIGNING_KEY'))"]
    for command in (VERIFY, leak):
        out = cli("proof", "run", "T001", "--actor", "agent-1", "--json", "--", *command)
        seen += [out.stdout, out.stderr, Path(out.json()["path"]).read_text()]
        human = cli("proof", "run", "T001", "--actor", "agent-1", "--", *command)
        seen += [human.stdout, human.stderr]
        submitted = cli("submit", "T001", "--actor", "agent-1", "--proof", out.json()["path"], "--category",
                        "diagnostic", "--json")
        assert submitted.code == 0, submitted.stdout
        seen += [submitted.stdout]
    monkeypatch.setenv("ANVIL_SIGNING_KEY", "not a key " + secret)
    bad = cli("proof", "run", "T001", "--actor", "agent-1", "--json", "--", *VERIFY)
    assert bad.code == 2 and bad.json()["error"]["code"] == "invalid_signing_key"
    seen += [bad.stdout, bad.stderr]
    stored = [f.read_bytes().decode("utf-8", "replace") for top in (os.environ["ANVIL_HOME"], os.environ["ANVIL_ROOT"])
              for f in Path(top).rglob("*") if f.is_file() and ".git" not in f.parts]
    assert all(secret not in text and "PRIVATE KEY" not in text for text in seen + stored)


def test_a_proof_made_for_another_task_or_by_another_actor_is_refused(claimed, cli) -> None:
    proof = _prove(cli)
    assert cli("claim", "T002", "--worktree", "--actor", "agent-1", "--json").code == 0
    out = cli("submit", "T002", "--actor", "agent-1", "--proof", proof["path"], "--json")
    assert out.code == 5 and out.json()["error"]["code"] == "proof_mismatch"
    stolen = cli("proof", "run", "T001", "--actor", "agent-2", "--json", "--", *VERIFY)
    assert stolen.code == 5 and stolen.json()["error"]["code"] == "not_owner"
    taken = cli("submit", "T001", "--actor", "agent-2", "--proof", proof["path"], "--json")
    assert taken.code == 5 and taken.json()["error"]["code"] == "not_owner"
    assert op(dict(os.environ), "get_task", task_id="T002")["status"] == "claimed"


def test_the_submit_hint_after_a_proof_works_when_pasted_without_anvil_actor(claimed, cli, monkeypatch) -> None:
    import shlex

    monkeypatch.delenv("ANVIL_ACTOR", raising=False)
    human = cli("proof", "run", "T001", "--actor", "agent-1", "--", *VERIFY)
    assert human.code == 0, human.stdout + human.stderr
    hint = next(line for line in human.stdout.splitlines() if line.startswith("send it: "))
    argv = shlex.split(hint.removeprefix("send it: "))
    assert argv[:4] == ["anvil", "submit", "T001", "--actor"] and argv[4] == "agent-1"
    submitted = cli(*argv[1:], "--json")
    assert submitted.code == 0 and submitted.json()["task_status"] == "needs_review", submitted.stdout


def test_a_proof_run_keeps_the_agents_token_and_database_password_out_of_the_command_and_the_artifact(
        claimed, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    root, _ = claimed
    token, password = "anvil_tk000009_" + "t" * 43, "pg-secret-4242"
    monkeypatch.setenv("ANVIL_MCP_TOKEN_ENV", "AGENT_TOKEN")
    monkeypatch.setenv("AGENT_TOKEN", token)
    monkeypatch.setenv("PGPASSWORD", password)
    (root / ".anvil").mkdir(exist_ok=True)
    (root / ".anvil" / "found.txt").write_text(f"{token} {password}\n")  # what a command could dig up anyway
    shown = "import os, sys; print(sorted(os.environ)); sys.stdout.write(open('.anvil/found.txt').read())"
    proof = _prove(cli, command=["python", "-c", shown])
    assert proof["exit"] == 0
    recorded = Path(proof["path"]).read_text()
    assert token not in recorded and password not in recorded and "[redacted]" in recorded
    assert "AGENT_TOKEN" not in recorded and "PGPASSWORD" not in recorded and "ANVIL_MCP_TOKEN_ENV" not in recorded
