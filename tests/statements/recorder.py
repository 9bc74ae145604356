"""A private PostgreSQL that records every statement it is sent (pg_stat_statements),
for the end-to-end suite, so that `check.py` can read what the servers sent.

    recorder.py start DIR   initdb and start in DIR; prints the two URLs as NAME=VALUE lines
    recorder.py stop DIR    stop it and remove DIR

Two roles share it: `agentprocess`, which the servers connect as, and `postgres`,
which the test harness's own SQL uses, so the check reads the servers' statements only.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

# Every statement of every test database is one entry (the same SQL in two databases
# is two); nothing may be evicted, and the check fails if anything was.
MAX_STATEMENTS = 200_000


def binaries() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda path: int(Path(path).parent.name))
    return Path(os.environ.get("AGENTPROCESS_PG_BIN", found[-1] if found else "/usr/bin"))


def as_owner() -> list[str]:
    # PostgreSQL refuses to run as root.
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def run(tool: str, *args: str) -> None:
    subprocess.run([*as_owner(), str(binaries() / tool), *args], check=True, capture_output=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if as_owner():
        shutil.chown(folder, "postgres", "postgres")
    data = folder / "data"
    run("initdb", "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
    port = free_port()
    options = " ".join([
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1",
        # What the suite needs of it is correctness, not durability.
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off",
        "-c max_connections=300",
        "-c shared_preload_libraries=pg_stat_statements",
        f"-c pg_stat_statements.max={MAX_STATEMENTS} -c pg_stat_statements.track=all",
        "-c pg_stat_statements.track_utility=off",
    ])
    run("pg_ctl", "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start")
    base = f"postgres://postgres@127.0.0.1:{port}"
    subprocess.run(
        ["psql", f"{base}/postgres", "-v", "ON_ERROR_STOP=1", "-qAtc",
         "CREATE ROLE agentprocess SUPERUSER LOGIN; CREATE EXTENSION pg_stat_statements"],
        check=True, capture_output=True,
    )
    print(f"AGENTPROCESS_TEST_PG=postgres://agentprocess@127.0.0.1:{port}")
    print(f"AGENTPROCESS_TEST_PG_HARNESS={base}")


def stop(folder: Path) -> None:
    if (folder / "data").exists():
        try:
            run("pg_ctl", "-D", str(folder / "data"), "-m", "immediate", "-w", "stop")
        except subprocess.CalledProcessError:
            pass
    shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in ("start", "stop"):
        sys.exit(__doc__)
    (start if sys.argv[1] == "start" else stop)(Path(sys.argv[2]))


if __name__ == "__main__":
    main()
