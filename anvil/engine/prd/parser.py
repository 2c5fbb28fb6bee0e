"""Turn PRD markdown into a :class:`PrdDocument` plus located diagnostics.

``lexer.SourceLines`` first reads the CommonMark block structure (``blocks.scan``) and classifies
every line, and finds the ``[NEEDS DECISION]`` markers; this module then walks the lines once,
section by section, building requirements, features and tasks, and finally checks
cross-references and looks for dependency cycles (``checks`` adds what the block structure
itself says: unclosed fences and comments, commented-out tasks, setext headings, foreign
formats). Everything is linear in the input size. The format is documented in
``docs/prd-format.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from anvil.engine import progress
from anvil.engine.errors import bound_text
from anvil.engine.prd.checks import FORMAT_HELP, LOOKS_LIKE_FEATURE, LOOKS_LIKE_TASK, block_diagnostics, foreign_format
from anvil.engine.prd.commands import command_problem, split_verification
from anvil.engine.prd.lexer import (
    FEATURE_FIELDS,
    HEADING,
    LIST_FIELDS,
    MARKER,
    NONE_VALUES,
    SECTION_TITLES,
    SECTIONS,
    TASK_FIELDS,
    SourceLines,
    cap,
    clip,
    heading_text,
    is_placeholder,
    item_text,
    norm_name,
    prose,
    unwrap,
)
from anvil.engine.prd.model import (
    CommandNote,
    DecisionMarker,
    Diagnostic,
    Feature,
    NamedClaim,
    OpenQuestion,
    ParseResult,
    PrdDocument,
    Requirement,
    TaskSpec,
)
from anvil.engine.vocab import PRIORITIES, Severity

_PROJECT = re.compile(r"project[ \t]*(?:[:\-\u2013\u2014][ \t]*(.*))?$", re.IGNORECASE)
_SEP = r"(?![0-9A-Za-z_])[ \t]*[:.)\-\u2013\u2014]?[ \t]*(.*)$"
_TASK_HEAD = re.compile(r"([Tt][0-9]{1,9})" + _SEP)
_FEATURE_HEAD = re.compile(r"([Ff][0-9]{1,9})" + _SEP)
_REQ_ITEM = re.compile(r"\*{0,2}([Rr][0-9]{1,9})(?![0-9A-Za-z_])\*{0,2}[ \t]*[:.)\-\u2013\u2014]?\*{0,2}[ \t]*(.*)$")
_ID = {k: re.compile(f"[{k}{k.lower()}][0-9]{{1,9}}$") for k in "RFT"}
_TOKEN_SPLIT = re.compile(r"[,;\s]+")
_NOTE = re.compile(r"\([^()]*\)")  # a note in parentheses beside ids
_PLAIN_FIELD = re.compile(r"[ \t]*([A-Za-z][A-Za-z _/-]{0,40}):[ \t]*(.*)$")  # a field line without the bold

_LIST_SECTIONS = ("goals", "non_goals", "requirements", "open_questions", "acceptance_criteria", "assumptions",
                  "risks")
_PLAIN_LISTS = ("goals", "non_goals", "acceptance_criteria", "assumptions", "risks")


def parse_prd(text: str) -> ParseResult:
    """Parse PRD markdown into a document and diagnostics; never raises.

    Args:
        text: The PRD source. Any string is accepted; a leading BOM and CRLF line ends are tolerated.

    Returns:
        A :class:`ParseResult` whose document is always present (``project_name`` is ``""`` when the
        heading is missing) unless an unexpected internal failure occurred, in which case the document
        is ``None`` and the only diagnostic has code ``internal_parser_error``.

    Raises:
        Nothing: every failure is reported as a diagnostic.
    """
    try:
        return _Parser(text).run()
    except Exception as exc:  # the safety net the contract promises; a bug, reported not raised
        message = f"the parser failed unexpectedly ({type(exc).__name__}); please report this PRD"
        return ParseResult(document=None, diagnostics=[Diagnostic("error", 0, "internal_parser_error", message)])


@dataclass
class _Item:
    """A task or feature under construction."""

    kind: str  # "T" or "F"
    id: str
    title: str
    line: int
    desc: list[str] = field(default_factory=list)
    scalars: dict[str, tuple[str, int]] = field(default_factory=dict)
    raw: dict[str, list[tuple[int, list[str]]]] = field(default_factory=dict)
    list_field: str | None = None
    item_open: bool = False
    cmd_fence: bool = False


class _Parser:
    def __init__(self, text: str) -> None:
        self.src = SourceLines(text)
        self.diags: list[Diagnostic] = []
        self.section = "preamble"
        self.section_title = ""
        self.seen_sections: set[str] = set()
        self.project: tuple[str, int] | None = None
        self.stray_h1: list[int] = []
        self.summary: list[str] = []
        self.items: dict[str, list[tuple[int, list[str]]]] = {k: [] for k in _LIST_SECTIONS}
        self.item_open = False
        self.cur: _Item | None = None
        self.skipping = False
        self.warned_ignored = False
        self.features: list[Feature] = []
        self.tasks: list[TaskSpec] = []
        self.ids: dict[str, set[str]] = {"F": set(), "T": set()}
        self.refs: dict[str, list[tuple[str, int]]] = {}  # item id -> referenced ids with their lines
        self.conflict_refs: dict[str, list[tuple[str, int]]] = {}
        self.feature_ref: dict[str, tuple[str, int]] = {}
        self.commented: dict[str, int] = {}  # task id -> line of its heading inside an HTML block
        self.i = 0  # index of the line being read

    def add(self, severity: Severity, line: int, code: str, message: str) -> None:
        self.diags.append(Diagnostic(severity, line, code, bound_text(message)))

    def run(self) -> ParseResult:
        lines, kinds = self.src.lines, self.src.kinds
        total = len(lines)
        for i, line in enumerate(lines):
            if not i & 4095:
                progress.report("parsing the PRD", i, total)
            self.i = i
            self._line(i + 1, line, kinds[i])
        progress.report("parsing the PRD", total, total)
        self._close_item()
        self.commented = block_diagnostics(self.src, self.add)
        doc = self._finish()
        # Another tool's format has no '# Project:' heading and gives no task; an anvil PRD never is one.
        foreign = foreign_format(lines) if not doc.tasks and self.project is None else None
        if foreign is not None:
            what, at = foreign
            self.diags = [Diagnostic("error", at, "foreign_format", bound_text(
                f"this reads as {what} (line {at}), not an anvil PRD, so no task can be read from it: {FORMAT_HELP}"))]
        self.diags.sort(key=lambda d: d.line)
        return ParseResult(document=doc, diagnostics=self.diags)

    def _keep(self, out: list[str], line: str) -> None:
        """Keep a raw line of prose; a fence or HTML block ending on it without its closing line gets one."""
        out.append(line)
        closer = self.src.closers.get(self.i)
        if closer is not None:
            out.append(closer)

    # -- pass 2: sections --------------------------------------------------------------------------
    def _line(self, n: int, line: str, k: str) -> None:
        if k == "H":
            self._heading(n, line)
        elif self.section == "summary":
            self._keep(self.summary, line)
        elif self.section in _LIST_SECTIONS:
            self._list_line(n, line, k)
        elif self.section in ("features", "tasks"):
            self._body(n, line, k, None)
        elif self.section == "preamble" and k not in "BM" and not self.warned_ignored:  # comments are not text
            self.warned_ignored = True
            self.add("warning", n, "ignored_content", "text outside any known section is ignored")

    def _heading(self, n: int, line: str) -> None:
        hm = HEADING.match(line)
        level, text = len(hm.group(1)), heading_text(hm.group(2))  # type: ignore[union-attr]
        looks = LOOKS_LIKE_TASK.match(text) is not None
        if self.section in ("features", "tasks") and level != 3 and not (level == 1 and _PROJECT.match(text)):
            if (LOOKS_LIKE_TASK if self.section == "tasks" else LOOKS_LIKE_FEATURE).match(text):
                noun = "task" if self.section == "tasks" else "feature"
                self.add("warning", n, "wrong_heading_level", f"{noun} heading {clip(text, 60)} is a level-{level} "
                         f"heading; it is read as a {noun}, but write it as '### {clip(text, 40)[1:-1]}'")
                self._close_item()
                self._start_item(n, text)
                return
        if looks and self.section != "tasks" and not (level == 3 and self.section == "features"):
            where = f"under '{self.section_title}'" if self.section_title else "outside any section"
            self.add("error", n, "misplaced_task", f"heading {clip(text, 60)} looks like a task, but it is {where}, "
                     "not under '## Tasks', so it is not read: move it into the Tasks section")
        if level <= 2:
            self._close_item()
            self.item_open = self.warned_ignored = False
        if level == 1:
            m = _PROJECT.match(text)
            if m and self.project is None:
                self.project = ((m.group(1) or "").strip(), n)
            elif m:
                self.add("warning", n, "unexpected_heading", "a second '# Project:' heading is ignored")
            else:
                self.stray_h1.append(n)
            self.section, self.section_title = "preamble", ""
        elif level == 2:
            key = SECTIONS.get(norm_name(text))
            if key is None:
                self.add("warning", n, "unknown_section", f"unknown section {clip(text)}; its content is ignored")
                self.section, self.section_title = "unknown", f"## {clip(text, 40)[1:-1]}"
            else:
                if key in self.seen_sections:
                    self.add("warning", n, "duplicate_section", f"section '{SECTION_TITLES[key]}' appears again; "
                             "its content is merged")
                self.seen_sections.add(key)
                self.section, self.section_title = key, f"## {SECTION_TITLES[key]}"
        elif self.section == "summary":
            self._keep(self.summary, line)
        elif self.section in ("features", "tasks"):
            if level == 3:
                self._close_item()
                self._start_item(n, text)
            else:
                self._body(n, line, "H", text)
        elif self.section in _LIST_SECTIONS:
            self.item_open = False
            self.add("warning", n, "unexpected_heading", f"heading {clip(text)} is not expected here; ignored")

    def _list_line(self, n: int, line: str, k: str) -> None:
        items = self.items[self.section]
        if k == "L":
            items.append((n, [item_text(line)]))
            self.item_open = True
        elif k == "P" and items:
            items[-1][1].append(line.strip())  # a later paragraph of the same list item
            self.item_open = True
        elif k in "TFP":
            if self.item_open:
                items[-1][1].append(line.strip())
            else:
                items.append((n, [line.strip()]))
                self.item_open = True
        else:
            self.item_open = False

    def _start_item(self, n: int, text: str) -> None:
        kind = "F" if self.section == "features" else "T"
        noun = "feature" if kind == "F" else "task"
        m = (_FEATURE_HEAD if kind == "F" else _TASK_HEAD).match(text)
        if not m:
            self.add("error", n, f"malformed_{noun}_id", f"{noun} heading {clip(text)} does not start with an id "
                     f"like '{kind}001'")
            self.skipping = True
            return
        self.skipping = False
        self.cur = _Item(kind, m.group(1).upper(), m.group(2).strip(), n)
        if not self.cur.title:
            self.add("error", n, f"missing_{noun}_title", f"{noun} {self.cur.id} has no title")

    def _body(self, n: int, line: str, k: str, heading: str | None) -> None:
        b = self.cur
        if b is None:
            if not self.skipping and k not in "BM" and not self.warned_ignored:
                self.warned_ignored = True
                self.add("warning", n, "ignored_content", f"text before the first {self.section[:-1]} is ignored")
            return
        if k in "OCXK":
            if b.list_field == "verify" and (k in "OK" or b.cmd_fence):
                b.cmd_fence = k not in "CK"  # an indented block is its own lines; a fence runs to its close
                cmd = line.strip()
                cmd = cmd[2:] if cmd.startswith("$ ") else cmd
                if k in "XK" and cmd and not cmd.startswith("#"):
                    b.raw.setdefault("verify", []).append((n, [cmd]))
                return
            b.list_field, b.item_open = None, False
            self._keep(b.desc, line)
            return
        if k == "M":  # an HTML block (a comment): kept in the description, invisible to the fields
            b.item_open = False
            self._keep(b.desc, line)
            return
        if k == "B":
            b.item_open = False
            b.desc.append("")
            return
        fields = TASK_FIELDS if b.kind == "T" else FEATURE_FIELDS
        fld = (heading, "") if k == "H" and heading is not None else self.src.fields.get(self.i) if k in "FL" else None
        key = fields.get(_name_key(fld[0])) if fld else None
        if fld and key:
            self._set_field(b, key, fld[1], n)
            b.desc.append("")  # fields split the prose around them into separate paragraphs
        elif b.list_field and k == "L":
            b.raw.setdefault(b.list_field, []).append((n, [item_text(line)]))
            b.item_open = True
        elif b.list_field and k == "P" and b.raw.get(b.list_field):
            b.raw[b.list_field][-1][1].append(line.strip())  # a later paragraph of the same bullet
            b.item_open = True
        elif b.list_field and b.item_open and k in "TP":
            b.raw[b.list_field][-1][1].append(line.strip())
        elif k in "TP" and (plain := self._plain_field(b, line, n)) is not None:
            self._set_field(b, plain[0], plain[1], n)
            b.desc.append("")
        else:
            if fld and b.kind == "T" and k != "H":
                self.add("warning", n, "unknown_task_field", f"unknown task field {clip(fld[0])}; kept as prose")
            b.list_field, b.item_open = None, False
            b.desc.append(line)

    def _plain_field(self, b: _Item, line: str, n: int) -> tuple[str, str] | None:
        """A field line written without bold (``Priority: high``): read as the field, with a warning
        saying how to write it, when its value has the field's shape (ids for a reference field, one
        word for a priority, a command in backticks for a verification); otherwise it stays prose,
        with a warning saying why, so a sentence like ``Dependencies: this needs the store`` never
        blocks the PRD."""
        m = _PLAIN_FIELD.match(line)
        if not m:
            return None
        key = (TASK_FIELDS if b.kind == "T" else FEATURE_FIELDS).get(norm_name(m.group(1)))
        if key is None:
            return None
        name, value = clip(m.group(1).strip(), 40)[1:-1], m.group(2).strip()
        if not _fits(key, value):
            self.add("warning", n, "field_like_prose", f"{b.id}: {clip(line.strip(), 60)} starts like the {name} field "
                     f"but its value is not one, so it is kept as prose: write **{name}:** with the value to set the "
                     "field, or reword the line")
            return None
        self.add("warning", n, "unbolded_field", f"{b.id}: '{name}:' is not in bold; it is read as the field: "
                 f"write **{name}:** to make that explicit")
        return key, value

    def _set_field(self, b: _Item, key: str, value: str, n: int) -> None:
        b.item_open = False
        if key in LIST_FIELDS:
            b.list_field = key
            if value:
                b.raw.setdefault(key, []).append((n, [value]))
            return
        b.list_field = None
        if key in b.scalars:
            self.add("warning", n, "duplicate_field", f"field '{key}' of {b.id} is given twice; the first wins")
        else:
            b.scalars[key] = (value, n)

    # -- building items ----------------------------------------------------------------------------
    def _tokens(self, b: _Item, key: str, kind: str) -> list[tuple[str, int]]:
        """The ids of a reference field; one diagnostic per line for what is not an id (a note in
        parentheses is a warning: the ids beside it are read)."""
        out: list[tuple[str, int]] = []
        for n, parts in b.raw.get(key, []):
            value = _unmark(" ".join(parts))
            if value.strip().lower() in NONE_VALUES:
                continue
            notes = _NOTE.findall(value)
            if notes:
                value = _NOTE.sub(" ", value)
                self.add("warning", n, "note_in_reference", f"{b.id}: {clip(notes[0], 60)} is a note, not an id: only "
                         "the ids on this line are read; put notes in the description")
            bad: list[str] = []
            for tok in _TOKEN_SPLIT.split(value):
                tok = tok.strip("`*")
                if not tok or tok.lower() in NONE_VALUES:
                    continue
                if _ID[kind].match(tok):
                    out.append((tok.upper(), n))
                else:
                    bad.append(tok)
            if bad:
                shown = ", ".join(clip(t, 24) for t in bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
                what = "is not an id" if len(bad) == 1 else "are not ids"
                self.add("error", n, "malformed_reference", f"{b.id}: {shown} {what} like '{kind}001'")
        return out

    def _texts(self, b: _Item, key: str) -> list[str]:
        return [t for t in (" ".join(p for p in parts if p).strip() for _, parts in b.raw.get(key, [])) if t]

    def _close_item(self) -> None:
        b, self.cur = self.cur, None
        self.skipping = False
        if b is None:
            return
        desc = prose(b.desc)
        if b.id in self.ids[b.kind]:
            noun = "feature" if b.kind == "F" else "task"
            self.add("error", b.line, f"duplicate_{noun}_id", f"{noun} id {b.id} is used more than once")
            return
        self.ids[b.kind].add(b.id)
        if b.kind == "F":
            reqs = self._tokens(b, "reqs", "R")
            self.refs[b.id] = reqs
            ids = tuple(dict.fromkeys(r for r, _ in reqs))
            self.features.append(Feature(b.id, b.title, desc, ids, b.line))
            return
        deps = self._tokens(b, "deps", "T")
        self.refs[b.id] = deps
        feature: str | None = None
        if "feature" in b.scalars:
            value, n = b.scalars["feature"]
            toks = [t.strip("`*") for t in _TOKEN_SPLIT.split(_unmark(value)) if t.strip("`*")]
            if len(toks) == 1 and _ID["F"].match(toks[0]):
                feature = toks[0].upper()
                self.feature_ref[b.id] = (feature, n)
            elif value.strip().lower() not in NONE_VALUES:
                self.add("error", n, "malformed_reference", f"{b.id}: feature {clip(value)} is not one id like 'F001'")
        priority = "medium"
        if "priority" in b.scalars:
            value, n = b.scalars["priority"]
            priority = _unmark(value).strip().strip("`*").strip().lower()
            if priority not in PRIORITIES:
                self.add("error", n, "invalid_priority", f"{b.id}: priority {clip(value)} is not one of "
                         f"{', '.join(PRIORITIES)}")
                priority = "medium"
        ttype = _unmark(b.scalars.get("type", ("", 0))[0]).strip().strip("`*").strip().lower()
        files: list[str] = []
        for text in self._texts(b, "files"):
            files.extend(unwrap(p) for p in _unmark(text).split(","))
        files = [f for f in dict.fromkeys(files) if f and f.lower() not in NONE_VALUES]
        verify, notes = self._verification(b)
        claims = self._claims(b)
        artifacts = [a for a in dict.fromkeys(unwrap(t) for t in self._texts(b, "artifacts")) if a]
        conflicts = self._tokens(b, "conflicts", "T")
        for other, n in conflicts:
            if other == b.id:
                self.add("warning", n, "self_conflict", f"task {b.id} names itself under Conflicts (ignored)")
        self.conflict_refs[b.id] = [(c, n) for c, n in conflicts if c != b.id]
        self.tasks.append(TaskSpec(
            id=b.id, title=b.title, feature_id=feature, priority=priority,
            type=ttype if ttype not in NONE_VALUES else None, likely_files=tuple(files),
            dependencies=tuple(dict.fromkeys(d for d, _ in deps)),
            acceptance_criteria=tuple(self._texts(b, "criteria")), verification=tuple(verify),
            description=desc, line=b.line, claims=tuple(claims), artifacts=tuple(artifacts),
            verification_notes=tuple(notes),
            conflicts=tuple(dict.fromkeys(c for c, _ in self.conflict_refs[b.id]))))

    def _verification(self, b: _Item) -> tuple[list[str], list[CommandNote]]:
        """The task's verification commands and the notes written beside them. A bullet that holds no
        runnable command is kept as written, with a warning at its line, and the readiness gate keeps
        the task from being ready until it is fixed."""
        commands: list[str] = []
        notes: list[CommandNote] = []
        for n, parts in b.raw.get("verify", []):
            text = " ".join(p for p in parts if p).strip()
            if not text:
                continue
            command, note = split_verification(text)
            problem = command_problem(command)
            if problem is not None:
                self.add("warning", n, "unprovable_verification", f"{b.id}: verification {clip(text, 60)} {problem}: "
                         "write the command as the bullet's one code span, with anything else after it as a note "
                         "(- `pytest -q tests/x` (why)); until then the task cannot be made ready")
                command, note = (command, note) if command.strip("` \t") else (text, "")
            commands.append(command)
            if note:
                notes.append(CommandNote(command, note))
        return commands, notes

    def _claims(self, b: _Item) -> list[NamedClaim]:
        """``- NAME: `command`[, `command`...]`` items of a task's **Claims:** field."""
        out: list[NamedClaim] = []
        for n, parts in b.raw.get("claims", []):
            text = " ".join(p for p in parts if p).strip()
            name, sep, rest = text.partition(":")
            commands = tuple(c for c in re.findall(r"`([^`]+)`", rest) if c.strip())
            if not sep or not name.strip() or not commands:
                self.add("error", n, "malformed_claim", f"{b.id}: claim {clip(text)} is not 'NAME: `command`'")
                continue
            out.append(NamedClaim(name.strip().strip("*`"), commands))
        return out

    # -- the document and its cross-checks ---------------------------------------------------------
    def _finish(self) -> PrdDocument:
        name = ""
        if self.project is None:
            line = self.stray_h1.pop(0) if self.stray_h1 else 0
            self.add("error", line, "missing_project_heading", "the PRD has no '# Project: NAME' heading")
        else:
            name, line = self.project
            if not name:
                self.add("error", line, "empty_project_name", "the '# Project:' heading has no name")
        for n in self.stray_h1:
            self.add("warning", n, "unexpected_heading", "only one level-1 heading ('# Project: NAME') is expected")
        requirements = self._requirements()
        texts = {k: [" ".join(p for p in parts if p).strip() for _, parts in self.items[k]] for k in _LIST_SECTIONS}
        questions = [OpenQuestion(t, n) for (n, _), t in zip(self.items["open_questions"], texts["open_questions"],
                                                               strict=True)
                     if t and not is_placeholder(t)]
        decisions = [DecisionMarker(cap(q), i + 1, s, self.src.context(i)) for i, q, s in self.src.markers]
        summary = prose(self.summary)
        self._check(requirements, decisions, summary)
        lists = {k: tuple(t for t in texts[k] if t) for k in _PLAIN_LISTS}
        return PrdDocument(
            project_name=name, summary=summary, requirements=tuple(requirements), open_questions=tuple(questions),
            features=tuple(self.features), tasks=tuple(self.tasks), decisions=tuple(decisions), **lists)

    def _requirements(self) -> list[Requirement]:
        out: list[Requirement] = []
        seen: set[str] = set()
        for n, parts in self.items["requirements"]:
            text = " ".join(p for p in parts if p).strip()
            m = _REQ_ITEM.match(text)
            if not m:
                self.add("error", n, "malformed_requirement_id", f"requirement {clip(text)} does not start with an "
                         "id like 'R001'")
                continue
            rid, body = m.group(1).upper(), m.group(2).strip()
            if rid in seen:
                self.add("error", n, "duplicate_requirement_id", f"requirement id {rid} is used more than once")
                continue
            seen.add(rid)
            if not body:
                self.add("error", n, "empty_requirement", f"requirement {rid} has no text")
            out.append(Requirement(rid, body, n))
        return out

    def _where_hidden(self, task_id: str) -> str:
        line = self.commented.get(task_id)
        return f" (its heading, line {line}, is inside an HTML comment)" if line else ""

    def _check(self, requirements: list[Requirement], decisions: list[DecisionMarker], summary: str) -> None:
        req_ids = {r.id for r in requirements}
        feature_ids = {f.id for f in self.features}
        task_ids = {t.id for t in self.tasks}
        for f in self.features:
            for rid, n in self.refs[f.id]:
                if rid not in req_ids:
                    self.add("error", n, "unknown_requirement", f"feature {f.id} references unknown requirement {rid}")
        edges: dict[str, list[str]] = {}
        for t in self.tasks:
            ref = self.feature_ref.get(t.id)
            if ref and ref[0] not in feature_ids:
                self.add("error", ref[1], "unknown_feature", f"task {t.id} references unknown feature {ref[0]}")
            if t.feature_id is None and feature_ids:
                self.add("warning", t.line, "task_without_feature", f"task {t.id} names no feature")
            if not t.acceptance_criteria:
                self.add("warning", t.line, "missing_acceptance_criteria", f"task {t.id} has no acceptance criteria")
            if not t.verification:
                self.add("warning", t.line, "missing_verification", f"task {t.id} has no verification command")
            reported: set[str] = set()
            for dep, n in self.refs[t.id]:
                if dep in reported:
                    continue
                reported.add(dep)
                if dep == t.id:
                    self.add("error", n, "self_dependency", f"task {t.id} depends on itself")
                elif dep not in task_ids:
                    self.add("error", n, "unknown_dependency", f"task {t.id} depends on unknown task {dep}"
                             + self._where_hidden(dep))
            for other, n in self.conflict_refs.get(t.id, ()):
                if other not in task_ids:
                    self.add("error", n, "unknown_conflict", f"task {t.id} names unknown task {other} under Conflicts"
                             + self._where_hidden(other))
            edges[t.id] = [d for d in t.dependencies if d in task_ids and d != t.id]
        lines = {t.id: t.line for t in self.tasks}
        for cycle in find_cycles([t.id for t in self.tasks], edges):
            shown = " -> ".join(cycle[:10] + [cycle[0]]) if len(cycle) <= 10 else " -> ".join(cycle[:10]) + " -> ..."
            self.add("error", lines[cycle[0]], "dependency_cycle", f"dependency cycle of {len(cycle)} tasks: {shown}")
        for d in decisions:
            self.add("warning", d.line, "unresolved_decision", "unresolved [NEEDS DECISION] marker"
                     + (f": {clip(d.question)}" if d.question else ""))
        for missing, code, what in ((not summary, "missing_summary", "no summary"),
                                    (not requirements, "missing_requirements", "no requirements"),
                                    (not self.features, "missing_features", "no features"),
                                    (not self.tasks, "missing_tasks", "no tasks")):
            if missing:
                self.add("warning", 0, code, f"the PRD has {what}")


