"""Rule-based, deterministic task scores on six dimensions, each an integer from 1 to 5.

Inputs are a planned task dict (see :mod:`anvil.engine.planning.planner`) and its :class:`GraphStats`.
``band(x, (a, b, ...))`` below means "how many of the thresholds ``x`` reaches", and every
score is clamped to 1..5 after adding up its points. Text counts ignore blank entries.

complexity (how much work): ``1 + band(criteria, (3, 5)) + band(files, (2, 4, 7))
+ band(description chars, (400, 1200))``, plus 1 when the type mentions refactor, migration,
infra, architecture or security, minus 1 for a docs type.

parallelizability (how freely it runs beside others): ``5 - band(conflict peers, (1, 3, 6))
- band(dependents, (3, 6))``; a task many others wait on is a bottleneck.

context_load (how much an agent must read): ``1 + band(files, (2, 4, 7))
+ band(dependencies, (2, 5)) + band(description chars, (1200,)) + band(criteria, (6,))``.

blast_radius (how far a mistake spreads): ``1 + file risk + band(dependents, (2, 5))
+ band(files, (7,))`` where file risk is the highest of its files: 2 for migrations, schema,
auth, security, permissions, crypto, secrets, payments/billing and public API paths; 1 for
config/settings, ``core/``, ``__init__.py``, CI, packaging and container files; else 0.

review_risk (how careful the review must be): ``1 + band(blast_radius, (3, 4))
+ band(distinct sensitive words, (1, 3))`` (security, auth, password, secret, token,
credential, encryption, payment, billing, permission, delete, drop, truncate, purge,
migration, destructive, data loss, privacy, PII in the title, description or criteria),
plus 1 without verification commands and 1 without acceptance criteria.

agent_suitability (how well an agent can finish it alone): ``3``, +1 with two or more
acceptance criteria (-1 with none), +1 with verification commands (-1 without), -1 with no
likely files or seven or more, -1 when description and criteria together hold fewer than eight
words, -1 when review_risk is 4 or more.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from anvil.engine.errors import Refused, UsageError

DIMENSIONS: tuple[str, ...] = (
    "complexity", "parallelizability", "context_load", "blast_radius", "review_risk", "agent_suitability",
)
TIERS: tuple[str, ...] = ("light", "standard", "max")

_HIGH_RISK_PATHS = (
    "migration", "schema", "auth", "security", "permission", "crypt", "secret", "payment", "billing",
    "/api/", "/api.py", "public_api", "/public/",
)
_MEDIUM_RISK_PATHS = (
    "config", "settings", "/core/", "__init__.py", "/.github/", "pyproject.toml", "setup.py", "setup.cfg",
    "requirements", "dockerfile", "/.env",
)
_HEAVY_TYPES = ("refactor", "migration", "infra", "architecture", "security")
_SENSITIVE = re.compile(
    r"\b(auth|authn|authz|authentication|authorization|authorisation|security|secure|passwords?|secrets?"
    r"|tokens?|credentials?|encrypt|encryption|decrypt|payments?|billing|invoices?|permissions?"
    r"|delete|deletes|deletion|drop|truncate|purge|migrations?|destructive|data loss|privacy|pii)\b"
)


@dataclass(frozen=True, slots=True)
class GraphStats:
    """What scoring needs to know about a task's place in the graph.

    Attributes:
        dependents: Tasks that depend on this one directly.
        dependencies: Known tasks this one depends on directly.
        depth: Length of the longest dependency chain below this task (0 without dependencies).
        conflict_peers: Other tasks sharing one of its conflict groups.
    """

    dependents: int = 0
    dependencies: int = 0
    depth: int = 0
    conflict_peers: int = 0


def graph_stats(tasks: list[dict[str, Any]]) -> dict[str, GraphStats]:
    """Compute :class:`GraphStats` for every task at once, in O(V + E).

    Dependencies on unknown ids are ignored; tasks caught in a dependency cycle get the depth
    reached before the cycle. When an id repeats, the first task counts.

    Args:
        tasks: Planned task dicts with ``id``, ``dependencies`` and ``conflict_groups``.

    Returns:
        Stats keyed by task id.

    Raises:
        UsageError: ``invalid_input`` when a task is not a mapping with a string ``id``.
    """
    by_id: dict[str, Mapping[str, Any]] = {}
    for task in tasks:
        if not isinstance(task, Mapping) or not isinstance(task.get("id"), str):
            raise UsageError("a task has no string id", code="invalid_input")
        by_id.setdefault(task["id"], task)
    deps = {tid: list(dict.fromkeys(d for d in _strings(t.get("dependencies")) if d in by_id))
            for tid, t in by_id.items()}
    dependents: dict[str, list[str]] = {tid: [] for tid in by_id}
    for tid, task_deps in deps.items():
        for d in task_deps:
            dependents[d].append(tid)

    depth = dict.fromkeys(by_id, 0)
    remaining = {tid: len(d) for tid, d in deps.items()}
    ready = [tid for tid, count in remaining.items() if not count]
    while ready:
        tid = ready.pop()
        for parent in dependents[tid]:
            depth[parent] = max(depth[parent], depth[tid] + 1)
            remaining[parent] -= 1
            if not remaining[parent]:
                ready.append(parent)

    group_size: dict[str, int] = {}
    groups = {tid: set(_strings(t.get("conflict_groups"))) for tid, t in by_id.items()}
    for task_groups in groups.values():
        for gid in task_groups:
            group_size[gid] = group_size.get(gid, 0) + 1
    return {
        tid: GraphStats(
            dependents=len(dependents[tid]),
            dependencies=len(deps[tid]),
            depth=depth[tid],
            conflict_peers=sum(group_size[g] - 1 for g in groups[tid]),
        )
        for tid in by_id
    }


def score_task(task: Mapping[str, Any], graph: GraphStats) -> dict[str, int]:
    """Score one task on every dimension of :data:`DIMENSIONS` by the rules of this module.

    Args:
        task: A planned task dict; missing fields count as empty.
        graph: The task's :class:`GraphStats` from :func:`graph_stats`.

    Returns:
        ``{dimension: 1..5}`` in :data:`DIMENSIONS` order.

    Raises:
        Nothing: malformed fields count as empty.
    """
    files = _strings(task.get("likely_files"))
    criteria = _strings(task.get("acceptance_criteria"))
    verification = _strings(task.get("verification"))
    description, title, task_type = (_text(task.get(key)) for key in ("description", "title", "type"))
    task_type = task_type.lower()
    chars = len(description.strip())

    type_points = 1 if any(word in task_type for word in _HEAVY_TYPES) else -1 if "doc" in task_type else 0
    complexity = 1 + _band(len(criteria), (3, 5)) + _band(len(files), (2, 4, 7)) + _band(chars, (400, 1200))
    complexity += type_points
    parallelizability = 5 - _band(graph.conflict_peers, (1, 3, 6)) - _band(graph.dependents, (3, 6))
    context_load = (1 + _band(len(files), (2, 4, 7)) + _band(graph.dependencies, (2, 5))
                    + _band(chars, (1200,)) + _band(len(criteria), (6,)))
    file_risk = max((_path_risk(name) for name in files), default=0)
    blast_radius = _clamp(1 + file_risk + _band(graph.dependents, (2, 5)) + _band(len(files), (7,)))

    text = " ".join([title, description, *criteria]).lower()
    sensitive = len(set(_SENSITIVE.findall(" ".join(text.split()))))
    review_risk = _clamp(1 + _band(blast_radius, (3, 4)) + _band(sensitive, (1, 3))
                         + (0 if verification else 1) + (0 if criteria else 1))

    suitability = 3 + (1 if len(criteria) >= 2 else 0 if criteria else -1) + (1 if verification else -1)
    suitability -= 1 if not files or len(files) >= 7 else 0
    suitability -= 1 if len(" ".join([description, *criteria]).split()) < 8 else 0
    suitability -= 1 if review_risk >= 4 else 0
    return {
        "complexity": _clamp(complexity),
        "parallelizability": _clamp(parallelizability),
        "context_load": _clamp(context_load),
        "blast_radius": blast_radius,
        "review_risk": review_risk,
        "agent_suitability": _clamp(suitability),
    }


def validate_scores(scores: Any) -> None:
    """Check that one task's scores are complete: every dimension, each an int in 1..5.

    Args:
        scores: ``{dimension: int}`` as supplied by a caller.

    Raises:
        UsageError: ``invalid_input`` when ``scores`` is not a mapping or names an unknown dimension.
        Refused: ``score_incomplete`` when a dimension is missing or not an integer in 1..5.
    """
    if not isinstance(scores, Mapping):
        raise UsageError("scores must be an object of dimension to integer", code="invalid_input")
    unknown = sum(1 for key in scores if key not in DIMENSIONS)
    if unknown:
        raise UsageError(f"scores name {unknown} unknown dimension(s)", code="invalid_input")
    missing = sum(1 for dim in DIMENSIONS if dim not in scores)
    if missing:
        raise Refused(f"scores miss {missing} of {len(DIMENSIONS)} dimensions", code="score_incomplete")
    bad = sum(1 for dim in DIMENSIONS if not _is_score(scores[dim]))
    if bad:
        raise Refused(f"{bad} score(s) are not integers from 1 to 5", code="score_incomplete")


def validate_score_batch(batch: Any) -> None:
    """Check a whole batch ``{task_id: scores}`` with :func:`validate_scores` before any write.

    Args:
        batch: Scores keyed by task id.

    Raises:
        UsageError: ``invalid_input`` when ``batch`` is not a mapping, or as :func:`validate_scores`.
        Refused: ``score_incomplete`` as :func:`validate_scores`.
    """
    if not isinstance(batch, Mapping):
        raise UsageError("scores must be an object keyed by task id", code="invalid_input")
    for scores in batch.values():
        validate_scores(scores)


def _is_score(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 5


def _band(value: int, thresholds: tuple[int, ...]) -> int:
    return sum(1 for threshold in thresholds if value >= threshold)


def _clamp(value: int) -> int:
    return max(1, min(5, value))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _strings(value: Any) -> list[str]:
    if not isinstance(value, (list, tuple)):
        return []
    return [v for v in value if isinstance(v, str) and v.strip()]


def _path_risk(name: str) -> int:
    path = "/" + name.strip().lower().replace("\\", "/")
    if any(token in path for token in _HIGH_RISK_PATHS):
        return 2
    if any(token in path for token in _MEDIUM_RISK_PATHS):
        return 1
    return 0
