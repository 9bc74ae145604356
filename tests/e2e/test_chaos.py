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
from faults import Blackhole, ConnectionHog, IdleInTransaction

pytestmark = [pytest.mark.anyio, pytest.mark.chaos]

# Seconds of load before and after each fault (loadtests/run-chaos sets more).
SECONDS = float(os.environ.get("CHAOS_SECONDS", "4"))
# What the servers promise after connections go half-open (docs/operations.md): calls
# answered, timers fired and deliveries made again within this many seconds, whatever
# the call deadline. The sockets give up on a silent peer after 10 s (TCP_USER_TIMEOUT);
# a lost connection idle for 5 s is checked before use, so no call waits on one for
# more than 15 s; the background loops pause 1 s after a failed pass: 16 s, and a margin.
HALF_OPEN_BOUND = 20.0
# Past the servers' call deadline, what connections that stopped answering may cost:
# the check of the abandoned connection and the sweep of the idle ones (2 s each), a
# loop's pause (1 s), and a margin.
SILENT_MARGIN = 10.0
# How long the idle transaction holds its snapshot under load.
HOLD_SECONDS = float(os.environ.get("CHAOS_HOLD_SECONDS", SECONDS * 2))


@pytest.fixture
def layouts():
    made: list[chaos.Layout] = []

    def make(**options) -> chaos.Layout:
        made.append(chaos.Layout(**options))
        return made[-1]

    yield make
    for layout in made:
        layout.close()


async def under_load(layout: chaos.Layout, case: str, fault) -> chaos.Row:
    """Agents at work for SECONDS, then `fault(load)` (which marks its repairs), then
    SECONDS more; the record read back as `case`'s row."""
    async with loaded(layout) as load:
        await anyio.sleep(SECONDS)
        await fault(load)
        await anyio.sleep(SECONDS)
    return await reckon(layout, load, case)


@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_postgres_restarted(layouts, mode):
    layout = layouts()

    async def restart(load):
        await off_thread(layout.pg.stop, mode)
        await anyio.sleep(1)
        await off_thread(layout.pg.start)
        load.repaired()

    (await under_load(layout, f"PostgreSQL restarted ({mode} shutdown)", restart)).assert_sound()


async def test_every_backend_terminated_repeatedly(layouts):
    layout = layouts()

    async def terminate(load):
        for _ in range(5):
            await off_thread(layout.pg.terminate_backends, layout.database)
            load.repaired()
            await anyio.sleep(1)

    (await under_load(layout, "every backend terminated, 5 times", terminate)).assert_sound()


async def test_connection_slots_taken_by_another_client(layouts):
    # Two API processes and a scheduler may open 24 connections; the server has 40
    # slots, 3 of them reserved for superusers (the harness).
    layout = layouts(max_connections=40)
    hog = ConnectionHog(layout.pg)
    seen = {}

    async def take_every_slot(load):
        # Take every free slot, then end the servers' sessions and take theirs too.
        for _ in range(3):
            await off_thread(hog.take, 40)
            await off_thread(layout.pg.terminate_backends, layout.database)
        await off_thread(hog.take, 40)
        seen["held"], seen["kept"] = len(hog.sessions), layout.pg.sessions_of("agentprocess")
        starved = len(load.acks)
        await anyio.sleep(SECONDS)
        seen["during"] = len(load.acks) - starved
        await off_thread(hog.release)
        load.repaired()

    try:
        row = await under_load(layout, "every connection slot taken by another client", take_every_slot)
    finally:
        hog.release()
    row.notes.append(f"the other client held {seen['held']} slots, the servers won back {seen['kept']} connections "
                     f"between the terminations; {seen['during']} calls acknowledged meanwhile, the rest answered "
                     "retry or 503")
    row.assert_sound()


async def test_api_processes_killed_ten_times(layouts):
    layout = layouts(apis=3)

    async def kill(load):
        for _ in range(10):
            await anyio.sleep(random.uniform(0.2, 1.0))
            index = random.randrange(3)
            await off_thread(layout.kill_api, index)
            await off_thread(layout.start_api, index)
            load.repaired()

    (await under_load(layout, "an API process killed (-9), 10 times", kill)).assert_sound()


async def test_schedulers_killed_repeatedly(layouts):
    layout = layouts(schedulers=2)

    async def kill(load):
        for turn in range(6):
            await anyio.sleep(random.uniform(0.3, 1.0))
            await off_thread(layout.kill_scheduler, turn % 2)
            await off_thread(layout.start_scheduler, turn % 2)
            load.repaired()

    (await under_load(layout, "a scheduler killed (-9), 6 times", kill)).assert_sound()


async def test_redis_flushed_then_restarted(layouts):
    layout = layouts()

    async def flush_then_restart(load):
        assert await off_thread(layout.redis.cli, "FLUSHALL") == "OK"
        load.repaired()
        await anyio.sleep(SECONDS)
        await off_thread(layout.redis.stop)
        await anyio.sleep(1)
        await off_thread(layout.redis.start)
        load.repaired()

    (await under_load(layout, "Redis flushed, then restarted empty", flush_then_restart)).assert_sound()


async def slowed(proxy, load, delay: float) -> None:
    """Every packet through `proxy` `delay` seconds late for SECONDS, then repaired."""
    proxy.delay = delay
    await anyio.sleep(SECONDS)
    proxy.heal()
    load.repaired()


async def test_latency_to_the_database(layouts):
    layout = layouts(proxied=True)

    async def slow(load):
        await slowed(layout.proxy, load, 0.05)

    (await under_load(layout, "50 ms added to each database packet", slow)).assert_sound()


