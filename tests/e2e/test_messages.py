"""Messages to people: the scheduler hands each notification of the outbox to the
people it concerns and sends them by email, through a real SMTP server on loopback
(aiosmtpd), and to the group's Slack-compatible chat hook (a local receiver). The
group's members hear that work waits; the group and every operator hear it went
overdue, and again as a reminder while it stays so; a person who turned them off hears
nothing; once decided, the reminders stop and the initiator hears the run ended. Whoever the
organization's policies keep from deciding an item is not told it waits for them.

What a run holds is hostile: values that would ping a channel, make links and images
titled like ours, or forge the call to act and the footer reach every medium
neutralised. A mail server's refusal reaches the organization as its class in words,
its reply (which names the platform's relay) the operators' logs alone."""

from __future__ import annotations

import email
import email.policy
import json
import re
import tempfile
import threading
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest
from aiosmtpd.controller import Controller

import faults
import scheduling
import servers
from client import connect, request_id
from signin import Browser, bearer, csrf_of
from test_scheduler import clients_of, eventually, start
from test_webhooks import Receiver

pytestmark = pytest.mark.anyio

PUBLIC = "https://processes.acme.test"


class Mailbox:
    """What a real SMTP server on loopback received: (recipients, parsed message); or,
    given a `refusal`, a server that refuses every recipient with it."""

    def __init__(self, refusal: str | None = None) -> None:
        self.received: list[tuple[list[str], email.message.EmailMessage]] = []
        self.lock = threading.Lock()
        self.refusal = refusal
        self.refused: list[str] = []
        self.controller = Controller(self, hostname="127.0.0.1", port=servers.free_port())
        self.controller.start()
        self.url = f"smtp://127.0.0.1:{self.controller.port}"

    async def handle_RCPT(self, server, session, envelope, address, options):  # noqa: N802 (aiosmtpd's name)
        if self.refusal:
            with self.lock:
                self.refused.append(address)
            return self.refusal
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.lock:
            self.received.append((list(envelope.rcpt_tos), message))
        return "250 OK"

    def to(self, address: str, subject_has: str = "") -> list[email.message.EmailMessage]:
        with self.lock:
            return [message for rcpt, message in self.received
                    if address in rcpt and subject_has in str(message["subject"])]

    def close(self) -> None:
        self.controller.stop()


@pytest.fixture
def deployment():
    mailbox = Mailbox()
    chat = Receiver(fail_first=False)
    deployment = scheduling.Deployment(
        scheduling.SHARED_REDIS, schedulers=1,
        flags=("--smtp-url", mailbox.url, "--mail-from", "Acme processes <processes@acme.test>",
               "--public-url", PUBLIC, "--webhook-allow-private-networks", "--allow-plain-http-hooks"),
    )
    yield deployment, mailbox, chat
    deployment.close()
    chat.close()
    mailbox.close()


def text_of(message: email.message.EmailMessage) -> str:
    return message.get_body(preferencelist=("plain",)).get_content()


def html_of(message: email.message.EmailMessage) -> str:
    return message.get_body(preferencelist=("html",)).get_content()


