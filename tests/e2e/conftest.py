"""Fixtures: a server per backend (shared by the tests of a session) and MCP sessions
for each of its identities."""

from __future__ import annotations

from contextlib import AsyncExitStack

import pytest

import servers
from client import connect

BACKENDS = ["sqlite", "postgres"]


def pytest_generate_tests(metafunc):
    """Every test that uses a server runs on each backend, unless its module names
    fewer in its own BACKENDS."""
    if "server" in metafunc.fixturenames:
        backends = getattr(metafunc.module, "BACKENDS", BACKENDS)
        metafunc.parametrize("server", backends, indirect=True, scope="session")


@pytest.fixture(scope="session")
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="session")
def server(request):
    started = servers.start_sqlite() if request.param == "sqlite" else servers.start_postgres()
    yield started
    servers.drop(started)


async def sessions(stack: AsyncExitStack, server: servers.Server) -> dict:
    """One MCP session per identity of `server`, against its first process."""
    found = {}
    for name, token in server.tokens.items():
        found[name] = await connect(stack, server.mcp_url(), token, name)
    return found


@pytest.fixture
async def clients(server):
    """One MCP session per identity, against the first server process."""
    async with AsyncExitStack() as stack:
        yield await sessions(stack, server)


@pytest.fixture(scope="session")
def examples_server():
    """`agentprocess dev` without --processes, in a temporary working directory that
    holds no process: it publishes the examples built into the binary."""
    started = servers.start_sqlite(processes=None)
    yield started
    servers.drop(started)


@pytest.fixture
async def example_clients(examples_server):
    """One MCP session per identity of the examples server."""
    async with AsyncExitStack() as stack:
        yield await sessions(stack, examples_server)


@pytest.fixture(scope="session")
def intruder_token(server):
    """A bearer token of an agent in another organization."""
    return servers.other_org(server)


@pytest.fixture
async def intruder(server, intruder_token):
    async with AsyncExitStack() as stack:
        yield await connect(stack, server.mcp_url(), intruder_token, "intruder")


def pytest_terminal_summary(terminalreporter):
    """The chaos cases' table, when any ran."""
    import chaos

    if chaos.ROWS:
        terminalreporter.write_sep("=", "chaos")
        terminalreporter.write_line(chaos.table(chaos.ROWS))
