"""``anvil land [TASK_ID|--all] [--dry-run]``: land approved work on the landing target, from the lander's clone.

Runs on the lander's machine (a lead, or a runner identity such as a CI job), with the state wherever
the route says (direct, stdio, or a team server over HTTP with the lander's token). For each unit of
the queue (``get_landing_queue``: dependency order, then approval order; a bundle's members together):

1. record ``started`` (``land_task``): the unit is this lander's while it verifies, so a second
   lander takes the next unit; a unit another lander holds is skipped;
2. fetch the approved commits; a claim branch that moved past its approved commit makes the
   approval stale: the unit bounces (``stale``) and nothing is built;
3. read the target's tip, build the unit onto it in a scratch worktree (merge, rebase or squash);
   a conflict bounces the unit with the conflicting paths;
4. run every contract command of every task on the merged tree (own process group, timeout,
   bounded output, scrubbed environment); a failure bounces the unit with the command's excerpt;
5. move the target by fast-forward only from the tip it was built on; when another lander moved it
   first, rebuild on the new tip (at most ``--retries`` times);
6. record ``landed`` with the landed commit and the re-proofs, then remove the claim's worktree from
   this clone and (configurable) the claim branch. The scratch worktree is removed whatever happens.

Exits 0 when everything taken landed (``--all`` skips units another lander holds), 5 when a unit
bounced, or the one TASK_ID named was skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from anvil.engine.errors import AnvilError, Refused, UsageError
from anvil.ops import cliflags as flags

Call = Callable[..., dict[str, Any]]
SKIPPED = frozenset({"landing_in_progress", "already_landed", "landing_not_approved", "landing_stale_approval",
                     "commit_unavailable", "landing_dependency_waiting"})
"""Refusals that end one unit's landing and let the queue go on: another lander has it or landed it,
its approval changed since the queue was read, a dependency of it has not landed (it bounced in this
run), or this clone cannot get its commit."""


@dataclass(frozen=True, slots=True)
class LandOptions:
    task_id: str | None
    all: bool
    dry_run: bool
    json: bool
    actor: str | None
    timeout: float
    retries: int
    mcp: str | None
    mcp_token_env: str | None


def register(app: typer.Typer, group: Callable[[str, str | None], typer.Typer], panel: str) -> None:
    """Add ``land`` to ``app``."""
    from anvil.cli.app import completer, option
    from anvil.cli.verifier import timeout_option

    @app.command(name="land", rich_help_panel=panel, help="Land approved work: in a scratch worktree of this clone, "
                 "merge each approved commit onto the landing target, re-run its verification commands on the merged "
                 "tree, and move the target by fast-forward only (pushing to the configured remote). A conflict or a "
                 "failing command lands nothing and sends the task back to its implementer. Exits 5 when a task "
                 "bounced.", short_help="Land approved work: merge onto the target, re-prove the merged tree, "
                 "fast-forward.")
    def land(
        task_id: str | None = typer.Argument(None, metavar="TASK_ID", show_default=False,
                                             autocompletion=completer("task"),
                                             help="The approved task to land (or --all)."),
        all_: bool = typer.Option(False, "--all", help="Land the whole queue, in order."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Build each merge and report conflicts; run, move and "
                                                              "record nothing."),
        timeout: float = timeout_option(),
        retries: int = typer.Option(5, "--retries", metavar="N", min=0, max=100,
                                    help="Rebuilds after another lander moved the target."),
        actor: str | None = option(flags.ACTOR, None), json_: bool = option(flags.JSON),
        mcp_: str | None = option(flags.MCP), mcp_token_env_: str | None = option(flags.MCP_TOKEN_ENV),
    ) -> int:
        return run_land(LandOptions(task_id, all_, dry_run, json_, actor, timeout, retries, mcp_, mcp_token_env_),
                        os.environ)


def run_land(options: LandOptions, env: Mapping[str, str]) -> int:
    """Run ``anvil land``; returns the exit code.

    Raises:
        AnvilError: the queue could not be read or a landing could not be made or recorded.
    """
    if bool(options.task_id) == bool(options.all):
        raise UsageError("name one TASK_ID or pass --all", code="usage")
    from anvil.cli.backend import operation_caller
    from anvil.engine.git.scratch import toplevel

    call, cwd, route = operation_caller(options.mcp, options.mcp_token_env, env)

    queue = call("get_landing_queue")
    if not queue["enabled"]:
        raise Refused("this project does not land work: the lead enables it with `anvil config --land-target BRANCH "
                      "[--land-remote NAME]`", code="landing_not_enabled")
    clone = toplevel(cwd)
    actor = options.actor or env.get("ANVIL_ACTOR", "").strip() or None
    lander = Lander(call, clone, queue, options, env, route, actor)
    units = lander.select(queue)
    report = lander.land_all(units)
    from anvil.cli.output import emit

    emit(report, options.json, report_lines)
    return 5 if report["bounced"] or (options.task_id and report["skipped"]) else 0


class Lander:
    """One ``anvil land`` run: the queue it read, its clone, and what happened to each unit."""

    def __init__(self, call: Call, clone: Path, queue: dict[str, Any], options: LandOptions,
                 env: Mapping[str, str], route: Any, actor: str | None):
        self.call, self.clone, self.options, self.env, self.route, self.actor = call, clone, options, env, route, actor
        self.target, self.remote, self.method = queue["target"], queue["remote"], queue["method"]
        self.delete_branch = bool(queue["delete_branch"])

    def select(self, queue: dict[str, Any]) -> list[dict[str, Any]]:
        """The units to land: all of the queue, or the one holding TASK_ID.

        Raises:
            Refused: ``landing_not_approved`` (TASK_ID is not waiting to land), ``already_landed``.
        """
        units = [u for u in queue["units"] if any(t["state"] != "unlandable" for t in u["tasks"])]
        if self.options.all:
            return units
        named = self.options.task_id or ""  # run_land refused a run with neither TASK_ID nor --all
        wanted = named.upper() if named[:1] in "t" else named
        for unit in units:
            if any(t["task_id"] == wanted for t in unit["tasks"]) or unit["unit"] == wanted:
                return [unit]
        if any(t["task_id"] == wanted for t in queue["landed"]):
            raise Refused(f"task {wanted} has landed already", code="already_landed")
        raise Refused(f"task {wanted} is not waiting to land (only approved work with a commit lands): see "
                      "`anvil landing`", code="landing_not_approved")

    def record(self, unit: dict[str, Any], outcome: str, **values: Any) -> dict[str, Any]:
        tasks = unit["tasks"]
        return self.call("land_task", actor=self.actor, task_ids=[t["task_id"] for t in tasks], outcome=outcome,
                         approved_commits=[t["approved_commit"] for t in tasks], target=self.target,
                         remote=self.remote, method=self.method, **values)

    def land_all(self, units: list[dict[str, Any]]) -> dict[str, Any]:
        report: dict[str, Any] = {"target": self.target, "remote": self.remote, "dry_run": self.options.dry_run,
                                  "landed": [], "bounced": [], "skipped": [], "planned": []}
        for unit in units:
            try:
                self.land(unit, report)
            except AnvilError as error:
                if error.code not in SKIPPED:
                    raise
                report["skipped"].append({"task_ids": [t["task_id"] for t in unit["tasks"]], "code": error.code,
                                          "message": error.message})
        return report

    def land(self, unit: dict[str, Any], report: dict[str, Any]) -> None:
        """Land one unit (or, in a dry run, build it and say what would happen)."""
        from anvil.engine.git.scratch import fetch_commit

        ids = [t["task_id"] for t in unit["tasks"]]
        if not self.options.dry_run:
            self.record(unit, "started")  # refused (skipped) when another lander holds or landed it
        for task in unit["tasks"]:
            fetch_commit(self.clone, task["approved_commit"], task.get("branch"), self.remote)
        stale = self._stale(unit)
        if stale:
            self._bounce(unit, report, reason="stale", excerpt=stale)
            return
        for _attempt in range(self.options.retries + 1):
            if self._attempt(unit, report):
                return
        raise Refused(f"other landers moved {self.target} {self.options.retries + 1} times while {', '.join(ids)} was "
                      "rebuilt on it: land again", code="land_race_lost")

    def _stale(self, unit: dict[str, Any]) -> str | None:
        from anvil.engine.git.landing import branch_heads

        for task in unit["tasks"]:
            for head in branch_heads(self.clone, task.get("branch"), self.remote):
                if head != task["approved_commit"]:
                    return (f"the claim branch {task['branch']} of {task['task_id']} is at {head[:12]}, past the "
                            f"approved commit {task['approved_commit'][:12]}: the new commits need a review")
        return None

    def _attempt(self, unit: dict[str, Any], report: dict[str, Any]) -> bool:
        """Build, re-prove and move once; False when another lander moved the target first."""
        from anvil.cli.verifier import _terminable
        from anvil.engine.git.landing import build, check_movable, move_target, target_tip
        from anvil.engine.git.scratch import scratch_worktree

        tip = target_tip(self.clone, self.target, self.remote)
        if not self.options.dry_run:
            check_movable(self.clone, self.target, self.remote)
        items = [(t["task_id"], t["approved_commit"], f"Land {t['task_id']}: {t['title'][:200]}\n\nApproved commit "
                  f"{t['approved_commit']}") for t in unit["tasks"]]
        ids = [t["task_id"] for t in unit["tasks"]]
        with _terminable(), scratch_worktree(self.clone, tip, prefix="anvil-land-") as tree:
            built = build(self.clone, tree, tip, items, self.method)
            if built.commit is None:
                if self.options.dry_run:
                    report["planned"].append({"task_ids": ids, "would": "bounce", "conflict_paths": built.conflicts})
                    return True
                self._bounce(unit, report, reason="conflict", conflict_paths=built.conflicts, target_commit=tip)
                return True
            if self.options.dry_run:
                report["planned"].append({"task_ids": ids, "would": "land", "onto": tip, "changed": built.changed})
                return True
            results, failed = self._prove(unit, tree, built.commit, str(built.tree))
            if failed is not None:
                self._bounce(unit, report, reason="proof_failed", failed_command=failed[0], excerpt=failed[1],
                             target_commit=tip, result_artifacts_base64=results)
                return True
        if not move_target(self.clone, self.target, self.remote, built.commit, tip):
            return False
        recorded = self.record(unit, "landed", target_commit=tip, landed_commit=built.commit,
                               changed_paths=built.changed[:500], result_artifacts_base64=results)
        from anvil.engine.git.landing import clean_up

        removed: list[str] = []
        for task in unit["tasks"]:
            removed += clean_up(self.clone, task.get("branch"), self.remote, self.delete_branch)
        report["landed"].append({"task_ids": ids, "landed_commit": built.commit, "onto": tip,
                                 "proofs": recorded["proofs"], "removed": removed})
        return True

    def _prove(self, unit: dict[str, Any], tree: Path, commit: str,
               tree_id: str) -> tuple[list[str], tuple[str, str] | None]:
        """Run every contract command of the unit on the merged tree; the results and the first failure."""
        from anvil.cli.verifier import _run

        results: list[str] = []
        for task in unit["tasks"]:
            for command in task["commands"]:
                encoded, outcome = _run(command, tree, self.options.json, self.options.timeout, self.env, self.route,
                                        task["task_id"], commit, tree_id)
                results.append(encoded)
                if outcome["exit_code"] != 0:
                    return results, (command, str(outcome.get("output_excerpt") or ""))
        return results, None

    def _bounce(self, unit: dict[str, Any], report: dict[str, Any], **values: Any) -> None:
        recorded = self.record(unit, "bounced", **values)
        report["bounced"].append({"task_ids": recorded["task_ids"], **(recorded["bounce"] or {})})


def report_lines(report: dict[str, Any]) -> list[str]:
    """The human form of a run's report: what landed, bounced (and why) or was skipped."""
    from anvil.cli.render import conflicts_text

    where = report["target"] + (f" on {report['remote']}" if report["remote"] else "")
    lines = [f"would {item['would']}: {', '.join(item['task_ids'])}"
             + (f" (conflicts: {', '.join(item['conflict_paths'][:10])})" if item.get("conflict_paths") else
                f" onto {str(item.get('onto'))[:12]}") for item in report["planned"]]
    lines += [f"landed {', '.join(item['task_ids'])} on {where} at {item['landed_commit'][:12]} "
              f"({len(item['proofs'])} command(s) re-proven on the merged tree)" for item in report["landed"]]
    for item in report["bounced"]:
        why = item.get("reason")
        detail = conflicts_text(item) if why == "conflict" else (
            f"`{item.get('failed_command')}` failed on the merged tree" if why == "proof_failed"
            else str(item.get("excerpt") or why))
        lines.append(f"BOUNCED {', '.join(item['task_ids'])}: {detail}; back to ready for its implementer")
    lines += [f"skipped {', '.join(item['task_ids'])}: {item['message']}" for item in report["skipped"]]
    return lines or [f"nothing to land on {where}"]
