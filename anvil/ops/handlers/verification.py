"""Handler that records a verifier's outcomes (stdlib + engine only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anvil.engine.proof import verification
from anvil.ops.handlers.reporting import _artifacts as artifacts  # one reader of artifact files and base64
from anvil.ops.runtime import Context

if TYPE_CHECKING:
    from anvil.ops.inputs import VerifyTaskInput


def verify_task(ctx: Context, args: VerifyTaskInput) -> dict[str, Any]:
    results = artifacts(ctx, None, args["result_artifacts_base64"], "--result")
    request = verification.VerificationRequest(args["task_id"], ctx.caller, args["commit_sha"], args["tree_sha"],
                                               results, args["evidence_id"])
    return verification.record(ctx.write(), request)
