"""Benchmark helpers for the storage backends: a fresh PostgreSQL schema per run, and a drain through
several ``anvil serve --http`` replicas that counts duplicate claims from the event log.

Used by ``scripts/bench_loop.py --database URL``. A run on PostgreSQL gets its own schema in the
given database (``search_path`` set through the URL's ``options``), dropped afterwards, so the
benchmark needs only the right to create a schema there. URLs are printed without passwords.
"""

from __future__ import annotations

import secrets
import subprocess
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit


def with_schema(url: str, schema: str) -> str:
    """``url`` with ``search_path`` set to ``schema`` for every connection made with it."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "options"]
    query.append(("options", f"-c search_path={schema}"))
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


def new_schema(url: str) -> tuple[str, str]:
    """Create an empty schema in the database at ``url``; returns (schema, URL selecting it)."""
    import psycopg

    schema = "anvil_bench_" + uuid.uuid4().hex[:10]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return schema, with_schema(url, schema)


def drop_schema(url: str, schema: str) -> None:
    import psycopg

    from anvil.engine.storage.postgres import forget_pool

    forget_pool()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def start_replicas(env: dict[str, str], count: int, log_dir: Path, token_env: str,
                   command: list[str]) -> list[tuple[subprocess.Popen[bytes], int, Any]]:
    """``count`` ``anvil serve --http`` processes on free loopback ports, sharing ``env``'s state."""
    from scripts.netutil import free_port, wait_for_port

    env[token_env] = env.get(token_env) or secrets.token_urlsafe(24)
    server_env = {**env, "ANVIL_MCP_PLANNING": "1"}
    started = []
    for index in range(count):
        port = free_port()
        log = open(log_dir / f"replica-{index}-{port}.log", "wb")  # noqa: SIM115 - closed by stop_server
        proc = subprocess.Popen([*command, "serve", "--http", "--port", str(port), "--token-env", token_env],
                                env=server_env, cwd=env["ANVIL_ROOT"], stdout=log, stderr=subprocess.STDOUT)
        wait_for_port(port, proc)
        started.append((proc, port, log))
    return started


def claim_counts(env: dict[str, str]) -> dict[str, Any]:
    """From the event log: how many claims each task got, duplicates (a task claimed while claimed)."""
    from anvil.engine.storage.paths import resolve_state
    from anvil.engine.storage.store import Store

    holder: dict[str, str] = {}
    overlaps = 0
    per_task: Counter[str] = Counter()
    with Store.open(resolve_state(env, env["ANVIL_ROOT"])) as store:
        for event in store.events():
            p = event.payload
            if event.type == "claim.acquired":
                per_task[p["task_id"]] += 1
                if p["task_id"] in holder:
                    overlaps += 1
                holder[p["task_id"]] = p["claim_id"]
            elif event.type in ("claim.released", "claim.expired", "evidence.submitted"):
                holder.pop(p["task_id"], None)
    return {"claimed_tasks": len(per_task), "duplicate_claims": overlaps,
            "claimed_more_than_once": sum(1 for n in per_task.values() if n > 1)}
