"""The PRD lifecycle: parse and revise, review, approve, and the approval gate for claims.

Each recorded revision carries its source text in its event, so the log alone says what was
approved. The managed source in the state directory (``prd.md`` for the default PRD,
``prds/<id>.md`` for named ones) is where people write the next revision; parsing an explicit
file copies it there after the commit. That copy is a cache: whenever anvil reads the managed
source it first rewrites a copy that is missing or that still holds an older recorded revision
(what a crash between the commit and the copy leaves), and never touches a file holding text
the log does not know (someone's unparsed edits). Approval binds the exact revision and digests:
a material re-parse (content, not layout) demotes the PRD to draft.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from anvil.engine.errors import NotFound, Refused, UsageError
from anvil.engine.storage.canonical import canonical_json, sha256_hex
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.paths import StateLocation
from anvil.engine.storage.store import Event, Transaction, applies
from anvil.engine.vocab import DEFAULT_PRD

if TYPE_CHECKING:
    from anvil.engine.prd.model import ParseResult, PrdDocument

PRD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def resolve_prd_id(explicit: str | None, env: Mapping[str, str], conn: Connection | None = None) -> str:
    """Explicit id, else ``ANVIL_PRD``, else the default PRD (or the only one there is).

    Raises:
        UsageError: the id is not a plain name (letters, digits, ``.``, ``_``, ``-``).
    """
    chosen = (explicit or env.get("ANVIL_PRD", "")).strip()
    if chosen in ("", "prd"):
        chosen = DEFAULT_PRD
        if conn is not None:
            ids = [r[0] for r in conn.execute("SELECT prd_id FROM prds ORDER BY prd_id LIMIT 2")]
            if len(ids) == 1:
                chosen = ids[0]
    if not PRD_ID.match(chosen):
        raise UsageError("a PRD id is a plain name of letters, digits, '.', '_' or '-'", code="invalid_prd_id")
    return chosen


def source_path(location: StateLocation, prd_id: str) -> Path:
    return location.prd_source_path(prd_id)


class SourceChoice(NamedTuple):
    """Which PRD source a call reads: a file inside the project, the text itself, or (neither) the managed source."""

    file: str | None = None
    text: str | None = None
    origin: str | None = None  # where ``text`` was read from (a path the caller names), remembered

def read_source(location: StateLocation, prd_id: str, choice: SourceChoice, cwd: str,
                conn: Connection | None = None) -> tuple[bytes, Path | None]:
    """The bytes of the selected PRD source and the file they came from (None for given text).

    Without ``file`` the managed source is read, after :func:`refresh_managed_copy` (given ``conn``).

    Raises:
        NotFound: the source does not exist.
        UsageError: both a file and text were given, ``file`` lies outside the project, the source
            is over the size ceiling, or it is not a regular file (``local_file_not_regular``).
    """
    from anvil.engine.localread import read_named_file
    from anvil.engine.prd.source import DEFAULT_MAX_BYTES

    file = choice.file
    if choice.text is not None:
        if file:
            raise UsageError("pass either file or source, not both", code="invalid_input")
        data = choice.text.encode("utf-8")
        if len(data) > DEFAULT_MAX_BYTES:
            raise UsageError(f"the PRD is {len(data)} bytes; the limit is {DEFAULT_MAX_BYTES} bytes",
                             code="prd_too_large", details={"size": len(data), "limit": DEFAULT_MAX_BYTES})
        return data, None
    if not file and conn is not None:
        refresh_managed_copy(conn, location, prd_id)
    if file and "\0" in file:
        raise UsageError("the PRD file name holds a NUL byte", code="invalid_input")
    path = Path(cwd, file).expanduser() if file else source_path(location, prd_id)
    if file and not path.resolve().is_relative_to(location.root):
        # A deployed server must not become a way to read its host's files.
        raise UsageError("the PRD file must be inside the project (copy it there first)", code="file_outside_project")
    if not path.exists():
        raise NotFound(f"no PRD source at {_show(path, location)}: write it or pass --file", code="prd_source_missing")
    return read_named_file(path, DEFAULT_MAX_BYTES, "the PRD source", "prd"), path


def _show(path: Path, location: StateLocation) -> str:
    try:
        return str(path.relative_to(location.root))[:200]
    except ValueError:
        return str(path)[:200]


def parse_source(data: bytes) -> tuple[str, ParseResult]:
    """Decode (size and UTF-8 checked) and parse; returns the text and the ParseResult."""
    # Deferred: claims import this module for the approval gate only.
    from anvil.engine.prd.parser import parse_prd
    from anvil.engine.prd.source import decode_source

    text = decode_source(data)
    return text, parse_prd(text)


def parse_report(result: ParseResult) -> dict[str, Any]:
    """The counts and the bounded diagnostics of a parse, as ``parse_prd`` and ``check_prd`` report them.

    At most 20 diagnostics are shown in all, errors first (see
    :func:`anvil.engine.prd.source.bounded_errors_and_warnings`); the counts are complete.
    """
    from anvil.engine.prd.source import bounded_errors_and_warnings

    doc = result.document
    errors, warnings = bounded_errors_and_warnings(result.diagnostics)
    return {
        "requirement_count": len(doc.requirements) if doc else 0, "feature_count": len(doc.features) if doc else 0,
        "task_count": len(doc.tasks) if doc else 0,
        "errors": errors["items"], "error_count": errors["count"], "errors_shown": errors["shown"],
        "errors_omitted": errors["omitted"], "errors_truncated": errors["truncated"],
        "error_messages_truncated": errors["messages_truncated"],
        "warnings": warnings["items"], "warning_count": warnings["count"], "warnings_shown": warnings["shown"],
        "warnings_omitted": warnings["omitted"], "warnings_truncated": warnings["truncated"],
        "warning_messages_truncated": warnings["messages_truncated"],
    }


def material_digest(doc: PrdDocument) -> str:
    return sha256_hex(canonical_json(doc.material_dict()))


def get_prd(conn: Connection, prd_id: str) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT prd_id, status, revision, source_digest, material_digest, document, approved_revision, "
        "approved_source_digest, approved_material_digest, reviewer, notes, planned_revision FROM prds "
        "WHERE prd_id = ?", (prd_id,)).fetchone()
    if row is None:
        return None
    keys = ("prd_id", "status", "revision", "source_digest", "material_digest", "document", "approved_revision",
            "approved_source_digest", "approved_material_digest", "reviewer", "notes", "planned_revision")
    prd = dict(zip(keys, row, strict=True))
    prd["document"] = json.loads(prd["document"])
    return prd


def require_prd(conn: Connection, prd_id: str) -> dict[str, Any]:
    """The PRD ``prd_id``.

    Raises:
        NotFound: it was never parsed (code ``prd_not_found``).
    """
    prd = get_prd(conn, prd_id)
    if prd is None:
        raise NotFound(f"no PRD {prd_id!r} has been parsed: run `anvil prd parse` first", code="prd_not_found")
    return prd


def parse(tx: Transaction, location: StateLocation, prd_id: str, choice: SourceChoice, cwd: str, *,
          local: bool = True) -> dict[str, Any]:
    """Parse the selected source; record ``prd.parsed`` / ``prd.revised`` when it is clean.

    The file a PRD is parsed from is remembered with its revision (``source_path``), so a parse
    without a file or text re-reads that file rather than a managed copy the user no longer edits,
    and says when the two differ; when the file is gone, the managed copy is parsed and the result
    says so. A file outside the project (the CLI read it and sent its text) is re-read only by a
    ``local`` call, which runs on the machine it was read on; a server over the network refuses.

    Raises:
        NotFound: the source is missing.
        UsageError: the source is too large or not UTF-8, or is given twice.
        Refused: ``prd_source_outside`` (a remote call, or the file outside the project cannot be
            read here), ``prd_sources_diverged``.
    """
    remembered = remembered_file(tx.conn, prd_id)
    notice: str | None = None
    if choice.file is None and choice.text is None and remembered:
        choice, notice, remembered = _remembered_choice(tx.conn, location, prd_id, remembered, local)
    data, path = read_source(location, prd_id, choice, cwd, tx.conn)
    managed = source_path(location, prd_id).resolve()
    origin = choice.origin or _project_relative(path, location) or remembered
    out = record_source(tx, location, prd_id, data, copy=path is None or path.resolve() != managed, origin=origin)
    out.update(source_file=origin, source_notice=notice)
    return out


def _digest_of(path: Path) -> str | None:
    from anvil.engine.localread import FileTooLarge, NotRegularFile, read_regular_file
    from anvil.engine.prd.source import DEFAULT_MAX_BYTES

    try:
        return sha256_hex(read_regular_file(path, DEFAULT_MAX_BYTES).decode("utf-8", errors="replace"))
    except (OSError, ValueError, NotRegularFile, FileTooLarge):
        return None


def _remembered_choice(conn: Connection, location: StateLocation, prd_id: str, remembered: str, local: bool
                       ) -> tuple[SourceChoice, str, str | None]:
    """What a parse without a file reads when the PRD was parsed from ``remembered``: the file when it
    changed, the managed copy when only that was edited, and a refusal when both were, differently.

    Returns:
        The source to read, the notice saying which and why, and the file to keep remembering.

    Raises:
        Refused: ``prd_sources_diverged``: the file and the managed copy both changed, differently;
            ``prd_source_outside``: the file lies outside the project and this call cannot read it.
    """
    candidate = (location.root / remembered).resolve()
    outside = not candidate.is_relative_to(location.root.resolve())
    if outside and not (local and candidate.is_file()):
        where = "this server cannot read it (it is on the machine that parsed it)" if not local else \
            "it is not readable here"
        raise Refused(f"this PRD was parsed from {remembered[:300]}, outside the project, and {where}: parse it again "
                      "with --file naming it (the CLI reads it), or pass its text as source",
                      code="prd_source_outside", details={"source_file": remembered[:1000]})
    if not candidate.is_file():
        return SourceChoice(), (f"{remembered}, the file this PRD was parsed from, is not readable in the project: "
                                "parsed the managed copy (pass --file to use another file)"), None
    prd = get_prd(conn, prd_id)
    recorded = prd["source_digest"] if prd else None
    refresh_managed_copy(conn, location, prd_id)
    in_file, in_copy = _digest_of(candidate), _digest_of(source_path(location, prd_id))
    file_changed = in_file != recorded
    copy_changed = in_copy is not None and in_copy != recorded
    if file_changed and copy_changed and in_file != in_copy:
        raise Refused(f"both {remembered} (the file this PRD was parsed from) and the managed copy changed since "
                      "the last recorded revision: pass --file with the one to parse", code="prd_sources_diverged")
    if copy_changed and not file_changed:
        return SourceChoice(), (f"parsed the managed copy, edited since the last recorded revision; {remembered}, "
                                "the file this PRD was parsed from, is unchanged"), remembered
    # A file outside the project is read here, by the local call (read_source keeps servers inside it).
    chosen = SourceChoice(text=_read_outside(candidate), origin=remembered) if outside else \
        SourceChoice(file=str(candidate))
    if file_changed:
        return chosen, (f"re-read {remembered}, the file this PRD was parsed from: it differs from the managed copy "
                        "(the last recorded revision)"), remembered
    return chosen, f"re-read {remembered}, the file this PRD was parsed from (unchanged)", remembered


def _read_outside(path: Path) -> str:
    """The text of a remembered PRD file outside the project (bounded and UTF-8 checked like any source).

    Raises:
        UsageError: over the size ceiling or not UTF-8 (as :func:`anvil.engine.prd.source.decode_source`).
        NotFound: ``prd_source_missing`` when it cannot be read.
    """
    from anvil.engine.localread import read_named_file
    from anvil.engine.prd.source import DEFAULT_MAX_BYTES, decode_source

    return decode_source(read_named_file(path, DEFAULT_MAX_BYTES, "the PRD source", "prd"))


def _project_relative(path: Path | None, location: StateLocation) -> str | None:
    """``path`` relative to the project root (None: no path, the managed copy, or outside the project)."""
    if path is None:
        return None
    resolved = path.resolve()
    if resolved.is_relative_to(location.state_dir.resolve()):
        return None
    try:
        return resolved.relative_to(location.root.resolve()).as_posix()
    except ValueError:
        return None


def remembered_file(conn: Connection, prd_id: str) -> str | None:
    """The file the PRD's newest revision was parsed from (``source_path`` of its last event), if known."""
    for (payload,) in conn.execute("SELECT payload FROM events WHERE type IN ('prd.parsed', 'prd.revised') "
                                   "ORDER BY seq DESC"):
        data = json.loads(payload)
        if data.get("prd_id") == prd_id:
            found = data.get("source_path")
            return found if isinstance(found, str) and found else None
    return None


