"""The example agent (examples/agent/agent.py) against the dev server, as its README
says to run it: an OAuth client made with the admin's API token that `dev` prints,
then the agent with client credentials. It takes a purchase-order run through a
rejection (reworking with the approver's note and its own history), renews, uploads
its work log, submits, escalates what it cannot do, and repairs a refused submission
from the server's issues."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import uuid

import pytest

import rawmcp
import servers
from servers import REPO

AGENT = REPO / "examples" / "agent" / "agent.py"
ORDER = {"item": "Two 27-inch monitors", "supplier": "Nordic Displays", "amount": 640,
         "costCenter": "CC-4100", "neededBy": "2026-12-18"}


@pytest.fixture(scope="module")
def dev():
    started = servers.start_sqlite(processes=None)
    yield started
    servers.drop(started)


@pytest.fixture(scope="module")
def credentials(dev):
    """An OAuth client of agent-1, made through REST with the admin's API token."""
    details = json.loads((dev.workdir / "details.json").read_text())
    api_token = details["identities"]["admin"]["apiToken"]
    request = urllib.request.Request(
        f"{details['api']}/agents/agent-1/clients", data=json.dumps({"name": "example agent"}).encode(),
        headers={"Authorization": f"Bearer {api_token}", "Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201
        made = json.load(response)
    return {"AGENTPROCESS_CLIENT_ID": made["clientId"], "AGENTPROCESS_CLIENT_SECRET": made["secrets"][0]["secret"]}


def agent(dev, credentials, *arguments: str) -> str:
    """One run of the example agent until nothing is left for it; its output."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("AGENTPROCESS_")}
    finished = subprocess.run([sys.executable, str(AGENT), "--url", dev.base, "--until-idle", *arguments],
                              env=environment | credentials, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return finished.stdout


def call(dev, who: str, tool: str, arguments: dict) -> dict:
    answer = rawmcp.call(dev.base, dev.tokens[who], tool, arguments)
    assert answer["ok"], answer
    return answer["data"]


def start(dev, inputs: dict) -> str:
    return call(dev, "alice", "start_run", {"process": "purchase-order", "inputs": inputs,
                                            "requestId": str(uuid.uuid4())})["run"]["id"]


def decide(dev, run_id: str, decision: str, note: str | None = None) -> None:
    items = call(dev, "alice", "get_work", {})["items"]
    arguments = next(item for item in items if item["runId"] == run_id)["workItem"]["decide"]["arguments"]
    arguments |= {"decision": decision, "requestId": str(uuid.uuid4())}
    if note:
        arguments["note"] = note
    call(dev, "alice", "decide", arguments)


def steps_of(dev, run_id: str) -> tuple[dict, dict]:
    run = call(dev, "alice", "get_run", {"runId": run_id})
    return {step["id"]: step["state"] for step in run["steps"]}, run["data"]["steps"]


def test_the_example_agent_works_a_run_through_a_rejection_with_client_credentials(dev, credentials):
    run_id = start(dev, ORDER)
    out = agent(dev, credentials, "--process", "purchase-order")
    assert "connected: agentprocess core-2" in out and f"claimed check_budget of {run_id}" in out, out
    assert "renewed until" in out, out
    states, data = steps_of(dev, run_id)
    assert states["check_budget"] == "done" and states["approval"] == "waiting", states
    first = data["check_budget"]
    assert first["next"] == "approval" and first["reason"], first
    # The work log went up as a file and is cited beside the link the step asks for.
    kinds = sorted(item["kind"] for item in first["evidence"])
    assert kinds == ["file", "link"], first["evidence"]
    assert all(item.get("sha256") for item in first["evidence"] if item["kind"] == "file")

    decide(dev, run_id, "rejected", "Charge it to CC-4200, not CC-4100.")
    out = agent(dev, credentials, "--process", "purchase-order")
    assert "Reworked after approval was rejected with the note: 'Charge it to CC-4200, not CC-4100.'" in out, out
    states, data = steps_of(dev, run_id)
    assert states["check_budget"] == "done" and states["approval"] == "waiting", states
    again = data["check_budget"]
    assert "Charge it to CC-4200" in again["summary"] and "Earlier round" in again["summary"], again
    assert len(again["history"]) == 1 and again["history"][0]["summary"] == first["summary"]

    decide(dev, run_id, "approved")
    out = agent(dev, credentials, "--process", "purchase-order")
    assert f"claimed place_order of {run_id}" in out, out
    states, data = steps_of(dev, run_id)
    assert states["place_order"] == "done" and states["supplier_confirmation"] == "waiting", states
    assert data["place_order"]["output"]["poNumber"]


def test_the_example_agent_escalates_what_it_cannot_do(dev, credentials):
    run_id = start(dev, ORDER | {"costCenter": "unknown"})
    out = agent(dev, credentials, "--process", "purchase-order")
    assert "escalated: the request leaves costCenter unknown" in out, out
    items = call(dev, "ops", "get_work", {})["items"]
    assert any(item["runId"] == run_id and item["workItem"]["stepId"] == "check_budget" for item in items), items


def test_a_refused_submission_is_repaired_from_the_servers_issues(dev, credentials):
    """The agent's `submit` reads a `not_accepted` answer's issues and mends what they
    name: here a submission without its route and reason, and with a field the step
    does not declare."""
    sys.path.insert(0, str(AGENT.parent))
    try:
        import agent as example
    finally:
        sys.path.pop(0)
    run_id = start(dev, ORDER)
    claim = call(dev, "agent-1", "claim", {"runId": run_id, "stepId": "check_budget", "requestId": str(uuid.uuid4())})
    broken = {"output": {"budgetRemaining": 12400, "supplierActive": True, "colour": "blue"},
              "evidence": [{"kind": "link", "ref": "https://erp.example.com/budgets/CC-4100"}],
              "summary": "Checked the budget."}
    refused = rawmcp.call(dev.base, dev.tokens["agent-1"], "submit",
                          dict(broken, token=claim["token"], requestId=str(uuid.uuid4())))
    assert refused["ok"] is False and refused["error"]["code"] == "not_accepted", refused
    issues = refused["error"]["issues"]
    assert example.repair(broken, issues, claim["step"]), issues
    assert broken["next"] == "approval" and broken["reason"] and "colour" not in broken["output"], broken
    accepted = rawmcp.call(dev.base, dev.tokens["agent-1"], "submit",
                           dict(broken, token=claim["token"], requestId=str(uuid.uuid4())))
    assert accepted["ok"] is True, accepted
