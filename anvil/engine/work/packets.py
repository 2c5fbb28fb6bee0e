"""Work packets: everything an agent needs to do one task, as markdown or JSON."""

from __future__ import annotations

import shlex
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.prd.lifecycle import get_prd
from anvil.engine.storage.connection import Connection
from anvil.engine.work.claims import active_claim
from anvil.engine.work.evidence import history


def packet_data(conn: Connection, task_id: str) -> dict[str, Any]:
    """The packet's content: intent, criteria, verification, constraints, open dependencies, claim.

    Raises:
        NotFound: no such task.
    """
    task = task_rows.get_task(conn, task_id)
    prd = get_prd(conn, task["prd_id"])
    document = prd["document"] if prd else {}
    feature = conn.execute("SELECT title, description FROM features WHERE prd_id = ? AND id = ?",
                           (task["prd_id"], task["feature_id"])).fetchone()
    open_deps = []
    for dep in task["dependencies"]:
        row = conn.execute("SELECT title, status FROM tasks WHERE id = ?", (dep,)).fetchone()
        if row is None or row[1] != "done":
            open_deps.append({"id": dep, "title": row[0] if row else None, "status": row[1] if row else "missing"})
    return {
        "task_id": task["id"], "title": task["title"], "status": task["status"], "priority": task["priority"],
        "review_tier": task_rows.review_tier(task["scores"]), "intent": task["description"],
        "feature": {"id": task["feature_id"], "title": feature[0], "description": feature[1]} if feature else None,
        "project": document.get("project_name"), "acceptance_criteria": task["acceptance_criteria"],
        "verification": task["verification"], "likely_files": task["likely_files"],
        "non_goals": document.get("non_goals", []), "open_dependencies": open_deps,
        "claim": active_claim(conn, task_id),
        "contract": _contract(conn, task),
        "history": history(conn, task_id),
    }


def _contract(conn: Connection, task: dict[str, Any]) -> dict[str, Any]:
    from anvil.engine.proof.contract import prd_contract

    claims, artifacts = prd_contract(conn, task)
    return {"verification": list(task["verification"]), "named_claims": claims, "artifacts": artifacts}


TRUST_WORDS = {"verified": "verified: an identity other than the implementer re-ran every contract command on "
                            "this commit",
               "client_reported": "client_reported: nothing independent proved this work (the implementer's own "
                                  "runs, signed or not)",
               "unproven": "unproven: no passing proof of the contract's commands"}


def _trust_section(data: dict[str, Any]) -> list[str]:
    """How far the latest submission is proven, and the trust level approval requires."""
    evidence = (data["history"]["evidence"] or [None])[0]
    trust = evidence.get("trust") if evidence else None
    if not trust:
        return []
    out = ["## Latest submission", "", f"Evidence {evidence['id']} by {evidence['actor']}"
           + (f" at commit `{evidence['commit_sha']}`" if evidence.get("commit_sha") else "") + ".", "",
           f"- trust: {TRUST_WORDS.get(trust['trust_level'], trust['trust_level'])}",
           f"- approval requires: {trust['required_trust']} proofs"
           + (f" (a verifier runs `anvil verify-task {data['task_id']}`)" if trust["required_trust"] == "verified"
              else "")]
    out += [f"- refuted: `{f['command']}` failed (exit {f['exit_code']}) when {f['verifier']} verified it"
            for f in trust.get("failed_verifications") or []]
    return [*out, ""]


def render_markdown(data: dict[str, Any]) -> str:
    """The packet as a markdown prompt."""
    claim = data["claim"]
    held = (f" by {claim['actor']} (claim {claim['id']}, generation {claim['generation']}, lease until "
            f"{claim['lease_expires_at']}: renew before then)") if claim else ""
    out = [f"# {data['task_id']}: {data['title']}", "",
           f"Status: {data['status']}{held} · priority: {data['priority']} · review tier: {data['review_tier']} "
           f"({task_rows.TIER_MEANINGS.get(data['review_tier'], 'see the README')})", ""]
    if data["feature"]:
        out += [f"## Feature {data['feature']['id']}: {data['feature']['title']}", "",
                data["feature"]["description"] or "", ""]
    if data["intent"]:
        out += ["## Intent", "", data["intent"], ""]
    sections = (("Acceptance criteria", data["acceptance_criteria"]),
                ("Likely files", data["likely_files"]), ("Non-goals", data["non_goals"]))
    for title, items in sections:
        if items:
            out += [f"## {title}", "", *[f"- {item}" for item in items], ""]
    if data["open_dependencies"]:
        out += ["## Open dependencies", "",
                *[f"- {d['id']}: {d['title'] or '?'} ({d['status']})" for d in data["open_dependencies"]], ""]
    rejections = [r for r in data["history"]["reviews"] if r["decision"] == "rejected"]
    if rejections:
        out += ["## Earlier reviews rejected this work", "",
                *[f"- {r['reviewed_at']} by {r['reviewer']}: {r['reason']}" for r in rejections], ""]
    contract = data["contract"]
    out += ["## Evidence contract", "", "Approval needs a passing proof of each verification command"
            + (", each named claim's commands" if contract["named_claims"] else "")
            + (" and a change to each artifact" if contract["artifacts"] else "") + ":", ""]
    out += [f"- `{command}`" for command in data["verification"]]
    out += [f"- claim {c['name']}: " + ", ".join(f"`{x}`" for x in c["commands"]) for c in contract["named_claims"]]
    out += [f"- artifact `{a}`" for a in contract["artifacts"]]
    out += [""]
    trust = _trust_section(data)
    if trust:
        out += ([""] if out[-1] else []) + trust
    if claim:
        if claim.get("branch"):
            where = f"worktree {claim['worktree_path']}" if claim.get("worktree_path") else "this checkout"
            out += [f"Work on branch `{claim['branch']}` in {where}.", ""]
        steps = claim.get("continuation") or {}
        lines = []
        if steps.get("commit"):  # first: the proofs then prove the commit that is handed in
            lines.append(f"git add NEW_FILES && {shlex.join(steps['commit'])}  # the branch head is handed in")
        lines += [shlex.join(p["argv"]) for p in steps.get("prove", [])]
        if steps.get("submit"):
            lines.append(shlex.join(steps["submit"]))
        if lines:
            out += ["## Next commands", "", "```bash", *([f"cd {shlex.quote(steps['cd'])}"] if steps.get("cd") else []),
                    *lines, "```", ""]
    return "\n".join(out).rstrip() + "\n"
