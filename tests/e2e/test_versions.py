"""New runs start on the latest version: once version 2 of a process binds an agent
step to one agent and its approver role to another group, an agent and a person who
name version 1 in `start_run` are refused (`forbidden`, in words) and no run is made,
while a run started before goes on by version 1. Through the built binaries and the
official MCP client, on SQLite and on PostgreSQL, each a server of its own (so the
shared servers' processes stay the fixtures); version 2 is published with
`agentprocess admin`, as an operator would."""

from __future__ import annotations

from contextlib import AsyncExitStack

import pytest

import servers
from client import connect, request_id

pytestmark = pytest.mark.anyio

NAME = "pinned-payment"
PROCESS = f"""---
name: {NAME}
description: A vendor's invoice paid through the ERP.
steps:
  - id: collect
    agent: Collect the invoice.
  - id: write_erp
    agent: Write the payment in the ERP.
  - id: approval
    person: approver
    approve: Approve the payment.
  - id: done
    finish: paid
---
The payment is written by the ERP agent and approved by finance.
"""


async def runs_of(client) -> list[str]:
    """Every run of the process, as `client` lists them."""
    found, cursor = [], None
    while True:
        page = await client.call("list_runs", process=NAME, limit=100, **({"cursor": cursor} if cursor else {}))
        found += [run["id"] for run in page["items"]]
        cursor = page.get("nextCursor")
        if not cursor:
            return found


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def own_server(request, tmp_path_factory):
    """A server whose one process, published as version 1 with its role bound to
    `people`, is this module's."""
    folder = tmp_path_factory.mktemp("processes") / NAME
    folder.mkdir()
    (folder / "PROCESS.md").write_text(PROCESS)
    if request.param == "sqlite":
        started = servers.start_sqlite(processes=folder.parent)
    else:
        started = servers.start_postgres(processes=1, folders=[folder])
    yield started
    servers.drop(started)


@pytest.fixture
async def clients(own_server):
    async with AsyncExitStack() as stack:
        yield {name: await connect(stack, own_server.mcp_url(), token, name)
               for name, token in own_server.tokens.items()}


async def test_an_agent_or_a_person_naming_an_older_version_starts_no_run(clients, own_server):
    server = own_server
    admin = lambda *args: servers.admin(server.database_url, *args)  # noqa: E731
    org = ["--org", server.org]
    before = await clients["agent-2"].call("start_run", process=NAME, version=1, inputs={}, requestId=request_id())

    # Version 2: write_erp for agent-1 alone, approvals for finance.
    admin("create-identity", *org, "--kind", "person", "fay", "--person", "fay@example.com", "--group", "finance")
    admin("bind", *org, NAME, "approver", "finance")
    admin("bind-agents", *org, NAME, "write_erp", "--agent", "agent-1")
    assert admin("publish", *org, NAME).startswith(f"{NAME} version 2:")

    counted = await runs_of(clients["ops"])
    for who in ("agent-2", "alice"):
        error = await clients[who].error("start_run", process=NAME, version=1, inputs={}, requestId=request_id())
        assert error["code"] == "forbidden", (who, error)
        assert error["message"].startswith(f"version 1 of {NAME} is closed to new runs: version 2 is the latest"), error
        assert error["issues"] == [
            "version: 1 is closed to new runs; leave version out to start on the latest (2), or ask an admin to "
            "keep version 1 open"
        ], error
    assert await runs_of(clients["ops"]) == counted, "a refused start makes no run"

    latest = await clients["agent-2"].call("start_run", process=NAME, inputs={}, requestId=request_id())
    assert latest["run"]["version"] == 2
    kept = await clients["agent-2"].call("get_run", runId=before["run"]["id"])
    assert kept["run"]["version"] == 1, "a run started before keeps its version"
