"""``anvil land`` end to end, in real repositories with a real bare remote.

Implementers claim into worktrees of their own clones, a runner re-proves each submission and the
lead approves it; a lander (the runner, or the lead) lands the queue from its own clone: the
remote's target holds exactly the approved change, stale approvals, conflicts and re-proofs failing
on the merged tree bounce without touching the remote, concurrent landers (real processes) land
every task exactly once, and a dependent's worktree starts from its dependency's landed code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from anvil.ops.scenarios import TASK_WORK
from tests.backends import backend_env  # noqa: F401 - the fixture
from tests.cli.support import ROUTES, World, deliver, make_world, scratch_dirs
from tests.gitrepo import git, worktrees
from tests.ops.support import assert_replays, op, store_of


def _landing(world: World, *, remote: str | None = "origin") -> None:
    op(world.env, "configure_project", land_target="main", land_remote=remote or "off", actor="lead")


def remote_main(world: World) -> str:
    return git(world.remote, "rev-parse", "refs/heads/main").strip()


def ancestor(repo: Path, older: str, newer: str) -> bool:
    return subprocess.run(["git", "merge-base", "--is-ancestor", older, newer], cwd=repo, timeout=60,
                          check=False).returncode == 0


def tree_of(repo: Path, commit: str) -> str:
    return git(repo, "rev-parse", f"{commit}^{{tree}}").strip()


@pytest.fixture(params=ROUTES)
def world(request: pytest.FixtureRequest, backend_env: dict[str, str], tmp_path: Path) -> Iterator[World]:  # noqa: F811
    yield from make_world(backend_env, request.param, tmp_path)


@pytest.fixture
def direct_world(anvil_env: dict[str, str], tmp_path: Path) -> Iterator[World]:
    yield from make_world(anvil_env, "direct", tmp_path)


def test_the_landing_loop_runs_on_every_route_and_backend(world: World) -> None:
    _landing(world)
    before = remote_main(world)
    tree, approved = deliver(world, "T001", TASK_WORK["T001"], reviewer="rita")
    queue = world.anvil("runner-1", "landing")
    assert queue.code == 0 and [t["task_id"] for u in queue.doc["units"] for t in u["tasks"]] == ["T001"]
    assert queue.doc["units"][0]["tasks"][0]["approved_commit"] == approved
    if world.route == "http":  # only a lead or a runner lands
        assert world.anvil("agent-1", "land", "--all").error == "forbidden_by_role"
        assert world.anvil("rita", "land", "--all").error == "forbidden_by_role"
    landed = world.anvil("runner-1", "land", "--all")
    assert landed.code == 0, (landed.doc, landed.stderr)
    [item] = landed.doc["landed"]
    assert item["task_ids"] == ["T001"] and item["onto"] == before
    head = remote_main(world)
    assert head == item["landed_commit"]
    # Exactly the approved change: the target had not moved, so the landing is the approved commit itself.
    assert tree_of(world.remote, head) == tree_of(world.remote, approved)
    assert ancestor(world.remote, approved, head)
    assert [p["command"] for p in item["proofs"]] == ["python -m unittest -q tests/test_store.py"]
    after = world.anvil("rita", "landing")
    assert after.doc["units"] == [] and after.doc["counts"]["landed"] == 1
    assert after.doc["landed"][0]["landed_commit"] == head and after.doc["landed"][0]["approved_commit"] == approved
    again = world.anvil("runner-1", "land", "T001")
    assert again.error == "already_landed"
    runner = world.clone("runner-1")
    assert worktrees(runner) == [str(runner)] and scratch_dirs(world.env) == []
    assert git(runner, "status", "--porcelain") == ""
    assert_replays(world.env)


def test_landing_from_the_implementers_clone_removes_the_claim_worktree_and_branch(direct_world: World) -> None:
    world = direct_world
    _landing(world)
    tree, approved = deliver(world, "T001", TASK_WORK["T001"])
    clone = world.clone("agent-1")
    branch = op(world.env, "get_task", task_id="T001")["history"]["evidence"][0]["branch"]
    assert str(tree) in worktrees(clone)
    landed = world.anvil("lead", "land", "T001", cwd=clone)
    assert landed.code == 0, landed.doc
    assert worktrees(clone) == [str(clone)] and not tree.exists()
    assert branch not in git(clone, "branch", "--list").split()
    assert git(world.remote, "branch", "--list", branch).strip() == ""  # the claim branch is gone there too
    assert remote_main(world) == approved


def test_a_dry_run_builds_the_merge_and_moves_runs_and_records_nothing(direct_world: World) -> None:
    from tests.ops.support import event_types

    world = direct_world
    _landing(world)
    op(world.env, "configure_project", require_verified="off", actor="lead")
    deliver(world, "T001", TASK_WORK["T001"], verifier=None)
    before, events = remote_main(world), event_types(world.env)
    out = world.anvil("runner-1", "land", "--all", "--dry-run")
    assert out.code == 0 and out.doc["dry_run"] is True, out.doc
    [plan] = out.doc["planned"]
    assert plan["would"] == "land" and plan["onto"] == before and "shortlink/store.py" in plan["changed"]
    assert out.doc["landed"] == [] and remote_main(world) == before and event_types(world.env) == events
    assert scratch_dirs(world.env) == []


def test_an_approval_followed_by_a_new_commit_on_the_branch_bounces_as_stale(direct_world: World) -> None:
    world = direct_world
    _landing(world)
    before = remote_main(world)
    tree, approved = deliver(world, "T001", TASK_WORK["T001"])
    (tree / "later.txt").write_text("after the review\n")
    git(tree, "add", "later.txt")
    git(tree, "commit", "-q", "-m", "later")
    git(tree, "push", "-q", "origin", "HEAD")
    out = world.anvil("runner-1", "land", "--all")
    assert out.code == 5 and out.doc["landed"] == [] and out.doc["bounced"][0]["reason"] == "stale", out.doc
    assert remote_main(world) == before
    assert op(world.env, "get_task", task_id="T001")["status"] == "ready"


CONFLICTING_STORE = "STORE = 2\n"


def test_two_tasks_editing_the_same_lines_bounce_the_second_with_its_paths(direct_world: World) -> None:
    world = direct_world
    _landing(world)
    op(world.env, "configure_project", require_verified="off", actor="lead")
    _, first = deliver(world, "T001", TASK_WORK["T001"], verifier=None)
    _, second = deliver(world, "T002", {**TASK_WORK["T002"], "shortlink/store.py": CONFLICTING_STORE}, who="agent-2",
                        verifier=None)
    out = world.anvil("runner-1", "land", "--all")
    assert out.code == 5, out.doc
    assert [i["task_ids"] for i in out.doc["landed"]] == [["T001"]]
    [bounce] = out.doc["bounced"]
    assert bounce["task_ids"] == ["T002"] and bounce["reason"] == "conflict"
    assert bounce["conflict_paths"] == ["shortlink/store.py"]
    assert bounce["touched_by"] == {"shortlink/store.py": ["T001"]}
    head = remote_main(world)
    assert head == out.doc["landed"][0]["landed_commit"] == first  # nothing of T002 reached the remote
    assert not ancestor(world.remote, second, head)
    task = op(world.env, "get_task", task_id="T002")
    assert task["status"] == "ready"
    queue = op(world.env, "get_landing_queue")
    assert queue["bounced"][0]["task_id"] == "T002" and queue["bounced"][0]["conflict_paths"] == ["shortlink/store.py"]


STORE_CHECK = "import unittest\nimport shortlink.store as s\n\n\nclass T(unittest.TestCase):\n" \
              "    def test_store(self) -> None:\n        self.assertEqual(s.STORE, 1)\n"


def test_a_re_proof_failing_on_the_merged_tree_bounces_with_its_excerpt(direct_world: World) -> None:
    world = direct_world
    _landing(world)
    op(world.env, "configure_project", require_verified="off", actor="lead")
    deliver(world, "T001", TASK_WORK["T001"], verifier=None)
    # T002's test passes on its own branch (store.py says STORE = 1 there) but not once T001 replaced store.py.
    deliver(world, "T002", {**TASK_WORK["T002"], "tests/test_validate.py": STORE_CHECK}, who="agent-2", verifier=None)
    landed_t001 = world.anvil("runner-1", "land", "T001")
    assert landed_t001.code == 0, landed_t001.doc
    before = remote_main(world)
    out = world.anvil("runner-1", "land", "T002")
    assert out.code == 5, out.doc
    [bounce] = out.doc["bounced"]
    assert bounce["reason"] == "proof_failed"
    assert bounce["failed_command"] == "python -m unittest -q tests/test_validate.py"
    assert "STORE" in bounce["excerpt"]
    assert remote_main(world) == before
    assert op(world.env, "get_task", task_id="T002")["status"] == "ready"


def test_a_dependents_worktree_starts_from_its_dependencies_landed_code(direct_world: World) -> None:
    world = direct_world
    _landing(world)
    op(world.env, "configure_project", require_verified="off", actor="lead")
    deliver(world, "T001", TASK_WORK["T001"], verifier=None)
    deliver(world, "T002", TASK_WORK["T002"], who="agent-2", verifier=None)
    waiting = world.anvil("agent-3", "claim", "T003", "--worktree")
    assert waiting.code == 5, waiting.doc  # approved is not enough: its dependencies have not landed
    assert world.anvil("runner-1", "land", "--all").code == 0
    claim = world.anvil("agent-3", "claim", "T003", "--worktree")
    assert claim.code == 0, claim.doc
    tree = Path(claim.doc["worktree_path"])
    assert (tree / "shortlink" / "store.py").read_text() == TASK_WORK["T001"]["shortlink/store.py"]
    assert (tree / "shortlink" / "validate.py").read_text() == TASK_WORK["T002"]["shortlink/validate.py"]
    assert claim.doc["git_metadata"]["claim_start_sha"] == remote_main(world)
    graph = op(world.env, "get_dependency_graph", scope="all")
    marks = {n["id"]: n["landed"] for n in graph["nodes"]}
    assert marks["T001"] and marks["T002"] and not marks["T003"]


def test_landing_without_a_remote_refuses_a_target_checked_out_in_a_worktree(direct_world: World) -> None:
    world = direct_world
    _landing(world, remote=None)
    op(world.env, "configure_project", require_verified="off", actor="lead")
    deliver(world, "T001", TASK_WORK["T001"], verifier=None)
    clone = world.clone("runner-1")  # main is checked out there
    before = git(clone, "rev-parse", "main").strip()
    out = world.anvil("runner-1", "land", "T001", cwd=clone)
    assert (out.code, out.error) == (5, "land_target_checked_out"), out.doc
    assert git(clone, "rev-parse", "main").strip() == before and git(clone, "status", "--porcelain") == ""


def test_two_concurrent_landers_land_every_task_exactly_once_without_losing_a_commit(direct_world: World) -> None:
    world = direct_world
    _landing(world)
    op(world.env, "configure_project", require_verified="off", actor="lead")
    _, first = deliver(world, "T001", TASK_WORK["T001"], verifier=None)
    _, second = deliver(world, "T002", TASK_WORK["T002"], who="agent-2", verifier=None)
    landers = []
    for who in ("runner-1", "lead"):
        env = {**world.env, "ANVIL_ACTOR": who}
        landers.append(subprocess.Popen([sys.executable, "-m", "anvil", "land", "--all", "--json"], env=env,
                                        cwd=world.clone(who), stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    outputs = []
    for proc in landers:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        outputs.append(json.loads(out))
    landed = sorted(t for doc in outputs for item in doc["landed"] for t in item["task_ids"])
    assert landed == ["T001", "T002"]  # each exactly once, between the two landers
    head = remote_main(world)
    assert all(ancestor(world.remote, commit, head) for commit in (first, second))  # no commit lost
    with store_of(world.env) as store:
        rows = store.conn.execute("SELECT task_id, COUNT(*) FROM landings WHERE outcome = 'landed' GROUP BY task_id "
                                  "ORDER BY task_id").fetchall()
    assert [tuple(r) for r in rows] == [("T001", 1), ("T002", 1)]
    assert_replays(world.env)


def test_releasing_a_worktree_claim_removes_its_clean_worktree_and_its_empty_branch(direct_world: World) -> None:
    world = direct_world
    clone = world.clone("agent-1")
    claim = world.anvil("agent-1", "claim", "T001", "--worktree")
    assert claim.code == 0, claim.doc
    tree = Path(claim.doc["worktree_path"])
    assert str(tree) in worktrees(clone)
    released = world.anvil("agent-1", "release", "T001")
    assert released.code == 0, released.doc
    assert worktrees(clone) == [str(clone)] and not tree.exists()
    assert claim.doc["branch"] not in git(clone, "branch", "--list").split()


def test_the_human_report_names_landings_bounces_and_skips() -> None:
    from anvil.cli.lander import report_lines

    report = {"target": "main", "remote": "origin", "planned": [], "skipped": [
        {"task_ids": ["T004"], "message": "runner-2 is landing task T004"}],
        "landed": [{"task_ids": ["T001"], "landed_commit": "ab" * 20, "proofs": [{}]}],
        "bounced": [{"task_ids": ["T002"], "reason": "conflict", "conflict_paths": ["a.py"],
                     "touched_by": {"a.py": ["T001"]}},
                    {"task_ids": ["T003"], "reason": "proof_failed", "failed_command": "pytest -q"}]}
    lines = report_lines(report)
    assert lines[0] == "landed T001 on main on origin at abababababab (1 command(s) re-proven on the merged tree)"
    assert lines[1].startswith("BOUNCED T002: conflicts in a.py (landed by T001)")
    assert lines[2].startswith("BOUNCED T003: `pytest -q` failed on the merged tree")
    assert lines[3] == "skipped T004: runner-2 is landing task T004"


def test_land_needs_a_task_or_all(cli) -> None:  # type: ignore[no-untyped-def]
    for argv, code in (([], "usage"), (["T001", "--all"], "usage"), (["--all", "--retries", "-1"], "invalid_input")):
        refused = cli("land", *argv, "--json")
        assert (refused.code, refused.json()["error"]["code"]) == (2, code), refused.stdout
    assert "--retries must be a whole number from 0 to 100" in cli("land", "--all", "--retries", "-1").stderr
