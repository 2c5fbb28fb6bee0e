"""Making a command proof or a progress attestation on the implementer's machine: run or read, sign when
a key is configured, write.

``anvil proof run`` (the CLI) and the ``prove_command`` tool of a local (stdio) server both make
proofs here, so a proof is made one way whichever asked: the runner of
:func:`anvil.engine.proof.runner.run_proof` (argv only, its own process group, stdin closed, a
timeout, bounded output, the signing key kept out), then the artifact at the path the claim's
continuation names (:func:`anvil.engine.work.continuation.proof_file`), which git ignores.
``anvil attest`` makes its attestation of a claim's changed files here the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from anvil.engine.errors import Refused, UsageError


def signing_key(path: str | None, env: Mapping[str, str]) -> str | None:
    """The PEM text of the signing key: the file ``path`` (or ``ANVIL_SIGNING_KEY_FILE``), else the
    text in ``ANVIL_SIGNING_KEY``; None to leave the artifact unsigned.

    Raises:
        Refused: ``signing_key_exposed`` (others can read the file).
        UsageError: ``invalid_signing_key`` (it cannot be read).
    """
    from anvil.engine.localread import FileTooLarge, NotRegularFile, read_regular_file

    path = path or env.get("ANVIL_SIGNING_KEY_FILE")
    if path:
        try:
            info = os.stat(path)
            if info.st_mode & 0o077:
                raise Refused(f"the signing key {path[:200]} can be read by others: chmod 600 it",
                              code="signing_key_exposed")
            return read_regular_file(path, 1 << 16).decode("ascii")
        except (OSError, ValueError, NotRegularFile, FileTooLarge):
            raise UsageError(f"the signing key file {path[:200]} cannot be read", code="invalid_signing_key") from None
    return env.get("ANVIL_SIGNING_KEY") or None


def write_artifact(kind: str, body: dict[str, Any], key: str | None, path: Path, default_dir: Path
                   ) -> tuple[Path, str, str | None]:
    """Sign ``body`` with ``key`` (PEM, or None: unsigned) and write the artifact to ``path``; a file
    in ``default_dir`` (the claim tree's proof directory) gets a ``.gitignore`` of ``*`` beside it.
    Returns the path, the body's digest and the signer.

    Raises:
        UsageError: ``artifact_not_written``.
    """
    from anvil.engine.proof.artifacts import envelope
    from anvil.engine.storage.canonical import canonical_json, sha256_hex

    signature = None
    if key is not None:
        from anvil.engine.proof.signing import sign_body

        body, signature = sign_body(key, kind, body)
    else:
        body = {**body, "signer": None}
    data = envelope(kind, body, signature)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        ignore = default_dir / ".gitignore"
        if path.parent == default_dir and not ignore.exists():
            ignore.write_text("*\n")  # proofs are not part of the work; git never offers them
        path.write_bytes(data)
    except OSError as exc:
        raise UsageError(f"cannot write the artifact to {str(path)[:200]} ({exc.strerror})",
                         code="artifact_not_written") from None
    return path, sha256_hex(canonical_json(body)), body["signer"]


def make_proof(claim: dict[str, Any], argv: list[str], root: Path, cwd: Path, *, timeout: float,
               env: Mapping[str, str], key: str | None, out: Path | None = None,
               echo: Callable[[bytes], None] | None = None, token_env: str | None = None) -> dict[str, Any]:
    """Run ``argv`` in ``cwd`` (inside the claim's tree ``root``) as a proof bound to ``claim`` (a claim
    as operations return it) and write the artifact; returns what ``anvil proof run --json`` prints.
    The command's environment leaves anvil's variables, known secrets and the variable ``token_env``
    out, and the signing key's text is redacted from its output (see the runner).

    Raises:
        UsageError: ``command_not_found``, ``artifact_not_written``.
    """
    from anvil.engine.proof.artifacts import CLIENT_REPORTED, PROOF
    from anvil.engine.proof.runner import run_proof
    from anvil.engine.work.continuation import PROOF_DIR, proof_file

    body = run_proof(claim, argv, cwd, timeout=timeout, echo=echo, env=env, token_env=token_env,
                     secrets_=[key] if key else [])
    command, code = body["command"], body["exit_code"]
    default = root / proof_file(claim["task_id"], claim["generation"], command)
    path, digest, signer = write_artifact(PROOF, body, key, out or default, root / PROOF_DIR)
    return {"path": str(path), "digest": digest, "task_id": claim["task_id"], "claim_id": claim["id"],
            "generation": claim["generation"], "command": command, "argv": argv, "cwd": str(cwd), "exit_code": code,
            "duration_ms": body["duration_ms"], "output_sha256": body["output_sha256"],
            "output_bytes": body["output_bytes"], "output_excerpt": body["output_excerpt"],
            "trust_mode": CLIENT_REPORTED, "signed_by": signer, "passed": code == 0}


def make_attestation(claim: dict[str, Any], *, key_file: str | None, env: Mapping[str, str],
                     out: Path | None = None) -> dict[str, Any]:
    """Attest the work of ``claim`` (a claim as operations return it): the commit of its tree and every
    path changed since the claim-start commit, with its digest then and now; the artifact is signed
    when a key is configured (:func:`signing_key` of ``key_file``) and written to ``out`` (default: the
    tree's proof directory). Returns what ``anvil attest --json`` prints.

    Raises:
        Refused: ``attestation_unbound`` (the claim has no git binding), ``claim_branch_mismatch`` (the
            tree is not on the claim branch grown from the claim-start commit), ``git_unreadable``,
            or a signing-key refusal.
        UsageError: ``artifact_not_written``, ``invalid_signing_key``.
    """
    import hashlib

    from anvil.engine.git.checkout import blob_digests
    from anvil.engine.git.command import GitError, git
    from anvil.engine.git.commits import claim_tree, is_ancestor
    from anvil.engine.proof.artifacts import ATTESTATION, CLIENT_REPORTED
    from anvil.engine.proof.runner import binding
    from anvil.engine.storage.store import format_ts, system_clock
    from anvil.engine.work.continuation import PROOF_DIR

    meta = claim.get("git_metadata")
    if meta is None:
        raise Refused("the claim has no git binding, so there is nothing to attest: claim with --branch or "
                      "--worktree, or report progress with --notes", code="attestation_unbound")
    root = claim_tree(meta, claim["task_id"])
    start = meta["claim_start_sha"]
    try:
        head = git(["rev-parse", "HEAD"], root, read_only=True).strip()
        on = git(["rev-parse", "--abbrev-ref", "HEAD"], root, read_only=True).strip()
        if on != meta["branch"] or not is_ancestor(root, start, head):
            # Never credit this claim with commits that are not its own: only the claim branch, grown
            # from the commit the claim started at, is its work.
            raise Refused(f"the claim's tree is on {on[:120]}, not on the claim branch {meta['branch'][:120]} grown "
                          f"from the claim-start commit {start[:12]}: switch back (`git switch {meta['branch'][:120]}`)"
                          " and attest again", code="claim_branch_mismatch")
        tracked = git(["diff", "--name-only", "-z", start], root, read_only=True).split("\0")
        untracked = git(["ls-files", "--others", "--exclude-standard", "-z"], root, read_only=True).split("\0")
    except GitError as exc:
        raise Refused(f"git could not read the claim's tree: {exc.first_line}", code="git_unreadable") from None
    paths = sorted({p for p in tracked + untracked if p and not p.startswith(PROOF_DIR + "/")})
    baselines = blob_digests(str(root), [f"{start}:{p}" for p in paths])
    changed = []
    for name, baseline in zip(paths, baselines, strict=True):
        file = root / name
        current = hashlib.sha256(file.read_bytes()).hexdigest() if file.is_file() else None
        changed.append({"path": name, "baseline_sha256": baseline, "sha256": current})
    body = {**binding(claim), "claim_start_sha": start, "commit": head, "changed_paths": changed,
            "made_at": format_ts(system_clock())}
    default = root / PROOF_DIR / f"{claim['task_id'].lower()}-g{claim['generation']}-attestation.json"
    path, digest, signer = write_artifact(ATTESTATION, body, signing_key(key_file, env), out or default, default.parent)
    return {"path": str(path), "digest": digest, "task_id": claim["task_id"], "claim_id": claim["id"],
            "generation": claim["generation"], "commit": head, "claim_start_sha": start,
            "changed_paths": len(changed), "trust_mode": CLIENT_REPORTED, "signed_by": signer}
