"""Messages to people: the scheduler hands each notification of the outbox to the
people it concerns and sends them by email, through a real SMTP server on loopback
(aiosmtpd), and to the group's Slack-compatible chat hook (a local receiver). The
group's members hear that work waits; the group and every operator hear it went
overdue, and again as a reminder while it stays so; a person who turned them off hears
nothing; once decided, the reminders stop and the initiator hears the run ended."""

from __future__ import annotations

import email
import email.policy
import json
import threading
from contextlib import AsyncExitStack

import anyio
import pytest
from aiosmtpd.controller import Controller

import scheduling
import servers
from client import request_id
from test_scheduler import clients_of, eventually, start
from test_webhooks import Receiver

pytestmark = pytest.mark.anyio

PUBLIC = "https://processes.acme.test"


class Mailbox:
    """What a real SMTP server on loopback received: (recipients, parsed message)."""

    def __init__(self) -> None:
        self.received: list[tuple[list[str], email.message.EmailMessage]] = []
        self.lock = threading.Lock()
        self.controller = Controller(self, hostname="127.0.0.1", port=servers.free_port())
        self.controller.start()
        self.url = f"smtp://127.0.0.1:{self.controller.port}"

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
    assert hooked == {"group": "people", "host": "127.0.0.1"}
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


async def _async(value):
    return value
