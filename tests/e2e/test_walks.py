"""Every published example process walked to its end along every route, over MCP,
with every result checked against the official schemas."""

from __future__ import annotations

import pytest

from walk import EXAMPLES, Plan, Walker, definition, fill

PROCESSES = sorted(p.name for p in EXAMPLES.iterdir() if p.name != "vendor-check")
WALKS = 8

pytestmark = pytest.mark.anyio


def declared_routes(process: str) -> set[tuple[str, str]]:
    routes = set()
    for step in definition(process)["steps"]:
        if isinstance(step.get("next"), list):
            for route in step["next"]:
                routes.add((step["id"], route if isinstance(route, str) else route["to"]))
    return routes


async def test_list_processes_shows_every_published_example(clients):
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
