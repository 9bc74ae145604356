"""The check-1 profile end to end: the built servers with the test-double evaluator
(`agentprocess-test-evaluator`, not a model: it answers by fixed rules on the
submission's summary), on SQLite and on two API processes over PostgreSQL; the
`vendor-check` fixture walked along every verdict over MCP."""

from __future__ import annotations

import base64

import pytest

import servers
from client import ToolFailed, connect, request_id

pytestmark = pytest.mark.anyio

MODEL = "test-double-evaluator"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def checking(request):
    double, url = servers.start_test_evaluator()
    flags = ("--evaluator-url", url, "--evaluator-model", MODEL)
    server = servers.start_sqlite(extra=flags) if request.param == "sqlite" else servers.start_postgres(extra=flags)
    yield server
    servers.drop(server)
    double.terminate()


@pytest.fixture
async def people(checking):
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        found = {}
        for name, token in checking.tokens.items():
            # The second process of a PostgreSQL server, where there is one: the check's
            # two phases need no process affinity.
            index = len(checking.bases) - 1
            found[name] = await connect(stack, checking.mcp_url(index), token, name)
        yield found


async def screened(people, summary: str) -> tuple[str, str, dict]:
    """A vendor-check run with its screening submitted as `summary` says: (run id,
    token, the submit's raw result)."""
    agent = people["agent-1"]
    view = await agent.call("start_run", process="vendor-check", inputs={"vendorName": "Globex", "amount": 12000},
                            requestId=request_id())
    run = view["run"]["id"]
    claim = await agent.call("claim", runId=run, stepId="check_vendor", requestId=request_id())
    upload = await agent.call("upload", fileName="report.txt", contentType="text/plain",
                              contentBase64=base64.b64encode(b"OFAC: no hits. EU: no hits.").decode(),
                              requestId=request_id())
    result = await agent.raw(
        "submit", token=claim["token"], requestId=request_id(), summary=summary, next="approve", reason="Cleared.",
        output={"cleared": True, "summary": "Cleared against OFAC and EU."},
        evidence=[{"kind": "file", "ref": upload["id"]}],
    )
    return run, claim["token"], result


async def test_describe_offers_check_1_and_vendor_check_is_published(people):
    described = await people["agent-1"].call("describe")
    assert described["profiles"] == ["parallel-1", "check-1"]
    listed = await people["alice"].call("list_processes")
    assert "vendor-check" in [item["name"] for item in listed["items"]]


async def test_a_pass_goes_to_the_approver_who_sees_the_verdict(people):
    run, _, result = await screened(people, "Both lists by legal name, no hits.")
    assert result["ok"], result
    check = result["data"]["data"]["steps"]["check_vendor"]["check"]
    assert (check["verdict"], check["model"], check["advisory"]) == ("pass", MODEL, False)
    work = await people["alice"].call("get_work")
    item = next(entry["workItem"] for entry in work["items"] if entry["runId"] == run)
    assert item["stepId"] == "approve"
    view = await people["alice"].call(
        "decide", runId=run, workItemId=item["id"], snapshot=item["snapshot"], decision="approved",
        requestId=request_id(),
    )
    assert view["run"]["outcome"] == "onboarded"


async def test_a_fail_is_not_accepted_and_the_handoff_carries_the_verdict(people):
    run, token, result = await screened(people, "[fail]")
    assert not result["ok"] and result["error"]["code"] == "not_accepted", result
    assert result["error"]["issues"][0] == (
        "check: The cleared verdict matches what the attached report says. → no (0.1)")
    view = await people["agent-1"].call("get_run", runId=run)
    assert "check_vendor" not in view["data"]["steps"]
    # The claim stands: the same token submits again.
    upload = await people["agent-1"].call("upload", fileName="r.txt", contentType="text/plain",
                                          contentBase64=base64.b64encode(b"both lists").decode(),
                                          requestId=request_id())
    view = await people["agent-1"].call(
        "submit", token=token, requestId=request_id(), summary="Both lists.", next="approve", reason="Cleared.",
        output={"cleared": True, "summary": "Both lists."}, evidence=[{"kind": "file", "ref": upload["id"]}],
    )
    assert view["data"]["steps"]["check_vendor"]["check"]["verdict"] == "pass"


async def test_an_unsure_verdict_is_decided_by_an_operator_returned_then_completed(people):
    run, _, result = await screened(people, "[unsure]")
    assert result["ok"], result
    ops = people["ops"]
    work = await ops.call("get_work")
    item = next(entry["workItem"] for entry in work["items"] if entry["runId"] == run)
    assert item["escalation"]["check"]["verdict"] == "unsure"
    assert item["escalation"]["candidate"]["output"]["cleared"] is True
    await ops.call("decide", runId=run, workItemId=item["id"], snapshot=item["snapshot"], decision="returned",
                   note="Name the search terms.", requestId=request_id())
    claim = await people["agent-2"].call("claim", runId=run, stepId="check_vendor", requestId=request_id())
    assert claim["handoff"]["returned"]["note"] == "Name the search terms."
    assert claim["handoff"]["check"]["verdict"] == "unsure"
    assert len(claim["handoff"]["issues"]) == 3
    upload = await people["agent-2"].call("upload", fileName="r.txt", contentType="text/plain",
                                          contentBase64=base64.b64encode(b"terms").decode(), requestId=request_id())
    result = await people["agent-2"].raw(
        "submit", token=claim["token"], requestId=request_id(), summary="[unsure] again", next="approve",
        reason="Cleared.", output={"cleared": True, "summary": "Searched Globex, Globex Ltd."},
        evidence=[{"kind": "file", "ref": upload["id"]}],
    )
    assert result["ok"], result
    work = await ops.call("get_work")
    item = next(entry["workItem"] for entry in work["items"] if entry["runId"] == run)
    view = await ops.call("decide", runId=run, workItemId=item["id"], snapshot=item["snapshot"],
                          decision="completed", requestId=request_id())
    record = view["data"]["steps"]["check_vendor"]
    assert record["summary"] == "[unsure] again" and record["check"]["verdict"] == "unsure"
    assert [entry["stepId"] for entry in view["workItems"]] == ["approve"]


async def test_an_evaluator_error_is_retry_and_changes_nothing(people):
    run, _, result = await screened(people, "[error]")
    assert not result["ok"] and result["error"]["code"] == "retry", result
    view = await people["agent-1"].call("get_run", runId=run)
    assert view["steps"][0]["state"] == "claimed"
    assert "check_vendor" not in view["data"]["steps"]
    with pytest.raises(ToolFailed):
        await people["agent-1"].call("claim", runId=run, stepId="check_vendor", requestId=request_id())


@pytest.mark.parametrize("always", ["pass", "fail", "unsure"])
def test_the_conformance_runner_walks_vendor_check_whatever_the_evaluator_says(always, tmp_path):
    from test_conformance import conformance

    double, url = servers.start_test_evaluator("--always", always)
    server = servers.start_sqlite(extra=("--evaluator-url", url, "--evaluator-model", MODEL))
    try:
        ran = conformance(server, tmp_path)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert any(line.startswith("pass  walk/vendor-check ") for line in ran.stdout.splitlines()), ran.stdout
    finally:
        servers.drop(server)
        double.terminate()
