"""PRD source bytes: the size and encoding gate, and bounded diagnostics for output.

``decode_source`` is the gate between raw bytes from a user and the parser: it enforces the size
ceiling and strict UTF-8 before any parsing happens. ``bounded_diagnostics`` shapes a diagnostic
list for output so that a pathological PRD cannot produce an unbounded response.
"""

from __future__ import annotations

from typing import Any

from anvil.engine.errors import UsageError, bound_text
from anvil.engine.prd.model import Diagnostic

DEFAULT_MAX_BYTES = 4 * 1024 * 1024  # a 4,000-task PRD in the documented form is about 1.9 MB
DEFAULT_DIAGNOSTIC_LIMIT = 20


def decode_source(data: bytes, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Decode PRD bytes as strict UTF-8, refusing oversized or undecodable input.

    A leading UTF-8 byte order mark is removed. Line endings are left as they are (the parser accepts
    both LF and CRLF).

    Args:
        data: The raw PRD bytes.
        max_bytes: The size ceiling in bytes; input longer than this is refused.

    Returns:
        The decoded text.

    Raises:
        UsageError: code ``prd_too_large`` when ``data`` exceeds ``max_bytes``; code ``prd_not_utf8``
            when it is not valid UTF-8. Messages give sizes and offsets, never content.
    """
    if len(data) > max_bytes:
        raise UsageError(f"the PRD is {len(data)} bytes; the limit is {max_bytes} bytes", code="prd_too_large",
                         details={"size": len(data), "limit": max_bytes})
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"the PRD is not valid UTF-8 (first invalid byte at offset {exc.start})",
                         code="prd_not_utf8", details={"offset": exc.start}) from None
    return text[1:] if text.startswith("\ufeff") else text


def bounded_diagnostics(diags: list[Diagnostic], limit: int = DEFAULT_DIAGNOSTIC_LIMIT,
                        max_bytes: int = 1024) -> dict[str, Any]:
    """Shape diagnostics for output: at most ``limit`` items, each message at most ``max_bytes``.

    Errors are listed before warnings (each group keeping its given order) so that a flood of
    warnings can never hide the errors that block persisting.

    Args:
        diags: The diagnostics, typically ``ParseResult.diagnostics``.
        limit: The most items to include; negative values count as zero.
        max_bytes: The UTF-8 byte bound of each shown message (at least 4, room for the ellipsis).

    Returns:
        ``{"items": [...], "count": total, "shown": n, "omitted": total - n, "truncated": omitted > 0,
        "messages_truncated": number of shown messages that were cut}``.

    Raises:
        Nothing.
    """
    ordered = [d for d in diags if d.severity == "error"] + [d for d in diags if d.severity != "error"]
    items: list[dict[str, Any]] = []
    cut = 0
    for diag in ordered[: max(limit, 0)]:
        item = diag.to_dict()
        # Lone surrogates (possible in a str from JSON) cannot be encoded; they become "?".
        safe = diag.message.encode("utf-8", "replace").decode("utf-8")
        message = bound_text(safe, max(max_bytes, 4))
        if message != safe:
            cut += 1
        item["message"] = message
        items.append(item)
    omitted = len(ordered) - len(items)
    return {"items": items, "count": len(ordered), "shown": len(items), "omitted": omitted,
            "truncated": omitted > 0, "messages_truncated": cut}


def bounded_errors_and_warnings(diags: list[Diagnostic], limit: int = DEFAULT_DIAGNOSTIC_LIMIT
                                ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split ``diags`` into errors and warnings for output, showing at most ``limit`` in total.

    Errors take the budget first, so warnings are shown only in the room the errors leave; both
    shapes are :func:`bounded_diagnostics`' (with the full counts).

    Args:
        diags: The diagnostics, typically ``ParseResult.diagnostics``.
        limit: The most items shown across both lists.

    Returns:
        ``(errors, warnings)``.

    Raises:
        Nothing.
    """
    errors = bounded_diagnostics([d for d in diags if d.severity == "error"], limit)
    warnings = bounded_diagnostics([d for d in diags if d.severity != "error"], max(limit, 0) - errors["shown"])
    return errors, warnings
