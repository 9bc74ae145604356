"""Evidence in S3: an API process whose uploads go to a real S3-compatible server
(s3s-fs, started by each test on a free port over a directory of its own). Upload,
cite, fetch through the run data's URL; tampering behind the server's back; another
organization's upload; refused uploads store nothing; S3 down is `retry`, and back
it works."""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

import rawmcp
import servers
from client import connect, request_id
from rawmcp import post_form

pytestmark = pytest.mark.anyio

S3S_FS = Path(os.environ.get("AGENTPROCESS_S3S_FS",
                             Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                             / "agentprocess" / "s3s-fs" / "bin" / "s3s-fs"))
PROCESSES = Path(__file__).resolve().parent / "processes"
BUCKET = "evidence"


class S3:
    """s3s-fs on a free port; objects are files under `root/<bucket>/<key>`."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="agentprocess-e2e-s3-"))
        self.port = servers.free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(
            [str(S3S_FS), "--host", "127.0.0.1", "--port", str(self.port), "--access-key", "K",
             "--secret-key", "S", str(self.root)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(self.endpoint, timeout=1)
                return
            except urllib.error.HTTPError:
                return  # answering (403 without a signature)
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("s3s-fs did not start")
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)

    def objects(self) -> list[Path]:
        bucket = self.root / BUCKET
        return sorted(p for p in bucket.rglob("*") if p.is_file() and not p.name.startswith(".")) \
            if bucket.exists() else []

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def s3_api(s3: S3, keys: tuple[str, ...] = ("--s3-access-key-id", "K", "--s3-secret-access-key", "S"),
           env: dict | None = None) -> servers.Server:
    """An API process over a fresh database with its evidence in `s3`."""
    database, url, tokens, persons = servers.seed_postgres([PROCESSES / "filed"])
    workdir = Path(tempfile.mkdtemp(prefix="agentprocess-e2e-s3api-"))
    port = servers.free_port()
    server = servers.Server("postgres", [f"http://127.0.0.1:{port}"], tokens, persons, database, url, "acme", workdir)
    log = open(workdir / "api.log", "ab")
    api = subprocess.Popen(
        servers.api_command(url, port, secrets.token_bytes(32), workdir,
                            "--s3-bucket", BUCKET, "--s3-endpoint", s3.endpoint, "--s3-path-style", *keys,
                            "--s3-create-bucket", "--s3-timeout-seconds", "2", "--max-upload-bytes", "100000",
                            "--uncited-upload-seconds", "3600", "--upload-sweep-seconds", "0.2"),
        stdout=log, stderr=subprocess.STDOUT, env=env,
    )
    server.processes = [api]
    try:
        servers.wait_ready(server.base, api)
    except RuntimeError:
        servers.drop(server)
        raise
    return server


@pytest.fixture
def s3_server():
    s3 = S3()
    server = s3_api(s3)
    yield server, s3
    servers.drop(server)
    s3.close()


@pytest.mark.parametrize("secret, works", [("S", True), ("wrong", False)])
def test_without_keys_the_default_aws_chain_finds_credentials(secret, works):
    """No --s3-* keys: the AWS default chain is used (here its environment variables,
    as an EKS pod's web identity or an instance profile would be elsewhere)."""
    s3 = S3()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    # The bucket is made by an API with keys first, as a bucket's owner would.
    servers.drop(s3_api(s3))
    env.update(AWS_ACCESS_KEY_ID="K", AWS_SECRET_ACCESS_KEY=secret, AWS_EC2_METADATA_DISABLED="true")
    try:
        server = s3_api(s3, keys=(), env=env)
    except RuntimeError:
        assert not works, "the API did not start with credentials from the environment"
        s3.close()
        return
    try:
        uploaded = rawmcp.call(server.base, server.tokens["agent-1"], "upload",
                               {"fileName": "a.txt", "contentType": "text/plain", "contentBase64": b64(b"chain"),
                                "requestId": request_id()})
        if works:
            assert uploaded["ok"], uploaded
            assert [p.read_bytes() for p in s3.objects()] == [b"chain"]
        else:
            assert uploaded["ok"] is False and uploaded["error"]["code"] == "retry", uploaded
            assert s3.objects() == []
    finally:
        servers.drop(server)
        s3.close()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def agent_and_alice(stack: AsyncExitStack, server):
    agent = await connect(stack, server.mcp_url(), server.tokens["agent-1"], "agent-1")
    alice = await connect(stack, server.mcp_url(), server.tokens["alice"], "alice")
    return agent, alice


async def claimed(agent, alice) -> tuple[str, dict]:
    view = await alice.call("start_run", process="filed", inputs={}, requestId=request_id())
    run_id = view["run"]["id"]
    claim = await agent.call("claim", runId=run_id, stepId="file", requestId=request_id())
    return run_id, claim


async def test_upload_cite_and_fetch_the_same_bytes(s3_server):
    server, s3 = s3_server
    document = secrets.token_bytes(40_000)
    async with AsyncExitStack() as stack:
        agent, alice = await agent_and_alice(stack, server)
        uploaded = await agent.call("upload", fileName="signed.pdf", contentType="application/pdf",
                                    contentBase64=b64(document), requestId=request_id())
        assert uploaded["sha256"] == hashlib.sha256(document).hexdigest()
        assert uploaded["bytes"] == len(document)
        assert [p.read_bytes() for p in s3.objects()] == [document], "stored in the bucket"
        run_id, claim = await claimed(agent, alice)
        await agent.call("submit", token=claim["token"], output={"title": "Signed"}, summary="Filed.",
                         evidence=[{"kind": "file", "ref": uploaded["id"]}], requestId=request_id())
        view = await alice.call("get_run", runId=run_id)
    item = view["data"]["steps"]["file"]["evidence"][0]
    assert item["sha256"] == uploaded["sha256"]
    # The run data's URL: signed by the server, redirecting to a presigned GET of S3.
    with urllib.request.urlopen(item["url"], timeout=10) as response:
        assert response.status == 200
        assert response.url.startswith(s3.endpoint) and "X-Amz-Signature" in response.url
        assert response.headers["content-disposition"] == 'attachment; filename="signed.pdf"'
        assert response.read() == document


async def test_bytes_changed_behind_the_servers_back_are_a_hash_mismatch(s3_server):
    server, s3 = s3_server
    async with AsyncExitStack() as stack:
        agent, alice = await agent_and_alice(stack, server)
        uploaded = await agent.call("upload", fileName="a.txt", contentType="text/plain",
                                    contentBase64=b64(b"the original"), requestId=request_id())
        [stored] = s3.objects()
        stored.write_bytes(b"the forgery!")
        _, claim = await claimed(agent, alice)
        error = await agent.error("submit", token=claim["token"], output={"title": "T"}, summary="Filed.",
                                  evidence=[{"kind": "file", "ref": uploaded["id"]}], requestId=request_id())
    assert error["code"] == "not_accepted"
    assert f"evidence {uploaded['id']}: hash mismatch" in error["issues"]


async def test_another_organizations_upload_is_not_found(s3_server):
    server, s3 = s3_server
    intruder_token = servers.other_org(server)
    async with AsyncExitStack() as stack:
        intruder = await connect(stack, server.mcp_url(), intruder_token, "intruder")
        agent, alice = await agent_and_alice(stack, server)
        theirs = await intruder.call("upload", fileName="x.txt", contentType="text/plain",
                                     contentBase64=b64(b"theirs"), requestId=request_id())
        _, claim = await claimed(agent, alice)
        error = await agent.error("submit", token=claim["token"], output={"title": "T"}, summary="Filed.",
                                  evidence=[{"kind": "file", "ref": theirs["id"]}], requestId=request_id())
    assert error["code"] == "not_accepted"
    assert f"evidence {theirs['id']}: not found" in error["issues"]


async def test_refused_uploads_store_nothing(s3_server):
    server, s3 = s3_server
    async with AsyncExitStack() as stack:
        agent = await connect(stack, server.mcp_url(), server.tokens["agent-1"], "agent-1")
        too_big = await agent.error("upload", fileName="big.bin", contentType="application/octet-stream",
                                    contentBase64=b64(b"x" * 100_001), requestId=request_id())
        assert too_big["code"] == "invalid" and any("maxUploadBytes" in issue for issue in too_big["issues"])
        malformed = await agent.error("upload", fileName="a.txt", contentType="text/plain",
                                      contentBase64="***", requestId=request_id())
        assert malformed["code"] == "invalid"
        unsafe = await agent.error("upload", fileName="../a.txt", contentType="text/plain",
                                   contentBase64=b64(b"x"), requestId=request_id())
        assert unsafe["code"] == "invalid"
    assert s3.objects() == []
    count = servers.psql("SELECT count(*) FROM uploads", server.database).strip()
    assert count == "0"


async def test_s3_down_is_retry_and_back_it_works(s3_server):
    server, s3 = s3_server
    arguments = dict(fileName="a.txt", contentType="text/plain", contentBase64=b64(b"later"), requestId=request_id())
    async with AsyncExitStack() as stack:
        agent = await connect(stack, server.mcp_url(), server.tokens["agent-1"], "agent-1")
        s3.stop()
        started = time.monotonic()
        error = await agent.error("upload", **arguments)
        assert error["code"] == "retry"
        assert time.monotonic() - started < 10, "a down store is reported promptly"
        assert servers.psql("SELECT count(*) FROM uploads", server.database).strip() == "0", "nothing recorded"
        s3.start()
        uploaded = await agent.call("upload", **arguments)
    assert uploaded["bytes"] == len(b"later")
    assert [p.read_bytes() for p in s3.objects()] == [b"later"]


async def test_uploads_no_run_cites_are_removed_after_the_retention(s3_server):
    server, s3 = s3_server
    async with AsyncExitStack() as stack:
        agent, alice = await agent_and_alice(stack, server)
        cited = await agent.call("upload", fileName="kept.txt", contentType="text/plain",
                                 contentBase64=b64(b"kept"), requestId=request_id())
        await agent.call("upload", fileName="stray.txt", contentType="text/plain",
                         contentBase64=b64(b"stray"), requestId=request_id())
        _, claim = await claimed(agent, alice)
        await agent.call("submit", token=claim["token"], output={"title": "T"}, summary="Filed.",
                         evidence=[{"kind": "file", "ref": cited["id"]}], requestId=request_id())
        assert len(s3.objects()) == 2
        # Younger than the retention: both stay.
        time.sleep(0.6)
        assert len(s3.objects()) == 2
        server.advance(3601)
        deadline = time.monotonic() + 10
        while len(s3.objects()) != 1 and time.monotonic() < deadline:
            time.sleep(0.1)
    assert [p.read_bytes() for p in s3.objects()] == [b"kept"], "the uncited upload went, the cited one stayed"
    rows = servers.psql("SELECT id FROM uploads", server.database).split()
    assert rows == [cited["id"]]


async def test_a_person_uploads_through_rest_multipart_under_the_same_rules(s3_server):
    server, s3 = s3_server
    url = f"{server.base}/v1/uploads"
    person = {"Authorization": f"Bearer {server.tokens['alice']}"}
    key = request_id()
    receipt = [("file", "receipt.pdf", b"%PDF receipt", "application/pdf")]
    status, first = post_form(url, {**person, "Idempotency-Key": key}, receipt)
    assert status == 201, first
    status, again = post_form(url, {**person, "Idempotency-Key": key}, receipt)
    assert (status, again) == (201, first), "a replay answers with the first result"
    data = first["data"]
    assert data["sha256"] == hashlib.sha256(b"%PDF receipt").hexdigest() and data["bytes"] == 12
    assert [p.read_bytes() for p in s3.objects()] == [b"%PDF receipt"]

    status, refused = post_form(url, person, [("note", None, b"no file", None)])
    assert status == 400 and refused["error"]["code"] == "invalid"
    issues = refused["error"]["issues"]
    assert any(issue.startswith("Idempotency-Key:") for issue in issues), issues
    assert any(issue.startswith("file: required") for issue in issues), issues
    status, too_big = post_form(url, {**person, "Idempotency-Key": request_id()},
                                [("file", "big.bin", b"x" * 100_001, "application/octet-stream")])
    assert status == 400 and any("maxUploadBytes" in issue for issue in too_big["error"]["issues"])
    status, _ = post_form(url, {**person, "Idempotency-Key": request_id()}, [("file", "../a.txt", b"x", "text/plain")])
    assert status == 400
    status, _ = post_form(url, {}, receipt)
    assert status == 401
    assert len(s3.objects()) == 1, "refused uploads stored nothing"

    # The agent cites the person's upload: same organization, same record.
    async with AsyncExitStack() as stack:
        agent, alice = await agent_and_alice(stack, server)
        run_id, claim = await claimed(agent, alice)
        await agent.call("submit", token=claim["token"], output={"title": "Receipt"}, summary="Filed.",
                         evidence=[{"kind": "file", "ref": data["id"]}], requestId=request_id())
        view = await alice.call("get_run", runId=run_id)
    assert view["data"]["steps"]["file"]["evidence"][0]["sha256"] == data["sha256"]
