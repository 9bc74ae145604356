"""The people's web app over HTTP, against the built server and a real OpenID provider:
a person who signed in through it finds their item in the inbox and approves it on
the work item page; the decision is in the run and in the audit log, with the
session's sign-in time. On SQLite and on two API processes over PostgreSQL (the page
from one process, the decision to the other)."""

from __future__ import annotations

import html
import re
import time
from xml.etree import ElementTree

import pytest

from rawmcp import call
from signin import csrf_of, signed_up, site_for

ACCOUNTS = {"ann": {"email": "ann@acme.test", "email_verified": True}}
SIGN_OFF = """---
name: web-sign-off
description: The approvers sign off a request. Start it when a request needs a yes.
inputs:
  request:
    type: string
    description: What is asked for
steps:
  - id: sign
    person: approver
    approve: Sign off the request.
  - id: done
    finish: signed
---
An approver reads the request and signs it off.
"""


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def site(request):
    with site_for(request.param, ACCOUNTS) as started:
        yield started


def value_of(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert found, f"no {name} in {page[:2000]}"
    return html.unescape(found[1])


def started_sign_off(site, request_id: str):
    """A new organization whose admin (ann) approves web-sign-off, and one run of it,
    started by an agent: the admin's browser and the run id."""
    admin, _ = signed_up(site)
    ann = admin.api("GET", "/session").json()["member"]["id"]
    assert admin.api("POST", "/groups", {"id": "approvers"}).status_code == 201
    assert admin.api("PUT", f"/groups/approvers/members/{ann}").status_code in (200, 204)
    csrf = admin.api("GET", "/session").json()["csrfToken"]
    imported = admin.client.post(admin.base + "/api/v1/processes",
                                 files={"file": ("web-sign-off/PROCESS.md", SIGN_OFF.encode(), "text/markdown")},
                                 headers={"Origin": admin.base, "X-CSRF-Token": csrf})
    assert imported.status_code == 201, imported.text
    for role in imported.json()["roles"]:
        assert admin.api("PUT", f"/processes/web-sign-off/draft/roles/{role['role']}",
                         {"group": "approvers"}).status_code == 200
    assert admin.api("POST", "/processes/web-sign-off/publish").status_code == 201
    assert admin.api("POST", "/agents", {"id": "bot"}).status_code == 201
    token = admin.api("POST", "/agents/bot/tokens", {}).json()["token"]
    started = call(site.first, token, "start_run", {
        "requestId": request_id, "process": "web-sign-off", "inputs": {"request": "a new laptop"}})
    return admin, started["data"]["run"]["id"]


def test_a_person_approves_in_the_browser(site):
    admin, run = started_sign_off(site, "web-1")
    ann = admin.api("GET", "/session").json()["member"]["id"]

    inbox = admin.get("/inbox")
    assert inbox.status_code == 200, inbox.text
    link = re.search(rf'href="(/runs/{run}/items/[^"]+)"', inbox.text)
    assert link, inbox.text
    page = admin.get(link[1])
    assert page.status_code == 200 and "Sign off the request." in page.text and "a new laptop" in page.text
    other = admin.at(site.first)
    decided = other.post_form(link[1], {
        "csrf": value_of(page.text, "csrf"), "snapshot": value_of(page.text, "snapshot"),
        "requestId": value_of(page.text, "requestId"), "decision": "approved"}, origin=site.first)
    assert decided.status_code == 303 and decided.headers["location"] == "/inbox?decided=approved", decided.text
    view = admin.api("GET", f"/runs/{run}").json()
    assert view["run"]["state"] == "ended" and view["data"]["steps"]["sign"]["decision"] == "approved", view
    log = admin.api("GET", "/audit?kind=run.decided").json()["items"]
    assert len(log) == 1 and log[0]["actor"] == ann and "sessionSignedInAt" in log[0]["detail"], log
    assert "Nothing is waiting for you." in admin.get("/inbox").text
    record = admin.get(f"/runs/{run}")
    assert record.status_code == 200 and "Decision: <strong>approved</strong>" in record.text, record.text
    # The map is well-formed SVG with a node per step, each in its state.
    drawn = ElementTree.fromstring(record.text[record.text.index("<svg"):record.text.index("</svg>") + 6])
    states = {group.get("data-step"): group.get("data-state") for group in drawn.iter("{http://www.w3.org/2000/svg}g")
              if group.get("data-step")}
    assert states == {"sign": "done", "done": "done"}, states


@pytest.fixture(scope="module")
def brief_site():
    """A server where a person decides only within 3 seconds of signing in."""
    with site_for("postgres", ACCOUNTS, extra=("--decide-sign-in-seconds", "3")) as started:
        yield started


def test_a_late_decision_signs_the_person_in_again_at_their_provider(brief_site):
    """Past --decide-sign-in-seconds, deciding sends the person to the real provider
    with max_age=0 and prompt=login; its ID token's auth_time passes, the person comes
    back to the item, and the decision goes through."""
    site = brief_site
    admin, run = started_sign_off(site, "web-late")
    link = re.search(rf'href="(/runs/{run}/items/[^"]+)"', admin.get("/inbox").text)[1]
    time.sleep(3.5)

    def decide(page: str):
        return admin.post_form(link, {
            "csrf": value_of(page, "csrf"), "snapshot": value_of(page, "snapshot"),
            "requestId": value_of(page, "requestId"), "decision": "approved"})

    late = decide(admin.get(link).text)
    assert late.status_code == 303 and late.headers["location"].endswith("&fresh=1"), late.text
    # The link only shows the sign-in page, which says why; its button starts the sign-in.
    again = admin.get(late.headers["location"])
    assert again.status_code == 200 and "a decision needs a recent sign-in" in again.text, again.text
    to_idp = admin.post_form("/login", {"csrf": csrf_of(again.text), "who": re.search(r'name="who" type="text" value="([^"]*)"', again.text)[1],
                                        "fresh": "1"})
    assert "max_age=0" in to_idp.headers["location"] and "prompt=login" in to_idp.headers["location"]
    back = admin.finish_at_idp(to_idp, "ann")
    assert back.status_code == 303 and back.headers["location"] == link, back.text
    decided = decide(admin.get(link).text)
    assert decided.status_code == 303 and decided.headers["location"] == "/inbox?decided=approved", decided.text
