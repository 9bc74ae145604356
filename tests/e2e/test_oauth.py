"""Agents connect the standard way: the official MCP Python SDK, knowing only the
server's MCP URL and an agent client's credentials, follows the 401 to the protected
resource metadata, the authorization server metadata and the token endpoint
(`client_credentials`, client_secret_basic and client_secret_post), and works the
agent loop with the token it got. On SQLite and on PostgreSQL with two API processes:
the token one process issued works on the other."""

from __future__ import annotations

import asyncio
import uuid
from contextlib import AsyncExitStack

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from signin import Site, signed_up, site_for

ACCOUNTS = {"ann": {"email": "ann@acme.test", "email_verified": True}}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def site(request):
    with site_for(request.param, ACCOUNTS) as started:
        yield started


class Memory:
    """The SDK's token storage, in memory."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


def agent_client(site: Site) -> tuple[str, str]:
    """An organization with an agent `bot` and an OAuth client of it: (id, secret)."""
    admin, _ = signed_up(site)
    assert admin.api("POST", "/agents", {"id": "bot"}).status_code == 201
    made = admin.api("POST", "/agents/bot/clients", {"name": "e2e"})
    assert made.status_code == 201, made.text
    body = made.json()
    return body["clientId"], body["secrets"][0]["secret"]


async def tools_with(base: str, provider) -> tuple[list[str], dict]:
    """`tools/list` and `describe` over a session authenticated by `provider`."""
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(create_mcp_http_client(auth=provider))
        streams = await stack.enter_async_context(streamable_http_client(base + "/mcp", http_client=http))
        session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
        await session.initialize()
        listed = await session.list_tools()
        described = await session.call_tool("describe", {})
        work = await session.call_tool("get_work", {})
        assert not work.is_error and work.structured_content["ok"] is True, work
        return [tool.name for tool in listed.tools], described.structured_content


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_an_agent_client_discovers_the_server_and_gets_its_own_token(site, method):
    client_id, secret = agent_client(site)
    storage = Memory()
    provider = ClientCredentialsOAuthProvider(
        server_url=site.last + "/mcp", storage=storage, client_id=client_id, client_secret=secret,
        token_endpoint_auth_method=method, issuer=site.last)
    names, described = asyncio.run(tools_with(site.last, provider))
    assert "claim" in names and described["ok"] is True
    token = storage.tokens.access_token
    assert token.startswith("apo_") and storage.tokens.scope == "process:work process:start"
    # Issued by one process, good on every other: they share the database.
    answered = httpx2.post(site.first + "/mcp", headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert answered.status_code == 200, answered.text


def test_wrong_credentials_get_no_token_and_the_401_says_where_to_go(site):
    client_id, _ = agent_client(site)
    unauthenticated = httpx2.post(site.last + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    challenge = unauthenticated.headers["www-authenticate"]
    assert unauthenticated.status_code == 401
    assert f'resource_metadata="{site.last}/.well-known/oauth-protected-resource/mcp"' in challenge
    metadata = httpx2.get(site.last + "/.well-known/oauth-protected-resource/mcp").json()
    assert metadata["resource"] == site.last + "/mcp" and metadata["authorization_servers"] == [site.last]
    server = httpx2.get(site.last + "/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == site.last
    refused = httpx2.post(server["token_endpoint"], data={"grant_type": "client_credentials"},
                          auth=(client_id, "apcs_" + uuid.uuid4().hex))
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_client", refused.text
