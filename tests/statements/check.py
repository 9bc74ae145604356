"""Checks every statement the servers sent to the recording PostgreSQL (recorder.py)
against the org_id rule (rule.py), prints what it read, and fails on any statement
that breaks it.

    check.py URL     URL: the recorder's harness URL (AGENTPROCESS_TEST_PG_HARNESS)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import rule

REPO = Path(__file__).resolve().parents[2]
SERVER_ROLE = "agentprocess"
# The end-to-end suite sends a few hundred distinct statements; far fewer means the
# servers were not pointed at the recorder and the check would prove nothing.
FEWEST_EXPECTED = 150


def query(url: str, sql: str) -> object:
    out = subprocess.run(["psql", f"{url}/postgres", "-v", "ON_ERROR_STOP=1", "-Atc", sql],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def recorded(url: str) -> dict[str, int]:
    rows = query(url, (
        "SELECT coalesce(json_agg(json_build_object('query', query, 'calls', calls)), '[]') "
        "FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid "
        f"WHERE r.rolname = '{SERVER_ROLE}'"
    ))
    calls: dict[str, int] = {}
    for row in rows:
        calls[row["query"]] = calls.get(row["query"], 0) + row["calls"]
    return calls


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    url = sys.argv[1]
    evicted = query(url, "SELECT to_json(dealloc) FROM pg_stat_statements_info")
    statements = recorded(url)
    schema = rule.Schema.from_migrations(REPO / "migrations")
    failures = []
    sweeps = []
    migrations = 0
    for sql, calls in sorted(statements.items()):
        if schema.is_migration(sql):
            migrations += 1
            continue
        try:
            found = rule.problems(sql, schema)
        except Exception as error:  # a statement the parser cannot read is a finding too
            found = [f"cannot be parsed: {error}"]
        if found:
            failures.append((sql, calls, found))
        elif rule.ALL_ORGANIZATIONS in sql:
            sweeps.append((sql, calls))
    total = sum(statements.values())
    print(f"org_id rule: {len(statements)} distinct statements, {total} calls, from the end-to-end suite")
    print(f"  distributed tables: {', '.join(sorted(schema.distributed()))}")
    print(f"  directory tables: {', '.join(sorted(rule.DIRECTORY))}")
    print(f"  the migrations' own statements (run once per database): {migrations}")
    print(f"  statements over all organizations on purpose: {len(sweeps)}")
    for sql, calls in sweeps:
        print(f"    {calls:>8}  {' '.join(sql.split())[:160]}")
    ok = True
    if evicted:
        print(f"FAIL: pg_stat_statements evicted entries {evicted} times; raise recorder.MAX_STATEMENTS")
        ok = False
    if len(statements) - migrations < FEWEST_EXPECTED:
        print(f"FAIL: only {len(statements) - migrations} statements beside the migrations' were recorded; "
              f"were the servers connected as {SERVER_ROLE}?")
        ok = False
    for sql, calls, found in failures:
        ok = False
        print(f"FAIL ({calls} calls): {' '.join(sql.split())}")
        for problem in found:
            print(f"    - {problem}")
    if ok:
        print("org_id rule: every statement names one organization or sweeps on purpose")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
