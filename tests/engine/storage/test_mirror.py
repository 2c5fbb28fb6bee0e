"""The events.jsonl mirror: lines are split on "\\n" only, so no text can make verify cry wolf.

Canonical JSON keeps U+2028, U+2029, U+0085 and other characters that generic line splitters
treat as line breaks. They reach the log through every text input (progress notes, actor names,
PRD text, review notes), and ``verify`` must stay ok whatever they hold.
"""

from __future__ import annotations

import functools
import sys
import unicodedata
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from anvil.engine.errors import AnvilError
from anvil.engine.storage import mirror
from anvil.engine.storage.integrity import verify
from tests.ops.support import op, scenario, store_of

LINE_LIKE = ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r", "\r\n"]
RAW_IN_JSON = ("\u2028", "\u2029", "\u0085")  # JSON escapes the C0 controls, but not these


@functools.cache
def categories() -> list[str]:
    """Every Unicode general category (found once, when a test first draws from it)."""
    return sorted({unicodedata.category(chr(c)) for c in range(sys.maxunicode + 1)})


def verified(env: dict[str, str]) -> dict[str, Any]:
    with store_of(env) as store:
        return verify(store)


def mini_prd(title: str, text: str) -> str:
    return ("# Project: Mini\n\n## Summary\n\nSupport agents use Mini.\n\n## Requirements\n\n- R001: It works.\n\n"
            "## Features\n\n### F001: Core\n\nThe core.\n\n**Requirements:** R001\n\n## Tasks\n\n"
            f"### T001: {title}\n\n{text}\n\n**Feature:** F001\n**Priority:** high\n**Type:** feature\n"
            "**Likely files:** a.py\n**Dependencies:** none\n**Acceptance criteria:**\n- It works.\n"
            "**Verification:**\n- `pytest -q`\n")


def test_split_lines_splits_on_newline_bytes_only() -> None:
    text = "a\u2028b\u2029c\u0085d\x0be\x0cf\x1cg\rh"
    data = (text + "\n" + text + "\npartial").encode("utf-8")
    assert mirror.split_lines(data) == ([text.encode("utf-8")] * 2, b"partial")


def test_line_like_characters_in_every_text_input_keep_verify_ok(anvil_env: dict[str, str]) -> None:
    root = scenario(anvil_env, "claimed")
    for number, char in enumerate(LINE_LIKE):
        text = f"before{char}after"
        op(anvil_env, "submit_progress", task_id="T001", actor="agent-1", notes=text, detail=text, generation=1)
        op(anvil_env, "submit_progress", task_id="T002", actor=f"agent-{number}", notes=text, phase=text)
        (root / "u.md").write_text(mini_prd(f"Unicode {number}", text), encoding="utf-8", newline="")
        op(anvil_env, "parse_prd", file="u.md", prd_id="u")
    op(anvil_env, "review_prd", prd_id="u", reviewer="lead", notes="".join(LINE_LIKE))
    op(anvil_env, "release_task", task_id="T001", actor="agent-1", reason="".join(LINE_LIKE), generation=1)
    report = verified(anvil_env)
    assert report["ok"], report["problems"]
    assert report["mirror_lines"] == report["event_count"]
    with store_of(anvil_env) as store:
        log = store.location.log_path.read_bytes()
    for char in RAW_IN_JSON:
        assert char.encode("utf-8") in log, "canonical JSON keeps the character as it is"


def any_category_text() -> st.SearchStrategy[str]:
    """Text drawing characters from every Unicode category (surrogates, controls and unassigned ones too)."""
    one = st.deferred(lambda: st.sampled_from(categories())).flatmap(
        lambda category: st.characters(categories=[category]))
    return st.lists(one | st.sampled_from(LINE_LIKE), min_size=1, max_size=24).map("".join)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=any_category_text())
@example(text="\u2028")  # only a line separator: the title must still have a letter
def test_text_from_every_unicode_category_through_every_input_keeps_verify_ok(anvil_env: dict[str, str],
                                                                              text: str) -> None:
    root = Path(anvil_env["ANVIL_ROOT"])
    if not (root / "docs").exists():
        scenario(anvil_env, "claimed")
    letters = "".join(c for c in text if c.isalnum())[:40]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("submit_progress", {"task_id": "T001", "actor": "agent-1", "notes": text, "phase": text[:100],
                             "generation": 1}),
        ("submit_progress", {"task_id": "T002", "actor": f"agent-{letters}", "notes": text}),
        ("review_prd", {"prd_id": "u", "reviewer": "lead", "notes": text}),
    ]
    (root / "u.md").write_text(mini_prd("x " + text.replace("\n", " "), text), encoding="utf-8",
                               errors="surrogatepass", newline="")
    try:
        op(anvil_env, "parse_prd", file="u.md", prd_id="u")
    except AnvilError as error:
        assert error.code in ("prd_not_utf8", "invalid_input"), error.code  # lone surrogates are not UTF-8
    for name, args in calls:
        try:
            op(anvil_env, name, **args)
        except AnvilError as error:  # refusals write nothing; lone surrogates are invalid input
            assert error.exit_code in (2, 5), (error.code, error.message)
    report = verified(anvil_env)
    assert report["ok"], report["problems"]
