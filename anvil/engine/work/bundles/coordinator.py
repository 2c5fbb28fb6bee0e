"""The coordinator claim of a bundle: exclusive, leased and fenced, like a task claim.

Claiming a bundle takes its one coordinator claim and authorizes its members: while the claim
is live, members can be claimed (by the coordinator or the workers it hands them to); when the
lease runs out (reaped with the task claims, see :func:`anvil.engine.work.claims.reap_stale`) or
the claim is released, the authorizations go with it. Every new claim of a bundle gets the next
generation, so a stalled coordinator that comes back with its old generation is refused.

The bundle's designated coordinator claims it; anyone else may claim it only to recover it, once
an earlier coordinator claim has ended (expired or released), and then becomes its coordinator.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from anvil.engine.errors import AuthFailed, ConfirmationRequired, Refused, UsageError
from anvil.engine.identity import Identity, name_key
from anvil.engine.prd.approval import approval_problem
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, Transaction, applies, format_ts
from anvil.engine.work.bundles import rows
from anvil.engine.work.claims import Fence, fencing_required


@dataclass(frozen=True, slots=True)
class BundleClaimRequest:
    """What a bundle claim asks for: the bundle, who coordinates it, and for how long."""

    bundle_id: str
    actor: str
    lease_minutes: int = 240


def claim(tx: Transaction, request: BundleClaimRequest) -> dict[str, Any]:
    """Take the coordinator claim of a bundle and authorize its members.

    Raises:
        NotFound: no such bundle.
        Refused: ``bundle_wrong_status`` (approved, merged, superseded or waiting to be replanned),
            ``already_claimed``, ``not_coordinator`` (someone else's bundle, never claimed before
            or still held), ``prd_not_approved``.
    """
    bundle = rows.get_bundle(tx.conn, request.bundle_id)
    bundle_id, actor = bundle["id"], request.actor
    if bundle["status"] not in rows.WORKING_STATUSES:
        raise Refused(f"bundle {bundle_id} is {bundle['status']}: only a planned or unfinished bundle can be claimed",
                      code="bundle_wrong_status")
    live = rows.coordinator_claim(tx.conn, bundle_id)
    if live is not None:
        who = "you" if live["actor_key"] == name_key(actor) else "another coordinator"
        raise Refused(f"bundle {bundle_id} is already claimed by {who} (generation {live['generation']})",
                      code="already_claimed")
    if bundle["coordinator_key"] != name_key(actor) and bundle["claim_generation"] == 0:
        raise Refused(f"bundle {bundle_id} is coordinated by {bundle['coordinator']}; another actor can claim it "
                      "only to recover it after that coordinator's claim ended", code="not_coordinator")
    problem = approval_problem(tx.conn, bundle["prd_id"])
    if problem:
        raise Refused(problem + ": run `anvil prd parse`, `anvil prd review`, `anvil prd review --approve`",
                      code="prd_not_approved")
    past = tx.conn.execute("SELECT COALESCE(MAX(generation), 0) FROM bundle_claims WHERE bundle_id = ?",
                           (bundle_id,)).fetchone()[0]
    generation = max(bundle["claim_generation"], past) + 1
    claim_id = f"BC{tx.next_seq():06d}"
    lease = format_ts(tx.now + timedelta(minutes=request.lease_minutes))
    authorized = [m["task_id"] for m in rows.members(tx.conn, bundle_id)]
    tx.append("bundle.claimed", {"claim_id": claim_id, "bundle_id": bundle_id, "actor": actor,
                                 "generation": generation, "lease_expires_at": lease, "authorized": authorized,
                                 "recovered_from": bundle["coordinator"] if name_key(actor) !=
                                 bundle["coordinator_key"] else None})
    return {"id": claim_id, "bundle_id": bundle_id, "claimed_by": actor, "generation": generation,
            "claimed_at": tx.ts, "lease_expires_at": lease}


def held(conn: Connection, bundle_id: str, actor: str, fence: Fence, *, takeover: bool = False) -> dict[str, Any]:
    """The live coordinator claim ``actor`` holds on the bundle, checked against the fencing token.

    Raises:
        NotFound: no such bundle.
        UsageError: ``fencing_required``.
        Refused: ``stale_generation``, ``no_active_claim``, ``not_owner`` (as for task claims).
    """
    bundle_id = rows.get_bundle(conn, bundle_id)["id"]
    if not fence.given and not takeover and fencing_required(conn):
        raise UsageError("this project requires fencing: pass the generation (or claim id) your bundle claim "
                         "returned", code="fencing_required")
    live = rows.coordinator_claim(conn, bundle_id)
    generation, claim_id = fence.generation, fence.claim_id
    if (generation is not None and (live is None or live["generation"] != generation)) or \
            (claim_id is not None and (live is None or live["id"] != claim_id)):
        named = f"generation {generation}" if generation is not None else f"claim {str(claim_id)[:64]}"
        live_text = f"the live claim is generation {live['generation']}" if live else "no claim is live now"
        raise Refused(f"{named} is not the live coordinator claim on bundle {bundle_id} ({live_text}); if your "
                      "lease ran out, claim the bundle again", code="stale_generation")
    if live is None:
        raise Refused(f"bundle {bundle_id} has no live coordinator claim: claim it first (`anvil bundle claim`)",
                      code="no_active_claim")
    if live["actor_key"] != name_key(actor):
        raise Refused(f"bundle {bundle_id} is coordinated by another actor; only the holder can do this (a lead can "
                      "release it with `anvil release BUNDLE --target-kind bundle --yes`)", code="not_owner")
    return live


def renew(tx: Transaction, bundle_id: str, actor: str, fence: Fence, extend_seconds: int) -> dict[str, Any]:
    """Extend the coordinator lease by ``extend_seconds`` from the later of its expiry and now."""
    live = held(tx.conn, bundle_id, actor, fence)
    base = max(live["lease_expires_at"], tx.ts)
    lease = format_ts(datetime.fromisoformat(base) + timedelta(seconds=extend_seconds))
    tx.append("bundle.claim_renewed", {"claim_id": live["id"], "bundle_id": live["bundle_id"],
                                       "lease_expires_at": lease})
    return {"renewed": True, "claim_id": live["id"], "generation": live["generation"], "lease_expires_at": lease}


def release(tx: Transaction, bundle_id: str, caller: Identity, fence: Fence, reason: str | None, *,
            confirmed: bool) -> dict[str, Any]:
    """End the coordinator claim; releasing another actor's claim is a confirmed takeover (lead).

    Raises:
        Refused: as :func:`held`.
        AuthFailed: ``forbidden_by_role`` for a takeover by an authenticated non-lead.
        ConfirmationRequired: another actor's claim, without confirmation.
    """
    bundle_id = rows.get_bundle(tx.conn, bundle_id)["id"]
    live = rows.coordinator_claim(tx.conn, bundle_id)
    if fence.given:
        held(tx.conn, bundle_id, live["actor"] if live else caller.actor, fence)
    takeover = live is not None and live["actor_key"] != caller.key
    if live is not None and takeover:
        if not caller.may("lead"):
            raise AuthFailed(f"bundle {bundle_id} is coordinated by another actor; taking it over needs the lead role "
                             f"(your token's role is {caller.role})", code="forbidden_by_role")
        if not confirmed:
            raise ConfirmationRequired(
                f"bundle {bundle_id} is coordinated by {live['actor']}; releasing it ends their claim and its member "
                "authorizations: repeat with --yes (confirm: true)",
                details={"owner": live["actor"], "generation": live["generation"]})
    else:
        live = held(tx.conn, bundle_id, caller.actor, fence)
    tx.append("bundle.claim_released", {"claim_id": live["id"], "bundle_id": bundle_id, "holder": live["actor"],
                                        "released_by": caller.actor, "reason": reason, "forced": takeover,
                                        "by_role": caller.role, "authenticated": caller.authenticated})
    return {"released": True, "claim_id": live["id"], "generation": live["generation"]}


@applies("bundle.claimed")
def _apply_claimed(conn: Connection, event: Event) -> None:
    p = event.payload
    conn.execute("INSERT INTO bundle_claims (id, bundle_id, actor, actor_key, generation, status, claimed_at, "
                 "lease_expires_at) VALUES (?,?,?,?,?,?,?,?)",
                 (p["claim_id"], p["bundle_id"], p["actor"], name_key(p["actor"]), p["generation"], "active",
                  event.ts, p["lease_expires_at"]))
    conn.execute("UPDATE bundles SET claim_generation = ?, coordinator = ?, coordinator_key = ?, updated_seq = ?, "
                 "status = CASE WHEN status = 'planned' THEN 'active' ELSE status END WHERE id = ?",
                 (p["generation"], p["actor"], name_key(p["actor"]), event.seq, p["bundle_id"]))
    conn.executemany("UPDATE bundle_members SET authorized_generation = ? WHERE bundle_id = ? AND task_id = ?",
                     [(p["generation"], p["bundle_id"], task_id) for task_id in p["authorized"]])


@applies("bundle.claim_renewed")
def _apply_renewed(conn: Connection, event: Event) -> None:
    conn.execute("UPDATE bundle_claims SET lease_expires_at = ? WHERE id = ?",
                 (event.payload["lease_expires_at"], event.payload["claim_id"]))


@applies("bundle.claim_released", "bundle.claim_expired")
def _apply_ended(conn: Connection, event: Event) -> None:
    p = event.payload
    status = "released" if event.type == "bundle.claim_released" else "expired"
    conn.execute("UPDATE bundle_claims SET status = ?, ended_at = ?, end_reason = ? WHERE id = ?",
                 (status, event.ts, event.type, p["claim_id"]))
    conn.execute("UPDATE bundle_members SET authorized_generation = NULL WHERE bundle_id = ?", (p["bundle_id"],))
    conn.execute("UPDATE bundles SET updated_seq = ?, status = CASE WHEN status = 'active' THEN 'planned' "
                 "ELSE status END WHERE id = ?", (event.seq, p["bundle_id"]))
