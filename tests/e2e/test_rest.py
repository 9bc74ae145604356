"""An organization does everything through the REST surface and `agentprocess publish`,
nothing through the database: sign up, invite, make groups, import → bind → publish a
process, make agents and their tokens, watch and cancel runs, add webhooks and read the
audit log. On SQLite and on PostgreSQL with two API processes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import servers
from rawmcp import call, call_body, post
from signin import Browser, Site, bearer, signed_up, site_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "processes"
ACCOUNTS = {
    "ann": {"email": "ann@acme.test", "email_verified": True},
    "bob": {"email": "bob@acme.test", "email_verified": True},
    "cat": {"email": "cat@acme.test", "email_verified": True},
}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def site(request):
    with site_for(request.param, ACCOUNTS) as started:
        yield started


def member(admin: Browser, site: Site, slug: str, email: str, account: str, role: str) -> tuple[str, Browser]:
    """Invites `email` with `role`, signs them in as `account`; their id and browser."""
    invited = admin.api("POST", "/members", {"email": email, "role": role})
    assert invited.status_code == 201, invited.text
    browser = Browser(site.first)
    assert browser.sign_in(slug, account).status_code == 303
    return invited.json()["id"], browser.at(site.last)


def upload(browser: Browser, folder: Path, text: str | None = None):
    source = text if text is not None else (folder / "PROCESS.md").read_text()
    return browser.client.post(
        browser.base + "/api/v1/processes",
        files={"file": (f"{folder.name}/PROCESS.md", source.encode(), "text/markdown")},
        headers={"Origin": browser.base, "X-CSRF-Token": browser.api("GET", "/session").json()["csrfToken"]},
    )


def hash_of(folder: Path) -> str:
    done = subprocess.run([str(servers.BIN / "agentprocess"), "hash", str(folder)], capture_output=True, text=True,
                          check=True)
    return done.stdout.split()[0]


def test_an_organization_runs_itself_through_the_rest_surface(site):
    admin, slug = signed_up(site)
    bob_id, bob = member(admin, site, slug, "bob@acme.test", "bob", "member")
    _, cat = member(admin, site, slug, "cat@acme.test", "cat", "operator")
    assert admin.api("POST", "/groups", {"id": "finance", "name": "Finance"}).status_code == 201
    assert admin.api("POST", "/groups", {"id": "empty"}).status_code == 201
    joined = admin.api("PUT", f"/groups/finance/members/{bob_id}")
    assert joined.status_code == 200 and joined.json()["members"] == [bob_id]

    folder = EXAMPLES / "purchase-order"
    imported = upload(admin, folder)
    assert imported.status_code == 201, imported.text
    draft = imported.json()
    assert draft["process"] == "purchase-order" and draft["publishable"] is False
    assert draft["requiresSystems"] == ["erp", "supplier-portal"]
    roles = [entry["role"] for entry in draft["roles"]]
    assert roles and all(entry["group"] is None for entry in draft["roles"])

    refused = admin.api("POST", "/processes/purchase-order/publish")
    assert refused.status_code == 400 and all(f"role {role}" in " ".join(refused.json()["issues"]) for role in roles)
    typo = admin.api("PUT", f"/processes/purchase-order/draft/roles/{roles[0]}", {"group": "fnance"})
    assert typo.status_code == 400 and "no such group" in typo.json()["issues"][0], typo.text
    empty = admin.api("PUT", f"/processes/purchase-order/draft/roles/{roles[0]}", {"group": "empty"})
    assert empty.status_code == 400 and "has no members" in empty.json()["issues"][0]
    assert admin.api("PUT", f"/processes/purchase-order/draft/roles/{roles[0]}",
                     {"group": "empty", "force": True}).status_code == 200
    for role in roles:
        bound = admin.api("PUT", f"/processes/purchase-order/draft/roles/{role}", {"group": "finance"})
        assert bound.status_code == 200, bound.text
    assert bound.json()["publishable"] is True
    assert admin.api("DELETE", "/groups/finance").status_code == 409, "a bound group stays"

    published = admin.api("POST", "/processes/purchase-order/publish")
    assert published.status_code == 201, published.text
    assert published.json()["number"] == 1 and published.json()["contentHash"] == hash_of(folder)
    again = admin.api("POST", "/processes/purchase-order/publish")
    assert again.status_code == 200 and again.json()["unchanged"] is True

    broken = upload(admin, folder, "---\nname: purchase-order\ndescription: x\nsteps:\n  - id: a\n    agent: x\n"
                                   "    next: nowhere\n---\n")
    assert broken.status_code == 400 and any(issue.startswith("7:5:") for issue in broken.json()["issues"]), broken.text
    changed = (folder / "PROCESS.md").read_text().replace("Turn an approved purchase request",
                                                          "Turn an approved purchase request quickly")
    assert upload(admin, folder, changed).status_code == 201
    assert admin.api("POST", "/processes/purchase-order/publish").json()["number"] == 2
    versions = admin.api("GET", "/processes/purchase-order/versions").json()["items"]
    assert [version["number"] for version in versions] == [1, 2]
    one = admin.api("GET", "/processes/purchase-order/versions/1").json()
    assert one["frontmatter"]["name"] == "purchase-order" and one["contentHash"] == hash_of(folder)
    assert one["roles"] == {role: "finance" for role in roles} and one["body"].strip()
    diff = admin.api("GET", "/processes/purchase-order/diff?from=1&to=2").json()
    assert "+description: Turn an approved purchase request quickly" in diff["diff"] and diff["rolesChanged"] is False
    assert bob.api("GET", "/processes").json()["items"][0]["number"] == 2

    agent = admin.api("POST", "/agents", {"id": "buyer-bot", "name": "Buyer bot"})
    assert agent.status_code == 201 and agent.json() == {"id": "buyer-bot", "name": "Buyer bot", "enabled": True}
    assert admin.api("POST", "/agents", {"id": "Buyer Bot"}).status_code == 400
    made = admin.api("POST", "/agents/buyer-bot/tokens", {})
    assert made.status_code == 201
    token = made.json()["token"]
    assert token.startswith("apt_") and "token" not in admin.api("GET", "/agents/buyer-bot/tokens").json()["items"][0]
    started = call(site.last, token, "start_run", {
        "requestId": "r1", "process": "purchase-order",
        "inputs": {"item": "Chairs", "supplier": "Acme Chairs", "amount": 1200, "costCenter": "CC-4100",
                   "neededBy": "2027-01-15"}})
    assert started["ok"], started
    run_id = started["data"]["run"]["id"]

    runs = bob.api("GET", "/runs?process=purchase-order&input.costCenter=CC-4100").json()["items"]
    assert [run["id"] for run in runs] == [run_id]
    assert bob.api("GET", "/runs?input.costCenter=CC-9999").json()["items"] == []
    assert [run["id"] for run in bob.api("GET", "/runs?state=active").json()["items"]] == [run_id]
    assert bob.api("GET", "/runs?state=ended").json()["items"] == []
    unknown = bob.api("GET", "/runs?state=finished")
    assert unknown.status_code == 400 and unknown.json()["issues"] == [
        "state: expected one of active, waiting, ended, cancelled"], unknown.text
    assert bob.api("GET", f"/runs/{run_id}").status_code == 200
    assert bob.api("POST", f"/runs/{run_id}/cancel", {"reason": "no"}).status_code == 403
    cancelled = cat.api("POST", f"/runs/{run_id}/cancel", {"reason": "ordered twice"},
                        headers={"Idempotency-Key": "cancel-1"})
    assert cancelled.status_code == 200, cancelled.text
    replayed = cat.api("POST", f"/runs/{run_id}/cancel", {"reason": "ordered twice"},
                       headers={"Idempotency-Key": "cancel-1"})
    assert replayed.status_code == 200 and replayed.json() == cancelled.json()
    other = cat.api("POST", f"/runs/{run_id}/cancel", {"reason": "another reason"},
                    headers={"Idempotency-Key": "cancel-1"})
    assert other.status_code == 409
    assert bob.api("GET", f"/runs/{run_id}").json()["run"]["state"] == "cancelled"

    rotated = admin.api("POST", f"/agents/buyer-bot/tokens/{made.json()['id']}/rotate", {"overlapSeconds": 0})
    assert rotated.status_code == 201
    fresh = rotated.json()["token"]
    assert call(site.last, fresh, "describe", {})["ok"]

    def refused_at_mcp(secret: str) -> bool:
        status, _, _ = post(site.first, call_body("describe", {}), secret)
        return status == 401

    # Tokens are remembered by each process for at most 10 seconds (identity_cache_seconds).
    servers.eventually(lambda: refused_at_mcp(token), timeout=15, what="the rotated-out token refused")
    assert admin.api("PATCH", "/agents/buyer-bot", {"enabled": False}).json()["enabled"] is False
    servers.eventually(lambda: refused_at_mcp(fresh), timeout=15, what="the disabled agent's token refused")

    hook = "http://127.0.0.1:9/hook" if site.server.backend == "sqlite" else "https://hooks.example.com/agentprocess"
    added = admin.api("POST", "/webhooks", {"url": hook})
    assert added.status_code == 201 and added.json()["secret"].startswith("whsec_"), added.text
    assert [entry["url"] for entry in admin.api("GET", "/webhooks").json()["items"]] == [hook]
    assert "secret" not in admin.api("GET", "/webhooks").json()["items"][0]
    assert admin.api("GET", "/webhooks/deliveries").status_code == 200
    assert admin.api("DELETE", f"/webhooks/{added.json()['id']}").status_code == 204

    kinds = [entry["kind"] for entry in admin.api("GET", "/audit?limit=200").json()["items"]]
    for kind in ("member.invited", "group.created", "group.member_added", "process.imported", "process.role_bound",
                 "process.published", "agent.created", "agent.token_created", "agent.token_rotated",
                 "agent.disabled", "run.cancelled", "webhook.added", "webhook.removed"):
        assert kind in kinds, (kind, kinds)


def test_agentprocess_publish_imports_binds_and_publishes(site):
    admin, _ = signed_up(site)
    bob_id = admin.api("POST", "/members", {"email": "bob@acme.test", "role": "member"}).json()["id"]
    admin.api("POST", "/groups", {"id": "support"})
    admin.api("PUT", f"/groups/support/members/{bob_id}")
    token = admin.api("POST", "/tokens", {"name": "ci", "scope": "admin"}).json()["token"]
    folder = EXAMPLES / "customer-refund"
    roles = [entry["role"] for entry in upload(admin, folder).json()["roles"]]

    admin.api("POST", "/agents", {"id": "refund-bot"})
    admin.api("POST", "/agents", {"id": "payments-bot"})

    def publish(*bindings: str, agents: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
        arguments = [str(servers.BIN / "agentprocess"), "publish", str(folder), "--url", site.last, "--token", token]
        for binding in bindings:
            arguments += ["--bind", binding]
        for binding in agents:
            arguments += ["--agents", binding]
        return subprocess.run(arguments, capture_output=True, text=True, timeout=60)

    typo = publish(*(f"{role}=suport" for role in roles))
    assert typo.returncode == 1 and 'group "suport": the organization has no such group' in typo.stderr, typo.stderr
    # Agent steps bound too: every one to refund-bot, paying to payments-bot alone.
    agents = ("*=agent:refund-bot", "pay=agent:payments-bot")
    wrong = publish(*(f"{role}=support" for role in roles), agents=("pay=agent:payment-bot",))
    assert wrong.returncode == 1 and 'agent "payment-bot": the organization has no such agent' in wrong.stderr, \
        wrong.stderr
    done = publish(*(f"{role}=support" for role in roles), agents=agents)
    assert done.returncode == 0, done.stderr
    assert "agent step pay → agent:payments-bot" in done.stdout, done.stdout
    assert done.stdout.strip().endswith(f"customer-refund version 1: {hash_of(folder)}"), done.stdout
    version = bearer(site.last, token, "GET", "/processes/customer-refund/versions/1").json()
    assert version["agents"] == {"*": {"agents": ["refund-bot"], "groups": []},
                                 "pay": {"agents": ["payments-bot"], "groups": []}}, version
    read_only = admin.api("POST", "/tokens", {"name": "ro", "scope": "read"}).json()["token"]
    denied = subprocess.run([str(servers.BIN / "agentprocess"), "publish", str(folder), "--url", site.last,
                             "--token", read_only], capture_output=True, text=True, timeout=60)
    assert denied.returncode == 1 and "may only read" in denied.stderr
    assert bearer(site.last, token, "GET", "/processes/customer-refund/versions").json()["items"][0]["number"] == 1


def test_another_organization_sees_none_of_it(site):
    acme, _ = signed_up(site)
    beta, _ = signed_up(site, site.beta, "zed")
    acme.api("POST", "/agents", {"id": "bot"})
    acme.api("POST", "/groups", {"id": "finance"})
    assert upload(acme, EXAMPLES / "purchase-order").status_code == 201
    for path in ("/agents/bot", "/agents/bot/tokens", "/groups/finance", "/processes/purchase-order/draft",
                 "/runs/run_missing"):
        assert beta.api("GET", path).status_code == 404, path
    assert beta.api("GET", "/agents").json()["items"] == []
    assert beta.api("PUT", "/processes/purchase-order/draft/roles/x", {"group": "finance"}).status_code == 404
    assert json.loads(beta.api("GET", "/processes").text)["items"] == []
