"""The CommonMark block scanner: what it says of each line agrees with markdown-it-py, the reference.

markdown-it-py (installed with Rich; the tokenizer the reference package parses with) is only the
oracle here; the engine never imports it. Each line's class is compared coarsely: paragraph text,
list item start, heading (outside or inside a container), code fence, indented code, HTML block,
block quote, setext underline, or blank/thematic break.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anvil.engine.prd.blocks import COMMENT, _interrupts, scan
from tests.conftest import sized

markdown_it = pytest.importorskip("markdown_it")
MD = markdown_it.MarkdownIt("commonmark")
COARSE = {"P": "p", "p": "p", "c": "p", "z": "p", "L": "l", "H": "H", "N": "N", "O": "f", "C": "f", "X": "f",
          "K": "k", "M": "m", "Q": "q", "B": "b", "S": "s"}

LINES = [
    "", "text", "more text", "- item", "* item", "+ item", "1. one", "2) two", "  - nested", "    - deep", "  text",
    "    code", "\tcode", "-\ttab item", "```", "~~~", "````", "```py", "  ```", "> quote", ">", "> - q item",
    "# H1", "## H2", "### T001: x", "#### T002: y", "---", "***", "===", "- ---", "<!-- c", "-->", "<!-- one -->",
    "<div>", "</div>", "<span>", "<custom-tag>", "   # three", "    # four", "-", "1.", "  ", "**Priority:** high",
    "- **Type:** x", "\t- tab nested", "  1. n", " - one space", "   - three", "     - five", "-    four sp",
    "-     five sp", "  > q in item", "- > q", "- ```", "  code in item", "- # h in item", "> ```", "<!-- a --> b",
    "<pre>", "</pre>", "  <!-- i", "- <!-- x -->", "* * *", "_ _ _", "10. ten", "1) one", "text `code` more",
    "  ~~~", "   ```", "``` a`b", "\t\tx", " \tx", "-\t\tx", ">\tx", "#", "#no", "  -", "   -", "+", "*",
    "- `pytest -q`", "**Verification:**", "  wrapped", "<?php", "?>", "<![CDATA[", "]]>", "<!DOCTYPE html>",
]


def oracle(lines: list[str]) -> list[str]:
    """markdown-it-py's view of each line, in the coarse classes."""
    tokens = MD.parse("\n".join(lines))
    cls = ["b" if not line.strip(" \t") else "?" for line in lines]
    items: list[int] = []
    quotes: list[tuple[int, int]] = []
    for t in tokens:
        if not t.map:
            continue
        a, b = t.map
        if t.type in ("fence", "code_block", "html_block"):
            mark = {"fence": "f", "code_block": "k", "html_block": "m"}[t.type]
            for i in range(a, b):
                cls[i] = mark if lines[i].strip(" \t") else "b"
        elif t.type == "heading_open":
            if t.markup in ("=", "-"):
                cls[a:b - 1] = ["p"] * (b - 1 - a)
                cls[b - 1] = "s"
            else:
                cls[a] = "H" if t.level == 0 else "N"
        elif t.type == "paragraph_open":
            for i in range(a, b):
                if lines[i].strip(" \t"):
                    cls[i] = "p"
        elif t.type == "hr":
            cls[a] = "b"
        elif t.type == "list_item_open":
            items.append(a)
        elif t.type == "blockquote_open":
            quotes.append((a, b))
    for a in items:
        if cls[a] not in ("f", "m"):
            cls[a] = "l"
    for a, b in quotes:
        for i in range(a, b):
            if lines[i].strip(" \t"):
                cls[i] = "q"
    return cls


def classes(lines: list[str]) -> list[str]:
    return ["b" if not line.strip(" \t") else COARSE[c] for c, line in zip(scan(lines).classes, lines, strict=True)]


def divergent(lines: list[str]) -> bool:
    """Whether ``lines`` hold the one place markdown-it-py and the CommonMark reference implementation part:
    a lazy continuation line indented four or more columns whose text would start a block (commonmark.js
    keeps it as paragraph text, markdown-it-py reads some as indented code)."""
    for c, line in zip(scan(lines).classes, lines, strict=True):
        s = line.lstrip(" \t")
        if c == "z" and s and len(line.expandtabs(4)) - len(s.expandtabs(4)) >= 4 and _interrupts(s, 0):
            return True
    return False


@settings(max_examples=sized(400, 3000), deadline=None)
@given(st.lists(st.sampled_from(LINES), min_size=1, max_size=25))
def test_every_line_is_classified_as_markdown_it_classifies_it(lines: list[str]) -> None:
    if not divergent(lines):
        assert classes(lines) == oracle(lines)


@pytest.mark.parametrize(("text", "expected"), [
    ("- a\n  ```\n  code\n### T002: b", "lffH"),  # a fence in a list item ends with the item
    ("```\n### T002: b", "ff"),  # a fence at the top runs to the end
    ("<!--\n### T002: b\n-->\nafter", "mmmp"),  # a comment hides what it holds
    ("<div>\n**Priority:** high\n\n**Priority:** low", "mmbp"),  # a block tag runs to a blank line
    ("text\n    **Priority:** x", "pp"),  # indented text after a paragraph continues it
    ("\n    **Priority:** x", "bk"),  # ... after a blank line it is code
    ("> quote\n**Priority:** x", "qq"),  # a lazy line belongs to the quote
    ("Title\n---", "ps"),  # a setext underline
    ("- a\n\n  more", "lbp"),  # a later paragraph of the item
])
def test_known_shapes_give_the_classes_commonmark_gives(text: str, expected: str) -> None:
    lines = text.split("\n")
    assert "".join(classes(lines)) == expected == "".join(oracle(lines))


def test_a_fence_or_comment_open_at_the_end_is_reported_with_its_first_line() -> None:
    found = scan(["text", "```bash", "pytest", "### T002: x"])
    assert found.unclosed is not None and (found.unclosed.kind, found.unclosed.line) == ("fence", 1)
    found = scan(["<!-- off", "### T002: x"])
    assert found.unclosed is not None and (found.unclosed.kind, found.unclosed.html_type) == ("html", COMMENT)
    assert scan(["```", "x", "```"]).unclosed is None


def test_a_block_its_list_item_ended_is_recorded_where_it_ended() -> None:
    found = scan(["- a", "  ```", "  code", "next"])
    assert found.ended == {2: 1} and found.unclosed is None


def test_the_fast_paths_agree_with_the_general_path_on_a_long_prd() -> None:
    from scripts.prdgen import chained_prd

    lines = chained_prd(200).split("\n")
    assert classes(lines) == oracle(lines)
    assert not re.search("[kmq]", "".join(classes(lines)))
