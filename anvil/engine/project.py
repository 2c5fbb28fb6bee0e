"""Project bootstrap and the status/summary read models."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anvil.engine.errors import ConfirmationRequired, NotFound, Refused, StateIncompatible, UsageError
from anvil.engine.prd.approval import APPROVED_PRD
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.locking import DEFAULT_LOCK_TIMEOUT, LOCK_NAME, writer_lock
from anvil.engine.storage.paths import StateLocation
from anvil.engine.storage.store import Clock, Event, Store, Transaction, applies, format_ts, log_present, system_clock
from anvil.engine.vocab import DEFAULT_PRD, EVIDENCE_TRUST, TASK_STATUSES

DEFAULT_CONFIG: dict[str, Any] = {"self_review": False, "accept_rate_floor": None, "accept_rate_window_days": 7,
                                  "review_queue_cap": None, "require_fencing": False,
                                  "git_mode": "off", "evidence_gate": "enforcing"}
DEFAULT_CONFIG["require_verified"] = "auto"  # on exactly when claims have a git mode (proof.contract)
DEFAULT_CONFIG.update(land_target=None, land_remote=None, land_method="merge", land_delete_branch="on")
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


def init_project(location: StateLocation, request: InitRequest, *, clock: Clock = system_clock,
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> dict[str, Any]:
    """Create the state for the project at ``location``, in one step.

    Concurrent inits have one winner: each notes the state it saw before waiting for the writer
    lock, and one that finds the state changed meanwhile is refused instead of starting over again
    (so eight racing ``init --force --yes`` leave one new state and at most one backup).

    Raises:
        Refused: already initialized without ``force`` (``already_initialized``), or another init
            replaced the state while this one waited (``init_raced``).
        ConfirmationRequired: ``force`` was given without ``confirm``.
        StateIncompatible: an event log is there without its database (``database_missing``):
            ``anvil rebuild`` restores it, ``--force --yes`` sets it aside; the state directory
            cannot be created or written (``state_dir_unwritable``, ``disk_full``, ``state_io_error``).
        Busy: the writer lock was not granted in time.
    """
    name, description, actor = request.name, request.description, request.actor
    force, confirm = request.force, request.confirm
    project_name = (name or "").strip() or location.root.name or "project"
    result = {"project_id": project_slug(project_name), "project_name": project_name,
              "state_dir": str(location.state_dir), "created": True}
    if not location.root.is_dir():
        raise UsageError(f"the project root {location.root} does not exist (check ANVIL_ROOT)", code="root_missing")
    if location.database_url:
        from anvil.engine.storage.pgstore import init_database

        first = _first_events(location, result, project_name, description, name)
        return init_database(location, request, result, first, lock_timeout=lock_timeout)
    seen = _state_identity(location)
    _check_init(location, force, confirm)
    if request.dry_run:
        return result
    try:
        location.state_dir.mkdir(parents=True, exist_ok=True)
        with writer_lock(location.state_dir, lock_timeout):
            _check_init(location, force, confirm)
            if _state_identity(location) != seen:
                raise Refused("another process initialized this project while this command waited; check `anvil "
                              "status` and repeat if you still want to start over", code="init_raced")
            backup = _set_aside(location, clock) if force else None
            from anvil.engine.storage.creation import create_state

            create_state(location, actor, _first_events(location, result, project_name, description, name),
                         clock=clock, backup=backup)
            if location.layout == "local":
                _ignore_state_dir(location)
    except OSError as exc:
        raise _unwritable(location, exc) from None
    return result


def _unwritable(location: StateLocation, exc: OSError) -> StateIncompatible:
    """The error for a state directory that cannot be made or written (exit 8, never a traceback)."""
    import errno

    shown = str(location.state_dir)[:200]
    if exc.errno == errno.ENOSPC:
        return StateIncompatible(f"the disk holding {shown} is full; nothing was created", code="disk_full")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return StateIncompatible(f"the state directory {shown} cannot be created or written (permissions, or a "
                                 "read-only volume): make it writable, or point ANVIL_HOME (or ANVIL_ROOT with "
                                 "ANVIL_STATE_LAYOUT=local) at a writable place", code="state_dir_unwritable")
    return StateIncompatible(f"the state directory {shown} could not be written ({exc.strerror or 'I/O error'})",
                             code="state_io_error")


def _first_events(location: StateLocation, result: dict[str, Any], project_name: str, description: str,
                  name: str | None) -> Callable[[Transaction], None]:
    """What a new state's log starts with: the project and the schema it was created under."""
    from anvil.engine.storage import migrations

    def build(tx: Transaction) -> None:
        tx.append("project.created", {"project_id": result["project_id"], "name": project_name,
                                      "description": description, "root": str(location.root),
                                      "config": DEFAULT_CONFIG,
                                      "name_from": "given" if (name or "").strip() else "folder"})
        tx.append("state.initialized", {"schema_version": migrations.SCHEMA_VERSION})

    return build