async def test_database_connections_reset(layouts):
    layout = layouts(proxied=True)

    async def reset(load):
        for _ in range(3):
            layout.proxy.refusing = True
            await off_thread(layout.proxy.reset)
            await anyio.sleep(1)
            layout.proxy.heal()
            load.repaired()
            await anyio.sleep(1)

    (await under_load(layout, "database connections reset, 3 times", reset)).assert_sound()


async def half_open(layouts, part: str) -> None:
    """Every open connection to `part` (`database` or `Redis`) loses its peer, as when
    a NAT or firewall lost their entries: the kernel drops their packets both ways; new
    connections pass. The servers' call deadline is set past the bound, so only the
    sockets' own liveness (TCP keepalive and user timeout) and the pools' checks can end
    the stall within it."""
    layout = layouts(deadline="60")
    blackhole = Blackhole(layout.pg.port if part == "database" else layout.redis.port)
    dropped = []

    async def vanish(load):
        dropped.append(await off_thread(blackhole.drop_open))
        load.repaired()
        await anyio.sleep(HALF_OPEN_BOUND)

    try:
        row = await under_load(layout, f"{part} connections half-open (packets dropped)", vanish)
    finally:
        blackhole.close()
    row.notes.append(f"{dropped[0]} connections lost their peer without a word; calls, timers and deliveries "
                     f"resumed within the bound of {HALF_OPEN_BOUND} s (the servers' deadline was 60 s)")
    row.assert_sound(bound=HALF_OPEN_BOUND)


async def test_database_connections_half_open(layouts):
    await half_open(layouts, "database")


async def test_redis_connections_half_open(layouts):
    await half_open(layouts, "Redis")


async def test_database_connections_silent(layouts):
    layout = layouts(proxied=True)
    silenced = []

    async def silence(load):
        # Every open connection goes silent for good while the peer's kernel still
        # acknowledges (a frozen server, or a proxy that lost its upstream); new ones pass.
        silenced.append(await off_thread(layout.proxy.half_open))
        load.repaired()
        await anyio.sleep(SECONDS)

    row = await under_load(layout, "database connections silent (acknowledged, unanswered)", silence)
    row.notes.append(f"{silenced[0]} connections went silent; each call on one was answered retry at the servers' "
                     f"deadline of {chaos.SERVER_DEADLINE} s, and the pools checked their idle connections")
    row.assert_sound(bound=float(chaos.SERVER_DEADLINE) + SILENT_MARGIN)


async def test_a_session_idle_in_transaction_holds_back_vacuum(layouts):
    layout = layouts()
    seen = {}

    async def hold(load):
        seen["before"] = await chaos.acknowledged_per_second(load, SECONDS)
        seen["size before"] = layout.table_bytes()
        holder = await off_thread(IdleInTransaction, layout.pg, layout.database)
        seen["during"] = await chaos.acknowledged_per_second(load, HOLD_SECONDS)
        seen["vacuum while held"] = await off_thread(layout.vacuum)
        seen["size held"] = layout.table_bytes()
        seen["held back"] = holder.held_back()
        await off_thread(holder.release)
        load.repaired()

    row = await under_load(layout, "a session idle in transaction (another client)", hold)
    (removed_held, kept_held), (removed_after, kept_after) = seen["vacuum while held"], await off_thread(layout.vacuum)
    row.notes += [
        f"acknowledged calls/s: {seen['before']:.0f} before, {seen['during']:.0f} while the session held its "
        f"snapshot for {HOLD_SECONDS:.0f} s ({seen['during'] / seen['before']:.2f} of before), its snapshot "
        f"{seen['held back']} transactions behind at the end",
        f"VACUUM while held: {removed_held} row versions removed, {kept_held} dead but not removable; "
        f"once released: {removed_after} removed, {kept_after} not removable",
        f"tables and indexes: {seen['size before'] / 1e6:.1f} MB before, {seen['size held'] / 1e6:.1f} MB while held",
    ]
    row.assert_sound()
    assert kept_held > 0, "the held snapshot kept dead rows from VACUUM"
    assert kept_after < kept_held, "released, VACUUM removes them"


async def test_the_database_disk_fills_up(layouts):
    layout = layouts(disk_mb=160)
    seen = {}

    def refused(load) -> int:
        return load.errors["retry"] + load.errors["HTTP 503"]

    async def fill(load):
        before = refused(load)
        await off_thread(layout.pg.fill_disk, 128 << 10)
        await anyio.sleep(SECONDS * 2)
        seen["refused"] = refused(load) - before
        await off_thread(layout.pg.free_disk)
        seen["stopped"] = not layout.pg.running()
        if seen["stopped"]:
            await off_thread(layout.pg.start)
        load.repaired()

    row = await under_load(layout, "the database's disk full", fill)
    row.notes.append(
        f"{seen['refused']} calls answered retry (or 503) while the disk was full; PostgreSQL "
        + ("stopped itself and was started again once space returned" if seen["stopped"] else "kept running"))
    row.assert_sound()
    assert seen["refused"] > 0, "the full disk refused writes"


async def test_the_evidence_store_slow_then_down(layouts):
    layout = layouts(s3=True)

    async def slow_then_down(load):
        # Each packet 3 s late: past the servers' --s3-timeout-seconds of 2.
        await slowed(layout.s3_proxy, load, 3.0)
        await anyio.sleep(SECONDS)
        await off_thread(layout.s3.stop)
        await anyio.sleep(SECONDS)
        await off_thread(layout.s3.start)
        load.repaired()

    case = "the evidence store slow past its timeout, then down"
    (await under_load(layout, case, slow_then_down)).assert_sound()
