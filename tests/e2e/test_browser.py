"""The web app in a real browser: Debian's Chromium, driven by Playwright, against
`agentprocess dev`. A person signs in, starts a run from the catalog's form, completes
the task it opens (with a file as evidence), approves with the keyboard alone, and
follows the run; the inbox refreshes itself when new work arrives; times are in the
browser's time zone; every page passes axe-core with no serious or critical
violation, loads nothing its policy refuses, and fits a phone's width.

With UPDATE_SCREENSHOTS=1 it also writes the README's screenshots to docs/screenshots."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

import servers
from rawmcp import call

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "tests" / "browser" / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = ROOT / "docs" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

PROCESS = """---
name: equipment-request
description: A person asks for equipment; the requester fills in the details, a colleague approves. Start it when someone needs equipment.
inputs:
  item:
    type: string
    description: What is needed
  quantity: number
  urgent:
    type: boolean
    optional: true
requires:
  systems: [asset-register]
steps:
  - id: details
    person: requester
    task: Fill in the details of the request and attach the quote.
    output:
      supplier:
        type: string
        one_of: [Acme, Globex]
      price: number
      needed_by: date
      notes:
        type: list
        items: string
        optional: true
    evidence: [file]
  - id: approval
    person: approver
    approve: Approve the request.
    due: 2d
    on_reject: details
  - id: delivered
    wait_for: equipment_delivered
    timeout: 10d
    on_timeout: done
  - id: done
    finish: delivered
---
# Equipment request

Someone needs equipment for their work.

## Details

Pick the supplier whose quote is lower and attach the quote as a file.

## Approval

Check that the price matches the quote.
"""

QUICK = """---
name: quick-check
description: A colleague checks a change within the hour.
inputs:
  change: string
steps:
  - id: check_it
    person: checker
    approve: Check the change.
    due: 1h
  - id: done
    finish: checked
---
# Quick check

## Check it

Look the change over.
"""

VENDOR = """---
name: vendor-records
description: An agent collects a vendor's documents, another writes the vendor to the ERP.
steps:
  - id: collect_documents
    agent: Collect the vendor's tax form and bank letter.
  - id: write_erp
    agent: Write the vendor record in the ERP.
  - id: done
    finish: recorded
---
# Vendor records

