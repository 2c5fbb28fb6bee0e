"""Who may look at the team board: the HTTP server's token rules, carried by a session cookie.

The board follows the same rules as ``/mcp``, decided per request from the project's state (so
every replica agrees, and a token issued or revoked counts from the next request on), and like it
never falls open once tokens were required (:class:`anvil.ops.access.Gatekeeper`):

* **per-agent tokens** while the project holds an unrevoked one: a live token logs in, and its session
  ends when the token is revoked or expires;
* **shared token** otherwise, when the server has one (``--token-env``);
* **open** for a loopback server with neither (the board needs no login, like ``/mcp``).

A token is presented once, to :meth:`BoardAccess.login`, and exchanged for a signed cookie
(:mod:`anvil.engine.sessions`); only digests of the shared token are kept in memory.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from typing import NamedTuple

from anvil.engine import credentials, sessions
from anvil.engine.errors import NotFound
from anvil.engine.storage.paths import resolve_state
from anvil.engine.storage.store import Store, format_ts
from anvil.ops.access import Gatekeeper


class Viewer(NamedTuple):
    """An admitted board viewer: the mode that admitted it, and the token holder in per-agent mode."""

    mode: str  # "open", "shared" or "tokens"
    actor: str | None = None
    role: str | None = None


class Login(NamedTuple):
    """The outcome of presenting a token: the cookie value to set (None when none is needed) and the viewer."""

    cookie: str | None
    viewer: Viewer


class BoardAccess:
    """Logs board viewers in and recognises their cookies, for one served project."""

    def __init__(self, shared_token: str | None, *, env: Mapping[str, str] | None, cwd: str = ".",
                 tokens_issued: bool | None = None) -> None:
        """Guard the project ``env``/``cwd`` select (None: no project, the shared token alone decides);
        ``tokens_issued`` as :class:`~anvil.ops.access.Gatekeeper` takes it."""
        self._env, self._cwd = (dict(env) if env is not None else None), cwd
        self._gate = Gatekeeper(shared_token, env=env, cwd=cwd, tokens_issued=tokens_issued)
        shared = hashlib.sha256(shared_token.encode("utf-8")).digest() if shared_token is not None else None
        self._secret = sessions.server_secret(env if env is not None else {})
        self._shared_key = sessions.session_key(shared, self._secret) if shared is not None else None

    def _store(self) -> Store | None:
        """The project's open state when it has issued per-agent tokens, else None."""
        if self._env is None:
            return None
        location = resolve_state(self._env, self._cwd)
        if not location.initialized:
            return None
        try:
            store = Store.open(location)
        except NotFound:  # a database (ANVIL_DATABASE_URL) that holds no project yet: no tokens
            return None
        if credentials.in_use(store.conn):
            self._gate.require_tokens()
            return store
        store.close()
        return None

    def login(self, presented: str) -> Login | None:
        """Exchange ``presented`` for a session, or None when the token is refused.

        Raises:
            AnvilError: the project's state cannot be read.
        """
        admission = self._gate.admit(presented or None)
        if not admission.admitted:
            return None
        now = int(time.time())
        if admission.identity is not None:
            token_id = sessions.token_id_of(presented)
            store = self._store()
            holder = None
            if token_id is not None and store is not None:
                with store:
                    holder = sessions.live_token(store.conn, token_id, format_ts(store.clock()), self._secret)
            if holder is None or token_id is None:
                return None
            return Login(sessions.seal(holder.key, token_id, now), Viewer("tokens", holder.actor, holder.role))
        if self._shared_key is not None:
            return Login(sessions.seal(self._shared_key, sessions.SHARED_SUBJECT, now), Viewer("shared"))
        return None if self._gate.tokens_required else Login(None, Viewer("open"))

    def viewer(self, cookie: str | None) -> Viewer | None:
        """The viewer a request's session cookie stands for; None means it must log in.

        Raises:
            AnvilError: the project's state cannot be read (the request must then be refused).
        """
        now = int(time.time())
        store = self._store()
        if store is not None:
            with store:
                subject = sessions.subject_of(cookie or "")
                if subject is None or subject == sessions.SHARED_SUBJECT:
                    return None
                holder = sessions.live_token(store.conn, subject, format_ts(store.clock()), self._secret)
            if holder is None or sessions.unseal(cookie or "", holder.key, now) is None:
                return None
            return Viewer("tokens", holder.actor, holder.role)
        if self._shared_key is not None:
            payload = sessions.unseal(cookie or "", self._shared_key, now)
            return Viewer("shared") if payload is not None and payload.get("sub") == sessions.SHARED_SUBJECT else None
        return None if self._gate.tokens_required else Viewer("open")
