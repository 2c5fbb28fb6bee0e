"""The text of the agent skills anvil ships, with their command lines named by operation and inputs.

:mod:`anvil.ops.skillgen` renders them into ``anvil/skills/<name>/SKILL.md`` (the open Agent Skills
format: a folder per skill, YAML frontmatter with ``name`` and ``description``) and ``AGENTS.md``.
Edit here, then run ``python -m anvil.ops.skillgen`` (``python -m anvil.ops.docs`` runs it too).
"""

from __future__ import annotations

from anvil.ops.skillmodel import Client, Op, Shell, Skill

ROUTE = """\
## Who you are and where the state is

Locally, `export ANVIL_ACTOR=<your name>` once; every command below then runs as shown. On a team
server, add `--mcp $URL --mcp-token-env $TOKEN_VAR` to every anvil command (before a `--`, if the
line has one): the token names you, so never pass `--actor`. Add `--json` to any command for one
JSON document on stdout; errors then carry a stable `code` (the tables below), and the exit code says
its class (5 refused by a rule, 6 not found, 2 usage, 4 authentication, 7 server unreachable)."""

EXECUTE = Skill(
    name="anvil-execute",
    description="Work an anvil task end to end as a coding agent: claim the next ready task, read its "
                "packet, keep the lease alive, attest progress, prove each verification command, commit and "
                "submit for review. Use when asked to pick up, work on or finish anvil tasks.",
    body=ROUTE + """

## The loop

Variables: `$TASK` the task id, `$GEN` the claim generation the claim returned, `$ATTEST` and
`$PROOF` files the artifacts go to, `$COMMAND` one verification command of the task, as its words.

1. Find work and claim it. `claim-next` finds the best task and claims it in one step, so agents
   never race; `--wait SECONDS` (at most 300) waits for one instead of polling. To take a task you
   were given, `claim` it by id. Note `generation` (your `$GEN`) and, when the project isolates
   claims in git worktrees, `worktree_path`: `cd` there and do all the work in that tree.

{{find}}

2. Read what done means: the criteria, the verification commands (the evidence contract) and the
   exact proof commands for this claim.

{{read}}

3. Keep the lease alive: the claim is leased for 15 minutes. Renew every 5 minutes while you work;
   after a lease runs out another agent may take the task, and your generation goes stale. Attest
   real progress (a commit or changed files) now and then: the next renew records it.

{{heartbeat}}

4. Prove each verification command of the packet in the claim's tree (no shell: `-- sh -c '...'`
   when you need one). Each proof is bound to your claim; a failing command exits 5 and its proof
   shows the failure. Then commit and push: in a git mode the submission hands in the claim branch's
   head commit (uncommitted tracked changes are refused), and a verifier fetches it from the remote.

{{prove}}

5. Submit the proofs. This ends your claim and returns the next claimable task; a reviewer then
   verifies and approves or rejects. Submit each proof file with its own `--proof`.

{{submit}}

Cannot finish? Give the task back instead of letting the lease run out (a branch or worktree stays):

{{giveup}}

## Refusals and what to do

{{refusals:execute}}
""",
    lines={
        "next": Op("get_next_task", {}, ("--json",), "the best task now, or null with a reason"),
        "claim": Op("claim_task", {"task_id": "$TASK"}, ("--json",), "claim a given task"),
        "claim_next": Op("claim_next_task", {"wait_seconds": 300}, ("--json",), "or: find and claim in one step"),
        "packet": Op("generate_work_packet", {"task_id": "$TASK"}),
        "renew": Op("renew_claim", {"task_id": "$TASK", "generation": "$GEN"}, (), "every 5 minutes"),
        "attest": Client(("attest", "$TASK", "--generation", "$GEN", "--out", "$ATTEST")),
        "progress": Op("submit_progress", {"task_id": "$TASK", "generation": "$GEN", "attestation_file": "$ATTEST"}),
        "proof": Client(("proof", "run", "$TASK", "--generation", "$GEN", "--out", "$PROOF", "--", "$COMMAND"),
                        "once per verification command"),
        "commit": Shell('git add -A && git commit -q -m "$TASK: the change" && git push -q origin HEAD',
                        "a verifier fetches the commit"),
        "submit": Op("submit_completion_evidence", {"task_id": "$TASK", "generation": "$GEN",
                                                    "proof_files": ["$PROOF"]}),
        "release": Op("release_task", {"task_id": "$TASK", "generation": "$GEN",
                                       "reason": "blocked: the reason, for the next agent"}),
    },
    blocks={"find": ("next", "claim", "claim_next"), "read": ("packet",), "heartbeat": ("renew", "attest", "progress"),
            "prove": ("proof", "commit"), "submit": ("submit",), "giveup": ("release",)},
    refusals={"execute": (
        "missing_actor", "already_claimed", "not_claimable", "dependencies_pending", "conflict_group_busy",
        "file_conflict", "git_dirty_tree", "git_checkout_busy", "git_step_failed", "no_active_claim", "not_owner",
        "stale_generation", "fencing_required", "attestation_empty", "attestation_unbound", "claim_tree_missing",
        "claim_branch_mismatch", "proof_stale", "proof_failed", "proof_mismatch", "uncommitted_work",
        "no_work_committed", "commit_not_branch_head", "commit_required")},
)