The agent that collects the documents never writes the ERP record.
"""

# A 1×1 PNG: the quote.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000101ff89993d1d0000000049454e44ae426082"
)


@pytest.fixture(scope="module")
def site():
    folder = Path(tempfile.mkdtemp(prefix="agentprocess-browser-"))
    (folder / "equipment-request").mkdir()
    (folder / "equipment-request" / "PROCESS.md").write_text(PROCESS)
    (folder / "quick-check").mkdir()
    (folder / "quick-check" / "PROCESS.md").write_text(QUICK)
    (folder / "vendor-records").mkdir()
    (folder / "vendor-records" / "PROCESS.md").write_text(VENDOR)
    started = servers.start_sqlite(processes=folder)
    yield started
    servers.drop(started)


@pytest.fixture(scope="module")
def chromium():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


class Watched:
    """A page, and every script error, policy refusal and failed subresource it met (a
    refused form's page answers 422 on purpose: documents are left out)."""

    def __init__(self, page):
        self.page = page
        self.errors: list[str] = []
        page.on("console", self.console)
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("response", self.response)

    def console(self, message) -> None:
        # A failed load is reported by `response` below, with what it was.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            self.errors.append(f"{message.text} ({message.location.get('url', '')})")

    def response(self, response) -> None:
        if response.status >= 400 and response.request.resource_type != "document":
            self.errors.append(f"{response.status} {response.request.resource_type} {response.url}")


def context(chromium, site, zone="Europe/Paris", viewport=(1280, 900), scheme="light"):
    return chromium.new_context(
        base_url=site.base, timezone_id=zone, viewport={"width": viewport[0], "height": viewport[1]},
        reduced_motion="reduce", color_scheme=scheme)


def sign_in(watched: Watched, site, person: str) -> None:
    page = watched.page
    page.goto("/dev/sign-in")
    page.get_by_role("button", name=re.compile(rf"Sign in as {re.escape(site.persons[person])} ")).click()
    page.wait_for_url(re.compile(r"/inbox"))


def accessible(watched: Watched, what: str) -> None:
    """axe-core finds no serious or critical violation, and the page met no error."""
    page = watched.page
    page.evaluate(AXE.read_text())
    results = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    bad = [
        f"{violation['id']} ({violation['impact']}): {violation['help']}: "
        + "; ".join(node["html"][:120] for node in violation["nodes"][:3])
        for violation in results["violations"]
        if violation["impact"] in ("serious", "critical")
    ]
    assert not bad, f"{what}: {bad}"
    assert not watched.errors, f"{what}: {watched.errors}"


def fits(page, what: str) -> None:
    """Nothing on the page is wider than the viewport: no sideways scrolling."""
    width = page.evaluate("document.documentElement.scrollWidth")
    viewport = page.evaluate("window.innerWidth")
    wide = page.evaluate("""() => Array.from(document.querySelectorAll('body *'))
        .filter(e => e.getBoundingClientRect().right > window.innerWidth || e.scrollWidth > window.innerWidth)
        .map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right) + '/'
             + e.scrollWidth + ': ' + e.textContent.slice(0, 40))""")
    assert width <= viewport, f"{what}: {width} px wide in a {viewport} px viewport: {wide[:5]}"


def screenshot(page, name: str) -> None:
    if os.environ.get("UPDATE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def test_a_person_works_a_run_through_in_the_browser(site, chromium):
    browser = context(chromium, site)
    watched = Watched(browser.new_page())
    page = watched.page
    sign_in(watched, site, "alice")
    accessible(watched, "the empty inbox")
    # A member is shown no way into what only operators and admins may open.
    main_nav = page.get_by_role("navigation", name="Main")
    assert main_nav.get_by_role("link", name="Runs").is_visible()
    assert main_nav.get_by_role("link", name="Admin").count() == 0

    # The catalog, and the start form generated from the inputs.
    page.goto("/processes")
    assert page.get_by_text("asset-register").is_visible()
    accessible(watched, "the catalog")
    screenshot(page, "catalog")
    page.get_by_role("link", name="Start a run of equipment-request").click()
    page.get_by_label("item").fill("A standing desk")
    page.get_by_label("quantity").fill("two")
    page.get_by_role("button", name="Start the run").click()
    # Refused in words, beside its field and in a summary linking to it, with what was
    # typed kept; the protocol's own words wait under Technical details.
    assert page.locator("p.issue", has_text="Quantity must be a number.").is_visible()
    page.locator(".problems").get_by_role("link", name="Quantity must be a number.").click()
    assert page.evaluate("document.activeElement.id") == "inputs.quantity" or page.url.endswith("#inputs.quantity")
    assert not page.get_by_text("inputs.quantity: expected number").is_visible()
    page.locator(".problems summary").click()
    assert page.get_by_text("inputs.quantity: expected number").is_visible()
    assert page.get_by_label("item").input_value() == "A standing desk"
    accessible(watched, "a refused start form")
    page.get_by_label("quantity").fill("2")
    page.get_by_role("button", name="Start the run").click()
    page.wait_for_url(re.compile(r"/runs/r_[^/]+$"))
    run = page.url.rsplit("/", 1)[1]
    assert page.locator("svg.map").is_visible()
    accessible(watched, "a run page")

    # The task: the body's section for the step, the generated form, a file.
    page.goto("/inbox")
    page.get_by_role("link", name="details").click()
    assert page.locator(".section").get_by_text("Pick the supplier whose quote is lower").is_visible()
    page.get_by_label("supplier").select_option("Globex")
    page.get_by_label("price").fill("420.50")
    page.get_by_label("Needed by").fill("2027-03-01")
    page.get_by_label("notes").fill("height adjustable\nwhite")
    page.get_by_label("Files").set_input_files(files=[{"name": "quote.png", "mimeType": "image/png", "buffer": PNG}])
    accessible(watched, "a task's page")
    screenshot(page, "work-item")
    page.get_by_role("button", name="Complete").click()
    page.wait_for_url(re.compile(r"/inbox\?decided=completed"))
    assert page.get_by_text("You completed it.").is_visible()
    # The approval says what it is about: the inputs, and the price its step names.
    about = page.locator("tr", has=page.get_by_role("link", name="approval")).locator("small.about")
    assert "Price: 420.5" in about.inner_text(), about.inner_text()
    accessible(watched, "the inbox with an approval waiting")
    fits(page, "the inbox at 1280 px")
    screenshot(page, "inbox")

    # The approval reads top to bottom as a person decides: the question and the facts
    # (labelled, written for their types) on the first screen, the decision below them.
    page.get_by_role("link", name="approval").click()
    assert page.get_by_role("heading", level=1, name="Approval").is_visible()
    facts = page.locator("section[aria-labelledby=facts]")
    assert facts.locator("dt", has_text="Needed by").is_visible()
    assert facts.get_by_text("1 March 2027").is_visible()
    assert facts.locator("dt", has_text="Item").get_by_text("What is needed").is_visible()
    first_screen = page.viewport_size["height"]
    assert page.locator("p.lead").bounding_box()["y"] < first_screen
    assert facts.bounding_box()["y"] < first_screen
    assert page.get_by_role("button", name="Approve").bounding_box()["y"] > facts.bounding_box()["y"]
    colours = {name: page.get_by_role("button", name=name).evaluate("b => getComputedStyle(b).backgroundColor")
               for name in ("Approve", "Reject")}
    assert colours["Approve"] != colours["Reject"], colours
    page.get_by_label("Note (required to reject)").fill("The price does not match the quote.")
    page.get_by_role("button", name="Reject").click()
    page.wait_for_url(re.compile(r"/inbox\?decided=rejected"))
    assert page.get_by_text("You rejected it.").is_visible()

    # The rework: the details again, with a new price.
    page.get_by_role("link", name="details").click()
    page.get_by_label("supplier").select_option("Globex")
    page.get_by_label("price").fill("1250.5")
    page.get_by_label("Needed by").fill("2027-03-01")
    page.get_by_label("Files").set_input_files(files=[{"name": "quote.png", "mimeType": "image/png", "buffer": PNG}])
    page.get_by_role("button", name="Complete").click()
    page.wait_for_url(re.compile(r"/inbox\?decided=completed"))

    # The approval again: the rejection with its note, and what changed since.
    page.get_by_role("link", name="approval").click()
    before = page.locator("section[aria-labelledby=before]")
    assert before.get_by_text("The price does not match the quote.").is_visible()
    changes = before.locator("table", has_text="Changed since the earlier attempt")
    assert changes.locator("tr", has_text="Price").get_by_text("1,250.5").is_visible()
    assert changes.locator("tr", has_text="Price").get_by_text("420.50").is_visible()

    # Approved with the keyboard alone: the quote is previewed, and Tab reaches the
    # Approve button with a visible focus ring.
    assert page.get_by_role("img", name="Preview of quote.png").first.is_visible()
    assert page.locator(".section").get_by_text("Check that the price matches the quote.").is_visible()
    accessible(watched, "an approval's page")
    fits(page, "an approval's page at 1280 px")
    screenshot(page, "work-item-approval")
    page.set_viewport_size({"width": 390, "height": 844})
    fits(page, "an approval's page at 390 px")
    screenshot(page, "work-item-approval-phone")
    page.set_viewport_size({"width": 360, "height": 800})
    fits(page, "an approval's page at 360 px")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.evaluate("document.activeElement.blur()")
    for _ in range(120):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent.trim()") == "Approve":
            break
    else:
        pytest.fail("Tab never reached the Approve button")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("", "none"), outline
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/inbox\?decided=approved"))
    assert page.get_by_text("You approved it.").is_visible()

    # The run page: the timer in the browser's time zone, the record with the file.
    page.goto(f"/runs/{run}")
    assert page.get_by_role("heading", name="Timers").is_visible()
    assert page.locator("svg.map [data-step=approval] .step-due").text_content() == "due 2d"
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d (CET|CEST)", page.locator("time").first.inner_text())
    assert page.get_by_text(re.compile(r"SHA-256")).first.is_visible()
    accessible(watched, "a run page with its record")
    screenshot(page, "run")

    # The runs page, where a signed-in person lands: the run waits for its delivery.
    page.goto("/")
    page.wait_for_url(re.compile(r"/runs$"))
    assert page.get_by_role("link", name="equipment-request v1").first.is_visible()
    accessible(watched, "the runs page")
    page.get_by_label("State").select_option("waiting")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"/runs\?.*state=waiting"))
    row = page.locator("tr", has=page.locator(f"a[href='/runs/{run}']"))
    assert row.locator("td[data-label='Where it stands']").inner_text() == "Delivered"
    assert row.locator("td[data-label='Waiting on']").inner_text() == "an event"
    screenshot(page, "runs")
    page.set_viewport_size({"width": 360, "height": 800})
    fits(page, "the runs page at 360 px")
    # Found by an input of the chosen process.
    page.goto("/runs?process=equipment-request")
    page.get_by_label("Item").fill("A standing desk")
    page.get_by_role("button", name="Filter").click()
    assert page.locator(f"a[href='/runs/{run}']").is_visible()
    accessible(watched, "the runs page found by an input")
    fits(page, "the runs page with its input filters at 360 px")
    page.set_viewport_size({"width": 1280, "height": 900})

    # The account page: the app's navigation and look, at a laptop's and a phone's width.
    page.goto("/account")
    assert page.get_by_role("navigation", name="Main").get_by_role("link", name="Inbox").is_visible()
    assert page.locator("dl.summary").get_by_text(site.persons["alice"]).is_visible()
    accessible(watched, "the account page")
    # One's own API token: made, shown once, listed, revoked.
    page.get_by_label("Name").fill("publishing from CI")
    page.get_by_role("button", name="Make the token").click()
    token = page.locator("code.secret").inner_text()
    assert token.startswith("apr_"), token
    accessible(watched, "a new token, shown once")
    page.get_by_role("link", name="Done").click()
    assert page.locator("td[data-label=Name]", has_text="publishing from CI").is_visible()
    assert token not in page.content()
    accessible(watched, "the account page with a token")
    screenshot(page, "account")
    page.set_viewport_size({"width": 360, "height": 800})
    fits(page, "the account page at 360 px")
    page.get_by_role("button", name="Revoke publishing from CI").click()
    assert page.locator("td[data-label=State]", has_text="Revoked").is_visible()

    # Signed out: the sign-in page, on the same layout.
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(re.compile(r"/login$"))
    assert page.get_by_role("heading", level=1, name="Sign in").is_visible()
    accessible(watched, "the sign-in page")
    fits(page, "the sign-in page at 360 px")
    screenshot(page, "sign-in-phone")
    browser.close()


