"""Who acts: the rule for actor names, the one form names are compared in, and the caller's identity.

Every input that names a person (``actor``, a reviewer, a token's owner, a ``claimed_by`` filter)
must pass :func:`check_name`; every rule that compares people (claim ownership, self-review,
independent reviewers) compares :func:`name_key` values, never raw strings. Names are stored as
given (their display form) next to their key.

The name rule (see :func:`name_problem`):

* 1 to :data:`NAME_MAX_LENGTH` characters;
* letters (any script), combining marks after a letter, ASCII digits, and the separators
  ``.`` ``_`` ``-`` ``@``; it starts with a letter or a digit. Everything else is refused, which
  covers spaces, control characters (NUL, terminal escapes), format characters (zero-width
  spaces and joiners, bidi overrides), symbols and non-ASCII digits;
* the letters (after NFKC) are of one script, or of one of the combinations a single language
  writes with (Latin with Han and Kana for Japanese, with Han and Hangul for Korean, with Han and
  Bopomofo for Chinese): ``pаypal`` with a Cyrillic ``а`` is refused. A name written entirely in
  Cyrillic or Greek letters that each look like a Latin letter (``аре``) is refused too;
* no more than :data:`MAX_MARK_RUN` combining marks in a row.

Two names are the same person when their keys are equal: NFKC, then case folding, then each look-alike
of an ASCII letter or digit replaced by it (Unicode's confusables skeleton, UTS #39): so ``Agent-7``,
``AGENT-7`` and the full-width ``ａｇｅｎｔ-7`` are one actor, and ``alıce`` (dotless i) and ``ᴀlice``
(small capital A) are alice. Keys of names recorded by an older anvil that held such a look-alike
are recomputed by ``anvil rebuild`` (which replays the log).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from anvil.engine.errors import UsageError
from anvil.engine.vocab import RANKED_ROLES

NAME_MAX_LENGTH = 64
MAX_MARK_RUN = 3
SEPARATORS = frozenset("._-@")
DEFAULT_ACTOR = "anvil"
"""The name recorded when nobody was named (operations that do not need an actor)."""

ROLE_RANK: dict[str, int] = {role: rank for rank, role in enumerate(RANKED_ROLES, 1)}
RUNNER = "runner"

# Script sets a single language writes with (Unicode TS #39, "highly restrictive").
_ALLOWED_MIXES = (frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}), frozenset({"LATIN", "HAN", "BOPOMOFO"}),
                  frozenset({"LATIN", "HAN", "HANGUL"}))
_SCRIPT_ALIASES = {"CJK": "HAN"}
_LATIN_LOOKALIKES = frozenset("аеорсухіјѕһԁԛԝӏАВЕКМНОРСТХІЈЅԜ" "αεοριτυνκχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ")
# Default-ignorable characters that are not format characters (they render as nothing, so a name
# holding one looks like the name without it).
_IGNORABLE_RANGES = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x3164, 0x3164),
                     (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xE0100, 0xE01EF))
RULE_TEXT = (f"1-{NAME_MAX_LENGTH} letters, digits and . _ - @, starting with a letter or digit, "
             "in one script")


_LOOKALIKES: dict[int, str] | None = None


def _lookalikes() -> dict[int, str]:
    """The table folding look-alikes of ASCII letters and digits (built once, on the first non-ASCII name)."""
    global _LOOKALIKES
    if _LOOKALIKES is None:
        from anvil.engine.confusables_table import PAIRS

        _LOOKALIKES = {ord(entry[0]): entry[1:] for entry in PAIRS.split("\t") if entry}
    return _LOOKALIKES


def name_key(name: str) -> str:
    """The form names are compared in: NFKC, case-folded (and NFKC again, as folding can undo it), then
    every look-alike of an ASCII letter or digit replaced by it (Unicode's confusables skeleton,
    UTS #39, as :mod:`anvil.engine.confusables_table` holds it): ``alıce`` and ``ᴀlice`` are alice."""
    if name.isascii():  # the common case: NFKC and case folding of ASCII is lower-casing, nothing looks alike
        return name.lower()
    import unicodedata  # deferred: calls that name nobody (most reads) never pay for its tables

    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return folded.translate(_lookalikes())


def same_person(a: str, b: str) -> bool:
    """Whether two names are the same actor."""
    return name_key(a) == name_key(b)


def _script(char: str) -> str | None:
    """The script of a letter (from its Unicode name), or None for modifiers that belong to none."""
    import unicodedata

    if unicodedata.category(char) == "Lm":
        return None
    word = unicodedata.name(char, "").split(" ", 1)[0]
    return _SCRIPT_ALIASES.get(word, word) or None


def _ignorable(char: str) -> bool:
    point = ord(char)
    return any(low <= point <= high for low, high in _IGNORABLE_RANGES)


def name_problem(name: Any) -> str | None:
    """What is wrong with ``name`` as an actor name, or None when it passes the rule.

    The answer never quotes the name (it may hold terminal escapes or invisible characters).
    """
    import unicodedata

    if not isinstance(name, str) or not name:
        return "it is empty"
    if len(name) > NAME_MAX_LENGTH:
        return f"it is longer than {NAME_MAX_LENGTH} characters"
    marks = 0
    after_letter = False
    for index, char in enumerate(name):
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Zs", "Zl", "Zp", "Cs", "Co", "Cn") or _ignorable(char):
            return "it contains a space, control, format or invisible character"
        if category.startswith("M"):
            marks += 1
            if not after_letter:
                return "it has a combining mark that does not follow a letter"
            if marks > MAX_MARK_RUN:
                return f"it stacks more than {MAX_MARK_RUN} combining marks"
            continue
        marks = 0
        after_letter = category.startswith("L")
        if after_letter or category == "Nd":
            continue
        if char in SEPARATORS:
            if index == 0:
                return "it starts with a separator"
            continue
        return "it contains a character other than letters, digits and . _ - @"
    return _script_problem(unicodedata.normalize("NFKC", name))


def _script_problem(folded: str) -> str | None:
    import unicodedata

    letters = [c for c in folded if unicodedata.category(c).startswith("L")]
    scripts = {s for s in (_script(c) for c in letters) if s}
    if any(not c.isascii() and unicodedata.category(c) == "Nd" for c in folded):
        return "it contains non-ASCII digits"
    if len(scripts) > 1 and not any(scripts <= allowed for allowed in _ALLOWED_MIXES):
        return "it mixes letters of different scripts (" + ", ".join(sorted(s.title() for s in scripts)) + ")"
    if letters and scripts <= {"CYRILLIC", "GREEK"} and all(c in _LATIN_LOOKALIKES for c in letters):
        return "it is written only with letters that look like Latin ones"
    return None


def check_name(name: Any, where: str) -> str:
    """Return ``name`` when it passes the rule.

    Args:
        name: the proposed name.
        where: how the caller gave it (e.g. ``"--actor / actor (or ANVIL_ACTOR)"``), named in the error.

    Raises:
        UsageError: ``invalid_actor`` naming ``where``, what is wrong, and the rule.
    """
    problem = name_problem(name)
    if problem:
        raise UsageError(f"invalid name in {where}: {problem}; a name is {RULE_TEXT}", code="invalid_actor")
    return str(name)


def role_allows(role: str | None, needed: str, *, runner: bool = False) -> bool:
    """Whether ``role`` includes what ``needed`` may do (agent < reviewer < lead).

    The ``runner`` role is outside that order: it may do exactly what ``runner`` says is open to it
    (reading, verifying, landing), and nothing a ranked role check asks for.
    """
    if role == RUNNER:
        return runner
    return ROLE_RANK.get(role or "", 0) >= ROLE_RANK[needed]


def runner_may(effect: str, role: str, runner_flag: bool) -> bool:
    """Whether a runner token may call an operation: one marked for runners (verify, land), or a
    read open to every agent."""
    return runner_flag or (effect == "read" and role == "agent")


SELF_DECLARED_NOTICE = ("self-declared: this name was not verified; an HTTP server with per-agent tokens "
                        "authenticates callers")


class Identity(NamedTuple):
    """Who makes a call (a ``NamedTuple``: immutable, and cheap to define on the direct CLI path).

    Attributes:
        actor: the name, in the display form it was given (a token's name when authenticated).
        authenticated: True only when a per-agent token proved it.
        how: ``token`` (authenticated), ``declared`` (an actor input or ANVIL_ACTOR) or ``default``
            (nobody was named; recorded as :data:`DEFAULT_ACTOR`).
        role: the token's role (agent, reviewer, lead, runner); None when not authenticated.
        token_id: the public id of the token that proved it (re-checked where a call acts); None
            when not authenticated.
    """

    actor: str
    authenticated: bool = False
    how: str = "declared"
    role: str | None = None
    token_id: str | None = None

    @property
    def key(self) -> str:
        return name_key(self.actor)

    def may(self, needed: str, *, runner: bool = False) -> bool:
        """Whether this caller may do what needs role ``needed`` (``runner``: also open to a runner
        token): always, when not authenticated (direct and stdio callers own the machine), else by
        role."""
        return not self.authenticated or role_allows(self.role, needed, runner=runner)

    def to_wire(self) -> dict[str, Any]:
        """The ``actor_identity`` block of a mutating result."""
        return {"actor": self.actor, "authenticated": self.authenticated, "how": self.how, "role": self.role,
                "notice": None if self.authenticated else SELF_DECLARED_NOTICE}


def authenticated(actor: str, role: str, token_id: str | None = None) -> Identity:
    """The identity a verified token (public id ``token_id``) stands for."""
    return Identity(actor=actor, authenticated=True, how="token", role=role, token_id=token_id)
