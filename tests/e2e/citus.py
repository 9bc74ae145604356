"""The suite on a Citus cluster, when `AGENTPROCESS_TEST_CITUS_WORKERS` names the
workers (`host:port`, comma-separated) of the coordinator `AGENTPROCESS_TEST_PG` names.

Each database the suite makes is then made a cluster's and, once migrated,
distributed by deploy/citus/cluster-database, as docs/operations.md has an operator
do. Unset (as in CI, which has no Citus), the suite runs on plain PostgreSQL and
nothing here is used."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

CLUSTER_DATABASE = Path(__file__).resolve().parents[2] / "deploy" / "citus" / "cluster-database"
WORKERS = [worker for worker in os.environ.get("AGENTPROCESS_TEST_CITUS_WORKERS", "").split(",") if worker]


def enabled() -> bool:
    return bool(WORKERS)


def step(name: str, coordinator: str, database: str) -> None:
    """`prepare` (after the database is made on the coordinator at base URL
    `coordinator`), `distribute` (after its migrations) or `drop`."""
    subprocess.run([str(CLUSTER_DATABASE), name, coordinator, database, *WORKERS],
                   check=True, capture_output=True, text=True)