def test_the_inbox_refreshes_itself_and_fits_a_phone(site, chromium):
    phone = context(chromium, site, zone="Asia/Tokyo", viewport=(390, 844))
    watched = Watched(phone.new_page())
    page = watched.page
    sign_in(watched, site, "bob")
    page.goto("/inbox")
    count = page.locator("#items tbody tr").count()
    started = call(site.base, site.tokens["alice"], "start_run", {
        "requestId": "browser-refresh", "process": "equipment-request",
        "inputs": {"item": "A monitor", "quantity": 1}})
    run = started["data"]["run"]["id"]
    # No reload: the list redraws itself within its 15 seconds.
    page.locator("#items tbody tr").nth(count).wait_for(timeout=25_000)
    assert page.url.endswith("/inbox")
    fits(page, "the inbox on a phone")
    accessible(watched, "the inbox on a phone")
    screenshot(page, "inbox-phone")
    page.locator("#items a", has_text="details").last.click()
    fits(page, "a work item on a phone")
    page.goto(f"/runs/{run}")
    fits(page, "a run page on a phone")
    # Times in the phone's zone.
    assert " JST" in page.locator("time").first.inner_text()
    page.goto("/processes/equipment-request")
    fits(page, "a version page on a phone")
    accessible(watched, "a version page")
    phone.close()


