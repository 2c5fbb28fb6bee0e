"""The catalogue of anvil's exit codes and error codes: what each means and what to do about it.

Error codes are a public interface: scripts and agents act on ``code``, never on the wording of a
message. So every code anvil can report is listed here exactly once, with the error class it is
raised with (which fixes its exit code), a meaning and a remedy written for the person or agent
who meets it. ``docs/errors.md`` and the README's exit-code table are generated from this module
(``python -m anvil.ops.errordocs``).

Raise sites write the code as a string literal (``raise NotFound("...", code="task_not_found")``),
which keeps every message next to its code and costs the direct CLI path nothing: this module is
read only by the docs generator and the tests. ``tests/engine/test_error_codes.py`` parses every
module under ``anvil/`` and fails on a code that is missing here, on a code raised with another
error class than its entry says, and on a shipped code that disappeared. Codes are only ever
added: one that is no longer raised stays here with ``retired=True``.

To add a code: add an :class:`ErrorCode` below (in its exit code's group), append the code to
``tests/engine/error_codes_shipped.txt`` and run ``python -m anvil.ops.errordocs``. To add an exit
code: add the error class to :mod:`anvil.engine.errors` and its row to :data:`EXIT_CODES`.
"""

from __future__ import annotations

from dataclasses import dataclass

from anvil.engine.errors import (
    AnvilError,
    AuthFailed,
    Busy,
    ConfirmationRequired,
    InternalError,
    Interrupted,
    NotFound,
    Refused,
    StateIncompatible,
    TargetUnavailable,
    UsageError,
)


@dataclass(frozen=True, slots=True)
class ExitCode:
    """One process exit code: a short title, the README's sentence for it (markdown), and what it means
    for an agent that retries (``retry``: ``final``, ``transient`` or ``-`` for success; ``retry_note``
    says what to do)."""

    exit_code: int
    title: str
    meaning: str
    retry: str = "final"
    retry_note: str = ""


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """One error code, the class it is raised with, and what it means and asks of the user."""

    code: str
    error: type[AnvilError]
    meaning: str
    remedy: str
    retired: bool = False
    transient: bool | None = None  # overrides its exit code's ``retry`` (None: as the exit code says)

    @property
    def exit_code(self) -> int:
        """The exit code of the CLI (and ``exit_code`` of an MCP error document) for this code."""
        return self.error.exit_code

    @property
    def retry(self) -> str:
        """``transient`` (retry later, unchanged) or ``final`` (something must change first)."""
        if self.transient is not None:
            return "transient" if self.transient else "final"
        return next(row.retry for row in EXIT_CODES if row.exit_code == self.exit_code)


EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(0, "ok", "ok", "-", "done; with a retry key, a repeat answers the first result and writes nothing"),
    ExitCode(1, "internal error", "internal error (a bug; rerun with `ANVIL_DEBUG=1` and report it)", "final",
             "a bug: repeating will not help; report it (`ANVIL_DEBUG=1` shows the traceback)"),
    ExitCode(2, "invalid input or usage",
             "invalid input or usage (unknown flag, bad value, bad MCP target, missing actor)", "final",
             "fix the input the message names, then call again"),
    ExitCode(3, "confirmation required",
             "confirmation required (repeat with `--yes`); also `anvil next -q` on an empty queue", "final",
             "repeat with `--yes` (`confirm: true`) only if you mean it; `next -q`: nothing to do now"),
    ExitCode(4, "authentication failed",
             "authentication failed (the MCP server refused the bearer token), or the token's identity or role "
             "does not allow the call", "final", "fix or renew the token (`--mcp-token-env`), or use one whose role "
             "allows the call"),
    ExitCode(5, "refused by a rule",
             "refused by a rule: wrong status, gate, ownership, fencing (`stale_generation`), conflict", "final",
             "re-read the task or project (`show`, `status`): the state says why; never repeat blindly"),
    ExitCode(6, "not found", "not found (including a project that is not initialized)", "final",
             "check the id, path or project; `init` a project first"),
    ExitCode(7, "MCP target unavailable", "MCP target unavailable", "transient",
             "retry with backoff and the same `--idempotency-key` (the call may have committed)"),
    ExitCode(8, "state incompatible, damaged or unusable",
             "state incompatible (the database was written by a newer anvil or is not anvil's), damaged (`anvil "
             "verify` found a problem) or unusable (a state file cannot be read or written: disk full, read-only, "
             "replaced); the message names the file and the cause", "final",
             "an operator must act (the codes marked transient clear by themselves or once the disk or database "
             "is back: retry those with backoff and the same `--idempotency-key`)"),
    ExitCode(9, "busy", "busy: another process held the project's writer lock longer than `ANVIL_LOCK_TIMEOUT` "
                        "seconds (default 30); nothing was written, so repeating the call is safe", "transient",
             "nothing was written: retry (with backoff; the same `--idempotency-key` if you used one)"),
    ExitCode(130, "interrupted", "interrupted (Ctrl-C)", "final",
             "you stopped it; a mutation either committed or not: repeat with the same `--idempotency-key`"),
)


def _internal(code: str, meaning: str, remedy: str) -> ErrorCode:
    return ErrorCode(code, InternalError, meaning, remedy)


def _usage(code: str, meaning: str, remedy: str) -> ErrorCode:
    return ErrorCode(code, UsageError, meaning, remedy)


def _refused(code: str, meaning: str, remedy: str) -> ErrorCode:
    return ErrorCode(code, Refused, meaning, remedy)


def _not_found(code: str, meaning: str, remedy: str) -> ErrorCode:
    return ErrorCode(code, NotFound, meaning, remedy)


def _unreachable(code: str, meaning: str, remedy: str, *, transient: bool | None = None) -> ErrorCode:
    return ErrorCode(code, TargetUnavailable, meaning, remedy, transient=transient)


def _state(code: str, meaning: str, remedy: str, *, transient: bool | None = None) -> ErrorCode:
    return ErrorCode(code, StateIncompatible, meaning, remedy, transient=transient)


_REPORT = "Report it with the command you ran; `ANVIL_DEBUG=1` shows the details."
_SAME_VERSION = "Run the same anvil version on both sides (compare `anvil --version` with the server's)."

