"""Sign-up and sign-in through a forged OpenID provider (forged_idp.py) whose ID tokens
are wrong in ways a real provider's never are: every such token is refused, and
refused before anything is created or anyone provisioned. On SQLite and on PostgreSQL
with two API processes (sign-ins on the first, REST calls on the last)."""

from __future__ import annotations

import json
import secrets
from urllib.parse import urlsplit

import pytest

import servers
from forged_idp import ForgedIdp
from idp import httpx
from signin import Browser, csrf_of, problems_of

# Each bad mode, and the words of the server's refusal (crates/auth/src/oidc.rs
# verification_reason, signin.rs verified_email).
REFUSALS = {
    "wrong_audience": "it was issued to another client (audience)",
    "expired": "it has expired",
    "bad_signature": "its signature is not valid",
    "unknown_kid": "it is signed by a key the provider does not publish",
    "other_issuer": "it was issued by another issuer",
    "wrong_nonce": "its nonce is not this sign-in's",
    "no_nonce": "its nonce is not this sign-in's",
    "unverified": "is not verified at the identity provider",
    "no_email": "the identity provider sent no email claim",
    "alg_none": "its signature is not valid (No signature found)",
    "hs256_with_public_key": "its signature is not valid (Disallowed signature algorithm",
}


@pytest.fixture(scope="module")
def idp():
    with ForgedIdp() as forged:
        yield forged


@pytest.fixture(autouse=True)
def honest(idp):
    yield
    idp.reset()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def site(request, idp):
    server = servers.start_signup(request.param)
    yield server
    servers.drop(server)


def through_idp(browser: Browser, answer: httpx.Response) -> httpx.Response:
    """Takes the server's redirect to the forged provider, which answers at once (it
    has no login page), and brings its answer back; the server's answer to that."""
    assert answer.status_code == 303, answer.text
    at_idp = browser.client.get(answer.headers["location"])
    assert at_idp.status_code == 303, at_idp.text
    callback = at_idp.headers["location"]
    assert urlsplit(callback).path == "/auth/callback", callback
    return browser.client.get(callback)


def sign_up(site: servers.Server, idp: ForgedIdp, slug: str) -> tuple[Browser, httpx.Response]:
    browser = Browser(site.base)
    form = {"csrf": csrf_of(browser.get("/signup").text), "name": f"Org {slug}", "slug": slug,
            "issuer": idp.issuer, "clientId": "agentprocess", "clientSecret": "s3cret"}
    return browser, through_idp(browser, browser.post_form("/signup", form))


def sign_in(site: servers.Server, slug: str) -> httpx.Response:
    browser = Browser(site.base)
    form = {"csrf": csrf_of(browser.get("/login").text), "who": slug}
    return through_idp(browser, browser.post_form("/login", form))


def signed_up(site: servers.Server, idp: ForgedIdp) -> tuple[Browser, str]:
    """A new organization whose admin is the forged provider's default account; the
    admin's browser talks to the server's last process."""
    slug = f"forged-{secrets.token_hex(3)}"
    browser, answer = sign_up(site, idp, slug)
    assert answer.status_code == 303 and answer.headers["location"] == "/inbox", answer.text
    return browser.at(site.bases[-1]), slug


def failed_sign_ins(admin: Browser) -> list:
    return admin.api("GET", "/audit?kind=signin.failed").json()["items"]


def test_good_tokens_sign_up_and_sign_in(site, idp):
    admin, slug = signed_up(site, idp)
    member = admin.api("GET", "/session").json()["member"]
    assert member["role"] == "admin" and member["email"] == idp.email, member
    assert sign_in(site, slug).status_code == 303


@pytest.mark.parametrize("mode", REFUSALS)
def test_a_wrong_token_signs_nobody_in(site, idp, mode):
    admin, slug = signed_up(site, idp)
    # Someone of an allowed domain: were the token taken, they would be provisioned.
    assert admin.api("POST", "/organization/domains", {"domain": f"{slug}.test"}).status_code == 201
    idp.subject, idp.email, idp.mode = "intruder", f"intruder@{slug}.test", mode
    before = len(failed_sign_ins(admin))
    refused = sign_in(site, slug)
    assert refused.status_code == 403 and REFUSALS[mode] in problems_of(refused.text), refused.text
    members = [member["email"] for member in admin.api("GET", "/members").json()["items"]]
    assert members == ["mallory@forged.test"]
    failures = failed_sign_ins(admin)
    assert len(failures) == before + 1 and REFUSALS[mode] in json.dumps(failures), failures


@pytest.mark.parametrize("mode", REFUSALS)
def test_a_wrong_token_signs_no_organization_up(site, idp, mode):
    idp.mode = mode
    slug = f"forged-{secrets.token_hex(3)}"
    _, refused = sign_up(site, idp, slug)
    assert refused.status_code == 403 and REFUSALS[mode] in problems_of(refused.text), refused.text
    page = Browser(site.base).start_sign_in(slug)
    assert "there is no organization" in problems_of(page.text), page.text


def test_rotated_keys_are_fetched_once(site, idp):
    _, slug = signed_up(site, idp)
    assert sign_in(site, slug).status_code == 303
    fetched = idp.jwks_fetches
    idp.rotate()
    assert sign_in(site, slug).status_code == 303
    assert idp.jwks_fetches == fetched + 1, "one fetch of the new keys on the unknown kid"
    assert sign_in(site, slug).status_code == 303
    assert idp.jwks_fetches == fetched + 1, "the new keys are kept"


@pytest.mark.parametrize("mode,reason", [
    ("stale_auth_time", "the provider did not sign the person in again"),
    ("no_auth_time", "the provider did not say when the person signed in"),
])
def test_a_fresh_sign_in_needs_a_fresh_auth_time(site, idp, mode, reason):
    """Before a decision that needs a recent sign-in the server asks for max_age=0; an ID
    token whose auth_time is older than that request, or absent, signs nobody in."""
    _, slug = signed_up(site, idp)
    browser = Browser(site.base)
    fresh = through_idp(browser, browser.start_sign_in(slug, fresh=True))
    assert fresh.status_code == 303, fresh.text
    idp.mode = mode
    browser = Browser(site.base)
    refused = through_idp(browser, browser.start_sign_in(slug, fresh=True))
    assert refused.status_code == 403 and reason in problems_of(refused.text), refused.text
    # A sign-in that was not asked to be fresh does not look at auth_time.
    assert sign_in(site, slug).status_code == 303