def test_the_admin_pages_pass_axe_and_fit_a_phone(site, chromium):
    for viewport in ((1280, 900), (390, 844)):
        browser = context(chromium, site, viewport=viewport)
        watched = Watched(browser.new_page())
        page = watched.page
        sign_in(watched, site, "admin")
        for path in ("/admin", "/admin/people", "/admin/agents", "/admin/processes",
                     "/admin/processes/equipment-request", "/admin/processes/vendor-records", "/admin/messages", "/admin/policies", "/admin/webhooks", "/admin/audit", "/admin/sign-in"):
            response = page.goto(path)
            assert response.status == 200, f"{path}: {response.status}"
            accessible(watched, f"{path} at {viewport[0]} px")
            fits(page, f"{path} at {viewport[0]} px")
        if viewport[0] > 1000:
            page.goto("/admin/people")
            screenshot(page, "admin-people")
        browser.close()


def test_the_sign_in_pages_pass_axe_fit_a_phone_and_ask_before_switching(site, chromium):
    """The pages a stranger sees (sign-in, sign-up, the development sign-in, the fresh
    sign-in a late decision asks for) and the question before a session of one
    organization is ended for another: axe-clean, within the policy, at both widths."""
    for viewport in ((1280, 900), (390, 844)):
        browser = context(chromium, site, viewport=viewport)
        watched = Watched(browser.new_page())
        page = watched.page
        for path in ("/login", "/login?org=dev&fresh=1", "/signup", "/dev/sign-in"):
            response = page.goto(path)
            assert response.status == 200, f"{path}: {response.status}"
            assert "frame-ancestors 'none'" in response.headers["content-security-policy"], path
            accessible(watched, f"{path} at {viewport[0]} px")
            fits(page, f"{path} at {viewport[0]} px")
            shot = os.environ.get("SIGN_IN_SCREENSHOTS")
            if shot:
                page.screenshot(path=f"{shot}/{path.strip('/').replace('/', '-').replace('?', '-')}-{viewport[0]}.png",
                                full_page=True)
        sign_in(watched, site, "admin")
        assert page.get_by_role("navigation", name="Main").get_by_role("link", name="Admin").is_visible()
        page.goto("/login?org=another-organization")
        page.get_by_role("button", name="Continue to your identity provider").click()
        assert "There is no organization" in page.get_by_role("alert").inner_text(), page.content()
        if shot:
            page.screenshot(path=f"{shot}/login-refused-{viewport[0]}.png", full_page=True)
        accessible(watched, f"a refused sign-in at {viewport[0]} px")
        fits(page, f"a refused sign-in at {viewport[0]} px")
        assert page.goto("/inbox").url.endswith("/inbox"), "the session is still there"
        browser.close()


