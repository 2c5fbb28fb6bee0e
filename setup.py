"""The build step that records which build this is (``anvil/_build.json``); metadata is in pyproject.toml.

The facts come from :mod:`anvil.ops.buildinfo`, loaded by path (it imports nothing of anvil), so the
build and the running program read them the same way.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _buildinfo():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("anvil_buildinfo", ROOT / "anvil" / "ops" / "buildinfo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildWithIdentity(build_py):
    """build_py that also writes ``anvil/_build.json`` into the built package (never into the source)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install runs from the checkout, which git describes live
        info = _buildinfo()
        target = Path(self.build_lib) / "anvil" / info.BUILD_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(info.bake(ROOT), sort_keys=True) + "\n", encoding="utf-8")


setup(cmdclass={"build_py": BuildWithIdentity})
