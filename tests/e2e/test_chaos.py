"""The chaos suite: each case harms one part of the production layout while agents keep
working (tests/e2e/chaos.py), then reads the record: nothing acknowledged is lost,
nothing happens twice, every result is on the official schemas, and the service
recovers. Each case prints its row; the session prints them all as one table
(`loadtests/run-chaos` runs these cases alone, longer).

Every part a case harms is the test's own: a private PostgreSQL, a private Redis, a
TCP proxy; the machine's shared servers are never touched."""

from __future__ import annotations

import os
import random

import anyio
import pytest

import chaos
from chaos import loaded, off_thread, reckon
from faults import ConnectionHog, IdleInTransaction

pytestmark = [pytest.mark.anyio, pytest.mark.chaos]

# Seconds of load before and after each fault (loadtests/run-chaos sets more).
SECONDS = float(os.environ.get("CHAOS_SECONDS", "4"))


@pytest.fixture
def layouts():
    made: list[chaos.Layout] = []

    def make(**options) -> chaos.Layout:
        made.append(chaos.Layout(**options))
        return made[-1]

    yield make
    for layout in made:
        layout.close()


@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_postgres_restarted(layouts, mode):
    layout = layouts()
    async with loaded(layout) as load:
        await anyio.sleep(SECONDS)
        await off_thread(layout.pg.stop, mode)
        await anyio.sleep(1)
        await off_thread(layout.pg.start)
        load.repaired()
        await anyio.sleep(SECONDS)
    (await reckon(layout, load, f"PostgreSQL restarted ({mode} shutdown)")).assert_sound()


async def test_every_backend_terminated_repeatedly(layouts):
    layout = layouts()
    async with loaded(layout) as load:
        await anyio.sleep(SECONDS)
        for _ in range(5):
            await off_thread(layout.pg.terminate_backends, layout.database)
            load.repaired()
            await anyio.sleep(1)
        await anyio.sleep(SECONDS)
    (await reckon(layout, load, "every backend terminated, 5 times")).assert_sound()


async def test_connection_slots_taken_by_another_client(layouts):
    # Two API processes and a scheduler may open 24 connections; the server has 40
    # slots, 3 of them reserved for superusers (the harness).
    layout = layouts(max_connections=40)
    hog = ConnectionHog(layout.pg)
    try:
        async with loaded(layout) as load:
            await anyio.sleep(SECONDS)
            # Take every free slot, then end the servers' sessions and take theirs too.
            for _ in range(3):
                await off_thread(hog.take, 40)
                await off_thread(layout.pg.terminate_backends, layout.database)
            await off_thread(hog.take, 40)
            held, kept = len(hog.sessions), layout.pg.sessions_of("agentprocess")
            starved = len(load.acks)
            await anyio.sleep(SECONDS)
            during = len(load.acks) - starved
            await off_thread(hog.release)
            load.repaired()
            await anyio.sleep(SECONDS)
    finally:
        hog.release()
    row = await reckon(layout, load, "every connection slot taken by another client")
    row.notes.append(f"the other client held {held} slots, the servers won back {kept} connections between "
                     f"the terminations; {during} calls acknowledged meanwhile, the rest answered retry or 503")
    row.assert_sound()


async def test_api_processes_killed_ten_times(layouts):
    layout = layouts(apis=3)
    async with loaded(layout) as load:
        await anyio.sleep(SECONDS)
        for _ in range(10):
            await anyio.sleep(random.uniform(0.2, 1.0))
            index = random.randrange(3)
            await off_thread(layout.kill_api, index)
            await off_thread(layout.start_api, index)
            load.repaired()
        await anyio.sleep(SECONDS)
    (await reckon(layout, load, "an API process killed (-9), 10 times")).assert_sound()


async def test_schedulers_killed_repeatedly(layouts):
    layout = layouts(schedulers=2)
    async with loaded(layout) as load:
        await anyio.sleep(SECONDS)
        for kill in range(6):
            await anyio.sleep(random.uniform(0.3, 1.0))
            await off_thread(layout.kill_scheduler, kill % 2)
            await off_thread(layout.start_scheduler, kill % 2)
            load.repaired()
        await anyio.sleep(SECONDS)
    (await reckon(layout, load, "a scheduler killed (-9), 6 times")).assert_sound()


async def test_redis_flushed_then_restarted(layouts):
    layout = layouts()
    async with loaded(layout) as load:
        await anyio.sleep(SECONDS)
        assert await off_thread(layout.redis.cli, "FLUSHALL") == "OK"
        load.repaired()
        await anyio.sleep(SECONDS)
        await off_thread(layout.redis.stop)
        await anyio.sleep(1)
        await off_thread(layout.redis.start)
        load.repaired()
        await anyio.sleep(SECONDS)
    (await reckon(layout, load, "Redis flushed, then restarted empty")).assert_sound()


