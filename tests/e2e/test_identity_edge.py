"""The identity edge, attacked as a stranger would: each test performs one attack of
the pre-launch review and is refused.

The production server is `agentprocess-api` as a hosted deployment runs it: an https
public URL (TLS ends at the ingress, so the tests speak http to the process with the
public URL's host and origin), open sign-up, no private issuers. A provider it can
use must look public, so the test's provider is a local TLS setup: a test CA the
server trusts through --oidc-ca-file, and the provider's host allowed by
--oidc-allow-host localhost:<port>, the operator's way to let one provider inside the
network. Every other loopback, link-local or private URL is what an attacker names."""

from __future__ import annotations

import html
import http.server
import json
import re
import secrets
import threading
from pathlib import Path

import pytest

import servers
from idp import httpx
from metadata_server import MetadataServer
from signin import csrf_of, problems_of

PUBLIC_HOST = "ap.test"
PUBLIC_URL = f"https://{PUBLIC_HOST}"


class Internal:
    """A service inside the network the server must never reach: it counts every
    connection made to it (TLS or not) and answers what a test sets, with a secret."""

    def __init__(self):
        self.secret = f"INTERNAL-SECRET-{secrets.token_hex(8)}"
        self.connections = 0
        self.answer: tuple[int, str, bytes] = (200, "text/plain", self.secret.encode())
        outer = self

        class Server(http.server.ThreadingHTTPServer):
            def verify_request(self, request, client_address):
                outer.connections += 1
                return True

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                status, kind, body = outer.answer
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = Server(("127.0.0.1", servers.free_port()), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Visitor:
    """A browser at the public URL, over http on loopback: the public host and origin
    on every request, and the cookies kept by hand (they are `Secure`, which an http
    client keeps to itself)."""

    def __init__(self, base: str):
        self.base = base
        self.cookies: dict[str, str] = {}
        self.client = httpx.Client(timeout=30, follow_redirects=False)

    def request(self, method: str, path: str, **kwargs) -> httpx.Response:
        headers = {"Host": PUBLIC_HOST, **kwargs.pop("headers", {})}
        if method != "GET":
            headers.setdefault("Origin", PUBLIC_URL)
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        answer = self.client.request(method, self.base + path, headers=headers, **kwargs)
        self.client.cookies.clear()
        for cookie in answer.headers.get_list("set-cookie"):
            name, _, value = cookie.split(";")[0].partition("=")
            if not value or "Max-Age=0" in cookie:
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = value
        return answer

    def sign_up(self, issuer: str, slug: str | None = None) -> httpx.Response:
        page = self.request("GET", "/signup")
        assert page.status_code == 200, page.text
        return self.request("POST", "/signup", data={
            "csrf": csrf_of(page.text), "name": "Probe", "slug": slug or f"probe-{secrets.token_hex(3)}",
            "issuer": issuer, "clientId": "agentprocess"})


def discovery(issuer: str, **endpoints: str) -> dict:
    return {"issuer": issuer, "authorization_endpoint": f"{issuer}/authorize", "token_endpoint": f"{issuer}/token",
            "jwks_uri": f"{issuer}/keys", "response_types_supported": ["code"],
            "subject_types_supported": ["public"], "id_token_signing_alg_values_supported": ["RS256"], **endpoints}


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    """The provider's https server (its discovery set per test) and the CA behind it."""
    server = MetadataServer(tmp_path_factory.mktemp("provider"), servers.free_port())
    server.documents["/keys"] = {"keys": []}
    server.documents["/authorize"] = {"page": "sign in here"}
    yield server
    server.stop()


@pytest.fixture(scope="module")
def internal():
    service = Internal()
    yield service
    service.stop()


@pytest.fixture(scope="module")
def production(provider):
    server = servers.start_postgres(processes=1, extra=(
        "--public-url", PUBLIC_URL, "--signup", "open",
        "--oidc-allow-host", f"localhost:{provider.port}", "--oidc-ca-file", str(provider.ca),
        "--oidc-timeout-seconds", "5"))
    yield server
    servers.drop(server)


def issuer_of(provider: MetadataServer) -> str:
    return f"https://localhost:{provider.port}"


def refused_sign_up(production, issuer: str) -> str:
    answer = Visitor(production.bases[0]).sign_up(issuer)
    assert answer.status_code == 400, answer.text
    return problems_of(answer.text)


def test_the_allowed_provider_is_usable_so_the_refusals_below_are_the_guards(production, provider):
    """The setup itself passes: a clean discovery on the allowed host gets the sign-up
    as far as the provider."""
    provider.documents["/.well-known/openid-configuration"] = discovery(issuer_of(provider))
    answer = Visitor(production.bases[0]).sign_up(issuer_of(provider))
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"].startswith(f"{issuer_of(provider)}/authorize?"), answer.headers


def test_endpoints_a_discovery_document_names_inside_the_network_are_refused_unreached(
        production, provider, internal):
    issuer = issuer_of(provider)
    provider.documents["/.well-known/openid-configuration"] = discovery(
        issuer,
        authorization_endpoint=f"https://[::ffff:127.0.0.1]:{internal.port}/authorize",
        token_endpoint="http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        jwks_uri=f"http://127.0.0.1:{internal.port}/keys",
        userinfo_endpoint=f"https://127.0.0.1:{provider.port}/userinfo",
        end_session_endpoint=f"https://[::1]:{internal.port}/logout")
    problems = refused_sign_up(production, issuer)
    for expected in ("authorization_endpoint: ::ffff:127.0.0.1 is not a public address",
                     "token_endpoint must use https", "token_endpoint: 169.254.169.254 is not a public address",
                     "jwks_uri must use https", "jwks_uri: 127.0.0.1 is not a public address",
                     "userinfo_endpoint: 127.0.0.1 is not a public address",
                     "end_session_endpoint: ::1 is not a public address"):
        assert expected in problems, problems
    assert internal.connections == 0
    assert internal.secret not in problems


def test_an_endpoint_named_by_a_name_that_resolves_inside_is_not_connected_to(production, provider, internal):
    issuer = issuer_of(provider)
    provider.documents["/.well-known/openid-configuration"] = discovery(
        issuer, authorization_endpoint=f"https://localhost:{internal.port}/authorize")
    problems = refused_sign_up(production, issuer)
    assert "could not be reached" in problems and "no public address" in problems, problems
    assert internal.connections == 0


@pytest.mark.parametrize("host", ["127.0.0.1", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]",
                                  "[64:ff9b::7f00:1]", "[2002:7f00:1::1]", "2130706433", "169.254.169.254",
                                  "[fe80::1]", "[fd00::1]", "0.0.0.0"])
