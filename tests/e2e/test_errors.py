"""Every error code of spec §4.3 provoked over MCP, and the protocol's error rules:
issues named all at once, failed calls change nothing."""

from __future__ import annotations

import base64
import contextlib

import anyio
import pytest

import servers
from client import request_id
from signin import Browser, csrf_of
from walk import fill

pytestmark = pytest.mark.anyio

PROCESS = "incident-postmortem"


async def started(clients, server, process: str = PROCESS) -> dict:
    listed = await clients["alice"].call("list_processes")
    inputs = next(item["inputs"] for item in listed["items"] if item["name"] == process)
    return await clients["alice"].call(
        "start_run", process=process, inputs=fill(inputs, server.persons), requestId=request_id()
    )


async def claimed(clients, server, agent: str = "agent-1") -> tuple[dict, dict]:
    view = await started(clients, server)
    run_id = view["run"]["id"]
    claim = await clients[agent].call("claim", runId=run_id, stepId="draft", requestId=request_id())
    return view, claim


def good_submission(claim: dict, server) -> dict:
    output = fill(claim["step"]["output"], server.persons)
    return {"output": output, "summary": "Drafted.", "evidence": [{"kind": "link", "ref": "doc-1"}]}


async def test_invalid_names_every_broken_argument_at_once(clients):
    error = await clients["agent-1"].error("get_work", limit=0, cursor=5, colour="red")
    assert error["code"] == "invalid"
    assert error["issues"] == [
        "limit: must be between 1 and 100", "cursor: expected a string", "colour: not an argument of get_work"
    ]
    error = await clients["agent-1"].error("get_run", runId=5)
    assert (error["code"], error["issues"]) == ("invalid", ["runId: expected a string"])


async def test_invalid_inputs_are_refused_with_every_issue_and_start_nothing(clients):
    before = await clients["alice"].call("list_runs", process=PROCESS, limit=100)
    error = await clients["alice"].error(
        "start_run", process=PROCESS, inputs={"incidentId": 7, "extra": True}, requestId=request_id()
    )
    assert error["code"] == "invalid"
    assert "inputs.extra: not declared" in error["issues"]
    assert "inputs.incidentOwner: missing" in error["issues"]
    assert any(issue.startswith("inputs.incidentId") for issue in error["issues"])
    after = await clients["alice"].call("list_runs", process=PROCESS, limit=100)
    assert after == before


async def test_an_agent_cannot_start_a_process_with_an_initiator_step(clients, server):
    listed = await clients["agent-1"].call("list_processes")
    inputs = next(i["inputs"] for i in listed["items"] if i["name"] == "expense-reimbursement")
    error = await clients["agent-1"].error(
        "start_run", process="expense-reimbursement", inputs=fill(inputs, server.persons), requestId=request_id()
    )
    assert error["code"] == "invalid"


async def test_a_token_that_does_not_verify_is_invalid(clients, server):
    _, claim = await claimed(clients, server)
    for token in ["nope", "r_unknown.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", claim["token"] + "x"]:
        error = await clients["agent-1"].error("renew", token=token, requestId=request_id())
        assert error["code"] == "invalid", (token, error)


async def test_not_accepted_lists_every_issue_and_keeps_the_claim(clients, server):
    view, claim = await claimed(clients, server)
    error = await clients["agent-1"].error(
        "submit", token=claim["token"], output={"bogus": 1}, summary="",
        evidence=[{"kind": "file", "ref": "f_000"}], requestId=request_id(),
    )
    assert error["code"] == "not_accepted"
    assert "summary: missing" in error["issues"]
    assert "output.bogus: not declared" in error["issues"]
    assert "evidence f_000: not found" in error["issues"]
    # The claim stands: the same token submits correctly, and the run moves on.
    done = await clients["agent-1"].call(
        "submit", token=claim["token"], requestId=request_id(), **good_submission(claim, server)
    )
    assert next(s for s in done["steps"] if s["id"] == "draft")["state"] == "done"


