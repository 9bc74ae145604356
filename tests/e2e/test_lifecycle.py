"""Health and shutdown: the API and the scheduler refuse to start on a database that
lacks migrations; `/readyz` follows the database (a PostgreSQL of the test's own,
stopped and started again); SIGTERM drains, finishes the
calls in flight and exits 0; a second signal, or the end of the grace period, exits
at once."""

from __future__ import annotations

import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

import rawmcp
import servers
from faults import PrivatePostgres
from client import request_id
from servers import eventually

PROCESSES = Path(__file__).resolve().parent / "processes"


def status(base: str, path: str = "/readyz") -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"{base}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


class Api:
    """One `agentprocess-api` process."""

    def __init__(self, url: str, *flags: str, path: str = "/readyz") -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="agentprocess-e2e-life-"))
        port = servers.free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.port = port
        with open(self.workdir / "api.log", "ab") as log:
            self.process = subprocess.Popen(
                servers.api_command(url, port, secrets.token_bytes(32), self.workdir, *flags),
                stdout=log, stderr=subprocess.STDOUT,
            )
        servers.wait_ready(self.base, self.process, path=path)

    def log(self) -> str:
        return (self.workdir / "api.log").read_text()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)


@pytest.fixture
def private_postgres():
    database = PrivatePostgres()
    yield database
    database.close()


@pytest.fixture
def seeded():
    database, url, tokens, _ = servers.seed_postgres([PROCESSES / "pause"])
    yield database, url, tokens
    servers.psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def test_readiness_follows_the_database_when_it_stops_and_returns(private_postgres):
    api = Api(private_postgres.url, "--migrate")
    try:
        assert status(api.base) == (200, "ready")
        private_postgres.stop()
        code, reason = eventually(lambda: (found := status(api.base))[0] == 503 and found, what="unready")
        assert "database unreachable" in reason
        # Up, but not ready: the process is not restarted for a database outage.
        assert status(api.base, "/healthz")[0] == 200
        private_postgres.start()
        eventually(lambda: status(api.base) == (200, "ready"), what="ready again")
        assert api.process.poll() is None
    finally:
        api.close()