CATALOGUE: tuple[ErrorCode, ...] = (
    # exit 1: internal errors
    _internal("internal", "anvil failed unexpectedly (a bug); the message names only the kind of failure.",
              "Rerun with `ANVIL_DEBUG=1` to see the traceback (a server logs it on stderr) and report it."),
    _internal("bad_response", "The MCP server's answer is not a valid result or error of this tool: a malformed "
                              "error document, no structured result, or a result outside the tool's output schema.",
              _SAME_VERSION),
    _internal("host_config_invalid", "`anvil mcp-config` built a configuration that does not parse back to its "
                                     "entry, or a merge that would change other settings (a bug); nothing was "
                                     "written.", _REPORT),
    _internal("host_config_write_failed", "`anvil mcp-config --write` could not write the host's project file.",
              "Check that the project directory is writable, or copy the printed entry by hand."),
    _internal("install_write_failed", "`anvil install --write` (or `--rollback`) could not write a file or its "
                                      "backup; files already written stay, and their backups with them.",
              "Check that the project directory and the anvil home are writable, then run the same command again "
              "or `anvil install HARNESS --rollback`."),
    _internal("read_only_violation", "A read-only operation tried to write (a bug).", _REPORT),
    _internal("render_failed", "The command succeeded, but its result could not be shown as text.",
              "Do not repeat a command that changes state: look at the result with a `--json` read "
              "(`anvil show TASK --json`, `anvil status --json`) and report the failure."),
    _internal("server_error", "The MCP server failed the call with a protocol error.",
              "Read the server's log, retry, and report it if it persists."),
    _internal("state_error", "The state database reported an error during the operation; nothing was written.",
              "Retry; if it persists, run `anvil verify` and check the disk space and permissions of the state "
              "directory."),
    _internal("unknown_event", "The event log holds an event type this anvil cannot apply.",
              "Use the anvil version that wrote the state, run `anvil verify`, and report it."),
    # exit 2: invalid input or usage
    _usage("usage", "The command line is malformed: an unknown option, a missing or badly typed argument, or an "
                    "option that needs another (such as `--port` without `--http`).",
           "Read the command's `--help` (named in the message) and fix the command line."),
    _usage("missing_input", "The command line leaves out an argument or option the command requires (such as the "
                            "TASK_ID of `anvil show`).",
           "Add it: the message names it, and the command's `--help` says what it takes."),
    _usage("invalid_lock_timeout", "`ANVIL_LOCK_TIMEOUT` is not a number of seconds (0 or more).",
           "Set it to the seconds a write may wait for another writer (default 30), or unset it."),
    _usage("invalid_input", "An input does not fit the operation: a missing or unknown field, a value of the wrong "
                            "type, out of range or not one of the allowed choices. The message names the field, "
                            "never the value.",
           "Fix the named input; `anvil COMMAND --help` and docs/reference.md give each input's type and limits."),
    _usage("address_unavailable", "The server could not listen on the host and port asked for (the port is in use, "
                                  "the address is not this machine's, or the port needs privileges).",
           "Pick another `--port` (0 picks a free one), stop whatever holds the port, or bind an address of this "
           "machine."),
    _usage("local_file_too_large", "A file the CLI was asked to read and send (such as `--file`) is over the "
                                   "input's size limit.",
           "Shorten the file, or split a PRD into several (`--prd ID`); the message gives the size and the limit."),
    _usage("local_file_not_regular", "A file the CLI or a local server was asked to read (such as `--file`, `--proof` "
                                     "or `--attestation-file`) is a device, FIFO, socket or directory, or a link "
                                     "to one, not a regular file: anvil reads only regular files, and never more "
                                     "than the input's size limit.",
           "Name the regular file you meant (save the output to a file first); the message says what the path is."),
    _usage("local_file_not_utf8", "A file the CLI was asked to read and send (such as `--file`) is not UTF-8 text.",
           "Save the file as UTF-8; the message gives the offset of the first invalid byte."),
    _usage("conflicting_flags", "Both sides of an on/off flag pair were given (such as `--approve` and `--reject`).",
           "Pass only the one you mean."),
    _usage("bundle_policy_invalid", "A bundle's policy is outside its bounds: a limit out of range, a review angle "
                                    "that is not a label, or more required angles than reviews per round.",
           "Keep max_tasks 1-12, max_serial_stages 1-6, max_reviews 2-3, max_rereviews 0-1, and at most "
           "max_reviews required angles (lower-case labels such as correctness)."),
    _usage("cwd_outside_project", "Over HTTP, the call's `cwd` names a directory outside the project the server "
                                  "serves (a server serves one project).",
           "Leave `cwd` out, or pass a directory inside the served project (relative to its root)."),
    _usage("delivery_reference_required", "A bundle checkpoint or reconciliation named neither a commit nor a pull "
                                          "request.",
           "Pass `--commit SHA`, `--pr URL` or both (`commit_sha`, `pr_url`)."),
    _usage("invalid_bundle_id", "A bundle id is not a plain id.",
           "Use 1-64 letters, digits, `.`, `_` and `-`, starting with a letter or digit."),
    _usage("caller_conflict", "Two inputs that both name the caller (`actor` and the seed's `claimed_by`) name "
                              "different people.",
           "Pass only one of them (`--actor NAME`, or `ANVIL_ACTOR`)."),
    _usage("invalid_database_url", "`ANVIL_DATABASE_URL` (or `anvil db copy`'s target) is set but is not a "
                                   "`postgresql://` URL.",
           "Set it to `postgresql://user@host:port/database`, or unset it to keep the state in the embedded SQLite "
           "database."),
    _usage("password_in_database_url", "`anvil db copy --to` was given a URL with a password, which would show in "
                                       "process listings and shell history.",
           "Use PGPASSWORD or ~/.pgpass, or put the URL in a variable and pass `--to-env NAME`."),
    _usage("database_env_unset", "`anvil db copy --to-env NAME` names a variable that is unset or empty.",
           "Export the target database's URL in that variable first, or name the variable that holds it."),
    _usage("credentials_in_url", "The MCP target URL carries `user:password@`.",
           "Remove the credentials from the URL; put a bearer token in an environment variable and name it with "
           "`--mcp-token-env NAME`."),
    _usage("fencing_required", "The project requires fencing, and the call did not name the claim generation.",
           "Pass `--generation N` (or the claim id) that your claim returned."),
    _usage("file_not_writable", "The file `anvil prd template --write` names is a directory or cannot be written.",
           "Name a file in a directory you can write to."),
    _usage("file_outside_project", "The PRD file given with `--file` (or `--write`) lies outside the project the "
                                   "server serves.",
           "Copy the file into the project and pass its path there."),
    _usage("invalid_actor", "A name (actor, reviewer, token owner, `--claimed-by`) breaks the name rule: empty or "
                            "over 64 characters, spaces, control, format, bidi or invisible characters, symbols, or "
                            "letters of mixed scripts. The message names the flag, never the value.",
           "Use 1-64 letters, digits and `.` `_` `-` `@` of one script, starting with a letter or digit "
           "(`--actor NAME` or `ANVIL_ACTOR`)."),
    _usage("invalid_duration", "A token lifetime is not a duration such as `90m`, `12h`, `30d` or `2w`, or is "
                               "longer than ten years.",
           "Pass `--expires` as a whole number followed by m, h, d or w."),
    _usage("invalid_category", "The evidence category is not one of the known categories.",
           "Use one of the categories the message lists (see `anvil submit --help`)."),
    _usage("invalid_cursor", "The page cursor was not issued by this listing.",
           "Pass the `next_cursor` of the previous page unchanged, or start again without `--cursor`."),
    _usage("invalid_layout", "`ANVIL_STATE_LAYOUT` is neither `local` nor `workspace`.",
           "Set it to `local` or `workspace`, or unset it."),
    _usage("invalid_prd_id", "A PRD id is not a plain name.", "Use only letters, digits, `.`, `_` and `-`."),
    _usage("invalid_target", "The MCP target is not `stdio`, an `http(s)://` URL or `sse:<url>`, or its URL is "
                             "malformed.",
           "Pass `--mcp stdio`, `--mcp https://host/mcp` or `--mcp sse:https://host/sse` (or fix "
           "`ANVIL_MCP_TARGET`)."),
    _usage("invalid_token", "The bearer token variable holds characters an HTTP header cannot carry.",
           "Put the plain token (printable ASCII, no line breaks) in the variable."),
    _usage("invalid_token_env", "A token option names something that is not an environment variable name (perhaps "
                                "the token itself).",
           "Pass the NAME of the variable holding the token (letters, digits, `_`) to `--mcp-token-env`, "
           "`ANVIL_MCP_TOKEN_ENV` or `--token-env`, never the token."),
    _usage("invalid_log_level", "`ANVIL_MCP_LOG_LEVEL` is not a log level.",
           "Set it to `debug`, `info`, `warning` or `error`, or unset it."),
    _usage("malformed_edge", "A dependency edge is not a pair of task ids.",
           "Pass edges as `SOURCE:TARGET` (`--add`, `--remove`), or as `[source, target]` arrays over MCP."),
    _usage("missing_actor", "The command acts on someone's behalf (a claim, evidence, a review decision, a PRD "
                            "review) and nobody was named.",
           "Pass `--actor NAME` or set `ANVIL_ACTOR`; over HTTP, a per-agent token names you."),
    _usage("no_commands", "Evidence names no command that was run.",
           "Pass at least one `--command` that proves the work (for example the test run)."),
    _usage("no_edges", "A dependency edit supplied no edges.", "Pass at least one `--add` or `--remove` pair."),
    _usage("payload_too_large", "The MCP server refused the request as too large (HTTP 413).",
           "Send less in one call (for example a smaller PRD)."),
    _usage("prd_not_utf8", "The PRD file is not UTF-8 text.",
           "Save it as UTF-8; the message gives the offset of the first invalid byte."),
    _usage("unknown_topic", "`anvil docs` was asked for a topic it does not ship.",
           "Run `anvil docs --help` for the topics (prd-format)."),
    _usage("prd_file_required", "`anvil prd check` was given no file (or text) to check.",
           "Name the PRD file: `anvil prd check FILE`."),
    _usage("prd_too_large", "The PRD is larger than the size limit the message states.",
           "Shorten it, or split it into several PRDs (`--prd ID`)."),
    _usage("prd_unparseable", "The PRD has no structure anvil recognises.",
           "Follow docs/prd-format.md (`anvil prd assess` shows what is missing)."),
    _usage("reviewer_not_caller", "The old `reviewer` input names someone other than the caller; the reviewer of a "
                                  "decision is always whoever makes it.",
           "Leave `--reviewer` out and act as yourself (`--actor NAME`, `ANVIL_ACTOR` or your token)."),
    _usage("reason_required", "A rejection came without a reason.", "Pass `--reason` saying what must change."),
    _usage("root_missing", "The project root, the `cwd` given, or the current directory does not exist.",
           "Check `ANVIL_ROOT` and `--cwd`, or run anvil inside the project."),
    _usage("self_dependency", "An edge makes a task depend on itself.", "Remove that edge."),
    _usage("stdio_unavailable", "The stdio server was started with its standard input or output closed.",
           "Start it from an MCP client (which connects both), or serve HTTP with `--http`."),
    _usage("target_required", "A feature or task scope was asked for without saying which one.",
           "Pass the feature or task id with `--target`."),
    _usage("token_env_unset", "The environment variable named for the bearer token is unset or empty.",
           "Export the token in that variable first, or name the variable that holds it."),
    _usage("token_required", "The HTTP server was asked to listen beyond loopback without a bearer token, and the "
                             "project has no per-agent tokens.",
           "Issue per-agent tokens (`anvil token add NAME --role ROLE`), or pass `--token-env NAME` with a shared "
           "token in that variable, or bind `127.0.0.1`."),
    _usage("token_without_network_target", "A token variable was named, but the call does not go to a network "
                                           "MCP target.",
           "Use `--mcp-token-env` only with an `http(s)://` or `sse:` target, or drop it."),
    _usage("too_many_edges", "One dependency edit carried more edges than one request may.",
           "Split the edit into several calls."),
    _usage("unknown_operation", "No operation has that name.",
           "Use a name from `anvil describe` or docs/reference.md."),
    _usage("unknown_tool", "The MCP tool does not exist, or it is a planning tool and the server lists only "
                           "execution tools to callers without a per-agent token.",
           "Call a listed tool, start the server with `--planning` (`ANVIL_MCP_PLANNING=1`), or call it with a "
           "lead's token."),
    _usage("git_unavailable", "The claim needs git (a git mode is set), but the `git` command cannot be run.",
           "Install git and put it on PATH, or claim with `--git-mode off`."),
    _usage("invalid_git_plan", "The `git_plan` input is not the facts the anvil CLI sends about its checkout.",
           "Leave `git_plan` out and claim with the anvil CLI from the checkout; it fills the plan in."),
    _usage("proof_invalid", "A command-proof, attestation or verification artifact is not an anvil artifact: not "
                            "base64, not JSON, not in canonical form, of an older version, or with a malformed body.",
           "Send the file `anvil proof run` (or `anvil attest`) wrote, byte for byte; never edit or re-encode it. "
           "An artifact of an older anvil is made again with this one."),
    _usage("invalid_commit", "A commit or tree id (`--commit`, `--tree`) is not a full object id (40 or 64 lower-case "
                             "hex digits), or a tree was given without its commit.",
           "Pass the full id `git rev-parse HEAD` (and `git rev-parse HEAD^{tree}`) prints; in a git-bound claim "
           "leave both out: the CLI reads the claim branch."),
    _usage("verification_results_required", "`verify_task` was called without results: it only records outcomes, "
                                            "it never runs a command.",
           "Run `anvil verify-task TASK` in a clone of the repository: it runs the contract's commands on the "
           "submitted commit and records them."),
    _usage("proof_oversized", "An artifact is larger than the 64 KiB limit.",
           "Send the artifact `anvil proof run` wrote (its output excerpt is bounded); a larger file is not one."),
    _usage("too_many_proofs", "A submission carried more than 50 proofs.", "Prove the task's verification commands; "
                                                                             "50 proofs per submission at most."),
    _usage("notes_required", "A progress report has neither notes nor an attestation.",
           "Pass `--notes TEXT`, or an attestation with `--attestation-file FILE`."),
    _usage("invalid_public_key", "The key given to `anvil trust add` is not a 32-byte Ed25519 public key in base64.",
           "Pass the public key `anvil keys generate` printed."),
    _usage("invalid_signing_key", "The signing key (`--key-file`, `ANVIL_SIGNING_KEY_FILE` or `ANVIL_SIGNING_KEY`) "
                                  "cannot be read or is not an unencrypted Ed25519 private key in PEM form.",
           "Make one with `anvil keys generate` and point `--key-file` at it."),
    _usage("artifact_not_written", "anvil could not write the artifact or key file named in the message.",
           "Check the directory exists and is writable, or pass `--out` elsewhere."),
    _usage("command_not_found", "`anvil proof run` could not start the command after `--`.",
           "Check the command's name and PATH; a shell command runs as `-- sh -c 'CMD'`."),
    # exit 3: confirmation required
    ErrorCode("confirmation_required", ConfirmationRequired,
              "A destructive variant (forced re-initialization, forced pruning, releasing another actor's claim) "
              "was asked for without confirmation; nothing changed.",
              "Repeat with `--yes` (MCP: `confirm: true`) if you mean it."),
    # exit 4: authentication failed
    ErrorCode("auth_failed", AuthFailed,
              "The MCP server refused the bearer token (HTTP 401 or 403): it is wrong, or a per-agent token that "
              "was revoked or has expired.",
              "Check that `--mcp-token-env NAME` (or `ANVIL_MCP_TOKEN_ENV`) names the variable holding your token; "
              "ask a lead for a new one (`anvil token add`) if yours was revoked or expired."),
    ErrorCode("auth_required", AuthFailed,
              "The MCP server needs a bearer token and the call sent none (no `--mcp-token-env`, or the variable "
              "named held nothing usable).",
              "Put your token in an environment variable and pass `--mcp-token-env NAME` (or set "
              "`ANVIL_MCP_TOKEN_ENV=NAME`)."),
    ErrorCode("token_issue_needs_lead_token", AuthFailed,
              "`add_token` was called over HTTP without a per-agent lead token (with the shared token, or on an "
              "open loopback server): issuing the first token would switch the server to per-agent tokens and "
              "lock every shared-token client out.",
              "Issue tokens with a direct call where the state is reachable (`anvil token add NAME --role lead`), "
              "or over HTTP with a lead's own token."),
    ErrorCode("actor_mismatch", AuthFailed,
              "The request is authenticated by a per-agent token, but `--actor` (or `ANVIL_ACTOR`, or the "
              "`reviewer` input) names someone else.",
              "Leave `--actor` out (the token says who you are), or use that actor's own token."),
    ErrorCode("forbidden_by_role", AuthFailed,
              "The per-agent token's role does not allow this call: an agent cannot decide reviews, plan, change "
              "the configuration, manage tokens, take over another's claim or move tasks between drafted and "
              "ready; a reviewer cannot plan.",
              "Ask someone whose token has the role the message names (reviewer or lead)."),
    # exit 5: refused by a rule
    _refused("prd_source_outside", "The PRD was parsed from a file outside the project, which this call cannot "
                                   "re-read (a server over the network, or another machine).",
             "Parse it again naming the file (`anvil prd parse --file PATH`: the CLI reads it), or pass its text."),
    _refused("prd_sources_diverged", "A parse without `--file` found both the file the PRD was parsed from and "
                                     "the managed copy changed since the last recorded revision, differently.",
             "Pass `--file` with the one to parse (the project file, or the managed copy in the state directory); "
             "copy what you need from the other first."),
    _refused("host_config_unreadable", "`anvil mcp-config --write` or `anvil install` found the host's project "
                                       "file unparseable (a JSON file with comments, say), anvil's entry in a form "
                                       "it does not rewrite, or a damaged anvil block in AGENTS.md; the file was "
                                       "left alone.",
             "Add the printed entry to the file by hand, or fix the file (delete a damaged block) and run the "
             "command again."),
    _refused("already_claimed", "The task is already claimed (by you or another agent).",
             "Work on your claim, or take another task (`anvil next`, `anvil claim-next`)."),
    _refused("already_initialized", "The project is already initialized.",
             "Keep using it; `anvil init --force --yes` starts over (the old state is kept as a backup)."),
    _refused("bundle_duplicate_reviewer", "The reviewer already recorded a verdict in this review round of the bundle "
                                          "(names are compared whatever their spelling).",
             "Each verdict of a round needs a different reviewer: ask another independent reviewer."),
    _refused("bundle_exists", "A bundle with that id exists already.", "Pick another bundle id."),
    _refused("bundle_gate_not_passed", "The bundle's review gate has not passed: a required angle lacks an approval, "
                                       "fewer than two independent reviewers approved, or a verdict blocks it. The "
                                       "error's details hold the gate.",
             "Get the missing approvals recorded (`anvil bundle review`); after a blocking verdict, rework the bundle "
             "or replan it."),
    _refused("bundle_member_invalid", "A bundle member is not usable: listed twice, of another PRD, done already, "
                                      "listed before a member it depends on, or not a member of this bundle.",
             "List each task of the bundle's PRD once, every task after the tasks it depends on."),
    _refused("bundle_member_taken", "The task belongs to another live bundle.",
             "Leave it out, or supersede that bundle first (a bundle waiting to be replanned lends its members to "
             "its replacement)."),
    _refused("bundle_member_unauthorized", "The task is a member of a bundle whose coordinator claim is not live, so "
                                           "nobody is authorized to claim it.",
             "The bundle's coordinator claims the bundle first (`anvil bundle claim BUNDLE`); then claim the task."),
    _refused("bundle_not_ready", "The bundle cannot be completed: some members lack acceptable completion evidence. "
                                 "The error's details list each such member and what blocks it.",
             "Claim and submit completion evidence for every listed member, then complete the bundle again."),
    _refused("bundle_policy_exceeded", "The bundle's members exceed its policy: more tasks than max_tasks, or more "
                                       "serial dependency stages than max_serial_stages.",
             "Split the work into several bundles."),
    _refused("bundle_review_limit", "The bundle's review round has all the verdicts its policy allows.",
             "Finalize the round, or rework the bundle after a blocking verdict."),
    _refused("bundle_review_round_invalid", "The verdict names a review round that is not the bundle's open round.",
             "Read the open round with `anvil bundle show BUNDLE` (review_round) and pass it."),
    _refused("bundle_reviewer_not_independent", "The reviewer implemented the bundle: its coordinator, a holder of "
                                                "its coordinator claim, or the author of a member's evidence.",
             "Ask a reviewer who did not work on the bundle."),
    _refused("bundle_supersede_invalid", "The replacement cannot supersede the bundle: it is the bundle itself, or "
                                         "it is merged or superseded already.",
             "Name another live bundle as the replacement (create it first)."),
    _refused("bundle_wrong_status", "The bundle is not in a status that allows this (for example a review before "
                                    "the coordinator completed it, a merge before the gate was finalized, or any "
                                    "change to a superseded bundle).",
             "Check the bundle's status with `anvil bundle show BUNDLE` and take the step it is waiting for."),
    _refused("database_not_empty", "`anvil db copy` refused: the target database already holds an event log.",
             "Copy into a new, empty database (or drop the old project's tables first if it is a leftover)."),
    _refused("rebuild_not_applicable", "`anvil rebuild` rebuilds the embedded SQLite state from `events.jsonl`; a "
                                       "state in PostgreSQL has no such mirror.",
             "Restore a PostgreSQL state from its `pg_dump` backup (see docs/deploy.md)."),
    _refused("conflict_group_busy", "Another task of the same conflict group is being worked on.",
             "Take another task, or wait until that one is submitted or released."),
    _refused("dependencies_pending", "The task depends on tasks that are not done yet.",
             "Finish the dependencies first, or take a ready task (`anvil next`)."),
    _refused("dependency_cycle", "The dependency edit would create a cycle.",
             "Remove or reverse one of the edges that close the loop."),
    _refused("evidence_missing", "The task has no evidence to review.",
             "The implementer submits evidence first (`anvil submit`)."),
    _refused("evidence_not_completion", "The latest evidence is not completion evidence, so it cannot complete the "
                                        "task.",
             "Submit completion evidence (`anvil submit --category completion`) before approving."),
    _refused("file_conflict", "Files the task expects to change are held by another active claim.",
             "Take another task, or wait until that claim ends; `--file` narrows the files you claim."),
    _refused("idempotency_conflict", "The idempotency key was already used for a different request, or by "
                                     "another actor.",
             "Use a fresh key for a new request; reuse a key only to retry the identical request."),
    _refused("llm_tasks_unusable", "The client's model gave no reply, or drafted tasks that do not parse as PRD "
                                   "tasks.",
             "Write the `## Tasks` section yourself, or plan again."),
    _refused("no_active_claim", "The task has no active claim (never claimed, released, or its lease ran out).",
             "Claim the task first (`anvil claim TASK`)."),
    _refused("no_project", "The state exists but holds no project.",
             "Start over with `anvil init --force --yes` (the old state is kept as a backup)."),
    _refused("no_tasks", "The PRD has features but no tasks, and no model was available to draft them (use_llm "
             "false, or the caller is not an MCP client that declared sampling).",
             "Write a `## Tasks` section, or plan from an MCP client that supports sampling."),
    _refused("not_claimable", "The task is not in the `ready` status.",
             "Take a ready task (`anvil next`); `anvil show TASK` tells why this one is not."),
    _refused("not_coordinator", "The bundle is coordinated by someone else and has never been claimed, or its "
                                "coordinator still holds it.",
             "Leave it to its coordinator; another actor may claim it only to recover it after the coordinator's "
             "claim expired or was released."),
    _refused("not_in_review", "The task is not waiting for review.",
             "The implementer submits completion evidence first (`anvil submit`)."),
    _refused("not_owner", "The task is claimed by another actor; only the holder may do this.",
             "Leave it to the holder; a lead can return it to the pool with `anvil release TASK --yes`."),
    _refused("orphans_past_ready", "Tasks dropped from the PRD already have work recorded.",
             "Put them back in the PRD, or remove them with `anvil plan --prune-force --yes` (their history stays "
             "in the log)."),
    _refused("prd_not_approved", "The task's PRD is not approved at its current revision.",
             "Parse, review and approve the PRD (`anvil prd parse`, `anvil prd review`, "
             "`anvil prd review --approve`)."),
    _refused("prd_source_changed", "The PRD source changed since it was parsed.",
             "Parse it again (`anvil prd parse`), then retry."),
    _refused("readiness_gate", "The task fails the readiness gate (the message lists what is missing).",
             "Give the task acceptance criteria and a verification step in the PRD (no placeholders such as TBD), "
             "then parse and plan again."),
    _refused("reviewed_by_bundle", "The task is a member of a live bundle, which accepts its members through "
                                   "its own review gate.",
             "Review it with the bundle (`anvil bundle review`, `anvil bundle finalize`)."),
    _refused("score_incomplete", "Scores miss dimensions or are not whole numbers from 1 to 5.",
             "Give every dimension an integer score from 1 to 5."),
    _refused("self_review_forbidden", "Reviewers may not decide on evidence they submitted themselves.",
             "Ask another reviewer, or allow self-review in the project config."),
    _refused("source_outside_prd", "A dependency edge starts at a task of another PRD.",
             "Edit dependencies from the PRD that owns the source task (`--prd ID`)."),
    _refused("stale_generation", "The claim generation named is not the task's live claim (the lease ran out and "
                                 "the task was claimed again, or released).",
             "Stop working on the old claim; claim the task again if it is still yours to do."),
    _refused("stale_revision", "The PRD or the task moved on since it was read (another revision, or it changed "
                               "during planning).",
             "Read it again (`anvil show TASK`, `anvil status`) and retry with its current revision."),
    _refused("token_role_conflict", "The name already holds live tokens with another role (a name has one role).",
             "Revoke its tokens first (`anvil token revoke NAME`), then issue one with the new role."),
    _refused("task_id_collision", "Task ids of this PRD already belong to another PRD.",
             "Renumber those tasks so every task id is unique across PRDs."),
    _refused("transition_not_allowed", "The status change asked for is not allowed from the task's current status.",
             "Use one of the target statuses the message lists."),
    _refused("wrong_status", "The PRD is not in the status this step needs.",
             "Follow the order draft, reviewed, approved (`anvil prd review`, then `anvil prd review --approve`)."),
    _refused("init_raced", "Another process initialized (or re-initialized) the project while this `anvil init` "
                           "waited for the writer lock, so this one did not start over again.",
             "Check `anvil status`; repeat `anvil init --force --yes` only if you still want to start over."),
    _refused("git_checkout_busy", "Another live claim works in the checkout (shared branch mode) or at the worktree "
                                  "path this claim would use; switching it would pull the work from under them.",
             "Claim with `--worktree` for a checkout of your own (the message names the claim that holds it)."),
    _refused("git_checkout_missing", "The call asked for a claim branch or a worktree (git_mode, worktree_path), but "
                                     "the caller's directory is in no git checkout.",
             "Claim from inside the repository, or leave git_mode and worktree_path out (the claim then takes no "
             "git step)."),
    _refused("git_dirty_tree", "A branch-mode claim would switch a checkout that has tracked files with uncommitted "
                               "changes.",
             "Commit or stash the changes (the message lists some), or claim with `--worktree`."),
    _refused("git_no_commit", "The repository has no commit yet, so a claim branch has nothing to start from.",
             "Make a first commit, or claim with `--git-mode off`."),
    _refused("git_plan_required", "The claim's git mode is branch or worktree, but the call carried no plan from the "
                                  "caller's checkout (an MCP host calling a remote server directly).",
             "Claim with the anvil CLI from the checkout (also `--mcp URL`), or pass `git_mode: off` for this claim."),
    _refused("git_step_failed", "The claim was recorded but its git step (switching to or creating the claim "
                                "branch, adding the worktree) failed; the claim was released and only what the "
                                "call created was removed.",
             "Read git's reason in the message (a branch checked out elsewhere, a path in the way), fix it, and claim "
             "again."),
    _refused("git_timeout", "A git command did not finish in time.", "Check the repository (a hung hook, a network "
                                                                       "filesystem) and claim again."),
    _refused("git_unreadable", "git could not read the checkout or the claim's tree.",
             "Run the git command named in the message yourself to see why (a damaged repository, permissions)."),
    _refused("proof_tampered", "An artifact's digest or signature does not match its content, its body names a "
                               "signer whose signature it does not carry (a removed signature) or carries a signature "
                               "its body does not name, or its command is not its argv: it was edited after it was "
                               "made. It is refused, never read as unsigned.",
             "Make the proof again with `anvil proof run` and send the new file unchanged."),
    _refused("git_branch_taken", "The claim branch exists already and was not made by this claim (left over from an "
                                 "earlier claim, or made by hand), so its commits may be another claimer's; the claim "
                                 "was released rather than take it over.",
             "Look at the branch (`git log BRANCH`), keep what it holds elsewhere, delete it (`git worktree remove` "
             "if a worktree has it, then `git branch -D BRANCH`) and claim again."),
    _refused("claim_tree_missing", "The claim's worktree (or the checkout of a branch claim) is gone: deleted or "
                                   "moved.",
             "Restore it from the main checkout (`git worktree prune && git worktree add PATH BRANCH`: the branch "
             "keeps what was committed), or give the task back (`anvil release TASK`)."),
    _refused("claim_branch_mismatch", "The claim's tree is not on the claim branch grown from the claim-start commit, "
                                      "so an attestation would credit commits that are not this claim's work.",
             "Switch the tree back to the claim branch (`git switch BRANCH`) and attest again."),
    _refused("commit_not_branch_head", "`--commit` names another commit than the claim branch's head, which is what "
                                       "a git-bound submission hands in.",
             "Commit the work on the claim branch and leave `--commit` out: the CLI reads the head."),
    _refused("uncommitted_work", "Completion evidence of a git-bound claim was refused: tracked files in the claim's "
                                 "tree have changes that are not committed, so the commit handed in would not hold "
                                 "them.",
             "Commit the work on the claim branch (`git commit -am ...`), then submit; notes (`--category "
             "diagnostic`) are not refused."),
    _refused("commit_required", "Completion evidence of a git-bound claim names no commit (a call that did not come "
                                "through the anvil CLI or a stdio server, under the enforcing gate).",
             "Submit with the anvil CLI from the claim's tree (it reads the branch head), or pass `commit_sha` and "
             "`tree_sha` (`git rev-parse HEAD HEAD^{tree}`)."),
    _refused("no_work_committed", "Completion evidence of a git-bound claim names the commit the claim started from: "
                                  "no work was committed under the claim (enforcing gate).",
             "Commit the work on the claim branch, then submit."),
    _refused("proof_needs_local_run", "prove_command was called on an HTTP server, which runs on another machine "
                                      "and never runs a caller's command.",
             "Prove where you work with `anvil proof run TASK --mcp URL --mcp-token-env NAME -- CMD`, then hand the "
             "file in with `anvil submit TASK --proof FILE` on the same route (the CLI sends its bytes)."),
    _refused("proof_command_not_in_contract", "prove_command was asked to run a command that is not one of the "
                                              "task's evidence-contract commands; it runs only those.",
             "Pass one of the commands the message lists (the claim's continuation names each)."),
    _refused("submission_unproven", "Completion evidence was refused under the enforcing evidence gate: it lacks a "
                                    "passing proof of a command of the task's evidence contract (nothing was "
                                    "written; the claim stays live).",
             "Run the commands the message names (`details.next_commands`: a proof run of each missing command, then "
             "the submission with the proofs; the CLI prints them with the route it was called on)."),
    _refused("verifier_is_implementer", "A verification was refused: the caller submitted the work, and the "
                                        "implementer's own re-run proves nothing independent.",
             "Have someone else (a reviewer, the lead, or a runner identity such as a CI job) run `anvil verify-task "
             "TASK`."),
    _refused("verification_stale", "The task was submitted again since the verifier read its submission.",
             "Run `anvil verify-task TASK` again: it verifies the latest submission."),
    _refused("verification_needs_commit", "The submission to verify names no commit, so there is nothing to check "
                                          "out (work submitted outside a git mode).",
             "The implementer claims with `--branch` or `--worktree` (or `anvil config --git-mode`) and submits from "
             "the claim's tree; without a commit only client_reported proofs exist."),
    _refused("verification_commit_mismatch", "Verification results ran on another commit than the one submitted.",
             "Verify the submitted commit: `anvil verify-task TASK` checks exactly that one out."),
    _refused("verification_tree_mismatch", "The submitted commit has another tree in the verifier's clone than the "
                                           "submission recorded: the two do not describe the same work.",
             "Nothing was recorded; ask the implementer to submit again from the claim branch (the CLI reads commit "
             "and tree together)."),
    _refused("verification_not_in_contract", "A verification result is for a command that is not in the task's "
                                             "evidence contract (or the task has no command to verify).",
             "Run `anvil verify-task TASK`: it runs exactly the contract's commands (its verification commands and "
             "the PRD's named claims)."),
    _refused("git_checkout_required", "The command needs a clone of the project's repository and the working "
                                      "directory is not inside one.",
             "Run it inside a clone (a scratch worktree is added beside it; the checkout itself is left alone)."),
    _refused("commit_unavailable", "The submitted commit is not in the verifier's clone and no remote provided it.",
             "The implementer pushes the claim branch (`git push REMOTE BRANCH`); pass `--remote NAME` to fetch from "
             "a particular remote."),
    _refused("land_base_required", "The project lands work, so a claim starts from the landing target's current "
                                   "commit, and the claim's git plan did not name it.",
             "Claim with the anvil CLI from a clone (it reads the target's commit and claims again)."),
    _refused("landing_not_enabled", "The project does not land work: no landing target is configured.",
             "A lead enables it: `anvil config --land-target BRANCH [--land-remote NAME]`."),
    _refused("landing_target_mismatch", "The landing names another target branch or remote than the project "
                                        "lands on.",
             "Read the configuration (`anvil config`) and land again (`anvil land --all`)."),
    _refused("landing_not_approved", "Only approved (done) work lands; the task is in another status.",
             "Review the task first (`anvil apply TASK --approve`), then land it."),
    _refused("landing_needs_commit", "The task's approval names no commit (its work was not submitted from a "
                                     "claim branch or worktree), so there is nothing to land.",
             "Land such work by hand; claim in a git mode (`anvil config --git-mode worktree`) for work that lands."),
    _refused("landing_stale_approval", "The landing names another commit than the one the task's approval decided "
                                       "on, or the claim branch moved past the approved commit.",
             "Land exactly the approved commit (`anvil land TASK` reads it); new commits on the branch need a new "
             "review."),
    _refused("landing_dependency_waiting", "A task lands after its dependencies, and one of them has not landed "
                                           "(it waits in the queue, or it bounced).",
             "Land the dependency first (`anvil land --all` takes the queue in dependency order); a bounced "
             "dependency is reworked and approved again before its dependents land."),
    _refused("landing_unit_incomplete", "The task belongs to an approved bundle, whose members land together.",
             "Land the bundle's members as one unit: `anvil land TASK` takes them all."),
    _refused("already_landed", "The task's approved work has landed already; it lands once.",
             "Nothing to do: the target holds it (`anvil landing` lists recent landings)."),
    _refused("landing_in_progress", "Another lander is verifying this unit (its start holds the unit for a while).",
             "Take the next unit (`anvil land --all` does); the unit frees itself when that lander's hold ends."),
    _refused("landing_unproven", "A landing was recorded without a passing re-proof of every contract command on "
                                 "the merged tree.",
             "Run `anvil land TASK`: it re-runs the commands on the merged tree and bounces the task when one fails."),
    _refused("land_target_checked_out", "The landing target has no remote and is checked out in a worktree of the "
                                        "clone: moving the branch would change that checkout under whoever uses it.",
             "Configure a remote (`anvil config --land-remote NAME`), or land from a clone where the target branch "
             "is not checked out."),
    _refused("land_push_failed", "git could not move the landing target (the push or the ref update failed for a "
                                 "reason other than another lander winning the race).",
             "Read git's reason in the message (permissions, a protected branch, network), fix it and land again."),
    _refused("land_race_lost", "Other landers kept moving the target while this lander rebuilt on it, more times "
                               "than it retries.",
             "Land again: the queue goes on from the new target."),
    _refused("git_scratch_failed", "git could not check the commit out in a scratch worktree.",
             "Read git's reason in the message (disk space, permissions of the temporary directory) and run again."),
    _refused("proof_stale", "An artifact belongs to another claim or an earlier generation of this task's claim.",
             "Prove the commands again under your live claim (`anvil proof run TASK -- CMD`)."),
    _refused("proof_mismatch", "An artifact is bound to another task, owner, task or PRD revision, repository, or ran "
                               "outside the claim's tree.",
             "Prove the commands as the claim's owner, in the claim's tree, after the task last changed."),
    _refused("proof_duplicate", "An artifact was already accepted (or appears twice in the batch); each counts once.",
             "Drop the repeated file; prove the command again if it needs a new run."),
    _refused("proof_failed", "A command proof records a non-zero exit code.",
             "Fix the work until the command passes, then prove it again."),
    _refused("proof_untrusted_signer", "An artifact is signed by a key that is not on the project's trust list.",
             "Ask a lead to trust the key (`anvil trust add PUBLIC_KEY`), or send it unsigned (client_reported "
             "either way: a signature names who asserted a proof, it never makes it verified)."),
    _refused("attestation_unbound", "The claim has no git binding, so there is no repository state to attest.",
             "Claim with `--branch` or `--worktree`, or report progress with `--notes`."),
    _refused("attestation_empty", "The attestation shows no change since the claim started.",
             "Attest after changing or committing work in the claim's tree."),
    _refused("key_not_trusted", "The key id is not on the trust list.", "List the keys with `anvil trust list`."),
    _refused("key_exists", "`anvil keys generate` would overwrite an existing key file.",
             "Pass `--force` to replace it, or `--out` to write elsewhere."),
    _refused("signing_key_exposed", "The signing key file can be read by other users.",
             "Restrict it: `chmod 600 FILE`."),
    _refused("claim_unproven", "Approval was refused: the task's evidence contract (its verification commands, the "
                               "PRD's named claims and artifacts) has an item without valid evidence; the task stays "
                               "in review (for a bundle's finalization: a member's contract, every member stays).",
             "The message names the trust level required: for `verified` someone other than the implementer runs "
             "`anvil verify-task TASK`; for `client_reported` the implementer proves each command (`anvil proof "
             "run`) and resubmits with `--proof FILE`. Or reject the work, or a lead relaxes the gate."),
    # exit 6: not found
    _not_found("log_missing", "`anvil rebuild` found no `events.jsonl` to rebuild the database from.",
               "Restore `events.jsonl` from a backup; the database itself is checked by `anvil verify`."),
    _not_found("bundle_not_found", "No bundle has that id.", "Check the id with `anvil bundle list`."),
    _not_found("feature_not_found", "No feature has that id.", "Check the feature id in the PRD."),
    _not_found("install_not_found", "`anvil install --rollback` found no backup of an install of that harness in "
                                    "this project (never written with --write, or already rolled back).",
               "Nothing to undo; run `anvil install HARNESS` to see what an install would write."),
    _not_found("local_file_missing", "A file the CLI was asked to read and send (such as `--file`) does not exist "
                                     "or cannot be read.",
               "Check the path (relative to the working directory) and its permissions."),
    _not_found("not_initialized", "The project has no anvil state yet.",
               "Run `anvil init` in the project (or point `ANVIL_ROOT` at the right one)."),
    _not_found("prd_not_found", "No PRD with that id has been parsed.", "Parse it first (`anvil prd parse`)."),
    _not_found("prd_source_missing", "The PRD source file is missing or cannot be read.",
               "Write the PRD at the managed path, or pass `--file PATH`."),
    _not_found("task_not_found", "No task has that id (in the selected PRD).",
               "Check the id with `anvil list`."),
    _not_found("token_not_found", "The token id is not a live token of that name.",
               "Check the id with `anvil token list NAME --all`."),
    _not_found("unknown_task", "A dependency edge names a task that does not exist.",
               "Check the task ids with `anvil list`."),
    # exit 7: MCP target unavailable
    _unreachable("target_unavailable", "The MCP server could not be reached, started or kept connected, or it "
                                       "failed (HTTP 5xx).",
                 "Check that the server runs and the URL is right; retry."),
    _unreachable("host_not_allowed", "The MCP server does not accept the host name in the URL (HTTP 421).",
                 "Add the name to the server's `--allowed-host` (or `ANVIL_MCP_ALLOWED_HOSTS`), or use a name it "
                 "accepts.", transient=False),
    _unreachable("not_mcp", "The target did not answer like an MCP server.",
                 "Check the URL (the endpoint usually ends in `/mcp`) and that an anvil server runs there.",
                 transient=False),
    _unreachable("reply_too_large", "The MCP server's reply exceeded the size limit.",
                 "Ask for less (a smaller page, a narrower scope).", transient=False),
    _unreachable("target_exited", "The local stdio server exited before answering.",
                 "Rerun with `ANVIL_MCP_DEBUG=1` to see its log."),
    _unreachable("target_redirected", "The MCP server answered with a redirect, which anvil never follows.",
                 "Use the final URL.", transient=False),
    _unreachable("target_timeout", "The MCP server did not answer in time.",
                 "Check the server's health and retry."),
    # exit 8: state incompatible or damaged
    _state("schema_mismatch", "The state database was written by a newer anvil.",
           "Upgrade anvil; do not delete the state."),
    _state("not_anvil_state", "The state database was not written by anvil.",
           "Check `ANVIL_ROOT` and `ANVIL_HOME`; move the foreign file away."),
    _state("state_unreadable", "The state database cannot be read (damaged, or not a database).",
           "Check `ANVIL_ROOT` and `ANVIL_HOME`, then restore the database from a backup; the event mirror "
           "`events.jsonl` beside it keeps the whole history."),
    _state("state_unavailable", "The state database could not be opened (a missing or unusable state directory).",
           "Check that the state directory named in the message exists and is writable (see `ANVIL_HOME` and "
           "`ANVIL_STATE_LAYOUT`)."),
    _state("state_empty", "`state.db` is an empty (0-byte) file, not a database; anvil never turns it into an empty "
                          "state.",
           "`anvil rebuild --yes` rebuilds it from `events.jsonl`; without a log, `anvil init --force --yes` starts "
           "over."),
    _state("state_damaged", "SQLite reports the state database as damaged or not a database.",
           "Run `anvil verify` for the detail; `anvil rebuild --yes` rebuilds the database from `events.jsonl` "
           "(the damaged file is kept as a backup)."),
    _state("state_exists", "A new state was to be created where a database already is (init and rebuild check this "
                           "first; seeing it means another process created one meanwhile).",
           "Run `anvil status`; start over only with `anvil init --force --yes`."),
    _state("database_missing", "`state.db` is missing but `events.jsonl` holds the event log; anvil never starts a "
                               "new database beside an existing log.",
           "`anvil rebuild --yes` rebuilds the database from the log; `anvil init --force --yes` sets both aside "
           "and starts over."),
    _state("database_driver_missing", "`ANVIL_DATABASE_URL` names a PostgreSQL database, but the PostgreSQL driver "
                                      "(psycopg 3) is not installed.",
           "`pip install 'anvil[postgres]'`, or unset `ANVIL_DATABASE_URL` to use the embedded SQLite state."),
    _state("state_dir_unwritable", "The state directory cannot be created or written: no permission (a container "
                                   "user that does not own the volume), or a read-only volume.",
           "Make the directory writable for the user anvil runs as, or point `ANVIL_HOME` (or `ANVIL_ROOT` with "
           "`ANVIL_STATE_LAYOUT=local`) at a writable place."),
    _state("disk_full", "The disk holding the state database is full; the write was rolled back.",
           "Free space on that disk and repeat the call; `anvil verify` confirms the state.", transient=True),
    _state("state_read_only", "The state database cannot be written (a read-only file or file system).",
           "Make the state directory writable again and repeat the call; reads keep working meanwhile.",
           transient=True),
    _state("state_io_error", "The state database could not be read or written (an I/O error); nothing was written.",
           "Check the disk, then run `anvil verify`.", transient=True),
    _state("mirror_corrupt", "The last line of the event mirror `events.jsonl` beside the database is not an event.",
           "Run `anvil verify`; the database is the record, so moving the damaged `events.jsonl` aside lets anvil "
           "write it again from the database."),
    _state("mirror_unwritable", "The event mirror `events.jsonl` cannot take the write (disk full, an immutable or "
                                "read-only file, a directory in its place); nothing was committed.",
           "Fix the cause the message names (free space, `chattr -i`, move the directory away) and repeat the "
           "call; reads keep working meanwhile and `anvil verify` passes again once it is fixed."),
    _state("mirror_unreadable", "The event mirror `events.jsonl` cannot be read (permissions, a directory in its "
                                "place); writes are refused so nothing goes unmirrored.",
           "Fix the cause the message names and repeat the call; reads keep working meanwhile."),
    _state("database_unavailable", "The PostgreSQL database named by `ANVIL_DATABASE_URL` (or `anvil db copy`'s "
                                   "target) cannot be reached or refused the connection; the message names it "
                                   "without its password.",
           "Check that the server runs and accepts this user from this machine, and that the URL is right; put the "
           "password in PGPASSWORD or ~/.pgpass rather than in the URL.", transient=True),
    _state("mirror_ahead", "`events.jsonl` holds events the database lacks (the database was restored from an "
                           "older backup, or replaced).",
           "`anvil rebuild --yes` rebuilds the database from the log (the current database is kept as a backup)."),
    _state("log_chain_broken", "`anvil rebuild` refused: a line of `events.jsonl` does not continue the hash chain "
                               "(edited, truncated in the middle, or from another project); nothing was changed.",
           "The error names the first bad event (`details.first_bad_seq`); restore `events.jsonl` from a backup, "
           "or keep the current database (`anvil verify` says whether it is sound)."),
    # exit 9: busy (PostgreSQL: the advisory writer lock)
    ErrorCode("state_busy", Busy, "Another process held the project's writer lock (or the database) longer than "
                                  "`ANVIL_LOCK_TIMEOUT` seconds (default 30); nothing was written.",
              "Repeat the call (with the same `--idempotency-key` if you used one); if it keeps happening, look for "
              "a stuck anvil process, or raise `ANVIL_LOCK_TIMEOUT`."),
    ErrorCode("state_replaced", Busy, "The project's state was re-initialized or rebuilt while this call waited for "
                                      "the writer lock; nothing was written.",
              "Check `anvil status`, then repeat the call if it still applies."),
    _state("proof_replay_failed", "A signed proof or attestation in the event log no longer verifies against the trust "
                                  "list at that point of the log: the log or the trust list was changed outside "
                                  "anvil.",
           "Restore the state from a backup and run `anvil verify`; never edit the log by hand."),
    # exit 130: interrupted
    ErrorCode("interrupted", Interrupted, "The command was interrupted (Ctrl-C).",
              "Check with a read (`anvil status`) whether the change happened before repeating it."),
)


def catalogue_by_code() -> dict[str, ErrorCode]:
    """Every catalogued code, by its name."""
    return {entry.code: entry for entry in CATALOGUE}
