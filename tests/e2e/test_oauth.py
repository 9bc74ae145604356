"""Agents and people connect the standard way, with the official MCP Python SDK
knowing only the server's MCP URL: it follows the 401 to the protected resource
metadata, the authorization server metadata and the token endpoint.

- An agent client with a secret (`client_credentials`, client_secret_basic and
  client_secret_post) or with a registered key (`private_key_jwt`, RFC 7523).
- A person in an MCP client (`OAuthClientProvider`): the client registers itself
  (RFC 7591), the person signs in through their organization's real OpenID provider
  and consents on our page, and the client trades the code (PKCE S256) for tokens.

On SQLite and on PostgreSQL with two API processes: a token one process issued works
on the other."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import uuid
from contextlib import AsyncExitStack
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from signin import Browser, Site, csrf_of, signed_up, site_for

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


def test_an_agent_client_with_a_registered_key_signs_its_own_assertions(site):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(RSAAlgorithm.to_jwk(key.public_key())) | {"kid": "k1", "alg": "RS256", "use": "sig"}
    admin, _ = signed_up(site)
    assert admin.api("POST", "/agents", {"id": "bot"}).status_code == 201
    made = admin.api("POST", "/agents/bot/clients", {"name": "keyed", "jwks": {"keys": [public]}})
    assert made.status_code == 201, made.text
    assert made.json()["authentication"] == "private_key_jwt" and made.json()["secrets"] == []
    client_id = made.json()["clientId"]
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    signer = SignedJWTParameters(issuer=client_id, subject=client_id, signing_key=pem)
    storage = Memory()
    provider = PrivateKeyJWTOAuthProvider(server_url=site.last + "/mcp", storage=storage, client_id=client_id,
                                          assertion_provider=signer.create_assertion_provider(), issuer=site.last)
    names, described = asyncio.run(tools_with(site.last, provider))
    assert "claim" in names and described["ok"] is True
    assert storage.tokens.access_token.startswith("apo_") and storage.tokens.refresh_token is None

    # The same assertion twice: the second is a replay.
    assertion = asyncio.run(signer.create_assertion_provider()(site.last))
    form = {"grant_type": "client_credentials", "client_assertion": assertion,
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}
    # (Every process here has its own URL, so the audience is the one of the last.)
    assert httpx2.post(site.last + "/oauth/token", data=form).status_code == 200
    replayed = httpx2.post(site.last + "/oauth/token", data=form)
    assert replayed.status_code == 401 and "used already" in replayed.json()["error_description"], replayed.text
    # Signed by another key: refused.
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    forged = SignedJWTParameters(issuer=client_id, subject=client_id, signing_key=other)
    form["client_assertion"] = asyncio.run(forged.create_assertion_provider()(site.last))
    refused = httpx2.post(site.last + "/oauth/token", data=form)
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_client", refused.text


class PersonAtTheBrowser:
    """The redirect and callback handlers of an MCP client, played by a person: their
    browser opens the authorization URL, signs in at their organization's provider,
    and allows the client on the consent page."""

    def __init__(self, base: str, slug: str, account: str):
        self.browser = Browser(base)
        self.slug = slug
        self.account = account
        self.consent_page = ""
        self.back = ""

    def _drive(self, url: str) -> str:
        first = self.browser.client.get(url)
        assert first.status_code == 303 and first.headers["location"] == "/login", first.text
        signed_in = self.browser.sign_in(self.slug, self.account)
        assert signed_in.status_code == 303 and signed_in.headers["location"].startswith("/oauth/authorize?"), \
            signed_in.text
        page = self.browser.get(signed_in.headers["location"])
        assert page.status_code == 200, page.text
        self.consent_page = page.text
        client_id = parse_qs(urlsplit(url).query)["client_id"][0]
        answered = self.browser.post_form("/oauth/authorize", {
            "csrf": csrf_of(page.text), "client_id": client_id, "answer": "allow"})
        assert answered.status_code == 303, answered.text
        return answered.headers["location"]

    async def redirect(self, url: str) -> None:
        self.back = await asyncio.to_thread(self._drive, url)

    async def callback(self) -> AuthorizationCodeResult:
        query = {key: values[0] for key, values in parse_qs(urlsplit(self.back).query).items()}
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))


def test_a_person_in_an_mcp_client_signs_in_through_their_provider(site):
    admin, slug = signed_up(site)
    person = PersonAtTheBrowser(site.last, slug, "ann")
    storage = Memory()
    provider = OAuthClientProvider(
        server_url=site.last + "/mcp",
        client_metadata=OAuthClientMetadata(
            redirect_uris=["http://127.0.0.1:3999/callback"], client_name="Desk Agent",
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            token_endpoint_auth_method="none", scope="process:work process:start process:decide"),
        storage=storage, redirect_handler=person.redirect, callback_handler=person.callback)

    async def work() -> tuple[list[str], object]:
        async with AsyncExitStack() as stack:
            http = await stack.enter_async_context(create_mcp_http_client(auth=provider))
            streams = await stack.enter_async_context(streamable_http_client(site.last + "/mcp", http_client=http))
            session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
            await session.initialize()
            listed = await session.list_tools()
            decided = await session.call_tool("decide", {
                "requestId": "d1", "workItemId": "wi_x", "snapshot": "x", "decision": {"outcome": "approved"}})
            return [tool.name for tool in listed.tools], decided

    names, decided = asyncio.run(work())
    assert "get_work" in names
    assert "Desk Agent" in person.consent_page and "on your own" in person.consent_page
    # The client registered itself, asked for decide, and did not get it.
    assert storage.client.client_id.startswith("apd_")
    assert storage.tokens.scope == "process:work process:start"
    assert storage.tokens.refresh_token.startswith("aprt_")
    assert decided.is_error and decided.structured_content["error"]["code"] == "forbidden", decided
    # The token works on the other process too; the consent is in the audit log.
    answered = httpx2.post(site.first + "/mcp", headers={
        "Authorization": f"Bearer {storage.tokens.access_token}", "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert answered.status_code == 200, answered.text
    log = admin.api("GET", "/audit?kind=oauth.consented").json()["items"]
    ann = admin.api("GET", "/session").json()["member"]["id"]
    assert len(log) == 1 and log[0]["actor"] == ann, log
    # A refresh rotates the refresh token.
    rotated = httpx2.post(site.first + "/oauth/token", data={
        "grant_type": "refresh_token", "client_id": storage.client.client_id,
        "refresh_token": storage.tokens.refresh_token})
    assert rotated.status_code == 200 and rotated.json()["refresh_token"] != storage.tokens.refresh_token, rotated.text


def test_the_rest_upload_checks_the_scope_the_upload_tool_needs(site):
    """`POST /v1/uploads` is the `upload` tool for REST clients: a token without
    process:work stores nothing there either, and is told which scope to ask for."""
    client_id, secret = agent_client(site)

    def token(scope: str) -> str:
        issued = httpx2.post(site.last + "/oauth/token", data={
            "grant_type": "client_credentials", "client_id": client_id, "client_secret": secret, "scope": scope})
        assert issued.status_code == 200, issued.text
        return issued.json()["access_token"]

    def upload(access: str) -> httpx2.Response:
        return httpx2.post(site.first + "/v1/uploads", headers={
            "Authorization": f"Bearer {access}", "Idempotency-Key": str(uuid.uuid4())},
            files={"file": ("notes.txt", b"some notes", "text/plain")})

    refused = upload(token("process:start"))
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"]["code"] == "forbidden"
    challenge = refused.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="process:start process:work"' in challenge, challenge
    stored = upload(token("process:work"))
    assert stored.status_code == 201 and stored.json()["data"]["id"], stored.text


def test_a_tool_an_agent_is_never_granted_is_refused_by_the_tool_and_the_session_goes_on(site):
    """The SDK answers a 403 `insufficient_scope` by asking for the scope, which the
    token endpoint refuses an agent (`invalid_scope`), and the SDK then gives up the
    session. For a scope an agent's client can never hold, the tool answers
    `forbidden` itself, saying who may."""
    client_id, secret = agent_client(site)
    provider = ClientCredentialsOAuthProvider(
        server_url=site.last + "/mcp", storage=Memory(), client_id=client_id, client_secret=secret,
        token_endpoint_auth_method="client_secret_basic", issuer=site.last)

    async def work():
        async with AsyncExitStack() as stack:
            http = await stack.enter_async_context(create_mcp_http_client(auth=provider))
            streams = await stack.enter_async_context(streamable_http_client(site.last + "/mcp", http_client=http))
            session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
            await session.initialize()
            cancelled = await session.call_tool("cancel", {"requestId": "c1", "runId": "run_none", "reason": "no"})
            sent = await session.call_tool("send_event", {"requestId": "e1", "runId": "run_none", "event": "x"})
            work = await session.call_tool("get_work", {})
            return cancelled, sent, work

    cancelled, sent, work = asyncio.run(work())
    for refused in (cancelled, sent):
        assert refused.is_error and refused.structured_content["error"]["code"] == "forbidden", refused
        assert "operators" in refused.structured_content["error"]["message"], refused
    assert not work.is_error and work.structured_content["ok"] is True


def test_a_code_exchange_must_name_the_redirect_uri_its_request_named(site):
    """RFC 6749 §4.1.3: a code whose authorization request named a redirect URI is
    traded only by a request naming the same one."""
    _, slug = signed_up(site)
    callback = "http://127.0.0.1:3998/callback"
    registered = httpx2.post(site.last + "/oauth/register", json={
        "client_name": "exchange probe", "redirect_uris": [callback], "token_endpoint_auth_method": "none"})
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    verifier = "a-verifier-long-enough-for-pkce-0123456789-abcdefghij"
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urlencode({"response_type": "code", "client_id": client_id, "redirect_uri": callback, "state": "s",
                       "code_challenge": challenge, "code_challenge_method": "S256"})
    person = PersonAtTheBrowser(site.last, slug, "ann")
    back = person._drive(f"{site.last}/oauth/authorize?{query}")
    code = parse_qs(urlsplit(back).query)["code"][0]
    exchange = {"grant_type": "authorization_code", "client_id": client_id, "code": code, "code_verifier": verifier}
    refused = httpx2.post(site.last + "/oauth/token", data=exchange)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant", refused.text
    assert "redirect_uri is required" in refused.json()["error_description"]
    issued = httpx2.post(site.last + "/oauth/token", data=exchange | {"redirect_uri": callback})
    assert issued.status_code == 200, issued.text