def test_the_pages_keep_their_contrast_in_the_dark(site, chromium):
    browser = context(chromium, site, scheme="dark")
    watched = Watched(browser.new_page())
    page = watched.page
    sign_in(watched, site, "alice")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(18, 18, 18)"
    for path in ("/inbox", "/processes", "/account", "/processes/equipment-request/start"):
        page.goto(path)
        accessible(watched, f"{path} in the dark")
    screenshot(page, "start-dark")
    browser.close()


def test_people_choose_what_they_hear_of_and_operators_see_what_is_overdue(site, chromium):
    # A check that goes overdue an hour after it opens.
    started = call(site.base, site.tokens["bob"], "start_run",
                          {"process": "quick-check", "inputs": {"change": "Raise the API rate limit"},
                           "requestId": str(uuid.uuid4())})
    assert started["ok"], started
    for viewport in ((1280, 900), (390, 844)):
        browser = context(chromium, site, viewport=viewport)
        watched = Watched(browser.new_page())
        page = watched.page
        sign_in(watched, site, "alice")
        page.goto("/account#messages")
        page.get_by_label("A work item waits for you").select_option("daily")
        page.get_by_role("button", name="Save what I hear of").click()
        page.wait_for_url(re.compile(r"/account"))
        assert page.get_by_label("A work item waits for you").input_value() == "daily"
        accessible(watched, f"the account's choices at {viewport[0]} px")
        fits(page, f"the account's choices at {viewport[0]} px")
        page.locator("#messages").scroll_into_view_if_needed()
        screenshot(page, "account-messages" if viewport[0] > 1000 else "account-messages-phone")
        browser.close()

    site.advance(2 * 3600)
    for viewport in ((1280, 900), (390, 844)):
        browser = context(chromium, site, viewport=viewport)
        watched = Watched(browser.new_page())
        page = watched.page
        sign_in(watched, site, "ops")
        assert page.get_by_role("link", name="One step").is_visible(), "an operator's inbox counts what is overdue"
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Overdue").click()
        assert page.get_by_text("One step is overdue.").is_visible()
        row = page.locator("tbody tr", has_text="Check it")
        assert row.get_by_text("the people group").is_visible()
        assert row.get_by_text("1 hour").is_visible()
        accessible(watched, f"the overdue queue at {viewport[0]} px")
        fits(page, f"the overdue queue at {viewport[0]} px")
        screenshot(page, "overdue" if viewport[0] > 1000 else "overdue-phone")
        browser.close()
    # A member is not offered the queue.
    browser = context(chromium, site)
    watched = Watched(browser.new_page())
    sign_in(watched, site, "alice")
    assert watched.page.get_by_role("navigation", name="Main").get_by_role("link", name="Overdue").count() == 0
    browser.close()

    # An admin turns on "the initiator does not decide": bob, who started the check, is
    # no longer offered it; alice still is.
    browser = context(chromium, site)
    watched = Watched(browser.new_page())
    page = watched.page
    sign_in(watched, site, "admin")
    page.goto("/admin/policies")
    page.get_by_label("The person who started a run does not decide its approvals and tasks").check()
    page.get_by_role("button", name="Save the policies").click()
    page.goto("/admin/policies")
    assert page.get_by_label("The person who started a run does not decide its approvals and tasks").is_checked()
    assert not page.get_by_label("Four eyes: nobody approves work they did in the same run").is_checked()
    accessible(watched, "the policies page")
    browser.close()
    for person, offered in (("bob", False), ("alice", True)):
        browser = context(chromium, site)
        watched = Watched(browser.new_page())
        sign_in(watched, site, person)
        assert watched.page.get_by_role("link", name="Check it").is_visible() == offered, person
        browser.close()


