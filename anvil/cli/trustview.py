"""How far a submission is proven, for people: its trust level in words a reviewer cannot miss.

``verified`` means an identity other than the implementer re-ran every contract command on the
submitted commit; ``client_reported`` means the only proofs are the implementer's own runs (signed
or not); ``unproven`` means no passing proof at all. Standard library only (the direct path).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anvil.cli.tables import Screen, paragraph, styled

TRUST_STYLE = {"verified": "green", "client_reported": "yellow", "unproven": "red"}
MEANING = {
    "verified": "an identity other than the implementer re-ran every contract command on this commit",
    "client_reported": "nothing independent proved this work: the proofs are the implementer's own runs",
    "unproven": "no passing proof of the contract's commands",
}


def short(commit: Any) -> str:
    return str(commit)[:12] if commit else "-"


def trust_text(level: str | None) -> str:
    """``VERIFIED: ...`` / ``CLIENT-REPORTED: ...``: the level and what it means."""
    if not level:
        return "-"
    return f"{level.upper().replace('_', '-')}: {MEANING.get(level, level)}"


def evidence_lines(evidence: Mapping[str, Any], task_id: str, screen: Screen) -> list[Any]:
    """The trust of a task's latest submission: its commit, its level, what approval requires, and
    each proof with who proved it."""
    out: list[Any] = []
    if evidence.get("commit_sha"):
        where = f" on {evidence['branch']}" if evidence.get("branch") else ""
        out.append(f"commit {short(evidence['commit_sha'])} (tree {short(evidence.get('tree_sha'))}){where}")
    trust = evidence.get("trust") or {}
    level = trust.get("trust_level")
    if level:
        out.append(styled(trust_text(level), "bold", TRUST_STYLE.get(level, "")))
        required = trust.get("required_trust")
        if required == "verified" and level != "verified":
            out.append(f"approval requires verified proofs: a verifier runs anvil verify-task {task_id}")
        elif required and level != "verified":
            out.append(f"approval accepts {required} proofs here (require_verified is off)")
        out += [f"REFUTED: `{failed['command']}` failed (exit {failed['exit_code']}) when {failed['verifier']} "
                "verified it" for failed in trust.get("failed_verifications") or []]
    proofs = []
    for proof in evidence.get("proofs") or []:
        mark = "pass" if proof["exit_code"] == 0 else f"FAIL {proof['exit_code']}"
        who = f"by {proof.get('proved_by') or '?'}"
        if proof["trust_mode"] == "verified":
            who += f" on {short(proof.get('commit_sha'))}"
        elif proof.get("issuer_id"):
            who += f", signed by {proof['issuer_id']}"
        proofs.append(f"{proof['trust_mode']:<15} {mark:<6} {proof['command']}  ({who})")
    return [*(p for text in out for p in paragraph(text, screen, "  ")),
            *(p for text in proofs for p in paragraph(text, screen, "    "))]


def decision_items(result: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A review decision's commit and the trust of what it decided on."""
    items: list[tuple[str, str]] = []
    if result.get("commit_sha"):
        items.append(("commit", short(result["commit_sha"])))
    level = result.get("trust_level")
    if level:
        items.append(("trust", trust_text(level)))
    return items


def submission_items(result: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A submission's commit and trust level (its proofs are the implementer's: client_reported at
    most), and how it becomes verified."""
    items: list[tuple[str, str]] = []
    if result.get("commit_sha"):
        items.append(("commit", short(result["commit_sha"])))
    if result.get("claim_ended"):
        level = "client_reported" if result.get("claim_bound_command_proofs") else "unproven"
        items.append(("trust", f"{level}: only someone else's anvil verify-task {result['task_id']} makes it "
                               "verified" if level == "client_reported" else level))
    return items
