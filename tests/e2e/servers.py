"""Starting the built server binaries for the end-to-end suite.

SQLite: `agentprocess dev`, which makes its own organization and publishes the
official conformance fixtures (or, given no folder, its built-in examples).
PostgreSQL: a fresh database, seeded with the `agentprocess admin` commands and the
fixtures, served by two `agentprocess-api` processes at once.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import citus

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("AGENTPROCESS_BIN_DIR", REPO / "target" / "debug"))
# The official conformance fixtures, from the protocol's repository beside this one.
FIXTURES = Path(os.environ.get("AGENTPROCESS_FIXTURES", REPO.parent / "shared" / "agentprocess" / "conformance" / "fixtures"))
# This project's own examples, built into `agentprocess`.
EXAMPLES = REPO / "examples" / "processes"
PG = os.environ.get("AGENTPROCESS_TEST_PG", "postgres://postgres@127.0.0.1:5432")
# The suite's own SQL (making databases, reading rows back) connects as another role
# where scripts/test records the servers' statements (tests/statements), so that
# only what the servers sent is checked.
HARNESS_PG = os.environ.get("AGENTPROCESS_TEST_PG_HARNESS", PG)

# The key that seals secrets kept in the database (--secret-key), shared by every API
# process, scheduler and `agentprocess admin` command of the session, as a deployment's are.
SECRET_KEY = base64.b64encode(secrets.token_bytes(32)).decode()

# The identities dev mode makes; the PostgreSQL seed makes the same.
IDENTITIES = {
    "agent-1": ("agent", None, []),
    "agent-2": ("agent", None, []),
    "alice": ("person", "alice@example.com", ["people"]),
    "bob": ("person", "bob@example.com", ["people"]),
    "ops": ("operator", "ops@example.com", []),
}


@dataclass
class Server:
    """One or more server processes over one database."""

    backend: str
    bases: list[str]
    tokens: dict[str, str]
    persons: dict[str, str]
    database: str
    database_url: str
    org: str
    workdir: Path
    processes: list[subprocess.Popen] = field(default_factory=list)
    restart: object = None

    @property
    def base(self) -> str:
        return self.bases[0]

    def mcp_url(self, index: int = 0) -> str:
        return f"{self.bases[index]}/mcp"

    def advance(self, seconds: int) -> None:
        """Moves every process's test clock forward."""
        for base in self.bases:
            body = json.dumps({"advanceSeconds": seconds}).encode()
            request = urllib.request.Request(
                f"{base}/test/clock", data=body, headers={"Content-Type": "application/json"}
            )
            urllib.request.urlopen(request, timeout=10).read()

    def stop(self, sig: int = signal.SIGTERM) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(sig)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes = []


def other_org(server: Server) -> str:
    """A second organization with one agent; returns the agent's token."""
    admin(server.database_url, "create-org", "other")
    admin(server.database_url, "create-identity", "--org", "other", "--kind", "agent", "intruder")
    return admin(server.database_url, "issue-token", "--org", "other", "intruder").strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def eventually(check, timeout: float = 30.0, what: str = "condition"):
    """Polls `check()` until it returns something truthy, and returns that."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{what} not reached within {timeout} s")


def wait_ready(base: str, process: subprocess.Popen, timeout: float = 60, path: str = "/readyz") -> None:
    """Waits until `path` answers 200 (pass /healthz for a process that may be up but
    not ready)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{base}{path}", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{base} did not become ready")


