"""Delivering a bundle: checkpoints of its commit or pull request, and idempotent reconciliation.

A checkpoint records where the bundle's work was delivered (a commit, a pull request, or both);
it checks only the bundle and the reference, so it can be taken at any point, though the usual
moment is after the review gate. Reconciling states what is true now (this reference exists,
and perhaps it was merged): it records a checkpoint only for a reference not recorded yet and
marks an approved bundle merged once, so repeating it changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from anvil.engine.errors import Refused, UsageError
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, Transaction, applies
from anvil.engine.work.bundles import rows

COMMIT = re.compile(r"^[0-9a-fA-F]{7,64}$")


@dataclass(frozen=True, slots=True)
class DeliveryReference:
    """Where a bundle's work was delivered: a commit, a pull request URL, or both."""

    commit_sha: str | None = None
    pr_url: str | None = None

    def check(self) -> DeliveryReference:
        """The reference, trimmed and checked.

        Raises:
            UsageError: ``delivery_reference_required`` (neither given) or ``invalid_input`` (a
                commit that is not 7-64 hex digits, a URL that is not http(s)).
        """
        commit = (self.commit_sha or "").strip() or None
        url = (self.pr_url or "").strip() or None
        if commit is None and url is None:
            raise UsageError("name the delivery: pass --commit SHA, --pr URL or both (commit_sha, pr_url)",
                             code="delivery_reference_required")
        if commit is not None and not COMMIT.match(commit):
            raise UsageError("commit_sha must be 7 to 64 hexadecimal digits", code="invalid_input")
        if url is not None and not url.startswith(("https://", "http://")):
            raise UsageError("pr_url must be an http(s) URL", code="invalid_input")
        return DeliveryReference(commit.lower() if commit else None, url)


def _deliverable(conn: Connection, bundle_id: str) -> dict[str, Any]:
    bundle = rows.get_bundle(conn, bundle_id)
    if bundle["status"] == "superseded":
        raise Refused(f"bundle {bundle['id']} was superseded by {bundle['superseded_by']}: deliver the replacement",
                      code="bundle_wrong_status")
    return bundle


def _record(tx: Transaction, bundle_id: str, reference: DeliveryReference, source: str) -> dict[str, Any]:
    event = tx.append("bundle.checkpointed", {"bundle_id": bundle_id, "commit_sha": reference.commit_sha,
                                              "pr_url": reference.pr_url, "source": source})
    number = len(rows.checkpoints(tx.conn, bundle_id))
    return {"number": number, "commit_sha": reference.commit_sha, "pr_url": reference.pr_url, "source": source,
            "actor": event.actor, "recorded_at": event.ts}


def checkpoint(tx: Transaction, bundle_id: str, reference: DeliveryReference) -> dict[str, Any]:
    """Record a delivery checkpoint of the bundle.

    Raises:
        NotFound: no such bundle.
        UsageError: see :meth:`DeliveryReference.check`.
        Refused: ``bundle_wrong_status`` for a superseded bundle.
    """
    reference = reference.check()
    bundle = _deliverable(tx.conn, bundle_id)
    return {"checkpoint": _record(tx, bundle["id"], reference, "checkpoint"), "status": bundle["status"]}


def reconcile(tx: Transaction, bundle_id: str, reference: DeliveryReference, merged: bool) -> dict[str, Any]:
    """Bring the bundle's delivery state up to ``reference`` (and its merge), writing only what is new.

    Raises:
        NotFound: no such bundle.
        UsageError: see :meth:`DeliveryReference.check`.
        Refused: ``bundle_wrong_status`` for a superseded bundle, or a merge of a bundle whose
            review gate was not finalized.
    """
    reference = reference.check()
    bundle = _deliverable(tx.conn, bundle_id)
    bundle_id = bundle["id"]
    known = any((reference.commit_sha is None or saved["commit_sha"] == reference.commit_sha)
                and (reference.pr_url is None or saved["pr_url"] == reference.pr_url)
                for saved in rows.checkpoints(tx.conn, bundle_id))
    changes: list[str] = []
    if merged and not bundle["merged"] and bundle["status"] != "approved":
        raise Refused(f"bundle {bundle_id} is {bundle['status']}: only a bundle whose review gate was finalized can "
                      "be reconciled as merged", code="bundle_wrong_status")
    if not known:
        _record(tx, bundle_id, reference, "reconcile")
        changes.append("checkpointed")
    if merged and not bundle["merged"]:
        tx.append("bundle.merged", {"bundle_id": bundle_id, "commit_sha": reference.commit_sha,
                                    "pr_url": reference.pr_url})
        changes.append("merged")
    return {"changes": changes}


@applies("bundle.checkpointed")
def _apply_checkpointed(conn: Connection, event: Event) -> None:
    p = event.payload
    conn.execute("INSERT INTO bundle_checkpoints (seq, bundle_id, commit_sha, pr_url, source, actor, recorded_at) "
                 "VALUES (?,?,?,?,?,?,?)", (event.seq, p["bundle_id"], p["commit_sha"], p["pr_url"], p["source"],
                                            event.actor, event.ts))
    conn.execute("UPDATE bundles SET commit_sha = COALESCE(?, commit_sha), pr_url = COALESCE(?, pr_url), "
                 "updated_seq = ? WHERE id = ?", (p["commit_sha"], p["pr_url"], event.seq, p["bundle_id"]))


@applies("bundle.merged")
def _apply_merged(conn: Connection, event: Event) -> None:
    conn.execute("UPDATE bundles SET status = 'merged', merged = 1, updated_seq = ? WHERE id = ?",
                 (event.seq, event.payload["bundle_id"]))