async def test_people_hear_of_waiting_overdue_and_ended_work_as_they_chose(deployment):
    deployment, mailbox, chat = deployment
    database = deployment.server.database_url
    hooked = json.loads(servers.admin(database, "chat-hook", "--org", "acme", "--group", "people", chat.url,
                                      "--secret-key", servers.SECRET_KEY, "--allow-plain-http-hooks"))
    assert hooked == {"group": "people", "host": "127.0.0.1", "kind": "markdown"}
    # Bob turned off what waits for him and what goes overdue.
    bob = deployment.sql("SELECT id FROM identities WHERE org_id = 'acme' AND person = 'bob@example.com'").strip()
    deployment.sql(f"INSERT INTO message_choices (org_id, identity_id, choices, updated_at) "
                   f"VALUES ('acme', '{bob}', '{{\"waiting\": \"off\", \"overdue\": \"off\"}}', 0)")
    async with AsyncExitStack() as stack:
        clients = await clients_of(stack, deployment)
        alice = clients["alice"]
        run = await start(alice, "vendor-approval", vendorName="Acme Tools", expectedAnnualSpend=42000.5)

        # Waiting: to the group's members (alice; bob chose off), not to the operators.
        async def waiting():
            return mailbox.to("alice@example.com", "waits for you")

        [message] = await eventually(waiting, what="the waiting email")
        item = (await alice.call("get_run", runId=run))["workItems"][0]["id"]
        link = f"{PUBLIC}/runs/{run}/items/{item}"
        assert message["subject"] == "Finance approval waits for you · vendor-approval v1", message["subject"]
        assert message["from"] == "Acme processes <processes@acme.test>"
        assert message["to"] == "alice <alice@example.com>"
        assert message["list-unsubscribe"] == f"<{PUBLIC}/account#messages>"
        assert message["message-id"].endswith("@acme.test>")
        text = text_of(message)
        for fact in ("Process: vendor-approval v1", "Vendor name: Acme Tools", "Expected annual spend: 42000.5",
                     "Due: ", f"Open the work item: {link}", "because you are in the people group"):
            assert fact in text, text
        html = html_of(message)
        assert f'href="{link}"' in html and "Expected annual spend" in html, html

        async def posted(words: str):
            return [json.loads(post["body"])["text"] for post in chat.delivered()
                    if words in json.loads(post["body"])["text"]]

        [waiting_post] = await eventually(lambda: posted("waits for you"), what="the chat post")
        assert link in waiting_post and "Vendor name: Acme Tools" in waiting_post

        # Overdue after the minute: to the group (alice) and every operator, and chat.
        deployment.advance(61)
        for address in ("alice@example.com", "ops@example.com"):
            async def overdue(address=address):
                return mailbox.to(address, "is overdue")

            [late] = await eventually(overdue, what=f"the overdue email to {address}")
            assert link in text_of(late)
        why = text_of(mailbox.to("ops@example.com", "is overdue")[0])
        assert "because you are an operator" in why, why
        await eventually(lambda: posted("is overdue"), what="the overdue chat post")

        # A reminder a day later, to the same people, while the item stays open.
        deployment.advance(24 * 3600 + 5)
        for address in ("alice@example.com", "ops@example.com"):
            async def reminded(address=address):
                return mailbox.to(address, "Reminder: Finance approval is still overdue")

            await eventually(reminded, what=f"the reminder to {address}")

        # Decided: no further reminder, and alice (who started the run) hears it ended.
        view = await alice.call("get_run", runId=run)
        decide = view["workItems"][0]["decide"]["arguments"]
        await alice.call("decide", **dict(decide, decision="approved", requestId=request_id()))
        ended = await eventually(lambda: _async(mailbox.to("alice@example.com", "Your run ended")),
                                 what="the ended email")
        assert "Your run ended: approved" in text_of(ended[0])
        deployment.advance(24 * 3600 + 5)
        await anyio.sleep(1.5)
        assert len(mailbox.to("alice@example.com", "Reminder")) == 1
        assert len(mailbox.to("ops@example.com", "Reminder")) == 1

    # Bob chose off: nothing reached him. The reminders due after the decision were
    # dropped, and say why.
    assert mailbox.to("bob@example.com") == []
    dropped = deployment.sql("SELECT last_error FROM messages WHERE status = 'dropped'").split()
    assert dropped, "the reminders after the decision were dropped"


