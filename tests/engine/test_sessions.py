"""Board sessions: signed, expiring cookies that carry no secret and that any holder of the key checks."""

from __future__ import annotations

import base64
import hashlib
import json

from anvil.engine import sessions

KEY = sessions.session_key(hashlib.sha256(b"the shared token").digest(), b"s" * 32)
NOW = 1_800_000_000


def test_a_sealed_cookie_opens_with_the_same_key_until_it_expires() -> None:
    cookie = sessions.seal(KEY, "shared", NOW, lifetime=60)
    assert sessions.unseal(cookie, KEY, NOW + 59)["sub"] == "shared"
    assert sessions.unseal(cookie, KEY, NOW + 60) is None


def test_a_key_derived_again_from_the_same_secret_opens_it_as_another_replica_would() -> None:
    cookie = sessions.seal(KEY, "tk000042", NOW)
    again = sessions.session_key(hashlib.sha256(b"the shared token").digest(), b"s" * 32)
    other = sessions.session_key(hashlib.sha256(b"another token").digest(), b"s" * 32)
    assert sessions.unseal(cookie, again, NOW) is not None and sessions.unseal(cookie, other, NOW) is None


def test_a_changed_payload_or_mac_is_refused() -> None:
    cookie = sessions.seal(KEY, "tk000042", NOW, lifetime=60)
    body, mac = cookie.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["exp"] = NOW + 10**6
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode() + "." + mac
    assert sessions.unseal(forged, KEY, NOW) is None
    assert sessions.unseal(body + "." + mac[:-2] + "AA", KEY, NOW) is None
    for junk in ("", ".", "a.b.c", "x" * 1000, "!!!.???", body):
        assert sessions.unseal(junk, KEY, NOW) is None and sessions.subject_of(junk) is None


def test_the_cookie_names_its_credential_but_holds_no_secret() -> None:
    token = "anvil_tk000042_" + "s" * 43
    cookie = sessions.seal(KEY, sessions.token_id_of(token) or "", NOW)
    assert sessions.subject_of(cookie) == "tk000042"
    assert "s" * 10 not in base64.urlsafe_b64decode(cookie.split(".")[0] + "==").decode()
    assert sessions.token_id_of("not-an-anvil-token") is None
