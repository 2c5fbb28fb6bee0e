"""Human output: one renderer per operation result, drawn with Rich and fitted to the screen.

Every route (the fast path, the Typer path, direct or over MCP) shows a result through
:func:`render`, so a result looks the same whichever way it was produced: its keys are first put
in its output model's order (:func:`ordered`), whatever order the route delivered them in.
Operations without a tailored view get :func:`generic`: their scalar fields as a label list, then
each list of records as a table. Mutating results of a dry run start with a line saying nothing
was written. Hints (the next command to run) name the actor flag when no actor is known, so they
work as printed, and are never folded, so they paste whole.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import cache
from typing import Any, NamedTuple

from anvil.cli.tables import Column, Raw, Screen, Styled, clean, hint, lines, pairs, paragraph, styled, table
from anvil.cli.trustview import decision_items, evidence_lines, submission_items

STATUS_STYLE = {"ready": "green", "waiting": "yellow", "claimed": "cyan", "in_progress": "cyan", "blocked": "red",
                "needs_review": "magenta", "done": "dim", "drafted": "blue", "expired": "red"}
SEVERITY_STYLE = {"error": "red", "warning": "yellow"}
DRY_RUN_LINE = "dry run: nothing was written; this is what the call would do"


class View(NamedTuple):
    """What a renderer may look at besides the result: the screen, the call's input, the environment,
    and how a pasted command must read after this call (its route, :class:`anvil.cli.hints.Paste`)."""

    screen: Screen
    args: Mapping[str, Any]
    env: Mapping[str, str]
    paste: Any = None

    def route_flags(self) -> str:
        """`` --mcp TARGET [--mcp-token-env NAME]`` of this call's route (nothing when direct)."""
        return "".join(f" {word}" for word in self.paste.route_words()) if self.paste is not None else ""

    def actor_flag(self) -> str:
        """`` --actor NAME`` for a hint, unless the actor is already known (a token says who, given, or
        ANVIL_ACTOR), then this call's route flags."""
        route = self.route_flags()
        if self.env.get("ANVIL_ACTOR", "").strip() or getattr(self.paste, "token_actor", None):
            return route
        actor = self.args.get("actor")
        return (f" --actor {actor}" if isinstance(actor, str) and actor.isprintable() and " " not in actor
                else " --actor NAME") + route


Renderer = Callable[[dict[str, Any], View], list[Any]]
RENDERERS: dict[str, Renderer] = {}
LAZY_RENDERERS: dict[str, tuple[str, str]] = {"get_board": ("anvil.cli.boardview", "render_board")}


def renders(*names: str) -> Callable[[Renderer], Renderer]:
    def decorate(func: Renderer) -> Renderer:
        for name in names:
            RENDERERS[name] = func
        return func

    return decorate


def render(op_name: str, result: dict[str, Any], view: View) -> list[str]:
    """The lines showing ``result`` of the operation ``op_name``."""
    return lines(build(op_name, result, view), view.screen)


def build(op_name: str, result: dict[str, Any], view: View) -> list[Any]:
    """What shows ``result`` of the operation ``op_name``: text lines and Rich renderables."""
    result = ordered(result, output_order().get(op_name))
    lazy = LAZY_RENDERERS.get(op_name)
    if lazy is not None and op_name not in RENDERERS:  # big views load only when shown
        import importlib

        RENDERERS[op_name] = getattr(importlib.import_module(lazy[0]), lazy[1])
    renderer = RENDERERS.get(op_name, generic)
    out = renderer(result, view)
    identity = result.get("actor_identity")
    if renderer is not generic and isinstance(identity, dict) and identity.get("how") != "default":
        out.append(styled(f"acted as {acted_as(identity)}", "dim"))
    if result.get("dry_run") is True:
        out = [styled(DRY_RUN_LINE, "yellow", "bold"), *out]
    return out


@cache
def output_order() -> dict[str, Any]:
    """The field order of every operation's output (``anvil/ops/output_order.json``, from the models)."""
    import json

    from anvil.ops.contract import SPEC_PATH

    return json.loads(SPEC_PATH.with_name("output_order.json").read_text(encoding="utf-8"))


def ordered(value: Any, order: Mapping[str, Any] | None) -> Any:
    """``value`` with the keys of every record in ``order`` (a field-order tree), other keys after, sorted:
    a direct result, an MCP result (validated into its model) and an idempotent replay (canonical JSON,
    sorted) then show their fields alike."""
    if isinstance(value, list):
        return [ordered(item, order) for item in value]
    if not isinstance(value, dict):
        return value
    order = order or {}  # a free-form record (``dict[str, Any]``): its keys sorted, as a replay has them
    keys = [key for key in order if key in value] + sorted(key for key in value if key not in order)
    return {key: ordered(value[key], order.get(key)) for key in keys}


