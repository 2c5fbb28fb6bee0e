"""The event log and its projection: written together, chained, mirrored, versioned."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from anvil.engine.errors import NotFound, StateIncompatible
from anvil.engine.storage import migrations
from anvil.engine.storage.integrity import verify
from anvil.engine.storage.paths import StateLocation
from anvil.engine.storage.store import GENESIS_HASH, Store, event_hash


def test_opening_an_uninitialized_project_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound) as info:
        Store.open(StateLocation(tmp_path, tmp_path / "none", "local"))
    assert info.value.code == "not_initialized"


def test_events_are_chained_from_genesis(location: StateLocation) -> None:
    with Store.open(location) as store:
        events = list(store.events())
    assert [e.seq for e in events] == [1, 2]
    assert events[0].prev_hash == GENESIS_HASH
    assert events[1].prev_hash == events[0].hash
    for e in events:
        payload = json.dumps(e.payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert event_hash(e.seq, e.ts, e.actor, e.type, payload, e.prev_hash) == e.hash


def test_the_mirror_holds_every_committed_event(location: StateLocation) -> None:
    lines = location.log_path.read_text().splitlines()
    with Store.open(location) as store:
        assert [json.loads(line) for line in lines] == [e.to_dict() for e in store.events()]


def test_a_failed_mutation_leaves_log_and_projection_untouched(location: StateLocation) -> None:
    with Store.open(location) as store:
        with pytest.raises(RuntimeError), store.write("tester") as tx:
            tx.append("project.created", {"project_id": "x", "name": "again", "config": {}})
            raise RuntimeError("the handler failed after appending")
        assert store.last_event()[0] == 2
        assert store.conn.execute("SELECT COUNT(*) FROM project").fetchone()[0] == 1
    assert len(location.log_path.read_text().splitlines()) == 2


def test_a_lost_mirror_is_caught_up_on_open(location: StateLocation) -> None:
    location.log_path.write_text("")
    with Store.open(location) as store:
        assert verify(store)["ok"]
    assert len(location.log_path.read_text().splitlines()) == 2


def test_a_torn_final_mirror_line_is_repaired_on_open(location: StateLocation) -> None:
    text = location.log_path.read_text()
    location.log_path.write_text(text[: len(text) - 20])
    with Store.open(location) as store:
        report = verify(store)
    assert report["ok"], report["problems"]


def test_a_database_from_a_newer_anvil_fails_closed(location: StateLocation) -> None:
    conn = sqlite3.connect(location.db_path)
    conn.execute(f"PRAGMA user_version={migrations.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StateIncompatible) as info:
        Store.open(location)
    assert info.value.exit_code == 8 and info.value.code == "schema_mismatch"
    from anvil import __version__

    details = info.value.details
    assert details["database_schema"] == migrations.SCHEMA_VERSION + 1
    assert (details["direction"], details["supported_schema"], details["engine_version"]) == (
        "newer", migrations.SCHEMA_VERSION, __version__)
    assert (details["remediation_code"], details["restart_required"]) == ("upgrade_engine", True)
    assert "Do not delete the state" in details["guidance"] and str(location.root) not in str(details)


def test_a_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    loc = StateLocation(tmp_path, tmp_path / "state", "local")
    loc.state_dir.mkdir()
    conn = sqlite3.connect(loc.db_path)
    conn.execute("PRAGMA user_version=3")
    conn.close()
    with pytest.raises(StateIncompatible):
        Store.open(loc)


def test_item_17_every_module_that_registers_an_applier_is_loaded_by_the_store() -> None:
    """Issue 24 item 17: APPLIER_MODULES is a hand list; a module with an @applies missing from it leaves
    replay (verify, rebuild) unable to apply its events. Parse every module of anvil for the decorator."""
    import ast
    from pathlib import Path

    from anvil.engine.storage import store

    package = Path(store.__file__).resolve().parents[2]
    registering: set[str] = set()
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                    isinstance(d, ast.Call) and getattr(d.func, "id", getattr(d.func, "attr", None)) in ("applies",
                                                                                                       "derives")
                    for d in node.decorator_list):
                parts = path.relative_to(package.parent).with_suffix("").parts
                registering.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    assert "anvil.engine.credentials" in registering, "the scan finds the known appliers"
    assert registering == set(store.APPLIER_MODULES), (
        f"missing from APPLIER_MODULES: {sorted(registering - set(store.APPLIER_MODULES))}; listed without an "
        f"applier: {sorted(set(store.APPLIER_MODULES) - registering)}")
