"""Crash campaign: writer processes SIGKILLed at random points while the others go on.

Usage: ``python scripts/crash_campaign.py [--rounds N] [--writers W] [--seconds S] [--seed N]``

Each writer is an agent process looping over claim-next -> progress (text with U+2028, U+2029,
U+0085 and other line-like characters) -> renew -> release or submit, every call with an
idempotency key. Before a call it prints ``B <call>``, after it ``A <call> <result>`` (an
acknowledged write). The campaign kills random writers with SIGKILL at random moments (mid
transaction, mid mirror append, mid output) and starts a replacement for each, which first retries
the killed writer's unacknowledged call with the same key, then releases whatever its agent still
holds and carries on.

After each round (every writer stopped) it checks:

- no acknowledged write is lost: each acknowledged call's ``idempotency.recorded`` event is in the
  log with the very result the writer was given, and the claims it names exist;
- no task ever had two live claims (replaying the log);
- ``anvil verify`` passes: the database file, the hash chain, the ``events.jsonl`` mirror (equal to
  the database) and replay equality.

It prints rounds, kills, acknowledged writes, retries and lost writes, and exits 1 on any loss or
failed check. ``tests/concurrency/test_crash_campaign.py`` runs a small campaign in the default
suite; run this script for long campaigns.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

LINE_LIKE = "\u2028\u2029\u0085\u000b\u000c\u001c\u001d\u001e\r"
LEASE_SECONDS = 120


# -- the writer process ------------------------------------------------------------------------

def _call(name: str, given: dict[str, Any]) -> dict[str, Any]:
    """Run operation ``name`` like the direct CLI path does (spec defaults, no pydantic)."""
    from anvil.ops.contract import load_specs
    from anvil.ops.runtime import default_context, execute

    spec = next(s for s in load_specs() if s.name == name)
    args = {p.name: p.fresh_default() for p in spec.params}
    args.update(given)
    return execute(spec, args, default_context())


def _emit(tag: str, *parts: Any) -> None:
    sys.stdout.write(" ".join([tag, *(json.dumps(p, ensure_ascii=True, sort_keys=True) for p in parts)]) + "\n")
    sys.stdout.flush()


def _acked(call: dict[str, Any]) -> dict[str, Any] | None:
    from anvil.engine.errors import AnvilError

    _emit("B", call)
    try:
        result = _call(call["op"], call["args"])
    except AnvilError as error:
        _emit("R", call, {"code": error.code})  # refused: nothing written, nothing acknowledged
        return None
    _emit("A", call, result)
    return result


def writer(actor: str, retry: str | None, seed: int) -> None:
    """One agent's loop; never returns (the campaign kills or stops it)."""
    rng = random.Random(seed)
    incarnation = secrets.token_hex(4)
    if retry:
        _acked(json.loads(retry))
    held = _call("list_tasks", {"claimed_by": actor})["tasks"]
    for n, task in enumerate(held):
        claim = _call("get_task", {"task_id": task["id"]})["claim"]
        if claim:
            _acked({"op": "release_task", "args": {"task_id": task["id"], "actor": actor,
                                                    "generation": claim["generation"],
                                                    "idempotency_key": f"{actor}.{incarnation}.resume{n}"}})
    _emit("READY")
    step = 0
    while True:
        step += 1
        key = f"{actor}.{incarnation}.{step}"
        got = _acked({"op": "claim_next_task", "args": {"actor": actor, "lease_duration_seconds": LEASE_SECONDS,
                                                         "idempotency_key": key + ".claim"}})
        claim = got and got["claim"]
        if not claim:
            continue
        fence = {"task_id": claim["task_id"], "actor": actor, "generation": claim["generation"]}
        note = "".join(rng.choice(LINE_LIKE + "ab\u00e9\u4e2d\U0001f600 ") for _ in range(rng.randint(1, 24)))
        _acked({"op": "submit_progress", "args": {**fence, "notes": f"step {step}{note}",
                                                   "idempotency_key": key + ".progress"}})
        _acked({"op": "renew_claim", "args": {**fence, "extend_seconds": LEASE_SECONDS,
                                               "idempotency_key": key + ".renew"}})
        if rng.random() < 0.1:
            _acked({"op": "submit_completion_evidence", "args": {**fence, "commands_run": ["pytest -q"],
                                                                  "idempotency_key": key + ".submit"}})
        else:
            _acked({"op": "release_task", "args": {**fence, "reason": "campaign", "idempotency_key": key + ".release"}})