# -- values --------------------------------------------------------------------------------------

def plain(value: Any) -> str:
    """A value as one short text: lists joined by commas (``-`` when empty), flags as yes/no."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        if not value:
            return "-"
        if all(not isinstance(v, (dict, list)) for v in value):
            return ", ".join(plain(v) for v in value)
        return f"{len(value)} items"
    if isinstance(value, dict):
        if isinstance(value.get("id"), str) and isinstance(value.get("title"), str):  # a task in brief
            return f"{value['id']} {value['title']}" + (f" ({value['priority']})" if value.get("priority") else "")
        shown = [f"{k}={plain(v)}" for k, v in value.items() if v not in (0, None, [], "", False)]
        return ", ".join(shown) or "-"
    return str(value)


def label(key: str) -> str:
    return key.replace("_", " ")


def parse_time(stamp: str) -> datetime | None:
    try:
        return datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return None


def span(seconds: float) -> str:
    """``14m 5s``, ``2h 3m``, ``3d 4h``: a duration rounded for people."""
    seconds = int(abs(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {secs}s" if secs and minutes < 10 else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if hours else f"{days}d"


def lease_text(claim: Mapping[str, Any], now: datetime | None = None) -> str:
    """When a lease ends, as a countdown (``ends 13:12:46 UTC, in 14m``) or as expired."""
    end = parse_time(str(claim.get("lease_expires_at", "")))
    if end is None:
        return clean(claim.get("lease_expires_at"))
    now = now or datetime.now(UTC)
    left = (end - now).total_seconds()
    clock = end.astimezone(UTC).strftime("%H:%M:%S UTC")
    if claim.get("expired") or left <= 0:
        return f"expired at {clock} ({span(left)} ago): the task goes back to the pool at the next write"
    return f"ends {clock}, in {span(left)}"


def task_state(task: Mapping[str, Any]) -> str:
    """The status people read: ``waiting`` for a ready task whose dependencies are not all done,
    ``landed`` for done work on the landing target."""
    if task.get("status") == "ready" and task.get("blocked_by"):
        return "waiting"
    if task.get("status") == "done" and task.get("landed"):
        return "landed"
    return str(task.get("status", "-"))


def bullets(title: str, items: list[Any], view: View) -> list[Any]:
    return [styled(title, "bold"), *pairs([("  -", item) for item in items], view.screen, label_style="", gap=1)
            ] if items else []


# -- the generic view ----------------------------------------------------------------------------

def _records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def records_table(rows: list[dict[str, Any]], view: View, title: str | None = None) -> list[Any]:
    """A table of homogeneous records (columns from the first one); long columns wrap."""
    keys = list(rows[0])
    cells = [{k: plain(row.get(k)) for k in keys} for row in rows]
    long = {k for k in keys if max(len(c[k]) for c in cells) > 24}
    # On a narrow screen the rightmost short columns go first, then the rightmost long ones.
    columns = [Column(label(k), k, text=k in long,
                      drop=0 if i == 0 else len(keys) - i + (len(keys) if k in long else 0),
                      style=STATUS_STYLE if k == "status" else SEVERITY_STYLE if k == "severity" else None)
               for i, k in enumerate(keys)]
    return table(cells, columns, view.screen, title)


def generic(result: dict[str, Any], view: View) -> list[Any]:
    """Scalar fields as a label list, then each list of records as its own table."""
    items: list[tuple[str, str]] = []
    lists: list[tuple[str, list[dict[str, Any]]]] = []
    for key, value in result.items():
        if key == "dry_run":
            continue
        if key == "actor_identity" and isinstance(value, dict):
            items.append(("acted as", acted_as(value)))
        elif _records(value):
            lists.append((key, value))
        else:
            items.append((label(key), plain(value)))
    out = pairs(items, view.screen)
    for key, rows in lists:
        out += ["", *records_table(rows, view, f"{label(key)} ({len(rows)})")]
    return out


def acted_as(identity: Mapping[str, Any]) -> str:
    """The ``actor_identity`` of a result in a few words."""
    how = {"token": f"authenticated by token, role {identity.get('role')}", "declared": "self-declared",
           "default": "nobody named"}.get(str(identity.get("how")), str(identity.get("how")))
    return f"{identity.get('actor')} ({how})"


# -- tasks ---------------------------------------------------------------------------------------

TASK_COLUMNS = (
    Column("id", "id"), Column("status", "state", style=STATUS_STYLE), Column("priority", "priority", drop=3),
    Column("feature", "feature", drop=1), Column("tier", "tier", drop=2), Column("holder", "holder", drop=4),
    Column("waits on", "waits", drop=5), Column("title", "title", text=True),
)


def task_cells(task: Mapping[str, Any]) -> dict[str, str]:
    holder = task.get("claimed_by") or ""
    if holder and task.get("claim_expired"):
        holder += " (expired)"
    return {"id": task["id"], "state": task_state(task), "priority": task.get("priority", ""),
            "feature": task.get("feature_id") or "-", "tier": task.get("review_tier", ""), "holder": holder or "-",
            "waits": ", ".join(task.get("blocked_by") or []) or "-", "title": task.get("title", "")}


def task_table(tasks: list[dict[str, Any]], view: View, title: str | None = None) -> list[Any]:
    cells = [task_cells(t) for t in tasks]
    columns = [c for c in TASK_COLUMNS if c.key not in ("holder", "waits") or any(x[c.key] != "-" for x in cells)]
    return table(cells, columns, view.screen, title)


@renders("list_tasks")
def _list(result: dict[str, Any], view: View) -> list[Any]:
    if not result["tasks"]:
        return ["no tasks match"]
    out = task_table(result["tasks"], view)
    if result.get("next_cursor"):
        out.append(hint(f"more: --cursor {clean(result['next_cursor'])}"))
    return out


def tier_text(tier: str) -> str:
    """A review tier with what it means (``max: the most careful review: ...``)."""
    from anvil.engine.tasks import TIER_MEANINGS

    meaning = TIER_MEANINGS.get(tier)
    return f"{tier} ({meaning})" if meaning else tier


def _claim_hint(task_id: str, view: View) -> Styled:
    return hint(f"claim it: anvil claim {task_id}{view.actor_flag()}")


@renders("get_next_task")
def _next(result: dict[str, Any], view: View) -> list[Any]:
    task = result["task"]
    if task is None:
        return [styled(f"nothing to claim: {clean(result['reason'])}", "yellow")]
    out = pairs([("next task", f"{task['id']}  {task['title']}"),
                 ("priority", f"{task['priority']} · review tier {tier_text(task['review_tier'])}"),
                 ("files", plain(task.get("likely_files")))], view.screen)
    return [*out, _claim_hint(task["id"], view)]


@renders("get_task")
def _show(result: dict[str, Any], view: View) -> list[Any]:
    screen = view.screen
    state = task_state(result)
    out: list[Any] = [styled(clean(f"{result['id']}  {result['title']}"), "bold")]
    items = [("status", f"{state} (waits on {', '.join(result['blocked_by'])})" if state == "waiting" else state),
             ("priority", f"{result['priority']} · review tier {tier_text(result['review_tier'])}"
                          + (f" · feature {result['feature_id']}" if result.get("feature_id") else ""))]
    claim = result.get("claim")
    if claim:
        items.append(("claim", f"{claim['claimed_by']}, generation {claim['generation']}, lease "
                               f"{lease_text(claim)}"))
    items += [(name, ", ".join(result[key])) for name, key in (("depends on", "dependencies"),
                                                               ("files", "likely_files")) if result.get(key)]
    out += pairs(items, screen)
    if result.get("description"):
        out += ["", *paragraph(result["description"], screen)]
    for title, key in (("Acceptance criteria", "acceptance_criteria"), ("Verification", "verification")):
        if result.get(key):
            out += ["", *bullets(title, result[key], view)]
    history = result.get("history") or {}
    for evidence in history.get("evidence", [])[:1]:
        out += ["", styled("Latest evidence", "bold") + clean(
            f" {evidence['id']} by {evidence['actor']} ({evidence['category']}, {evidence['submitted_at']})")]
        out += evidence_lines(evidence, result["id"], screen)
        out += [clean(f"  $ {command}") for command in evidence["commands_run"]]
        if evidence.get("files_changed"):
            out += paragraph("files: " + ", ".join(evidence["files_changed"]), screen, "  ")
    for review in history.get("reviews", []):
        reason = f": {review['reason']}" if review.get("reason") else ""
        commit = f" at commit {review['commit_sha'][:12]}" if review.get("commit_sha") else ""
        out += paragraph(f"review {review['decision']} by {review['reviewer']}{commit}{reason}", screen)
    for landing in history.get("landings", [])[:3]:
        out += paragraph(landing_line(landing), screen)
    for note in history.get("progress", [])[:3]:
        phase = f" [{note['phase']}]" if note.get("phase") else ""
        out += paragraph(f"progress by {note['actor']}{phase}: {note['notes']}", screen)
    return out


def landing_line(landing: Mapping[str, Any]) -> str:
    """One landing of a task as ``show`` tells it: where it landed, or why it bounced."""
    if landing["outcome"] == "landed":
        return (f"landed by {landing['lander']} at {str(landing['landed_commit'])[:12]} (approved commit "
                f"{str(landing['approved_commit'])[:12]})")
    reason = landing.get("reason")
    if reason == "conflict":
        why = conflicts_text(landing)
    elif reason == "proof_failed":
        why = f"`{landing.get('failed_command')}` failed on the merged tree: {str(landing.get('excerpt') or '')[-300:]}"
    else:
        why = str(landing.get("excerpt") or "the claim branch moved past the approved commit")
    return f"landing bounced ({reason}, {landing['lander']}): {why}"


def conflicts_text(bounce: Mapping[str, Any]) -> str:
    """``conflicts in a.py (landed by T001), ...``: the paths a landing conflicted in, and who touched them."""
    touched = bounce.get("touched_by") or {}
    return "conflicts in " + ", ".join(p + (f" (landed by {', '.join(touched[p])})" if touched.get(p) else "")
                                       for p in (bounce.get("conflict_paths") or [])[:10])


@renders("generate_work_packet", "generate_bundle_packet")
def _packet(result: dict[str, Any], view: View) -> list[Any]:
    content = result["content"]
    if not isinstance(content, str):
        import json

        return [Raw(json.dumps(content, indent=2, sort_keys=True, ensure_ascii=False))]
    text = clean(content, newlines=True).rstrip("\n")
    if not view.screen.tty:
        return [Raw(text)]  # piped: the markdown exactly as an agent reads it
    return markdown(text, view)


def markdown(text: str, view: View) -> list[Any]:
    """A packet's markdown (the forms its generator writes) for a terminal: bold headings, bullets with a
    hanging indent, cyan code spans, fenced commands never folded. ``rich.markdown`` loads markdown-it
    and Pygments (40-50 ms): ``packet`` on a terminal cost over twice its ``--json`` (bench_cli.py)."""
    out: list[Any] = []
    items: list[tuple[str, Any]] = []
    fenced = False
    for line in text.split("\n"):
        bullet = line.lstrip().startswith(("- ", "* ")) and not fenced
        if items and not bullet:
            out, items = out + pairs(items, view.screen, label_style="", gap=1), []
        if line.startswith("```"):
            fenced = not fenced
        elif fenced:
            out.append(hint("    " + line))
        elif bullet:
            items.append((" " * (len(line) - len(line.lstrip())) + "  •", _code_spans(line.lstrip()[2:])))
        elif line.startswith("#"):
            out.append(styled(line.lstrip("#").strip(), "bold", "underline" if line[:2] == "# " else ""))
        else:
            out.append(_code_spans(line))
    return out + pairs(items, view.screen, label_style="", gap=1)


def _code_spans(line: str) -> Any:
    from rich.text import Text

    shown = Text()
    for index, part in enumerate(clean(line).split("`")):
        shown.append(part, style="cyan" if index % 2 else "")
    return shown


# -- claims --------------------------------------------------------------------------------------

def claim_lines(claim: Mapping[str, Any], view: View) -> list[Any]:
    items = [("task", claim["task_id"]), ("claimed by", claim["claimed_by"]), ("claim id", claim["id"]),
             ("generation", str(claim["generation"])), ("lease", lease_text(claim)),
             ("files", plain(claim.get("expected_files")))]
    items += [(name, clean(str(claim[key]))) for name, key in (("branch", "branch"), ("worktree", "worktree_path"))
              if claim.get(key)]
    out = pairs(items, view.screen)
    if not view.args.get("dry_run"):
        out.append(hint(
            f"next: anvil packet {claim['task_id']}{view.route_flags()}; heartbeat with anvil renew "
            f"{claim['task_id']} --generation {claim['generation']}{view.actor_flag()}"))
        out += [hint(f"  {clean(line)}") for line in continuation_lines(claim)]
    return out


def continuation_lines(claim: Mapping[str, Any]) -> list[str]:
    """The claim's next commands as shell lines: cd into its tree, prove each command, commit, submit."""
    import shlex

    steps = claim.get("continuation") or {}
    lines = [f"cd {shlex.quote(steps['cd'])}"] if steps.get("cd") else []
    if steps.get("commit"):  # first: the proofs then prove the commit that is handed in
        lines.append(f"git add NEW_FILES && {shlex.join(steps['commit'])}")
    lines += [shlex.join(step["argv"]) for step in steps.get("prove") or []]
    if steps.get("prove") and steps.get("submit"):
        lines.append(shlex.join(steps["submit"]))
    return lines


