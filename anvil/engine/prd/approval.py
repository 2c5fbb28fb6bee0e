"""The approval gate: new claims need their PRD approved for its exact current revision.

Kept apart from the PRD lifecycle so the claim path and the queue reads load only this.
"""

from __future__ import annotations

from anvil.engine.storage.connection import Connection

APPROVED_PRD = """t.prd_id IN (SELECT p.prd_id FROM prds p WHERE p.status = 'approved'
                      AND p.approved_revision = p.revision AND p.approved_source_digest = p.source_digest)"""
"""SQL: task ``t``'s PRD is approved for its current revision (the claim gate; see approval_problem).

Deliberately not correlated with ``t``: the set of approved PRDs is read once per statement (the
``prds_gate`` index covers it), not once per ready task, which re-read the PRD row, document and
all, for each of thousands of tasks."""


def approval_problem(conn: Connection, prd_id: str) -> str | None:
    """Why new claims on ``prd_id``'s tasks are refused, or None when its approval is current.

    Only the database is read: the approval binds the revision recorded in the log, and the
    managed PRD file beside the database is a cache of it (see ``lifecycle.refresh_managed_copy``).
    """
    return approval_gate(conn, prd_id)[0]


def approval_gate(conn: Connection, prd_id: str) -> tuple[str | None, int | None]:
    """:func:`approval_problem` and the PRD's current revision (None when there is no such PRD), in one read."""
    # Every PRD's gate columns, from the covering index: a lookup by prd_id would take the primary
    # key and read the row, walking the whole PRD document (milliseconds, inside the writer lock).
    from anvil.engine.storage.reads import PRD_GATES_SQL

    rows = conn.execute(PRD_GATES_SQL).fetchall()
    row = next((r for r in rows if r[0] == prd_id), None)
    if row is None:
        return f"PRD {prd_id!r} does not exist", None
    _, status, revision, source_digest, approved_revision, approved_source_digest = row
    if status != "approved" or approved_revision != revision or approved_source_digest != source_digest:
        return f"PRD {prd_id!r} must be approved for its current revision before new claims", int(revision)
    return None, int(revision)
