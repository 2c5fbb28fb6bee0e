"""MCP resources: tasks, work packets and the dependency graph, read through the read operations.

| URI | content | operation |
|---|---|---|
| ``anvil://graph`` | the whole dependency graph (JSON) | ``get_dependency_graph`` |
| ``anvil://tasks/{task_id}`` | one task in full, with its recent history (JSON) | ``get_task`` |
| ``anvil://tasks/{task_id}/packet`` | the task's work packet (markdown) | ``generate_work_packet`` |
| ``anvil://features/{feature_id}/graph`` | one feature's part of the graph (JSON) | ``get_dependency_graph`` |
| ``anvil://bundles/{bundle_id}`` | one execution bundle in full (JSON) | ``get_bundle`` |
| ``anvil://bundles/{bundle_id}/packet`` | the bundle's coordinator packet (markdown) | ``generate_bundle_packet`` |

``resources/list`` names the graph and every task, a page at a time (in task id order; the
cursor is opaque); the templates describe the parameterised shapes. A read runs the same operation a
tool call would, so it sees exactly what the tools see (stale claims reaped, the same errors).

Errors are JSON-RPC errors: an unknown task or feature is ``-32002`` (resource not found) with
the URI, a malformed URI or cursor ``-32602``, anything else ``-32603``; each carries anvil's
error document (stable ``code``) in ``data``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from anvil.engine.errors import AnvilError, NotFound, UsageError, for_callers
from anvil.mcp import calls

Call = Callable[[ServerRequestContext[Any, Any], str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""Runs a read operation for a request: ``(ctx, name, arguments) -> output``; raises AnvilError."""

REQUIRED_OPERATIONS = calls.RESOURCE_OPERATIONS

GRAPH_URI = "anvil://graph"
JSON_TYPE = "application/json"
MARKDOWN_TYPE = "text/markdown"
PAGE_SIZE = 100
RESOURCE_NOT_FOUND = -32002
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
_SEGMENT = r"([^/?#]{1,200})"
_TASK = re.compile(rf"^anvil://tasks/{_SEGMENT}$")
_PACKET = re.compile(rf"^anvil://tasks/{_SEGMENT}/packet$")
_FEATURE_GRAPH = re.compile(rf"^anvil://features/{_SEGMENT}/graph$")
_BUNDLE = re.compile(rf"^anvil://bundles/{_SEGMENT}$")
_BUNDLE_PACKET = re.compile(rf"^anvil://bundles/{_SEGMENT}/packet$")
_CURSOR_PREFIX = "tasks:"

TEMPLATES = [
    types.ResourceTemplate(name="task", title="Task", uri_template="anvil://tasks/{task_id}", mime_type=JSON_TYPE,
                           description="One task in full: criteria, verification, files, scores, live claim and "
                                       "its recent evidence, reviews and notes."),
    types.ResourceTemplate(name="work_packet", title="Work packet", uri_template="anvil://tasks/{task_id}/packet",
                           mime_type=MARKDOWN_TYPE,
                           description="Everything an agent needs to do one task, as a markdown prompt."),
    types.ResourceTemplate(name="feature_graph", title="Feature dependency graph",
                           uri_template="anvil://features/{feature_id}/graph", mime_type=JSON_TYPE,
                           description="The tasks of one feature and their dependency edges."),
    types.ResourceTemplate(name="bundle", title="Execution bundle", uri_template="anvil://bundles/{bundle_id}",
                           mime_type=JSON_TYPE,
                           description="One bundle in full: policy, members, coordinator claim, verdicts, review gate "
                                       "and delivery."),
    types.ResourceTemplate(name="bundle_packet", title="Bundle packet",
                           uri_template="anvil://bundles/{bundle_id}/packet", mime_type=MARKDOWN_TYPE,
                           description="The coordinator's brief for one bundle, as markdown."),
]