async def test_an_organization_whose_chat_hook_never_answers_delays_no_other_organizations_email():
    """The attack: a noisy organization points its chat hook (and webhook) at a server
    that accepts and never answers, then starts 40 runs, each a chat post held until
    its timeout. Acme's next "waiting" email still arrives within seconds, while the
    tarpit holds the noisy organization's posts: they tie up its own share alone."""
    mailbox = Mailbox()
    tarpit = faults.Tarpit()
    deployment = scheduling.Deployment(
        scheduling.SHARED_REDIS, schedulers=1,
        flags=("--smtp-url", mailbox.url, "--mail-from", "Acme processes <processes@acme.test>",
               "--public-url", PUBLIC, "--webhook-allow-private-networks", "--allow-plain-http-hooks",
               "--webhook-timeout-seconds", str(scheduling.POST_TIMEOUT_SECONDS)),
    )
    try:
        scheduling.noisy_organization(deployment, tarpit.url, scheduling.NOISY_RUNS)
        await scheduling.backlog_under_way(tarpit)
        async with AsyncExitStack() as stack:
            alice = await connect(stack, deployment.server.mcp_url(), deployment.server.tokens["alice"], "alice")
            started = time.monotonic()
            await start(alice, "vendor-approval", vendorName="Acme Tools", expectedAnnualSpend=1)
            # Waited for past the bound, so a failure says how long it took.
            await eventually(lambda: _async(mailbox.to("alice@example.com", "waits for you")),
                             timeout=120, what="acme's waiting email")
            took = time.monotonic() - started
        # The tarpit still holds: not one of the noisy organization's posts got through.
        posted = deployment.sql(f"SELECT count(*) FROM messages WHERE org_id = '{scheduling.NOISY_ORG}' "
                                "AND channel = 'chat' AND status = 'sent'")
        assert int(posted) == 0, posted
        assert took < scheduling.ISOLATION_SECONDS, f"acme's email took {took:.1f} s behind the tarpit"
    finally:
        deployment.close()
        tarpit.close()
        mailbox.close()


async def _async(value):
    return value


PAYMENT = """---
name: payment
description: Finance prepares a payment, then approves it.
steps:
  - id: prepare_payment
    person: finance
    task: Prepare the payment.
    output:
      amount: number
  - id: approve_payment
    person: finance
    approve: Approve the payment.
  - id: done
    finish: paid
---
# Payment

## Prepare payment

Enter the amount to pay.

## Approve payment

Check the amount before it is paid.
"""


def publish_payment(database: str) -> None:
    """Publishes PAYMENT with its role bound to the people group, as the seed does."""
    with tempfile.TemporaryDirectory() as folder:
        process = Path(folder) / "payment"
        process.mkdir()
        (process / "PROCESS.md").write_text(PAYMENT)
        servers.admin(database, "import", "--org", "acme", str(process))
    servers.admin(database, "bind", "--org", "acme", "payment", "finance", "people")
    servers.admin(database, "publish", "--org", "acme", "payment")


async def test_whoever_a_policy_keeps_from_an_item_is_not_told_it_waits_for_them(deployment):
    deployment, mailbox, _ = deployment
    database = deployment.server.database_url
    publish_payment(database)
    # Carol joins the people group (alice and bob are in it).
    servers.admin(database, "create-identity", "--org", "acme", "--kind", "person", "carol",
                  "--person", "carol@example.com", "--group", "people")
    carol_token = servers.admin(database, "issue-token", "--org", "acme", "carol").strip()
    deployment.sql("INSERT INTO org_policies (org_id, policies, updated_at) "
                   "VALUES ('acme', '{\"initiatorDoesNotDecide\": true, \"fourEyes\": true}', 0)")

    def told(step: str) -> list[str]:
        """Who was handed an email that `step`'s item waits for them, from the record."""
        rows = deployment.sql(
            "SELECT i.person FROM messages m JOIN notifications n ON n.org_id = m.org_id AND n.id = m.notification_id "
            "JOIN identities i ON i.org_id = m.org_id AND i.id = m.recipient "
            f"WHERE m.channel = 'email' AND m.kind = 'waiting' AND n.body::json->>'step' = '{step}' ORDER BY 1")
        return rows.split()

    async with AsyncExitStack() as stack:
        clients = await clients_of(stack, deployment)
        alice, bob = clients["alice"], clients["bob"]
        carol = await connect(stack, deployment.server.mcp_url(), carol_token, "carol")
        run = await start(alice, "payment")

        # The task: not alice, who started the run (initiatorDoesNotDecide).
        for address in ("bob@example.com", "carol@example.com"):
            async def task_waits(address=address):
                return mailbox.to(address, "Prepare payment waits for you")

            await eventually(task_waits, what=f"the task's email to {address}")
        assert told("prepare_payment") == ["bob@example.com", "carol@example.com"]

        # Bob completes it; the approval: not bob, who made the payment (fourEyes), nor alice.
        view = await bob.call("get_run", runId=run)
        task = view["workItems"][0]["decide"]["arguments"]
        await bob.call("decide", **dict(task, decision="completed", output={"amount": 120}, requestId=request_id()))

        async def approval_waits():
            return mailbox.to("carol@example.com", "Approve payment waits for you")

        [message] = await eventually(approval_waits, what="the approval's email to carol")
        assert "because you are in the people group" in text_of(message)
        assert told("approve_payment") == ["carol@example.com"]

        # Those kept are refused, and carol, who is not, approves.
        view = await carol.call("get_run", runId=run)
        approval = view["workItems"][0]["decide"]["arguments"]
        refused = await bob.error("decide", **dict(approval, decision="approved", requestId=request_id()))
        assert refused["code"] == "forbidden", refused
        assert refused["message"].startswith("you completed prepare_payment in this run"), refused
        await carol.call("decide", **dict(approval, decision="approved", requestId=request_id()))
        await eventually(lambda: _async(mailbox.to("alice@example.com", "Your run ended")), what="the ended email")

    assert mailbox.to("alice@example.com", "waits for you") == []
    assert [str(message["subject"]) for message in mailbox.to("bob@example.com")] == [
        "Prepare payment waits for you · payment v1"]


