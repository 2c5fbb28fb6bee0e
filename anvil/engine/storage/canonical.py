"""Canonical JSON and hashing for the event log."""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Serialize ``value`` deterministically: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_hex(text: str) -> str:
    """Hex SHA-256 of ``text`` encoded as UTF-8."""
    import hashlib  # deferred: read-only calls never hash

    return hashlib.sha256(text.encode("utf-8")).hexdigest()
