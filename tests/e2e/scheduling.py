"""The production layout for the scheduler tests: one `agentprocess-api` with its
timers mirrored in Redis, any number of `agentprocess-scheduler` processes, one
PostgreSQL database; and private Redis servers for tests that stop or flush one.

The machine's shared Redis is only used under a fresh key prefix and never flushed or
stopped; a test that does either starts its own `redis-server` on another port.
"""

from __future__ import annotations

import json
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import anyio

import rawmcp
import servers
from client import request_id

PROCESSES = Path(__file__).resolve().parent / "processes"
SHARED_REDIS = "redis://127.0.0.1:6379"

# Short intervals, so faults are repaired within a test's patience.
RECONCILE_SECONDS = 1.0
HOLD_SECONDS = 1.0
SCHEDULER_FLAGS = [
    "--reconcile-seconds", str(RECONCILE_SECONDS), "--timer-hold-seconds", str(HOLD_SECONDS),
    "--timer-poll-seconds", "0.05", "--webhook-retry-seconds", "0.3", "--webhook-poll-seconds", "0.1",
    "--webhook-timeout-seconds", "2", "--max-connections", "8", "--test-clock",
]


def overridden(base: list[str], extra: tuple[str, ...]) -> list[str]:
    """`base` then `extra`, a flag given in both taken from `extra` alone (the servers
    refuse a flag given twice)."""
    given = {flag for flag in extra if flag.startswith("--")}
    kept: list[str] = []
    index = 0
    while index < len(base):
        flag = base[index]
        takes_value = index + 1 < len(base) and not base[index + 1].startswith("--")
        if flag not in given:
            kept.extend(base[index:index + (2 if takes_value else 1)])
        index += 2 if takes_value else 1
    return [*kept, *extra]