def _state_identity(location: StateLocation) -> tuple[Any, ...] | None:
    """What identifies the current state: its files and its first event (None: nothing there)."""
    parts: list[Any] = []
    for path in (location.db_path, location.log_path):
        try:
            info = path.stat()
            parts.append((info.st_dev, info.st_ino, info.st_size if path == location.log_path else 0))
        except OSError:
            parts.append(None)
    if parts == [None, None]:
        return None
    try:
        with Store.open(location) as store:
            parts.append(store.conn.execute("SELECT hash FROM events WHERE seq = 1").fetchone())
    except Exception:  # an unusable state is identified by its files alone
        parts.append(None)
    return tuple(parts)


def _set_aside(location: StateLocation, clock: Clock) -> Path | None:
    """Move the state's files into one backup folder; returns where the database is to be copied.

    The lock file stays (waiting writers hold it) and so does the database file, which is copied
    and then overwritten in place (see :mod:`anvil.engine.storage.creation`).
    """
    from anvil.engine.storage.creation import SIDECARS, move_aside

    db_files = (location.db_path.name, *(location.db_path.name + s for s in SIDECARS))
    keep = (LOCK_NAME, *db_files)
    if not any(entry.name not in (LOCK_NAME,) for entry in location.state_dir.iterdir()):
        return None
    stamp = format_ts(clock()).replace(":", "")
    backup = location.state_dir.with_name(f"{location.state_dir.name}.bak-{stamp}")
    suffix = 1
    while backup.exists():
        suffix += 1
        backup = location.state_dir.with_name(f"{location.state_dir.name}.bak-{stamp}-{suffix}")
    backup.mkdir()
    move_aside(location, backup, keep)
    return backup / location.db_path.name if location.db_path.exists() else None


def _ignore_state_dir(location: StateLocation) -> None:
    """Keep ``<project>/.anvil/`` out of ``git status``: a ``.gitignore`` inside it ignores everything
    there, itself included, without touching any file of the project."""
    ignore = location.state_dir / ".gitignore"
    try:
        if not ignore.exists():
            ignore.write_text("# anvil's state (ANVIL_STATE_LAYOUT=local): not part of the project's sources\n*\n",
                              encoding="utf-8")
    except OSError:
        pass  # a convenience: the state works without it


def adopt_prd_name(tx: Transaction, name: str) -> str | None:
    """Name the project after its PRD's ``# Project:`` heading when ``anvil init`` was given no name
    (once: the first PRD recorded names it; later edits of the heading rename nothing).

    Returns:
        The new name, or None when nothing changed (a name was given at init, or one was taken already).
    """
    name = " ".join(name.split())[:200]
    if not name:
        return None
    import json

    row = tx.conn.execute("SELECT payload FROM events WHERE type IN ('project.created', 'project.renamed') "
                          "ORDER BY seq DESC LIMIT 1").fetchone()
    named_from = json.loads(row[0]).get("name_from", "given") if row else "given"
    if named_from != "folder" or project_row(tx.store)["name"] == name:
        return None
    tx.append("project.renamed", {"project_id": project_slug(name), "name": name, "name_from": "prd"})
    return name


