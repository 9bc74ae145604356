"""Organizations sign up and people sign in through real OpenID providers (two
oidc-provider instances, one per organization), driven over HTTP with a cookie jar
through the providers' own login and consent forms; then the REST admin surface on
the session and on API tokens. On SQLite (`agentprocess dev`) and on PostgreSQL with
two API processes, where every sign-in starts on one process and the REST calls go to
the other."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

import servers
from dns import Dns
from signin import Browser, Site, bearer, csrf_of, idp_for, new_slug, problems_of, signed_up, site_for

BETA = {"zed": {"email": "zed@beta.test", "email_verified": True},
        "ann-at-beta": {"email": "ann@acme.test", "email_verified": True}}
ACCOUNTS = {
    "ann": {"email": "ann@acme.test", "email_verified": True, "name": "Ann Admin", "groups": []},
    "bob": {"email": "bob@acme.test", "email_verified": True, "name": "Bob", "groups": ["finance"]},
    "cat": {"email": "cat@acme.test", "email_verified": True, "groups": []},
    "dan": {"email": "dan@acme.test", "email_verified": False},
    "eve": {"email": "eve@elsewhere.test", "email_verified": True},
    "nomail": {"name": "No Mail"},
}


@pytest.fixture(scope="module")
def dns():
    server = Dns()
    yield server
    server.stop()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def site(request, dns):
    with site_for(request.param, ACCOUNTS, BETA, extra=("--dns-nameserver", dns.address)) as started:
        yield started


def test_sign_up_makes_the_first_admin_and_sessions_serve_every_process(site):
    browser, slug = signed_up(site)
    account = browser.get("/account")
    assert account.status_code == 200 and "Ann Admin" not in account.text and "ann@acme.test" in account.text
    me = browser.api("GET", "/session").json()
    assert me["slug"] == slug and me["via"] == "session"
    assert me["member"]["role"] == "admin" and me["member"]["email"] == "ann@acme.test"
    organization = browser.api("GET", "/organization")
    assert organization.status_code == 200
    body = organization.json()
    assert body["signIn"] == {"issuer": site.acme.issuer, "clientId": "agentprocess", "hasClientSecret": True,
                              "redirectUri": f"{site.first}/auth/callback" if site.server.backend == "sqlite"
                              else body["signIn"]["redirectUri"]}
    assert "s3cret" not in organization.text
    assert organization.headers["etag"] == f'"{body["revision"]}"'
    kinds = [entry["kind"] for entry in browser.api("GET", "/audit").json()["items"]]
    assert kinds == ["organization.created", "signin.succeeded"]


def test_the_client_secret_is_kept_sealed(site):
    _, slug = signed_up(site)
    if site.server.backend == "postgres":
        stored = servers.psql(
            f"SELECT client_secret FROM identity_providers p JOIN organizations o ON o.id = p.org_id "
            f"WHERE o.slug = '{slug}'", site.server.database)
        assert stored.startswith("v1.") and "s3cret" not in stored


def test_a_public_client_signs_up_with_pkce_alone(site):
    browser = Browser(site.first)
    slug = new_slug()
    answer = browser.signup(site.acme, "ann", name="Public", slug=slug, issuer=site.acme.issuer, clientId="public")
    assert answer.status_code == 303, answer.text
    assert browser.at(site.last).api("GET", "/organization").json()["signIn"]["hasClientSecret"] is False


def sign_up_refusal(site: Site, **form) -> str:
    browser = Browser(site.first)
    answer = browser.signup(site.acme, "ann", **form)
    assert answer.status_code in (400, 403), answer.text
    return problems_of(answer.text) or answer.text


def nothing_created(site: Site, slug: str) -> None:
    page = Browser(site.first).start_sign_in(slug)
    assert "there is no organization" in problems_of(page.text), page.text


def test_sign_up_refusals_name_every_problem_and_create_nothing(site):
    problems = sign_up_refusal(site, name="", slug="No Good", issuer="ftp://x", clientId="")
    for expected in ("name:", "slug:", "issuer:", "clientId:"):
        assert expected in problems, problems

    slug = new_slug()
    unreachable = sign_up_refusal(site, name="X", slug=slug, issuer=f"http://127.0.0.1:{servers.free_port()}",
                                  clientId="agentprocess")
    assert "discovery" in unreachable and "could not be reached" in unreachable, unreachable
    nothing_created(site, slug)

    unregistered = sign_up_refusal(site, name="X", slug=slug, issuer=site.acme.issuer, clientId="elsewhere",
                                   clientSecret="x")
    assert "redirect_uri" in unregistered, unregistered
    nothing_created(site, slug)

    unknown_client = sign_up_refusal(site, name="X", slug=slug, issuer=site.acme.issuer, clientId="nobody")
    assert "refused the sign-in request" in unknown_client, unknown_client
    nothing_created(site, slug)

    _, taken = signed_up(site)
    assert f'"{taken}" is taken' in sign_up_refusal(site, name="X", slug=taken, **site.client_of(site.acme))


def test_sign_up_through_the_provider_fails_cleanly(site):
    for account, expected in [("dan", "is not verified"), ("nomail", "no email claim")]:
        browser = Browser(site.first)
        slug = new_slug()
        answer = browser.signup(site.acme, account, name="X", slug=slug, **site.client_of(site.acme))
        assert answer.status_code == 403 and expected in problems_of(answer.text), answer.text
        nothing_created(site, slug)


def tampered(url: str, **changes) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query)) | changes
    return urlunsplit(parts._replace(query=urlencode(query)))


def test_wrong_state_replayed_callbacks_and_a_foreign_issuer_are_refused(site):
    browser = Browser(site.first)
    slug = new_slug()
    page = browser.get("/signup")
    answer = browser.post_form("/signup", {"csrf": csrf_of(page.text), "name": "X", "slug": slug,
                                           **site.client_of(site.acme)})
    callback = browser.callback_url(answer, "ann")
    wrong_state = browser.client.get(tampered(callback, state="forged"))
    assert wrong_state.status_code == 403 and "state does not match" in problems_of(wrong_state.text)
    # The sign-in in progress was used up by the wrong answer: the right one is refused too.
    again = browser.client.get(callback)
    assert again.status_code == 403 and "no sign-in is under way" in problems_of(again.text)
    nothing_created(site, slug)

    browser = Browser(site.first)
    answer = browser.post_form("/signup", {"csrf": csrf_of(browser.get("/signup").text), "name": "X", "slug": slug,
                                           **site.client_of(site.acme)})
    callback = browser.callback_url(answer, "ann")
    foreign = browser.client.get(tampered(callback, iss=site.beta.issuer))
    assert foreign.status_code == 403 and "not from" in problems_of(foreign.text), foreign.text

    browser = Browser(site.first)
    answer = browser.post_form("/signup", {"csrf": csrf_of(browser.get("/signup").text), "name": "X", "slug": slug,
                                           **site.client_of(site.acme)})
    callback = browser.callback_url(answer, "ann")
    assert browser.client.get(callback).status_code == 303
    # A callback replayed in another browser (the code, state and nonce of a finished sign-in).
    replayed = Browser(site.first).client.get(callback)
    assert replayed.status_code == 403 and "no sign-in is under way" in problems_of(replayed.text)


def test_invited_people_get_in_uninvited_ones_do_not_and_allowed_domains_provision(site):
    admin, slug = signed_up(site)
    invited = admin.api("POST", "/members", {"email": "Bob@Acme.test", "role": "member"})
    assert invited.status_code == 201, invited.text
    assert invited.json()["email"] == "bob@acme.test" and invited.json()["active"] is True

    bob = Browser(site.first)
    assert bob.sign_in(slug, "bob").status_code == 303
    assert bob.at(site.last).api("GET", "/session").json()["member"]["role"] == "member"

    cat = Browser(site.first)
    refused = cat.sign_in(slug, "cat")
    assert refused.status_code == 403 and "is not a member" in problems_of(refused.text)
    assert admin.api("POST", "/organization/domains", {"domain": "acme.test"}).status_code == 201
    assert cat.sign_in(slug, "cat").status_code == 303, "provisioned as a member of an allowed domain"
    assert cat.at(site.last).api("GET", "/session").json()["member"]["role"] == "member"

    eve = Browser(site.first).sign_in(slug, "eve")
    assert eve.status_code == 403 and "eve@elsewhere.test is not a member" in problems_of(eve.text)
    dan = Browser(site.first).sign_in(slug, "dan")
    assert dan.status_code == 403 and "not verified" in problems_of(dan.text)

    log = admin.api("GET", "/audit?kind=signin.failed").json()["items"]
    reasons = json.dumps([entry["detail"] for entry in log])
    assert "eve@elsewhere.test" in reasons and "dan@acme.test" in reasons and "cat@acme.test" in reasons
    assert all(entry["address"] == "127.0.0.1" for entry in log)


def test_a_deactivated_person_is_signed_out_and_cannot_sign_in(site):
    admin, slug = signed_up(site)
    bob_id = admin.api("POST", "/members", {"email": "bob@acme.test", "role": "operator"}).json()["id"]
    bob = Browser(site.first)
    assert bob.sign_in(slug, "bob").status_code == 303
    assert bob.at(site.last).api("GET", "/session").status_code == 200

    changed = admin.api("PATCH", f"/members/{bob_id}", {"active": False})
    assert changed.status_code == 200 and changed.json()["active"] is False
    assert bob.at(site.last).api("GET", "/session").status_code == 401
    assert bob.api("GET", "/session").status_code == 401
    refused = Browser(site.first).sign_in(slug, "bob")
    assert refused.status_code == 403 and "deactivated" in problems_of(refused.text)


def test_the_last_admin_stays(site):
    admin, _ = signed_up(site)
    me = admin.api("GET", "/session").json()["member"]["id"]
    for change in ({"role": "member"}, {"active": False}):
        refused = admin.api("PATCH", f"/members/{me}", change)
        assert refused.status_code == 409 and "last admin" in refused.json()["message"], refused.text


def test_group_claims_set_memberships_at_every_sign_in(site):
    admin, slug = signed_up(site)
    for group in ("finance", "legal"):
        assert admin.api("POST", "/groups", {"id": group}).status_code == 201
    assert admin.api("PATCH", "/organization", {"groupsClaim": "groups"}).status_code == 200
    assert admin.api("POST", "/organization/domains", {"domain": "acme.test"}).status_code == 201
    site.acme.set_account("bob", ACCOUNTS["bob"] | {"groups": ["finance", "unknown-group"]})
    bob = Browser(site.first)
    assert bob.sign_in(slug, "bob").status_code == 303
    assert bob.api("GET", "/session").json()["member"]["groups"] == ["finance"]
    site.acme.set_account("bob", ACCOUNTS["bob"] | {"groups": ["legal"]})
    assert bob.sign_in(slug, "bob").status_code == 303
    assert bob.api("GET", "/session").json()["member"]["groups"] == ["legal"]
    # Entra names groups by object id: a group's claim values map those to it.
    entra_id = "4f2c1d7e-0000-4a6b-9c3d-1e2f3a4b5c6d"
    mapped = admin.api("PUT", "/groups/finance/claim-values", {"values": [entra_id]})
    assert mapped.status_code == 200 and mapped.json()["claimValues"] == [entra_id], mapped.text
    site.acme.set_account("bob", ACCOUNTS["bob"] | {"groups": [entra_id]})
    assert bob.sign_in(slug, "bob").status_code == 303
    assert bob.api("GET", "/session").json()["member"]["groups"] == ["finance"]
    site.acme.set_account("bob", ACCOUNTS["bob"])


def test_csrf_a_cross_origin_or_tokenless_change_is_refused(site):
    admin, _ = signed_up(site)
    evil = admin.api("POST", "/members", {"email": "x@acme.test", "role": "member"},
                     headers={"Origin": "http://evil.test"})
    assert evil.status_code == 403 and "Origin" in evil.json()["message"]
    tokenless = admin.client.post(admin.base + "/api/v1/members", json={"email": "x@acme.test", "role": "member"},
                                  headers={"Origin": admin.base})
    assert tokenless.status_code == 403 and "CSRF" in tokenless.json()["message"]
    members = [member["email"] for member in admin.api("GET", "/members").json()["items"]]
    assert "x@acme.test" not in members


def test_api_tokens_are_shown_once_scoped_and_revocable(site):
    admin, slug = signed_up(site)
    made = admin.api("POST", "/tokens", {"name": "ci", "scope": "read", "expiresInDays": 7})
    assert made.status_code == 201, made.text
    token = made.json()["token"]
    assert token.startswith("apr_")
    listed = admin.api("GET", "/tokens").json()["items"]
    assert [entry["name"] for entry in listed] == ["ci"] and "token" not in listed[0]
    assert bearer(site.last, token, "GET", "/organization").json()["slug"] == slug
    denied = bearer(site.last, token, "PATCH", "/organization", {"name": "Renamed"})
    assert denied.status_code == 403 and "only read" in denied.json()["message"]
    assert bearer(site.last, token, "POST", "/tokens", {"name": "more", "scope": "read"}).status_code == 403
    assert bearer(site.last, token[:-1] + ("A" if token[-1] != "A" else "B"), "GET", "/organization").status_code == 401
    assert admin.api("DELETE", f"/tokens/{made.json()['id']}").status_code == 204
    revoked = bearer(site.last, token, "GET", "/organization")
    assert revoked.status_code == 401 and revoked.headers["www-authenticate"].startswith("Bearer")

    admin_token = admin.api("POST", "/tokens", {"name": "automation", "scope": "admin"}).json()["token"]
    renamed = bearer(site.last, admin_token, "PATCH", "/organization", {"name": "Renamed"})
    assert renamed.status_code == 200 and renamed.json()["name"] == "Renamed"
    assert bearer(site.last, admin_token, "GET", "/session").json()["via"] == "token"
    kinds = {entry["kind"] for entry in admin.api("GET", "/audit").json()["items"]}
    assert {"token.created", "token.revoked", "organization.changed"} <= kinds


def test_two_admins_cannot_overwrite_each_other_unseen(site):
    admin, _ = signed_up(site)
    etag = admin.api("GET", "/organization").headers["etag"]
    assert admin.api("PATCH", "/organization", {"name": "First"}, headers={"If-Match": etag}).status_code == 200
    stale = admin.api("PATCH", "/organization", {"name": "Second"}, headers={"If-Match": etag})
    assert stale.status_code == 409 and "changed since revision" in stale.json()["message"]
    assert admin.api("GET", "/organization").json()["name"] == "First"


def test_organizations_see_nothing_of_each_other(site):
    acme, _ = signed_up(site)
    beta, _ = signed_up(site, site.beta, "zed")
    ann = acme.api("GET", "/session").json()["member"]["id"]
    assert beta.api("GET", f"/members/{ann}").status_code == 404
    assert beta.api("PATCH", f"/members/{ann}", {"role": "member"}).status_code == 404
    token = acme.api("POST", "/tokens", {"name": "t", "scope": "read"}).json()["id"]
    assert beta.api("DELETE", f"/tokens/{token}").status_code == 404
    assert [entry["kind"] for entry in beta.api("GET", "/audit").json()["items"]] == [
        "organization.created", "signin.succeeded"]


def test_members_cannot_administer(site):
    admin, slug = signed_up(site)
    admin.api("POST", "/members", {"email": "bob@acme.test", "role": "member"})
    bob = Browser(site.first)
    assert bob.sign_in(slug, "bob").status_code == 303
    bob = bob.at(site.last)
    for method, path, body in [("PATCH", "/organization", {"name": "x"}), ("GET", "/members", None),
                               ("POST", "/members", {"email": "q@acme.test", "role": "admin"}),
                               ("GET", "/audit", None), ("POST", "/groups", {"id": "g"}),
                               ("POST", "/tokens", {"name": "t", "scope": "admin"})]:
        answer = bob.api(method, path, body)
        assert answer.status_code in (400, 403), (method, path, answer.text)
        assert answer.json()["code"] in ("forbidden", "invalid")
    assert bob.api("POST", "/tokens", {"name": "mine", "scope": "read"}).status_code == 201


def test_audit_export_is_json_lines(site):
    admin, _ = signed_up(site)
    admin.api("POST", "/members", {"email": "bob@acme.test", "role": "member"})
    export = admin.api("GET", "/audit/export")
    assert export.headers["content-type"] == "application/x-ndjson"
    entries = [json.loads(line) for line in export.text.splitlines()]
    assert [entry["kind"] for entry in entries] == ["organization.created", "signin.succeeded", "member.invited"]
    assert admin.api("GET", "/audit?since=yesterday").status_code == 400


def test_the_session_id_is_replaced_at_sign_in(site):
    browser = Browser(site.first)
    slug = new_slug()
    page = browser.get("/signup")
    assert browser.client.cookies.get("agentprocess-session") is None, "an anonymous page stores no session"
    answer = browser.post_form("/signup", {"csrf": csrf_of(page.text), "name": "X", "slug": slug,
                                           **site.client_of(site.acme)})
    # The form is sent: the sign-in under way is kept in a session until the callback.
    before = browser.client.cookies.get("agentprocess-session")
    assert before
    assert browser.finish_at_idp(answer, "ann").status_code == 303
    after = browser.client.cookies.get("agentprocess-session")
    assert after and after != before
    # The id planted before sign-in opens nothing.
    planted = Browser(site.first)
    planted.client.cookies.set("agentprocess-session", before)
    assert planted.api("GET", "/session").status_code == 401


def test_sign_out_ends_the_session(site):
    admin, _ = signed_up(site)
    page = admin.get("/account")
    assert admin.post_form("/logout", {"csrf": csrf_of(page.text)}).status_code == 303
    assert admin.api("GET", "/session").status_code == 401


def test_an_unreachable_provider_is_reported_and_its_return_works(site):
    _, slug = signed_up(site, site.beta, "zed")
    port = site.beta.port
    site.beta.stop()
    try:
        down = Browser(site.first).sign_in(slug, "zed")
        assert down.status_code == 400 and "cannot be used right now" in problems_of(down.text), down.text
    finally:
        # Back on the same port, with new signing keys: the cached keys miss, and the
        # server fetches the provider's keys again.
        site.beta = idp_for(site.server.bases, BETA, port=port)
    assert Browser(site.first).sign_in(slug, "zed").status_code == 303


def test_a_new_provider_keeps_people_their_accounts(site):
    admin, slug = signed_up(site)
    me = admin.api("GET", "/session").json()["member"]["id"]
    unreachable = admin.api("PUT", "/organization/sign-in",
                            {"issuer": f"http://127.0.0.1:{servers.free_port()}", "clientId": "agentprocess"})
    assert unreachable.status_code == 400 and "discovery" in unreachable.json()["issues"][0]
    assert admin.api("GET", "/organization").json()["signIn"]["issuer"] == site.acme.issuer
    changed = admin.api("PUT", "/organization/sign-in", site.client_of(site.beta))
    assert changed.status_code == 200 and changed.json()["signIn"]["issuer"] == site.beta.issuer, changed.text
    again = Browser(site.first)
    assert again.sign_in(slug, "ann-at-beta").status_code == 303
    assert again.api("GET", "/session").json()["member"] == admin.api("GET", "/session").json()["member"]
    assert again.api("GET", "/session").json()["member"]["id"] == me
    assert "organization.sign_in_changed" in [entry["kind"] for entry in admin.api("GET", "/audit").json()["items"]]


def test_a_domain_verified_over_dns_routes_sign_in_by_email_and_has_one_owner(site, dns):
    admin, slug = signed_up(site)
    dns.serve({})
    domain = f"{slug}.test"
    added = admin.api("POST", "/organization/domains", {"domain": domain}).json()
    record = added["txtRecord"]
    assert record["name"] == f"_agentprocess.{domain}" and added["verified"] is False
    early = admin.api("POST", f"/organization/domains/{domain}/verify")
    assert early.status_code == 422 and "no TXT record" in early.json()["issues"][0], early.text
    nobody = Browser(site.first).sign_in(f"bob@{domain}", "bob")
    assert nobody.status_code == 400 and "no organization signs in people of" in problems_of(nobody.text)

    dns.serve({record["name"]: ["something else"]})
    wrong = admin.api("POST", f"/organization/domains/{domain}/verify")
    assert wrong.status_code == 422 and "no TXT record holds the token" in wrong.json()["issues"][0]
    dns.serve({record["name"]: [record["value"]]})
    verified = admin.api("POST", f"/organization/domains/{domain}/verify")
    assert verified.status_code == 200 and verified.json()["verified"] is True, verified.text

    # Sign-in by email now finds the organization; the person still needs to be let in.
    site.acme.set_account("bob", ACCOUNTS["bob"] | {"email": f"bob@{domain}"})
    try:
        bob = Browser(site.first)
        assert bob.sign_in(f"Bob@{domain}", "bob").status_code == 303, "provisioned: the domain is allowed"
        assert bob.api("GET", "/session").json()["slug"] == slug
    finally:
        site.acme.set_account("bob", ACCOUNTS["bob"])

    # Another organization cannot take it while this one holds it, even with its own record.
    other, _ = signed_up(site, site.beta, "zed")
    theirs = other.api("POST", "/organization/domains", {"domain": domain}).json()
    dns.serve({record["name"]: [record["value"], theirs["txtRecord"]["value"]]})
    taken = other.api("POST", f"/organization/domains/{domain}/verify")
    assert taken.status_code == 409 and "verified by another organization" in taken.json()["message"]
    assert "domain.verified" in [entry["kind"] for entry in admin.api("GET", "/audit").json()["items"]]


def test_session_cookies_open_nothing_on_mcp(site):
    admin, _ = signed_up(site)
    answer = admin.client.post(site.last + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                               headers={"Accept": "application/json, text/event-stream"})
    assert answer.status_code == 401


def test_the_development_sign_in_is_only_where_asked(site):
    page = Browser(site.first).get("/dev/sign-in")
    if site.server.backend == "sqlite":
        assert page.status_code == 200 and "Development sign-in" in page.text
        browser = Browser(site.first)
        signed = browser.post_form("/dev/sign-in", {"csrf": csrf_of(page.text), "identity": "alice"})
        assert signed.status_code == 403, "the CSRF token belongs to another browser's session"
        page = browser.get("/dev/sign-in")
        signed = browser.post_form("/dev/sign-in", {"csrf": csrf_of(page.text), "identity": "alice"})
        assert signed.status_code == 303
        assert browser.api("GET", "/session").json()["member"]["email"] == "alice@example.com"
    else:
        assert page.status_code == 404


def test_the_dev_server_signs_its_people_in_through_the_developers_own_provider():
    port = servers.free_port()
    idp = idp_for([f"http://127.0.0.1:{port}"], {"dev": {"email": "me@mycorp.test", "email_verified": True}})
    server = servers.start_sqlite(extra=("--oidc-issuer", idp.issuer, "--oidc-client-id", "public",
                                         "--oidc-domain", "mycorp.test"), port=port)
    try:
        browser = Browser(server.bases[0])
        answer = browser.start_sign_in("dev")
        assert answer.status_code == 303, answer.text
        assert browser.finish_at_idp(answer, "dev").status_code == 303
        me = browser.api("GET", "/session").json()
        assert (me["slug"], me["member"]["email"], me["member"]["role"]) == ("dev", "me@mycorp.test", "member")
    finally:
        idp.stop()
        servers.drop(server)


def test_a_link_or_a_forged_form_never_swaps_a_signed_in_session(site):
    """Login CSRF: an attacker's link (or an auto-submitting form on their site) aimed
    at /login must not sign the admin of one organization in to another."""
    admin, slug = signed_up(site)
    _, theirs = signed_up(site, site.beta, "zed")
    mine = admin.api("GET", "/session").json()
    # A link only shows the sign-in page: nothing starts, nothing leaves for a provider.
    linked = admin.get(f"/login?org={theirs}")
    assert linked.status_code == 200 and "location" not in linked.headers, linked.headers
    assert f'value="{theirs}"' in linked.text
    # A form posted from elsewhere carries no token of this server's, nor its Origin.
    forged = admin.client.post(admin.base + "/login", data={"who": theirs},
                               headers={"Origin": "https://attacker.example"})
    assert forged.status_code == 400 and "Origin" in problems_of(forged.text), forged.text
    forged = admin.post_form("/login", {"who": theirs, "csrf": "guessed"})
    assert forged.status_code == 400 and "CSRF" in problems_of(forged.text), forged.text
    # Even the page's own button asks first, naming the session it would end.
    pressed = admin.start_sign_in(theirs)
    # A question before going on, not an error: the notice box, with the page's form below it.
    notice = re.search(r'(?s)<div class="notice" role="alert">(.*?)</div>', pressed.text)
    assert pressed.status_code == 409 and notice and "You are signed in to" in notice[1], pressed.text
    assert problems_of(pressed.text) == "", pressed.text
    assert admin.api("GET", "/session").json() == mine
    # Confirmed, the person goes on to the other organization's provider.
    confirmed = admin.start_sign_in(theirs, switch=True)
    assert confirmed.status_code == 303 and confirmed.headers["location"].startswith(site.beta.issuer), confirmed.text
    # Signing in again to one's own organization needs no confirmation.
    assert admin.start_sign_in(slug).status_code == 303
