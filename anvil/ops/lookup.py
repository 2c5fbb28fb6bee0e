"""Id lookups outside the operation registry: what MCP hosts complete as the user types.

Completion is a hint, not an operation: it writes nothing, reaps nothing and has no CLI command,
so it reads the state directly through the engine (a project that is not initialized completes
nothing).
"""

from __future__ import annotations

from collections.abc import Mapping

from anvil.engine.id_lookup import IdKind, Matches, ids_starting_with
from anvil.ops.runtime import default_context


def complete_ids(kind: IdKind, prefix: str, *, env: Mapping[str, str] | None = None,
                 cwd: str | None = None) -> Matches:
    """The ``kind`` ids of the served project that start with ``prefix``.

    Args:
        kind: ``task``, ``feature`` or ``bundle``.
        prefix: the partial value.
        env: the environment selecting the project (default: this process's).
        cwd: the working directory selecting the project (default: this process's).

    Returns:
        The matches; none when the project is not initialized.

    Raises:
        AnvilError: the state exists but cannot be read.
    """
    ctx = default_context(env, cwd)
    try:
        if not ctx.location.initialized:
            return Matches([], 0)
        return ids_starting_with(ctx.store.conn, kind, prefix)
    finally:
        ctx.close()


def has_bundles(*, env: Mapping[str, str] | None = None, cwd: str | None = None) -> bool:
    """Whether the served project has at least one bundle (one indexed row read).

    Args:
        env: the environment selecting the project (default: this process's).
        cwd: the working directory selecting the project (default: this process's).

    Returns:
        True once a bundle exists; False when there is none or the project is not initialized.

    Raises:
        AnvilError: the state exists but cannot be read.
    """
    ctx = default_context(env, cwd)
    try:
        if not ctx.location.initialized:
            return False
        from anvil.engine.work.bundles.rows import any_bundle

        return any_bundle(ctx.store.conn)
    finally:
        ctx.close()
