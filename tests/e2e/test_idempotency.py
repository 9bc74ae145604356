"""requestId: a replay returns the original result, other arguments are a conflict,
and a call that failed records nothing, so its retry can succeed."""

from __future__ import annotations

import json

import pytest

from client import request_id
from test_errors import PROCESS, good_submission, started

pytestmark = pytest.mark.anyio


async def test_a_replayed_start_returns_the_same_run_and_starts_no_other(clients, server):
    listed = await clients["alice"].call("list_processes")
    inputs = next(i["inputs"] for i in listed["items"] if i["name"] == PROCESS)
    from walk import fill

    arguments = dict(process=PROCESS, inputs=fill(inputs, server.persons), requestId=request_id())
    first = await clients["alice"].call("start_run", **arguments)
    again = await clients["alice"].call("start_run", **arguments)
    assert again == first
    runs = await clients["alice"].call("list_runs", process=PROCESS, limit=100)
    assert sum(1 for run in runs["items"] if run["id"] == first["run"]["id"]) == 1
    other = await clients["alice"].error("start_run", **dict(arguments, mode="test"))
    assert other["code"] == "conflict"


async def test_a_replayed_claim_returns_the_original_token_after_the_lease_ended(clients, server):
    view = await started(clients, server)
    arguments = dict(runId=view["run"]["id"], stepId="draft", requestId=request_id())
    first = await clients["agent-1"].call("claim", **arguments)
    server.advance(601)
    replay = await clients["agent-1"].call("claim", **arguments)
    assert replay == first
    assert replay["token"] == first["token"] and replay["expiresAt"] == first["expiresAt"]


async def test_a_refused_submission_records_nothing_so_its_request_id_can_succeed(clients, server):
    view = await started(clients, server)
    claim = await clients["agent-1"].call("claim", runId=view["run"]["id"], stepId="draft", requestId=request_id())
    reused = request_id()
    error = await clients["agent-1"].error("submit", token=claim["token"], output={}, summary="", requestId=reused)
    assert error["code"] == "not_accepted"
    done = await clients["agent-1"].call("submit", token=claim["token"], requestId=reused,
                                         **good_submission(claim, server))
    assert next(s for s in done["steps"] if s["id"] == "draft")["state"] == "done"
    # The handoff of the refused attempt no longer shows: the step is done.
    assert await clients["agent-1"].call("submit", token=claim["token"], requestId=reused,
                                         **good_submission(claim, server)) == done


async def test_a_replay_answers_only_the_identity_that_made_the_call(clients, server):
    """requestIds are guessable (`claim-<run>-<step>` is a common choice): another
    identity sending the same one and the same arguments gets `conflict`, never the
    first caller's claim token."""
    view = await started(clients, server)
    run_id = view["run"]["id"]
    arguments = dict(runId=run_id, stepId="draft", requestId=f"claim-{run_id}-draft")
    first = await clients["agent-1"].call("claim", **arguments)
    for other in ("agent-2", "alice", "ops"):
        stolen = await clients[other].error("claim", **arguments)
        assert stolen["code"] == "conflict", stolen
        assert first["token"] not in json.dumps(stolen)
    # The identity that made it still gets its replay.
    assert await clients["agent-1"].call("claim", **arguments) == first
    # And the lease is still the first agent's alone.
    taken = await clients["agent-2"].error("claim", runId=run_id, stepId="draft", requestId=request_id())
    assert (taken["code"], taken["issues"]) == ("conflict", ["claimed_by_other"]), taken