@renders("claim_task", "claim_next_task")
def _claim(result: dict[str, Any], view: View) -> list[Any]:
    if "claim" not in result:  # claim_task: the claim itself
        return claim_lines(result, view)
    if result["claim"] is None:
        return [styled(f"nothing to claim: {clean(result['reason'])}", "yellow")]
    return claim_lines(result["claim"], view)


# -- project -------------------------------------------------------------------------------------

def _counts(counts: Mapping[str, int]) -> str:
    shown = [f"{status} {count}" for status, count in counts.items() if count]
    return ", ".join(shown) or "none"


@renders("get_project_status", "get_project_summary")
def _status(result: dict[str, Any], view: View) -> list[Any]:
    if result.get("initialized") is False:
        return [f"not initialized: run `anvil init` (state would live in {clean(result['state_dir'])})"]
    items = [("project", f"{result['project_name']} ({result['project_id']})")]
    if result.get("project_description"):
        items.append(("description", result["project_description"]))
    if "state_dir" in result:
        items.append(("state", result["state_dir"]))
    items.append(("prd", result.get("prd_status") or "none parsed"))
    items.append(("tasks", _counts(result["task_counts"])))
    claimable = result.get("ready_task_count", result.get("ready_queue_depth", 0))
    waiting = result.get("waiting_task_count")
    items.append(("claimable now", str(claimable) + (f" (+{waiting} waiting on dependencies)" if waiting else "")))
    items.append(("active claims", str(result["active_claim_count"])))
    trust = result.get("review_trust")
    if trust and any(trust.values()):
        items.append(("in review", ", ".join(f"{count} {level.replace('_', '-')}" for level, count in trust.items()
                                             if count)))
    landing = result.get("landing")
    if landing:
        where = landing["target"] + (f" on {landing['remote']}" if landing.get("remote") else "")
        items.append((f"landing on {where}", ", ".join(f"{landing[k]} {k}" for k in ("approved", "verifying",
                                                                                    "landed", "bounced"))))
    if "blocked_task_count" in result:
        items.append(("blocked", str(result["blocked_task_count"])))
    return pairs(items, view.screen)


