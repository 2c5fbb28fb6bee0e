"""Cheap loading of the MCP SDK for the server process.

``import mcp.server.lowlevel`` runs ``mcp/__init__.py`` and ``mcp/server/__init__.py`` first, and
those import the whole client stack and the high-level ``MCPServer`` (about 70 ms a process) that
the anvil server never uses. When nothing has imported ``mcp`` yet, :func:`load_server_sdk`
registers the two packages with their search path but defers running their ``__init__`` until
someone reads an attribute the initializer defines (``from mcp import Client`` still works: the
first such access runs the real initializer in place). Any failure falls back to a plain import.

Garbage collection is paused while the SDK builds its hundreds of pydantic models (it would
otherwise run dozens of full collections over objects that live for the whole process), and the
survivors are frozen out of later collections.
"""

from __future__ import annotations

import gc
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

FAST_IMPORT_ENV = "ANVIL_MCP_FAST_IMPORT"
_DEFERRED = ("mcp", "mcp.server")


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a burst of imports, then freeze what they built."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def _deferred_package(name: str, directory: str) -> types.ModuleType:
    """A package module whose ``__init__`` runs on the first read of a name it would define."""
    init_path = os.path.join(directory, "__init__.py")
    spec = importlib.machinery.ModuleSpec(name, None, origin=init_path, is_package=True)
    spec.submodule_search_locations = [directory]
    spec.has_location = True
    module = types.ModuleType(name)
    module.__spec__ = spec
    module.__path__ = [directory]
    module.__file__ = init_path
    module.__package__ = name

    def __getattr__(attr: str) -> Any:
        namespace = module.__dict__
        if attr.startswith("__") or namespace.pop("__getattr__", None) is None:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        with open(init_path, encoding="utf-8") as handle:
            code = compile(handle.read(), init_path, "exec")
        exec(code, namespace)  # the package's own initializer, run in its own namespace
        try:
            return namespace[attr]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}") from None

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module


def _fast_enabled() -> bool:
    return os.environ.get(FAST_IMPORT_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def load_server_sdk(extra: Sequence[str] = ()) -> None:
    """Import the SDK modules the anvil server uses (plus ``extra``), as cheaply as possible.

    Raises:
        ImportError: the SDK is not installed.
    """
    wanted = ("mcp.server.lowlevel.server", "mcp.server.context", "mcp.server.stdio", *extra)
    with collector_paused():
        if "mcp" not in sys.modules and _fast_enabled():
            spec = importlib.util.find_spec("mcp")
            locations = list(spec.submodule_search_locations or []) if spec is not None else []
            if locations:
                root = locations[0]
                for name in _DEFERRED:
                    directory = root if name == "mcp" else os.path.join(root, "server")
                    sys.modules[name] = _deferred_package(name, directory)
                sys.modules["mcp"].server = sys.modules["mcp.server"]  # type: ignore[attr-defined]
                try:
                    for module in wanted:
                        importlib.import_module(module)
                    return
                except Exception:
                    for name in [n for n in sys.modules if n == "mcp" or n.startswith("mcp.")]:
                        del sys.modules[name]
        for module in wanted:
            importlib.import_module(module)
