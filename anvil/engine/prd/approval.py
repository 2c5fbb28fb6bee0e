"""The approval gate: new claims need their PRD approved for its exact current revision.

Kept apart from the PRD lifecycle so the claim path and the queue reads load only this.
"""

from __future__ import annotations

from anvil.engine.storage.connection import Connection

APPROVED_PRD = """EXISTS (SELECT 1 FROM prds p WHERE p.prd_id = t.prd_id AND p.status = 'approved'
                      AND p.approved_revision = p.revision AND p.approved_source_digest = p.source_digest)"""
"""SQL: task ``t``'s PRD is approved for its current revision (the claim gate; see approval_problem)."""


def approval_problem(conn: Connection, prd_id: str) -> str | None:
    """Why new claims on ``prd_id``'s tasks are refused, or None when its approval is current.

    Only the database is read: the approval binds the revision recorded in the log, and the
    managed PRD file beside the database is a cache of it (see ``lifecycle.refresh_managed_copy``).
    """
    row = conn.execute("SELECT status, revision, source_digest, approved_revision, approved_source_digest "
                       "FROM prds WHERE prd_id = ?", (prd_id,)).fetchone()
    if row is None:
        return f"PRD {prd_id!r} does not exist"
    status, revision, source_digest, approved_revision, approved_source_digest = row
    if status != "approved" or approved_revision != revision or approved_source_digest != source_digest:
        return f"PRD {prd_id!r} must be approved for its current revision before new claims"
    return None
