"""Planning a bundle, reporting its progress, and superseding it.

Creation checks the bounded policy: at most ``max_tasks`` members (12 at most), whose dependencies
on each other form at most ``max_serial_stages`` stages (6 at most), listed so that every member
comes after the members it depends on; every member is a task of the bundle's PRD that is not
done and not held by another live bundle (a bundle waiting to be replanned releases its members
to its replacement). Completion (progress with ``complete``) is gated on every member's
completion evidence and opens the next review round; a refused completion writes nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.errors import AuthFailed, NotFound, Refused, UsageError
from anvil.engine.identity import Identity, name_key
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, Transaction, applies
from anvil.engine.work.bundles import rows
from anvil.engine.work.bundles.coordinator import held
from anvil.engine.work.claims import Fence

BUNDLE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
ANGLE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
LIMITS = {"max_tasks": (1, 12), "max_serial_stages": (1, 6), "max_reviews": (rows.MIN_APPROVALS, 3),
          "max_rereviews": (0, 1)}
"""Each policy bound's allowed range: a bundle's policy can be tightened, never loosened past these."""
DEFAULT_ANGLES = ("correctness", "integration")
MAX_BLOCKERS_SHOWN = 12


@dataclass(frozen=True, slots=True)
class BundlePlan:
    """A bundle to create: its id, PRD, ordered member tasks, coordinator and bounded policy."""

    bundle_id: str
    prd_id: str
    task_ids: list[str]
    coordinator: str
    max_tasks: int = 12
    max_serial_stages: int = 6
    max_reviews: int = 3
    max_rereviews: int = 1
    required_angles: tuple[str, ...] = DEFAULT_ANGLES


@dataclass(frozen=True, slots=True)
class BundleProgress:
    """A coordinator's progress note on its bundle; ``complete`` asks for the review gate."""

    bundle_id: str
    actor: str
    phase: str
    detail: str | None = None
    member_task_ids: list[str] = field(default_factory=list)
    complete: bool = False


def check_bundle_id(bundle_id: str, where: str = "bundle_id") -> str:
    """Return ``bundle_id`` when it is a plain id.

    Raises:
        UsageError: ``invalid_bundle_id``.
    """
    if not BUNDLE_ID.match(bundle_id):
        raise UsageError(f"{where} must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
                         code="invalid_bundle_id")
    return bundle_id


def normalise_angles(angles: tuple[str, ...] | list[str]) -> list[str]:
    """Review angles as labels (trimmed, lower case, each once, in order).

    Raises:
        UsageError: ``bundle_policy_invalid`` for an angle that is not a plain label.
    """
    out: list[str] = []
    for raw in angles:
        angle = raw.strip().lower()
        if not ANGLE.match(angle):
            raise UsageError("a review angle is a label of 1-40 lower-case letters, digits, '_' or '-' (such as "
                             "correctness or security)", code="bundle_policy_invalid")
        if angle not in out:
            out.append(angle)
    return out


def _policy(plan: BundlePlan) -> dict[str, Any]:
    policy: dict[str, Any] = {"max_tasks": plan.max_tasks, "max_serial_stages": plan.max_serial_stages,
                              "max_reviews": plan.max_reviews, "max_rereviews": plan.max_rereviews}
    for name, (low, high) in LIMITS.items():
        if not low <= policy[name] <= high:
            raise UsageError(f"{name} must be between {low} and {high}", code="bundle_policy_invalid")
    angles = normalise_angles(plan.required_angles)
    if not angles or len(angles) > plan.max_reviews:
        raise UsageError(f"required_angles needs 1 to max_reviews ({plan.max_reviews}) angles, each approved by "
                         "its own review", code="bundle_policy_invalid")
    policy["required_angles"] = angles
    return policy


