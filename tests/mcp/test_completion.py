"""Completions: task, feature and bundle ids of the served project, for prompt and template arguments."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from anvil.mcp.server import build_server
from anvil.ops.registry import all_operations
from tests.mcp.projects import build_project, use_project

pytestmark = pytest.mark.anyio
REVIEW = types.PromptReference(name="review_submission")
FEATURE_GRAPH = types.ResourceTemplateReference(uri="anvil://features/{feature_id}/graph")
TASK = types.ResourceTemplateReference(uri="anvil://tasks/{task_id}")
BUNDLE = types.ResourceTemplateReference(uri="anvil://bundles/{bundle_id}")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def ready(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return build_project(tmp_path_factory.mktemp("completion"), "ready")


@pytest.fixture
def project(ready: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return use_project(ready, monkeypatch)


@asynccontextmanager
async def connect(era: str = "legacy") -> AsyncIterator[Client]:
    with anyio.fail_after(30):
        async with Client(build_server(all_operations()), mode=era, read_timeout_seconds=30) as client:
            yield client


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_task_ids_complete_from_the_project_ignoring_case(era: str, project: dict[str, str]) -> None:
    async with connect(era) as client:
        prompt = await client.complete(REVIEW, {"name": "task_id", "value": "t00"})
        template = await client.complete(TASK, {"name": "task_id", "value": "T001"})
    assert prompt.completion.values[:2] == ["T001", "T002"] and prompt.completion.has_more is False
    assert prompt.completion.total == len(prompt.completion.values)
    assert template.completion.values == ["T001"]


async def test_feature_ids_complete_for_the_feature_graph_template(project: dict[str, str]) -> None:
    async with connect() as client:
        result = await client.complete(FEATURE_GRAPH, {"name": "feature_id", "value": ""})
    assert result.completion.values[0] == "F001" and all(v.startswith("F") for v in result.completion.values)


async def test_bundle_ids_complete_to_nothing_while_there_are_no_bundles(project: dict[str, str]) -> None:
    async with connect() as client:
        result = await client.complete(BUNDLE, {"name": "bundle_id", "value": ""})
    assert result.completion.values == [] and result.completion.total == 0


async def test_bundle_ids_complete_for_the_bundle_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_project(build_project(tmp_path, "bundle_replaced"), monkeypatch)
    async with connect() as client:
        every = await client.complete(BUNDLE, {"name": "bundle_id", "value": "b"})
        one = await client.complete(BUNDLE, {"name": "bundle_id", "value": "B2"})
    assert (every.completion.values, one.completion.values) == (["B1", "B2"], ["B2"])


async def test_other_arguments_complete_to_nothing(project: dict[str, str]) -> None:
    async with connect() as client:
        result = await client.complete(types.PromptReference(name="work_next_task"), {"name": "actor", "value": "a"})
    assert result.completion.values == []


async def test_a_project_that_is_not_initialized_completes_to_nothing(anvil_env: dict[str, str]) -> None:
    async with connect() as client:
        result = await client.complete(REVIEW, {"name": "task_id", "value": ""})
    assert result.completion.values == []


@pytest.mark.parametrize("ref", [types.PromptReference(name="test_prompt_with_arguments"),
                                 types.ResourceTemplateReference(uri="anvil://bundles/{bundle_id}/history")])
async def test_a_prompt_or_template_anvil_does_not_offer_is_invalid_params(
        ref: types.PromptReference | types.ResourceTemplateReference, project: dict[str, str]) -> None:
    async with connect() as client:
        with pytest.raises(MCPError) as caught:
            await client.complete(ref, {"name": "task_id", "value": ""})
    assert caught.value.code == -32602
