"""Retention: the sweep purges idempotency records past the replay window, so a
`requestId` replayed later is a new request, while one inside the window still
returns its first result."""

from __future__ import annotations

import secrets
import subprocess
import time
from pathlib import Path

import rawmcp
import servers
from client import request_id
from scheduling import post_advance

PROCESSES = Path(__file__).resolve().parent / "processes"


def records(database: str, request: str) -> int:
    return int(servers.psql(f"SELECT count(*) FROM idempotency WHERE request_id = '{request}'", database).strip())


def test_a_request_id_past_the_replay_window_is_a_new_request(tmp_path):
    database, url, tokens, _ = servers.seed_postgres([PROCESSES / "pause"])
    port = servers.free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(tmp_path / "api.log", "ab")
    process = subprocess.Popen(
        servers.api_command(url, port, secrets.token_bytes(32), tmp_path,
                            "--request-retention-seconds", "60", "--upload-sweep-seconds", "0.2"),
        stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        servers.wait_ready(base, process)

        def start(request: str) -> str:
            result = rawmcp.call(base, tokens["alice"], "start_run",
                                 {"process": "pause", "inputs": {}, "requestId": request})
            assert result["ok"], result
            return result["data"]["run"]["id"]

        old = request_id()
        first = start(old)
        assert start(old) == first, "a replay inside the window is the first result"
        assert records(database, old) == 1

        post_advance(base, 120)
        servers.eventually(lambda: records(database, old) == 0, timeout=10, what="the record purged")
        young = request_id()
        kept = start(young)
        # The sweep goes on every 0.2 s; a record younger than the window survives it.
        time.sleep(1)
        assert "purged" in (tmp_path / "api.log").read_text()
        assert start(young) == kept
        assert records(database, young) == 1

        again = start(old)
        assert again != first, "past the window the same requestId started a second run"
    finally:
        process.terminate()
        process.wait(timeout=30)
        servers.psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
