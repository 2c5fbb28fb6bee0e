"""Team access: per-agent bearer tokens for the HTTP server (issue, list, revoke)."""

from __future__ import annotations

from pydantic import Field

from anvil.engine.vocab import Role, TokenStatus
from anvil.ops.registry import (
    Example,
    MutatingInput,
    MutatingOutput,
    Operation,
    OpInput,
    OpOutput,
    Person,
    register,
)

H = "anvil.ops.handlers.team"
TOKEN_ID = Field(default=None, min_length=1, max_length=32, description="Only this token (its id, e.g. tk000042).")


class AddTokenInput(MutatingInput):
    name: Person = Field(description="Who the token stands for: the agent or person name it authenticates.")
    role: Role = Field(description="agent (its own claims), reviewer (+ reviews and verification), lead "
                                   "(everything) or runner (only reads, verifies and lands).")
    expires: str | None = Field(default=None, min_length=2, max_length=8,
                                description="Lifetime such as 90m, 12h, 30d or 2w (default: until revoked).")


class AddTokenOutput(MutatingOutput):
    token_id: str
    actor: str
    role: Role
    token: str | None  # shown once; null in a dry run and in an idempotent retry's answer
    created_at: str
    expires_at: str | None
    notice: str


register(Operation(
    name="add_token", description="Issue a bearer token that authenticates an agent or person with a role on the "
                                  "HTTP server. The token is shown once, in this result; only its digest is kept.",
    input_model=AddTokenInput, output_model=AddTokenOutput, handler=f"{H}:add_token", surface="planning",
    effect="mutating", cli_path=("token", "add"), positional=("name",), secret_fields=("token",),
    cli_help="Issues a token for NAME with --role agent, reviewer, lead or runner (and optionally --expires 30d). "
             "Give it to that agent through an environment variable and point `--mcp-token-env` at the variable. The "
             "token is printed once and never stored: if it is lost, revoke it and issue another.",
    examples=(
        Example("previews issuing a token (no token is made)", {"name": "agent-1", "role": "agent", "dry_run": True}),
        Example("refuses a malformed lifetime", {"name": "agent-1", "role": "agent", "expires": "soon"},
                error="invalid_duration"),
        Example("refuses a look-alike name", {"name": "\u0430gent-1", "role": "agent"}, error="invalid_actor"),
    ),
))


class ListTokensInput(OpInput):
    name: Person | None = Field(default=None, description="Only the tokens of this name.")
    all: bool = Field(default=False, description="Include revoked and expired tokens.")


class TokenInfo(OpOutput):
    token_id: str
    actor: str
    role: Role
    status: TokenStatus
    created_at: str
    created_by: str
    expires_at: str | None
    revoked_at: str | None
    revoked_by: str | None


class ListTokensOutput(OpOutput):
    tokens: list[TokenInfo]
    count: int


# The examples start from projects without tokens: issuing one switches an HTTP server to per-agent
# tokens, where the loopback proof's shared token no longer works (tests/ops/test_team.py and
# tests/mcp/test_team_http.py cover tokens in use).

register(Operation(
    name="list_tokens", description="The project's bearer tokens (ids, names, roles, status), newest first; never "
                                    "the tokens themselves. Call to audit access or before rotating.",
    input_model=ListTokensInput, output_model=ListTokensOutput, handler=f"{H}:list_tokens", surface="planning",
    effect="read", cli_path=("token", "list"),
    examples=(
        Example("lists the live tokens (none before the first is issued)", {}),
        Example("lists one name's tokens, revoked ones too", {"name": "agent-1", "all": True}),
    ),
))


class RevokeTokenInput(MutatingInput):
    name: Person = Field(description="Whose tokens to revoke.")
    token_id: str | None = TOKEN_ID


class RevokeTokenOutput(MutatingOutput):
    actor: str
    revoked: list[str]
    count: int


register(Operation(
    name="revoke_token", description="Revoke a name's bearer tokens (or one of them by id); the HTTP server refuses "
                                     "them from the next request on. A name holding none is left as it is.",
    input_model=RevokeTokenInput, output_model=RevokeTokenOutput, handler=f"{H}:revoke_token", surface="planning",
    effect="mutating", cli_path=("token", "revoke"), positional=("name",), cli_names={"token_id": "--id"},
    examples=(
        Example("revokes a name's tokens (here it holds none: nothing changes)", {"name": "agent-9"}),
        Example("fails for a token id the name does not hold", {"name": "agent-9", "token_id": "tk000001"},
                error="token_not_found"),
        Example("refuses a look-alike name", {"name": "\u0430gent-1"}, error="invalid_actor"),
    ),
))
