"""Evidence contracts: what a task's evidence must prove before its work is approved.

A task's contract is
- its verification commands (the implicit claim): each needs a passing command proof bound to the
  claim the evidence ended;
- the named claims its PRD declares (``**Claims:**``): each name holds when every command it lists
  has such a proof;
- the artifact assertions (``**Artifacts:**``): each path must be among the files the evidence
  reports changed, or the paths an accepted attestation of that claim showed changed.

Approval re-evaluates the contract from the recorded proofs. Named claims and artifacts always
enforce; the verification commands enforce while the project's evidence gate is ``enforcing``
(the default) and are recorded as gaps when it is ``advisory``. See docs/prd-format.md.
"""

from __future__ import annotations

import json
from typing import Any

from anvil.engine.storage.connection import Connection
from anvil.engine.work.continuation import normal_command


def prd_contract(conn: Connection, task: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The named claims and artifact paths the task's PRD declares."""
    row = conn.execute("SELECT document FROM prds WHERE prd_id = ?", (task["prd_id"],)).fetchone()
    if row is None:
        return [], []
    for spec in json.loads(row[0]).get("tasks", []):
        if spec.get("id") == task["id"]:
            claims = [{"name": c["name"], "commands": list(c["commands"])} for c in spec.get("claims") or []]
            return claims, list(spec.get("artifacts") or [])
    return [], []


def evaluate(conn: Connection, task: dict[str, Any], evidence_id: str) -> dict[str, Any]:
    """How far the evidence ``evidence_id`` proves ``task``'s contract.

    ``gaps`` lists every unproven item as text; ``enforced_gaps`` those that refuse approval
    whatever the evidence gate (named claims, artifacts); ``command_gaps`` the verification
    commands without a passing proof.
    """
    proofs = conn.execute("SELECT command, exit_code, trust_mode FROM command_proofs WHERE evidence_id = ?",
                          (evidence_id,)).fetchall()
    proven = {normal_command(command) for command, exit_code, _ in proofs if exit_code == 0}
    row = conn.execute("SELECT files_changed, claim_id FROM evidence WHERE id = ?", (evidence_id,)).fetchone()
    changed = set(json.loads(row[0])) if row else set()
    if row and row[1]:
        for (paths,) in conn.execute("SELECT changed_paths FROM attestations WHERE claim_id = ?", (row[1],)):
            changed.update(p["path"] for p in json.loads(paths))
    missing_commands = [c for c in task["verification"] if normal_command(c) not in proven]
    claims, artifacts = prd_contract(conn, task)
    named = [{"name": c["name"], "commands": c["commands"],
              "missing": [x for x in c["commands"] if normal_command(x) not in proven]} for c in claims]
    missing_artifacts = [path for path in artifacts if path not in changed]
    enforced = [f"claim {c['name']}: no passing proof of `{m}`" for c in named for m in c["missing"]]
    enforced += [f"artifact {path}: not among the changed files" for path in missing_artifacts]
    command_gaps = [f"no passing proof of `{c}`" for c in missing_commands]
    return {"required_commands": list(task["verification"]), "proven_commands": sorted(proven),
            "proof_count": len(proofs), "named_claims": named, "artifacts": artifacts,
            "missing_artifacts": missing_artifacts, "command_gaps": command_gaps, "enforced_gaps": enforced,
            "gaps": command_gaps + enforced, "changed_files": sorted(changed),
            "self_attested": sum(1 for _, _, trust in proofs if trust == "claim_owner_self_attested")}
