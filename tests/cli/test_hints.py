"""Commands adapted for pasting after a call: route words, the actor a token names, the directory."""

from __future__ import annotations

from anvil.cli.hints import Paste, adapt_result, packet_markdown
from anvil.mcp.target import McpTarget

HTTP = McpTarget("http", "https://anvil.example/mcp", "AGENT_TOKEN")


def test_an_anvil_command_gets_the_route_before_the_proved_command_and_loses_the_actor_a_token_names() -> None:
    paste = Paste(HTTP, "/work", token_actor="agent-1")
    argv = ["anvil", "proof", "run", "T001", "--generation", "2", "--actor", "agent-1", "--", "pytest", "--actor"]
    assert paste.argv(argv) == ["anvil", "proof", "run", "T001", "--generation", "2", "--mcp",
                                "https://anvil.example/mcp", "--mcp-token-env", "AGENT_TOKEN", "--", "pytest",
                                "--actor"]
    assert paste.argv(["git", "commit", "-am", "T001: x"]) == ["git", "commit", "-am", "T001: x"]


def test_a_direct_call_adds_no_route_words_and_keeps_the_actor() -> None:
    paste = Paste(None, "/work")
    assert paste.argv(["anvil", "renew", "T001", "--actor", "a"]) == ["anvil", "renew", "T001", "--actor", "a"]
    assert Paste(McpTarget("stdio"), "/w").route_words() == ["--mcp", "stdio"]
    assert Paste(McpTarget("sse", "https://h/sse"), "/w").route_words() == ["--mcp", "sse:https://h/sse"]


def test_a_shell_line_adapts_each_anvil_command_and_keeps_comments_and_other_commands() -> None:
    paste = Paste(McpTarget("stdio"), "/work")
    line = "git add NEW_FILES && git commit -am 'T001: a; b'  # the branch head is handed in"
    assert paste.line(line) == line
    assert paste.line("anvil submit T001 --proof p.json") == "anvil submit T001 --proof p.json --mcp stdio"


def test_a_claim_continuation_gets_its_directory_and_route_and_the_packet_its_cd_line() -> None:
    paste = Paste(HTTP, "/agent/dir", token_actor="agent-1")
    steps = {"cd": None, "prove": [{"command": "pytest", "artifact": "a.json",
                                    "argv": ["anvil", "proof", "run", "T1", "--actor", "agent-1", "--", "pytest"]}],
             "submit": ["anvil", "submit", "T1", "--actor", "agent-1", "--proof", "a.json"],
             "renew": ["anvil", "renew", "T1"], "attest_progress": None, "commit": None, "unprovable": []}
    out = adapt_result("claim_task", {"id": "C1", "continuation": steps}, paste)["continuation"]
    assert out["cd"] == "/agent/dir" and "--actor" not in out["submit"] and out["submit"][-1] == "AGENT_TOKEN"
    assert out["prove"][0]["argv"][-2:] == ["--", "pytest"]
    markdown = "# T1\n\n## Next commands\n\n```bash\nanvil submit T1 --proof a.json\n```\n"
    assert packet_markdown(markdown, paste).split("\n")[5:7] == [
        "cd /agent/dir", "anvil submit T1 --proof a.json --mcp https://anvil.example/mcp --mcp-token-env AGENT_TOKEN"]