def test_issuers_inside_the_network_are_refused_in_every_spelling(production, internal, host):
    port = "" if host == "169.254.169.254" else f":{internal.port}"
    problems = refused_sign_up(production, f"https://{host}{port}")
    assert "is not a public address" in problems, problems
    assert internal.connections == 0


@pytest.fixture(scope="module")
def lenient(provider):
    """A server that lets providers be private (development and tests): the guard is
    off, and still no page repeats what a provider answered."""
    server = servers.start_signup("postgres", extra=("--oidc-ca-file", str(provider.ca)))
    yield server
    servers.drop(server)


@pytest.mark.parametrize("answer,shown", [
    ((400, "text/html", "<h1>oops</h1><pre>error: invalid_redirect_uri</pre><p>{secret}</p>"),
     ["HTTP 400", "invalid_redirect_uri", "redirect URI is not registered"]),
    ((400, "application/json", '{{"error":"invalid_request","error_description":"redirect_uri is not registered",'
                               '"detail":"{secret}"}}'),
     ["HTTP 400", "invalid_request", "redirect_uri is not registered"]),
    ((500, "text/plain", "{secret}"), ["HTTP 500"]),
])
def test_a_providers_refusal_is_shown_by_status_and_oauth_error_never_by_its_body(
        lenient, provider, internal, answer, shown):
    status, kind, body = answer
    internal.answer = (status, kind, body.format(secret=internal.secret).encode())
    issuer = issuer_of(provider)
    provider.documents["/.well-known/openid-configuration"] = discovery(
        issuer, authorization_endpoint=f"http://127.0.0.1:{internal.port}/authorize")
    browser_base = lenient.bases[0]
    client = httpx.Client(timeout=30, follow_redirects=False)
    page = client.get(browser_base + "/signup")
    refused = client.post(browser_base + "/signup", headers={"Origin": browser_base}, data={
        "csrf": csrf_of(page.text), "name": "Probe", "slug": f"probe-{secrets.token_hex(3)}", "issuer": issuer,
        "clientId": "agentprocess"})
    assert refused.status_code == 400, refused.text
    problems = problems_of(refused.text)
    for expected in shown:
        assert expected in problems, problems
    assert internal.secret not in refused.text