def _members(conn: Connection, plan: BundlePlan, bundle_id: str) -> list[dict[str, Any]]:
    """The members in order with their serial stage, every rule about them checked."""
    tasks: list[dict[str, Any]] = []
    for raw in plan.task_ids:
        task = task_rows.get_task(conn, raw)
        if any(t["id"] == task["id"] for t in tasks):
            raise Refused(f"task {task['id']} is listed twice", code="bundle_member_invalid")
        if task["prd_id"] != plan.prd_id:
            raise Refused(f"task {task['id']} belongs to PRD {task['prd_id']}, not {plan.prd_id}",
                          code="bundle_member_invalid")
        if task["status"] in ("done", "accepted"):
            raise Refused(f"task {task['id']} is {task['status']} already", code="bundle_member_invalid")
        other = rows.live_bundle_of(conn, task["id"])
        if other is not None and other["id"] != bundle_id and other["status"] != "replan_required":
            raise Refused(f"task {task['id']} belongs to bundle {other['id']} ({other['status']})",
                          code="bundle_member_taken")
        tasks.append(task)
    if len(tasks) > plan.max_tasks:
        raise Refused(f"{len(tasks)} tasks exceed the policy's max_tasks ({plan.max_tasks})",
                      code="bundle_policy_exceeded")
    stage: dict[str, int] = {}
    out = []
    for position, task in enumerate(tasks, 1):
        inside = [d for d in task["dependencies"] if any(t["id"] == d for t in tasks)]
        late = [d for d in inside if d not in stage]
        if late:
            raise Refused(f"task {task['id']} depends on {late[0]}, listed after it: list members in dependency "
                          "order", code="bundle_member_invalid")
        stage[task["id"]] = 1 + max((stage[d] for d in inside), default=0)
        out.append({"task_id": task["id"], "position": position, "stage": stage[task["id"]]})
    stages = max(stage.values(), default=0)
    if stages > plan.max_serial_stages:
        raise Refused(f"the members form {stages} serial stages, more than the policy's max_serial_stages "
                      f"({plan.max_serial_stages})", code="bundle_policy_exceeded")
    return out


def create(tx: Transaction, plan: BundlePlan) -> dict[str, Any]:
    """Plan a bundle of tasks under one coordinator and a bounded policy.

    Raises:
        UsageError: ``invalid_bundle_id``, ``bundle_policy_invalid``.
        NotFound: ``prd_not_found``, ``task_not_found``.
        Refused: ``bundle_exists``, ``bundle_member_invalid``, ``bundle_member_taken``,
            ``bundle_policy_exceeded``.
    """
    bundle_id = check_bundle_id(plan.bundle_id)
    if rows.find_bundle(tx.conn, bundle_id) is not None:
        raise Refused(f"bundle {bundle_id} exists already: pick another id", code="bundle_exists")
    if tx.conn.execute("SELECT 1 FROM prds WHERE prd_id = ?", (plan.prd_id,)).fetchone() is None:
        raise NotFound(f"PRD {plan.prd_id[:64]!r} has not been parsed", code="prd_not_found")
    policy = _policy(plan)
    members = _members(tx.conn, plan, bundle_id)
    tx.append("bundle.created", {"bundle_id": bundle_id, "prd_id": plan.prd_id, "coordinator": plan.coordinator,
                                 "policy": policy, "members": members})
    return rows.detail(tx.conn, bundle_id)


@applies("bundle.created")
def _apply_created(conn: Connection, event: Event) -> None:
    p = event.payload
    conn.execute("INSERT INTO bundles (id, prd_id, status, coordinator, coordinator_key, policy, created_at, "
                 "created_by, updated_seq) VALUES (?,?,?,?,?,?,?,?,?)",
                 (p["bundle_id"], p["prd_id"], "planned", p["coordinator"], name_key(p["coordinator"]),
                  json.dumps(p["policy"], sort_keys=True), event.ts, event.actor, event.seq))
    conn.executemany("INSERT INTO bundle_members (bundle_id, task_id, position, stage) VALUES (?,?,?,?)",
                     [(p["bundle_id"], m["task_id"], m["position"], m["stage"]) for m in p["members"]])


def progress(tx: Transaction, report: BundleProgress, fence: Fence) -> dict[str, Any]:
    """Record the coordinator's progress; with ``complete``, open the next review round.

    Completing again while the round is open records nothing (a retry is safe).

    Raises:
        Refused: as :func:`~anvil.engine.work.bundles.coordinator.held`; ``bundle_member_invalid``
            (a named task is not a member), ``bundle_wrong_status``, ``bundle_not_ready`` (with
            each unready member and what blocks it in the error's details).
    """
    live = held(tx.conn, report.bundle_id, report.actor, fence)
    bundle = rows.get_bundle(tx.conn, live["bundle_id"])
    bundle_id = bundle["id"]
    member_ids = [m["task_id"] for m in rows.members(tx.conn, bundle_id)]
    named = []
    for raw in report.member_task_ids:
        match = next((m for m in member_ids if m.upper() == raw.strip().upper()), None)
        if match is None:
            raise Refused(f"task {raw[:64]!r} is not a member of bundle {bundle_id}", code="bundle_member_invalid")
        named.append(match)
    blockers = rows.readiness(tx.conn, bundle_id)
    round_ = bundle["review_round"]
    if report.complete:
        if bundle["status"] == "in_review":
            return {"recorded": False, "ready": not blockers, "blockers": blockers}
        if bundle["status"] not in ("active", "changes_requested"):
            raise Refused(f"bundle {bundle_id} is {bundle['status']}: it cannot be completed now",
                          code="bundle_wrong_status")
        if blockers:
            shown = blockers[:MAX_BLOCKERS_SHOWN]
            raise Refused(f"bundle {bundle_id} is not ready for review: {len(blockers)} member(s) are not complete "
                          f"(first: {shown[0]['task_id']}: {shown[0]['blockers'][0]})", code="bundle_not_ready",
                          details={"members": shown, "members_omitted": len(blockers) - len(shown)})
        round_ += 1
        if round_ > rows.max_rounds(bundle["policy"]):
            raise Refused(f"bundle {bundle_id} has used its {rows.max_rounds(bundle['policy'])} review round(s): it "
                          "must be replanned and superseded", code="bundle_wrong_status")
    tx.append("bundle.progressed", {"bundle_id": bundle_id, "actor": report.actor, "generation": live["generation"],
                                    "phase": report.phase, "detail": report.detail, "member_task_ids": named,
                                    "complete": report.complete, "round": round_})
    return {"recorded": True, "ready": not blockers, "blockers": blockers}


