"""Which commits wake a waiter for work: the events that never make a task claimable.

Shared by the change feeds (:mod:`anvil.engine.storage.changes`, and the PostgreSQL listener in
:mod:`anvil.engine.storage.postgres`) and the writers that tell them what they committed.
"""

from __future__ import annotations

from collections.abc import Iterable

QUIET_EVENTS = frozenset({
    "claim.acquired", "claim.renewed", "progress.noted", "progress.attested", "idempotency.recorded",
    "bundle.claimed", "bundle.claim_renewed", "token.granted", "token.revoked", "trust.added", "trust.removed",
    "task.land_started",
})
"""Events that never make a task claimable: a commit of only these wakes no waiter for work. Any other
event (unknown ones too) may free work: a waiter woken for nothing only looks once more."""
_QUIET_SQL = ", ".join(f"'{name}'" for name in sorted(QUIET_EVENTS))
WORK_SINCE_SQL = f"SELECT 1 FROM events WHERE seq > ? AND type NOT IN ({_QUIET_SQL}) LIMIT 1"
"""Whether an event that may free work was committed after a sequence (a range of the log's key)."""


def frees_work(event_types: Iterable[str]) -> bool:
    """Whether a commit of events of ``event_types`` may make a task claimable (see :data:`QUIET_EVENTS`)."""
    return any(event_type not in QUIET_EVENTS for event_type in event_types)