REVIEW = Skill(
    name="anvil-review",
    description="Review submitted anvil tasks: find the review queue, read a submission and its proofs, "
                "re-prove it on its exact commit with verify-task, then approve or reject with a reason. Use "
                "when asked to review, verify or approve anvil work.",
    body=ROUTE + """

## The loop

Variables: `$TASK` the task id under review.

1. Find the work waiting for review, and read one submission in full: its criteria, the evidence
   (commit, changed files), and each proof's trust level (VERIFIED, CLIENT-REPORTED, UNPROVEN).

{{queue}}

2. Verify it, in your own clone of the repository (never the implementer's tree): `verify-task`
   checks the submitted commit out in a scratch worktree, runs every verification command of the
   task there, records the outcomes as verified proofs and removes the scratch worktree. It exits 5
   when a command fails (recorded too). The implementer may not verify its own work.

{{verify}}

3. Decide. Approve when the verified proofs pass and the change meets the criteria; otherwise
   reject with a reason the implementer can act on (the task goes back to drafted for the lead).

{{decide}}

4. When the project lands work (`config` shows a land target), approved work reaches the target
   only through the landing queue: a lead or a runner lands it from its own clone, which merges the
   approved commit onto the target in a scratch worktree, re-runs the verification commands on the
   merged tree and fast-forwards the target when they pass. A conflict or a failure sends the task
   back to ready for its implementer (exit 5). A reviewer token cannot land; say it is approved.

{{land}}

## Refusals and what to do

{{refusals:review}}
""",
    lines={
        "queue": Op("list_tasks", {"status": "needs_review"}),
        "show": Op("get_task", {"task_id": "$TASK"}),
        "verify": Client(("verify-task", "$TASK")),
        "queue_landing": Op("get_landing_queue", {}),
        "land": Client(("land", "$TASK")),
        "approve": Op("apply_review_decision", {"task_id": "$TASK", "approve": True}),
        "reject": Op("apply_review_decision", {"task_id": "$TASK", "approve": False,
                                               "reason": "what is wrong and what would fix it"},
                     (), "or reject"),
    },
    blocks={"queue": ("queue", "show"), "verify": ("verify",), "decide": ("approve", "reject"),
            "land": ("queue_landing", "land")},
    refusals={"review": (
        "not_in_review", "evidence_missing", "self_review_forbidden", "claim_unproven", "reason_required",
        "verifier_is_implementer", "verification_needs_commit", "commit_unavailable", "git_checkout_required",
        "verification_stale", "stale_generation", "landing_stale_approval", "landing_dependency_waiting",
        "land_target_checked_out")},
)

