"""The team board end to end in headless Chromium (Playwright driving the system browser): a real
``anvil serve --http`` process on a real project, a login with the token, every task on the page,
and a claim made through the CLI shown within two seconds."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from anvil.ops.invoke import invoke
from anvil.ops.scenarios import build_scenario
from tests.conftest import anvil_subprocess_env
from tests.external import BROWSER_HOWTO, chromium, require
from tests.mcp.support import TOKEN, ServerProcess, free_port, wait_for_port

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def playwright_installed() -> bool:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return True


@contextmanager
def board_page(env: dict[str, str], root: str, tmp_path: Path) -> Iterator[Any]:
    """A real ``anvil serve --http`` on the project, and a Chromium page logged in to its board."""
    browser_path = chromium()
    require(browser_path, "the system Chromium", BROWSER_HOWTO)
    require(playwright_installed(), "the Python playwright package", BROWSER_HOWTO)
    from playwright.sync_api import sync_playwright

    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen([sys.executable, "-m", "anvil", "serve", "--http", "--port", str(port),
                                    "--token-env", "BOARD_TOKEN"], env=env, cwd=root, stdout=sink,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = ServerProcess(process, port, log)
    try:
        wait_for_port(port, process=process)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=browser_path, args=CHROMIUM_FLAGS)
            try:
                page = browser.new_page()
                page.goto(f"http://127.0.0.1:{port}/board")
                page.fill("#token", TOKEN)
                page.click("#login-form button[type=submit]")
                page.wait_for_selector("#live[data-state=live]", timeout=10_000)
                yield page
            finally:
                browser.close()
    finally:
        output = server.stop()
    assert TOKEN not in output


def test_the_board_shows_the_projects_tasks_and_a_cli_claim_within_two_seconds(anvil_env: dict[str, str],
                                                                              tmp_path: Path) -> None:
    root = anvil_env["ANVIL_ROOT"]
    build_scenario("ready", anvil_env, root)
    task_ids = [row["id"] for row in invoke("list_tasks", {"limit": 1000}, env=anvil_env, cwd=root)["tasks"]]
    env = {**anvil_subprocess_env(anvil_env), "BOARD_TOKEN": TOKEN}
    with board_page(env, root, tmp_path) as page:
        shown = page.eval_on_selector_all("#columns [data-task]", "cards => cards.map(c => c.dataset.task)")
        assert sorted(shown) == sorted(task_ids)
        assert page.locator("#graph [data-node]").count() == len(task_ids)
        assert page.locator("[data-claim]").count() == 0
        # a ready task with dependencies not done waits in its own column, naming only what it waits on
        assert page.locator("[data-column=ready] [data-task=T001]").count() == 1
        assert page.locator("[data-column=waiting] [data-task=T003]").count() == 1
        assert "waits on T001, T002" in page.locator("[data-column=waiting] [data-task=T003] .meta").inner_text()
        assert page.locator("[data-column=ready] .count").inner_text() == "2"
        assert page.locator("#reviews li.hint").inner_text() == "nothing waiting"
        claim = subprocess.run([sys.executable, "-m", "anvil", "claim", "T002", "--actor", "agent-7", "--json"],
                               env=env, cwd=root, capture_output=True, text=True, timeout=60)
        claimed_at = time.monotonic()
        assert claim.returncode == 0, claim.stderr
        page.wait_for_selector("#claims [data-claim=T002]", timeout=5_000)
        elapsed = time.monotonic() - claimed_at
        row = page.locator("#claims [data-claim=T002]")
        assert row.locator(".owner").inner_text() == "agent-7"
        assert ":" in row.locator(".lease").inner_text()  # a running countdown (m:ss)
        assert page.locator("[data-column=claimed] [data-task=T002]").count() == 1
        (cookie,) = page.context.cookies()
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and TOKEN not in cookie["value"]
        assert TOKEN not in page.url and TOKEN not in page.content()
    assert elapsed < 2.0, f"the claim took {elapsed:.2f}s to appear"


def test_the_board_says_whether_anything_independent_proved_the_work_in_review(anvil_env: dict[str, str],
                                                                              tmp_path: Path) -> None:
    root = anvil_env["ANVIL_ROOT"]
    build_scenario("submitted", anvil_env, root)
    env = {**anvil_subprocess_env(anvil_env), "BOARD_TOKEN": TOKEN}
    with board_page(env, root, tmp_path) as page:
        badge = page.locator("[data-review=T001] .trust")
        assert badge.get_attribute("data-trust") == "client_reported"
        assert badge.inner_text() == "client-reported only"
        assert page.locator("#columns [data-task=T001][data-trust=client_reported] .trust").count() == 1
        assert page.locator("#columns [data-task=T002] .trust").count() == 0  # nothing submitted yet
