"""Imports point down the layers, and the direct path stays light."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import anvil_subprocess_env

PACKAGE = Path(__file__).resolve().parents[1] / "anvil"
SURFACE_MODULES = ("typer", "rich", "mcp", "pydantic", "anvil.cli", "anvil.mcp", "anvil.ops", "starlette",
                   "uvicorn", "httpx", "httpx2")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted((PACKAGE / "engine").rglob("*.py")), ids=lambda p: p.name)
def test_the_engine_imports_no_surface(path: Path) -> None:
    bad = {m for m in imported_modules(path) if any(m == s or m.startswith(s + ".") for s in SURFACE_MODULES)}
    assert not bad, f"{path.name} imports {sorted(bad)}"


def test_the_ops_layer_imports_no_cli_or_mcp() -> None:
    for path in (PACKAGE / "ops").rglob("*.py"):
        bad = {m for m in imported_modules(path) if m.startswith(("anvil.cli", "anvil.mcp", "typer", "rich"))}
        assert not bad, f"{path.name} imports {sorted(bad)}"


PROBE = """
import json, sys
from anvil.cli.main import main
code = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.split('.')[0] in
               ('mcp', 'mcp_types', 'httpx', 'httpx2', 'starlette', 'uvicorn', 'pydantic', 'typer', 'rich'))
sys.stderr.write(json.dumps({"code": code, "heavy": heavy}))
"""


@pytest.mark.parametrize("args", [["status", "--json"], ["init", "--name", "x", "--json"], ["summary", "--json"]])
def test_the_direct_json_path_imports_no_mcp_http_or_heavy_libraries(anvil_env: dict[str, str],
                                                                       args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], env=anvil_subprocess_env(anvil_env),
                          capture_output=True, text=True, timeout=60)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report["heavy"] == [], report


def test_the_human_path_imports_no_mcp_or_http(anvil_env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, "status"], env=anvil_subprocess_env(anvil_env),
                          capture_output=True, text=True, timeout=60)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert not [m for m in report["heavy"] if m.split(".")[0] in ("mcp", "mcp_types", "httpx", "httpx2",
                                                                    "starlette", "uvicorn")], report
