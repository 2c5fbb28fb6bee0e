"""The error catalogue is complete and only grows.

Every place under ``anvil/`` that builds an :class:`AnvilError` subclass is found by parsing the
source (so a code nobody has triggered in a test yet is still seen): the code must be a string
literal (or a conditional between literals), catalogued in :mod:`anvil.engine.error_codes`, and
raised with the class its entry records. A call that names no code raises the class's default
code, which must be catalogued the same way. ``from_wire`` rebuilds whatever class and code a
server sent; it is the one construction that names neither (it calls the class through a variable).

``error_codes_shipped.txt`` beside this file is every code anvil has shipped: a code in it may never
leave the catalogue (it is marked ``retired`` instead), and a new catalogued code is added to it.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from anvil.engine import errors
from anvil.engine.error_codes import CATALOGUE, EXIT_CODES, catalogue_by_code
from anvil.engine.errors import AnvilError, from_wire

PACKAGE = Path(__file__).resolve().parents[2] / "anvil"
SHIPPED = Path(__file__).with_name("error_codes_shipped.txt")
ERRORS_MODULE = PACKAGE / "engine" / "errors.py"
ERROR_CLASSES: dict[str, type[AnvilError]] = {
    name: value for name, value in vars(errors).items() if isinstance(value, type) and issubclass(value, AnvilError)}
CODE_FORM = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


@dataclass(frozen=True)
class Site:
    """One construction of an error class: where, which class, and its codes (None: not literal)."""

    where: str
    error: type[AnvilError]
    codes: tuple[str, ...] | None


def _literal_codes(node: ast.expr) -> tuple[str, ...] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if isinstance(node, ast.IfExp):
        body, orelse = _literal_codes(node.body), _literal_codes(node.orelse)
        return body + orelse if body is not None and orelse is not None else None
    return None


def _local_class_names(tree: ast.AST) -> dict[str, type[AnvilError]]:
    """The names an error class is known by in a module: its own, and any ``import ... as`` alias."""
    names = dict(ERROR_CLASSES)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "anvil.engine.errors":
            for alias in node.names:
                if alias.name in ERROR_CLASSES and alias.asname:
                    names[alias.asname] = ERROR_CLASSES[alias.name]
    return names


def error_sites(source: str, filename: str) -> list[Site]:
    """Every call of an error class in ``source``, with the codes it can carry."""
    tree = ast.parse(source, filename)
    names = _local_class_names(tree)
    sites: list[Site] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        error = names.get(name or "")
        if error is None:
            continue
        given = [k.value for k in node.keywords if k.arg == "code"]
        spread = any(k.arg is None for k in node.keywords)
        if given:
            codes = _literal_codes(given[0])
        else:
            codes = None if spread else (error.default_code,)
        sites.append(Site(f"{filename}:{node.lineno}", error, codes))
    return sites


@functools.cache
def all_sites() -> list[Site]:
    """Every error construction under ``anvil/`` (parsed once, when a test first asks)."""
    root = PACKAGE.parent
    return [site for path in sorted(PACKAGE.rglob("*.py"))
            for site in error_sites(path.read_text(encoding="utf-8"), str(path.relative_to(root)))]


def problems(sites: list[Site]) -> list[str]:
    """What is wrong with ``sites`` against the catalogue (empty when all is well)."""
    catalogue = catalogue_by_code()
    found: list[str] = []
    for site in sites:
        if site.error is AnvilError:
            found.append(f"{site.where}: raise a subclass of AnvilError, not AnvilError itself")
            continue
        if site.codes is None:
            found.append(f"{site.where}: pass code= as a string literal so the catalogue test can see it")
            continue
        for code in site.codes:
            entry = catalogue.get(code)
            if entry is None:
                found.append(f"{site.where}: code {code!r} is not in anvil/engine/error_codes.py")
            elif entry.error is not site.error:
                found.append(f"{site.where}: code {code!r} is raised as {site.error.__name__} (exit "
                             f"{site.error.exit_code}) but catalogued as {entry.error.__name__} (exit "
                             f"{entry.exit_code})")
    return found


def shipped_codes() -> list[str]:
    lines = SHIPPED.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_the_scan_finds_the_error_constructions_of_every_layer() -> None:
    layers = {site.where.split("/")[1] for site in all_sites()}
    assert layers == {"engine", "ops", "cli", "mcp"}, layers
    assert len(all_sites()) > 100


def test_every_code_raised_under_anvil_is_catalogued_with_the_class_it_is_raised_with() -> None:
    assert problems(all_sites()) == []


def test_the_check_refuses_an_uncatalogued_code_a_wrong_class_a_computed_code_and_a_bare_anvil_error() -> None:
    source = (
        "from anvil.engine.errors import AnvilError, NotFound, Refused as R, UsageError\n"
        "raise NotFound('x', code='task_not_found')\n"        # fine
        "raise R('x', code='brand_new_code')\n"               # not catalogued (found through the alias)
        "raise UsageError('x', code='task_not_found')\n"      # catalogued as NotFound (exit 6), raised as exit 2
        "raise UsageError('x', code=make_code())\n"           # not a literal
        "raise UsageError('x', code='usage' if a else 'made_up')\n"  # one branch not catalogued
        "raise R('x')\n"                                      # the default code 'refused' is not catalogued
        "raise AnvilError('x')\n"
    )
    found = problems(error_sites(source, "probe.py"))
    assert [line.split(":")[1] for line in found] == ["3", "4", "5", "6", "7", "8"], found
    assert "brand_new_code" in found[0] and "NotFound" in found[1] and "literal" in found[2]
    assert "made_up" in found[3] and "'refused'" in found[4] and "subclass" in found[5]


def test_every_catalogued_code_is_raised_somewhere_unless_retired() -> None:
    raised = {code for site in all_sites() for code in site.codes or ()}
    unraised = sorted(e.code for e in CATALOGUE if not e.retired and e.code not in raised)
    assert unraised == [], f"catalogued but never raised (mark them retired=True): {unraised}"
    revived = sorted(e.code for e in CATALOGUE if e.retired and e.code in raised)
    assert revived == [], f"raised again, so no longer retired: {revived}"


def test_a_shipped_code_never_leaves_the_catalogue() -> None:
    missing = sorted(set(shipped_codes()) - set(catalogue_by_code()))
    assert missing == [], f"shipped codes are a public interface; keep them catalogued (retired=True): {missing}"


def test_every_catalogued_code_is_recorded_as_shipped() -> None:
    unrecorded = sorted(set(catalogue_by_code()) - set(shipped_codes()))
    assert unrecorded == [], f"append these to tests/engine/{SHIPPED.name}: {unrecorded}"
    assert len(shipped_codes()) == len(set(shipped_codes())), "a code is listed twice"


def test_catalogue_entries_are_unique_well_formed_sentences() -> None:
    codes = [entry.code for entry in CATALOGUE]
    assert len(codes) == len(set(codes)), "a code is catalogued twice"
    for entry in CATALOGUE:
        assert CODE_FORM.match(entry.code), entry.code
        for text in (entry.meaning, entry.remedy):
            assert text.endswith(".") and 10 <= len(text) <= 300 and "  " not in text, (entry.code, text)


def test_every_error_class_has_its_exit_code_row_and_no_two_classes_share_one() -> None:
    rows = [row.exit_code for row in EXIT_CODES]
    assert len(rows) == len(set(rows)) and rows == sorted(rows)
    classes = [cls for cls in ERROR_CLASSES.values() if cls is not AnvilError]
    by_exit = {cls.exit_code for cls in classes}
    assert len(by_exit) == len(classes), "two error classes share an exit code"
    assert set(rows) == by_exit | {0}, "EXIT_CODES must have exactly one row per error class (and 0)"


def test_error_classes_are_defined_only_in_the_errors_module() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == ERRORS_MODULE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = _local_class_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}
                assert not bases & set(names), f"{path.name}: define {node.name} in anvil/engine/errors.py"


def test_every_catalogued_code_crosses_the_wire_as_the_same_class_and_exit_code() -> None:
    for entry in CATALOGUE:
        rebuilt = from_wire(entry.error("something went wrong", code=entry.code).to_wire(with_exit_code=True))
        assert (type(rebuilt), rebuilt.code, rebuilt.exit_code) == (entry.error, entry.code, entry.exit_code)