def test_an_admin_binds_an_agent_step_to_one_agent_and_no_other_agent_may_claim_it(site, chromium):
    browser = context(chromium, site)
    watched = Watched(browser.new_page())
    page = watched.page
    sign_in(watched, site, "admin")
    page.goto("/admin/processes/vendor-records")
    step = page.locator("form.agent-step", has=page.get_by_text("Agent step write_erp"))
    assert step.get_by_text("Any agent of the organization may claim it.").is_visible()
    step.get_by_label("agent agent-2").check()
    step.get_by_role("button", name="Bind").click()
    page.wait_for_url(re.compile(r"/admin/processes/vendor-records"))
    step = page.locator("form.agent-step", has=page.get_by_text("Agent step write_erp"))
    assert step.get_by_text("Only the agent agent-2 may claim it.").is_visible()
    assert step.get_by_label("agent agent-2").is_checked()
    accessible(watched, "the draft page with an agent step bound")
    page.get_by_role("button", name="Publish vendor-records").click()
    page.wait_for_url(re.compile(r"/admin/processes/vendor-records"))
    page.locator("form.agent-step", has=page.get_by_text("Agent step write_erp")).scroll_into_view_if_needed()
    screenshot(page, "admin-agent-steps")
    browser.close()
    for viewport in ((390, 844),):
        browser = context(chromium, site, viewport=viewport)
        watched = Watched(browser.new_page())
        sign_in(watched, site, "admin")
        watched.page.goto("/admin/processes/vendor-records")
        fits(watched.page, "the draft page's agent steps on a phone")
        browser.close()

    # The version published from the page holds: agent-1 collects, and is neither
    # offered nor allowed the ERP step; agent-2 is offered it and claims it.
    one, two = site.tokens["agent-1"], site.tokens["agent-2"]
    started = call(site.base, one, "start_run", {"process": "vendor-records", "inputs": {},
                                                  "requestId": str(uuid.uuid4())})
    assert started["ok"], started
    run = started["data"]["run"]["id"]
    claimed = call(site.base, one, "claim", {"runId": run, "stepId": "collect_documents",
                                              "requestId": str(uuid.uuid4())})
    assert claimed["ok"], claimed
    submitted = call(site.base, one, "submit", {"token": claimed["data"]["token"], "output": {}, "evidence": [],
                                                 "summary": "Collected both documents.",
                                                 "requestId": str(uuid.uuid4())})
    assert submitted["ok"], submitted

    def offered(token: str) -> list[str]:
        work = call(site.base, token, "get_work", {"process": "vendor-records"})
        return [item["stepId"] for item in work["data"]["items"] if item["runId"] == run]

    assert offered(one) == [] and offered(two) == ["write_erp"]
    refused = call(site.base, one, "claim", {"runId": run, "stepId": "write_erp", "requestId": str(uuid.uuid4())})
    assert refused["error"]["code"] == "forbidden", refused
    assert "to the agent agent-2; agent agent-1 is not among them" in refused["error"]["issues"][0], refused
    claimed = call(site.base, two, "claim", {"runId": run, "stepId": "write_erp", "requestId": str(uuid.uuid4())})
    assert claimed["ok"], claimed
