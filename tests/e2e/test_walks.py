"""Every published conformance fixture walked to its end along every route, over MCP,
with every result checked against the official schemas."""

from __future__ import annotations

import anyio
import pytest

from client import request_id
from servers import FIXTURES
from walk import Plan, Walker, declared_routes, definition, fill

PROCESSES = sorted(p.name for p in FIXTURES.iterdir() if p.name != "vendor-check")
WALKS = 8

pytestmark = pytest.mark.anyio


async def test_list_processes_shows_every_published_fixture(clients):
    listed = await clients["agent-1"].call("list_processes")
    names = [item["name"] for item in listed["items"]]
    assert names == PROCESSES
    assert "vendor-check" not in names  # needs check-1, which this server does not offer
    for item in listed["items"]:
        assert item["version"] == 1
        assert item["inputs"] == (definition(item["name"]).get("inputs") or {})


@pytest.mark.parametrize("process", PROCESSES)
async def test_every_route_of_the_process_is_walked_to_an_end(clients, server, process):
    listed = await clients["alice"].call("list_processes")
    inputs = next(item["inputs"] for item in listed["items"] if item["name"] == process)
    taken: set[tuple[str, str]] = set()
    outcomes = set()
    plan = Plan()
    for choice in range(WALKS):
        walk = await Walker(clients, server, process, choice, plan).run(fill(inputs, server.persons))
        run = walk.view["run"]
        assert run["state"] == "ended", run
        outcomes.add(run["outcome"])
        taken |= walk.routes
    assert declared_routes(process) <= taken, f"routes never taken: {declared_routes(process) - taken}"
    assert outcomes, process


async def test_a_due_step_turns_overdue_when_its_time_passes(clients, server):
    listed = await clients["alice"].call("list_processes")
    inputs = next(i["inputs"] for i in listed["items"] if i["name"] == "incident-postmortem")
    view = await clients["alice"].call(
        "start_run", process="incident-postmortem", inputs=fill(inputs, server.persons), requestId=request_id()
    )
    run_id = view["run"]["id"]
    claim = await clients["agent-1"].call("claim", runId=run_id, stepId="draft", requestId=request_id())
    view = await clients["agent-1"].call(
        "submit", token=claim["token"], output=fill(claim["step"]["output"], server.persons),
        evidence=[{"kind": "link", "ref": "doc"}], summary="Drafted.", requestId=request_id(),
    )
    review = next(step for step in view["steps"] if step["id"] == "review")
    assert review["overdue"] is False and review["due"]
    server.advance(6 * 24 * 3600)  # review is due in 5d
    for _ in range(100):
        view = await clients["alice"].call("get_run", runId=run_id)
        if next(step for step in view["steps"] if step["id"] == "review")["overdue"]:
            break
        await anyio.sleep(0.05)
    else:
        raise AssertionError("the review never turned overdue")
    assert view["workItems"][0]["stepId"] == "review"  # the work stays open


async def test_a_test_mode_run_marks_its_work_as_test(clients, server):
    listed = await clients["alice"].call("list_processes")
    inputs = next(i["inputs"] for i in listed["items"] if i["name"] == "incident-postmortem")
    view = await clients["alice"].call(
        "start_run", process="incident-postmortem", inputs=fill(inputs, server.persons), mode="test",
        requestId=request_id(),
    )
    assert view["run"]["mode"] == "test"
    work = await clients["agent-1"].call("get_work", process="incident-postmortem", limit=100)
    item = next(item for item in work["items"] if item["runId"] == view["run"]["id"])
    assert item["mode"] == "test"


async def test_get_work_pages_oldest_first_with_its_cursor(clients, server):
    listed = await clients["alice"].call("list_processes")
    inputs = next(i["inputs"] for i in listed["items"] if i["name"] == "support-escalation")
    started = []
    for _ in range(3):
        view = await clients["alice"].call("start_run", process="support-escalation",
                                           inputs=fill(inputs, server.persons), requestId=request_id())
        started.append(view["run"]["id"])
    seen, cursor = [], None
    while True:
        page = await clients["agent-2"].call("get_work", process="support-escalation", limit=1, cursor=cursor)
        assert len(page["items"]) <= 1
        seen += page["items"]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    ours = [item["runId"] for item in seen if item["runId"] in started]
    assert ours == started
    since = [instant(item["readySince"]) for item in seen]
    assert since == sorted(since)
    assert len({(item["runId"], item["stepId"]) for item in seen}) == len(seen)


def instant(text: str) -> tuple[str, str]:
    """An RFC 3339 UTC time as a sortable key, whatever its number of fraction digits."""
    whole, _, fraction = text.removesuffix("Z").partition(".")
    return whole, fraction.ljust(9, "0")