@renders("get_landing_queue")
def _landing_queue(result: dict[str, Any], view: View) -> list[Any]:
    if not result["enabled"]:
        return ["landing is off: a lead enables it with `anvil config --land-target BRANCH [--land-remote NAME]`"]
    where = str(result["target"]) + (f" on {result['remote']}" if result.get("remote") else "")
    counts = result["counts"]
    out = pairs([("target", f"{where} ({result['method']})"),
                 ("queue", ", ".join(f"{counts[k]} {k}" for k in ("approved", "verifying", "landed", "bounced",
                                                                  "unlandable") if counts.get(k)) or "empty")],
                view.screen)
    rows = [{"task": t["task_id"] + (f" ({unit['bundle_id']})" if unit.get("bundle_id") else ""),
             "state": t["state"], "commit": str(t.get("approved_commit") or "-")[:12], "title": t["title"]}
            for unit in result["units"] for t in unit["tasks"]]
    rows += [{"task": b["task_id"], "state": f"bounced ({b['reason']})",
              "commit": str(b.get("approved_commit") or "-")[:12],
              "title": ", ".join(b.get("conflict_paths") or []) or str(b.get("failed_command") or "")}
             for b in result["bounced"]]
    if rows:
        out += ["", *table(rows, LANDING_COLUMNS, view.screen)]
    out.append(hint("land them: anvil land --all (as a lead or a runner, in a clone)"))
    return out