@applies("bundle.progressed")
def _apply_progressed(conn: Connection, event: Event) -> None:
    p = event.payload
    conn.execute("INSERT INTO bundle_progress (seq, bundle_id, actor, generation, phase, detail, member_task_ids, "
                 "complete, recorded_at) VALUES (?,?,?,?,?,?,?,?,?)",
                 (event.seq, p["bundle_id"], p["actor"], p["generation"], p["phase"], p["detail"],
                  json.dumps(p["member_task_ids"]), int(p["complete"]), event.ts))
    if p["complete"]:
        conn.execute("UPDATE bundles SET status = 'in_review', review_round = ?, updated_seq = ? WHERE id = ?",
                     (p["round"], event.seq, p["bundle_id"]))


def supersede(tx: Transaction, bundle_id: str, replacement_id: str, caller: Identity) -> dict[str, Any]:
    """Mark a bundle superseded by its replacement, keeping its history.

    Members the replacement shares that wait for review go back to ready, so the replacement
    gathers fresh evidence (the old evidence stays on record); a live coordinator claim ends.

    Raises:
        NotFound: either bundle is missing.
        AuthFailed: ``forbidden_by_role`` for an authenticated caller who is neither its
            coordinator nor a lead.
        Refused: ``bundle_wrong_status`` (already superseded or merged), ``bundle_supersede_invalid``
            (the replacement is the bundle itself, or is itself finished).
    """
    bundle = rows.get_bundle(tx.conn, bundle_id)
    replacement = rows.get_bundle(tx.conn, replacement_id)
    bundle_id = bundle["id"]
    if bundle["status"] in ("superseded", "merged"):
        raise Refused(f"bundle {bundle_id} is {bundle['status']} already", code="bundle_wrong_status")
    if replacement["id"] == bundle_id or replacement["status"] in ("superseded", "merged"):
        raise Refused(f"bundle {replacement['id']} cannot replace {bundle_id}: a replacement is another live "
                      "bundle", code="bundle_supersede_invalid")
    if not caller.may("lead") and caller.key != bundle["coordinator_key"]:
        raise AuthFailed(f"superseding bundle {bundle_id} needs its coordinator or the lead role (your token's role "
                         f"is {caller.role})", code="forbidden_by_role")
    shared = {m["task_id"] for m in rows.members(tx.conn, replacement["id"])}
    reopened = [m["task_id"] for m in rows.members(tx.conn, bundle_id)
                if m["task_id"] in shared and m["status"] == "needs_review"]
    live = rows.coordinator_claim(tx.conn, bundle_id)
    tx.append("bundle.superseded", {"bundle_id": bundle_id, "replacement": replacement["id"],
                                    "from_status": bundle["status"], "reopened": reopened,
                                    "claim_id": live["id"] if live else None})
    return {"reopened": reopened}


@applies("bundle.superseded")
def _apply_superseded(conn: Connection, event: Event) -> None:
    p = event.payload
    conn.execute("UPDATE bundles SET status = 'superseded', superseded_by = ?, updated_seq = ? WHERE id = ?",
                 (p["replacement"], event.seq, p["bundle_id"]))
    conn.execute("UPDATE bundles SET supersedes = ?, updated_seq = ? WHERE id = ?",
                 (p["bundle_id"], event.seq, p["replacement"]))
    if p["claim_id"]:
        conn.execute("UPDATE bundle_claims SET status = 'ended', ended_at = ?, end_reason = ? WHERE id = ?",
                     (event.ts, event.type, p["claim_id"]))
    conn.execute("UPDATE bundle_members SET authorized_generation = NULL WHERE bundle_id = ?", (p["bundle_id"],))
    for task_id in p["reopened"]:
        task_rows.set_status(conn, task_id, "ready", event.seq)
