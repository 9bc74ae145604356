"""The chaos harness: the production layout on parts of the test's own (a private
PostgreSQL, a private Redis, several `agentprocess-api` processes, schedulers, a
webhook receiver), an agent load that keeps going through a fault, and the reckoning
afterwards.

Every cycle of the load starts a run of `cycle` (a nonce and a time a few seconds on
as inputs), claims its agent step and submits the nonce; the server then fires the
run's `wait_until` timer and the run ends, which notifies the receiver. A call that
fails for a reason that may pass (no answer, a reset connection, a 5xx, `retry`) is
sent again with the same `requestId`, to any API process, until it is acknowledged or
`OP_PATIENCE` runs out.

The reckoning reads the record once the fault is over and counts:
- lost: an acknowledged start whose run is missing, an acknowledged submit whose
  output is not in the run, a submitted run that never ended (its timer lost), or
  whose end never reached the receiver;
- duplicated: two runs for one nonce, a run ended (or notified) twice, a run whose
  completions differ from a clean run's, one run end delivered under two ids;
- errors seen by the clients, by code (`retry`, `connection`, `HTTP 503`, ...);
- hung: calls with no answer within `CALL_DEADLINE`;
- the time to recover: from each repair to the next acknowledged call;
- the latest timer: the longest any run took from its timer falling due (or its
  submit, if later) to its end, which the scheduler's firing of the timer makes;
- the longest delivery pause: the longest time no end reached the receiver while one
  that had ended was waiting to (a backlog of deliveries, which a fast load builds in a
  debug build, flows on without pausing; a stalled delivery loop does not).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import anyio
import httpx2 as httpx

import rawmcp
import scheduling
import servers
from client import check_result
from faults import PrivatePostgres, TcpProxy
from test_evidence_s3 import BUCKET, S3
from test_webhooks import Receiver

CYCLE = Path(__file__).resolve().parent / "processes" / "cycle"
# A call with no answer after this long counts as hung (the server's own deadline is
# shorter: it answers `retry` first).
CALL_DEADLINE = float(os.environ.get("CHAOS_CALL_DEADLINE", "20"))
# How long one operation is retried before the load gives it up.
OP_PATIENCE = 90.0
# How long after the load the record may take to settle (every timer fired, every end
# delivered).
SETTLE_PATIENCE = 60.0
WORKERS = int(os.environ.get("CHAOS_WORKERS", "6"))
# The servers' own deadline (--call-deadline-seconds): well below the clients', so
# that a call stuck on a silent connection is answered `retry` before a client gives up.
SERVER_DEADLINE = os.environ.get("CHAOS_SERVER_DEADLINE", "5")

# The rows of every case run in this session, printed at its end (conftest.py).
ROWS: list["Row"] = []


@dataclass
class Row:
    """What one case did and found."""

    case: str
    attempted: int = 0
    acknowledged: int = 0
    lost: int = 0
    duplicated: int = 0
    errors: Counter = field(default_factory=Counter)
    hung: int = 0
    recovery: float | None = None
    longest_call: float = 0.0
    latest_timer: float = 0.0
    delivery_pause: float = 0.0
    findings: list[str] = field(default_factory=list)
    # What the case measured beyond the columns, printed under the table.
    notes: list[str] = field(default_factory=list)

    def cells(self) -> list[str]:
        errors = ", ".join(f"{code} {count}" for code, count in sorted(self.errors.items())) or "none"
        recovery = "not recovered" if self.recovery is None else f"{self.recovery:.1f} s"
        return [self.case, str(self.attempted), str(self.acknowledged), str(self.lost), str(self.duplicated),
                errors, str(self.hung), f"{self.longest_call:.1f} s", recovery, f"{self.latest_timer:.1f} s",
                f"{self.delivery_pause:.1f} s"]

    def assert_sound(self, bound: float | None = None) -> None:
        """Nothing lost, nothing duplicated, every result on the schemas, no call left
        without an answer past the servers' deadline, recovered; with `bound`, the
        recovery, the longest call, the latest timer and the longest delivery pause each
        within it."""
        print("\n" + table([self]))
        assert not self.findings, "\n".join(self.findings)
        assert self.lost == 0 and self.duplicated == 0
        assert self.hung == 0, "a call went unanswered past the clients' deadline"
        assert self.recovery is not None, "no call was acknowledged after the repair"
        assert self.acknowledged > 0
        if bound is not None:
            assert self.recovery <= bound, f"recovered in {self.recovery:.1f} s, over {bound} s"
            assert self.longest_call <= bound, f"a call took {self.longest_call:.1f} s, over {bound} s"
            assert self.latest_timer <= bound, f"a timer fired {self.latest_timer:.1f} s after it was due, over {bound} s"
            assert self.delivery_pause <= bound, f"deliveries paused for {self.delivery_pause:.1f} s, over {bound} s"


HEADER = ["case", "attempted", "acknowledged", "lost", "duplicated", "errors seen by clients",
          "hung", "longest call", "recovery", "latest timer", "longest delivery pause"]


def table(rows: list[Row]) -> str:
    lines = [HEADER, *[row.cells() for row in rows]]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    rendered = [" | ".join(cell.ljust(width) for cell, width in zip(line, widths)) for line in lines]
    rendered.insert(1, "-|-".join("-" * width for width in widths))
    rendered += [f"{row.case}: {note}" for row in rows for note in row.notes]
    return "\n".join(rendered)


class Layout:
    """The production layout over parts the test may harm: `apis` API processes and
    `schedulers` schedulers over a private PostgreSQL (reached through a TCP proxy
    when `proxied`; its data on a small file system of its own given `disk_mb`) and a
    private Redis, with a webhook receiver; evidence in a local directory, or with
    `s3` in an S3-compatible store of the test's own behind a TCP proxy. Every
    process's call deadline is `deadline` seconds."""

    def __init__(self, apis: int = 2, schedulers: int = 1, proxied: bool = False, max_connections: int = 100,
                 disk_mb: int | None = None, s3: bool = False, deadline: str = SERVER_DEADLINE) -> None:
        self.deadline = deadline
        self.pg = PrivatePostgres(max_connections, disk_mb=disk_mb)
        self.redis = scheduling.PrivateRedis()
        self.proxy = TcpProxy(self.pg.port) if proxied else None
        self.s3 = S3() if s3 else None
        self.s3_proxy = TcpProxy(self.s3.port) if self.s3 else None
        self.workdir = Path(tempfile.mkdtemp(prefix="agentprocess-e2e-chaos-"))
        self.database, direct_url, self.tokens, _ = servers.seed_postgres([CYCLE], pg=self.pg.application_base)
        self.url = direct_url.replace(f":{self.pg.port}/", f":{self.proxy.port}/") if self.proxy else direct_url
        self.receiver = Receiver(fail_first=False)
        servers.add_webhook(direct_url, self.receiver.url)
        self.prefix = f"agentprocess-chaos:{secrets.token_hex(4)}"
        self.secret = secrets.token_bytes(32)
        self.api_flags = [] if not self.s3_proxy else [
            "--s3-bucket", BUCKET, "--s3-endpoint", f"http://127.0.0.1:{self.s3_proxy.port}", "--s3-path-style",
            "--s3-access-key-id", "K", "--s3-secret-access-key", "S", "--s3-create-bucket",
            "--s3-timeout-seconds", "2",
        ]
        self.api_ports = [servers.free_port() for _ in range(apis)]
        self.apis: dict[int, subprocess.Popen] = {}
        for index in range(apis):
            self.start_api(index)
        self.scheduler_ports = [servers.free_port() for _ in range(schedulers)]
        self.schedulers: dict[int, subprocess.Popen] = {}
        for index in range(schedulers):
            self.start_scheduler(index)
        self.turn = 0

    def queue_flags(self) -> list[str]:
        return ["--redis-url", self.redis.url, "--redis-prefix", self.prefix]

    def base(self, index: int) -> str:
        return f"http://127.0.0.1:{self.api_ports[index]}"

    def bases(self) -> list[str]:
        return [self.base(index) for index in range(len(self.api_ports))]

    def next_base(self) -> str:
        """The API processes in turn, as a load balancer would spread calls."""
        self.turn += 1
        return self.base(self.turn % len(self.api_ports))

    def start_api(self, index: int) -> None:
        log = open(self.workdir / f"api-{index}.log", "ab")
        command = servers.api_command(self.url, self.api_ports[index], self.secret, self.workdir,
                                      *self.queue_flags(), "--call-deadline-seconds", self.deadline,
                                      *self.api_flags)
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        self.apis[index] = process
        servers.wait_ready(self.base(index), process)

    def kill_api(self, index: int) -> None:
        process = self.apis.pop(index)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def start_scheduler(self, index: int) -> None:
        log = open(self.workdir / f"scheduler-{index}.log", "ab")
        process = subprocess.Popen(
            [
                str(servers.BIN / "agentprocess-scheduler"), "serve", "--database-url", self.url,
                "--listen", f"127.0.0.1:{self.scheduler_ports[index]}", *self.queue_flags(),
                *scheduling.SCHEDULER_FLAGS, "--webhook-allow-private-networks", "--allow-plain-http-hooks",
                "--secret-key", servers.SECRET_KEY,
                "--call-deadline-seconds", self.deadline,
            ],
            stdout=log, stderr=subprocess.STDOUT,
        )
        self.schedulers[index] = process
        servers.wait_ready(f"http://127.0.0.1:{self.scheduler_ports[index]}", process, path="/healthz")

    def kill_scheduler(self, index: int) -> None:
        process = self.schedulers.pop(index)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def sql(self, query: str) -> str:
        return self.pg.sql(query, self.database)

    def vacuum(self) -> tuple[int, int]:
        """VACUUMs the servers' database: (row versions removed, dead ones it could not
        remove yet because a snapshot may still see them)."""
        report = subprocess.run(
            ["psql", f"{self.pg.base}/{self.database}", "-X", "-c", "VACUUM (VERBOSE)"],
            check=True, capture_output=True, text=True, timeout=120,
        ).stderr
        removed = sum(int(n) for n in re.findall(r"tuples: (\d+) removed", report))
        kept = sum(int(n) for n in re.findall(r"(\d+) are dead but not yet removable", report))
        return removed, kept

    def table_bytes(self) -> int:
        return int(self.sql("SELECT sum(pg_total_relation_size(relid)) FROM pg_stat_user_tables").strip())

    def close(self) -> None:
        for process in [*self.apis.values(), *self.schedulers.values()]:
            process.kill()
            process.wait()
        self.receiver.close()
        for proxy in (self.proxy, self.s3_proxy):
            if proxy:
                proxy.close()
        if self.s3:
            self.s3.close()
        self.redis.close()
        self.pg.close()
        if os.environ.get("AGENTPROCESS_E2E_KEEP"):
            print(f"kept {self.workdir}")
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)


