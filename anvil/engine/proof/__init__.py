"""Proven evidence: command proofs and progress attestations bound to a claim, optional Ed25519
signatures checked against the project's trust list, and the evidence contract approval enforces."""
