"""The one exception tree of anvil.

Every failure a user can cause or meet is an :class:`AnvilError` carrying a stable string ``code``
and a bounded, secret-free ``message``. Each surface translates it in exactly one place: the CLI
prints it and exits with :attr:`AnvilError.exit_code`; the MCP server returns a tool error carrying
``code`` and ``message``; the MCP client backend rebuilds the same error with :func:`from_wire`.

Each class fixes one exit code. The exit codes and every code, with what it means and what to do,
are catalogued in :mod:`anvil.engine.error_codes` (rendered as ``docs/errors.md`` and the README's
exit-code table); a code raised anywhere must be catalogued there.
"""

from __future__ import annotations

from typing import Any, ClassVar

MAX_MESSAGE_BYTES = 1024


def bound_text(text: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """Cut ``text`` to at most ``limit`` UTF-8 bytes, marking the cut with an ellipsis.

    A lone surrogate (from an argument or file name that is not UTF-8) is shown escaped (``\\udcff``),
    so every message can be printed and sent as UTF-8.
    """
    data = text.encode("utf-8", errors="backslashreplace")
    if len(data) <= limit:
        return data.decode("utf-8")
    return data[: limit - 3].decode("utf-8", errors="ignore") + "..."


class AnvilError(Exception):
    """Base of every anvil error; ``code`` is stable, ``message`` is for people."""

    exit_code: ClassVar[int] = 1
    default_code: ClassVar[str] = "internal"

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None):
        self.message = bound_text(" ".join(str(message).split()) or self.default_code)
        self.code = code or self.default_code
        self.details = details or {}
        super().__init__(self.message)

    def line(self) -> str:
        """The one-line form every surface prints on stderr."""
        return f"anvil: error: {self.message} [{self.code}]"

    def to_wire(self, *, with_exit_code: bool = False) -> dict[str, Any]:
        """The error document printed by ``--json`` (and, with the exit code, sent over MCP)."""
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        if with_exit_code:
            body["exit_code"] = self.exit_code
        return {"error": body}


class InternalError(AnvilError):
    """An unexpected failure inside anvil."""


def unexpected(exc: BaseException) -> InternalError:
    """The one error every surface reports for a bug: the exception's type, never its text."""
    return InternalError(f"internal error ({type(exc).__name__}); details are in the log with ANVIL_DEBUG=1",
                         code="internal")


class Interrupted(AnvilError):
    """The user interrupted the command (Ctrl-C)."""

    exit_code = 130
    default_code = "interrupted"


class UsageError(AnvilError):
    """The caller's input or invocation is invalid."""

    exit_code = 2
    default_code = "invalid_input"


class ConfirmationRequired(AnvilError):
    """A destructive operation was asked for without ``confirm``."""

    exit_code = 3
    default_code = "confirmation_required"


class AuthFailed(AnvilError):
    """The server refused the credentials (or their absence)."""

    exit_code = 4
    default_code = "auth_failed"


class Refused(AnvilError):
    """A domain rule refused the operation (status, gate, ownership, fencing, conflict)."""

    exit_code = 5
    default_code = "refused"


class NotFound(AnvilError):
    """A project, PRD, task or claim does not exist."""

    exit_code = 6
    default_code = "not_found"


class TargetUnavailable(AnvilError):
    """The MCP target could not be reached or did not speak MCP."""

    exit_code = 7
    default_code = "target_unavailable"


class StateIncompatible(AnvilError):
    """The state cannot be used as it is: written by a newer anvil, not an anvil database, damaged,
    or a state file that cannot be read or written (disk full, read-only, replaced)."""

    exit_code = 8
    default_code = "schema_mismatch"


class Busy(AnvilError):
    """The project's writer lock was not acquired in time: nothing was written; retrying is safe."""

    exit_code = 9
    default_code = "state_busy"


_BY_EXIT: dict[int, type[AnvilError]] = {cls.exit_code: cls for cls in AnvilError.__subclasses__()}
"""Each error class by its exit code (one class per exit code), for rebuilding errors from the wire."""


def error_class_for_exit(exit_code: int) -> type[AnvilError]:
    """The error class whose exit code is ``exit_code`` (``InternalError`` when unknown)."""
    return _BY_EXIT.get(exit_code, InternalError)


def from_wire(document: Any) -> AnvilError:
    """Rebuild an :class:`AnvilError` from the document :meth:`AnvilError.to_wire` produced.

    Anything malformed becomes an ``InternalError`` with a fixed message, never raw content.
    """
    body = document.get("error") if isinstance(document, dict) else None
    if not isinstance(body, dict) or not isinstance(body.get("code"), str):
        return InternalError("the server returned a malformed error", code="bad_response")
    exit_code = body.get("exit_code")
    cls = error_class_for_exit(exit_code) if isinstance(exit_code, int) else InternalError
    details = body.get("details") if isinstance(body.get("details"), dict) else None
    return cls(str(body.get("message", "")), code=body["code"], details=details)


def for_callers(error: AnvilError) -> AnvilError:
    """``error`` as a network caller may see it: a state error (exit 8) keeps its code and exit code but
    names no database user, host, port or name and no path of the server (the server's own log and
    its operator's direct CLI keep the full message).
    """
    if not isinstance(error, StateIncompatible):
        return error
    import copy

    shown = copy.copy(error)  # the same class and code, without what names the server's insides
    shown.message = bound_text(f"the server cannot use its project state right now ({error.code}); nothing was "
                               "done; its operator's log names the cause")
    shown.details = {}
    shown.args = (shown.message,)
    return shown