class PrivateRedis:
    """A redis-server of the test's own on a free port, keeping nothing on disk."""

    def __init__(self) -> None:
        self.port = servers.free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix="agentprocess-e2e-redis-"))
        self.url = f"redis://127.0.0.1:{self.port}"
        self.start()

    def cli(self, *args: str) -> str:
        completed = subprocess.run(
            ["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True, timeout=10
        )
        return completed.stdout.strip()

    def start(self) -> None:
        subprocess.run(
            [
                "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--daemonize", "yes", "--dir", str(self.workdir),
                "--pidfile", str(self.workdir / "redis.pid"), "--logfile", str(self.workdir / "redis.log"),
            ],
            check=True,
        )
        deadline = time.monotonic() + 10
        while self.cli("PING") != "PONG":
            if time.monotonic() > deadline:
                raise RuntimeError("private redis-server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        self.cli("SHUTDOWN", "NOSAVE")
        deadline = time.monotonic() + 10
        while self.cli("PING") == "PONG":
            if time.monotonic() > deadline:
                raise RuntimeError("private redis-server did not stop")
            time.sleep(0.05)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def cluster_port() -> int:
    """A free port whose cluster bus port (10000 higher) is free too."""
    while True:
        port = servers.free_port()
        if port <= 55535 and port_free(port + 10000):
            return port


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


class PrivateRedisCluster:
    """Three redis-server nodes of the test's own on free ports, made one Redis Cluster
    (no replicas, nothing kept on disk but each node's cluster configuration). A node
    that is down leaves the others serving their slots."""

    def __init__(self, nodes: int = 3) -> None:
        self.ports = [cluster_port() for _ in range(nodes)]
        self.workdir = Path(tempfile.mkdtemp(prefix="agentprocess-e2e-redis-cluster-"))
        self.url = ",".join(f"redis://127.0.0.1:{port}" for port in self.ports)
        for port in self.ports:
            self.start(port)
        subprocess.run(
            ["redis-cli", "--cluster", "create", *[f"127.0.0.1:{port}" for port in self.ports],
             "--cluster-replicas", "0", "--cluster-yes"],
            check=True, capture_output=True, timeout=60,
        )
        self.wait_ok()

    def cli(self, port: int, *args: str) -> str:
        completed = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=10)
        return completed.stdout.strip()

    def start(self, port: int) -> None:
        node = self.workdir / str(port)
        node.mkdir(exist_ok=True)
        subprocess.run(
            [
                "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000",
                "--cluster-require-full-coverage", "no", "--daemonize", "yes", "--dir", str(node),
                "--pidfile", str(node / "redis.pid"), "--logfile", str(node / "redis.log"),
            ],
            check=True,
        )
        deadline = time.monotonic() + 10
        while self.cli(port, "PING") != "PONG":
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster node {port} did not start")
            time.sleep(0.05)

    def stop(self, port: int) -> None:
        self.cli(port, "SHUTDOWN", "NOSAVE")
        deadline = time.monotonic() + 10
        while self.cli(port, "PING") == "PONG":
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster node {port} did not stop")
            time.sleep(0.05)

    def wait_ok(self) -> None:
        """Waits until every node sees the cluster whole."""
        deadline = time.monotonic() + 30
        while not all("cluster_state:ok" in self.cli(port, "CLUSTER", "INFO") for port in self.ports):
            if time.monotonic() > deadline:
                raise RuntimeError("the Redis Cluster did not come up")
            time.sleep(0.1)

    def node_of(self, key: str) -> int:
        """The port of the node that holds `key`'s slot."""
        slot = int(self.cli(self.ports[0], "CLUSTER", "KEYSLOT", key))
        for line in self.cli(self.ports[0], "CLUSTER", "NODES").splitlines():
            fields = line.split()
            port = int(fields[1].split("@")[0].rsplit(":", 1)[1])
            for owned in fields[8:]:
                low, _, high = owned.partition("-")
                if low.isdigit() and int(low) <= slot <= int(high or low):
                    return port
        raise RuntimeError(f"no node holds slot {slot}")

    def members(self, key: str) -> int:
        """A sorted set's size, asked of whichever node holds it."""
        return int(subprocess.run(["redis-cli", "-c", "-p", str(self.ports[0]), "ZCARD", key],
                                  capture_output=True, text=True, timeout=10).stdout.strip() or 0)

    def close(self) -> None:
        for port in self.ports:
            self.stop(port)
        shutil.rmtree(self.workdir, ignore_errors=True)


class Deployment:
    """An API process, schedulers and a database, all on one test clock offset."""

    def __init__(self, redis_url: str, schedulers: int = 1, flags: tuple[str, ...] = (),
                 api_flags: tuple[str, ...] = (), api_env: dict | None = None,
                 queue: tuple[str, ...] = ()) -> None:
        folders = sorted(PROCESSES.iterdir())
        self.flags = overridden(SCHEDULER_FLAGS, flags)
        database, url, tokens, persons = servers.seed_postgres(folders)
        self.workdir = Path(tempfile.mkdtemp(prefix="agentprocess-e2e-sched-"))
        self.redis_url = redis_url
        self.queue = queue
        self.prefix = f"agentprocess-e2e:{secrets.token_hex(6)}"
        self.advanced = 0
        # The key the schedulers are given; a test that rotates it changes this.
        self.secret_key = servers.SECRET_KEY
        port = servers.free_port()
        self.server = servers.Server("postgres", [f"http://127.0.0.1:{port}"], tokens, persons, database, url,
                                     "acme", self.workdir)
        log = open(self.workdir / "api.log", "ab")
        api = subprocess.Popen(
            servers.api_command(url, port, secrets.token_bytes(32), self.workdir, *self.queue_flags(), *api_flags),
            stdout=log, stderr=subprocess.STDOUT, env=api_env,
        )
        self.server.processes = [api]
        servers.wait_ready(self.server.base, api)
        self.scheduler_ports = [servers.free_port() for _ in range(schedulers)]
        self.schedulers: dict[int, subprocess.Popen] = {}
        for index in range(schedulers):
            self.start_scheduler(index)

    def queue_flags(self) -> list[str]:
        return ["--redis-url", self.redis_url, "--redis-prefix", self.prefix, *self.queue]

    def scheduler_base(self, index: int) -> str:
        return f"http://127.0.0.1:{self.scheduler_ports[index]}"

    def start_scheduler(self, index: int) -> None:
        log = open(self.workdir / f"scheduler-{index}.log", "ab")
        process = subprocess.Popen(
            [
                str(servers.BIN / "agentprocess-scheduler"), "serve", "--database-url", self.server.database_url,
                "--listen", f"127.0.0.1:{self.scheduler_ports[index]}", *self.queue_flags(), *self.flags,
                "--secret-key", self.secret_key,
            ],
            stdout=log, stderr=subprocess.STDOUT,
        )
        self.schedulers[index] = process
        # /healthz, not /readyz: a scheduler whose Redis is down is up but not ready.
        servers.wait_ready(self.scheduler_base(index), process, path="/healthz")
        # A new process's clock starts at the real time: bring it to the others'.
        if self.advanced:
            post_advance(self.scheduler_base(index), self.advanced)

    def kill_scheduler(self, index: int, sig: int = signal.SIGKILL) -> int:
        process = self.schedulers.pop(index)
        process.send_signal(sig)
        return process.wait(timeout=30)

    def advance(self, seconds: int) -> str:
        """Moves every process's clock forward; returns the API's new time."""
        self.advanced += seconds
        now = post_advance(self.server.base, seconds)
        for index in self.schedulers:
            post_advance(self.scheduler_base(index), seconds)
        return now

    def sql(self, query: str) -> str:
        return servers.psql(query, self.server.database)

    def close(self) -> None:
        for index in list(self.schedulers):
            self.kill_scheduler(index, signal.SIGTERM)
        servers.drop(self.server)
        shutil.rmtree(self.workdir, ignore_errors=True)


def post_advance(base: str, seconds: int) -> str:
    body = json.dumps({"advanceSeconds": seconds}).encode()
    request = urllib.request.Request(f"{base}/test/clock", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())["now"]


def ready(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/readyz", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


# The noisy organization, named to sort before acme: a loop that served organizations
# in the order of their names would serve it first. Its runs each make a chat post and
# a webhook delivery that its endpoint never answers.
NOISY_ORG = "abusive"
NOISY_RUNS = 40
# The shipped post timeout (--webhook-timeout-seconds): each post to the tarpit holds
# its send this long.
POST_TIMEOUT_SECONDS = 5
# How long another organization's message or delivery may take while the noisy one's
# sends are held: a bound on the isolation, not a speed benchmark. A loop that took
# the oldest work of all organizations and waited for each pass's slowest send would
# make it wait for the pass under way: 40 held sends, 8 at a time, 5 s each, some 25 s.
# Shared between organizations it goes out in the next pass (0.1 s polls here), under
# a second on this machine; 10 s leaves room for a slow CI machine.
ISOLATION_SECONDS = 10.0


async def backlog_under_way(tarpit) -> None:
    """Waits until the tarpit holds the noisy organization's posts, then one post
    timeout more: a pass begun before all its runs were started has ended, and the
    loop works through the whole backlog, as the attacker would have it."""
    deadline = time.monotonic() + 60
    while tarpit.accepted() < 1:
        assert time.monotonic() < deadline, "no post reached the tarpit"
        await anyio.sleep(0.1)
    await anyio.sleep(POST_TIMEOUT_SECONDS + 1)


def noisy_organization(deployment: Deployment, endpoint: str, runs: int, org: str = NOISY_ORG) -> list[str]:
    """Organization `org`, whose people group's chat hook and whose webhook both post
    to `endpoint`, with `runs` runs of vendor-approval started, each waiting for its
    people: as many chat messages and webhook deliveries for `endpoint`. Returns
    the runs."""
    url = deployment.server.database_url
    servers.admin(url, "create-org", org, "--name", org)
    servers.admin(url, "create-identity", "--org", org, "--kind", "person", "--person", f"mallory@{org}.example",
                  "--group", "people", "mallory")
    report = servers.admin(url, "import", "--org", org, str(PROCESSES / "vendor-approval"))
    for role in servers.roles_in(report):
        servers.admin(url, "bind", "--org", org, "vendor-approval", role, "people")
    servers.admin(url, "publish", "--org", org, "vendor-approval")
    servers.admin(url, "chat-hook", "--org", org, "--group", "people", endpoint, "--secret-key", servers.SECRET_KEY,
                  "--allow-plain-http-hooks")
    servers.add_webhook(url, endpoint, org=org)
    token = servers.admin(url, "issue-token", "--org", org, "mallory").strip()
    return [
        rawmcp.call(deployment.server.base, token, "start_run", {
            "process": "vendor-approval", "inputs": {"vendorName": f"Vendor {index}", "expectedAnnualSpend": 1},
            "requestId": request_id(),
        })["data"]["run"]["id"]
        for index in range(runs)
    ]
