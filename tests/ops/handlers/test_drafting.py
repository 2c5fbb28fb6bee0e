"""The LLM backstop of plan_tasks: drafting the tasks a PRD lacks with the caller's model.

Calls go through the real operation pipeline with a fake sampler.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.engine.errors import AnvilError
from anvil.engine.storage.paths import resolve_state
from anvil.ops.registry import get_operation
from anvil.ops.runtime import Context, execute
from anvil.ops.scenarios import SAMPLE_AT
from anvil.ops.specgen import op_spec
from anvil.ops.validation import validate_input
from tests.ops.support import assert_replays, edit_sample, event_types, events, op, refused, scenario, statuses, task


def plan_with_sampler(env: dict[str, str], sampler, **args: object) -> dict:  # type: ignore[no-untyped-def]
    operation = get_operation("plan_tasks")
    ctx = Context(env=env, cwd=env["ANVIL_ROOT"], sampler=sampler)
    return execute(op_spec(operation), validate_input(operation, args), ctx)


def features_only(env: dict[str, str]) -> Path:
    """An initialized project whose parsed PRD has features but no ## Tasks section."""
    root = scenario(env, "initialized")
    edit_sample(root, lambda text: text[:text.index("## Tasks")])
    op(env, "parse_prd", file=SAMPLE_AT)
    return root


DRAFTED_TASKS = """Here is the plan.

```markdown
## Tasks

### T001: Store links

**Feature:** F001
**Priority:** high
**Type:** feature
**Likely files:** shortlink/store.py
**Dependencies:** none
**Acceptance criteria:**
- A saved link can be read back.
**Verification:**
- `pytest -q tests/test_store.py`

### T002: Redirect

**Feature:** F002
**Priority:** medium
**Type:** feature
**Likely files:** shortlink/api.py
**Dependencies:** T001
**Acceptance criteria:**
- A stored code answers 302.
**Verification:**
- `pytest -q tests/test_api.py`
```
"""


def test_planning_features_without_tasks_and_without_the_llm_is_refused_with_no_tasks(anvil_env) -> None:
    features_only(anvil_env)
    before = event_types(anvil_env)

    error = refused(anvil_env, "plan_tasks", use_llm=False)

    assert (error.code, error.exit_code) == ("no_tasks", 5)
    assert event_types(anvil_env) == before


def test_the_llm_backstop_appends_a_tasks_section_reparses_and_plans_the_drafted_tasks(anvil_env) -> None:
    features_only(anvil_env)
    prompts: list[tuple[str, int]] = []

    def sampler(prompt: str, max_tokens: int) -> str:
        prompts.append((prompt, max_tokens))
        return DRAFTED_TASKS

    before = len(events(anvil_env))
    result = plan_with_sampler(anvil_env, sampler)

    assert len(prompts) == 1 and "### F001: Link creation" in prompts[0][0]
    assert result["llm_generated"] is True and result["added"] == ["T001", "T002"]
    new = events(anvil_env)[before:]
    assert [e.type for e in new] == ["prd.revised", "planning.batch_applied"]
    assert new[1].payload["revision"] == new[0].payload["revision"] == 2
    managed = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"]).prd_path.read_text(encoding="utf-8")
    assert "## Tasks" in managed and "### T002: Redirect" in managed and "```" not in managed
    assert statuses(anvil_env) == {"T001": "drafted", "T002": "drafted"}
    assert task(anvil_env, "T002")["dependencies"] == ["T001"]
    assert_replays(anvil_env)


@pytest.mark.parametrize("reply", [
    "Sorry, I cannot help with that.",
    DRAFTED_TASKS.replace("**Feature:** F002", "**Feature:** F999"),  # references an unknown feature
], ids=["no-tasks", "does-not-parse"])
def test_an_unusable_llm_reply_is_refused_with_llm_tasks_unusable_and_writes_nothing(anvil_env, reply) -> None:
    features_only(anvil_env)
    source = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"]).prd_path
    source_before = source.read_bytes()
    before = event_types(anvil_env)

    with pytest.raises(AnvilError) as info:
        plan_with_sampler(anvil_env, lambda prompt, tokens: reply)

    assert info.value.code == "llm_tasks_unusable"
    assert "F999" not in info.value.message or "unknown feature" in info.value.message
    assert event_types(anvil_env) == before
    assert source.read_bytes() == source_before


def test_a_dry_run_plan_with_the_llm_backstop_leaves_the_prd_source_untouched(anvil_env) -> None:
    features_only(anvil_env)
    source = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"]).prd_path
    source_before = source.read_bytes()
    before = event_types(anvil_env)

    result = plan_with_sampler(anvil_env, lambda prompt, tokens: DRAFTED_TASKS, dry_run=True)

    assert result["added"] == ["T001", "T002"]
    assert event_types(anvil_env) == before
    assert source.read_bytes() == source_before
