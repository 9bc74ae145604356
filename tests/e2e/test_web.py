"""The people's web app over HTTP, against the built server and a real OpenID provider:
a person who signed in through it finds their item in the inbox and approves it on
the work item page; the decision is in the run and in the audit log, with the
session's sign-in time. On SQLite and on two API processes over PostgreSQL (the page
from one process, the decision to the other)."""

from __future__ import annotations

import html
import re
from xml.etree import ElementTree

import pytest

from rawmcp import call
from signin import signed_up, site_for

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


def test_a_person_approves_in_the_browser(site):
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
        "requestId": "web-1", "process": "web-sign-off", "inputs": {"request": "a new laptop"}})
    run = started["data"]["run"]["id"]

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
    assert decided.status_code == 303 and decided.headers["location"] == "/inbox?decided=1", decided.text
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
