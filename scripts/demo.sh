#!/usr/bin/env bash
# A real anvil flow on the embedded SQLite default, in a fresh git repository: the sample PRD
# through parse, review, approve, plan, score and task review; an agent claims the next task into
# its own worktree, attests its progress, proves the verification command (signed with a key the
# lead trusts: that names who asserted it, it stays client_reported), commits and submits, which
# binds the branch head; the project requires verified proofs, so approval waits until a second
# identity (runner-1) re-proves that exact commit with `anvil verify-task` in a scratch worktree;
# the lead approves; the runner lands it (merge onto the remote's main in a scratch worktree, the
# verification re-run on the merged tree, a fast-forward push); `anvil verify` replays the log.
# State goes to the project's .anvil (ANVIL_STATE_LAYOUT=local), shared by its worktrees.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
project=$(mktemp -d "${TMPDIR:-/tmp}/anvil-demo.XXXXXX")/shortlink
mkdir -p "$project" && cd "$project"
export ANVIL_ROOT="$project" ANVIL_STATE_LAYOUT=local
unset ANVIL_MCP_TARGET ANVIL_MCP_TOKEN_ENV ANVIL_SIGNING_KEY ANVIL_SIGNING_KEY_FILE
mkdir -p docs && cp "$here/anvil/engine/prd/sample.md" docs/prd.md
printf '.anvil/\n' > .gitignore
git init -q -b main && git add . \
  && git -c user.name=demo -c user.email=demo@example.com commit -q -m "the PRD"
# The team's remote (a bare repository stands in for it): approved work lands on its main.
git init -q --bare -b main "$project/../remote.git" && git remote add origin "$project/../remote.git" \
  && git push -q origin main

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
# Approved work reaches main only through the landing queue; claims start from origin/main.
run anvil config --land-target main --land-remote origin --actor lead
# The agent claims the task into its own worktree; the claim returns the exact next commands.
claim=$(anvil claim-next --worktree --actor agent-1 --json)
printf '\n\033[1m$ anvil claim-next --worktree --actor agent-1 --json\033[0m\n'
read -r task gen tree < <(python3 -c 'import json,sys; c=json.load(sys.stdin)["claim"]
print(c["task_id"], c["generation"], c["worktree_path"])' <<<"$claim")
printf 'claimed %s (generation %s) in worktree %s\n' "$task" "$gen" "$tree"
run git worktree list
run cd "$tree"
run anvil packet "$task"
# The work itself: a small store and its test (what T001's verification command runs).
python3 - <<'PY'
from pathlib import Path
from anvil.ops.scenarios import STORE_PY, TEST_STORE_PY
Path("shortlink").mkdir(exist_ok=True); Path("tests").mkdir(exist_ok=True)
Path("shortlink/__init__.py").write_text(""); Path("shortlink/store.py").write_text(STORE_PY)
Path("tests/test_store.py").write_text(TEST_STORE_PY)
PY
run anvil attest "$task" --actor agent-1 --generation "$gen" --out .anvil/proofs/progress.json
run anvil progress "$task" --actor agent-1 --generation "$gen" --attestation-file .anvil/proofs/progress.json
run anvil renew "$task" --actor agent-1 --generation "$gen"
# A signing key for the agent's proofs, trusted by the lead (the private key never leaves its file).
key=$(anvil keys generate --out "$project/../agent-1.pem" --json)
public=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["public_key"])' <<<"$key")
printf '\n\033[1m$ anvil keys generate --out ../agent-1.pem\033[0m\npublic key %s\n' "$public"
run anvil trust add "$public" --label agent-1 --actor lead
run anvil proof run "$task" --actor agent-1 --generation "$gen" --key-file "$project/../agent-1.pem" \
  --out .anvil/proofs/unittest.json -- python -m unittest -q tests/test_store.py
# The submission hands in the claim branch's head commit: the work is committed first.
run git add shortlink tests
run git -c user.name=agent-1 -c user.email=agent-1@example.com commit -q -m "$task: storage layer"
run anvil submit "$task" --actor agent-1 --generation "$gen" --proof .anvil/proofs/unittest.json \
  --file shortlink/store.py
# The lead requires proofs that someone other than the implementer re-ran (on by default in a git mode).
run anvil config --require-verified on --actor lead
run anvil apply "$task" --approve --reviewer lead || true
# A second identity re-proves the submitted commit in a scratch worktree of its own (removed afterwards).
run cd "$project"
run anvil verify-task "$task" --actor runner-1
run anvil show "$task"
run anvil apply "$task" --approve --reviewer lead
# The runner lands it from its own clone (here the project's checkout, left as it is).
run anvil land "$task" --actor runner-1
run git --git-dir "$project/../remote.git" log --oneline main
run anvil summary
run anvil verify
printf '\nstate kept in %s/.anvil (events.jsonl is the audit log); the work landed on main of %s\n' \
  "$project" "$(cd "$project/.." && pwd)/remote.git"
