"""The architecture holds: imports point down the layers, no cycles, SQL only in the engine, and the
direct path stays light."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import anvil_subprocess_env

PACKAGE = Path(__file__).resolve().parents[1] / "anvil"
SURFACE_MODULES = ("typer", "rich", "mcp", "pydantic", "anvil.cli", "anvil.mcp", "anvil.ops", "starlette",
                   "uvicorn", "httpx", "httpx2")
SQL = re.compile(r"\b(SELECT\b.+\bFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+TABLE)\b",
                 re.IGNORECASE | re.DOTALL)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for child in ast.walk(node))
    return skipped


def imported_modules(path: Path, *, runtime_only: bool = False) -> set[str]:
    """Every module ``path`` imports (anywhere in the file); with ``runtime_only``, not type-only ones."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree) if runtime_only else set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names.add(full if full in MODULES else node.module)
    return names


@pytest.mark.parametrize("path", sorted((PACKAGE / "engine").rglob("*.py")), ids=lambda p: module_name(p))
def test_the_engine_imports_no_surface(path: Path) -> None:
    bad = {m for m in imported_modules(path) if any(m == s or m.startswith(s + ".") for s in SURFACE_MODULES)}
    assert not bad, f"{path.name} imports {sorted(bad)}"


def test_the_ops_layer_imports_no_cli_or_mcp() -> None:
    for path in (PACKAGE / "ops").rglob("*.py"):
        bad = {m for m in imported_modules(path) if m.startswith(("anvil.cli", "anvil.mcp", "typer", "rich"))}
        assert not bad, f"{path.name} imports {sorted(bad)}"


def test_the_mcp_layer_never_imports_the_cli() -> None:
    for path in (PACKAGE / "mcp").rglob("*.py"):
        bad = {m for m in imported_modules(path) if m.startswith(("anvil.cli", "typer", "rich"))}
        assert not bad, f"{path.name} imports {sorted(bad)}"


def test_no_two_modules_import_each_other_even_indirectly() -> None:
    graph = {name: {m for m in imported_modules(path, runtime_only=True) if m in MODULES and m != name}
             for name, path in MODULES.items()}
    # A package's __init__ is not an edge target of its own submodules' imports of siblings.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    assert not cycles, f"import cycles: {cycles}"


def test_sql_lives_only_in_the_engine() -> None:
    for name, path in MODULES.items():
        if name.startswith("anvil.engine"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        texts = [node.value for node in ast.walk(tree)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str)]
        texts += [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)]
        found = [text for text in texts if SQL.search(text)]
        assert not found, f"{name} holds SQL: {found[0][:80]!r}"


DIALECT_MODULES = {
    "anvil.engine.storage.migrations": "SQLite DDL, translated for PostgreSQL by pgschema",
    "anvil.engine.storage.pgschema": "the PostgreSQL forms of the migrations",
}
"""Engine modules whose SQL is written for one backend on purpose (everything else runs on both)."""
SQLITE_ONLY = re.compile(
    r"\bINSERT\s+OR\b|\bREPLACE\s+INTO\b|\bPRAGMA\b|\bjson\w*\s*\(|->|\bGLOB\b|\browid\b|\bsqlite_\w+"
    r"|\b(strftime|julianday|datetime|date|time|unixepoch|ifnull|group_concat|instr|total|printf|iif|typeof"
    r"|randomblob|zeroblob|last_insert_rowid|changes|hex|anvil_name_key)\s*\("
    r"|\bLIMIT\s+-|\bCOLLATE\s+NOCASE\b|==|\bBEGIN\s+(IMMEDIATE|EXCLUSIVE|DEFERRED)\b|\b(MIN|MAX)\s*\([^()]*,"
    r"|(?<!\))\s+LIKE\b",
    re.IGNORECASE)
"""What SQLite accepts and PostgreSQL refuses or reads differently: upsert and JSON dialects, SQLite's own
functions (and the one anvil registers on SQLite connections), ``==``, two-argument ``MIN``/``MAX``, and
``LIKE`` on a bare column (case-insensitive on SQLite; compare ``UPPER(column) LIKE ?`` instead)."""


