"""The test IdP (tests/idp, oidc-provider) on its own: an authorization-code sign-in
with PKCE through its forms, the token exchange, and the ID token's claims before and
after the account's groups change. Needs no agentprocess binary."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

try:
    import httpx2 as httpx  # what the venv has (the MCP SDK's client), with httpx's API
except ImportError:
    import httpx
import pytest

from idp import IdpLoginError, idp_login, start_idp

REDIRECT = "http://127.0.0.1:9/cb"
ALICE = {"email": "alice@example.com", "email_verified": True, "name": "Alice", "groups": ["people"]}


@pytest.fixture(scope="module")
def idp():
    with start_idp([{"client_id": "rp", "client_secret": "s3cret", "redirect_uris": [REDIRECT]}],
                   {"alice": ALICE}) as started:
        yield started


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign_in(idp, account: str, redirect_uri: str = REDIRECT) -> dict:
    """Signs `account` in and returns the ID token's payload."""
    discovery = httpx.get(f"{idp.issuer}/.well-known/openid-configuration").json()
    assert discovery["issuer"] == idp.issuer
    verifier, state, nonce = b64url(secrets.token_bytes(32)), secrets.token_urlsafe(), secrets.token_urlsafe()
    url = discovery["authorization_endpoint"] + "?" + urlencode({
        "response_type": "code", "client_id": "rp", "redirect_uri": redirect_uri,
        "scope": "openid email groups", "state": state, "nonce": nonce,
        "code_challenge": b64url(hashlib.sha256(verifier.encode()).digest()), "code_challenge_method": "S256",
    })
    with httpx.Client(timeout=10) as browser:
        callback = idp_login(browser, url, account)
    assert callback.startswith(REDIRECT + "?")
    query = {key: values[0] for key, values in parse_qs(urlsplit(callback).query).items()}
    assert query["state"] == state and query["iss"] == idp.issuer
    tokens = httpx.post(discovery["token_endpoint"], auth=("rp", "s3cret"), data={
        "grant_type": "authorization_code", "code": query["code"], "redirect_uri": redirect_uri,
        "code_verifier": verifier,
    })
    assert tokens.status_code == 200, tokens.text
    payload = tokens.json()["id_token"].split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["nonce"] == nonce and claims["sub"] == account
    return claims


def test_a_sign_in_yields_the_accounts_claims_and_a_changed_account_its_new_ones(idp):
    claims = sign_in(idp, "alice")
    assert (claims["email"], claims["email_verified"], claims["groups"]) == ("alice@example.com", True, ["people"])
    assert "name" not in claims  # profile was not asked for

    idp.set_account("alice", {**ALICE, "groups": ["people", "ops"]})
    assert sign_in(idp, "alice")["groups"] == ["people", "ops"]


def test_an_unknown_account_or_redirect_uri_fails_with_the_idps_words(idp):
    with pytest.raises(IdpLoginError, match="unknown account"):
        sign_in(idp, "mallory")
    with pytest.raises(IdpLoginError, match="redirect_uri"):
        sign_in(idp, "alice", redirect_uri="http://127.0.0.1:9/elsewhere")
    idp.remove_account("alice")
    with pytest.raises(IdpLoginError, match="unknown account"):
        sign_in(idp, "alice")
