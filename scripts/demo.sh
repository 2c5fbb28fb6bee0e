#!/usr/bin/env bash
# A real anvil flow on the embedded SQLite default: the sample PRD through parse, review, approve,
# plan, score, task review, next, claim, progress, submit and review, then an integrity check.
# State goes to a fresh temporary project (ANVIL_STATE_LAYOUT=local keeps it in <project>/.anvil).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
project=$(mktemp -d "${TMPDIR:-/tmp}/anvil-demo.XXXXXX")
cd "$project"
export ANVIL_ROOT="$project" ANVIL_STATE_LAYOUT=local
unset ANVIL_MCP_TARGET ANVIL_MCP_TOKEN_ENV
mkdir -p docs && cp "$here/anvil/engine/prd/sample.md" docs/prd.md

run() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

run anvil init --name "Shortlink"
run anvil prd parse --file docs/prd.md
run anvil prd find-decisions
run anvil prd review --reviewer lead
run anvil prd review --approve --reviewer lead
run anvil plan
run anvil score
run anvil review tasks
run anvil list
run anvil next --actor agent-1
task=$(anvil next --actor agent-1 -q)
gen=$(anvil claim "$task" --actor agent-1 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["generation"])')
printf '\n\033[1m$ anvil claim %s --actor agent-1\033[0m  (generation %s)\n' "$task" "$gen"
run anvil progress "$task" --actor agent-1 --notes "schema written, tests next" --phase build --generation "$gen"
# The work itself: a small store and its test (what T001's verification command runs).
python - <<'PY'
from pathlib import Path
from anvil.ops.scenarios import STORE_PY, TEST_STORE_PY
Path("shortlink").mkdir(exist_ok=True); Path("tests").mkdir(exist_ok=True)
Path("shortlink/__init__.py").write_text(""); Path("shortlink/store.py").write_text(STORE_PY)
Path("tests/test_store.py").write_text(TEST_STORE_PY)
PY
run anvil proof run "$task" --actor agent-1 --generation "$gen" -- python -m unittest -q tests/test_store.py
proof=$(ls .anvil/proofs/*.json | head -1)
run anvil submit "$task" --actor agent-1 --proof "$proof" --file shortlink/store.py --generation "$gen"
run anvil apply "$task" --approve --reviewer lead
run anvil summary
run anvil verify
printf '\nstate kept in %s/.anvil (events.jsonl is the audit log)\n' "$project"