LANDING_COLUMNS = (Column("task", "task"), Column("state", "state"), Column("commit", "commit", drop=1),
                   Column("title", "title", text=True))


@renders("configure_project")
def _config(result: dict[str, Any], view: View) -> list[Any]:
    changed = set(result.get("changed") or [])
    items = []
    from anvil.engine.project import CONFIG_KEYS

    config = result["config"]
    for key, value in sorted(config.items(), key=lambda item: (CONFIG_KEYS + (item[0],)).index(item[0])):
        if key == "require_verified_effective":
            continue  # shown beside require_verified
        shown = "off" if value is None or value is False else "on" if value is True else str(value)
        if key == "require_verified" and value == "auto":
            shown += f" (in force: {'on' if config.get('require_verified_effective') else 'off'})"
        items.append((label(key), shown + ("  (changed)" if key in changed else "")))
    return pairs(items, view.screen)


# -- PRD -----------------------------------------------------------------------------------------

DIAGNOSTIC_COLUMNS = (Column("line", "line"), Column("severity", "severity", style=SEVERITY_STYLE, drop=1),
                      Column("code", "code", drop=2), Column("message", "message", text=True))


@renders("parse_prd")
def _parse(result: dict[str, Any], view: View) -> list[Any]:
    if result["error_count"]:
        state = "nothing recorded: fix the errors below and parse again"
    elif result["recorded"]:
        state = f"revision {result['revision']} recorded ({result['prd_status']})"
    else:
        state = f"unchanged since revision {result['revision']} ({result['prd_status']}): nothing recorded"
    items = [("prd", f"{result['prd_id']}: {state}"),
             ("found", f"{result['requirement_count']} requirements, {result['feature_count']} features, "
                       f"{result['task_count']} tasks")]
    if result.get("demoted"):
        items.append(("approval", "a material change demoted the PRD to draft: review and approve it again"))
    if result.get("source_notice"):
        items.append(("source", result["source_notice"]))
    elif result.get("source_file"):
        items.append(("source", f"{result['source_file']} (a parse without --file re-reads it)"))
    if result.get("project_renamed"):
        items.append(("project", f"named {result['project_renamed']}, after the PRD's '# Project:' heading"))
    return pairs(items, view.screen) + _diagnostics(result, view)


