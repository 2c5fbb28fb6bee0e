"""Verification commands: what a bullet's command is, the note beside it, and whether it can be proven.

A verification bullet is a command when it is one code span (`` `pytest -q` ``) or a bare command
line (``pytest -q``). Text after the code span is a note about the command, kept as a note. A
command that cannot run as written (prose, an unbalanced quote, a control character, nothing at
all) is reported by :func:`command_problem`; the parser warns about it where it is written and
the readiness gate keeps the task from being ready, so no claim is ever asked to prove it.
"""

from __future__ import annotations

import re
import shlex

_SPAN_OPEN = re.compile(r"`+")
# A code span followed by one of these is the start of a shell line, not a command and its note.
_SHELL_CONTINUATION = ("&&", "||", "|", ";", ">", "<", "2>", "&", "`")
_SEPARATORS = " \t-\u2013\u2014:,;"
_SHELL_SIGNS = frozenset("|&;<>$`=\\\"'")
_CAPITALISED = re.compile(r"[A-Z][a-z]+[:,]?$")
_PLAIN_WORD = re.compile(r"[^\W\d_]+[.,:;!?)]*$")
_PROMPT = "$ "


def split_verification(text: str) -> tuple[str, str]:
    """Split a verification bullet's text into its command and the note after it.

    Args:
        text: The bullet's text, without the bullet.

    Returns:
        ``(command, note)``. A bullet opening with a code span gives the span's content (a leading
        ``$ `` prompt dropped) and, as the note, the text after it without leading separators; a
        span followed by shell syntax (`` `a` && `b` ``), or a bullet not opening with a span, is
        one bare command with no note.

    Raises:
        Nothing.
    """
    s = text.strip()
    if not s.startswith("`"):
        return s, ""
    run = _SPAN_OPEN.match(s)
    assert run is not None
    ticks = run.group(0)
    end = _closing_run(s, len(ticks), len(ticks))
    if end < 0:
        return s, ""
    content = s[len(ticks):end]
    if content.startswith(" ") and content.endswith(" ") and content.strip():
        content = content[1:-1]
    rest = s[end + len(ticks):].strip()
    if rest.startswith(_SHELL_CONTINUATION):
        return s, ""
    command = content.strip()
    if command.startswith(_PROMPT):
        command = command[len(_PROMPT):].strip()
    return command, rest.lstrip(_SEPARATORS).strip() if rest else ""


def _closing_run(s: str, start: int, width: int) -> int:
    """Index of the next backtick run of exactly ``width`` at or after ``start``; -1 when there is none."""
    i = s.find("`", start)
    while i >= 0:
        j = i
        while j < len(s) and s[j] == "`":
            j += 1
        if j - i == width:
            return i
        i = s.find("`", j)
    return -1


def command_problem(command: str) -> str | None:
    """Why ``command`` cannot be proven by running it as written, or ``None`` when it can.

    Args:
        command: A verification command as the PRD stores it.

    Returns:
        ``"holds no command"``, ``"holds a control character"``, ``"has an unbalanced quote"`` or
        ``"reads as prose, not a command"``; ``None`` for a runnable command line.

    Raises:
        Nothing.
    """
    s = command.strip()
    if not s.strip("` \t"):
        return "holds no command"
    if not s.isprintable() and not s.replace("\t", " ").isprintable():
        return "holds a control character"
    words = s.split()
    # reads_as_prose needs three words and, below six, a capital or a full stop: most commands skip it
    prose = len(words) >= 3 and (len(words) >= 6 or s.endswith(".") or words[0][:1].isupper()) and reads_as_prose(s)
    if not prose and ("'" in s or '"' in s or "\\" in s):  # only quotes and escapes can fail to split
        try:
            shlex.split(s)
        except ValueError:
            return "has an unbalanced quote"
    return "reads as prose, not a command" if prose else None


def reads_as_prose(text: str) -> bool:
    """Whether ``text`` is a sentence rather than a command line.

    A line with shell syntax (pipes, redirections, variables, quotes, ``=``) or a flag is a
    command. Otherwise it reads as prose when at least three of its words are plain words and it
    opens with a capitalised word or ends with a full stop, or when six or more words are plain.
    ``npm run build`` and ``Rscript test.R`` are commands; ``Run the suite by hand`` is prose.

    Args:
        text: The line.

    Returns:
        True for prose.

    Raises:
        Nothing.
    """
    words = text.split()
    if len(words) < 3 or len(words) < 6 and not _CAPITALISED.match(words[0]) and not text.endswith("."):
        return False  # what most commands are: too short, or lower case and no full stop
    if set(text) & _SHELL_SIGNS and not _plainly_worded(text):
        return False
    if any(w.startswith("-") and len(w) > 1 for w in words[1:]):
        return False
    plain = sum(1 for w in words if _PLAIN_WORD.match(w))
    opening = bool(_CAPITALISED.match(words[0]))
    return plain >= 3 and (opening or text.rstrip().endswith(".")) or plain >= 6


def _plainly_worded(text: str) -> bool:
    """A sentence that merely holds an apostrophe (``don't``): its quote is not shell syntax."""
    return set(text) & _SHELL_SIGNS <= {"'"} and bool(re.search(r"[A-Za-z]'[A-Za-z]", text))
