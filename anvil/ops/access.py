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
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from anvil.engine import credentials
from anvil.engine.errors import NotFound
from anvil.engine.identity import Identity
from anvil.engine.storage.paths import StateLocation, resolve_state
from anvil.engine.storage.store import Store


@dataclass(frozen=True, slots=True)
class Admission:
    """The answer for one request.

    Attributes:
        admitted: let it through.
        identity: the authenticated caller (per-agent mode), or None.
        failure: ``missing`` or ``invalid`` when refused.
    """

    admitted: bool
    identity: Identity | None = None
    failure: str | None = None


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

    @property
    def tokens_required(self) -> bool:
        """Whether every request must present a valid token (fixed at start, only ever tightened)."""
        return self._tokens_required

    def require_tokens(self) -> None:
        """Close the gate for good: per-agent tokens were seen in the project's state."""
        self._tokens_required = True

    def admit(self, presented: str | None) -> Admission:
        """Admit or refuse a request that presented ``presented`` (None: no usable bearer token).

        Raises:
            AnvilError: the project's state cannot be read (the request must then be refused).
        """
        location = resolve_state(self._env, self._cwd) if self._env is not None else None
        store = _open_if_there(location) if location is not None and location.initialized else None
        if store is not None:
            with store:
                # One statement: tokens in use, the presented token's row and (PostgreSQL) the clock.
                token_id = credentials.presented_id(presented) if presented is not None else None
                reading = credentials.gate_reading(store.conn, token_id,
                                                   database_clock=store.location.database_url is not None)
                if reading.in_use:
                    self.require_tokens()
                    if presented is None:
                        return Admission(False, failure="missing")
                    now = reading.clock or store.clock()
                    identity = credentials.verify_read(presented, reading, now)
                    return Admission(True, identity) if identity else Admission(False, failure="invalid")
        return self._shared_admission(presented)

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