class Load:
    """`WORKERS` agents running cycles against a layout until stopped."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.attempted: Counter = Counter()
        self.acknowledged: Counter = Counter()
        self.abandoned: Counter = Counter()
        self.errors: Counter = Counter()
        self.refusals: list[str] = []
        self.off_schema: list[str] = []
        self.hung = 0
        self.longest_call = 0.0
        self.acks: list[float] = []
        self.repairs: list[float] = []
        self.started: dict[str, str] = {}
        self.submitted: dict[str, str] = {}
        # When each submitted run's end was due at the earliest: its timer's time, or
        # the acknowledgement of its submit if that came later (wall clock seconds).
        self.end_due: dict[str, float] = {}
        self.stopping = False
        self.http: httpx.AsyncClient | None = None

    def repaired(self) -> None:
        """Marks the moment a fault was repaired: recovery is measured from here."""
        self.repairs.append(time.monotonic())

    async def worker(self, index: int) -> None:
        agent = self.layout.tokens["agent-1" if index % 2 else "agent-2"]
        count = 0
        while not self.stopping:
            count += 1
            await self.cycle(agent, f"w{index}-{count}-{secrets.token_hex(3)}")

    async def cycle(self, token: str, nonce: str) -> None:
        due = (datetime.now(timezone.utc) + timedelta(seconds=3)).replace(microsecond=0)
        at = due.strftime("%Y-%m-%dT%H:%M:%SZ")
        view = await self.op(token, "start_run", {"process": "cycle", "inputs": {"nonce": nonce, "at": at},
                                                  "requestId": f"start-{nonce}"})
        if view is None:
            return
        run = view["run"]["id"]
        self.started[nonce] = run
        claim = await self.op(token, "claim", {"runId": run, "stepId": "work", "requestId": f"claim-{nonce}"})
        if claim is None:
            return
        upload = await self.op(token, "upload", {"fileName": f"{nonce}.txt", "contentType": "text/plain",
                                                 "contentBase64": base64.b64encode(nonce.encode()).decode(),
                                                 "requestId": f"upload-{nonce}"})
        if upload is None:
            return
        submitted = await self.op(token, "submit", {"token": claim["token"], "output": {"result": nonce},
                                                    "evidence": [{"kind": "file", "ref": upload["id"]}],
                                                    "summary": "reported the nonce", "requestId": f"submit-{nonce}"})
        if submitted is not None:
            self.submitted[nonce] = run
            self.end_due[run] = max(due.timestamp(), time.time())

    async def op(self, token: str, tool: str, arguments: dict) -> dict | None:
        """One operation: sent until acknowledged, refused, or out of patience."""
        self.attempted[tool] += 1
        body = rawmcp.call_body(tool, arguments)
        headers = dict(rawmcp.HEADERS, Authorization=f"Bearer {token}")
        give_up = time.monotonic() + OP_PATIENCE
        pause = 0.05
        while True:
            sent = time.monotonic()
            outcome = await self.send(tool, body, headers)
            self.longest_call = max(self.longest_call, time.monotonic() - sent)
            if isinstance(outcome, dict):
                self.acknowledged[tool] += 1
                self.acks.append(time.monotonic())
                return outcome
            if outcome is False or time.monotonic() > give_up:
                self.abandoned[tool] += 1
                return None
            await anyio.sleep(pause)
            pause = min(pause * 2, 1.0)

    async def send(self, tool: str, body: bytes, headers: dict) -> dict | bool:
        """The data of an acknowledged call; True to try again; False when refused."""
        try:
            response = await self.http.post(f"{self.layout.next_base()}/mcp", content=body, headers=headers,
                                            timeout=CALL_DEADLINE)
        except httpx.TimeoutException:
            self.errors["no answer"] += 1
            self.hung += 1
            return True
        except httpx.TransportError:
            self.errors["connection"] += 1
            return True
        if response.status_code != 200:
            self.errors[f"HTTP {response.status_code}"] += 1
            return True
        answer = response.json()
        if "result" not in answer:
            self.errors[f"JSON-RPC {answer.get('error', {}).get('code')}"] += 1
            return True
        result = answer["result"]["structuredContent"]
        try:
            check_result(tool, result, bool(answer["result"].get("isError")))
        except Exception as error:  # noqa: BLE001 - any failure of the check is a finding
            self.off_schema.append(f"{tool}: {error}")
            return False
        if result["ok"]:
            return result["data"]
        code = result["error"]["code"]
        self.errors[code] += 1
        if code == "retry":
            return True
        self.refusals.append(f"{tool}: {result['error']}")
        return False


@asynccontextmanager
async def loaded(layout: Layout):
    """Runs the load for as long as the block does; on leaving, each agent finishes the
    cycle it is in."""
    load = Load(layout)
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=WORKERS * 2)) as http:
        load.http = http
        async with anyio.create_task_group() as group:
            for index in range(WORKERS):
                group.start_soon(load.worker, index)
            try:
                yield load
            finally:
                load.stopping = True


async def acknowledged_per_second(load: Load, seconds: float) -> float:
    """Acknowledged calls per second over the next `seconds`."""
    before = len(load.acks)
    await anyio.sleep(seconds)
    return (len(load.acks) - before) / seconds


async def off_thread(action, *args):
    """Runs a blocking fault action without stopping the load."""
    return await anyio.to_thread.run_sync(action, *args)


async def reckon(layout: Layout, load: Load, case: str) -> Row:
    """Waits for the record to settle, then counts what was lost and duplicated."""
    row = Row(case, attempted=sum(load.attempted.values()), acknowledged=sum(load.acknowledged.values()),
              errors=load.errors, hung=load.hung, longest_call=load.longest_call)
    row.findings += [f"refused: {refusal}" for refusal in load.refusals[:5]]
    row.findings += [f"off the official schemas: {problem}" for problem in load.off_schema[:5]]
    row.findings += [f"{count} {tool} abandoned after {OP_PATIENCE:.0f} s" for tool, count in load.abandoned.items()]
    row.recovery = recovery(load)

    submitted = set(load.submitted.values())
    ended = await settle(layout, load, submitted)

    runs = {}
    for line in layout.sql("SELECT id, doc FROM runs").splitlines():
        run_id, doc = line.split("|", 1)
        kept = json.loads(doc)
        # A row keeps `{"apart": …, "run": …}` (the run's small part; this load's runs
        # have no large ones).
        runs[run_id] = kept["run"] if "apart" in kept else kept
    missing = [run for run in load.started.values() if run not in runs]
    row.lost += len(missing)
    row.findings += [f"acknowledged start of {run} lost" for run in missing[:5]]

    nonces = Counter(doc["inputs"]["nonce"] for doc in runs.values())
    doubles = {nonce: count for nonce, count in nonces.items() if count > 1}
    row.duplicated += sum(count - 1 for count in doubles.values())
    row.findings += [f"{count} runs for nonce {nonce}" for nonce, count in list(doubles.items())[:5]]

    views = await views_of(layout, list(runs))
    for nonce, run in load.submitted.items():
        view = views.get(run)
        work = (view["data"]["steps"].get("work") or {}) if isinstance(view, dict) else {}
        evidence = [(item["kind"], item.get("sha256")) for item in work.get("evidence", [])]
        if work.get("output") != {"result": nonce} or evidence != [("file", sha256_hex(nonce.encode()))]:
            row.lost += 1
            row.findings.append(f"acknowledged submit of {run} lost: {work}")
    unended = submitted - ended
    row.lost += len(unended)
    row.findings += [f"submitted run {run} never ended" for run in sorted(unended)[:5]]
    row.findings += [f"get_run {run}: {problem}" for run, problem in list(load_problems(views).items())[:5]]

    clean = Counter(runs[run]["completions"] for run in ended)
    if clean:
        usual = clean.most_common(1)[0][0]
        odd = [run for run in ended if runs[run]["completions"] != usual]
        row.duplicated += len(odd)
        row.findings += [f"run {run} has {runs[run]['completions']} completions, not {usual}" for run in odd[:5]]

    notified = counts(layout, "run.ended")
    row.duplicated += sum(count - 1 for run, count in notified.items() if count > 1)
    row.lost += len([run for run in ended if run not in notified])

    deliveries = delivered_ends(layout)
    ended_at = {run: datetime.fromisoformat(views[run]["run"]["ended"]["at"]).timestamp()
                for run in ended if isinstance(views.get(run), dict) and views[run]["run"]["ended"]}
    lateness = {run: ended_at[run] - load.end_due[run] for run in submitted if run in ended_at}
    if lateness:
        latest = max(lateness, key=lateness.get)
        row.latest_timer = lateness[latest]
        row.notes.append(f"the latest timer: {latest}'s, {row.latest_timer:.1f} s after it was due "
                         f"(at {datetime.fromtimestamp(load.end_due[latest], timezone.utc):%H:%M:%S.%f} UTC)")
    row.delivery_pause = longest_pause(ended_at, first_arrivals(layout))
    for run in ended:
        ids = deliveries.get(run, set())
        if not ids:
            row.lost += 1
            row.findings.append(f"the end of {run} was never delivered")
        elif len(ids) > 1:
            row.duplicated += len(ids) - 1
            row.findings.append(f"the end of {run} was delivered under {len(ids)} ids")
    ROWS.append(row)
    return row


def recovery(load: Load) -> float | None:
    """The longest time from a repair to the next acknowledged call."""
    if not load.repairs:
        return 0.0
    worst = 0.0
    for repaired in load.repairs:
        after = [ack for ack in load.acks if ack >= repaired]
        if not after:
            return None
        worst = max(worst, min(after) - repaired)
    return worst


async def settle(layout: Layout, load: Load, submitted: set[str]) -> set[str]:
    """Waits until every submitted run has ended and its end was delivered (or
    patience runs out); returns the runs that ended."""
    deadline = time.monotonic() + SETTLE_PATIENCE
    while True:
        ended = set(layout.sql("SELECT id FROM runs WHERE state = 'ended'").split())
        delivered = set(delivered_ends(layout))
        if submitted <= ended and submitted <= delivered or time.monotonic() > deadline:
            return ended
        await anyio.sleep(0.2)


def longest_pause(ended_at: dict[str, float], arrivals: dict[str, float]) -> float:
    """The longest time between two deliveries of ends while some run had ended and
    waited for its end to be delivered throughout."""
    delivered = sorted((arrivals[run], ended_at[run]) for run in ended_at if run in arrivals)
    # The earliest end among the runs delivered at or after each position.
    earliest_waiting = [0.0] * len(delivered)
    earliest = float("inf")
    for index in range(len(delivered) - 1, -1, -1):
        earliest = min(earliest, delivered[index][1])
        earliest_waiting[index] = earliest
    return max((delivered[index + 1][0] - delivered[index][0] for index in range(len(delivered) - 1)
                if earliest_waiting[index + 1] <= delivered[index][0]), default=0.0)


def first_arrivals(layout: Layout) -> dict[str, float]:
    """When each run's end first reached the receiver (wall clock seconds)."""
    found: dict[str, float] = {}
    for run, post in delivered_end_posts(layout):
        found[run] = min(found.get(run, post["at"]), post["at"])
    return found


