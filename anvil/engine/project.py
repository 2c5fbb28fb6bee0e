"""Project bootstrap and the status/summary read models."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from typing import Any

from anvil.engine.errors import ConfirmationRequired, Refused, UsageError
from anvil.engine.prd.approval import APPROVED_PRD
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.paths import StateLocation
from anvil.engine.storage.store import Clock, Event, Store, Transaction, applies, format_ts, system_clock, writer_lock
from anvil.engine.vocab import DEFAULT_PRD, TASK_STATUSES

DEFAULT_CONFIG: dict[str, Any] = {"self_review": False, "accept_rate_floor": None, "accept_rate_window_days": 7,
                                  "review_queue_cap": None, "require_fencing": False}
CONFIG_KEYS: tuple[str, ...] = tuple(DEFAULT_CONFIG)


def project_slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60] or "project"


@applies("project.created")
def _apply_project_created(conn: Connection, event: Event) -> None:
    p = event.payload
    import json

    conn.execute(
        "INSERT INTO project (id, name, description, config, created_at, created_by) VALUES (?,?,?,?,?,?)",
        (p["project_id"], p["name"], p.get("description", ""), json.dumps(p.get("config", {}), sort_keys=True),
         event.ts, event.actor))


@applies("state.initialized")
def _apply_state_initialized(conn: Connection, event: Event) -> None:
    """Marks the schema the log started under; the projection has nothing to change."""


@dataclass(frozen=True, slots=True)
class InitRequest:
    """How to initialize: the project's name and description, who does it, and whether to start over."""

    name: str | None = None
    description: str = ""
    actor: str = "anvil"
    force: bool = False
    confirm: bool = False
    dry_run: bool = False


def init_project(location: StateLocation, request: InitRequest, *, clock: Clock = system_clock) -> dict[str, Any]:
    """Create the state for the project at ``location``.

    Raises:
        Refused: the project is already initialized and ``force`` was not given.
        ConfirmationRequired: ``force`` was given without ``confirm``.
    """
    name, description, actor = request.name, request.description, request.actor
    force, confirm = request.force, request.confirm
    project_name = (name or "").strip() or location.root.name or "project"
    result = {"project_id": project_slug(project_name), "project_name": project_name,
              "state_dir": str(location.state_dir), "created": True}
    if not location.root.is_dir():
        raise UsageError(f"the project root {location.root} does not exist (check ANVIL_ROOT)", code="root_missing")
    _check_init(location, force, confirm)
    if request.dry_run:
        return result
    location.state_dir.mkdir(parents=True, exist_ok=True)
    # Under the writer lock, so two concurrent inits cannot both create (the loser is refused).
    # A forced re-init moves the old state aside; stop agents first, since a writer already
    # waiting on the old state's lock finishes its call there.
    with writer_lock(location.state_dir):
        _check_init(location, force, confirm)
        if location.initialized:
            stamp = format_ts(clock()).replace(":", "")
            shutil.move(str(location.state_dir), str(location.state_dir.with_name(f"{location.state_dir.name}.bak-"
                                                                                    f"{stamp}")))
        from anvil.engine.storage import migrations

        with Store.open(location, create=True, clock=clock) as store, store.write(actor) as tx:
            tx.append("project.created", {"project_id": result["project_id"], "name": project_name,
                                          "description": description, "root": str(location.root),
                                          "config": DEFAULT_CONFIG})
            tx.append("state.initialized", {"schema_version": migrations.SCHEMA_VERSION})
    return result


def _check_init(location: StateLocation, force: bool, confirm: bool) -> None:
    if location.initialized:
        if not force:
            raise Refused("project already initialized (use --force --yes to start over; the old state is kept "
                          "as a backup)", code="already_initialized")
        if not confirm:
            raise ConfirmationRequired("re-initializing replaces the current state: repeat with --yes (confirm)")


def project_row(store: Store) -> dict[str, Any]:
    import json

    row = store.conn.execute("SELECT id, name, description, config FROM project").fetchone()
    if row is None:
        raise Refused("the state has no project row: run `anvil init --force --yes`", code="no_project")
    return {"id": row[0], "name": row[1], "description": row[2], "config": {**DEFAULT_CONFIG, **json.loads(row[3])}}


