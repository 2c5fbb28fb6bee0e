"""Evidence contracts: what a task's evidence must prove before its work is approved, and how far.

A task's contract is
- its verification commands (the implicit claim): each needs a passing command proof for the
  submission (the evidence the claim ended with);
- the named claims its PRD declares (``**Claims:**``): each name holds when every command it lists
  has such a proof;
- the artifact assertions (``**Artifacts:**``): each path must be among the files the evidence
  reports changed, or the paths an accepted attestation of that claim showed changed.

A proof is ``client_reported`` (the implementer's own run, signed or not) or ``verified`` (an
identity other than the implementer re-ran the command on the submitted commit: ``anvil
verify-task``). For each command the latest verified outcome on the submitted commit counts: a
verifier's failing run refuses the command even when the implementer reported a pass.

Approval re-evaluates the contract from the recorded proofs at the trust level it requires:
``verified`` under the enforcing gate when the project requires verification (``anvil config
--require-verified``, on by default in a git mode), else ``client_reported`` (a verified proof
satisfies either). Named claims and artifacts always enforce; the verification commands enforce
while the project's evidence gate is ``enforcing`` (the default) and are recorded as gaps when it
is ``advisory``. See docs/prd-format.md and docs/agents.md.
"""

from __future__ import annotations

import _thread
import json
from typing import Any

from anvil.engine.proof.artifacts import CLIENT_REPORTED, VERIFIED, trust_level
from anvil.engine.storage.connection import Connection
from anvil.engine.work.continuation import normal_command

PROOF_COLUMNS = ("command", "exit_code", "trust_mode", "issuer_id", "proved_by", "proved_by_role",
                 "proved_by_authenticated", "commit_sha", "tree_sha", "seq")