def counts(layout: Layout, event: str) -> dict[str, int]:
    """Notifications of `event` per run, from the outbox."""
    rows = layout.sql(f"SELECT run_id, count(*) FROM notifications WHERE event = '{event}' GROUP BY run_id")
    return {run: int(count) for run, count in (line.split("|") for line in rows.splitlines() if line)}


def delivered_ends(layout: Layout) -> dict[str, set[str]]:
    """The webhook ids under which each run's end reached the receiver."""
    found: dict[str, set[str]] = {}
    for run, post in delivered_end_posts(layout):
        found.setdefault(run, set()).add(post["headers"]["webhook-id"])
    return found


def delivered_end_posts(layout: Layout):
    """(run, post) for each delivered post of a run's end."""
    for post in layout.receiver.delivered():
        body = json.loads(post["body"])
        if body["type"] == "run.ended":
            yield body["run"]["id"], post


async def views_of(layout: Layout, runs: list[str]) -> dict[str, dict | str]:
    """Every run's view through get_run, each checked against the official schemas (a
    problem is kept as text); several at once, spread over the API processes, since a
    long run leaves many thousands."""
    token = layout.tokens["agent-1"]
    headers = dict(rawmcp.HEADERS, Authorization=f"Bearer {token}")
    views: dict[str, dict | str] = {}

    async def read(http: httpx.AsyncClient, shard: list[str]) -> None:
        for run in shard:
            body = rawmcp.call_body("get_run", {"runId": run})
            # A long load leaves many thousands of runs: reading them all at once may meet
            # the organization's call rate, and `retry` is then answered, as to any client.
            for _ in range(50):
                response = await http.post(f"{layout.next_base()}/mcp", content=body, headers=headers,
                                           timeout=CALL_DEADLINE)
                if not told_to_retry(response):
                    break
                await anyio.sleep(0.2)
            try:
                answer = response.json()["result"]
                check_result("get_run", answer["structuredContent"], bool(answer.get("isError")))
                views[run] = answer["structuredContent"]["data"]
            except Exception as error:  # noqa: BLE001 - kept as a finding
                views[run] = f"{response.status_code}: {error}"

    async with httpx.AsyncClient() as http, anyio.create_task_group() as group:
        for index in range(WORKERS):
            group.start_soon(read, http, runs[index::WORKERS])
    return views


def told_to_retry(response: httpx.Response) -> bool:
    """Whether an answer of the MCP endpoint says to try again later (429 or 503, or
    the tool's `retry`)."""
    if response.status_code in (429, 503):
        return True
    try:
        content = response.json()["result"]["structuredContent"]
    except (ValueError, KeyError, TypeError):
        return False
    return isinstance(content, dict) and (content.get("error") or {}).get("code") == "retry"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_problems(views: dict[str, dict | str]) -> dict[str, str]:
    return {run: view for run, view in views.items() if isinstance(view, str)}
