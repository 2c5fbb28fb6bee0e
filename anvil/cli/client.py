"""Commands that run on the caller's machine: ``anvil proof run``, ``anvil attest``, ``anvil keys generate``.

They are not operations: they run a command, read a checkout or make a key where the agent works,
and only read the claim through the routed backend (direct, stdio or a remote server), so the
artifacts they write bind to the claim wherever the state lives. The artifacts are then sent with
``anvil submit --proof FILE`` and ``anvil progress --attestation-file FILE``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from anvil.cli.app import completer, keyword, option, shared_option, with_signature
from anvil.engine.errors import Refused, UsageError
from anvil.engine.storage.paths import current_directory
from anvil.ops import cliflags as flags


@dataclass(slots=True)
class ClaimOptions:
    """What ``anvil proof run`` and ``anvil attest`` were given, and (once read) how to paste the next command."""

    task_id: str
    json: bool = False
    actor: str | None = None
    generation: int | None = None
    out: str | None = None
    key_file: str | None = None
    mcp: str | None = None
    mcp_token_env: str | None = None
    timeout: float = 3600.0
    argv: list[str] = field(default_factory=list)
    paste: Any = None


def register(app: typer.Typer, group: Callable[[str, str | None], typer.Typer], panel: str) -> None:
    """Add ``proof run``, ``attest`` and ``keys generate`` to ``app``."""
    claim_params = [
        keyword("task_id", typer.Argument(..., metavar="TASK_ID", help="The claimed task.", show_default=False,
                                          autocompletion=completer("task")), str),
        shared_option(flags.ACTOR, None, help="Who you are (default: ANVIL_ACTOR); must be the claim's owner."),
        keyword("generation", typer.Option(None, "--generation", metavar="N",
                                           help="The claim generation you hold (refused when stale)."), int | None),
        keyword("out", typer.Option(None, "--out", metavar="PATH", help="Where to write the artifact (default: "
                                    "under .anvil/proofs in the claim's tree).")),
        keyword("key_file", typer.Option(None, "--key-file", metavar="PATH", help="Sign with this Ed25519 key "
                                         "(default: ANVIL_SIGNING_KEY_FILE, or the PEM text in ANVIL_SIGNING_KEY; "
                                         "unsigned without either).")),
        *(shared_option(f) for f in flags.COMMON)]
    proof_run = with_signature(lambda **values: _run("proof", values), [
        *claim_params,
        keyword("timeout", typer.Option(3600.0, "--timeout", metavar="SECONDS",
                                        help="Stop the command after this many seconds."), float),
        keyword("argv", typer.Argument(None, metavar="-- CMD [ARGS...]", show_default=False,
                                       help="The command to prove, after --."), list[str] | None)])
    attest = with_signature(lambda **values: _run("attest", values), claim_params)
    group("proof", panel).command(
        name="run", help="Run a command in the claim's tree and write a command-proof artifact bound to the claim "
        "(exit code, duration, output digest and excerpt, exact argv). Send it with `anvil submit TASK --proof FILE`. "
        "Exits 5 when the command failed.", short_help="Run a verification command in the claim's tree; write a "
        "bound proof.", epilog="Example: anvil proof run T001 --generation 1 -- pytest -q")(proof_run)
    app.command(name="attest", rich_help_panel=panel, help="Write a progress attestation of the claim's work: the "
                "commit and the changed paths with their digests against the claim-start commit. Record it with "
                "`anvil progress TASK --attestation-file FILE`.",
                short_help="Write a progress attestation of the claim's commit and changed files.")(attest)

    @group("keys", panel).command(name="generate", help="Make an Ed25519 signing key: the private key goes to a "
                                  "file only you can read; the public key is printed for `anvil trust add`.")
    def keys_generate(
        out: str | None = typer.Option(None, "--out", metavar="PATH",
                                       help="Private key file (default: ~/.anvil/signing-key.pem)."),
        force: bool = typer.Option(False, "--force", help="Replace an existing key file."),
        json_: bool = option(flags.JSON),
    ) -> int:
        from anvil.cli.output import emit

        emit(_generate_key(out, force), json_, lambda result: _lines(result, "keys"))
        return 0


def _run(head: str, values: dict[str, Any]) -> int:
    renamed = {flags.JSON.param: "json", flags.MCP.param: "mcp", flags.MCP_TOKEN_ENV.param: "mcp_token_env"}
    options = ClaimOptions(**{renamed.get(k, k): v for k, v in values.items()})
    options.argv = list(options.argv or [])
    result = _proof(options, os.environ) if head == "proof" else _attest(options, os.environ)
    from anvil.cli.output import emit
    from anvil.cli.verifier import route_flags

    hint_flags = _actor_flag(options, os.environ) + route_flags(getattr(options.paste, "route", None))
    emit(result, options.json, lambda shown: _lines(shown, head, hint_flags))
    return 0 if result.get("passed", True) else 5


def _actor_flag(options: ClaimOptions, env: Mapping[str, str]) -> str:
    """`` --actor NAME`` for the hint when the actor was given as a flag (ANVIL_ACTOR or a token that
    says who needs none)."""
    actor = options.actor
    if env.get("ANVIL_ACTOR", "").strip() or not isinstance(actor, str) or not actor.isprintable() or " " in actor \
            or getattr(options.paste, "token_actor", None):
        return ""
    return f" --actor {actor}"


def _lines(result: dict[str, Any], head: str, hint_flags: str = "") -> list[str]:
    if head == "proof":
        signer = f", signed by {result['signed_by']}" if result.get("signed_by") else ""
        return [f"{'passed' if result.get('passed') else 'FAILED'}: {result.get('command')} (exit "
                f"{result.get('exit_code')}, {result.get('duration_ms')} ms)",
                f"proof written to {result.get('path')} (client_reported{signer}; only `anvil verify-task` by someone "
                "else makes it verified)",
                f"send it: anvil submit {result.get('task_id')}{hint_flags} "
                f"--generation {result.get('generation')} --proof {result.get('path')}"]
    if head == "attest":
        return [f"attestation of {result.get('changed_paths')} changed path(s) at commit "
                f"{str(result.get('commit'))[:12]} written to {result.get('path')}",
                f"record it: anvil progress {result.get('task_id')}{hint_flags} "
                f"--generation {result.get('generation')} --attestation-file {result.get('path')}"]
    return [f"private key written to {result.get('path')} (only you can read it)",
            f"key id {result.get('key_id')}", f"public key {result.get('public_key')}",
            f"trust it: anvil trust add {result.get('public_key')} --label NAME"]


def _claim(options: ClaimOptions, env: Mapping[str, str]) -> dict[str, Any]:
    """The live claim on the task, read through the routed backend, checked against the options."""
    from anvil.cli.backend import backend_for
    from anvil.cli.hints import Paste
    from anvil.cli.routing import resolve_route
    from anvil.engine.identity import name_key
    from anvil.ops.contract import spec_named

    route = resolve_route(options.mcp, options.mcp_token_env, env)
    backend = backend_for(route, env, current_directory(), fast=True)
    task = backend.invoke(spec_named("get_task"), {"task_id": options.task_id})
    options.paste = Paste(route, current_directory(), getattr(backend, "token_actor", None))
    claim = task.get("claim")
    if claim is None:
        raise Refused(f"task {task['id']} has no active claim: claim it first (`anvil claim {task['id']}`)",
                      code="no_active_claim")
    actor = options.actor or env.get("ANVIL_ACTOR", "").strip() or None
    if actor is not None and name_key(actor) != name_key(claim["claimed_by"]):
        raise Refused(f"task {task['id']} is claimed by another actor; only its owner can prove its work",
                      code="not_owner")
    if options.generation is not None and options.generation != claim["generation"]:
        raise Refused(f"generation {options.generation} is not the live claim on task {task['id']} (the live claim "
                      f"is generation {claim['generation']})", code="stale_generation")
    return claim


def _tree(claim: dict[str, Any]) -> tuple[Path, Path]:
    """The claim's tree, and where in it to work (the current directory when inside it).

    Raises:
        Refused: ``claim_tree_missing`` when the claim's worktree (or checkout) is gone.
    """
    meta = claim.get("git_metadata")
    if meta is None:
        here = Path(current_directory()).resolve()
        return here, here
    from anvil.engine.git.commits import claim_tree

    root = claim_tree(meta, claim["task_id"])
    try:
        here = Path.cwd().resolve()
    except OSError:  # the current directory was deleted (a removed worktree): work at the tree's root
        return root, root
    return root, here if here == root or root in here.parents else root



def _proof(options: ClaimOptions, env: Mapping[str, str]) -> dict[str, Any]:
    from anvil.cli.verifier import echo
    from anvil.engine.proof.making import make_proof, signing_key

    argv = options.argv
    if not argv:
        raise UsageError("name the command to prove after --: anvil proof run TASK -- CMD ARGS", code="usage")
    from anvil.cli.routing import resolve_route

    claim = _claim(options, env)
    root, cwd = _tree(claim)
    route = resolve_route(options.mcp, options.mcp_token_env, env)
    result = make_proof(claim, argv, root, cwd, timeout=options.timeout, env=env,
                        key=signing_key(options.key_file, env), out=_out(options), echo=None if options.json else echo,
                        token_env=route.token_env if route is not None else None)
    result.pop("output_excerpt")  # the terminal showed the whole output; the artifact keeps its tail
    return result


def _attest(options: ClaimOptions, env: Mapping[str, str]) -> dict[str, Any]:
    from anvil.engine.proof.making import make_attestation

    return make_attestation(_claim(options, env), key_file=options.key_file, env=env, out=_out(options))


def _out(options: ClaimOptions) -> Path | None:
    return Path(options.out).expanduser().resolve() if options.out else None


def _generate_key(out: str | None, force: bool) -> dict[str, Any]:
    from anvil.engine.proof.signing import generate, key_id, public_key_bytes

    path = Path(out).expanduser() if out else Path.home() / ".anvil" / "signing-key.pem"
    if path.exists() and not force:
        raise Refused(f"{str(path)[:200]} exists already: pass --force to replace it, or --out elsewhere",
                      code="key_exists")
    pem, public = generate()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.exists():
            path.unlink()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(pem)
    except OSError as exc:
        raise UsageError(f"cannot write the key to {str(path)[:200]} ({exc.strerror})",
                         code="artifact_not_written") from None
    return {"path": str(path), "key_id": key_id(public_key_bytes(public)), "public_key": public}

