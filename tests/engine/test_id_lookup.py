"""Id lookup by prefix: case-insensitive, bounded, and empty (not an error) for bundles until they exist."""

from __future__ import annotations

import sqlite3

import pytest

from anvil.engine.id_lookup import MAX_MATCHES, ids_starting_with, schema_tables


@pytest.fixture
def conn() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE tasks (id TEXT PRIMARY KEY)")
    db.execute("CREATE TABLE features (id TEXT, prd_id TEXT)")
    db.executemany("INSERT INTO tasks VALUES (?)", [(f"T{n:03d}",) for n in range(1, 151)] + [("T_X",)])
    db.executemany("INSERT INTO features VALUES (?, ?)", [("F001", "a"), ("F001", "b"), ("F002", "a")])
    return db


def test_a_prefix_matches_ignoring_case_in_id_order(conn: sqlite3.Connection) -> None:
    assert ids_starting_with(conn, "task", "t00").values == [f"T{n:03d}" for n in range(1, 10)]


def test_at_most_the_limit_is_returned_with_the_full_count(conn: sqlite3.Connection) -> None:
    found = ids_starting_with(conn, "task", "")
    assert len(found.values) == MAX_MATCHES and found.total == 151


def test_like_wildcards_in_the_prefix_match_literally(conn: sqlite3.Connection) -> None:
    assert ids_starting_with(conn, "task", "T_").values == ["T_X"]
    assert ids_starting_with(conn, "task", "%").values == []


def test_a_feature_id_shared_by_two_prds_is_offered_once(conn: sqlite3.Connection) -> None:
    assert ids_starting_with(conn, "feature", "f").values == ["F001", "F002"]


def test_bundles_complete_to_nothing_while_the_schema_has_no_bundles_table(conn: sqlite3.Connection) -> None:
    assert {"tasks", "features"} <= schema_tables()
    conn.execute("CREATE TABLE bundles (id TEXT PRIMARY KEY)")
    conn.execute("INSERT INTO bundles VALUES ('B001')")  # a stray table the schema does not define
    assert ids_starting_with(conn, "bundle", "", tables=schema_tables() - {"bundles"}) == ([], 0)


def test_bundle_ids_complete_once_the_schema_has_a_bundles_table(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE bundles (id TEXT PRIMARY KEY, title TEXT)")
    conn.executemany("INSERT INTO bundles VALUES (?, ?)", [("B001", "x"), ("B002", "y"), ("C001", "z")])
    tables = {*schema_tables(), "bundles"}
    assert ids_starting_with(conn, "bundle", "b", tables=tables).values == ["B001", "B002"]


def test_an_unknown_kind_is_a_programming_error(conn: sqlite3.Connection) -> None:
    with pytest.raises(ValueError):
        ids_starting_with(conn, "claim", "")  # type: ignore[arg-type]