def start_sqlite(processes: Path | None = FIXTURES, extra: tuple[str, ...] = (), port: int | None = None) -> Server:
    """`agentprocess dev --processes <processes>`, or with its built-in examples when
    `processes` is None, and `extra` options, on `port` (a free one when None); its
    working directory is a fresh temporary one."""
    workdir = Path(tempfile.mkdtemp(prefix="agentprocess-e2e-sqlite-"))
    details = workdir / "details.json"
    port = port or free_port()
    published = [] if processes is None else ["--processes", str(processes)]

    def launch() -> subprocess.Popen:
        details.unlink(missing_ok=True)
        log = open(workdir / "server.log", "ab")
        process = subprocess.Popen(
            [
                str(BIN / "agentprocess"), "dev", "--listen", f"127.0.0.1:{port}", "--data-dir",
                str(workdir / "data"), *published, "--details", str(details), "--test-clock", *extra,
            ],
            stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
        )
        deadline = time.monotonic() + 60
        while not details.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dev server did not start: {(workdir / 'server.log').read_text()}")
            time.sleep(0.1)
        wait_ready(f"http://127.0.0.1:{port}", process)
        return process

    process = launch()
    info = json.loads(details.read_text())
    tokens = {name: entry["token"] for name, entry in info["identities"].items()}
    persons = {name: entry["person"] for name, entry in info["identities"].items() if "person" in entry}
    database_url = f"sqlite://{workdir / 'data' / 'agentprocess.db'}?mode=rwc"
    server = Server("sqlite", [f"http://127.0.0.1:{port}"], tokens, persons, "", database_url, info["organization"],
                    workdir, [process])

    def restart() -> None:
        server.processes = [launch()]

    server.restart = restart
    return server


def psql(sql: str, database: str = "postgres", base: str | None = None) -> str:
    """Runs `sql` as the harness (on the suite's PostgreSQL, or the server at `base`)."""
    return subprocess.run(
        ["psql", f"{base or HARNESS_PG}/{database}", "-v", "ON_ERROR_STOP=1", "-Atc", sql],
        check=True, capture_output=True, text=True,
    ).stdout


def admin(database_url: str, *args: str) -> str:
    completed = subprocess.run(
        [str(BIN / "agentprocess"), "admin", "--database-url", database_url, *args],
        capture_output=True, text=True,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"admin {args}: {completed.stderr}")
    return completed.stdout


def seed_postgres(folders: list[Path], with_check: bool = False,
                  pg: str | None = None) -> tuple[str, str, dict[str, str], dict[str, str]]:
    """A fresh migrated database with organization `acme`, the usual identities and
    `folders` published (roles bound to `people`; processes with `check:` only
    `with_check`), on the suite's PostgreSQL or the server at `pg`: (database, url,
    tokens, persons)."""
    database = f"e2e_{secrets.token_hex(6)}"
    psql(f"CREATE DATABASE {database}", base=pg)
    url = f"{pg or PG}/{database}"
    sharded = pg is None and citus.enabled()
    if sharded:
        citus.step("prepare", HARNESS_PG, database)
    admin(url, "migrate")
    if sharded:
        citus.step("distribute", HARNESS_PG, database)
    admin(url, "create-org", "acme", "--name", "Acme")
    tokens, persons = {}, {}
    for name, (kind, person, groups) in IDENTITIES.items():
        args = ["create-identity", "--org", "acme", "--kind", kind, name]
        if person:
            args += ["--person", person]
            persons[name] = person
        for group in groups:
            args += ["--group", group]
        admin(url, *args)
        tokens[name] = admin(url, "issue-token", "--org", "acme", name).strip()
    for folder in folders:
        checks = ["--with-check"] if with_check else []
        try:
            report = admin(url, *checks, "import", "--org", "acme", str(folder))
        except RuntimeError:
            continue  # refused here (a profile this server lacks); the tests know which
        for role in roles_in(report):
            admin(url, *checks, "bind", "--org", "acme", folder.name, role, "people")
        admin(url, *checks, "publish", "--org", "acme", folder.name)
    return database, url, tokens, persons


def api_command(url: str, port: int, secret: bytes, workdir: Path, *extra: str) -> list[str]:
    """An API process's command line; evidence under `workdir/files` unless `extra`
    names an S3 bucket; secrets sealed with SECRET_KEY unless `extra` names a key;
    reached at http://127.0.0.1:<port> unless `extra` names a --public-url."""
    storage = [] if "--s3-bucket" in extra else ["--blob-dir", str(workdir / "files")]
    key = [] if "--secret-key" in extra else ["--secret-key", SECRET_KEY]
    public = [] if "--public-url" in extra else ["--public-url", f"http://127.0.0.1:{port}"]
    return [
        str(BIN / "agentprocess-api"), "serve", "--database-url", url,
        "--listen", f"127.0.0.1:{port}", *public,
        "--url-secret", base64.b64encode(secret).decode(), *storage, *key,
        "--max-connections", "8", "--test-clock", *extra,
    ]


