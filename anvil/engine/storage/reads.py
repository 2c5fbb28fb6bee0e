"""Reads nearly every write makes first, named once: a PostgreSQL write's start fetches them in its
own round trip (:attr:`anvil.engine.storage.postgres.PgConnection.prefetched`), so the operation's
identical statement is answered without waiting again; the text must stay identical for that."""

from __future__ import annotations

PROJECT_ROW_SQL = "SELECT id, name, description, config FROM project"
"""The project row (``anvil.engine.project.project_row``)."""

PRD_GATES_SQL = "SELECT prd_id, status, revision, source_digest, approved_revision, approved_source_digest FROM prds"
"""Every PRD's approval-gate columns, from their covering index (``anvil.engine.prd.approval.approval_gate``)."""

PREFETCHED = (PROJECT_ROW_SQL, PRD_GATES_SQL)