def record_source(tx: Transaction, location: StateLocation, prd_id: str, data: bytes, *, copy: bool,
                  origin: str | None = None) -> dict[str, Any]:
    """Parse ``data`` and record it as the PRD's new revision when it is clean and changed.

    With ``copy`` the bytes become the managed source once the transaction commits (never on a
    dry run or a refusal, so the file always matches the recorded revision).

    Raises:
        UsageError: the source is too large or not UTF-8.
    """
    _, result = parse_source(data)
    doc: PrdDocument | None = result.document
    previous = get_prd(tx.conn, prd_id)
    out: dict[str, Any] = {
        "prd_id": prd_id, "prd_status": previous["status"] if previous else None,
        "revision": previous["revision"] if previous else 0, "recorded": False, "demoted": False,
        **parse_report(result), "project_renamed": None, "source_file": origin, "source_notice": None,
    }
    if result.errors or doc is None:
        return out
    source_digest = sha256_hex(data.decode("utf-8"))
    material = material_digest(doc)
    if previous and previous["source_digest"] == source_digest:
        return out  # unchanged source: nothing new to record
    payload: dict[str, Any] = {"prd_id": prd_id, "source_digest": source_digest, "material_digest": material,
                               "document": doc.stored_dict(), "source": data.decode("utf-8")}
    if origin:
        payload["source_path"] = origin[:4096]
    if previous is None:
        tx.append("prd.parsed", {**payload, "revision": 1, "status": "draft"})
        out.update(prd_status="draft", revision=1, recorded=True)
    else:
        material_change = previous["material_digest"] != material
        status = "draft" if material_change else previous["status"]
        tx.append("prd.revised", {**payload, "revision": previous["revision"] + 1, "status": status,
                                  "approval_carried": previous["status"] == "approved" and not material_change})
        out.update(prd_status=status, revision=previous["revision"] + 1, recorded=True,
                   demoted=material_change and previous["status"] != "draft")
    if copy:
        managed = source_path(location, prd_id)
        tx.after_commit.append(lambda: write_source(managed, data))
    from anvil.engine.project import adopt_prd_name

    out["project_renamed"] = adopt_prd_name(tx, doc.project_name)
    return out


