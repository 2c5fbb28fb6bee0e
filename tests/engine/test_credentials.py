"""Per-agent tokens: issued once, kept as digests, verified in constant time, revoked and expired."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from anvil.engine import credentials
from anvil.engine.errors import NotFound, Refused, UsageError
from anvil.engine.project import InitRequest, init_project
from anvil.engine.storage.integrity import verify
from anvil.engine.storage.paths import StateLocation
from anvil.engine.storage.store import Store


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock):  # type: ignore[no-untyped-def]
    location = StateLocation(tmp_path / "root", tmp_path / "state", "local")
    location.root.mkdir()
    init_project(location, InitRequest(name="Demo", actor="lead"), clock=clock)
    with Store.open(location, clock=clock) as opened:
        yield opened


def issue(store: Store, actor: str = "agent-1", role: str = "agent", lifetime: timedelta | None = None) -> dict:  # type: ignore[type-arg]
    with store.write("lead") as tx:
        return credentials.issue(tx, credentials.Grant(actor, role, lifetime))


def test_a_token_stands_for_its_name_and_role_until_revoked(store: Store, clock: Clock) -> None:
    granted = issue(store)
    identity = credentials.verify(store.conn, granted["token"], clock())
    assert identity is not None
    assert (identity.actor, identity.role, identity.authenticated) == ("agent-1", "agent", True)
    with store.write("lead") as tx:
        assert credentials.revoke(tx, "AGENT-1", None)["revoked"] == [granted["token_id"]]
    assert credentials.verify(store.conn, granted["token"], clock()) is None


def test_only_the_digest_is_kept_in_the_log_the_mirror_and_the_database(store: Store) -> None:
    granted = issue(store)
    token = granted["token"]
    assert token.startswith("anvil_" + granted["token_id"] + "_") and len(token) > 50
    events = [e for e in store.events() if e.type == "token.granted"]
    assert events[0].payload["digest"] == credentials.digest(token)
    assert token not in store.location.log_path.read_text()
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert token.encode() not in store.location.db_path.read_bytes()
    assert verify(store)["ok"]  # replaying the log rebuilds the token table exactly


@pytest.mark.parametrize("mangle", [lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"), lambda t: t[:-1],
                                    lambda t: t.replace("anvil_", "anvi1_"), lambda t: "anvil_tk999999_" + t[-43:],
                                    lambda t: t.upper(), lambda t: ""])
def test_a_changed_unknown_or_malformed_token_is_refused(store: Store, clock: Clock, mangle) -> None:  # type: ignore[no-untyped-def]
    granted = issue(store)
    assert credentials.verify(store.conn, mangle(granted["token"]), clock()) is None


def test_a_token_stops_working_when_it_expires(store: Store, clock: Clock) -> None:
    granted = issue(store, lifetime=credentials.parse_lifetime("2h"))
    clock.now += timedelta(hours=1, minutes=59)
    assert credentials.verify(store.conn, granted["token"], clock()) is not None
    clock.now += timedelta(minutes=1)
    assert credentials.verify(store.conn, granted["token"], clock()) is None
    rows = credentials.listing(store.conn, clock.now.isoformat(timespec="milliseconds"), actor=None,
                               include_ended=True)
    assert [row["status"] for row in rows] == ["expired"]


def test_a_name_holds_tokens_of_one_role_and_several_for_rotation(store: Store) -> None:
    first, second = issue(store), issue(store, actor="Agent-1")
    assert first["token_id"] != second["token_id"]
    with pytest.raises(Refused) as caught:
        issue(store, role="lead")
    assert caught.value.code == "token_role_conflict"
    with store.write("lead") as tx:
        assert credentials.revoke(tx, "agent-1", first["token_id"])["revoked"] == [first["token_id"]]
    with store.write("lead") as tx, pytest.raises(NotFound):
        credentials.revoke(tx, "agent-1", first["token_id"])
    with store.write("lead") as tx:
        assert credentials.revoke(tx, "agent-1", None)["revoked"] == [second["token_id"]]
    with store.write("lead") as tx:
        assert credentials.revoke(tx, "agent-1", None) == {"actor": "agent-1", "revoked": [], "count": 0}
        assert not tx.appended


@pytest.mark.parametrize(("text", "seconds"), [("90m", 5400), ("12h", 43200), ("30d", 2592000), ("2W", 1209600)])
def test_lifetimes_read_minutes_hours_days_and_weeks(text: str, seconds: int) -> None:
    assert credentials.parse_lifetime(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["soon", "0d", "30", "-1d", "1y", "3661d", "1.5h"])
def test_other_lifetimes_are_refused(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        credentials.parse_lifetime(text)
    assert caught.value.code == "invalid_duration" and "--expires" in caught.value.message


def test_a_project_uses_tokens_from_its_first_grant_until_every_token_is_revoked(store: Store) -> None:
    # Revoking every token hands a shared-token server back to its shared token; the gate never falls
    # open for it (tests/ops/test_access.py).
    assert not credentials.in_use(store.conn)
    issue(store)
    assert credentials.in_use(store.conn)
    with store.write("lead") as tx:
        credentials.revoke(tx, "agent-1", None)
    assert not credentials.in_use(store.conn)
