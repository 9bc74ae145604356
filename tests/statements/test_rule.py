"""The org_id rule on statements written to keep it and to break it, against the real
migrations."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import rule

REPO = Path(__file__).resolve().parents[2]
SCHEMA = rule.Schema.from_migrations(REPO / "migrations")


@pytest.mark.parametrize("sql", [
    "SELECT doc FROM runs WHERE org_id = $1 AND id = $2",
    "SELECT r.doc FROM runs r JOIN work_index w ON w.org_id = r.org_id AND w.run_id = r.id "
    "WHERE r.org_id = $1 FOR UPDATE OF r",
    "SELECT r.id FROM runs r, run_inputs i WHERE i.org_id = r.org_id AND r.org_id = $1::text",
    "INSERT INTO runs (org_id, id, doc) VALUES ($1, $2, $3) ON CONFLICT (org_id, id) DO UPDATE SET doc = excluded.doc",
    "UPDATE work_index SET lease_until = $3 WHERE org_id = $1 AND run_id = $2",
    "DELETE FROM timers WHERE org_id = $1 AND run_id = $2",
    "DELETE FROM idempotency WHERE org_id = $1 AND request_id IN "
    "(SELECT request_id FROM idempotency WHERE org_id = $1 ORDER BY created_at LIMIT $2)",
    "SELECT run_id FROM work_index WHERE org_id = $1 AND assignee_group = $2 "
    "UNION ALL SELECT run_id FROM work_index WHERE org_id = $1 AND assignee_person = $3",
    "SELECT id FROM runs r WHERE org_id = $1 AND EXISTS "
    "(SELECT 1 FROM run_inputs i WHERE i.org_id = r.org_id AND i.run_id = r.id)",
    "WITH open AS (SELECT run_id FROM work_index WHERE org_id = $1) SELECT run_id FROM open",
    "INSERT INTO audit_log (org_id, id, kind) SELECT $1, $2, kind FROM audit_log WHERE org_id = $1",
    "SELECT token_hash, org_id FROM access_tokens WHERE token_hash = $1",
    "UPDATE sessions SET org_id = $2, identity_id = $3 WHERE id_hash = $1",
    "SELECT version FROM _sqlx_migrations WHERE success",
    "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = $1",
    "/* all organizations: the reconciler reads every timer */ SELECT org_id, run_id FROM timers",
    # A run's write in one statement (crates/store/src/write.rs), each part gated on the
    # first and selecting the organization's bind.
    "WITH locked AS (SELECT 1 FROM runs WHERE org_id = $1 AND id = $2 AND revision = $3 FOR UPDATE NOWAIT), "
    "changed AS (UPDATE runs SET doc = $4, revision = revision + 1 WHERE org_id = $1 AND id = $2 "
    "AND revision = $3 AND EXISTS (SELECT 1 FROM locked) RETURNING 1), "
    "gone AS (DELETE FROM work_index WHERE org_id = $1 AND run_id = $2 AND step_id IN ($5) "
    "AND EXISTS (SELECT 1 FROM changed)), "
    "work AS (INSERT INTO work_index (org_id, run_id, step_id, kind) SELECT $1, v.column2, v.column3, v.column4 "
    "FROM changed, (VALUES ($1, $2, $6, $7)) AS v ON CONFLICT (org_id, run_id, step_id) DO UPDATE SET kind = excluded.kind), "
    "recorded AS (INSERT INTO idempotency (org_id, request_id, tool, args_hash, result, created_at) "
    "SELECT $1, v.column2, v.column3, v.column4, v.column5, v.column6 FROM changed, (VALUES ($1, $8, $9, $10, $11, $12)) AS v), "
    "noticed AS (INSERT INTO notifications (org_id, id, run_id, event, body, created_at, trace_parent) "
    "SELECT $1, v.column2, v.column3, v.column4, v.column5, v.column6, v.column7 "
    "FROM changed, (VALUES ($1, $13, $2, $14, $15, $16, $17)) AS v RETURNING id, created_at), "
    "delivered AS (INSERT INTO deliveries (org_id, notification_id, webhook_id, status, attempts, next_at, updated_at) "
    "SELECT $1, n.id, w.id, 'pending', 0, n.created_at, n.created_at FROM noticed n JOIN webhooks w ON w.org_id = $1 "
    "RETURNING 1) SELECT (SELECT count(*) FROM changed) AS changed, (SELECT count(*) FROM delivered) AS deliveries",
    "WITH changed AS (INSERT INTO runs (org_id, id, doc) VALUES ($1, $2, $3) RETURNING 1), "
    "inputs AS (INSERT INTO run_inputs (org_id, run_id, field, value_hash, started_at) "
    "SELECT $1, v.column2, v.column3, v.column4, v.column5 FROM changed, (VALUES ($1, $2, $4, $5, $6)) AS v) "
    "SELECT (SELECT count(*) FROM changed) AS changed, 0 AS deliveries",
])
def test_statements_that_name_one_organization_pass(sql):
    assert rule.problems(sql, SCHEMA) == []


@pytest.mark.parametrize("sql, problem", [
    ("SELECT doc FROM runs WHERE id = $1", "reads or writes runs without an org_id equality"),
    ("SELECT doc FROM runs WHERE org_id = $1 OR id = $2", "reads or writes runs without"),
    ("SELECT r.doc FROM runs r JOIN work_index w ON w.run_id = r.id WHERE r.org_id = $1",
     "reads or writes work_index without"),
    ("SELECT r.doc FROM runs r JOIN work_index w ON w.org_id = $2 AND w.run_id = r.id WHERE r.org_id = $1",
     "joins tables of different organizations"),
    ("SELECT t.id FROM access_tokens t JOIN identities i ON i.org_id = t.org_id WHERE t.token_hash = $1",
     "reads or writes identities without"),
    ("UPDATE runs SET org_id = $2 WHERE org_id = $1 AND id = $3", "moves rows of runs"),
    ("INSERT INTO runs (id, doc) VALUES ($1, $2)", "reads or writes runs without"),
    ("DELETE FROM idempotency WHERE created_at < $1", "reads or writes idempotency without"),
    ("DELETE FROM idempotency WHERE (org_id, request_id) IN "
     "(SELECT org_id, request_id FROM idempotency WHERE org_id = $1 LIMIT $2)", "reads or writes idempotency without"),
    ("SELECT id FROM runs r WHERE org_id = $1 AND EXISTS (SELECT 1 FROM run_inputs i WHERE i.run_id = r.id)",
     "reads or writes run_inputs without"),
    ("SELECT run_id FROM work_index WHERE org_id = $1 UNION ALL SELECT run_id FROM work_index WHERE kind = 'agent'",
     "reads or writes work_index without"),
    ("SELECT COUNT(*) FROM work_index WHERE org_id = ANY($1)", "reads or writes work_index without"),
    ("SELECT 1 FROM something_new WHERE id = $1", "touches something_new, which is neither"),
    ("-- all organizations: a line comment is not the marker\nSELECT org_id FROM timers",
     "reads or writes timers without"),
])
def test_statements_that_do_not_are_refused_with_the_reason(sql, problem):
    found = rule.problems(sql, SCHEMA)
    assert any(problem in line for line in found), found


def test_every_table_is_distributed_or_in_the_directory():
    assert SCHEMA.unclassified() == set()
    assert {"runs", "work_index", "timers", "audit_log", "identities"} <= SCHEMA.distributed()
    assert not SCHEMA.distributed() & rule.DIRECTORY


def test_distributed_tables_keep_org_id_in_every_unique_key():
    assert SCHEMA.keys_without_org() == []
    assert SCHEMA.unique_keys["runs"]["primary key"] == ["org_id", "id"]
    assert "identities_by_person" in SCHEMA.unique_keys["identities"]


def test_a_unique_key_without_org_id_is_found(tmp_path):
    (tmp_path / "1.sql").write_text(
        "CREATE TABLE items (org_id TEXT NOT NULL, id TEXT PRIMARY KEY, name TEXT);\n"
        "CREATE UNIQUE INDEX items_by_name ON items (name);\n"
        "CREATE TABLE lists (org_id TEXT, id TEXT, PRIMARY KEY (org_id, id));\n"
    )
    schema = rule.Schema.from_migrations(tmp_path)
    assert sorted(schema.keys_without_org()) == ["items: items_by_name (name)", "items: primary key (id)"]


def test_the_distribution_script_distributes_exactly_these_tables():
    guide = (REPO / "deploy" / "citus" / "distribute.sql").read_text()
    distributed = set(re.findall(r"create_distributed_table\('(\w+)', 'org_id'\)", guide))
    reference = set(re.findall(r"create_reference_table\('(\w+)'\)", guide))
    assert distributed == SCHEMA.distributed()
    assert reference == set(rule.DIRECTORY)


def test_the_migrations_statements_are_known_with_their_constants_left_out():
    schema = SCHEMA
    # As pg_stat_statements records a data fix of the identity migration.
    assert schema.is_migration("UPDATE identities SET role = $1 WHERE kind = $2 AND role IS NULL")
    assert schema.is_migration("UPDATE identities SET role = $1, kind = $2 WHERE kind = $3")
    assert not schema.is_migration("UPDATE identities SET role = $1 WHERE kind = $2")
    assert not schema.is_migration("SELECT id FROM runs WHERE org_id = $1")