def compact_json(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def rpc_error(error: AnvilError, uri: str | None = None, *, remote: bool = False) -> MCPError:
    """``error`` as the JSON-RPC error of a resource or prompt request (anvil's document in ``data``).

    A ``remote`` (HTTP) caller gets a state error without what names the server's insides, as a tool
    call's error does (:func:`~anvil.engine.errors.for_callers`)."""
    if remote:
        error = for_callers(error)
    data: dict[str, Any] = {"error": error.to_wire(with_exit_code=True)["error"]}
    if uri is not None:
        data["uri"] = uri
    if isinstance(error, NotFound) and error.code in ("task_not_found", "feature_not_found", "bundle_not_found"):
        return MCPError(RESOURCE_NOT_FOUND, f"Resource not found: {error.message}", data)
    if isinstance(error, UsageError):
        return MCPError(INVALID_PARAMS, error.message, data)
    return MCPError(INTERNAL_ERROR, error.message, data)


def _unknown(uri: str) -> MCPError:
    shown = uri if len(uri) <= 200 and uri.isprintable() else "(not shown: too long or unprintable)"
    return MCPError(RESOURCE_NOT_FOUND, "Resource not found: anvil serves anvil://graph, anvil://tasks/{task_id}, "
                                        "anvil://tasks/{task_id}/packet, anvil://features/{feature_id}/graph, "
                                        "anvil://bundles/{bundle_id} and anvil://bundles/{bundle_id}/packet",
                    {"uri": shown})


class Resources:
    """The resource handlers of one server."""

    def __init__(self, call: Call, *, page_size: int = PAGE_SIZE) -> None:
        """Serve resources through ``call``, listing ``page_size`` tasks per page."""
        self._call = call
        self._page_size = page_size

    async def list(self, ctx: ServerRequestContext[Any, Any],
                   params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        """``resources/list``: the graph first, then every task, a page at a time."""
        cursor = params.cursor if params is not None else None
        task_cursor: str | None = None
        if cursor is not None:
            if not cursor.startswith(_CURSOR_PREFIX) or len(cursor) > 250:
                raise MCPError(INVALID_PARAMS, "invalid cursor: pass the nextCursor of the previous page")
            task_cursor = cursor[len(_CURSOR_PREFIX):]
        arguments: dict[str, Any] = {"limit": self._page_size}
        if task_cursor:
            arguments["cursor"] = task_cursor
        try:
            page = await self._call(ctx, "list_tasks", arguments)
        except AnvilError as error:
            if error.code == "not_initialized":  # nothing to list yet; a host must not break on it
                return types.ListResourcesResult(resources=[])
            raise rpc_error(error, remote=ctx.request is not None) from None
        resources = [] if cursor is not None else [types.Resource(
            uri=GRAPH_URI, name="graph", title="Dependency graph", mime_type=JSON_TYPE,
            description="Every task and dependency edge, with the set claimable now.")]
        for row in page["tasks"]:
            resources.append(types.Resource(uri=f"anvil://tasks/{row['id']}", name=row["id"],
                                            title=f"{row['id']}: {row['title']}"[:200], mime_type=JSON_TYPE,
                                            description=f"{row['status']} · {row['priority']} priority"))
        following = page.get("next_cursor")
        return types.ListResourcesResult(resources=resources,
                                         next_cursor=_CURSOR_PREFIX + following if following else None)

    async def list_templates(self, ctx: ServerRequestContext[Any, Any],
                             params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
        """``resources/templates/list``: the parameterised shapes (one page)."""
        return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def read(self, ctx: ServerRequestContext[Any, Any],
                   params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        """``resources/read``: run the operation behind the URI."""
        uri = str(params.uri)
        try:
            contents = await self._contents(ctx, uri)
        except AnvilError as error:
            raise rpc_error(error, uri, remote=ctx.request is not None) from None
        return types.ReadResourceResult(contents=[contents])

    async def _contents(self, ctx: ServerRequestContext[Any, Any], uri: str) -> types.TextResourceContents:
        if uri == GRAPH_URI:
            graph = await self._call(ctx, "get_dependency_graph", {"scope": "all"})
            return types.TextResourceContents(uri=uri, mime_type=JSON_TYPE, text=compact_json(graph))
        if match := _PACKET.match(uri):
            packet = await self._call(ctx, "generate_work_packet",
                                      {"task_id": unquote(match.group(1)), "format": "markdown"})
            return types.TextResourceContents(uri=uri, mime_type=MARKDOWN_TYPE, text=str(packet["content"]))
        if match := _TASK.match(uri):
            task = await self._call(ctx, "get_task", {"task_id": unquote(match.group(1))})
            return types.TextResourceContents(uri=uri, mime_type=JSON_TYPE, text=compact_json(task))
        if match := _FEATURE_GRAPH.match(uri):
            graph = await self._call(ctx, "get_dependency_graph",
                                     {"scope": "feature", "target_id": unquote(match.group(1))})
            return types.TextResourceContents(uri=uri, mime_type=JSON_TYPE, text=compact_json(graph))
        if match := _BUNDLE_PACKET.match(uri):
            packet = await self._call(ctx, "generate_bundle_packet",
                                      {"bundle_id": unquote(match.group(1)), "format": "markdown"})
            return types.TextResourceContents(uri=uri, mime_type=MARKDOWN_TYPE, text=str(packet["content"]))
        if match := _BUNDLE.match(uri):
            bundle = await self._call(ctx, "get_bundle", {"bundle_id": unquote(match.group(1))})
            return types.TextResourceContents(uri=uri, mime_type=JSON_TYPE, text=compact_json(bundle["bundle"]))
        raise _unknown(uri)