PLAN = Skill(
    name="anvil-plan",
    description="Lead an anvil project from a PRD to ready tasks: write the PRD from the template, lint it "
                "with prd check, parse, assess and review it, approve it, plan, score and promote the tasks. "
                "Use when asked to plan work, turn a PRD into tasks or set up an anvil project.",
    body=ROUTE + """

## From PRD to ready tasks

Variables: `$PRD` the PRD file in the project (say `docs/prd.md`), `$NEW_PRD` a new file for a
starting PRD.

1. Once per project, on the machine that holds its state: create it. A new PRD starts from the
   template; `docs prd-format` is the whole format.

{{setup}}

2. Lint the PRD until it has no errors (each is located, with the line and what to write), then
   parse it: that records a revision. `assess` lists ambiguities and untestable criteria with a
   question to ask; `find-decisions` lists what still needs a person (see the
   anvil-resolve-decisions skill). Fix the file and parse again until both are clean.

{{author}}

3. Review and approve the PRD (two steps: draft to reviewed, reviewed to approved; approval binds the
   exact revision, so a later edit needs a new review).

{{approve}}

4. Plan the approved PRD into features and tasks (dependencies and conflict groups inferred), score
   them, and promote those with acceptance criteria and verification commands to ready; the rest are
   listed as blocked with the reason. The ready tasks are what agents claim.

{{promote}}

## Refusals and what to do

{{refusals:plan}}
""",
    lines={
        "init": Op("init_project", {"name": "My project"}),
        "template": Op("prd_template", {"write": "$NEW_PRD"}),
        "format": Op("get_docs", {"topic": "prd-format"}),
        "check": Op("check_prd", {"file": "$PRD"}),
        "parse": Op("parse_prd", {"file": "$PRD"}),
        "assess": Op("assess_prd", {}),
        "decisions": Op("find_decisions", {}),
        "review": Op("review_prd", {}),
        "approve": Op("review_prd", {"approve": True}),
        "plan": Op("plan_tasks", {}),
        "score": Op("score_tasks", {}),
        "promote": Op("review_tasks", {}),
        "ready": Op("list_tasks", {"status": "ready"}),
    },
    blocks={"setup": ("init", "template", "format"), "author": ("check", "parse", "assess", "decisions"),
            "approve": ("review", "approve"), "promote": ("plan", "score", "promote", "ready")},
    refusals={"plan": (
        "already_initialized", "not_initialized", "prd_unparseable", "prd_not_found", "wrong_status",
        "prd_not_approved", "prd_source_changed", "stale_revision", "no_tasks", "score_incomplete",
        "orphans_past_ready")},
)

RESOLVE = Skill(
    name="anvil-resolve-decisions",
    description="Drive an anvil PRD's open decisions to closure with the user: list NEEDS DECISION markers, "
                "open questions and tasks missing criteria or verification, ask the user one at a time, write "
                "each answer into the PRD and re-parse until none remain. Use before a PRD is approved.",
    body=ROUTE + """

## The loop

Variables: `$PRD` the PRD file.

1. List what needs a person: each item names where it is (the line, the task) and what is missing.

{{list}}

2. For each item, in order: quote it to the user, offer the concrete options you see (with their
   consequences for the tasks), and ask for a decision. Never decide for the user; an answer you
   are unsure of is a new question.

3. Write the decision into the PRD where the item points (replace the NEEDS DECISION marker or the
   open question with the decided text; add the missing acceptance criteria or verification
   commands), lint the file, and parse it again so the next listing is of the new revision.

{{record}}

4. Repeat until the listing is empty, then hand back to the lead's review (anvil-plan, step 3).

## Refusals and what to do

{{refusals:resolve}}
""",
    lines={
        "decisions": Op("find_decisions", {}, (), "what still needs a decision"),
        "check": Op("check_prd", {"file": "$PRD"}),
        "parse": Op("parse_prd", {"file": "$PRD"}),
        "again": Op("find_decisions", {}, ("--json",), "the rest, as one JSON document"),
    },
    blocks={"list": ("decisions",), "record": ("check", "parse", "again")},
    refusals={"resolve": ("not_initialized", "prd_not_found", "prd_unparseable", "prd_source_changed")},
)

SKILLS: tuple[Skill, ...] = (EXECUTE, REVIEW, PLAN, RESOLVE)

AGENTS_BODY = """\
# AGENTS.md

Instructions for coding agents working in this repository (anvil itself). Generated by
`python -m anvil.ops.skillgen`; edit `anvil/ops/skillsrc.py`.

## Build and test

- Set up: `python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]'`.
- Test: `python -m pytest` (the one command CI runs); a module: `python -m pytest -q -n 0 tests/cli/test_app.py`.
- Lint and types: `ruff check anvil tests scripts` and `mypy anvil`.
- Generated files: after changing an operation, an input, an error code or a skill run
  `python -m anvil.ops.specgen && python -m anvil.mcp.toolschemas && python -m anvil.ops.docs && python -m
  anvil.ops.errordocs`; tests fail while any generated file is stale.

## Working with anvil as an agent

anvil ships skills in the Agent Skills format (a folder per skill with a SKILL.md); `anvil install
HARNESS --write` puts them where a harness reads them, with the MCP server entry:

{{skills}}
"""