def _unmark(text: str) -> str:
    """``text`` without its ``[NEEDS DECISION]`` markers (a structured value is read without them)."""
    return MARKER.sub(" ", text) if "[" in text else text


@lru_cache(maxsize=512)
def _name_key(name: str) -> str:
    """:func:`norm_name`, remembered: the same few field names come back on every task."""
    return norm_name(name)


def _fits(key: str, value: str) -> bool:
    """Whether ``value`` has the shape of field ``key``'s value (for a field written without bold)."""
    v = _unmark(value).strip()
    if v.lower() in NONE_VALUES:
        return True
    words = [t.strip("`*") for t in _TOKEN_SPLIT.split(_NOTE.sub(" ", v)) if t.strip("`*")]
    if key in ("deps", "conflicts", "reqs", "feature"):
        kind = {"deps": "T", "conflicts": "T", "reqs": "R", "feature": "F"}[key]
        return any(_ID[kind].match(w) for w in words)
    if key in ("priority", "type"):
        return len(words) == 1
    if key == "files":
        return all(part.strip() and " " not in part.strip() for part in v.split(","))
    if key in ("verify", "claims", "artifacts"):
        return "`" in v
    return True


def find_cycles(order: list[str], edges: dict[str, list[str]]) -> list[list[str]]:
    """Find one concrete dependency cycle per group of tasks that depend on each other in a circle.

    Iterative Tarjan (O(V+E), no recursion) finds the strongly connected components; inside each
    one of size > 1 a breadth-first search finds the shortest path from its earliest node back to
    itself. Self-loops are not reported (the parser reports them as ``self_dependency``).

    Args:
        order: Every node, in source order.
        edges: Each node's successors (its dependencies); unknown nodes must already be removed.

    Returns:
        The cycles, ordered by their earliest node; each lists its nodes once, starting at that node.

    Raises:
        KeyError: when an edge points at a node missing from ``order``.
    """
    pos = {v: i for i, v in enumerate(order)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    comps: list[list[str]] = []
    for root in order:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, 0)]
        while work:
            v, i = work[-1]
            succ = edges.get(v, [])
            if i < len(succ):
                work[-1] = (v, i + 1)
                w = succ[i]
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp: list[str] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(comp)
    cycles = []
    for comp in sorted(comps, key=lambda c: min(pos[v] for v in c)):
        members = set(comp)
        start = min(comp, key=pos.__getitem__)
        parent: dict[str, str] = {}
        queue, head, last = [start], 0, start
        while head < len(queue):
            v = queue[head]
            head += 1
            nxt = [w for w in edges.get(v, []) if w in members]
            if start in nxt:
                last = v
                break
            for w in nxt:
                if w not in parent and w != start:
                    parent[w] = v
                    queue.append(w)
        path = [last]
        while path[-1] != start:
            path.append(parent[path[-1]])
        cycles.append(path[::-1])
    return cycles
