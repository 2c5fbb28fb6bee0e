"""The project's trust list: Ed25519 public keys whose signatures name who asserted a proof (a signed proof
stays client_reported: only an independent re-run makes a proof verified)."""

from __future__ import annotations

from pydantic import Field

from anvil.ops.registry import Example, MutatingInput, MutatingOutput, Operation, OpInput, OpOutput, register

H = "anvil.ops.handlers.trust"
EXAMPLE_KEY = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
KEY_ID = Field(min_length=1, max_length=80, description="The key id (ed25519:...), as `anvil trust list` shows it.")


class TrustAddInput(MutatingInput):
    public_key: str = Field(min_length=1, max_length=200, description="The Ed25519 public key, base64, as "
                                                                       "`anvil keys generate` prints it.")
    label: str | None = Field(default=None, max_length=200, description="Whose key it is (a CI runner, a person).")


class TrustAddOutput(MutatingOutput):
    key_id: str
    added: bool


register(Operation(
    name="add_trusted_key", description="Trust an Ed25519 key: proofs and attestations it signs are accepted "
                                        "naming it as their issuer (still client_reported). Recorded in the log.",
    input_model=TrustAddInput, output_model=TrustAddOutput, handler=f"{H}:add_trusted_key", surface="planning",
    effect="mutating", cli_path=("trust", "add"), positional=("public_key",), needs_caller=True,
    examples=(
        Example("trusts a CI runner's key", {"public_key": EXAMPLE_KEY, "label": "ci", "actor": "lead"}),
        Example("refuses a malformed key", {"public_key": "not-a-key", "actor": "lead"}, error="invalid_public_key"),
    ),
))


class TrustListInput(OpInput):
    all: bool = Field(default=False, description="Include keys that were removed.")


class TrustedKey(OpOutput):
    key_id: str
    public_key: str
    label: str | None
    added_by: str
    added_at: str
    removed_at: str | None
    removed_by: str | None


class TrustListOutput(OpOutput):
    keys: list[TrustedKey]
    count: int


register(Operation(
    name="list_trusted_keys", description="The keys on the project's trust list.",
    input_model=TrustListInput, output_model=TrustListOutput, handler=f"{H}:list_trusted_keys",
    surface="planning", effect="read", cli_path=("trust", "list"),
    examples=(Example("lists the trusted keys", {}, scenario="trusted"),),
))


class TrustRemoveInput(MutatingInput):
    key_id: str = KEY_ID


class TrustRemoveOutput(MutatingOutput):
    key_id: str
    removed: bool


register(Operation(
    name="remove_trusted_key", description="Stop trusting a key; what it signed before stays accepted.",
    input_model=TrustRemoveInput, output_model=TrustRemoveOutput, handler=f"{H}:remove_trusted_key",
    surface="planning", effect="mutating", cli_path=("trust", "remove"), positional=("key_id",), needs_caller=True,
    examples=(
        Example("stops trusting a key", {"key_id": "ed25519:630dcd2966c4336691125448bbb25b4f", "actor": "lead"},
                scenario="trusted"),
        Example("refuses a key that is not trusted", {"key_id": "ed25519:0000", "actor": "lead"},
                error="key_not_trusted"),
    ),
))