def _diagnostics(result: dict[str, Any], view: View) -> list[Any]:
    """The errors and warnings of a parse or a check, each list a table."""
    out: list[Any] = []
    for key in ("errors", "warnings"):
        rows = result[key]
        count, omitted = result[f"{key[:-1]}_count"], result[f"{key}_omitted"]
        if rows or omitted:
            out += _diagnostic_table(rows, view, f"{key} ({count}{f', {omitted} not shown' if omitted else ''})")
    return out


def _diagnostic_table(rows: list[dict[str, Any]], view: View, title: str) -> list[Any]:
    cells = [{**row, "line": str(row["line"]) if row["line"] else "-"} for row in rows]
    return ["", *table(cells, DIAGNOSTIC_COLUMNS, view.screen, title)]


@renders("check_prd")
def _check(result: dict[str, Any], view: View) -> list[Any]:
    if result.get("foreign_format"):
        return [clean(result["foreign_format"])]
    state = "clean: `anvil prd parse` would record it" if result["ok"] else "errors: fix them before parsing"
    items = [("prd", f"{clean(result['project_name']) or '(no name)'}: {state}"),
             ("found", f"{result['requirement_count']} requirements, {result['feature_count']} features, "
                       f"{result['task_count']} tasks (nothing recorded)")]
    return pairs(items, view.screen) + _diagnostics(result, view)


@renders("prd_template", "get_docs")
def _text(result: dict[str, Any], view: View) -> list[Any]:
    if result.get("written"):
        return [f"wrote {clean(result['written'])}: edit it, then `anvil prd check {clean(result['written'])}`; "
                f"the format is in `{result['format_doc']}`"]
    return [Raw(str(result.get("template", result.get("text"))).rstrip("\n"))]


def cards(items: list[tuple[str, str, list[str]]], view: View) -> list[Any]:
    """Entries with a heading line and indented paragraphs (for long texts a table would squeeze)."""
    out: list[Any] = []
    for heading, tag, texts in items:
        out.append(styled(clean(heading), "bold") + (f"  {clean(tag)}" if tag else ""))
        for text in texts:
            out += paragraph(text, view.screen, "    ")
    return out


@renders("find_decisions")
def _decisions(result: dict[str, Any], view: View) -> list[Any]:
    counts = ", ".join(f"{label(k)} {v}" for k, v in result["counts_by_kind"].items() if v) or "none"
    out = pairs([("prd", result["prd_id"]), ("open decisions", f"{result['total']} ({counts})")], view.screen)
    items = [(d["id"], f"{label(d['kind'])}, {d['location']}",
              [d["text"]] + ([f"resolve in: {d['suggested_resolution_field']}"] if d["suggested_resolution_field"]
                             else [])) for d in result["decisions"]]
    return out + ([""] + cards(items, view) if items else [])


@renders("assess_prd")
def _assess(result: dict[str, Any], view: View) -> list[Any]:
    if result.get("error_count"):
        return [*pairs([("prd", result["prd_id"]), ("findings", "none until the parse errors below are fixed")],
                       view.screen), *_diagnostic_table(result["errors"], view, f"errors ({result['error_count']})")]
    out = pairs([("prd", result["prd_id"]), ("findings", f"{result['count']} (advisory: nothing is blocked)")],
                view.screen)
    items = [(f["id"], f"{f['severity']} · {label(f['category'])} · {f['location']}",
              [f["message"], f"ask: {f['challenge_question']}"]) for f in result["findings"]]
    return out + ([""] + cards(items, view) if items else [])


