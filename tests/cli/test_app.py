"""The Typer app: exactly the described commands."""

from __future__ import annotations


def test_describe_lists_every_command_and_tool(cli) -> None:  # type: ignore[no-untyped-def]
    from anvil.ops.registry import all_operations

    doc = cli("describe", "--json").json()
    assert doc["mcp"]["tools"] == sorted(op.name for op in all_operations())
    assert "serve" in doc["cli"]["commands"] and "status" in doc["cli"]["commands"]


def test_the_typer_app_has_exactly_the_described_commands(anvil_env, cli) -> None:  # type: ignore[no-untyped-def]
    import typer

    from anvil.cli.app import build_app

    def walk(command, prefix=()):  # type: ignore[no-untyped-def]
        for name, sub in getattr(command, "commands", {}).items():
            if getattr(sub, "commands", None):
                yield from walk(sub, (*prefix, name))
            else:
                yield " ".join((*prefix, name))

    commands = sorted(walk(typer.main.get_command(build_app(anvil_env))))
    assert commands == cli("describe", "--json").json()["cli"]["commands"]
