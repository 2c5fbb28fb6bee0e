"""What the argparse front ends of the client-side commands share (proof, attest, keys, verify-task, land).

They word a usage error the way the rest of the CLI does (``usage``, exit 2, pointing at the help), and
declare the route flags once.
"""

from __future__ import annotations

import argparse

from anvil.engine.errors import UsageError


class ClientParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are anvil's ``usage`` error naming ``PROG --help``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Raises:
            UsageError: always, code ``usage``.
        """
        raise UsageError(f"{message} (see '{self.prog} --help')", code="usage")


def add_route_flags(parser: argparse.ArgumentParser, purpose: str) -> None:
    """``--mcp [TARGET]`` and ``--mcp-token-env NAME``; ``purpose`` words what the route is used for."""
    parser.add_argument("--mcp", nargs="?", const="stdio", metavar="TARGET", help=f"{purpose} through MCP.")
    parser.add_argument("--mcp-token-env", metavar="NAME", help="Variable holding the bearer token.")