def test_an_unmigrated_database_stops_the_api_and_the_scheduler_at_start_in_one_line():
    """Neither process serves a database that lacks migrations (every call would fail on
    a missing table): each exits at once with one line naming what is missing and what
    applies it, first on an empty database, then on one that lacks only the latest
    migration. Once migrated, both serve and are ready."""
    database = f"e2e_{secrets.token_hex(6)}"
    servers.psql(f"CREATE DATABASE {database}")
    url = f"{servers.PG}/{database}"
    workdir = Path(tempfile.mkdtemp(prefix="agentprocess-e2e-life-"))
    scheduler_port = servers.free_port()
    scheduler_command = [str(servers.BIN / "agentprocess-scheduler"), "serve", "--database-url", url,
                         "--listen", f"127.0.0.1:{scheduler_port}"]
    api_command = servers.api_command(url, servers.free_port(), secrets.token_bytes(32), workdir)

    def refusal(command: list[str]) -> str:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert finished.returncode != 0, finished
        lines = [line for line in finished.stderr.splitlines() if "migrations" in line]
        assert len(lines) == 1, finished.stderr
        assert "apply them with `agentprocess-api migrate`" in lines[0], lines[0]
        assert "--migrate" in lines[0], lines[0]
        return lines[0]

    migrate = [str(servers.BIN / "agentprocess-api"), "migrate", "--database-url", url]
    scheduler = None
    api = None
    try:
        for command in (api_command, scheduler_command):
            assert "the database has none of this build's" in refusal(command)
        subprocess.run(migrate, check=True, capture_output=True)
        latest = servers.psql("SELECT max(version) FROM _sqlx_migrations", database=database).strip()
        servers.psql(f"DELETE FROM _sqlx_migrations WHERE version = {latest}", database=database)
        for command in (api_command, scheduler_command):
            line = refusal(command)
            assert "the database lacks 1 of this build's" in line and f"({latest})" in line, line
        servers.psql(f"DROP DATABASE {database} WITH (FORCE)")
        servers.psql(f"CREATE DATABASE {database}")
        subprocess.run(migrate, check=True, capture_output=True)
        api = Api(url)
        scheduler = subprocess.Popen(scheduler_command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        servers.wait_ready(f"http://127.0.0.1:{scheduler_port}", scheduler)
        for base in (api.base, f"http://127.0.0.1:{scheduler_port}"):
            assert status(base) == (200, "ready"), base
    finally:
        if scheduler is not None:
            scheduler.send_signal(signal.SIGTERM)
            assert scheduler.wait(timeout=30) == 0
        if api is not None:
            api.close()
        shutil.rmtree(workdir, ignore_errors=True)
        servers.psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


@contextmanager
def run_locked(database: str, run_id: str):
    """Holds the run's row lock in a transaction of its own until the block ends, so
    that writes to the run wait in the server."""
    holder = subprocess.Popen(["psql", f"{servers.HARNESS_PG}/{database}", "-At", "-v", "ON_ERROR_STOP=1"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdin and holder.stdout
    holder.stdin.write(f"BEGIN; SELECT 'locked' FROM runs WHERE id = '{run_id}' FOR UPDATE;\n")
    holder.stdin.flush()
    assert holder.stdout.readline().strip() in ("BEGIN", "locked")
    try:
        yield
    finally:
        holder.stdin.write("ROLLBACK;\n")
        holder.stdin.close()
        holder.wait(timeout=30)


def waiting_on_locks(database: str) -> int:
    return int(servers.psql(
        f"SELECT count(*) FROM pg_stat_activity WHERE datname = '{database}' AND wait_event_type = 'Lock'"))


def start_pause(base: str, token: str) -> str:
    return rawmcp.call(base, token, "start_run", {"process": "pause", "inputs": {}, "requestId": request_id()})[
        "data"]["run"]["id"]


class Calls:
    """Tool calls on threads, each answer or failure kept."""

    def __init__(self) -> None:
        self.answers: list[dict] = []
        self.failures: list[str] = []
        self.threads: list[threading.Thread] = []
        self.lock = threading.Lock()

    def start(self, call) -> None:
        def run() -> None:
            try:
                answer = call()
                with self.lock:
                    self.answers.append(answer)
            except Exception as error:  # noqa: BLE001 (every failure is the finding)
                with self.lock:
                    self.failures.append(repr(error))

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.threads.append(thread)

    def join(self, timeout: float = 60) -> None:
        for thread in self.threads:
            thread.join(timeout)


def test_sigterm_under_load_finishes_every_call_in_flight_and_exits_0(seeded):
    database, url, tokens = seeded
    # Ten calls of one organization in flight at once: its bound on calls in progress
    # is lifted, so that they all reach the run's lock.
    api = Api(url, "--shutdown-delay-seconds", "2", "--shutdown-grace-seconds", "30", "--org-concurrent-calls", "0")
    try:
        run_id = start_pause(api.base, tokens["alice"])
        # A load balancer's view: no new calls once /readyz fails.
        draining = threading.Event()
        load = Calls()

        def get_work_until_draining() -> dict:
            answers = 0
            while not draining.is_set():
                assert rawmcp.call(api.base, tokens["agent-1"], "get_work", {})["ok"]
                answers += 1
            return {"answers": answers}

        for _ in range(4):
            load.start(get_work_until_draining)
        blocked = Calls()
        with run_locked(database, run_id):
            for _ in range(6):
                blocked.start(lambda: cancel(api.base, tokens, run_id))
            eventually(lambda: waiting_on_locks(database) >= 6, what="calls waiting on the run's lock")
            api.process.send_signal(signal.SIGTERM)
            eventually(lambda: status(api.base)[0] == 503, timeout=5, what="draining")
            draining.set()
            # Still serving through the delay.
            assert rawmcp.call(api.base, tokens["agent-1"], "describe", {})["ok"]
            # Then the listener closes while the blocked calls are still in flight.
            def refused() -> bool:
                try:
                    socket.create_connection(("127.0.0.1", api.port), timeout=1).close()
                    return False
                except ConnectionRefusedError:
                    return True
            eventually(refused, timeout=10, what="listener closed")
            assert api.process.poll() is None
            assert waiting_on_locks(database) >= 6
        blocked.join()
        load.join()
        assert blocked.failures == [] and load.failures == []
        assert len(blocked.answers) == 6
        # Each cancel was answered in full: one cancelled the run, the others then
        # found it ended.
        outcomes = sorted(answer["error"]["code"] if answer["ok"] is False else "ok" for answer in blocked.answers)
        assert outcomes == ["conflict"] * 5 + ["ok"], blocked.answers
        assert sum(answer["answers"] for answer in load.answers) > 0
        assert api.process.wait(timeout=30) == 0
    finally:
        api.close()


def cancel(base: str, tokens: dict, run_id: str) -> dict:
    """An operator's cancel of the run: a write, which waits while the run's row is
    locked (a refused call reads the run without a lock and does not)."""
    return rawmcp.call(base, tokens["ops"], "cancel", {"runId": run_id, "reason": "shutdown test",
                                                       "requestId": request_id()}, timeout=60)


@contextmanager
def call_in_flight(api: Api, database: str, tokens: dict):
    """A write held on its run's lock (the run locked by the test) while the block runs."""
    run_id = start_pause(api.base, tokens["alice"])
    blocked = Calls()
    with run_locked(database, run_id):
        blocked.start(lambda: cancel(api.base, tokens, run_id))
        eventually(lambda: waiting_on_locks(database) >= 1, what="a call waiting on the run's lock")
        yield
    blocked.join()


def test_a_second_signal_exits_at_once(seeded):
    database, url, tokens = seeded
    api = Api(url, "--shutdown-grace-seconds", "60")
    try:
        with call_in_flight(api, database, tokens):
            api.process.send_signal(signal.SIGTERM)
            eventually(lambda: "shutting down" in api.log(), timeout=5, what="the first signal taken")
            time.sleep(0.3)
            assert api.process.poll() is None
            api.process.send_signal(signal.SIGTERM)
            assert api.process.wait(timeout=5) != 0
            assert "second signal" in api.log()
    finally:
        api.close()


def test_calls_past_the_grace_period_do_not_hold_the_process(seeded):
    database, url, tokens = seeded
    api = Api(url, "--shutdown-grace-seconds", "1")
    try:
        with call_in_flight(api, database, tokens):
            started = time.monotonic()
            api.process.send_signal(signal.SIGTERM)
            assert api.process.wait(timeout=10) != 0
            assert time.monotonic() - started < 5
            assert "grace period" in api.log()
    finally:
        api.close()
