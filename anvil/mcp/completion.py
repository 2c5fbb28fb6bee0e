"""MCP completions: task, feature and bundle ids for prompt arguments and resource-template variables.

Completion goes by the argument's name (``task_id``, ``feature_id``, ``bundle_id``), on any prompt
or template this server offers; other arguments complete to nothing. Values come from the served
project's state, prefix-matched ignoring case, at most 100 per answer with the total. A prompt or
template the server does not offer is an invalid-params error; a state that cannot be read
completes to nothing (completion is a typing aid, never a failure).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from anvil.engine.errors import AnvilError
from anvil.engine.id_lookup import IdKind, Matches

logger = logging.getLogger("anvil.mcp.completion")

Lookup = Callable[[IdKind, str], Matches]
"""Finds ids of a kind by prefix (blocking; called in a worker thread)."""

ARGUMENT_KINDS: dict[str, IdKind] = {"task_id": "task", "feature_id": "feature", "bundle_id": "bundle"}
INVALID_PARAMS = -32602


def default_lookup(kind: IdKind, prefix: str) -> Matches:
    """Look ids up in the project this process serves."""
    from anvil.ops.lookup import complete_ids

    return complete_ids(kind, prefix)


class Completions:
    """The ``completion/complete`` handler of one server."""

    def __init__(self, prompts: Mapping[str, Collection[str]], template_uris: Collection[str],
                 lookup: Lookup = default_lookup) -> None:
        """Complete the arguments of ``prompts`` (name -> argument names) and ``template_uris``."""
        self._prompts = prompts
        self._templates = frozenset(template_uris)
        self._lookup = lookup

    async def complete(self, ctx: ServerRequestContext[Any, Any],
                       params: types.CompleteRequestParams) -> types.CompleteResult:
        """Suggest values for the argument being typed."""
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            if ref.name not in self._prompts:
                raise MCPError(INVALID_PARAMS, "unknown prompt: see prompts/list")
        elif ref.uri not in self._templates:
            raise MCPError(INVALID_PARAMS, "unknown resource template: see resources/templates/list")
        kind = ARGUMENT_KINDS.get(params.argument.name)
        matches = Matches([], 0)
        if kind is not None:
            try:
                matches = await anyio.to_thread.run_sync(self._lookup, kind, params.argument.value)
            except AnvilError as error:
                logger.debug("completion read failed (%s)", error.code)
        return types.CompleteResult(completion=types.Completion(
            values=matches.values, total=matches.total, has_more=matches.total > len(matches.values)))