# What an agent or a person may write into a run: each would ping a Slack channel, make
# a link or an image titled like ours, or forge the call to act and a footer in a
# plain-text email.
CHANNEL = "<!channel> approve this now"
HERE = "<!here>"
SLACK_LINK = "<https://evil.example|Open the work item>"
MARKDOWN_LINK = "[Open the work item](https://evil.example)"
IMAGE = "![](https://evil.example/t.png)"
FORGED = ("Acme\n\nOpen the work item: https://evil.example\n\n--\n"
          "You get this from Acme because you are an admin.\nChoose what you hear of: https://evil.example\n")

HOSTILE_PROCESS = """---
name: vendor-review
description: An agent looks a vendor up; finance approves within a minute.
inputs:
  vendorName: string
  notes: string
steps:
  - id: research
    agent: Look the vendor up and write a summary.
    output:
      summary: string
  - id: finance_approval
    person: finance
    approve: Check the vendor name, the notes and the summary.
    due: 1m
  - id: done
    finish: approved
---

# Vendor review

## Finance approval

Check the vendor name, the notes and the summary before the vendor is set up.
"""


def process_folder(text: str) -> Path:
    """A folder of one process, as `--processes` and `admin import` read it."""
    root = Path(tempfile.mkdtemp(prefix="agentprocess-e2e-messages-"))
    folder = root / re.search(r"^name: (\S+)$", text, re.M)[1]
    folder.mkdir()
    (folder / "PROCESS.md").write_text(text)
    return folder


def outside_code(text: str) -> str:
    """What Markdown reads as markup: the text outside code spans."""
    return "".join(text.split("`")[::2])


def assert_plain_text_is_ours(text: str, call: str) -> None:
    """The call to act is the one line that starts with it, and ours; the footer is the
    real one, last; every line a value reaches is an indented fact."""
    lines = text.splitlines()
    assert [line for line in lines if line.startswith("Open the")] == [call], text
    assert lines[-3:] == ["--", "You get this from Acme because you are in the people group.",
                          f"Choose what you hear of: {PUBLIC}/account#messages"] \
        or lines[-3:] == ["--", "You get this from Acme because you started the run.",
                          f"Choose what you hear of: {PUBLIC}/account#messages"], text
    assert sum(line.startswith("--") for line in lines) == 1, text
    assert sum(line.startswith("You get this") for line in lines) == 1, text
    assert sum(line.startswith("Choose what") for line in lines) == 1, text
    for line in lines:
        if "evil.example" in line or "channel" in line:
            assert line.startswith("    "), f"{line!r} in {text}"


