"""Faults of the timer path: a scheduler killed mid-batch (or stopped by SIGTERM),
Redis flushed, Redis stopped for a while. Each test runs its own redis-server on another port (never the machine's
shared one). In every case every timer fires, late by at most the reconcile interval
(or, for a killed scheduler, the hold of the entries it had taken) past the repair,
with exactly one effect on each run."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from contextlib import AsyncExitStack

import anyio
import pytest

import rawmcp
import scheduling
import servers
from client import request_id
from test_scheduler import clients_of, counts, start

pytestmark = pytest.mark.anyio

# What the bound allows beyond the reconcile interval or hold: a pass of the debug
# build firing the batch on a loaded two-core machine.
SLACK_SECONDS = 5.0


@pytest.fixture
def redis():
    server = scheduling.PrivateRedis()
    yield server
    server.close()


def deploy(redis, *flags: str):
    return scheduling.Deployment(redis.url, schedulers=1, flags=flags)


def remaining(deployment) -> int:
    return int(deployment.sql("SELECT count(*) FROM timers").strip())


async def wait_all_fired(deployment, bound: float) -> float:
    """Waits until no timer row is left; returns how long it took. Fails past `bound`."""
    started = time.monotonic()
    while remaining(deployment):
        if time.monotonic() - started > bound:
            raise AssertionError(f"{remaining(deployment)} timer(s) still unfired after {bound} s")
        await anyio.sleep(0.05)
    return time.monotonic() - started


def assert_one_effect_each(deployment, runs: list[str]) -> None:
    ended = counts(deployment, "run.ended")
    assert sorted(ended) == sorted(runs), "every run ended"
    assert set(ended.values()) == {1}, "no run ended twice"
    assert deployment.sql("SELECT DISTINCT state FROM runs").split() == ["ended"]


async def start_runs(deployment, count: int) -> list[str]:
    async with AsyncExitStack() as stack:
        alice = (await clients_of(stack, deployment))["alice"]
        return [await start(alice, "pause") for _ in range(count)]


class RunLock:
    """Another session holding one run's row lock (`SELECT … FOR UPDATE` in an open
    transaction) until released: a scheduler that reaches that run waits there."""

    def __init__(self, deployment, run: str) -> None:
        self.session = subprocess.Popen(
            ["psql", f"{servers.HARNESS_PG}/{deployment.server.database}", "-X", "-q", "-At"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.session.stdin.write(f"BEGIN;\nSELECT id FROM runs WHERE id = '{run}' FOR UPDATE;\n")
        self.session.stdin.flush()
        # psql prints the row once the lock is held.
        assert self.session.stdout.readline().strip() == run

    def release(self) -> None:
        self.session.stdin.close()
        self.session.wait(timeout=10)


async def held_at(deployment, run: str, fired_before: int) -> RunLock:
    """Holds `run`'s lock, makes every timer due, and returns the lock once the
    scheduler, firing one timer at a time, has fired the `fired_before` timers that
    come before that run: it then waits on it, mid-batch by construction, not by
    timing. A pass takes the timers due first (see `runs_in_queue_order`) and fires
    them in lock order (by run id)."""
    lock = RunLock(deployment, run)
    deployment.advance(61)
    started = time.monotonic()
    total = int(deployment.sql("SELECT count(*) FROM runs").strip())
    while remaining(deployment) > total - fired_before:
        if time.monotonic() - started > 60:
            lock.release()
            raise AssertionError(f"{remaining(deployment)} timers left")
        await anyio.sleep(0.05)
    return lock


def runs_in_queue_order(redis, deployment) -> list[str]:
    """The runs whose timers the queue holds, in the order a pass takes them: by due
    time, then (for runs started in the same millisecond) by member, not by start."""
    members = redis.cli("ZRANGE", f"{deployment.prefix}:0", "0", "-1").splitlines()
    return [json.loads(member)[1] for member in members]


async def test_kill_9_mid_batch_then_restart(redis):
    deployment = deploy(redis, "--timer-concurrency", "1", "--timers-per-transaction", "1")
    try:
        runs = await start_runs(deployment, 120)
        # One pass takes all 120; the run 61st by id waits.
        lock = await held_at(deployment, sorted(runs)[60], 60)
        deployment.kill_scheduler(0)
        lock.release()
        left = remaining(deployment)
        assert left == len(runs) - 60, f"the kill came mid-batch ({left} of {len(runs)} left)"
        # Nothing fires while no scheduler runs.
        await anyio.sleep(0.5)
        assert remaining(deployment) == left
        deployment.start_scheduler(0)
        took = await wait_all_fired(deployment, scheduling.HOLD_SECONDS + scheduling.RECONCILE_SECONDS + SLACK_SECONDS)
        print(f"kill -9 with {left} timers left: all fired {took:.2f} s after the restart")
        assert_one_effect_each(deployment, runs)
    finally:
        deployment.close()


async def test_flushall_loses_no_timer(redis):
    deployment = deploy(redis)
    try:
        runs = await start_runs(deployment, 40)
        key = f"{deployment.prefix}:0"
        assert int(redis.cli("ZCARD", key)) == len(runs), "the API mirrored every timer"
        assert redis.cli("FLUSHALL") == "OK"
        assert int(redis.cli("ZCARD", key)) == 0
        deployment.advance(61)
        took = await wait_all_fired(deployment, scheduling.RECONCILE_SECONDS + SLACK_SECONDS)
        print(f"after FLUSHALL: all fired {took:.2f} s after they fell due")
        assert_one_effect_each(deployment, runs)
    finally:
        deployment.close()


async def test_redis_stopped_for_a_while_then_started(redis):
    deployment = deploy(redis)
    try:
        redis.stop()
        # The API keeps working without Redis: the rows are the truth.
        runs = await start_runs(deployment, 30)
        deployment.advance(61)
        await anyio.sleep(2)
        assert remaining(deployment) == len(runs), "nothing fires without the queue"
        assert not scheduling.ready(deployment.scheduler_base(0)), "a scheduler without Redis is not ready"
        redis.start()
        took = await wait_all_fired(deployment, scheduling.RECONCILE_SECONDS + SLACK_SECONDS)
        print(f"Redis back: all fired {took:.2f} s later")
        assert_one_effect_each(deployment, runs)
        assert scheduling.ready(deployment.scheduler_base(0))
    finally:
        deployment.close()


async def test_sigterm_mid_batch_finishes_the_pass_exits_0_and_loses_nothing(redis):
    # Passes of ten timers, one at a time; the signal comes while the sixth pass waits
    # on a run's lock half way through, which is released a second later.
    deployment = deploy(redis, "--timer-concurrency", "1", "--timers-per-transaction", "1", "--timer-batch", "10")
    try:
        runs = await start_runs(deployment, 120)
        # The sixth pass takes the 51st to 60th timers in the queue's order; the 6th of
        # their runs by id waits.
        queued = runs_in_queue_order(redis, deployment)
        assert sorted(queued) == sorted(runs), "the API mirrored every timer"
        lock = await held_at(deployment, sorted(queued[50:60])[5], 55)
        threading.Timer(1.0, lock.release).start()
        assert deployment.kill_scheduler(0, signal.SIGTERM) == 0, "a clean exit"
        left = remaining(deployment)
        # The pass under way was finished, whole, and no new one was taken.
        assert left == len(runs) - 60, f"the pass under way was finished and no other ({left} of {len(runs)} left)"
        await anyio.sleep(0.5)
        assert remaining(deployment) == left
        deployment.start_scheduler(0)
        await wait_all_fired(deployment, scheduling.HOLD_SECONDS + scheduling.RECONCILE_SECONDS + SLACK_SECONDS)
        assert_one_effect_each(deployment, runs)
    finally:
        deployment.close()


def partition_of(org: str, partitions: int) -> int:
    """The partition the server files an organization's timers under (FNV-1a)."""
    hash_ = 0xCBF29CE484222325
    for byte in org.encode():
        hash_ = ((hash_ ^ byte) * 0x100000001B3) % 2**64
    return hash_ % partitions