@applies("project.renamed")
def _apply_project_renamed(conn: Connection, event: Event) -> None:
    conn.execute("UPDATE project SET id = ?, name = ?", (event.payload["project_id"], event.payload["name"]))


def _check_init(location: StateLocation, force: bool, confirm: bool) -> None:
    if location.initialized or log_present(location):
        if not force:
            if not location.initialized:
                from anvil.engine.storage.store import missing_database

                raise missing_database(location)
            raise Refused("project already initialized (use --force --yes to start over; the old state is kept "
                          "as a backup)", code="already_initialized")
        if not confirm:
            raise ConfirmationRequired("re-initializing replaces the current state: repeat with --yes (confirm)")


def project_row(store: Store) -> dict[str, Any]:
    import json

    from anvil.engine.storage.reads import PROJECT_ROW_SQL

    row = store.conn.execute(PROJECT_ROW_SQL).fetchone()
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
    nobody holds: the same rule claims use.

    Counted as every startable task (from the ``tasks_gate`` index alone) less the few held by a
    live claim or reserved by a live bundle, so the cost follows the claims, not the plan's size.
    """
    prd = "AND t.prd_id = ?" if prd_id else ""
    params = (prd_id,) if prd_id else ()
    startable = f"t.status = 'ready' AND t.unmet_deps = 0 {prd} AND {APPROVED_PRD}"
    total = store.conn.execute(f"SELECT COUNT(*) FROM tasks t WHERE {startable}", params).fetchone()[0]
    busy = store.conn.execute(
        f"SELECT COUNT(*) FROM tasks t WHERE {startable} AND t.id IN (SELECT c.task_id FROM claims c WHERE "
        "c.status = 'active' UNION SELECT bm.task_id FROM bundle_members bm JOIN bundles bb ON bb.id = bm.bundle_id "
        "WHERE bb.status NOT IN ('merged', 'superseded'))", params).fetchone()[0]
    return int(total) - int(busy)


def waiting_task_count(store: Store, prd_id: str | None = None) -> int:
    """Ready tasks that wait on unfinished dependencies (``waiting`` in list and show)."""
    sql = "SELECT COUNT(*) FROM tasks WHERE status = 'ready' AND unmet_deps > 0" + (" AND prd_id = ?" if prd_id else "")
    return store.conn.execute(sql, (prd_id,) if prd_id else ()).fetchone()[0]


def active_claim_count(store: Store) -> int:
    return store.conn.execute("SELECT COUNT(*) FROM claims WHERE status = 'active'").fetchone()[0]


def status(location: StateLocation, prd_id: str | None) -> dict[str, Any]:
    """The bootstrap probe: never fails for an uninitialized project.

    Raises:
        StateIncompatible: the state is there but unusable (a log without its database, an empty or
            foreign database file).
    """
    if location.database_url:
        try:
            store = Store.open(location)
        except NotFound:
            store = None
        if store is not None:
            with store:
                return _status_of(store, location, prd_id)
    elif location.initialized or log_present(location):
        with Store.open(location) as store:
            return _status_of(store, location, prd_id)
    return {"initialized": False, "project_id": None, "project_name": None, "state_dir": str(location.state_dir),
                "prd_status": None, "task_counts": dict.fromkeys(TASK_STATUSES, 0), "total_tasks": 0,
                "ready_queue_depth": 0, "waiting_task_count": 0, "active_claim_count": 0,
                "review_trust": review_trust(None), "landing": None}


def _status_of(store: Store, location: StateLocation, prd_id: str | None) -> dict[str, Any]:
    project = project_row(store)
    counts = task_counts(store, prd_id)
    return {"initialized": True, "project_id": project["id"], "project_name": project["name"],
            "state_dir": str(location.state_dir), "prd_status": prd_status(store, prd_id),
            "task_counts": counts, "total_tasks": sum(counts.values()),
            "ready_queue_depth": ready_queue_depth(store, prd_id),
            "waiting_task_count": waiting_task_count(store, prd_id),
            "active_claim_count": active_claim_count(store), "review_trust": review_trust(store, prd_id),
            "landing": _landing_counts(store)}


def _landing_counts(store: Store) -> dict[str, Any] | None:
    from anvil.engine.work.landing_rows import counts

    return counts(store.conn, store.now())


def review_trust(store: Store | None, prd_id: str | None = None) -> dict[str, int]:
    """How many tasks waiting for review have verified, only client-reported, or no passing proofs."""
    from anvil.engine.proof.contract import trust_levels
    from anvil.engine.tasks import SELECT_TASK, row_to_task

    counts = dict.fromkeys(EVIDENCE_TRUST, 0)
    if store is None:
        return counts
    sql = f"{SELECT_TASK} WHERE status = 'needs_review'" + (" AND prd_id = ?" if prd_id else "")
    waiting = [row_to_task(r) for r in store.conn.execute(sql, (prd_id,) if prd_id else ())]
    for level in trust_levels(store.conn, waiting).values():
        counts[level] += 1
    return counts


def summary(store: Store) -> dict[str, Any]:
    """Project health: counts by status, claims, blocked and claimable tasks."""
    project = project_row(store)
    counts = task_counts(store)
    return {"project_id": project["id"], "project_name": project["name"],
            "project_description": project["description"], "prd_status": prd_status(store, None),
            "task_counts": counts, "active_claim_count": active_claim_count(store),
            "blocked_task_count": counts["blocked"], "ready_task_count": ready_queue_depth(store),
            "waiting_task_count": waiting_task_count(store)}


def configure(tx: Transaction, changes: dict[str, Any]) -> dict[str, Any]:
    """Apply policy changes (only keys whose value differs are recorded; none: nothing is written)."""
    current = project_row(tx.store)["config"]
    for key in ("land_target", "land_remote"):
        if key in changes:
            changes = {**changes, key: ref_name(changes[key], f"--{key.replace('_', '-')}")}
    changed = {k: v for k, v in changes.items() if current.get(k) != v}
    if changed:
        tx.append("project.configured", {"changes": changed})
    return {"config": effective_config({**current, **changed}), "changed": sorted(changed)}


_REF = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/-]{0,199}$")


def ref_name(value: str | None, flag: str) -> str | None:
    """A branch or remote name as configured (``off``, ``none`` or empty: not set).

    Raises:
        UsageError: ``invalid_input`` naming ``flag`` for a name git would refuse.
    """
    text = (value or "").strip()
    if text.lower() in ("", "off", "none"):
        return None
    if not _REF.match(text) or ".." in text or "//" in text or text.endswith((".lock", "/", ".")) or "@{" in text:
        raise UsageError(f"{flag} must be a plain branch or remote name (letters, digits, '.', '_', '-', '/'; no "
                         "'..', no trailing '/' or '.lock'), or off", code="invalid_input",
                         details={"field": flag.lstrip("-").replace("-", "_")})
    return text


def effective_config(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` as shown: with what an ``auto`` setting amounts to (``require_verified_effective``)."""
    from anvil.engine.proof.contract import verification_required

    return {**config, "require_verified_effective": verification_required(config)}


@applies("project.configured")
def _apply_configured(conn: Connection, event: Event) -> None:
    import json

    row = conn.execute("SELECT config FROM project").fetchone()
    before = json.loads(row[0])
    config = {**before, **event.payload["changes"]}
    conn.execute("UPDATE project SET config = ?", (json.dumps(config, sort_keys=True),))
    if bool(before.get("land_target")) != bool(config.get("land_target")):
        from anvil.engine.tasks import refresh_finished

        refresh_finished(conn)  # dependencies now wait for landing (or no longer do)