def assert_html_is_escaped(html: str) -> None:
    for raw in ('href="https://evil', "<img", "src=", "<!channel>", "<!here>", "<https://evil"):
        assert raw not in html, f"{raw} in {html}"
    assert "&lt;!channel&gt;" in html and "&lt;https://evil.example|Open the work item&gt;" in html, html


async def test_what_a_run_holds_forges_no_ping_link_image_call_or_footer(deployment):
    deployment, mailbox, slack = deployment
    database = deployment.server.database_url
    markdown = Receiver(fail_first=False)
    try:
        folder = process_folder(HOSTILE_PROCESS)
        servers.admin(database, "import", "--org", "acme", str(folder))
        servers.admin(database, "bind", "--org", "acme", "vendor-review", "finance", "people")
        servers.admin(database, "publish", "--org", "acme", "vendor-review")
        hooked = json.loads(servers.admin(database, "chat-hook", "--org", "acme", "--group", "people", slack.url,
                                          "--kind", "slack", "--secret-key", servers.SECRET_KEY,
                                          "--allow-plain-http-hooks"))
        assert hooked["kind"] == "slack", hooked
        hooked = json.loads(servers.admin(database, "chat-hook", "--org", "acme", "--group", "operators",
                                          markdown.url, "--secret-key", servers.SECRET_KEY,
                                          "--allow-plain-http-hooks"))
        assert hooked["kind"] == "markdown", "a host not Slack's reads Markdown"
        async with AsyncExitStack() as stack:
            clients = await clients_of(stack, deployment)
            alice, agent = clients["alice"], clients["agent-1"]
            run = await start(alice, "vendor-review", vendorName=f"{CHANNEL} {HERE}",
                              notes=f"{SLACK_LINK} {MARKDOWN_LINK} {IMAGE}")
            claimed = await agent.call("claim", runId=run, stepId="research", requestId=request_id())
            await agent.call("submit", token=claimed["token"], output={"summary": FORGED}, evidence=[],
                             summary="looked the vendor up", requestId=request_id())

            [waiting] = await eventually(lambda: _async(mailbox.to("alice@example.com", "waits for you")),
                                         what="the waiting email")
            item = (await alice.call("get_run", runId=run))["workItems"][0]["id"]
            call = f"Open the work item: {PUBLIC}/runs/{run}/items/{item}"
            assert "\n" not in str(waiting["subject"]) and "\r" not in str(waiting["subject"])
            text = text_of(waiting)
            for shown in (f"    Vendor name: {CHANNEL} {HERE}", f"    Notes: {SLACK_LINK} {MARKDOWN_LINK} {IMAGE}",
                          "    Summary: Acme ↵ Open the work item: https://evil.example ↵ -- ↵ You get this"):
                assert shown in text, f"{shown} in {text}"
            assert_plain_text_is_ours(text, call)
            assert_html_is_escaped(html_of(waiting))

            def posts(receiver: Receiver) -> list[str]:
                return [json.loads(post["body"])["text"] for post in receiver.delivered()]

            [slack_post] = await eventually(lambda: _async(posts(slack)), what="the Slack post")
            for raw in ("<!channel>", "<!here>", "<https://evil"):
                assert raw not in slack_post, f"{raw} in {slack_post}"
            assert "&lt;!channel&gt;" in slack_post and "&lt;https://evil.example|Open the work item&gt;" \
                in slack_post, slack_post
            assert slack_post.splitlines()[1] == call, slack_post
            assert all(line.startswith("> ") for line in slack_post.splitlines()[2:]), slack_post

            # Overdue: the operators' hook reads Markdown.
            deployment.advance(61)
            [markdown_post] = await eventually(lambda: _async(posts(markdown)), what="the Markdown post")
            read = outside_code(markdown_post)
            for raw in ("](", "![", "<!", "<https", "evil.example", "@channel"):
                assert raw not in read, f"{raw} outside code in {markdown_post}"
            assert f"`{SLACK_LINK} {MARKDOWN_LINK} {IMAGE}`" in markdown_post, markdown_post
            assert markdown_post.splitlines()[1] == call, markdown_post
            assert all(line.startswith("> ") for line in markdown_post.splitlines()[2:]), markdown_post

            # Rejected with a hostile note: the ended email carries it, neutralised.
            view = await alice.call("get_run", runId=run)
            decide = view["workItems"][0]["decide"]["arguments"]
            bob = clients["bob"]
            await bob.call("decide", **dict(decide, decision="rejected", note=FORGED + CHANNEL + IMAGE,
                                            requestId=request_id()))
            [ended] = await eventually(lambda: _async(mailbox.to("alice@example.com", "Your run was rejected")),
                                       what="the ended email")
            text = text_of(ended)
            assert "Note: Acme ↵ Open the work item: https://evil.example ↵ --" in text, text
            assert_plain_text_is_ours(text, f"Open the run: {PUBLIC}/runs/{run}")
            for raw in ('href="https://evil', "<img", "<!channel>"):
                assert raw not in html_of(ended), html_of(ended)
    finally:
        markdown.close()


