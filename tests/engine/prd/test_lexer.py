"""The PRD lexer: line classification, fences and line ends."""

from __future__ import annotations

from anvil.engine.prd.lexer import SourceLines


def test_source_lines_classify_fences_and_keep_their_content_opaque() -> None:
    src = SourceLines("# H\n```\n## not\n```\n- item\n  more\n**Type:** x\ntext\n\n---")
    assert src.kinds == ["H", "O", "X", "C", "L", "T", "F", "T", "B", "B"]
    assert src.block_of == [0, -1, -1, -1, 4, 4, 6, 7, -1, -1]


def test_source_lines_treat_cr_and_crlf_as_line_ends() -> None:
    assert SourceLines("a\r\nb\rc\n").lines == ["a", "b", "c", ""]