def write_source(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (a temporary file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def recorded_source(conn: Connection, prd_id: str) -> str | None:
    """The source text of the PRD's current revision as the log holds it (None: recorded before
    sources were kept, or never parsed)."""
    row = conn.execute("SELECT r.source FROM prds p JOIN prd_revisions r ON r.prd_id = p.prd_id AND "
                       "r.revision = p.revision WHERE p.prd_id = ?", (prd_id,)).fetchone()
    return row[0] if row else None


def refresh_managed_copy(conn: Connection, location: StateLocation, prd_id: str) -> bool:
    """Rewrite the managed source from the log when it is missing or holds an older recorded
    revision; returns whether it was rewritten. A file with text the log does not know is left alone."""
    row = conn.execute("SELECT r.source, r.source_digest FROM prds p JOIN prd_revisions r ON r.prd_id = p.prd_id "
                       "AND r.revision = p.revision WHERE p.prd_id = ?", (prd_id,)).fetchone()
    if row is None or row[0] is None:
        return False
    source, digest = row
    from anvil.engine.localread import FileTooLarge, NotRegularFile, read_regular_file
    from anvil.engine.prd.source import DEFAULT_MAX_BYTES

    path = source_path(location, prd_id)
    try:
        current: bytes | None = read_regular_file(path, DEFAULT_MAX_BYTES)
    except FileNotFoundError:
        current = None
    except (OSError, NotRegularFile, FileTooLarge):
        return False
    if current is not None:
        held = sha256_hex(current.decode("utf-8", errors="replace"))
        if held == digest:
            return False
        known = conn.execute("SELECT 1 FROM prd_revisions WHERE prd_id = ? AND source_digest = ? LIMIT 1",
                             (prd_id, held)).fetchone()
        if known is None:
            return False  # someone's own edits: the next `anvil prd parse` records them
    try:
        write_source(path, source.encode("utf-8"))
    except OSError:
        return False
    return True


def review(tx: Transaction, prd_id: str, *, approve: bool, reviewer: str, notes: str | None,
           expected_revision: int | None) -> dict[str, Any]:
    """Move the PRD draft -> reviewed, or reviewed -> approved (binding the current revision).

    Raises:
        NotFound: no such PRD.
        Refused: wrong starting status, or the revision moved on since the caller looked.
    """
    prd = require_prd(tx.conn, prd_id)
    if expected_revision is not None and expected_revision != prd["revision"]:
        raise Refused(f"PRD {prd_id!r} is at revision {prd['revision']}, not {expected_revision}: re-read it",
                      code="stale_revision")
    wanted_from, to = ("reviewed", "approved") if approve else ("draft", "reviewed")
    if prd["status"] != wanted_from:
        hint = "review it first (anvil prd review)" if approve else "it is already past draft"
        raise Refused(f"PRD {prd_id!r} is {prd['status']}, not {wanted_from}: {hint}", code="wrong_status")
    payload = {"prd_id": prd_id, "revision": prd["revision"], "reviewer": reviewer, "notes": notes}
    if approve:
        tx.append("prd.approved", {**payload, "source_digest": prd["source_digest"],
                                   "material_digest": prd["material_digest"]})
    else:
        tx.append("prd.reviewed", payload)
    left = open_decisions(prd["document"])
    warnings = [f"PRD {prd_id!r} was approved with {left} open decision(s) (NEEDS DECISION markers, open questions): "
                "`anvil prd find-decisions` lists them; work claimed now builds on whatever they turn out to be"
                ] if approve and left else []
    return {"prd_id": prd_id, "from_status": wanted_from, "to_status": to, "reviewer": reviewer,
            "revision": prd["revision"], "open_decisions": left, "warnings": warnings}


def open_decisions(document: dict[str, Any]) -> int:
    """NEEDS DECISION markers plus open questions still in the PRD (placeholders like "None" aside)."""
    from anvil.engine.prd.lexer import is_placeholder

    return len(document["decisions"]) + sum(1 for q in document["open_questions"] if not is_placeholder(q["text"]))


@applies("prd.parsed", "prd.revised")
def _apply_parsed(conn: Connection, event: Event) -> None:
    p = event.payload
    carried = p.get("approval_carried", False)
    conn.execute(
        """INSERT INTO prds (prd_id, status, revision, source_digest, material_digest, document, updated_at,
               updated_seq) VALUES (?,?,?,?,?,?,?,?)
           ON CONFLICT(prd_id) DO UPDATE SET status=excluded.status, revision=excluded.revision,
               source_digest=excluded.source_digest, material_digest=excluded.material_digest,
               document=excluded.document, updated_at=excluded.updated_at, updated_seq=excluded.updated_seq""",
        (p["prd_id"], p["status"], p["revision"], p["source_digest"], p["material_digest"],
         canonical_json(p["document"]), event.ts, event.seq))
    conn.execute("INSERT INTO prd_revisions (prd_id, revision, source_digest, source, seq) VALUES (?,?,?,?,?)",
                 (p["prd_id"], p["revision"], p["source_digest"], p.get("source"), event.seq))
    if carried:
        conn.execute("UPDATE prds SET approved_revision = ?, approved_source_digest = ?, "
                     "approved_material_digest = ? WHERE prd_id = ?",
                     (p["revision"], p["source_digest"], p["material_digest"], p["prd_id"]))
    elif p["status"] == "draft":
        conn.execute("UPDATE prds SET approved_revision = NULL, approved_source_digest = NULL, "
                     "approved_material_digest = NULL WHERE prd_id = ?", (p["prd_id"],))


@applies("prd.reviewed")
def _apply_reviewed(conn: Connection, event: Event) -> None:
    p = event.payload
    conn.execute("UPDATE prds SET status = 'reviewed', reviewer = ?, notes = ?, updated_at = ?, updated_seq = ? "
                 "WHERE prd_id = ?", (p["reviewer"], p["notes"], event.ts, event.seq, p["prd_id"]))


@applies("prd.approved")
def _apply_approved(conn: Connection, event: Event) -> None:
    p = event.payload
    conn.execute("UPDATE prds SET status = 'approved', reviewer = ?, notes = ?, approved_revision = ?, "
                 "approved_source_digest = ?, approved_material_digest = ?, updated_at = ?, updated_seq = ? "
                 "WHERE prd_id = ?", (p["reviewer"], p["notes"], p["revision"], p["source_digest"],
                                      p["material_digest"], event.ts, event.seq, p["prd_id"]))
