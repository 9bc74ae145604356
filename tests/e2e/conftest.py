"""Fixtures: a server per backend (shared by the tests of a session) and MCP sessions
for each of its identities."""

from __future__ import annotations

from contextlib import AsyncExitStack

import pytest

import servers
from client import connect

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="session")
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="session", params=BACKENDS)
def server(request):
    started = servers.start_sqlite() if request.param == "sqlite" else servers.start_postgres()
    yield started
    servers.drop(started)


@pytest.fixture
async def clients(server):
    """One MCP session per identity, against the first server process."""
    async with AsyncExitStack() as stack:
        found = {}
        for name, token in server.tokens.items():
            found[name] = await connect(stack, server.mcp_url(), token, name)
        yield found