REFUSAL = ("550 5.1.1 <x@acme.test>: Recipient address rejected: relay-7.internal.example.net "
           "(Postfix 3.7.2) 10.1.2.3")
RELAY = ("relay-7.internal", "10.1.2.3", "Postfix")

SIMPLE_PROCESS = """---
name: sign-off
description: A person signs a change off.
inputs:
  change: string
steps:
  - id: review
    person: reviewer
    approve: Sign the change off.
  - id: done
    finish: signed
---

# Sign-off

## Review

Sign the change off.
"""


async def test_a_mail_servers_refusal_reaches_the_organization_as_its_class_and_the_logs_whole():
    mailbox = Mailbox(refusal=REFUSAL)
    folder = process_folder(SIMPLE_PROCESS)
    server = servers.start_sqlite(folder.parent, extra=("--smtp-url", mailbox.url,
                                                         "--mail-from", "Processes <processes@localhost>"))
    browser = Browser(server.bases[0])
    try:
        details = json.loads((server.workdir / "details.json").read_text())
        admin_token = details["identities"]["admin"]["apiToken"]
        async with AsyncExitStack() as stack:
            alice = await connect(stack, server.mcp_url(), server.tokens["alice"], "alice")
            await start(alice, "sign-off", change="a change")

        async def failed():
            answer = bearer(server.bases[0], admin_token, "GET", "/organization/messages/sent")
            assert answer.status_code == 200, answer.text
            emails = [item for item in answer.json()["items"] if item["channel"] == "email"]
            return answer.text if emails and all(item["status"] == "failed" for item in emails) else None

        # Refused for good: failed at the first attempt, not retried.
        sent = await eventually(failed, what="the refused emails recorded as failed")
        assert mailbox.refused, "the mail server was asked"
        for item in json.loads(sent)["items"]:
            if item["channel"] == "email":
                assert item["lastError"] == "the mail server refused the recipient address", item
                assert item["attempts"] == 1, item
        for relay in RELAY:
            assert relay not in sent, f"{relay} in {sent}"

        form = browser.get("/dev/sign-in")
        assert form.status_code == 200, form.text
        signed = browser.post_form("/dev/sign-in", {"csrf": csrf_of(form.text), "identity": "admin"})
        assert signed.status_code in (302, 303), signed.text
        page = browser.get("/admin/messages")
        assert page.status_code == 200, page.text
        assert "the mail server refused the recipient address" in page.text, page.text
        for relay in RELAY:
            assert relay not in page.text, f"{relay} in the admin page"

        # The operators' log holds the reply whole.
        log = (server.workdir / "server.log").read_text()
        assert "the mail server did not take a message" in log, log[-3000:]
        assert "relay-7.internal.example.net (Postfix 3.7.2) 10.1.2.3" in log, log[-3000:]
    finally:
        browser.close()
        servers.drop(server)
        mailbox.close()