def task_counts(store: Store, prd_id: str | None = None) -> dict[str, int]:
    counts = dict.fromkeys(TASK_STATUSES, 0)
    sql = "SELECT status, COUNT(*) FROM tasks" + (" WHERE prd_id = ?" if prd_id else "") + " GROUP BY status"
    for status, count in store.conn.execute(sql, (prd_id,) if prd_id else ()):
        counts[status] = count
    return counts


def prd_status(store: Store, prd_id: str | None) -> str | None:
    if prd_id:
        row = store.conn.execute("SELECT status FROM prds WHERE prd_id = ?", (prd_id,)).fetchone()
        return row[0] if row else None
    rows = store.conn.execute("SELECT prd_id, status FROM prds ORDER BY prd_id").fetchall()
    by_id = dict(rows)
    if DEFAULT_PRD in by_id:
        return by_id[DEFAULT_PRD]
    return rows[0][1] if len(rows) == 1 else None


def ready_queue_depth(store: Store, prd_id: str | None = None) -> int:
    """Ready tasks whose dependencies are all done (a missing one counts as not done) and that
    nobody holds: the same rule claims use."""
    sql = """
        SELECT COUNT(*) FROM tasks t
        WHERE t.status = 'ready' AND t.unmet_deps = 0 {prd} AND {approved}
          AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.task_id = t.id AND c.status = 'active')
    """.format(prd="AND t.prd_id = ?" if prd_id else "", approved=APPROVED_PRD)
    return store.conn.execute(sql, (prd_id,) if prd_id else ()).fetchone()[0]


def active_claim_count(store: Store) -> int:
    return store.conn.execute("SELECT COUNT(*) FROM claims WHERE status = 'active'").fetchone()[0]


def status(location: StateLocation, prd_id: str | None) -> dict[str, Any]:
    """The bootstrap probe: never fails for an uninitialized project."""
    if not location.initialized:
        return {"initialized": False, "project_id": None, "project_name": None, "state_dir": str(location.state_dir),
                "prd_status": None, "task_counts": dict.fromkeys(TASK_STATUSES, 0), "total_tasks": 0,
                "ready_queue_depth": 0, "active_claim_count": 0}
    with Store.open(location) as store:
        project = project_row(store)
        counts = task_counts(store, prd_id)
        return {"initialized": True, "project_id": project["id"], "project_name": project["name"],
                "state_dir": str(location.state_dir), "prd_status": prd_status(store, prd_id),
                "task_counts": counts, "total_tasks": sum(counts.values()),
                "ready_queue_depth": ready_queue_depth(store, prd_id), "active_claim_count": active_claim_count(store)}


def summary(store: Store) -> dict[str, Any]:
    """Project health: counts by status, claims, blocked and claimable tasks."""
    project = project_row(store)
    counts = task_counts(store)
    return {"project_id": project["id"], "project_name": project["name"],
            "project_description": project["description"], "prd_status": prd_status(store, None),
            "task_counts": counts, "active_claim_count": active_claim_count(store),
            "blocked_task_count": counts["blocked"], "ready_task_count": ready_queue_depth(store)}


def configure(tx: Transaction, changes: dict[str, Any]) -> dict[str, Any]:
    """Apply policy changes (only keys whose value differs are recorded; none: nothing is written)."""
    current = project_row(tx.store)["config"]
    changed = {k: v for k, v in changes.items() if current.get(k) != v}
    if changed:
        tx.append("project.configured", {"changes": changed})
    return {"config": {**current, **changed}, "changed": sorted(changed)}


@applies("project.configured")
def _apply_configured(conn: Connection, event: Event) -> None:
    import json

    row = conn.execute("SELECT config FROM project").fetchone()
    config = {**json.loads(row[0]), **event.payload["changes"]}
    conn.execute("UPDATE project SET config = ?", (json.dumps(config, sort_keys=True),))