@renders("add_token")
def _token(result: dict[str, Any], view: View) -> list[Any]:
    who = f"{result['actor']} (role {result['role']}, id {result['token_id']})"
    if result["token"] is None:
        return [clean(f"no token shown for {who}: a dry run, or the retry of an earlier call")]
    return [clean(f"token for {who}, expires {result['expires_at'] or 'never'}:"), clean(result["token"]),
            styled("Store it now: it is shown only once. Give it to its holder in an environment variable "
                              "and point --mcp-token-env at that variable.", "yellow")]


# -- bundles -------------------------------------------------------------------------------------

MEMBER_COLUMNS = (Column("task", "task_id"), Column("stage", "stage", drop=2),
                  Column("status", "status", style=STATUS_STYLE), Column("authorized", "authorized", drop=1),
                  Column("title", "title", text=True))
BUNDLE_COLUMNS = (Column("id", "id"), Column("status", "status"), Column("coordinator", "coordinator", drop=3),
                  Column("tasks", "task_count", drop=2), Column("round", "review_round", drop=1),
                  Column("held by", "claimed_by", text=True))


def gate_text(gate: Mapping[str, Any]) -> str:
    """A review gate in one line: round, approvals, what is missing or blocking."""
    if not gate.get("round"):
        return "no review round yet"
    parts = [f"round {gate['round']}", f"approved by {', '.join(gate['independent_approvers']) or 'nobody'}"]
    if gate.get("missing_angles"):
        parts.append("missing " + ", ".join(gate["missing_angles"]))
    if gate.get("blocking"):
        parts.append("blocked by " + ", ".join(f"{v['reviewer']} ({v['decision']})" for v in gate["blocking"]))
    return "; ".join(parts) + ("; passed" if gate.get("passed") else "")


@renders("create_bundle", "get_bundle", "claim_bundle", "submit_bundle_progress", "record_bundle_review",
         "finalize_bundle_review", "reconcile_bundle", "supersede_bundle")
def _bundle(result: dict[str, Any], view: View) -> list[Any]:
    bundle, screen = result["bundle"], view.screen
    policy = bundle["policy"]
    out: list[Any] = [styled(clean(f"{bundle['id']}  {bundle['status']}"), "bold")]
    items = [("coordinator", bundle["coordinator"]), ("prd", bundle["prd_id"]),
             ("policy", f"{policy['max_tasks']} tasks, {policy['max_serial_stages']} stages, "
                        f"{policy['max_reviews']} reviews a round, {policy['max_rereviews']} re-review(s), angles "
                        f"{', '.join(policy['required_angles'])}")]
    claim = bundle.get("claim")
    if claim:
        items.append(("claim", f"{claim['claimed_by']}, generation {claim['generation']}, lease {lease_text(claim)}"))
    items.append(("review", gate_text(bundle["gate"])))
    delivery = bundle["delivery"]
    if delivery["checkpoints"]:
        where = " · ".join(x for x in (delivery["commit_sha"], delivery["pr_url"]) if x)
        items.append(("delivery", f"{where}{' (merged)' if delivery['merged'] else ''}"))
    items += [(label(key), bundle[key]) for key in ("supersedes", "superseded_by") if bundle.get(key)]
    items += [(label(key), plain(result[key])) for key in ("changes", "reopened", "accepted", "warnings")
              if result.get(key)]
    out += pairs(items, screen)
    cells = [{**m, "stage": str(m["stage"]), "authorized": "yes" if m["authorized"] else "-",
              "title": m.get("title") or "-"} for m in bundle["members"]]
    out += ["", *table(cells, MEMBER_COLUMNS, screen, f"members ({len(cells)})")]
    for member in result.get("blockers") or []:
        out += paragraph(f"{member['task_id']}: {'; '.join(member['blockers'])}", screen)
    if claim and not view.args.get("dry_run") and "continuations" in result:
        out.append(hint(f"next: anvil bundle packet {bundle['id']}; heartbeat with anvil renew "
                                f"{bundle['id']} --target-kind bundle --generation {claim['generation']}"
                                f"{view.actor_flag()}"))
    return out


@renders("list_bundles")
def _bundles(result: dict[str, Any], view: View) -> list[Any]:
    if not result["bundles"]:
        return ["no bundles match"]
    cells = [{k: plain(v) for k, v in row.items()} for row in result["bundles"]]
    return table(cells, BUNDLE_COLUMNS, view.screen)



