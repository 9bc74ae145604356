"""Races on PostgreSQL with two API processes sharing the database: one step claimed
by 32 callers at once, one work item decided by two people at once, one requestId
sent 16 times at once."""

from __future__ import annotations

from contextlib import AsyncExitStack

import anyio
import pytest

from client import connect, request_id
from test_errors import started

pytestmark = pytest.mark.anyio

# Two API processes on one database: production's shape, which SQLite does not have.
BACKENDS = ["postgres"]


@pytest.fixture
def postgres(server):
    assert len(server.bases) == 2
    return server


async def sessions(stack: AsyncExitStack, server, name: str, count: int):
    """`count` sessions of identity `name`, spread over the server processes."""
    return [
        await connect(stack, server.mcp_url(index % len(server.bases)), server.tokens[name], name)
        for index in range(count)
    ]


async def gather(calls):
    results = [None] * len(calls)

    async def one(index, call):
        results[index] = await call()

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(one, index, call)
    return results


async def test_32_concurrent_claims_of_one_step_give_exactly_one_token(clients, postgres):
    view = await started(clients, postgres)
    async with AsyncExitStack() as stack:
        agents = await sessions(stack, postgres, "agent-1", 16) + await sessions(stack, postgres, "agent-2", 16)
        results = await gather([
            (lambda agent=agent: agent.raw("claim", runId=view["run"]["id"], stepId="draft", requestId=request_id()))
            for agent in agents
        ])
    winners = [r for r in results if r["ok"]]
    assert len(winners) == 1, results
    assert winners[0]["data"]["token"]
    losers = [r["error"] for r in results if not r["ok"]]
    assert all(e["code"] == "conflict" and e["issues"][0] in ("claimed_by_you", "claimed_by_other") for e in losers)


async def test_two_people_deciding_one_item_one_wins_the_other_is_already_decided(clients, postgres):
    view = await started(clients, postgres, "customer-offboarding")
    item = view["workItems"][0]
    arguments = dict(item["decide"]["arguments"], decision="approved")
    async with AsyncExitStack() as stack:
        alice = await connect(stack, postgres.mcp_url(0), postgres.tokens["alice"], "alice")
        bob = await connect(stack, postgres.mcp_url(1), postgres.tokens["bob"], "bob")
        results = await gather([
            lambda: alice.raw("decide", **dict(arguments, requestId=request_id())),
            lambda: bob.raw("decide", **dict(arguments, requestId=request_id())),
        ])
    assert sorted(r["ok"] for r in results) == [False, True], results
    loser = next(r["error"] for r in results if not r["ok"])
    assert (loser["code"], loser["issues"]) == ("conflict", ["already_decided"])


async def test_one_request_id_sent_16_times_at_once_has_one_effect_and_16_identical_results(clients, postgres):
    listed = await clients["alice"].call("list_processes")
    inputs = next(i["inputs"] for i in listed["items"] if i["name"] == "support-escalation")
    from walk import fill

    arguments = dict(process="support-escalation", inputs=fill(inputs, postgres.persons), requestId=request_id())
    async with AsyncExitStack() as stack:
        people = await sessions(stack, postgres, "alice", 16)
        results = await gather([(lambda person=person: person.raw("start_run", **arguments)) for person in people])
    assert all(r["ok"] for r in results), results
    assert all(r == results[0] for r in results)
    run_id = results[0]["data"]["run"]["id"]
    runs = await clients["alice"].call("list_runs", process="support-escalation", limit=100)
    ids = [run["id"] for run in runs["items"]]
    assert ids.count(run_id) == 1
