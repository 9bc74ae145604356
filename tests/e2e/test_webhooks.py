"""Webhooks: the scheduler posts each notification to the organization's endpoints,
signed (Standard Webhooks: HMAC-SHA256 over id, timestamp and body), retries after a
failure, records where each delivery stands, and sends nothing for test-mode runs.

The receiver is a local HTTP server of the test's own that answers 500 to the first
attempt of every notification."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import secrets
import threading
import time
from contextlib import AsyncExitStack

import anyio
import pytest

import faults
import scheduling
import servers
from client import connect, request_id
from test_scheduler import clients_of, eventually, start

pytestmark = pytest.mark.anyio


class Receiver:
    """Collects posts; fails the first attempt of each `webhook-id` with a 500 (unless
    not `fail_first`)."""

    def __init__(self, fail_first: bool = True) -> None:
        self.posts: list[dict] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (the standard library's name)
                body = self.rfile.read(int(self.headers["content-length"])).decode()
                headers = {name.lower(): value for name, value in self.headers.items()}
                with receiver.lock:
                    first = fail_first and not any(
                        p["headers"]["webhook-id"] == headers.get("webhook-id") for p in receiver.posts)
                    receiver.posts.append({"headers": headers, "body": body, "answered": 500 if first else 204,
                                           "at": time.time()})
                self.send_response(500 if first else 204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def delivered(self) -> list[dict]:
        with self.lock:
            return [p for p in self.posts if p["answered"] == 204]

    def close(self) -> None:
        self.server.shutdown()


def verify(secret: str, post: dict) -> dict:
    """The Standard Webhooks check a receiver makes; returns the parsed body."""
    headers = post["headers"]
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.{post['body']}".encode()
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    versions = dict(part.split(",", 1) for part in headers["webhook-signature"].split())
    assert hmac.compare_digest(versions["v1"], expected), "signature verifies"
    assert headers["content-type"] == "application/json"
    return json.loads(post["body"])


@pytest.fixture
def setup():
    # Three attempts, so giving up is seen within a test; the receiver is on loopback,
    # over plain http.
    deployment = scheduling.Deployment(
        scheduling.SHARED_REDIS, schedulers=1,
        flags=("--webhook-max-attempts", "3", "--webhook-allow-private-networks", "--allow-plain-http-hooks"),
    )
    receiver = Receiver()
    added = servers.add_webhook(deployment.server.database_url, receiver.url)
    yield deployment, receiver, added
    receiver.close()
    deployment.close()


async def test_notifications_are_signed_retried_and_recorded(setup):
    deployment, receiver, webhook = setup
    assert webhook["secret"].startswith("whsec_")
    async with AsyncExitStack() as stack:
        clients = await clients_of(stack, deployment)
        alice = clients["alice"]
        live = await start(alice, "signoff")
        rehearsal = await start(alice, "signoff")
        test_view = await alice.call("start_run", process="signoff", inputs={}, mode="test", requestId=request_id())
        test_run = test_view["run"]["id"]
        del rehearsal

        async def created():
            return [verify(webhook["secret"], p) for p in receiver.delivered()
                    if json.loads(p["body"])["type"] == "work_item.created"]

        bodies = await eventually(lambda: _at_least(created, 2), what="work items delivered")
        body = next(b for b in bodies if b["run"]["id"] == live)
        assert body["organization"] == "acme"
        assert body["run"]["process"] == "signoff"
        assert body["step"] == "review"
        assert body["workItem"]["assignedTo"] == {"group": "people"}
        assert body["workItem"]["url"].endswith(f"/runs/{live}/items/{body['workItem']['id']}"), body
        assert "inputs" not in json.dumps(body), "no run data in a notification"

        # Every delivered notification was refused once first, then retried.
        with receiver.lock:
            attempts = [p["headers"]["webhook-id"] for p in receiver.posts if p["headers"]["webhook-id"] == body["id"]]
        assert len(attempts) == 2

        # Overdue, then ended: one notification each.
        deployment.advance(2 * 3600 + 60)

        async def overdue():
            return [b for b in map(lambda p: verify(webhook["secret"], p), receiver.delivered())
                    if b["type"] == "step.overdue" and b["run"]["id"] == live]

        assert len(await eventually(overdue, what="overdue delivered")) == 1
        work = await alice.call("get_run", runId=live)
        item = next(i for i in work["workItems"])
        await alice.call("decide", **dict(item["decide"]["arguments"], decision="approved", requestId=request_id()))

        async def ended():
            return [b for b in map(lambda p: verify(webhook["secret"], p), receiver.delivered())
                    if b["type"] == "run.ended" and b["run"]["id"] == live]

        ended_bodies = await eventually(ended, what="run end delivered")
        assert ended_bodies[0]["state"] == "ended" and ended_bodies[0]["outcome"] == "signed"

        # The test-mode run made no notification at all, and nothing was posted for it.
        await anyio.sleep(0.5)
        assert deployment.sql(f"SELECT count(*) FROM notifications WHERE run_id = '{test_run}'").strip() == "0"
        with receiver.lock:
            assert not any(json.loads(p["body"])["run"]["id"] == test_run for p in receiver.posts)

    # The record: every delivery delivered on its second attempt, after a 500.
    await anyio.sleep(0.2)
    listing = servers.admin(deployment.server.database_url, "deliveries", "--org", "acme")
    rows = [line.split("\t") for line in listing.splitlines()]
    assert rows and all(row[4] == "delivered" for row in rows), listing
    assert all(row[5] == "2 attempt(s)" for row in rows), listing
    assert all(row[3] == webhook["id"] for row in rows)


async def _at_least(check, count: int):
    found = await check()
    return found if len(found) >= count else None


async def test_a_failing_endpoint_is_given_up_after_the_last_attempt(setup):
    deployment, receiver, webhook = setup
    database = deployment.server.database_url
    servers.admin(database, "remove-webhook", "--org", "acme", webhook["id"])
    dead = servers.add_webhook(database, "http://127.0.0.1:9/nothing-listens")
    # Refused: not a URL a delivery could go to.
    for bad in ["ftp://example.com/x", "not a url", "http://user:pw@example.com/"]:
        with pytest.raises(RuntimeError, match="url:"):
            servers.add_webhook(database, bad)
    async with AsyncExitStack() as stack:
        alice = (await clients_of(stack, deployment))["alice"]
        await start(alice, "signoff")
    # Three attempts, 0.3 s then 0.6 s apart: given up within a few seconds.
    listing = await deliveries_once(database, lambda listing: "failed" in listing)
    row = listing.splitlines()[0].split("\t")
    assert row[3] == dead["id"] and row[4] == "failed", listing
    assert row[5] == "3 attempt(s)" and row[6] == "-" and row[7] != "-", listing
    assert receiver.delivered() == []


async def deliveries_once(database: str, done, timeout: float = 10) -> str:
    """The `admin deliveries` listing once `done(listing)` holds (or at the timeout)."""
    started = time.monotonic()
    while True:
        listing = servers.admin(database, "deliveries", "--org", "acme")
        if done(listing) or time.monotonic() - started > timeout:
            return listing
        await anyio.sleep(0.1)


@pytest.fixture
def guarded():
    """A scheduler with the default guard: no webhooks to private networks (plain http
    allowed, so that the address guard is what refuses)."""
    deployment = scheduling.Deployment(scheduling.SHARED_REDIS, schedulers=1,
                                       flags=("--webhook-max-attempts", "1", "--allow-plain-http-hooks"))
    receiver = Receiver()
    yield deployment, receiver
    receiver.close()
    deployment.close()


async def test_endpoints_on_private_networks_are_refused_by_default(guarded):
    deployment, receiver = guarded
    database = deployment.server.database_url
    loopback = servers.add_webhook(database, receiver.url)
    named = servers.add_webhook(database, receiver.url.replace("127.0.0.1", "localhost"))
    async with AsyncExitStack() as stack:
        alice = (await clients_of(stack, deployment))["alice"]
        await start(alice, "signoff")
    listing = await deliveries_once(database, lambda listing: listing.count("failed") == 2)
    rows = {row[3]: row for row in (line.split("\t") for line in listing.splitlines())}
    assert rows[loopback["id"]][4] == "failed" and "not a public address" in rows[loopback["id"]][7], listing
    assert rows[named["id"]][4] == "failed" and "no public address" in rows[named["id"]][7], listing
    assert receiver.posts == [], "nothing reached the receiver"


@pytest.fixture
def https_only():
    """A scheduler that may reach loopback but, by default, only over https."""
    deployment = scheduling.Deployment(scheduling.SHARED_REDIS, schedulers=1,
                                       flags=("--webhook-max-attempts", "1", "--webhook-allow-private-networks"))
    receiver = Receiver()
    yield deployment, receiver
    receiver.close()
    deployment.close()


async def test_plain_http_hooks_are_refused_when_set_and_not_posted_to_when_kept(https_only):
    """A hook's URL is a credential: `agentprocess admin` refuses plain http ones in
    words, as the servers do, and keeps nothing; an endpoint kept from before (set here
    with the flag, as an older server took it) is not posted to by a scheduler without
    --allow-plain-http-hooks: the delivery says why, and nothing reaches the receiver."""
    deployment, receiver = https_only
    database = deployment.server.database_url
    for command in (("add-webhook", "--org", "acme"), ("chat-hook", "--org", "acme", "--group", "people")):
        with pytest.raises(RuntimeError, match="url: must be an https:// URL"):
            servers.admin(database, *command, receiver.url, "--secret-key", servers.SECRET_KEY)
    assert deployment.sql("SELECT count(*) FROM webhooks").strip() == "0"
    assert deployment.sql("SELECT count(*) FROM chat_hooks").strip() == "0"
    kept = servers.add_webhook(database, receiver.url)
    async with AsyncExitStack() as stack:
        alice = (await clients_of(stack, deployment))["alice"]
        await start(alice, "signoff")
    listing = await deliveries_once(database, lambda listing: "failed" in listing)
    row = listing.splitlines()[0].split("\t")
    assert row[3] == kept["id"] and row[4] == "failed", listing
    assert row[7].startswith("refused: the endpoint's URL must be an https:// URL"), listing
    assert receiver.posts == [], "nothing reached the receiver"


async def test_signing_secrets_are_kept_sealed_and_survive_a_key_rotation(setup):
    """The secret is kept sealed; after `agentprocess admin reseal` with a new key and
    the old one as previous, a scheduler given the new key alone signs with the same
    secret, so receivers notice nothing."""
    deployment, receiver, webhook = setup
    database = deployment.server.database_url
    kept = deployment.sql(f"SELECT secret FROM webhooks WHERE id = '{webhook['id']}'").strip()
    assert kept.startswith("v1.") and webhook["secret"] not in kept, "sealed, not in clear"
    new_key = base64.b64encode(secrets.token_bytes(32)).decode()
    # The new key alone cannot open it: the old one is needed as a previous key.
    with pytest.raises(RuntimeError, match="sealed with another secret key"):
        servers.admin(database, "reseal", "--secret-key", new_key)
    resealed = servers.admin(database, "reseal", "--secret-key", new_key, "--previous-secret-key", servers.SECRET_KEY)
    assert "resealed 1 webhook secret(s)" in resealed, resealed
    rekept = deployment.sql(f"SELECT secret FROM webhooks WHERE id = '{webhook['id']}'").strip()
    assert rekept.split(".")[1] != kept.split(".")[1], "sealed with the new key"
    again = servers.admin(database, "reseal", "--secret-key", new_key, "--previous-secret-key", servers.SECRET_KEY)
    assert "resealed 0 webhook secret(s)" in again, again

    deployment.kill_scheduler(0)
    deployment.secret_key = new_key
    deployment.start_scheduler(0)
    async with AsyncExitStack() as stack:
        alice = (await clients_of(stack, deployment))["alice"]
        run = await start(alice, "signoff")

    async def delivered():
        return [body for body in (verify(webhook["secret"], post) for post in receiver.delivered())
                if body["type"] == "work_item.created" and body["run"]["id"] == run]

    assert await eventually(delivered, what="delivered, signed with the same secret")


async def test_an_organization_whose_webhook_never_answers_delays_no_other_organizations_delivery():
    """The attack: a noisy organization points its webhook (and chat hook) at a server
    that accepts and never answers, then starts 40 runs, each a delivery held until
    its timeout. Acme's next delivery still arrives within seconds, while the tarpit
    holds the noisy organization's: they tie up its own share alone."""
    tarpit = faults.Tarpit()
    receiver = Receiver(fail_first=False)
    deployment = scheduling.Deployment(
        scheduling.SHARED_REDIS, schedulers=1,
        flags=("--webhook-allow-private-networks", "--allow-plain-http-hooks",
               "--webhook-timeout-seconds", str(scheduling.POST_TIMEOUT_SECONDS)),
    )
    try:
        servers.add_webhook(deployment.server.database_url, receiver.url)
        scheduling.noisy_organization(deployment, tarpit.url, scheduling.NOISY_RUNS)
        await scheduling.backlog_under_way(tarpit)
        async with AsyncExitStack() as stack:
            alice = await connect(stack, deployment.server.mcp_url(), deployment.server.tokens["alice"], "alice")
            started = time.time()
            run = await start(alice, "vendor-approval", vendorName="Acme Tools", expectedAnnualSpend=1)

            async def delivered():
                return [post for post in receiver.delivered() if json.loads(post["body"])["run"]["id"] == run]

            # Waited for past the bound, so a failure says how long it took.
            [post] = await eventually(delivered, timeout=120, what="acme's delivery")
        took = post["at"] - started
        # The tarpit still holds: not one of the noisy organization's deliveries got through.
        through = deployment.sql(f"SELECT count(*) FROM deliveries WHERE org_id = '{scheduling.NOISY_ORG}' "
                                 "AND status = 'delivered'")
        assert int(through) == 0, through
        assert took < scheduling.ISOLATION_SECONDS, f"acme's delivery took {took:.1f} s behind the tarpit"
    finally:
        deployment.close()
        receiver.close()
        tarpit.close()