# -- the campaign ------------------------------------------------------------------------------

@dataclass
class Writer:
    actor: str
    proc: subprocess.Popen[bytes]
    lines: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)
    reader: threading.Thread | None = None

    def start_reading(self) -> None:
        def read() -> None:
            assert self.proc.stdout is not None
            for raw in self.proc.stdout:
                if not raw.endswith(b"\n"):
                    break  # cut off by the kill: not acknowledged
                line = raw.decode("utf-8").rstrip("\n")
                self.lines.append(line)
                if line == "READY":
                    self.ready.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()

    def finish(self) -> None:
        if self.reader is not None:
            self.reader.join(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@dataclass
class Figures:
    rounds: int = 0
    kills: int = 0
    acknowledged: int = 0
    retries: int = 0
    refused: int = 0
    lost: int = 0
    problems: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (f"rounds {self.rounds}  kills {self.kills}  acknowledged writes {self.acknowledged}  retries "
                f"{self.retries}  refused {self.refused}  lost writes {self.lost}")


def _spawn(actor: str, env: dict[str, str], retry: dict[str, Any] | None, seed: int) -> Writer:
    argv = [sys.executable, str(Path(__file__).resolve()), "--writer", actor, "--seed", str(seed)]
    if retry is not None:
        argv += ["--retry", json.dumps(retry)]
    proc = subprocess.Popen(argv, env=env, cwd=env["ANVIL_ROOT"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)
    w = Writer(actor, proc)
    w.start_reading()
    return w


def _pending(w: Writer) -> dict[str, Any] | None:
    """The call the writer began and never finished (None when its last call was answered)."""
    pending = None
    for line in w.lines:
        tag, _, rest = line.partition(" ")
        if tag == "B":
            pending = json.loads(rest)
        elif tag in ("A", "R"):
            pending = None
    return pending


def _acknowledged(w: Writer) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    decoder = json.JSONDecoder()
    for line in w.lines:
        if line.startswith("A "):
            call, end = decoder.raw_decode(line, 2)
            result, _ = decoder.raw_decode(line, end + 1)
            out.append((call, result))
    return out


def prepare(env: dict[str, str], tasks: int = 200) -> None:
    """A project with ``tasks`` independent ready tasks (from the benchmark PRD generator)."""
    from anvil.ops.invoke import invoke
    from scripts.prdgen import generate_prd

    root = Path(env["ANVIL_ROOT"])
    invoke("init_project", {"name": "Campaign"}, env=env, cwd=str(root))
    (root / "prd.md").write_text(generate_prd(tasks, 6, dep_probability=0.0, shared_file_ratio=0.0), encoding="utf-8")
    for name, args in (("parse_prd", {"file": "prd.md"}), ("review_prd", {"reviewer": "lead"}),
                       ("review_prd", {"reviewer": "lead", "approve": True}), ("plan_tasks", {"use_llm": False}),
                       ("review_tasks", {})):
        invoke(name, args, env=env, cwd=str(root))


def check(env: dict[str, str], acked: list[tuple[dict[str, Any], dict[str, Any]]], figures: Figures) -> None:
    """Every acknowledged write is in the log with its result; no double claim; verify passes."""
    from anvil.engine.storage.integrity import verify
    from anvil.engine.storage.paths import resolve_state
    from anvil.engine.storage.store import Store

    with Store.open(resolve_state(env, env["ANVIL_ROOT"])) as store:
        events = list(store.events())
        report = verify(store)
    recorded = {(e.actor, e.payload["operation"], e.payload["key"]): e.payload["result"]
                for e in events if e.type == "idempotency.recorded"}
    claims = {e.payload["claim_id"] for e in events if e.type == "claim.acquired"}
    for call, result in acked:
        args = call["args"]
        stored = recorded.get((args["actor"], call["op"], args["idempotency_key"]))
        # The runtime adds who acted and whether it wrote to every result; the record keeps the rest.
        expected = {k: v for k, v in json.loads(json.dumps(result)).items() if k not in ("actor_identity", "dry_run")}
        if stored != expected:
            figures.lost += 1
            figures.problems.append(f"lost: {call['op']} {args['idempotency_key']}")
        claim = result.get("claim") if call["op"] == "claim_next_task" else None
        if claim and claim["id"] not in claims:
            figures.lost += 1
            figures.problems.append(f"lost claim {claim['id']}")
    live: dict[str, str] = {}
    for e in events:
        p = e.payload
        if e.type == "claim.acquired":
            if p["task_id"] in live.values():
                figures.problems.append(f"event {e.seq}: task {p['task_id']} claimed twice")
            live[p["claim_id"]] = p["task_id"]
        elif e.type in ("claim.released", "claim.expired", "evidence.submitted"):
            live.pop(p.get("claim_id", ""), None)
    if not report["ok"]:
        figures.problems.extend(f"verify: {p}" for p in report["problems"])


def run_campaign(env: dict[str, str], *, rounds: int, writers: int, seconds: float, seed: int,
                 kill_gap: tuple[float, float] = (0.05, 0.4), log: Any = None) -> Figures:
    """Run ``rounds`` rounds on the prepared project of ``env``; returns the figures."""
    rng = random.Random(seed)
    figures = Figures()
    for number in range(1, rounds + 1):
        live = [_spawn(f"agent-{i}", env, None, rng.randrange(1 << 30)) for i in range(writers)]
        done: list[Writer] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(*kill_gap))  # pacing of the kills, not synchronisation
            ready = [w for w in live if w.ready.is_set() and w.proc.poll() is None]
            if not ready:
                continue
            victim = rng.choice(ready)
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait(timeout=30)
            victim.finish()
            figures.kills += 1
            retry = _pending(victim)
            figures.retries += retry is not None
            live.remove(victim)
            done.append(victim)
            live.append(_spawn(victim.actor, env, retry, rng.randrange(1 << 30)))
        for w in live:
            w.ready.wait(timeout=60)  # let a fresh replacement do its retry before stopping it
            w.proc.send_signal(signal.SIGKILL)
            w.proc.wait(timeout=30)
            w.finish()
            figures.kills += 1
            done.append(w)
        acked = [pair for w in done for pair in _acknowledged(w)]
        figures.acknowledged += len(acked)
        figures.refused += sum(1 for w in done for line in w.lines if line.startswith("R "))
        # the last kill of each writer may leave a call unanswered: retry those, as agents would
        for w in done[-writers:]:
            pending = _pending(w)
            if pending is not None:
                figures.retries += 1
                try:
                    result = _call_in(env, pending)
                except Exception:  # refused on retry: it was never acknowledged
                    continue
                acked.append((pending, result))
                figures.acknowledged += 1
        check(env, acked, figures)
        figures.rounds = number
        if log:
            print(f"round {number}: {figures.line()}", file=log, flush=True)
    return figures


def _call_in(env: dict[str, str], call: dict[str, Any]) -> dict[str, Any]:
    from anvil.ops.invoke import invoke

    return invoke(call["op"], call["args"], env=env, cwd=env["ANVIL_ROOT"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="SIGKILL writers at random points; check nothing acknowledged "
                                                 "is lost.")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--writers", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=8.0, help="length of a round")
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--writer", help=argparse.SUPPRESS)
    parser.add_argument("--retry", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.writer:
        writer(args.writer, args.retry, args.seed or 0)
        return 0
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    with tempfile.TemporaryDirectory(prefix="anvil-crash-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANVIL_")}
        env.update(ANVIL_HOME=str(Path(tmp) / "home"), ANVIL_ROOT=str(Path(tmp) / "project"))
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        Path(env["ANVIL_ROOT"]).mkdir()
        prepare(env, args.tasks)
        print(f"seed {seed}; {args.writers} writers, {args.rounds} rounds of {args.seconds:g} s", flush=True)
        started = time.monotonic()
        figures = run_campaign(env, rounds=args.rounds, writers=args.writers, seconds=args.seconds, seed=seed,
                               log=sys.stdout)
    print(f"total: {figures.line()}  ({time.monotonic() - started:.0f} s)")
    for problem in figures.problems[:20]:
        print("  " + problem)
    return 1 if figures.problems or figures.lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
