"""The examples built into `agentprocess`: started without --processes, from a
temporary working directory that holds no process, `agentprocess dev` publishes
exactly the folders of examples/processes, and each one walks to an end along every
route it declares, reaching every finish. The one written to be tried in test mode
walks in test mode too."""

from __future__ import annotations

import pytest

from servers import EXAMPLES
from walk import Plan, Walker, declared_routes, definition, fill

pytestmark = pytest.mark.anyio

PROCESSES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "PROCESS.md").is_file())
WALKS = 8
# Its body asks to be tried with `mode: "test"` before the first live run.
TEST_MODE = "laptop-provisioning"


def finishes(process: str) -> set[str]:
    """The outcomes of the process's finish steps."""
    return {step["finish"] for step in definition(process, EXAMPLES)["steps"] if "finish" in step}


async def test_dev_without_processes_publishes_exactly_the_built_in_examples(example_clients, examples_server):
    assert not list(examples_server.workdir.rglob("PROCESS.md"))  # nothing to read from disk
    listed = await example_clients["agent-1"].call("list_processes")
    assert [item["name"] for item in listed["items"]] == PROCESSES
    assert len(PROCESSES) >= 4
    for item in listed["items"]:
        frontmatter = definition(item["name"], EXAMPLES)
        assert item["version"] == 1
        assert item["description"] == frontmatter["description"]
        assert item["inputs"] == (frontmatter.get("inputs") or {})


@pytest.mark.parametrize("process", PROCESSES)
async def test_every_route_and_finish_of_the_example_is_reached(example_clients, examples_server, process):
    inputs = definition(process, EXAMPLES).get("inputs") or {}
    routes, ends = declared_routes(process, EXAMPLES), finishes(process)
    taken: set[tuple[str, str]] = set()
    outcomes = set()
    plan = Plan()
    for choice in range(WALKS):
        walker = Walker(example_clients, examples_server, process, choice, plan, EXAMPLES)
        walk = await walker.run(fill(inputs, examples_server.persons))
        run = walk.view["run"]
        assert run["state"] == "ended", run
        outcomes.add(run["outcome"])
        taken |= walk.routes
    assert routes <= taken, f"routes never taken: {routes - taken}"
    assert ends <= outcomes, f"finishes never reached: {ends - outcomes}"


async def test_the_test_mode_example_walks_to_an_end_as_a_test(example_clients, examples_server):
    assert 'mode: "test"' in (EXAMPLES / TEST_MODE / "PROCESS.md").read_text()
    inputs = definition(TEST_MODE, EXAMPLES)["inputs"]
    plan = Plan()
    for choice in range(2):
        walker = Walker(example_clients, examples_server, TEST_MODE, choice, plan, EXAMPLES)
        walk = await walker.run(fill(inputs, examples_server.persons), mode="test")
        assert walk.view["run"]["mode"] == "test"
        assert walk.view["run"]["state"] == "ended", walk.view["run"]