def prd_contract(conn: Connection, task: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The named claims and artifact paths the task's PRD declares."""
    entry = _contracts(conn, task["prd_id"]).get(task["id"])
    return _copy(entry) if entry is not None else ([], [])


Contracts = dict[str, tuple[list[dict[str, Any]], list[str]]]
_CONTRACTS: dict[tuple[Any, ...], Contracts] = {}
"""Parsed contracts by the PRD revision they came from (its id, digests and the event that wrote its
document): reading and decoding a large PRD's document on every claim and submission was most of
their cost. A re-parse writes a new document at a new event, so a key never names two documents."""
_CONTRACTS_KEPT = 16
_CONTRACTS_GUARD = _thread.allocate_lock()


def prd_contracts(conn: Connection, prd_id: str) -> Contracts:
    """The named claims and artifact paths the PRD declares, for each of its tasks (a fresh copy)."""
    return {task_id: _copy(entry) for task_id, entry in _contracts(conn, prd_id).items()}


def _copy(entry: tuple[list[dict[str, Any]], list[str]]) -> tuple[list[dict[str, Any]], list[str]]:
    named, artifacts = entry
    return [{"name": c["name"], "commands": list(c["commands"])} for c in named], list(artifacts)


def contract_version_read(prd_id: str) -> tuple[str, tuple[str]]:
    """The statement that tells which document of the PRD the cached contracts must come from (for
    ``Store.read_ahead``)."""
    return "SELECT updated_seq, source_digest, material_digest FROM prds WHERE prd_id = ?", (prd_id,)


def _contracts(conn: Connection, prd_id: str) -> Contracts:
    """The cached contracts of the PRD's current document (shared: callers copy what they hand out)."""
    version = conn.execute(*contract_version_read(prd_id)).fetchone()
    key = (prd_id, *version) if version else None
    found = _CONTRACTS.get(key) if key else None
    if found is not None:
        return found
    row = conn.execute("SELECT document FROM prds WHERE prd_id = ?", (prd_id,)).fetchone()
    specs = json.loads(row[0]).get("tasks", []) if row else []
    found = {spec.get("id"): ([{"name": c["name"], "commands": list(c["commands"])} for c in spec.get("claims") or []],
                              list(spec.get("artifacts") or [])) for spec in specs}
    if key:
        with _CONTRACTS_GUARD:
            while len(_CONTRACTS) >= _CONTRACTS_KEPT:
                _CONTRACTS.pop(next(iter(_CONTRACTS)))
            _CONTRACTS[key] = found
    return found


def contract_commands(task: dict[str, Any], claims: list[dict[str, Any]]) -> list[str]:
    """Every command the contract needs proven: the verification commands, then the named claims'
    commands not among them (one spelling each, in order)."""
    out: list[str] = []
    seen: set[str] = set()
    for command in [*task["verification"], *(c for claim in claims for c in claim["commands"])]:
        if normal_command(command) not in seen:
            seen.add(normal_command(command))
            out.append(command)
    return out


def proofs_of(conn: Connection, evidence_id: str) -> list[dict[str, Any]]:
    """The proofs recorded for a submission, oldest first, each with its trust level and who proved it."""
    rows = conn.execute(f"SELECT {', '.join(PROOF_COLUMNS)} FROM command_proofs WHERE evidence_id = ? ORDER BY seq, "
                        "digest", (evidence_id,)).fetchall()
    out = []
    for row in rows:
        proof = dict(zip(PROOF_COLUMNS, row, strict=True))
        proof["trust_mode"] = trust_level(proof["trust_mode"])
        proof["proved_by_authenticated"] = bool(proof["proved_by_authenticated"])
        out.append(proof)
    return out


def evaluate(conn: Connection, task: dict[str, Any], evidence_id: str, *,
             required_trust: str = CLIENT_REPORTED) -> dict[str, Any]:
    """How far the evidence ``evidence_id`` proves ``task``'s contract at ``required_trust``.

    ``gaps`` lists every unproven item as text; ``enforced_gaps`` those that refuse approval
    whatever the evidence gate (named claims, artifacts); ``command_gaps`` the verification
    commands without a passing proof of the required trust. ``trust_level`` says what the proofs
    amount to: ``verified`` (every contract command verified on the submitted commit),
    ``client_reported`` or ``unproven``.
    """
    proofs = proofs_of(conn, evidence_id)
    row = conn.execute("SELECT files_changed, claim_id, commit_sha FROM evidence WHERE id = ?",
                       (evidence_id,)).fetchone()
    changed = set(json.loads(row[0])) if row else set()
    commit = row[2] if row else None
    if row and row[1]:
        for (paths,) in conn.execute("SELECT changed_paths FROM attestations WHERE claim_id = ?", (row[1],)):
            changed.update(p["path"] for p in json.loads(paths))
    reported, verified, refuted = _outcomes(proofs, commit)
    proven = verified if required_trust == VERIFIED else (reported | verified) - set(refuted)
    claims, artifacts = prd_contract(conn, task)
    commands = contract_commands(task, claims)
    missing_commands = [c for c in task["verification"] if normal_command(c) not in proven]
    named = [{"name": c["name"], "commands": c["commands"],
              "missing": [x for x in c["commands"] if normal_command(x) not in proven]} for c in claims]
    missing_artifacts = [path for path in artifacts if path not in changed]
    gap = _gap_text(required_trust, commit, refuted, reported)
    enforced = [f"claim {c['name']}: {gap(m)}" for c in named for m in c["missing"]]
    enforced += [f"artifact {path}: not among the changed files" for path in missing_artifacts]
    command_gaps = [gap(c) for c in missing_commands]
    level = _level(commands, reported, verified)
    return {"required_commands": list(task["verification"]), "contract_commands": commands,
            "proven_commands": sorted(proven), "proof_count": len(proofs), "named_claims": named,
            "artifacts": artifacts, "missing_artifacts": missing_artifacts, "command_gaps": command_gaps,
            "enforced_gaps": enforced, "gaps": command_gaps + enforced, "changed_files": sorted(changed),
            "required_trust": required_trust,
            "trust_level": level, "commit_sha": commit, "verified_commands": sorted(verified),
            "client_reported_commands": sorted(reported - verified),
            "failed_verifications": [{"command": p["command"], "exit_code": p["exit_code"], "verifier": p["proved_by"]}
                                     for p in refuted.values()],
            "client_reported": sum(1 for p in proofs if p["trust_mode"] == CLIENT_REPORTED)}


def _outcomes(proofs: list[dict[str, Any]], commit: str | None
              ) -> tuple[set[str], set[str], dict[str, dict[str, Any]]]:
    """The commands with a client-reported pass, the commands whose latest verified outcome on
    ``commit`` passed, and those whose latest verified outcome failed (with that proof)."""
    reported = {normal_command(p["command"]) for p in proofs if p["trust_mode"] == CLIENT_REPORTED
                and p["exit_code"] == 0}
    latest: dict[str, dict[str, Any]] = {}  # the latest verified outcome of each command on the commit
    for proof in proofs:
        if proof["trust_mode"] == VERIFIED and commit is not None and proof["commit_sha"] == commit:
            latest[normal_command(proof["command"])] = proof
    verified = {c for c, p in latest.items() if p["exit_code"] == 0}
    refuted = {c: p for c, p in latest.items() if p["exit_code"] != 0}
    return reported, verified, refuted


def _level(commands: list[str], reported: set[str], verified: set[str]) -> str:
    """verified (every contract command), client_reported (some passing proof) or unproven."""
    if commands and all(normal_command(c) in verified for c in commands):
        return VERIFIED
    return CLIENT_REPORTED if reported | verified else "unproven"


def trust_levels(conn: Connection, tasks: list[dict[str, Any]]) -> dict[str, str]:
    """The trust level of each task's latest submission (tasks without one are left out), read in a
    few queries whatever the number of tasks (the board shows one per task)."""
    latest: dict[str, tuple[str, str | None]] = {}
    ids = [t["id"] for t in tasks]
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        for task_id, evidence_id, commit in conn.execute(
                f"SELECT task_id, id, commit_sha FROM evidence WHERE task_id IN ({','.join('?' * len(chunk))}) "
                "ORDER BY seq", chunk):
            latest[task_id] = (evidence_id, commit)
    proofs: dict[str, list[dict[str, Any]]] = {}
    evidence_ids = [e for e, _ in latest.values()]
    for start in range(0, len(evidence_ids), 500):
        chunk = evidence_ids[start:start + 500]
        for evidence_id, command, exit_code, trust, commit in conn.execute(
                "SELECT evidence_id, command, exit_code, trust_mode, commit_sha FROM command_proofs WHERE evidence_id "
                f"IN ({','.join('?' * len(chunk))}) ORDER BY seq, digest", chunk):
            proofs.setdefault(evidence_id, []).append({"command": command, "exit_code": exit_code,
                                                       "trust_mode": trust_level(trust), "commit_sha": commit})
    contracts: dict[str, dict[str, tuple[list[dict[str, Any]], list[str]]]] = {}
    out: dict[str, str] = {}
    for task in tasks:
        if task["id"] not in latest:
            continue
        if task["prd_id"] not in contracts:
            contracts[task["prd_id"]] = prd_contracts(conn, task["prd_id"])
        evidence_id, commit = latest[task["id"]]
        reported, verified, _ = _outcomes(proofs.get(evidence_id, []), commit)
        claims = contracts[task["prd_id"]].get(task["id"], ([], []))[0]
        out[task["id"]] = _level(contract_commands(task, claims), reported, verified)
    return out


def _gap_text(required: str, commit: str | None, refuted: dict[str, dict[str, Any]], reported: set[str]) -> Any:
    """What is missing about one command, in words that name the trust level required."""
    def gap(command: str) -> str:
        key = normal_command(command)
        if key in refuted:
            proof = refuted[key]
            return (f"`{command}` failed (exit {proof['exit_code']}) when {proof['proved_by']} verified commit "
                    f"{str(commit)[:12]}")
        if required != VERIFIED:
            return f"no passing proof of `{command}`"
        if commit is None:
            return f"no verified proof of `{command}`: the submission names no commit to verify"
        if key in reported:
            return f"`{command}` is only client_reported: no verified passing proof on commit {commit[:12]}"
        return f"no verified passing proof of `{command}` on commit {commit[:12]}"

    return gap


def required_trust(config: dict[str, Any], enforcing: bool) -> str:
    """The trust level approval needs: ``verified`` under an enforcing gate when the project requires
    verification (``require_verified`` on, or auto with a git mode), else ``client_reported``."""
    return VERIFIED if enforcing and verification_required(config) else CLIENT_REPORTED


def verification_required(config: dict[str, Any]) -> bool:
    """Whether the project requires verified proofs (``require_verified``: on, off, or auto, which is
    on exactly when claims have a git mode)."""
    setting = config.get("require_verified") or "auto"
    if setting == "auto":
        return (config.get("git_mode") or "off") != "off"
    return bool(setting == "on")
