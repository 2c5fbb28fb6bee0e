"""``anvil serve``: the MCP server's own command line (:mod:`anvil.mcp.frontend`), listed in the CLI.

:func:`anvil.cli.main.main` hands every argument after ``serve`` to
:func:`anvil.mcp.frontend.main` before Typer is even loaded, so ``anvil serve`` and ``python -m
anvil.mcp`` accept the same options, print the same help and fail the same way. The Typer command
registered here puts ``serve`` in ``anvil --help`` and delegates the same way if it is ever reached.
"""

from __future__ import annotations

import typer


def register_serve(app: typer.Typer) -> None:
    """Add the ``serve`` command to ``app``."""

    @app.command(name="serve", add_help_option=False,
                 context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
                 help="Run anvil's MCP server: stdio by default, Streamable HTTP with --http (see "
                      "`anvil serve --help`).")
    def serve(ctx: typer.Context) -> int:
        from anvil.mcp.frontend import main

        return main(list(ctx.args), "anvil serve")


def register_client_commands(app: typer.Typer) -> None:
    """List ``proof run``, ``attest``, ``keys generate`` (:mod:`anvil.cli.client`) and ``verify-task``
    (:mod:`anvil.cli.verifier`) in ``anvil --help``; :func:`anvil.cli.main.main` hands them to their
    modules before Typer loads."""
    settings = {"allow_extra_args": True, "ignore_unknown_options": True}

    def passthrough(*head: str):  # type: ignore[no-untyped-def]
        def run(ctx: typer.Context) -> int:
            from anvil.cli.client import run_client_command

            return run_client_command([*head, *ctx.args], {})

        return run

    proof = typer.Typer(help="Prove a verification command: run it in the claim's tree, write a bound artifact.")
    proof.command(name="run", add_help_option=False, context_settings=settings,
                  help="Run a command in the claim's tree and write a command-proof artifact (see --help).")(
        passthrough("proof", "run"))
    keys = typer.Typer(help="Ed25519 signing keys for proofs and attestations.")
    keys.command(name="generate", add_help_option=False, context_settings=settings,
                 help="Make an Ed25519 signing key (private file 0600, public key printed).")(
        passthrough("keys", "generate"))
    app.add_typer(proof, name="proof")
    app.add_typer(keys, name="keys")
    app.command(name="attest", add_help_option=False, context_settings=settings,
                help="Write a progress attestation of the claim's work (commit, changed paths, digests).")(
        passthrough("attest"))

    def verify(ctx: typer.Context) -> int:
        from anvil.cli.verifier import run_verify

        return run_verify(list(ctx.args), {})

    app.command(name="verify-task", add_help_option=False, context_settings=settings,
                help="Re-prove a submission on its exact commit in a scratch worktree; record verified proofs.")(verify)

    def land(ctx: typer.Context) -> int:
        from anvil.cli.lander import run_land

        return run_land(list(ctx.args), {})

    app.command(name="land", add_help_option=False, context_settings=settings,
                help="Land approved work: merge onto the target in a scratch worktree, re-prove, fast-forward.")(land)
