-- The whole schema of the process server. Portable between PostgreSQL and SQLite:
-- TEXT and BIGINT only (times are milliseconds since the Unix epoch), no booleans,
-- no database-specific types. `org_id` leads every key and every index, so the
-- tables can be distributed by organization; the one exception is `timers_due`,
-- which the timer loop reads across organizations.

CREATE TABLE organizations (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- kind: agent | person | operator. `person` is the person value (an email, lowercase)
-- for people and operators, NULL for agents.
CREATE TABLE identities (
    org_id TEXT NOT NULL,
    id TEXT NOT NULL,
    kind TEXT NOT NULL,
    person TEXT,
    name TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, id)
);
CREATE UNIQUE INDEX identities_by_person ON identities (org_id, person);

CREATE TABLE org_groups (
    org_id TEXT NOT NULL,
    id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, id)
);

CREATE TABLE memberships (
    org_id TEXT NOT NULL,
    group_id TEXT NOT NULL,
    identity_id TEXT NOT NULL,
    PRIMARY KEY (org_id, group_id, identity_id)
);
CREATE INDEX memberships_by_identity ON memberships (org_id, identity_id);

-- Bearer tokens, kept only as SHA-256 hex.
CREATE TABLE access_tokens (
    token_hash TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    identity_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX access_tokens_by_identity ON access_tokens (org_id, identity_id);

-- A process being prepared: its PROCESS.md and role bindings (JSON object role → group).
CREATE TABLE drafts (
    org_id TEXT NOT NULL,
    process TEXT NOT NULL,
    source TEXT NOT NULL,
    roles TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, process)
);

-- Published versions never change once written.
CREATE TABLE process_versions (
    org_id TEXT NOT NULL,
    process TEXT NOT NULL,
    number BIGINT NOT NULL,
    content_hash TEXT NOT NULL,
    source TEXT NOT NULL,
    frontmatter TEXT NOT NULL,
    body TEXT NOT NULL,
    roles TEXT NOT NULL,
    published_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, process, number)
);

-- One row per run; `doc` is the engine's run as JSON. Every write locks the row.
CREATE TABLE runs (
    org_id TEXT NOT NULL,
    id TEXT NOT NULL,
    process TEXT NOT NULL,
    version BIGINT NOT NULL,
    mode TEXT NOT NULL,
    state TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (org_id, id)
);
CREATE INDEX runs_by_start ON runs (org_id, started_at, id);
CREATE INDEX runs_by_process ON runs (org_id, process, started_at, id);
CREATE INDEX runs_by_state ON runs (org_id, state, started_at, id);

-- One row per input field of a run: the SHA-256 of the value's RFC 8785 JSON, so
-- `list_runs` finds equal inputs through an index whatever the value's size.
CREATE TABLE run_inputs (
    org_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    field TEXT NOT NULL,
    value_hash TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, run_id, field)
);
CREATE INDEX run_inputs_lookup ON run_inputs (org_id, field, value_hash, started_at, run_id);

-- What get_work lists. kind: agent (a ready or claimed agent step; claimed ones carry
-- lease_until and become listable again when it passes) | item (an open work item,
-- assigned to a group or a person).
CREATE TABLE work_index (
    org_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    step_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    process TEXT NOT NULL,
    since BIGINT NOT NULL,
    lease_until BIGINT,
    assignee_group TEXT,
    assignee_person TEXT,
    PRIMARY KEY (org_id, run_id, step_id)
);
CREATE INDEX work_agent ON work_index (org_id, kind, since, run_id, step_id);
CREATE INDEX work_by_group ON work_index (org_id, assignee_group, since, run_id, step_id);
CREATE INDEX work_by_person ON work_index (org_id, assignee_person, since, run_id, step_id);

-- One row per write that succeeded: its result is returned to every replay.
-- `result` is NULL only inside the transaction that is applying the write.
CREATE TABLE idempotency (
    org_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    args_hash TEXT NOT NULL,
    result TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, request_id)
);

CREATE TABLE uploads (
    org_id TEXT NOT NULL,
    id TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    bytes BIGINT NOT NULL,
    content_type TEXT NOT NULL,
    file_name TEXT NOT NULL,
    storage_key TEXT NOT NULL,
    uploaded_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, id)
);

-- Timers the engine asked for and that have not fired: the source of truth for every
-- timer queue.
CREATE TABLE timers (
    org_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    timer_id TEXT NOT NULL,
    fire_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, run_id, timer_id)
);
CREATE INDEX timers_due ON timers (fire_at, org_id, run_id, timer_id);
