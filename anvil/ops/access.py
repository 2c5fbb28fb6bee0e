"""Admitting an HTTP request: which identity its bearer token stands for (stdlib + engine only).

Two modes, decided per request from the project's state, so every replica agrees and a change
(a first token issued, a token revoked) is in force from the next request on, under one rule fixed
when the server starts: a server that required tokens then (a shared token, or per-agent tokens
already issued) requires one for as long as it runs. Whatever happens to the state meanwhile (``anvil
init --force``, the state directory moved away, an empty PostgreSQL database), a request without a
valid token is refused: the server never falls open. A server that started open (loopback, nothing
issued) closes for good once it sees a first per-agent token.

* **per-agent tokens**, while the project holds an unrevoked one (``anvil token add``): every request must
  present a live token; it then acts as that token's identity and role. A shared server token is
  not accepted any more.
* **shared token** otherwise: the request must present the server's one token (``--token-env``),
  if it has one; it is admitted without an identity (callers declare their own names).

An admitted request may keep the state its admission opened (:meth:`Gatekeeper.admit` with ``hold``):
its tool call then runs on that store instead of resolving the location and opening the state a
second time (:class:`HeldState`). Nothing outlives the request: what the call does not take is closed
when the request ends, and the next request is admitted on a fresh reading.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from anvil.engine import credentials
from anvil.engine.errors import NotFound
from anvil.engine.identity import Identity
from anvil.engine.storage.paths import StateLocation, location_inputs, resolve_state
from anvil.engine.storage.store import Store

MAX_HELD = 16
"""At most this many admitted requests of one gate keep their admission's store open at once (each
holds a database connection until its call takes it: a slow body upload must not pin many of them);
past it a request is admitted as before, its store closed, and its call opens its own."""


@dataclass(eq=False)
class HeldState:
    """The open state an admission read, kept for the request's own tool call.

    ``inputs`` are what its location was resolved from (:func:`~anvil.engine.storage.paths.location_inputs`):
    the call takes the store only when its own environment and directory give the same, so it runs on
    exactly the state it would have opened itself. Taking and releasing are safe from any thread; the
    first one wins (a store is closed once, by whoever ends up owning it).
    """

    store: Store
    inputs: tuple[str | None, ...]
    _on_release: Callable[[], None] | None = None
    _guard: threading.Lock = field(default_factory=threading.Lock)
    _done: bool = False

    def take(self, env: Mapping[str, str], cwd: str | os.PathLike[str]) -> Store | None:
        """The store, now owned by the caller (who closes it), when ``env``/``cwd`` select the same state;
        otherwise None (and the store is closed here)."""
        store = self._claim()
        if store is None:
            return None
        if location_inputs(env, cwd) == self.inputs:
            return store
        store.close()
        return None

    def release(self) -> None:
        """Close the store unless a call took it (idempotent)."""
        store = self._claim()
        if store is not None:
            store.close()

    def _claim(self) -> Store | None:
        with self._guard:
            if self._done:
                return None
            self._done = True
        if self._on_release is not None:
            self._on_release()
        return self.store


@dataclass(frozen=True, slots=True)
class Admission:
    """The answer for one request.

    Attributes:
        admitted: let it through.
        identity: the authenticated caller (per-agent mode), or None.
        failure: ``missing`` or ``invalid`` when refused.
        held: the store the admission read, kept open for the request's call (only when admitted and
            asked for); whoever gets the admission must :meth:`HeldState.release` it in the end.
    """

    admitted: bool
    identity: Identity | None = None
    failure: str | None = None
    held: HeldState | None = None


def tokens_in_use(env: Mapping[str, str], cwd: str) -> bool:
    """Whether the project served from ``env``/``cwd`` has issued per-agent tokens.

    Raises:
        AnvilError: the state exists but cannot be read.
    """
    location = resolve_state(env, cwd)
    if not location.initialized:
        return False
    try:
        store = Store.open(location)
    except NotFound:  # a database (ANVIL_DATABASE_URL) that holds no project yet
        return False
    with store:
        return credentials.in_use(store.conn)


def _open_if_there(location: StateLocation) -> Store | None:
    """The state at ``location``, or None when a database names no project yet (it has no tokens)."""
    try:
        return Store.open(location)
    except NotFound:
        return None


class Gatekeeper:
    """Decides on requests for one served project (see the module docstring)."""

    def __init__(self, shared_token: str | None = None, *, env: Mapping[str, str] | None = None,
                 cwd: str = ".", tokens_issued: bool | None = None) -> None:
        """Guard the project ``env``/``cwd`` select (None: no project, the shared token alone decides);
        only a digest of ``shared_token`` is kept. ``tokens_issued``: whether the project held per-agent
        tokens when the server started (None: read its state now).

        Raises:
            AnvilError: the project's state exists but cannot be read (the server must not start).
        """
        self._env, self._cwd = (dict(env) if env is not None else None), cwd
        self._shared = hashlib.sha256(shared_token.encode("utf-8")).digest() if shared_token is not None else None
        # Fixed now, and only ever tightened: see the module docstring.
        if tokens_issued is None:
            tokens_issued = self._env is not None and tokens_in_use(self._env, self._cwd)
        self._tokens_required = self._shared is not None or tokens_issued
        self._held = 0
        self._held_guard = threading.Lock()

    @property
    def tokens_required(self) -> bool:
        """Whether every request must present a valid token (fixed at start, only ever tightened)."""
        return self._tokens_required

    def require_tokens(self) -> None:
        """Close the gate for good: per-agent tokens were seen in the project's state."""
        self._tokens_required = True

    def admit(self, presented: str | None, *, hold: bool = False) -> Admission:
        """Admit or refuse a request that presented ``presented`` (None: no usable bearer token).

        With ``hold``, an admitted request keeps the store its admission opened (``Admission.held``,
        see :class:`HeldState`), unless :data:`MAX_HELD` requests hold one already.

        Raises:
            AnvilError: the project's state cannot be read (the request must then be refused).
        """
        inputs = location_inputs(self._env, self._cwd) if self._env is not None else None
        location = resolve_state(self._env, self._cwd) if self._env is not None else None
        store = _open_if_there(location) if location is not None and location.initialized else None
        if store is None:
            return self._shared_admission(presented)
        kept = False
        try:
            admission = self._admission(store, presented)
            if hold and admission.admitted and inputs is not None and self._reserve():
                kept = True
                return Admission(True, admission.identity, held=HeldState(store, inputs, self._unreserve))
            return admission
        finally:
            if not kept:
                store.close()

    def _admission(self, store: Store, presented: str | None) -> Admission:
        """The decision on ``presented`` from the open state (one statement: tokens in use, the presented
        token's row and, on PostgreSQL, the clock)."""
        token_id = credentials.presented_id(presented) if presented is not None else None
        reading = credentials.gate_reading(store.conn, token_id, database_clock=store.location.database_url is not None)
        if not reading.in_use:
            return self._shared_admission(presented)
        self.require_tokens()
        if presented is None:
            return Admission(False, failure="missing")
        now = reading.clock or store.clock()
        identity = credentials.verify_read(presented, reading, now)
        return Admission(True, identity) if identity else Admission(False, failure="invalid")

    def _reserve(self) -> bool:
        with self._held_guard:
            if self._held >= MAX_HELD:
                return False
            self._held += 1
            return True

    def _unreserve(self) -> None:
        with self._held_guard:
            self._held -= 1

    def _shared_admission(self, presented: str | None) -> Admission:
        """The shared-token decision: admitted without an identity (and never open once tokens were required)."""
        if self._shared is None:
            if self._tokens_required:  # the tokens vanished from the state: fail closed, never open
                return Admission(False, failure="missing" if presented is None else "invalid")
            return Admission(True)
        if presented is None:
            return Admission(False, failure="missing")
        digest = hashlib.sha256(presented.encode("utf-8")).digest()
        return Admission(True) if hmac.compare_digest(digest, self._shared) else Admission(False, failure="invalid")