def sql_texts(path: Path) -> list[str]:
    """The SQL-looking string constants and f-strings of ``path`` (docstrings left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    texts = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and id(node) not in docstrings]
    texts += [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)]
    return [text for text in texts if is_sql(text)]


def is_sql(text: str) -> bool:
    """Whether ``text`` looks like an SQL statement (the statements SQLite alone accepts included)."""
    return bool(SQL.search(text) or re.search(r"\b(REPLACE\s+INTO|ON\s+CONFLICT)\b", text, re.IGNORECASE))


def test_engine_sql_runs_unchanged_on_sqlite_and_postgresql() -> None:
    found = [(name, match.group(0).strip(), text[:100]) for name, path in MODULES.items()
             if name.startswith("anvil.engine") and name not in DIALECT_MODULES
             for text in sql_texts(path) if (match := SQLITE_ONLY.search(text))]
    assert not found, f"SQLite-only SQL outside the dialect modules (see docs/architecture.md): {found}"


@pytest.mark.parametrize("statement", [
    "INSERT OR REPLACE INTO tasks (id) VALUES (?)", "REPLACE INTO tasks (id) VALUES (?)",
    "SELECT json_extract(payload, '$.claim_id') FROM events", "SELECT payload ->> 'x' FROM events",
    "SELECT id FROM tasks WHERE title GLOB ?", "SELECT rowid FROM tasks", "SELECT name FROM sqlite_master",
    "SELECT id FROM claims WHERE expires_at < datetime('now')", "SELECT IFNULL(x, 0) FROM tasks",
    "SELECT group_concat(id) FROM tasks", "SELECT id FROM tasks WHERE status == 'done'",
    "SELECT MAX(a, b) FROM tasks", "SELECT id FROM tasks LIMIT -1 OFFSET 2",
    "SELECT id FROM tasks WHERE title LIKE ?", "UPDATE claims SET actor_key = anvil_name_key(actor)",
    "SELECT id FROM tasks ORDER BY title COLLATE NOCASE",
])
def test_the_portable_sql_check_catches_sqlite_only_sql(statement: str) -> None:
    assert is_sql(statement) and SQLITE_ONLY.search(statement)


@pytest.mark.parametrize("statement", [
    "INSERT INTO tasks (id) VALUES (?) ON CONFLICT (id) DO UPDATE SET title = excluded.title",
    "SELECT COALESCE(MAX(seq), 0) FROM events", "SELECT DISTINCT id FROM tasks WHERE UPPER(id) LIKE ? ESCAPE '!'",
    "SELECT SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END) FROM tasks",
])
def test_the_portable_sql_check_accepts_portable_sql(statement: str) -> None:
    assert is_sql(statement) and not SQLITE_ONLY.search(statement)


def test_no_module_shadows_a_standard_library_module() -> None:
    shadowing = [name for name in MODULES if name.rsplit(".", 1)[-1] in sys.stdlib_module_names]
    assert not shadowing, shadowing


PROBE = """
import json, sys
from anvil.cli.main import main
code = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.split('.')[0] in
               ('mcp', 'mcp_types', 'httpx', 'httpx2', 'starlette', 'uvicorn', 'pydantic', 'typer', 'rich',
                'psycopg', 'psycopg_binary'))
sys.stderr.write(json.dumps({"code": code, "heavy": heavy}))
"""


@pytest.mark.parametrize("args", [["status", "--json"], ["init", "--name", "x", "--json"], ["summary", "--json"]])
def test_the_direct_json_path_imports_no_mcp_http_or_heavy_libraries(anvil_env: dict[str, str],
                                                                       args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], env=anvil_subprocess_env(anvil_env),
                          capture_output=True, text=True, timeout=60)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report["heavy"] == [], report


@pytest.mark.parametrize("args", [["status"], ["list"], ["show", "T001"], ["next"], ["packet", "T001"],
                                  ["claim-next", "--actor", "agent-2", "--dry-run"], ["config"]])
def test_the_human_path_imports_rich_but_no_typer_pydantic_mcp_or_http(anvil_env: dict[str, str],
                                                                        args: list[str]) -> None:
    """Piped human output loads Rich's console and tables only (markdown, live and progress load where
    a terminal needs them); a piped packet is the raw markdown and loads no Rich at all."""
    from anvil.ops.scenarios import build_scenario

    build_scenario("claimed", anvil_env, anvil_env["ANVIL_ROOT"])
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], env=anvil_subprocess_env(anvil_env),
                          capture_output=True, text=True, timeout=60)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    rich = {m for m in report["heavy"] if m.split(".")[0] == "rich"}
    assert report["code"] == 0 and set(report["heavy"]) == rich, report
    assert not rich & {"rich.markdown", "rich.live", "rich.progress", "rich.syntax"}, rich
    assert bool(rich) == (args[0] != "packet"), rich


def test_the_version_loads_nothing_but_the_entry_point(anvil_env: dict[str, str]) -> None:
    probe = ("import sys; from anvil.cli.main import main; main(['--version']); "
             "sys.stderr.write(' '.join(sorted(m for m in sys.modules if m.startswith('anvil'))))")
    proc = subprocess.run([sys.executable, "-c", probe], env=anvil_subprocess_env(anvil_env), capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.startswith("anvil ") and proc.stderr.split() == ["anvil", "anvil.cli", "anvil.cli.main"]
