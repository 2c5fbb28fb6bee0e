"""Decoding PRD bytes and bounding diagnostics for output."""

from __future__ import annotations

import pytest

from anvil.engine.errors import UsageError
from anvil.engine.prd.model import Diagnostic
from anvil.engine.prd.source import bounded_diagnostics, decode_source


def test_decode_accepts_utf8_and_drops_a_bom() -> None:
    assert decode_source("# Project: é\n".encode()) == "# Project: é\n"
    assert decode_source(b"\xef\xbb\xbf# Project: X") == "# Project: X"


def test_decode_refuses_input_over_the_ceiling_without_echoing_it() -> None:
    with pytest.raises(UsageError) as info:
        decode_source(b"SECRET" * 10, max_bytes=59)
    assert info.value.code == "prd_too_large" and info.value.exit_code == 2
    assert "SECRET" not in info.value.message and "60" in info.value.message


def test_decode_accepts_input_exactly_at_the_ceiling() -> None:
    assert decode_source(b"x" * 10, max_bytes=10) == "x" * 10


def test_decode_default_ceiling_is_four_mebibytes() -> None:
    assert decode_source(b"x" * 4 * 1024 * 1024)
    with pytest.raises(UsageError) as info:
        decode_source(b"x" * (4 * 1024 * 1024 + 1))
    assert info.value.code == "prd_too_large"


def test_decode_refuses_invalid_utf8_and_names_only_the_offset() -> None:
    with pytest.raises(UsageError) as info:
        decode_source(b"SECRET \xff\xfe tail")
    assert info.value.code == "prd_not_utf8"
    assert "SECRET" not in info.value.message and "7" in info.value.message
    assert len(info.value.message) < 200


def diag(i: int, severity: str = "warning", message: str = "m") -> Diagnostic:
    return Diagnostic(severity, i, f"code_{i}", message)  # type: ignore[arg-type]


def test_bounded_diagnostics_counts_and_truncates() -> None:
    diags = [diag(i) for i in range(30)]
    out = bounded_diagnostics(diags)
    assert out["count"] == 30 and out["shown"] == 20 and out["omitted"] == 10 and out["truncated"] is True
    assert out["messages_truncated"] == 0
    assert out["items"][0] == {"severity": "warning", "line": 0, "code": "code_0", "message": "m"}


def test_bounded_diagnostics_with_room_for_everything() -> None:
    out = bounded_diagnostics([diag(1), diag(2)], limit=5)
    assert (out["count"], out["shown"], out["omitted"], out["truncated"]) == (2, 2, 0, False)
    assert bounded_diagnostics([], limit=0) == {"items": [], "count": 0, "shown": 0, "omitted": 0,
                                                "truncated": False, "messages_truncated": 0}


def test_bounded_diagnostics_cuts_long_messages_by_utf8_bytes() -> None:
    out = bounded_diagnostics([diag(1, message="é" * 2000), diag(2, message="short")], max_bytes=1024)
    assert out["messages_truncated"] == 1
    assert len(out["items"][0]["message"].encode()) <= 1024
    assert out["items"][1]["message"] == "short"


def test_bounded_diagnostics_survives_unencodable_messages() -> None:
    out = bounded_diagnostics([diag(1, message="bad \ud800 surrogate")])
    assert out["items"][0]["message"] == "bad ? surrogate"


def test_bounded_diagnostics_lists_errors_first() -> None:
    diags = [diag(i) for i in range(25)] + [diag(99, "error")]
    out = bounded_diagnostics(diags, limit=3)
    assert [i["code"] for i in out["items"]] == ["code_99", "code_0", "code_1"]


def test_negative_limit_shows_nothing() -> None:
    out = bounded_diagnostics([diag(1)], limit=-5)
    assert out["shown"] == 0 and out["omitted"] == 1 and out["truncated"] is True
