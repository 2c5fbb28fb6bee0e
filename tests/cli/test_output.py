"""The CLI's error line: an error naming the command that fixes it repeats the call's route flags."""

from __future__ import annotations

from anvil.cli.output import error_line, route_flags
from anvil.engine.errors import Refused


def test_a_fix_named_by_an_error_carries_the_route_flags_of_the_call() -> None:
    error = Refused("unproven at the verified level", code="claim_unproven",
                    details={"next_command": ["anvil", "verify-task", "T001"]})
    routed = ["apply", "T001", "--approve", "--mcp", "https://anvil.example/mcp", "--mcp-token-env", "ANVIL_TOKEN"]
    assert error_line(error, routed) == ("anvil: error: unproven at the verified level (run: anvil verify-task T001 "
                                         "--mcp https://anvil.example/mcp --mcp-token-env ANVIL_TOKEN) "
                                         "[claim_unproven]")
    assert error_line(error, ["apply", "T001", "--approve"]) == error.line()  # direct: the message says it all
    assert route_flags(["show", "T1", "--mcp"]) == ["--mcp"] and route_flags(["--mcp=stdio", "--", "--mcp"]) == [
        "--mcp=stdio"]