def test_every_page_carries_the_policy_and_every_answer_hsts(production):
    visitor = Visitor(production.bases[0])
    for path in ("/login", "/signup", "/oauth/authorize?client_id=nobody&response_type=code"):
        page = visitor.request("GET", path)
        assert "text/html" in page.headers["content-type"], (path, page.status_code)
        policy = page.headers.get("content-security-policy", "")
        assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy, (path, policy)
        assert page.headers.get("x-frame-options") == "DENY", path
        assert page.headers.get("strict-transport-security") == "max-age=31536000", path
    for path in ("/healthz", "/.well-known/oauth-authorization-server"):
        assert visitor.request("GET", path).headers.get("strict-transport-security") == "max-age=31536000", path


def test_a_host_the_server_is_not_reaches_nothing_but_the_probes(production):
    base = production.bases[0]
    for path in ("/login", "/signup", "/api/v1/session", "/inbox", "/.well-known/oauth-authorization-server"):
        answer = httpx.get(base + path, headers={"Host": "rebound.attacker.test"})
        assert answer.status_code == 403 and "Host header is not allowed" in answer.text, (path, answer.text)
    for path in ("/healthz", "/readyz"):
        assert httpx.get(base + path, headers={"Host": "10.0.0.7:8080"}).status_code == 200, path


def sessions_stored(server) -> int:
    return int(servers.psql("SELECT count(*) FROM sessions", database=server.database).strip())


def test_anonymous_visits_store_no_session(production):
    before = sessions_stored(production)
    for _ in range(10):
        visitor = Visitor(production.bases[0])
        for path in ("/login", "/signup", "/inbox", "/login?org=acme&fresh=1",
                     "/oauth/authorize?client_id=nobody&response_type=code"):
            assert visitor.request("GET", path).status_code in (200, 303, 400), path
    assert sessions_stored(production) == before


@pytest.fixture(scope="module")
def limited():
    server = servers.start_postgres(processes=1, extra=(
        "--signup", "open", "--sign-ins-per-address", "3", "--token-failures-per-client", "3"))
    yield server
    servers.drop(server)


def test_sign_in_starts_are_limited_per_address(limited):
    base = limited.bases[0]
    client = httpx.Client(timeout=30, follow_redirects=False)

    def start(who: str) -> httpx.Response:
        page = client.get(base + "/login")
        return client.post(base + "/login", headers={"Origin": base}, data={"csrf": csrf_of(page.text), "who": who})

    for index in range(3):
        assert start(f"nobody-{index}").status_code == 400
    refused = start("nobody-3")
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0, refused.text
    assert "too many sign-ins" in problems_of(refused.text)


def test_token_failures_are_limited_per_client(limited):
    base = limited.bases[0]

    def guess(client_id: str) -> httpx.Response:
        return httpx.post(base + "/oauth/token", data={
            "grant_type": "client_credentials", "client_id": client_id, "client_secret": secrets.token_hex(8)})

    for _ in range(3):
        assert guess("apc_guessed").status_code == 401
    refused = guess("apc_guessed")
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0, refused.text
    assert refused.json()["error"] == "invalid_request"
    assert guess("apc_another").status_code == 401, "another client is counted apart"


def test_what_a_sign_up_keeps_until_the_callback_is_bounded(production, provider):
    visitor = Visitor(production.bases[0])
    page = visitor.request("GET", "/signup")
    form = {"csrf": csrf_of(page.text), "name": "Probe", "slug": f"probe-{secrets.token_hex(3)}",
            "issuer": issuer_of(provider), "clientId": "c" * 1025, "clientSecret": "s" * 1025}
    refused = visitor.request("POST", "/signup", data=form)
    assert refused.status_code == 400, refused.text
    problems = problems_of(refused.text)
    assert "clientId: give the client id" in problems and "clientSecret: at most 1024 characters" in problems
    huge = visitor.request("POST", "/signup", data=form | {"clientSecret": "s" * 20_000})
    assert huge.status_code == 413, huge.status_code