async def test_a_renewed_token_and_an_ended_lease_are_stale(clients, server):
    _, claim = await claimed(clients, server)
    renewed = await clients["agent-1"].call("renew", token=claim["token"], progress="half", requestId=request_id())
    error = await clients["agent-1"].error("submit", token=claim["token"], requestId=request_id(), **good_submission(claim, server))
    assert error["code"] == "stale"
    server.advance(601)
    error = await clients["agent-1"].error("renew", token=renewed["token"], requestId=request_id())
    assert error["code"] == "stale"


async def test_conflicts_claims_decisions_ended_runs_and_reused_request_ids(clients, server):
    view, claim = await claimed(clients, server)
    run_id = view["run"]["id"]
    mine = await clients["agent-1"].error("claim", runId=run_id, stepId="draft", requestId=request_id())
    theirs = await clients["agent-2"].error("claim", runId=run_id, stepId="draft", requestId=request_id())
    assert (mine["code"], mine["issues"]) == ("conflict", ["claimed_by_you"])
    assert (theirs["code"], theirs["issues"]) == ("conflict", ["claimed_by_other"])
    not_ready = await clients["agent-1"].error("claim", runId=run_id, stepId="register_actions", requestId=request_id())
    assert (not_ready["code"], not_ready["issues"]) == ("conflict", ["not_ready"])

    reused = request_id()
    await clients["agent-1"].call("submit", token=claim["token"], requestId=reused, **good_submission(claim, server))
    other = await clients["agent-1"].error("cancel", runId=run_id, reason="x", requestId=reused)
    assert other["code"] == "conflict"

    view = await clients["alice"].call("get_run", runId=run_id)
    item = view["workItems"][0]
    arguments = dict(item["decide"]["arguments"], decision="approved")
    await clients["alice"].call("decide", **dict(arguments, requestId=request_id()))
    again = await clients["alice"].error("decide", **dict(arguments, requestId=request_id()))
    assert (again["code"], again["issues"]) == ("conflict", ["already_decided"])

    await clients["ops"].call("cancel", runId=run_id, reason="Test over.", requestId=request_id())
    ended = await clients["ops"].error("cancel", runId=run_id, reason="Again.", requestId=request_id())
    assert (ended["code"], ended["issues"]) == ("conflict", ["run_ended"])


async def test_forbidden_for_identities_the_tool_is_not_for(clients, server):
    view, _ = await claimed(clients, server)
    run_id = view["run"]["id"]
    assert (await clients["agent-1"].error("cancel", runId=run_id, reason="x", requestId=request_id()))["code"] == "forbidden"
    assert (await clients["alice"].error("cancel", runId=run_id, reason="x", requestId=request_id()))["code"] == "forbidden"
    assert (await clients["alice"].error("send_event", runId=run_id, name="x", requestId=request_id()))["code"] == "forbidden"
    other = await started(clients, server)
    error = await clients["alice"].error("claim", runId=other["run"]["id"], stepId="draft", requestId=request_id())
    assert error["code"] == "forbidden"


async def test_not_found_in_this_organization(clients, server, intruder):
    assert (await clients["alice"].error("get_run", runId="r_missing"))["code"] == "not_found"
    error = await clients["alice"].error("start_run", process="no-such-process", inputs={}, requestId=request_id())
    assert error["code"] == "not_found"
    view = await started(clients, server)
    run_id = view["run"]["id"]
    assert (await intruder.error("get_run", runId=run_id))["code"] == "not_found"
    error = await intruder.error("claim", runId=run_id, stepId="draft", requestId=request_id())
    assert error["code"] == "not_found"
    assert (await intruder.call("list_runs"))["items"] == []
    assert (await intruder.call("list_processes"))["items"] == []


async def test_uploads_refuse_bad_names_bad_base64_and_too_many_bytes(clients):
    agent = clients["agent-1"]
    error = await agent.error("upload", fileName="../etc/passwd", contentType="text/plain",
                              contentBase64=base64.b64encode(b"x").decode(), requestId=request_id())
    assert error["code"] == "invalid" and error["issues"] == ["fileName: must be a plain file name, not a path"]
    error = await agent.error("upload", fileName="a.txt", contentType="text/plain", contentBase64="***",
                              requestId=request_id())
    assert error["code"] == "invalid" and error["issues"][0].startswith("contentBase64: not valid base64")
    limit = (await agent.call("describe"))["maxUploadBytes"]
    error = await agent.error("upload", fileName="big.bin", contentType="application/octet-stream",
                              contentBase64=base64.b64encode(b"\0" * (limit + 1)).decode(), requestId=request_id())
    assert error["code"] == "invalid"


