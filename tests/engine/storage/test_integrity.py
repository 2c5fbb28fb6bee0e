"""Integrity checks: the hash chain, the mirror and replay equality catch tampering and drift."""

from __future__ import annotations

import sqlite3

from anvil.engine.storage.integrity import verify
from anvil.engine.storage.paths import StateLocation
from anvil.engine.storage.store import Store


def test_verify_detects_a_tampered_event(location: StateLocation) -> None:
    conn = sqlite3.connect(location.db_path)
    conn.execute("UPDATE events SET actor = 'mallory' WHERE seq = 1")
    conn.commit()
    conn.close()
    with Store.open(location) as store:
        report = verify(store)
    assert not report["ok"] and not report["chain_ok"]
    assert any("hash does not match" in p for p in report["problems"])


def test_verify_detects_a_projection_that_drifted_from_the_log(location: StateLocation) -> None:
    conn = sqlite3.connect(location.db_path)
    conn.execute("UPDATE project SET name = 'edited by hand'")
    conn.commit()
    conn.close()
    with Store.open(location) as store:
        report = verify(store)
    assert report["chain_ok"] and not report["replay_ok"]
