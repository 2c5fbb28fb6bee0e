"""Ordered schema migrations. The schema version is the number of migrations applied.

Append new migrations at the end; never edit one that has shipped. ``PROJECTION_TABLES`` lists
the tables rebuilt by replaying the event log (``verify`` compares them row for row).
"""

from __future__ import annotations

APPLICATION_ID = 0x616E766C  # "anvl": marks the file as an anvil database

MIGRATIONS: tuple[str, ...] = (
    # 1: event log, project, PRDs, plan, claims, evidence, reviews, progress, idempotency
    """
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY,
        ts TEXT NOT NULL,
        actor TEXT NOT NULL,
        type TEXT NOT NULL,
        payload TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL
    );
    CREATE TABLE project (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        config TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL,
        created_by TEXT NOT NULL
    );
    CREATE TABLE prds (
        prd_id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        revision INTEGER NOT NULL,
        source_digest TEXT NOT NULL,
        material_digest TEXT NOT NULL,
        document TEXT NOT NULL,
        approved_revision INTEGER,
        approved_source_digest TEXT,
        approved_material_digest TEXT,
        reviewer TEXT,
        notes TEXT,
        planned_revision INTEGER,
        updated_at TEXT NOT NULL,
        updated_seq INTEGER NOT NULL
    );
    CREATE TABLE features (
        id TEXT NOT NULL,
        prd_id TEXT NOT NULL,
        title TEXT NOT NULL,
        description TEXT NOT NULL,
        requirements TEXT NOT NULL,
        position INTEGER NOT NULL,
        PRIMARY KEY (prd_id, id)
    );
    CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        prd_id TEXT NOT NULL,
        feature_id TEXT,
        title TEXT NOT NULL,
        description TEXT NOT NULL,
        status TEXT NOT NULL,
        priority TEXT NOT NULL,
        priority_rank INTEGER NOT NULL,
        type TEXT,
        likely_files TEXT NOT NULL,
        dependencies TEXT NOT NULL,
        inferred_dependencies TEXT NOT NULL,
        acceptance_criteria TEXT NOT NULL,
        verification TEXT NOT NULL,
        conflict_groups TEXT NOT NULL,
        scores TEXT,
        complexity INTEGER,
        blast_radius INTEGER,
        review_risk INTEGER,
        claim_generation INTEGER NOT NULL DEFAULT 0,
        unmet_deps INTEGER NOT NULL DEFAULT 0,
        created_seq INTEGER NOT NULL,
        updated_seq INTEGER NOT NULL
    );
    CREATE INDEX tasks_queue ON tasks (status, unmet_deps, priority_rank DESC, complexity IS NULL, complexity,
                                       created_seq, id);
    CREATE INDEX tasks_prd ON tasks (prd_id, id);
    CREATE INDEX tasks_feature ON tasks (feature_id, id);
    CREATE TABLE task_deps (
        task_id TEXT NOT NULL,
        depends_on TEXT NOT NULL,
        PRIMARY KEY (task_id, depends_on)
    ) WITHOUT ROWID;
    CREATE INDEX task_deps_reverse ON task_deps (depends_on, task_id);
    CREATE TABLE task_conflict_groups (
        group_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        PRIMARY KEY (group_id, task_id)
    ) WITHOUT ROWID;
    CREATE INDEX task_conflict_groups_task ON task_conflict_groups (task_id, group_id);
    CREATE TABLE dependency_overrides (
        task_id TEXT NOT NULL,
        depends_on TEXT NOT NULL,
        kind TEXT NOT NULL,
        PRIMARY KEY (task_id, depends_on)
    ) WITHOUT ROWID;
    CREATE TABLE claims (
        id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        actor TEXT NOT NULL,
        generation INTEGER NOT NULL,
        status TEXT NOT NULL,
        claimed_at TEXT NOT NULL,
        lease_expires_at TEXT NOT NULL,
        expected_files TEXT NOT NULL,
        ended_at TEXT,
        end_reason TEXT
    );
    CREATE UNIQUE INDEX claims_one_active ON claims (task_id) WHERE status = 'active';
    CREATE INDEX claims_active_expiry ON claims (lease_expires_at) WHERE status = 'active';
    CREATE TABLE claim_files (
        claim_id TEXT NOT NULL,
        file TEXT NOT NULL,
        PRIMARY KEY (file, claim_id)
    ) WITHOUT ROWID;
    CREATE TABLE evidence (
        id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        claim_id TEXT,
        actor TEXT NOT NULL,
        category TEXT NOT NULL,
        commands_run TEXT NOT NULL,
        files_changed TEXT NOT NULL,
        output_excerpt TEXT,
        pr_url TEXT,
        commit_sha TEXT,
        submitted_at TEXT NOT NULL,
        seq INTEGER NOT NULL
    );
    CREATE INDEX evidence_task ON evidence (task_id, seq);
    CREATE TABLE reviews (
        seq INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        reviewer TEXT NOT NULL,
        decision TEXT NOT NULL,
        reason TEXT,
        reason_code TEXT,
        evidence_id TEXT,
        reviewed_at TEXT NOT NULL
    );
    CREATE INDEX reviews_task ON reviews (task_id, seq);
    CREATE TABLE progress (
        seq INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        actor TEXT NOT NULL,
        generation INTEGER,
        notes TEXT NOT NULL,
        phase TEXT,
        detail TEXT,
        recorded_at TEXT NOT NULL
    );
    CREATE TABLE idempotency (
        actor TEXT NOT NULL,
        operation TEXT NOT NULL,
        key TEXT NOT NULL,
        request_digest TEXT NOT NULL,
        result TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (actor, operation, key)
    ) WITHOUT ROWID;
    """,
    # 2: each task's likely files as rows, so the next-task query needs no JSON functions
    """
    CREATE TABLE task_files (
        task_id TEXT NOT NULL,
        file TEXT NOT NULL,
        PRIMARY KEY (task_id, file)
    ) WITHOUT ROWID;
    CREATE INDEX task_files_file ON task_files (file, task_id);
    INSERT INTO task_files (task_id, file) SELECT t.id, f.value FROM tasks t, json_each(t.likely_files) f
        WHERE f.type = 'text' ON CONFLICT DO NOTHING;
    """,
    # 3: identity. Names are compared by key (NFKC + case folding, see anvil.engine.identity), kept
    # beside the display form; per-agent tokens (digests only); reviewers' roles.
    """
    ALTER TABLE claims ADD COLUMN actor_key TEXT NOT NULL DEFAULT '';
    UPDATE claims SET actor_key = anvil_name_key(actor);
    CREATE INDEX claims_active_actor ON claims (actor_key) WHERE status = 'active';
    ALTER TABLE evidence ADD COLUMN actor_key TEXT NOT NULL DEFAULT '';
    UPDATE evidence SET actor_key = anvil_name_key(actor);
    CREATE INDEX evidence_actor ON evidence (actor_key);
    ALTER TABLE reviews ADD COLUMN reviewer_role TEXT;
    ALTER TABLE reviews ADD COLUMN reviewer_authenticated INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE tokens (
        token_id TEXT PRIMARY KEY,
        actor TEXT NOT NULL,
        actor_key TEXT NOT NULL,
        role TEXT NOT NULL,
        digest TEXT NOT NULL,
        created_at TEXT NOT NULL,
        created_by TEXT NOT NULL,
        expires_at TEXT,
        revoked_at TEXT,
        revoked_by TEXT,
        seq INTEGER NOT NULL
    );
    CREATE INDEX tokens_actor ON tokens (actor_key);
    """,
    # 4: every PRD revision with its source text (the approval binds to what the log holds, not to
    # a file); idempotency records become events (``idempotency.recorded``), so the table is a
    # projection the hash chain covers. Rows kept before this version had no event: they are dropped.
    """
    CREATE TABLE prd_revisions (
        prd_id TEXT NOT NULL,
        revision INTEGER NOT NULL,
        source_digest TEXT NOT NULL,
        source TEXT,
        seq INTEGER NOT NULL,
        PRIMARY KEY (prd_id, revision)
    ) WITHOUT ROWID;
    CREATE INDEX prd_revisions_digest ON prd_revisions (prd_id, source_digest);
    INSERT INTO prd_revisions (prd_id, revision, source_digest, source, seq)
        SELECT json_extract(payload, '$.prd_id'), json_extract(payload, '$.revision'),
               json_extract(payload, '$.source_digest'), json_extract(payload, '$.source'), seq
        FROM events WHERE type IN ('prd.parsed', 'prd.revised');
    DELETE FROM idempotency;
    ALTER TABLE idempotency ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
    """,
    # 5: execution bundles: a milestone of tasks under one coordinator claim (leased and fenced like
    # a task claim, in its own table so bundle and task ids never collide) and one bounded review gate.
    """
    CREATE TABLE bundles (
        id TEXT PRIMARY KEY,
        prd_id TEXT NOT NULL,
        status TEXT NOT NULL,
        coordinator TEXT NOT NULL,
        coordinator_key TEXT NOT NULL,
        policy TEXT NOT NULL,
        review_round INTEGER NOT NULL DEFAULT 0,
        claim_generation INTEGER NOT NULL DEFAULT 0,
        commit_sha TEXT,
        pr_url TEXT,
        merged INTEGER NOT NULL DEFAULT 0,
        supersedes TEXT,
        superseded_by TEXT,
        created_at TEXT NOT NULL,
        created_by TEXT NOT NULL,
        updated_seq INTEGER NOT NULL
    );
    CREATE INDEX bundles_prd ON bundles (prd_id, id);
    CREATE TABLE bundle_members (
        bundle_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        stage INTEGER NOT NULL,
        authorized_generation INTEGER,
        PRIMARY KEY (bundle_id, task_id)
    ) WITHOUT ROWID;
    CREATE INDEX bundle_members_task ON bundle_members (task_id, bundle_id);
    CREATE TABLE bundle_claims (
        id TEXT PRIMARY KEY,
        bundle_id TEXT NOT NULL,
        actor TEXT NOT NULL,
        actor_key TEXT NOT NULL,
        generation INTEGER NOT NULL,
        status TEXT NOT NULL,
        claimed_at TEXT NOT NULL,
        lease_expires_at TEXT NOT NULL,
        ended_at TEXT,
        end_reason TEXT
    );
    CREATE UNIQUE INDEX bundle_claims_one_active ON bundle_claims (bundle_id) WHERE status = 'active';
    CREATE INDEX bundle_claims_active_expiry ON bundle_claims (lease_expires_at) WHERE status = 'active';
    CREATE TABLE bundle_reviews (
        seq INTEGER PRIMARY KEY,
        bundle_id TEXT NOT NULL,
        round INTEGER NOT NULL,
        reviewer TEXT NOT NULL,
        reviewer_key TEXT NOT NULL,
        angle TEXT NOT NULL,
        decision TEXT NOT NULL,
        notes TEXT,
        reviewer_role TEXT,
        reviewer_authenticated INTEGER NOT NULL DEFAULT 0,
        reviewed_at TEXT NOT NULL
    );
    CREATE INDEX bundle_reviews_bundle ON bundle_reviews (bundle_id, round, seq);
    CREATE TABLE bundle_checkpoints (
        seq INTEGER PRIMARY KEY,
        bundle_id TEXT NOT NULL,
        commit_sha TEXT,
        pr_url TEXT,
        source TEXT NOT NULL,
        actor TEXT NOT NULL,
        recorded_at TEXT NOT NULL
    );
    CREATE INDEX bundle_checkpoints_bundle ON bundle_checkpoints (bundle_id, seq);
    CREATE TABLE bundle_progress (
        seq INTEGER PRIMARY KEY,
        bundle_id TEXT NOT NULL,
        actor TEXT NOT NULL,
        generation INTEGER NOT NULL,
        phase TEXT NOT NULL,
        detail TEXT,
        member_task_ids TEXT NOT NULL,
        complete INTEGER NOT NULL,
        recorded_at TEXT NOT NULL
    );
    CREATE INDEX bundle_progress_bundle ON bundle_progress (bundle_id, seq);
    """,
    # 6: git-bound claims and proven evidence. A claim keeps its git binding (mode, branch, target
    # path, claim-start commit) and the task/PRD revisions proofs bind to; command proofs and
    # attestations are kept by digest (each is accepted once); the project's trusted signing keys.
    """
    ALTER TABLE claims ADD COLUMN git TEXT;
    ALTER TABLE claims ADD COLUMN git_target TEXT;
    ALTER TABLE claims ADD COLUMN task_revision TEXT;
    ALTER TABLE claims ADD COLUMN prd_revision INTEGER;
    UPDATE claims SET
        git = (SELECT json_extract(e.payload, '$.git') FROM events e WHERE e.type = 'claim.acquired'
               AND json_extract(e.payload, '$.claim_id') = claims.id),
        git_target = (SELECT json_extract(e.payload, '$.git.target_path') FROM events e
                      WHERE e.type = 'claim.acquired' AND json_extract(e.payload, '$.claim_id') = claims.id),
        task_revision = (SELECT json_extract(e.payload, '$.task_revision') FROM events e
                         WHERE e.type = 'claim.acquired' AND json_extract(e.payload, '$.claim_id') = claims.id),
        prd_revision = (SELECT json_extract(e.payload, '$.prd_revision') FROM events e
                        WHERE e.type = 'claim.acquired' AND json_extract(e.payload, '$.claim_id') = claims.id);
    CREATE INDEX claims_active_git ON claims (git_target) WHERE status = 'active';
    CREATE TABLE command_proofs (
        digest TEXT PRIMARY KEY,
        evidence_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        claim_id TEXT NOT NULL,
        generation INTEGER NOT NULL,
        command TEXT NOT NULL,
        exit_code INTEGER NOT NULL,
        trust_mode TEXT NOT NULL,
        issuer_id TEXT,
        output_sha256 TEXT NOT NULL,
        seq INTEGER NOT NULL
    );
    CREATE INDEX command_proofs_evidence ON command_proofs (evidence_id);
    CREATE TABLE attestations (
        digest TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        claim_id TEXT NOT NULL,
        generation INTEGER NOT NULL,
        kind TEXT NOT NULL,
        trust_mode TEXT NOT NULL,
        issuer_id TEXT,
        changed_paths TEXT NOT NULL,
        recorded_seq INTEGER NOT NULL,
        consumed_seq INTEGER
    );
    CREATE INDEX attestations_claim ON attestations (claim_id, recorded_seq);
    CREATE TABLE trusted_keys (
        key_id TEXT PRIMARY KEY,
        public_key TEXT NOT NULL,
        label TEXT,
        added_by TEXT NOT NULL,
        added_at TEXT NOT NULL,
        removed_at TEXT,
        removed_by TEXT,
        seq INTEGER NOT NULL
    );
    ALTER TABLE reviews ADD COLUMN evidence_gaps TEXT;
    ALTER TABLE reviews ADD COLUMN asserted_reason_code TEXT;
    """,
    # 7: a task's scores once a person confirmed them (``review_tasks``: risk ceilings offer only
    # confirmed scores), backfilled from the log as its replay sets them: the latest confirmation,
    # unless the task was re-scored after it or lost its scores; idempotency keys looked up across
    # actors (a key another actor used conflicts).
    """
    ALTER TABLE tasks ADD COLUMN scores_confirmed_seq INTEGER;
    CREATE INDEX idempotency_key ON idempotency (operation, key);
    UPDATE tasks SET scores_confirmed_seq = (
        SELECT MAX(e.seq) FROM events e, json_each(e.payload, '$.confirmed_scores') c
        WHERE e.type = 'tasks.reviewed' AND c.value = tasks.id)
    WHERE scores IS NOT NULL;
    UPDATE tasks SET scores_confirmed_seq = NULL WHERE scores_confirmed_seq < (
        SELECT MAX(e.seq) FROM events e, json_each(e.payload, '$.scores') s
        WHERE e.type = 'tasks.scored' AND s.key = tasks.id);
    """,
    # 8: honest trust levels and commit-bound work. Every proof recorded so far was its implementer's
    # word (client_reported, signed or not); a proof row names who proved it and, for a verified
    # one, the commit and tree it ran on; evidence keeps the tree and branch of its commit, and a
    # review decision the commit it decided on.
    """
    ALTER TABLE evidence ADD COLUMN tree_sha TEXT;
    ALTER TABLE evidence ADD COLUMN branch TEXT;
    ALTER TABLE reviews ADD COLUMN commit_sha TEXT;
    ALTER TABLE reviews ADD COLUMN tree_sha TEXT;
    ALTER TABLE command_proofs ADD COLUMN commit_sha TEXT;
    ALTER TABLE command_proofs ADD COLUMN tree_sha TEXT;
    ALTER TABLE command_proofs ADD COLUMN proved_by TEXT;
    ALTER TABLE command_proofs ADD COLUMN proved_by_key TEXT;
    ALTER TABLE command_proofs ADD COLUMN proved_by_role TEXT;
    ALTER TABLE command_proofs ADD COLUMN proved_by_authenticated INTEGER NOT NULL DEFAULT 0;
    UPDATE command_proofs SET trust_mode = 'client_reported'
        WHERE trust_mode IN ('claim_owner_self_attested', 'configured_issuer_verified');
    UPDATE attestations SET trust_mode = 'client_reported'
        WHERE trust_mode IN ('claim_owner_self_attested', 'configured_issuer_verified');
    UPDATE command_proofs SET
        proved_by = (SELECT e.actor FROM evidence e WHERE e.id = command_proofs.evidence_id),
        proved_by_key = (SELECT e.actor_key FROM evidence e WHERE e.id = command_proofs.evidence_id);
    """,
    # 9: the landing queue. A task counts as finished for its dependents (``finished``, what
    # ``unmet_deps`` counts) when it is done and, once the project lands work, landed; every done
    # task so far was finished (nothing landed before). ``landings`` holds each landing step of an
    # approval (started, landed, bounced); ``landing_files`` the paths each landing changed, so a
    # conflict names the tasks that touched its paths.
    """
    ALTER TABLE tasks ADD COLUMN finished INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE tasks ADD COLUMN landed_seq INTEGER;
    UPDATE tasks SET finished = 1 WHERE status = 'done';
    CREATE TABLE landings (
        seq INTEGER NOT NULL,
        task_id TEXT NOT NULL,
        unit TEXT NOT NULL,
        outcome TEXT NOT NULL,
        review_seq INTEGER NOT NULL,
        approved_commit TEXT NOT NULL,
        target TEXT NOT NULL,
        remote TEXT,
        method TEXT NOT NULL,
        target_commit TEXT,
        landed_commit TEXT,
        reason TEXT,
        detail TEXT,
        lander TEXT NOT NULL,
        lander_key TEXT NOT NULL,
        lander_role TEXT,
        recorded_at TEXT NOT NULL,
        lease_expires_at TEXT,
        PRIMARY KEY (seq, task_id)
    );
    CREATE INDEX landings_task ON landings (task_id, seq);
    CREATE TABLE landing_files (
        path TEXT NOT NULL,
        task_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (path, task_id)
    );
    """,
    # 10: reads that stay flat with the plan's size. The
    # claim gate read without the PRD's document (a prds row holds the whole PRD text before its
    # approval columns, so reading those walks the document's overflow pages; prds_gate covers every
    # column the gate compares), a status column's page in id order (the board, the graph), and the
    # count of startable tasks from an index alone.
    """
    CREATE INDEX prds_gate ON prds (prd_id, status, revision, source_digest, approved_revision,
        approved_source_digest);
    CREATE INDEX tasks_status ON tasks (status, id);
    CREATE INDEX tasks_gate ON tasks (status, unmet_deps, prd_id);
    """,
    # 11: the whole graph's critical path kept in the projection. ``graph_path`` (one row) holds it
    # with the number of edges between existing tasks, as of the last event, computed in that event's
    # transaction from ``tasks_graph`` (the open tasks' ids and weights, the finished ones' ids,
    # without the rows' text) and the dependencies' key; a database brought forward gets it from its
    # projection (``store.refresh_derived``).
    """
    CREATE INDEX tasks_graph ON tasks (finished, id, complexity);
    CREATE TABLE graph_path (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        path TEXT NOT NULL,
        edge_count INTEGER NOT NULL,
        ordered INTEGER NOT NULL
    );
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)

PROJECTION_TABLES: tuple[str, ...] = (
    "project", "prds", "features", "tasks", "task_deps", "task_conflict_groups", "dependency_overrides", "claims",
    "claim_files", "evidence", "reviews", "progress", "task_files", "tokens", "prd_revisions", "idempotency",
    "bundles", "bundle_members", "bundle_claims", "bundle_reviews", "bundle_checkpoints", "bundle_progress",
    "command_proofs", "attestations", "trusted_keys", "landings", "landing_files", "graph_path",
)
