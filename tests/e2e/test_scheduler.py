"""Timers through the production layout: the API mirrors them in Redis, a separate
`agentprocess-scheduler` fires them. Durations are shortened by moving every process's
test clock, never by editing the processes' units.

Every check of "exactly one effect" reads the record: the run's own steps and the
notification outbox, where each effect of a timer leaves one row."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from contextlib import AsyncExitStack

import anyio
import pytest

import scheduling
from client import connect, request_id

pytestmark = pytest.mark.anyio


@pytest.fixture
def deployment():
    started = scheduling.Deployment(scheduling.SHARED_REDIS, schedulers=1)
    yield started
    started.close()


@pytest.fixture
def two_schedulers():
    started = scheduling.Deployment(scheduling.SHARED_REDIS, schedulers=2)
    yield started
    started.close()


async def clients_of(stack: AsyncExitStack, deployment) -> dict:
    server = deployment.server
    return {name: await connect(stack, server.mcp_url(), token, name) for name, token in server.tokens.items()}


async def eventually(check, timeout: float = 15.0, what: str = "condition"):
    """Polls the async `check` until it returns a true value; returns that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout} s")
        await anyio.sleep(0.1)


def step(view: dict, step_id: str) -> dict:
    return next(s for s in view["steps"] if s["id"] == step_id)


async def start(client, process: str, **inputs) -> str:
    view = await client.call("start_run", process=process, inputs=inputs, requestId=request_id())
    return view["run"]["id"]


def counts(deployment, event: str) -> dict[str, int]:
    """Notifications of `event` per run, from the outbox."""
    rows = deployment.sql(f"SELECT run_id, count(*) FROM notifications WHERE event = '{event}' GROUP BY run_id")
    return {run: int(count) for run, count in (line.split("|") for line in rows.splitlines() if line)}


async def test_each_timer_kind_fires_once_through_the_scheduler(deployment):
    async with AsyncExitStack() as stack:
        clients = await clients_of(stack, deployment)
        alice = clients["alice"]
        now = deployment.advance(0)
        three_hours_on = datetime.fromisoformat(now[:19] + "+00:00") + timedelta(hours=3)
        at = three_hours_on.strftime("%Y-%m-%dT%H:%M:%SZ")
        pause = await start(alice, "pause")
        publish = await start(alice, "publish-at", at=at)
        settlement = await start(alice, "settlement")
        signoff = await start(alice, "signoff")

        async def view(run_id: str) -> dict:
            return await alice.call("get_run", runId=run_id)

        # Two hours on: the one-minute wait is over and the sign-off is overdue.
        deployment.advance(2 * 3600 + 60)

        async def wait_over():
            return (await view(pause))["run"]["state"] == "ended"

        async def overdue():
            return step(await view(signoff), "review").get("overdue") is True

        await eventually(wait_over, what="wait: 1m fired")
        await eventually(overdue, what="due: 2h fired")
        assert (await view(publish))["run"]["state"] != "ended", "wait_until fired early"
        assert step(await view(settlement), "settled")["state"] == "waiting"

        # Three hours on: wait_until's time has come.
        deployment.advance(3600)

        async def published():
            return (await view(publish))["run"]["state"] == "ended"

        await eventually(published, what="wait_until fired")

        # Two days on: the event never came, so the timeout routes to finance.
        deployment.advance(2 * 86400)

        async def timed_out():
            current = await view(settlement)
            return step(current, "chase")["state"] == "waiting" and current

        current = await eventually(timed_out, what="wait_for timeout fired")
        assert step(current, "settled")["state"] != "waiting"

        # One effect each: the outbox holds exactly one notification per effect.
        ended = counts(deployment, "run.ended")
        assert ended.get(pause) == 1 and ended.get(publish) == 1
        assert counts(deployment, "step.overdue") == {signoff: 1}
        assert counts(deployment, "work_item.created").get(settlement) == 1
        assert deployment.sql("SELECT count(*) FROM timers WHERE run_id IN "
                              f"('{pause}', '{publish}')").strip() == "0"


async def test_two_schedulers_fire_every_timer_exactly_once(two_schedulers):
    deployment = two_schedulers
    async with AsyncExitStack() as stack:
        alice = (await clients_of(stack, deployment))["alice"]
        runs = [await start(alice, "pause") for _ in range(80)]
        deployment.advance(61)

        async def all_fired():
            return deployment.sql("SELECT count(*) FROM timers").strip() == "0"

        # Due at once: fired within a reconcile interval (plus a debug build's pass).
        await eventually(all_fired, timeout=scheduling.RECONCILE_SECONDS + 5, what="every timer fired")
        ended = counts(deployment, "run.ended")
        assert sorted(ended) == sorted(runs)
        assert set(ended.values()) == {1}
        states = deployment.sql("SELECT DISTINCT state FROM runs").split()
        assert states == ["ended"]
        for index in range(2):
            assert scheduling.ready(deployment.scheduler_base(index))


async def test_a_timer_that_cannot_be_applied_holds_up_no_other(deployment):
    async with AsyncExitStack() as stack:
        alice = (await clients_of(stack, deployment))["alice"]
        runs = [await start(alice, "pause") for _ in range(12)]
        # A run whose stored record no longer reads: its timer fails, in whatever
        # transaction it shares with others.
        broken = runs[5]
        deployment.sql(f"UPDATE runs SET doc = 'not a run' WHERE id = '{broken}'")
        deployment.advance(61)

        async def others_fired():
            return deployment.sql("SELECT run_id FROM timers").split() == [broken]

        await eventually(others_fired, what="every other timer fired")
        ended = counts(deployment, "run.ended")
        assert sorted(ended) == sorted(run for run in runs if run != broken)
        assert set(ended.values()) == {1}