async def test_retry_when_storage_fails_then_the_same_call_succeeds(clients, server):
    """PostgreSQL: the database turns read-only under the server. SQLite (one process,
    one file): the evidence directory is replaced by a file, so storing bytes fails."""
    agent = clients["agent-1"]
    arguments = dict(fileName="a.txt", contentType="text/plain",
                     contentBase64=base64.b64encode(b"retry me").decode(), requestId=request_id())
    with storage_failing(server):
        error = await agent.error("upload", **arguments)
    assert error["code"] == "retry"
    assert "issues" not in error and "read-only" not in error["message"]
    # As the spec tells clients: retry with the same requestId. Connections the
    # failure broke may fail once each before the server has replaced them all.
    for _ in range(20):
        result = await agent.raw("upload", **arguments)
        if result["ok"] or result["error"]["code"] != "retry":
            break
        await anyio.sleep(0.1)
    assert result["ok"], result
    assert result["data"]["bytes"] == len(b"retry me")


@contextlib.contextmanager
def storage_failing(server):
    if server.backend == "postgres":
        database = server.database
        terminate = f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database}'"
        servers.psql(f"ALTER DATABASE {database} SET default_transaction_read_only = on")
        servers.psql(terminate)
        try:
            yield
        finally:
            servers.psql(f"ALTER DATABASE {database} SET default_transaction_read_only = off")
            servers.psql(terminate)
    else:
        files = server.workdir / "data" / "files"
        aside = files.with_name("files-aside")
        files.rename(aside)
        files.write_text("not a directory")
        try:
            yield
        finally:
            files.unlink()
            aside.rename(files)


async def test_a_submission_without_its_required_arguments_breaks_the_schema_and_is_invalid(clients, server):
    # Specification §6.3: arguments that break the tool's schema are invalid before
    # acceptance is judged; the claim stands.
    _, claim = await claimed(clients, server)
    error = await clients["agent-1"].error("submit", token=claim["token"], requestId=request_id())
    assert error["code"] == "invalid"
    assert error["issues"] == ["output: missing", "summary: missing"]
    await clients["agent-1"].call("renew", token=claim["token"], requestId=request_id())


async def test_a_link_a_browser_would_act_on_is_not_accepted_and_a_reference_shows_as_text(clients, server):
    view, claim = await claimed(clients, server)
    submission = good_submission(claim, server)
    submission["evidence"] = [{"kind": "link", "ref": "javascript:alert(document.cookie)"},
                              {"kind": "link", "ref": " data:text/html,<script>alert(1)</script>"},
                              {"kind": "link", "ref": "https://tracker.example/ACT-1"}]
    error = await clients["agent-1"].error("submit", token=claim["token"], requestId=request_id(), **submission)
    assert error["code"] == "not_accepted"
    assert error["issues"] == [
        f"evidence[{index}].ref: a link is an http or https URL, or a reference with no scheme (a document number)"
        for index in (0, 1)], error
    submission["evidence"] = [{"kind": "link", "ref": "INV-1001"},
                              {"kind": "link", "ref": "https://tracker.example/ACT-1"}]
    await clients["agent-1"].call("submit", token=claim["token"], requestId=request_id(), **submission)
    if server.backend != "sqlite":
        return  # the page is the same on both; only the development server signs a person in without a provider
    browser = Browser(server.bases[0])
    form = browser.get("/dev/sign-in")
    assert browser.post_form("/dev/sign-in", {"csrf": csrf_of(form.text), "identity": "ops"}).status_code == 303
    page = browser.get(f"/runs/{view['run']['id']}")
    assert page.status_code == 200, page.text
    assert 'href="https://tracker.example/ACT-1"' in page.text
    assert "<code>INV-1001</code>" in page.text and 'href="INV-1001"' not in page.text