async def test_latency_to_the_database(layouts):
    layout = layouts(proxied=True)
    async with loaded(layout) as load:
        await anyio.sleep(SECONDS)
        layout.proxy.delay = 0.05
        await anyio.sleep(SECONDS)
        layout.proxy.heal()
        load.repaired()
        await anyio.sleep(SECONDS)
    (await reckon(layout, load, "50 ms added to each database packet")).assert_sound()


async def test_database_connections_reset(layouts):
    layout = layouts(proxied=True)
    async with loaded(layout) as load:
        await anyio.sleep(SECONDS)
        for _ in range(3):
            layout.proxy.refusing = True
            await off_thread(layout.proxy.reset)
            await anyio.sleep(1)
            layout.proxy.heal()
            load.repaired()
            await anyio.sleep(1)
        await anyio.sleep(SECONDS)
    (await reckon(layout, load, "database connections reset, 3 times")).assert_sound()


async def test_database_connections_half_open(layouts):
    layout = layouts(proxied=True)
    async with loaded(layout) as load:
        await anyio.sleep(SECONDS)
        # Every open connection goes silent for good; new ones pass.
        silenced = await off_thread(layout.proxy.half_open)
        load.repaired()
        await anyio.sleep(SECONDS * 2)
    row = await reckon(layout, load, "database connections half-open")
    row.notes.append(f"{silenced} connections went silent; each call on one was answered retry at the servers' "
                     f"deadline of {chaos.SERVER_DEADLINE} s and the connection replaced")
    row.assert_sound()


async def test_a_session_idle_in_transaction_holds_back_vacuum(layouts):
    layout = layouts()
    async with loaded(layout) as load:
        await anyio.sleep(SECONDS)
        before = await chaos.acknowledged_per_second(load, SECONDS)
        size_before = layout.table_bytes()
        holder = await off_thread(IdleInTransaction, layout.pg, layout.database)
        during = await chaos.acknowledged_per_second(load, SECONDS * 2)
        removed_while_held, kept_while_held = await off_thread(layout.vacuum)
        size_held = layout.table_bytes()
        held_back = holder.held_back()
        await off_thread(holder.release)
        load.repaired()
        await anyio.sleep(SECONDS)
    removed_after, kept_after = await off_thread(layout.vacuum)
    row = await reckon(layout, load, "a session idle in transaction (another client)")
    row.notes += [
        f"acknowledged calls/s: {before:.0f} before, {during:.0f} while the session held its snapshot "
        f"({during / before:.2f} of before), its snapshot {held_back} transactions behind at the end",
        f"VACUUM while held: {removed_while_held} row versions removed, {kept_while_held} dead but not removable; "
        f"once released: {removed_after} removed, {kept_after} not removable",
        f"tables and indexes: {size_before / 1e6:.1f} MB before, {size_held / 1e6:.1f} MB while held",
    ]
    row.assert_sound()
    assert kept_while_held > 0, "the held snapshot kept dead rows from VACUUM"
    assert kept_after < kept_while_held, "released, VACUUM removes them"


async def test_the_database_disk_fills_up(layouts):
    layout = layouts(disk_mb=160)
    async with loaded(layout) as load:
        await anyio.sleep(SECONDS)
        refused_before = load.errors["retry"] + load.errors["HTTP 503"]
        await off_thread(layout.pg.fill_disk, 128 << 10)
        await anyio.sleep(SECONDS * 2)
        refused_while_full = load.errors["retry"] + load.errors["HTTP 503"] - refused_before
        await off_thread(layout.pg.free_disk)
        stopped = not layout.pg.running()
        if stopped:
            await off_thread(layout.pg.start)
        load.repaired()
        await anyio.sleep(SECONDS)
    row = await reckon(layout, load, "the database's disk full")
    row.notes.append(
        f"{refused_while_full} calls answered retry (or 503) while the disk was full; PostgreSQL "
        + ("stopped itself and was started again once space returned" if stopped else "kept running"))
    row.assert_sound()
    assert refused_while_full > 0, "the full disk refused writes"


async def test_the_evidence_store_slow_then_down(layouts):
    layout = layouts(s3=True)
    async with loaded(layout) as load:
        await anyio.sleep(SECONDS)
        # Each packet 3 s late: past the servers' --s3-timeout-seconds of 2.
        layout.s3_proxy.delay = 3.0
        await anyio.sleep(SECONDS)
        layout.s3_proxy.heal()
        load.repaired()
        await anyio.sleep(SECONDS)
        await off_thread(layout.s3.stop)
        await anyio.sleep(SECONDS)
        await off_thread(layout.s3.start)
        load.repaired()
        await anyio.sleep(SECONDS)
    (await reckon(layout, load, "the evidence store slow past its timeout, then down")).assert_sound()
