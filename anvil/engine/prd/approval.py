"""The approval gate: new claims need their PRD approved for its exact current revision.

Kept apart from the PRD lifecycle so the claim path and the queue reads load only this.
"""

from __future__ import annotations

from anvil.engine.storage.canonical import sha256_hex
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.paths import StateLocation

APPROVED_PRD = """EXISTS (SELECT 1 FROM prds p WHERE p.prd_id = t.prd_id AND p.status = 'approved'
                      AND p.approved_revision = p.revision AND p.approved_source_digest = p.source_digest)"""
"""SQL: task ``t``'s PRD is approved for its current revision (the claim gate; see approval_problem)."""


def approval_problem(conn: Connection, location: StateLocation, prd_id: str) -> str | None:
    """Why new claims on ``prd_id``'s tasks are refused, or None when its approval is current."""
    row = conn.execute("SELECT status, revision, source_digest, approved_revision, approved_source_digest "
                       "FROM prds WHERE prd_id = ?", (prd_id,)).fetchone()
    if row is None:
        return f"PRD {prd_id!r} does not exist"
    prd = dict(zip(("status", "revision", "source_digest", "approved_revision", "approved_source_digest"), row,
                   strict=True))
    if prd["status"] != "approved" or prd["approved_revision"] != prd["revision"] \
            or prd["approved_source_digest"] != prd["source_digest"]:
        return f"PRD {prd_id!r} must be approved for its current revision before new claims"
    try:
        current = location.prd_source_path(prd_id).read_bytes()
    except OSError:
        return None  # the managed copy is optional; the persisted binding is what counts
    if sha256_hex(current.decode("utf-8", errors="replace")) != prd["source_digest"]:
        return f"PRD {prd_id!r} source changed since approval: re-parse, review and approve it"
    return None