def org_with_pause(deployment, org: str) -> str:
    """A second organization with `pause` published and a person to start it; her token."""
    url = deployment.server.database_url
    servers.admin(url, "create-org", org, "--name", org)
    servers.admin(url, "create-identity", "--org", org, "--kind", "person", "--person", f"alice@{org}.example",
                  "--group", "people", "alice")
    servers.admin(url, "import", "--org", org, str(scheduling.PROCESSES / "pause"))
    servers.admin(url, "publish", "--org", org, "pause")
    return servers.admin(url, "issue-token", "--org", org, "alice").strip()


async def test_a_redis_cluster_node_restarting_loses_no_timer():
    """Timers in a real three-node Redis Cluster, over six hash-tagged partitions, for
    two organizations whose partitions live on different nodes. While the first one's
    node is down the second one's timers fire; once the node is back (empty) the
    reconciler restores the first one's timers from the rows and they fire too, each
    run's exactly once."""
    cluster = scheduling.PrivateRedisCluster()
    partitions = 6
    deployment = scheduling.Deployment(cluster.url, queue=("--redis-cluster", "--redis-partitions", str(partitions)))
    try:
        key = lambda org: f"{deployment.prefix}:{{{partition_of(org, partitions)}}}"  # noqa: E731
        down = cluster.node_of(key("acme"))
        other = next(org for org in (f"org{n}" for n in range(100)) if cluster.node_of(key(org)) != down)
        token = org_with_pause(deployment, other)
        acme_runs = await start_runs(deployment, 20)
        other_runs = [rawmcp.call(deployment.server.base, token, "start_run",
                                  {"process": "pause", "inputs": {}, "requestId": request_id()})["data"]["run"]["id"]
                      for _ in range(10)]
        assert cluster.members(key("acme")) == len(acme_runs), "the API mirrored every timer, hash-tagged"
        assert cluster.members(key(other)) == len(other_runs)

        cluster.stop(down)
        deployment.advance(61)
        # The other organization's node still answers: its timers fire meanwhile.
        await wait_until(lambda: remaining(deployment) == len(acme_runs), 10 + SLACK_SECONDS)
        cluster.start(down)
        cluster.wait_ok()
        took = await wait_all_fired(deployment, scheduling.RECONCILE_SECONDS + SLACK_SECONDS)
        print(f"cluster node back: all fired {took:.2f} s later")
        assert_one_effect_each(deployment, acme_runs + other_runs)
    finally:
        deployment.close()
        cluster.close()


async def wait_until(check, bound: float) -> None:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > bound:
            raise AssertionError(f"not reached within {bound} s")
        await anyio.sleep(0.05)
