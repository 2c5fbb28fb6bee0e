"""The coordinator's packet: the whole bundle in one brief, as markdown or JSON.

It names the coordinator claim and how to keep it, the policy, every member by serial stage
with its criteria, verification and files, what still blocks completion, and the review gate.
"""

from __future__ import annotations

from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.storage.connection import Connection
from anvil.engine.work.bundles import rows


def packet_data(conn: Connection, bundle_id: str) -> dict[str, Any]:
    """The packet's content.

    Raises:
        NotFound: no such bundle.
    """
    view = rows.detail(conn, bundle_id)
    blockers = {b["task_id"]: b["blockers"] for b in rows.readiness(conn, view["id"])}
    members = []
    for member in view["members"]:
        task = task_rows.get_task(conn, member["task_id"]) if member["status"] != "missing" else None
        members.append({**member, "priority": task["priority"] if task else None,
                        "acceptance_criteria": task["acceptance_criteria"] if task else [],
                        "verification": task["verification"] if task else [],
                        "likely_files": task["likely_files"] if task else [],
                        "dependencies": task["dependencies"] if task else [],
                        "blockers": blockers.get(member["task_id"], [])})
    return {"bundle_id": view["id"], "prd_id": view["prd_id"], "status": view["status"],
            "coordinator": view["coordinator"], "claim": view["claim"], "policy": view["policy"],
            "review_round": view["review_round"], "members": members, "ready": not blockers, "gate": view["gate"]}


def render_markdown(data: dict[str, Any]) -> str:
    """The packet as a markdown brief for the coordinator."""
    bundle_id, policy = data["bundle_id"], data["policy"]
    out = [f"# Bundle {bundle_id}", "",
           f"Status: {data['status']} · PRD {data['prd_id']} · coordinator {data['coordinator']} · review round "
           f"{data['review_round']}", ""]
    claim = data["claim"]
    if claim:
        out += ["## Coordinator claim", "",
                f"Held by {claim['claimed_by']} (claim {claim['id']}, generation {claim['generation']}) until "
                f"{claim['lease_expires_at']}. Renew with `anvil renew {bundle_id} --target-kind bundle --generation "
                f"{claim['generation']}`; pass --generation {claim['generation']} on bundle progress too.", ""]
    else:
        out += ["## Coordinator claim", "", f"None is live: `anvil bundle claim {bundle_id}` authorizes the members.",
                ""]
    out += ["## Policy", "",
            f"- at most {policy['max_tasks']} tasks in {policy['max_serial_stages']} serial stages",
            f"- review rounds: 1 plus {policy['max_rereviews']} re-review(s), at most {policy['max_reviews']} "
            "verdicts each",
            f"- required angles: {', '.join(policy['required_angles'])}; at least {rows.MIN_APPROVALS} independent "
            "approvals (nobody who coordinated or submitted evidence)", ""]
    for stage in sorted({m["stage"] for m in data["members"]}):
        out += [f"## Stage {stage}", ""]
        for member in (m for m in data["members"] if m["stage"] == stage):
            out += [f"### {member['task_id']}: {member['title'] or '?'} ({member['status']})", ""]
            for title, key in (("Acceptance criteria", "acceptance_criteria"), ("Verification", "verification"),
                               ("Likely files", "likely_files"), ("Blocking completion", "blockers")):
                items = member[key]
                if items:
                    shown = [f"`{item}`" for item in items] if key == "verification" else items
                    out += [f"{title}:", *[f"- {item}" for item in shown], ""]
    gate = data["gate"]
    out += ["## Review gate", "",
            f"Round {gate['round']}: approved angles {', '.join(gate['covered_angles']) or 'none'}; missing "
            f"{', '.join(gate['missing_angles']) or 'none'}; independent approvers "
            f"{', '.join(gate['independent_approvers']) or 'none'}; passed: {'yes' if gate['passed'] else 'no'}.", "",
            "## Finishing", "",
            "Claim and submit each member as usual (`anvil claim`, `anvil submit`); a member may start once the "
            "members it depends on have submitted evidence. When every member is complete: "
            f"`anvil bundle progress {bundle_id} --phase done --complete`. Independent reviewers then record "
            f"verdicts (`anvil bundle review`), and the gate is closed with `anvil bundle finalize {bundle_id}`."]
    return "\n".join(out).rstrip() + "\n"
