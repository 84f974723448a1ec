-- The metadb: accounts, runs (one per merged commit, queued in merge order), their
-- executions (one Step Functions execution per unit), the dependency edges the
-- claim follows, votes, and the merge lock.
--
-- Readiness is kept as counters (pending_deps, pending_accounts) maintained by the
-- guarded updates that finish executions, so the claim reads one small partial
-- index instead of re-deriving readiness for 10,000 waiting rows; the claim still
-- re-checks the edges of the few rows it takes.

CREATE TABLE accounts (
    name text PRIMARY KEY,
    path text NOT NULL,
    dependencies jsonb NOT NULL DEFAULT '[]',
    voters jsonb NOT NULL DEFAULT '[]',
    min_approval_count integer NOT NULL,
    min_rejection_count integer NOT NULL,
    plan_role_arn text NOT NULL,
    apply_role_arn text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE runs (
    run_id bigserial PRIMARY KEY,
    pr_id bigint NOT NULL,
    commit_id text NOT NULL UNIQUE,
    base_ref text NOT NULL,
    head_ref text NOT NULL,
    base_sha text NOT NULL,
    head_sha text NOT NULL,
    status text NOT NULL DEFAULT 'queued'
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
    max_parallel integer NOT NULL CHECK (max_parallel > 0),
    fail_fast boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at timestamptz,
    finished_at timestamptz
);

-- One run deploys at a time; the rest wait in merge (run_id) order.
CREATE UNIQUE INDEX runs_one_running ON runs ((true)) WHERE status = 'running';
CREATE INDEX runs_queued ON runs (run_id) WHERE status = 'queued';

-- The metadb side of the merge lock: exactly one row, naming the running run.
CREATE TABLE merge_lock (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    run_id bigint REFERENCES runs (run_id),
    locked_at timestamptz
);
INSERT INTO merge_lock (singleton) VALUES (true);

CREATE TABLE executions (
    id bigserial PRIMARY KEY,
    run_id bigint NOT NULL REFERENCES runs (run_id),
    execution_id text NOT NULL UNIQUE,
    -- Position in the run as created: the claim's stable tiebreak after priority.
    seq integer NOT NULL,
    is_rollback boolean NOT NULL,
    cfg_path text NOT NULL,
    cfg_deps jsonb NOT NULL,
    action text NOT NULL CHECK (action IN ('apply', 'destroy')),
    status text NOT NULL DEFAULT 'waiting'
        CHECK (status IN ('waiting', 'running', 'succeeded', 'failed', 'aborted')),
    status_reason text,
    plan_command text NOT NULL,
    apply_command text NOT NULL,
    new_providers jsonb NOT NULL,
    new_resources jsonb NOT NULL DEFAULT '[]',
    account_name text NOT NULL,
    account_path text NOT NULL,
    account_deps jsonb NOT NULL,
    voters jsonb NOT NULL,
    min_approval_count integer NOT NULL,
    min_rejection_count integer NOT NULL,
    plan_role_arn text NOT NULL,
    apply_role_arn text NOT NULL,
    priority double precision NOT NULL,
    -- As given at creation, for reading back; the edges below are what the SQL follows.
    wait_for jsonb NOT NULL,
    wait_accounts jsonb NOT NULL,
    -- wait_for executions not yet succeeded, and wait_accounts not yet complete.
    pending_deps integer NOT NULL CHECK (pending_deps >= 0),
    pending_accounts integer NOT NULL DEFAULT 0 CHECK (pending_accounts >= 0),
    sfn_execution_arn text,
    decision text CHECK (decision IN ('approve', 'reject')),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    claimed_at timestamptz,
    finished_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (run_id, seq)
);

-- The claim walks this index in priority order and stops after the free slots.
CREATE INDEX executions_ready ON executions (run_id, priority DESC, seq)
    WHERE status = 'waiting' AND pending_deps = 0 AND pending_accounts = 0;
CREATE INDEX executions_running ON executions (run_id, claimed_at) WHERE status = 'running';
CREATE INDEX executions_run_status ON executions (run_id, status);

-- Directory dependencies: `execution` waits for `depends_on` (same run).
CREATE TABLE execution_deps (
    execution bigint NOT NULL REFERENCES executions (id),
    depends_on bigint NOT NULL REFERENCES executions (id),
    PRIMARY KEY (execution, depends_on),
    CHECK (execution <> depends_on)
);
CREATE INDEX execution_deps_depends_on ON execution_deps (depends_on);

-- One row per (run, account, action): how many of its executions have not yet
-- succeeded. Executions waiting for the account wait for this to reach zero.
CREATE TABLE run_accounts (
    id bigserial PRIMARY KEY,
    run_id bigint NOT NULL REFERENCES runs (run_id),
    account_name text NOT NULL,
    action text NOT NULL,
    remaining integer NOT NULL CHECK (remaining >= 0),
    UNIQUE (run_id, account_name, action)
);

CREATE TABLE execution_account_waits (
    execution bigint NOT NULL REFERENCES executions (id),
    run_account bigint NOT NULL REFERENCES run_accounts (id),
    PRIMARY KEY (execution, run_account)
);
CREATE INDEX execution_account_waits_run_account ON execution_account_waits (run_account);

CREATE TABLE votes (
    execution bigint NOT NULL REFERENCES executions (id),
    voter text NOT NULL,
    vote text NOT NULL CHECK (vote IN ('approve', 'reject')),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (execution, voter)
);

-- Rows leave the database as one JSON text column, so both adapters decode the
-- same thing (the Data API's JSON records have no array or timestamp types).
CREATE FUNCTION live_ci_ms(t timestamptz) RETURNS bigint
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT (extract(epoch FROM t) * 1000)::bigint $$;

CREATE FUNCTION live_ci_run_json(r runs) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT json_build_object(
        'run_id', r.run_id, 'pr_id', r.pr_id, 'commit_id', r.commit_id,
        'base_ref', r.base_ref, 'head_ref', r.head_ref,
        'base_sha', r.base_sha, 'head_sha', r.head_sha,
        'status', r.status, 'max_parallel', r.max_parallel, 'fail_fast', r.fail_fast,
        'created_at', live_ci_ms(r.created_at), 'started_at', live_ci_ms(r.started_at),
        'finished_at', live_ci_ms(r.finished_at))::text
    $$;

-- An execution as the Step Function input plus tracking fields: every column
-- (to_jsonb keeps this in step with the table; decoders ignore the internal ones),
-- the run's fields, the voters by vote, and times in ms.
CREATE FUNCTION live_ci_execution_json(e executions) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT (to_jsonb(e) || jsonb_build_object(
        'pr_id', r.pr_id, 'commit_id', r.commit_id, 'base_ref', r.base_ref, 'head_ref', r.head_ref,
        'approval_voters', coalesce((SELECT jsonb_agg(v.voter ORDER BY v.voter) FROM votes v
                                     WHERE v.execution = e.id AND v.vote = 'approve'), '[]'),
        'rejection_voters', coalesce((SELECT jsonb_agg(v.voter ORDER BY v.voter) FROM votes v
                                      WHERE v.execution = e.id AND v.vote = 'reject'), '[]'),
        'created_at', live_ci_ms(e.created_at), 'claimed_at', live_ci_ms(e.claimed_at),
        'finished_at', live_ci_ms(e.finished_at), 'updated_at', live_ci_ms(e.updated_at)))::text
    FROM runs r WHERE r.run_id = e.run_id
    $$;
