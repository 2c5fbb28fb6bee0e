"""The team board over HTTP: the page and its assets, token-for-cookie sessions under the /mcp token
rules (shared and per-agent), Host/Origin checks, live snapshots over server-sent events, and a
bounded number of streams per replica."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import pytest

from anvil.mcp.board import ASSETS, COOKIE, asset
from anvil.mcp.http_app import build_http_app
from anvil.mcp.server import build_server
from anvil.ops.invoke import invoke
from anvil.ops.registry import all_operations
from anvil.ops.scenarios import build_scenario
from tests.mcp.projects import build_project
from tests.mcp.support import TOKEN, ThreadedUvicorn

JSON = {"Content-Type": "application/json"}


@pytest.fixture
def project(anvil_env: dict[str, str]) -> dict[str, str]:
    """A project of the test's own (for tests that write: claims, tokens)."""
    build_scenario("submitted", anvil_env, anvil_env["ANVIL_ROOT"])
    return anvil_env


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One project for the tests that only read it."""
    return build_project(tmp_path_factory.mktemp("board"), "submitted")


def board_app(env: dict[str, str], token: str | None = TOKEN, **options: Any) -> Any:
    return build_http_app(build_server(all_operations()), token=token, state_env=env, state_cwd=env["ANVIL_ROOT"],
                          board_options=options or None)


@pytest.fixture
def serve(serve_app: Callable[[Any], ThreadedUvicorn]) -> Callable[..., str]:
    """Serve a board app; returns its base URL."""
    def start(app: Any) -> str:
        return f"http://127.0.0.1:{serve_app(app).port}"

    return start


def login(base: str, token: str, **headers: str) -> httpx2.Response:
    return httpx2.post(f"{base}/board/session", content=json.dumps({"token": token}), headers={**JSON, **headers},
                       timeout=10)


def state(base: str, cookie: str | None) -> httpx2.Response:
    return httpx2.get(f"{base}/board/api/state", cookies={COOKIE: cookie} if cookie else None, timeout=10)


# --- the page ------------------------------------------------------------------------------------


def test_the_page_and_its_assets_are_served_from_the_package_under_200_kb(shared: dict[str, str],
                                                                          serve: Callable[..., str]) -> None:
    base = serve(board_app(shared))
    page = httpx2.get(f"{base}/board", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    total = len(asset("board.html"))
    for name, media_type in ASSETS.items():
        served = httpx2.get(f"{base}/board/static/{name}", timeout=10)
        assert served.status_code == 200 and served.content == asset(name)
        assert served.headers["content-type"] == media_type and f"/board/static/{name}" in page.text
        total += len(served.content)
    assert total < 200_000
    assert "http://" not in page.text.replace("http://www.w3.org", "") and "https://" not in page.text  # no CDN
    assert httpx2.get(f"{base}/board/static/../http_app.py", timeout=10).status_code == 404


# --- sessions --------------------------------------------------------------------------------------


def test_the_data_needs_a_session_and_a_token_is_exchanged_once_for_an_httponly_strict_cookie(
        shared: dict[str, str], serve: Callable[..., str]) -> None:
    base = serve(board_app(shared))
    assert state(base, None).status_code == 401
    assert login(base, TOKEN + "-wrong").status_code == 401
    accepted = login(base, TOKEN)
    assert accepted.status_code == 200 and accepted.json()["viewer"]["mode"] == "shared"
    header = accepted.headers["set-cookie"]
    assert "HttpOnly" in header and "SameSite=strict" in header and "Path=/board" in header
    cookie = accepted.cookies[COOKIE]
    assert TOKEN not in cookie
    snapshot = state(base, cookie).json()
    assert [t["id"] for t in snapshot["tasks"]][:2] == ["T001", "T002"] and snapshot["initialized"] is True
    assert state(base, cookie[:-3] + "AAA").status_code == 401
    logout = httpx2.post(f"{base}/board/logout", timeout=10)
    assert logout.status_code == 204 and 'anvil_board=""' in logout.headers["set-cookie"]


@pytest.mark.parametrize("how", ["query", "form", "bearer"])
def test_a_token_outside_the_json_login_body_opens_nothing(how: str, shared: dict[str, str],
                                                            serve: Callable[..., str]) -> None:
    base = serve(board_app(shared))
    if how == "query":
        response = httpx2.get(f"{base}/board/api/state?token={TOKEN}", timeout=10)
    elif how == "form":
        response = httpx2.post(f"{base}/board/session", data={"token": TOKEN}, timeout=10)
    else:
        response = httpx2.get(f"{base}/board/api/state", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
    assert response.status_code in (401, 415) and "set-cookie" not in response.headers


def test_another_replica_with_the_same_configuration_accepts_the_session(shared: dict[str, str],
                                                                         serve: Callable[..., str]) -> None:
    first, second = serve(board_app(shared)), serve(board_app(shared))
    other_token = serve(board_app(shared, token=TOKEN + "-rotated"))
    cookie = login(first, TOKEN).cookies[COOKIE]
    assert state(second, cookie).status_code == 200
    assert state(other_token, cookie).status_code == 401


def test_per_agent_tokens_log_in_as_their_holder_and_a_revocation_ends_the_session(
        project: dict[str, str], serve: Callable[..., str], cli) -> None:  # type: ignore[no-untyped-def]
    issued = cli("token", "add", "agent-7", "--role", "agent", "--json").json()["token"]
    base = serve(board_app(project))
    assert login(base, TOKEN).status_code == 401  # the shared token no longer opens anything
    accepted = login(base, issued)
    assert accepted.json()["viewer"] == {"mode": "tokens", "actor": "agent-7", "role": "agent"}
    cookie = accepted.cookies[COOKIE]
    assert issued not in cookie and state(base, cookie).json()["viewer"]["actor"] == "agent-7"
    assert cli("token", "revoke", "agent-7", "--json").code == 0
    assert state(base, cookie).status_code == 401


def test_a_loopback_server_without_tokens_shows_the_board_without_a_login(anvil_env: dict[str, str],
                                                                          serve: Callable[..., str]) -> None:
    base = serve(board_app(anvil_env, token=None))
    response = state(base, None)
    assert response.status_code == 200 and response.json()["initialized"] is False
    assert response.json()["viewer"]["mode"] == "open"


def test_a_board_on_a_postgresql_database_without_a_project_shows_it_uninitialized(
        anvil_env: dict[str, str], pg_url: str, serve: Callable[..., str]) -> None:
    from anvil.ops.board import wait_for_change

    env = {**anvil_env, "ANVIL_DATABASE_URL": pg_url}
    base = serve(board_app(env, token=None))
    response = state(base, None)
    assert response.status_code == 200 and response.json()["initialized"] is False
    assert wait_for_change(env, env["ANVIL_ROOT"], 0, 0.05) == 0  # a live view waits there, too


def test_foreign_origins_and_hosts_are_refused(shared: dict[str, str], serve: Callable[..., str]) -> None:
    base = serve(board_app(shared))
    for headers, status in (({"Origin": "http://evil.example"}, 403), ({"Host": "evil.example"}, 421)):
        assert login(base, TOKEN, **headers).status_code == status
        assert httpx2.get(f"{base}/board", headers=headers, timeout=10).status_code == status
    assert login(base, TOKEN, Origin=base).status_code == 200  # the page's own origin


def test_the_mcp_endpoint_still_requires_its_bearer_token(shared: dict[str, str], serve: Callable[..., str]) -> None:
    base = serve(board_app(shared))
    cookie = login(base, TOKEN).cookies[COOKIE]
    answer = httpx2.post(f"{base}/mcp", content=b"{}", cookies={COOKIE: cookie},
                         headers={**JSON, "Accept": "application/json, text/event-stream"}, timeout=10)
    assert answer.status_code == 401  # a board session is no MCP credential


# --- live updates ----------------------------------------------------------------------------------


@contextmanager
def events(base: str, cookie: str | None) -> Iterator[Iterator[tuple[str, str]]]:
    """The (event, data) pairs of one board event stream."""
    with httpx2.stream("GET", f"{base}/board/api/events", cookies={COOKIE: cookie} if cookie else None,
                       timeout=httpx2.Timeout(10, read=10)) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")

        def read() -> Iterator[tuple[str, str]]:
            name, data = "message", []
            for line in response.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])
                elif line == "" and data:
                    yield name, "\n".join(data)
                    name, data = "message", []

        yield read()


def test_a_stream_sends_a_snapshot_then_the_next_one_within_two_seconds_of_a_claim(
        project: dict[str, str], serve: Callable[..., str]) -> None:
    base = serve(board_app(project))
    cookie = login(base, TOKEN).cookies[COOKIE]
    with events(base, cookie) as stream:
        name, data = next(stream)
        first = json.loads(data)
        assert name == "snapshot" and not any(c["task_id"] == "T002" for c in first["claims"])
        started = time.monotonic()
        invoke("claim_task", {"task_id": "T002", "actor": "agent-9"}, env=project, cwd=project["ANVIL_ROOT"])
        name, data = next(stream)
        elapsed = time.monotonic() - started
    second = json.loads(data)
    assert name == "snapshot" and second["head"] > first["head"]
    assert ("T002", "agent-9") in {(c["task_id"], c["actor"]) for c in second["claims"]}
    assert elapsed < 2.0


def test_a_revoked_token_ends_its_open_stream(project: dict[str, str], serve: Callable[..., str], cli) -> None:  # type: ignore[no-untyped-def]
    issued = cli("token", "add", "agent-7", "--role", "agent", "--json").json()["token"]
    base = serve(board_app(project))
    cookie = login(base, issued).cookies[COOKIE]
    with events(base, cookie) as stream:
        assert next(stream)[0] == "snapshot"
        assert cli("token", "revoke", "agent-7", "--json").code == 0  # a write: the stream wakes and re-checks
        assert next(stream)[0] == "logout"


def test_each_replica_serves_a_bounded_number_of_streams_and_frees_a_slot_when_one_ends(
        shared: dict[str, str], serve: Callable[..., str]) -> None:
    app = board_app(shared, max_streams=1, keepalive_seconds=0.2)
    base = serve(app)
    cookie = login(base, TOKEN).cookies[COOKIE]
    with events(base, cookie) as stream:
        assert next(stream)[0] == "snapshot"
        refused = httpx2.get(f"{base}/board/api/events", cookies={COOKIE: cookie}, timeout=10)
        assert refused.status_code == 503 and refused.headers["retry-after"]
    deadline = time.monotonic() + 10
    while app.board.open_streams and time.monotonic() < deadline:  # the server notices the closed stream
        threading.Event().wait(0.05)
    with events(base, cookie) as stream:
        assert next(stream)[0] == "snapshot"


def test_the_stream_cap_comes_from_the_environment_and_a_bad_value_is_refused() -> None:
    from anvil.engine.errors import UsageError
    from anvil.mcp.serve import board_streams

    assert board_streams({}) == 32 and board_streams({"ANVIL_BOARD_MAX_STREAMS": " 4 "}) == 4
    for bad in ("0", "-1", "many", "10001"):
        with pytest.raises(UsageError):
            board_streams({"ANVIL_BOARD_MAX_STREAMS": bad})


def test_a_stream_ends_after_its_lifetime_so_the_browser_reconnects_and_is_checked_again(
        shared: dict[str, str], serve: Callable[..., str]) -> None:
    base = serve(board_app(shared, stream_seconds=0.5, keepalive_seconds=0.2))
    cookie = login(base, TOKEN).cookies[COOKIE]
    with events(base, cookie) as stream:
        assert next(stream)[0] == "snapshot"
        assert list(stream) == []  # keepalives only, then the server closes the stream