GRAPH_COLUMNS = (Column("id", "id"), Column("status", "state", style=STATUS_STYLE),
                 Column("priority", "priority", drop=2), Column("depends on", "deps", drop=1),
                 Column("waits on", "waits", drop=3), Column("title", "title", text=True))


def _claimable(result: dict[str, Any]) -> str:
    shown = result["ready_to_claim"]
    total = (result.get("paging") or {}).get("ready_count", len(shown))
    if not shown:
        return "none"
    return ", ".join(shown) + (f" (and {total - len(shown)} more)" if total > len(shown) else "")


@renders("get_dependency_graph")
def _graph(result: dict[str, Any], view: View) -> list[Any]:
    if result.get("diagram"):
        return [Raw(clean(result["diagram"], newlines=True).rstrip("\n"))]  # Mermaid or DOT, as it is
    deps: dict[str, list[str]] = {}
    for edge in result["edges"]:
        deps.setdefault(edge["to"], []).append(edge["from"])
    path = result.get("critical_path") or []
    on_path = set(path)
    cells = [{"id": n["id"] + (" *" if n["id"] in on_path else ""), "state": task_state(n), "priority": n["priority"],
              "deps": ", ".join(deps.get(n["id"], [])) or "-", "waits": ", ".join(n.get("blocked_by") or []) or "-",
              "title": n["title"]} for n in result["nodes"]]
    out = pairs([("critical path", " -> ".join(path) + " (marked *)" if path else "nothing left to do"),
                 ("claimable now", _claimable(result))], view.screen)
    out += ["", *table(cells, GRAPH_COLUMNS, view.screen)]
    paging = result.get("paging") or {}
    if paging.get("next_cursor"):
        out.append(hint(f"showing {len(cells)} of {paging.get('node_count')} tasks; next page: anvil "
                                     f"graph --cursor {paging['next_cursor']}"))
    out.append(hint("pictures: anvil graph --format mermaid (GitHub) or --format dot (Graphviz)"))
    return out


@renders("submit_completion_evidence")
def _submitted(result: dict[str, Any], view: View) -> list[Any]:
    task = result["task_id"]
    if result.get("claim_ended"):
        items = [("handed in", f"{task} for review (evidence {result['evidence_id']}); your claim ended"),
                 ("status", result["task_status"])]
    else:
        items = [("noted", f"evidence {result['evidence_id']} on {task}: a note, your claim (generation "
                           f"{result['generation']}) goes on"), ("status", result["task_status"])]
    items += submission_items(result)
    brief = result.get("next_ready")
    if brief:
        items.append(("next ready", plain(brief)))
    out = pairs(items, view.screen)
    missing = result.get("missing_claim_bound_proofs") or []
    if result.get("claim_ended") and missing:  # accepted by an advisory gate: approval may still need them
        out.append(styled(clean(
            "warning: no passing proof of " + ", ".join(missing[:5]) + (f" and {len(missing) - 5} more"
                                                                       if len(missing) > 5 else "")
            + ": the advisory evidence gate accepted it, a strict review refuses it (an enforcing gate refuses "
              "such a submission: prove each command with anvil proof run and hand the files in with --proof)"),
            "yellow"))
    if brief:
        out.append(hint(f"claim it: anvil claim {brief['id']}{view.actor_flag()}"))
    return out


@renders("apply_review_decision")
def _decided(result: dict[str, Any], view: View) -> list[Any]:
    verb = "accepted: done" if result["decision"] == "accepted" else "rejected: back to drafted"
    items = [("decision", f"{result['task_id']} {verb}"), ("reviewer", result["reviewer"]),
             ("evidence", result["evidence_id"]), *decision_items(result)]
    rejection = result.get("rejection")
    if isinstance(rejection, dict) and rejection.get("reason"):
        items.append(("reason", str(rejection["reason"])))
    if isinstance(rejection, dict):
        counted = "counts against" if rejection.get("counting") else "does not count against"
        items.append(("kind", f"{rejection.get('category')}: {counted} {rejection.get('author')}'s accept rate"))
        items += [("because", str(fact)) for fact in rejection.get("basis") or []][:5]
        if rejection.get("next_step"):
            items.append(("next", str(rejection["next_step"])))
    if result.get("next_ready"):
        items.append(("next ready", plain(result["next_ready"])))
    return pairs(items, view.screen)


@renders("renew_claim")
def _renewed(result: dict[str, Any], view: View) -> list[Any]:
    return pairs([("renewed", f"claim {result['claim_id']} (generation {result['generation']})"),
                  ("lease", lease_text(result))], view.screen)