def add_webhook(database_url: str, url: str, org: str = "acme", plain_http: bool = True) -> dict:
    """`agentprocess admin add-webhook`, sealing with SECRET_KEY: the new endpoint's
    id, URL and secret. The suite's receivers listen on loopback over plain http, so
    it is allowed unless `plain_http` is False (as it is for the servers that post to
    them: --allow-plain-http-hooks)."""
    plain = ["--allow-plain-http-hooks"] if plain_http else []
    return json.loads(admin(database_url, "add-webhook", "--org", org, url, "--secret-key", SECRET_KEY, *plain))


def start_postgres(processes: int = 2, extra: tuple[str, ...] = (), folders: list[Path] | None = None) -> Server:
    """`processes` API processes over one fresh PostgreSQL database, with `extra` options
    (with an --evaluator-url, processes with `check:` are published too), publishing
    the process `folders` (the official fixtures when None)."""
    with_check = "--evaluator-url" in extra
    published = sorted(FIXTURES.iterdir()) if folders is None else folders
    database, url, tokens, persons = seed_postgres(published, with_check)
    workdir = Path(tempfile.mkdtemp(prefix="agentprocess-e2e-pg-"))
    server = Server("postgres", [], tokens, persons, database, url, "acme", workdir)
    secret = secrets.token_bytes(32)

    ports = [free_port() for _ in range(processes)]
    server.bases = [f"http://127.0.0.1:{port}" for port in ports]

    def launch() -> None:
        server.processes = []
        for port in ports:
            log = open(workdir / f"server-{port}.log", "ab")
            process = subprocess.Popen(api_command(url, port, secret, workdir, *extra), stdout=log,
                                       stderr=subprocess.STDOUT)
            server.processes.append(process)
        for base, process in zip(server.bases, server.processes):
            wait_ready(base, process)

    launch()
    server.restart = launch
    return server


def start_test_evaluator(*extra: str) -> tuple[subprocess.Popen, str]:
    """The test-double evaluator (`agentprocess-test-evaluator`, not a model: it answers
    by fixed rules on the submission's summary) on a free port: (process, base URL)."""
    process = subprocess.Popen([str(BIN / "agentprocess-test-evaluator"), *extra], stdout=subprocess.PIPE, text=True)
    url = process.stdout.readline().strip()
    assert url.startswith("http://"), url
    return process, url


def roles_in(report: str) -> list[str]:
    """Roles named in `agentprocess admin import`'s report (`  role X: not bound yet …`)."""
    return [line.split()[1].rstrip(":") for line in report.splitlines() if line.startswith("  role ")]


def drop(server: Server) -> None:
    server.stop()
    if server.database:
        psql(f"DROP DATABASE IF EXISTS {server.database} WITH (FORCE)")
        if citus.enabled():
            citus.step("drop", HARNESS_PG, server.database)
    if os.environ.get("AGENTPROCESS_E2E_KEEP"):
        print(f"kept {server.workdir}")
    else:
        shutil.rmtree(server.workdir, ignore_errors=True)


def start_signup(backend: str, extra: tuple[str, ...] = ()) -> Server:
    """A server where anyone may sign up an organization against an identity provider
    on this machine: `agentprocess dev` (which allows both), or two API processes over
    one fresh PostgreSQL database with open sign-up, private issuers and a secret key."""
    if backend == "sqlite":
        return start_sqlite(extra=extra)
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    # Every test signs in from 127.0.0.1: the per-address limits would count them all
    # as one stranger (tests/e2e/test_identity_edge.py tests the limits themselves).
    generous = ("--sign-ins-per-address", "100000", "--token-failures-per-address", "100000")
    return start_postgres(
        processes=2,
        extra=("--signup", "open", "--oidc-allow-private-issuers", "--secret-key", key, *generous, *extra))
