"""An agent for an agentprocess server, on the official MCP Python SDK.

It gets a token with OAuth client credentials, finds work with `get_work`, claims a
step, does the work, leaves a progress note with `renew`, uploads a work log as file
evidence, and submits. When the server refuses a submission (`not_accepted`), it reads
every issue, repairs what it can and submits again; what it cannot do, it escalates to
a person with `escalate`. When an approver sent its earlier work back, it reads the
approver's note and the step's history, and says in its summary what it did about them.

The work itself is done by `StandIn`: a stand-in for your model and your tools, which
fills each declared output field from the run's inputs by its type. Replace
`StandIn.work` with calls to your model and your systems; the rest is what any agent
needs.

    python agent.py --url http://127.0.0.1:8080 [--process NAME] [--until-idle]

Credentials come from the environment:
- AGENTPROCESS_CLIENT_ID and AGENTPROCESS_CLIENT_SECRET: an OAuth client of the agent
  (client credentials), made on the agent's admin page or with
  `POST /api/v1/agents/{id}/clients`;
- or AGENTPROCESS_TOKEN: the agent's static MCP bearer token (`apt_…`).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime
import json
import os
import sys
import uuid
from contextlib import AsyncExitStack
from typing import Any

import httpx2
from mcp import ClientSession
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client


class Refused(Exception):
    """A tool answered `{ ok: false, error }`."""

    def __init__(self, tool: str, error: dict[str, Any]):
        super().__init__(f"{tool}: {error['code']}: {error['message']} {error.get('issues', [])}")
        self.code = error["code"]
        self.issues: list[str] = error.get("issues", [])


class CannotDo(Exception):
    """The worker cannot do this step; a person must."""


def log(message: str) -> None:
    print(message, flush=True)


class Server:
    """The agentprocess tools over one MCP session."""

    def __init__(self, session: ClientSession):
        self.session = session

    async def call(self, tool: str, **arguments: Any) -> Any:
        result = await self.session.call_tool(tool, arguments)
        answer = result.structured_content
        if answer is None:
            raise RuntimeError(f"{tool}: no structured result: {result}")
        if not answer["ok"]:
            raise Refused(tool, answer["error"])
        return answer["data"]

    async def write(self, tool: str, **arguments: Any) -> Any:
        """A write, with a fresh `requestId`; `retry` is sent again under the same id,
        which the server answers once and never applies twice."""
        arguments = arguments | {"requestId": str(uuid.uuid4())}
        for attempt in range(5):
            try:
                return await self.call(tool, **arguments)
            except Refused as refused:
                if refused.code != "retry" or attempt == 4:
                    raise
                await asyncio.sleep(0.5 * (attempt + 1))


class StandIn:
    """Stands in for a model and tools: fills each declared output field from the run's
    inputs (a field named like an input takes its value) or by its type, picks the first
    route whose condition it can meet, and cites the links a real agent would have read.
    It cannot work on a request that leaves something unknown, and says so."""

    def work(self, run_id: str, claim: dict[str, Any], rework: list[str]) -> dict[str, Any]:
        inputs = claim["data"]["inputs"]
        unknown = [name for name, value in inputs.items() if isinstance(value, str) and value.strip().lower() in ("", "unknown", "?")]
        if unknown:
            raise CannotDo(f"the request leaves {', '.join(unknown)} unknown, and I cannot find it out")
        step = claim["step"]
        output = {name: self.value(name, field, inputs) for name, field in step["output"].items() if not optional(field)}
        evidence = [{"kind": "link", "ref": f"https://intranet.example.com/runs/{run_id}/{step['id']}"}] if "link" in step["evidence"] else []
        submission: dict[str, Any] = {
            "output": output,
            "evidence": evidence,
            "summary": f"Did {step['id']} as instructed, with the run's inputs." + "".join(f" {line}" for line in rework),
        }
        if isinstance(step.get("next"), list):
            route = step["next"][0]
            submission["next"] = route["to"]
            submission["reason"] = f"{route['when']}: so the inputs show."
        return submission

    def value(self, name: str, field: Any, inputs: dict[str, Any]) -> Any:
        if name in inputs:
            return inputs[name]
        kind = field if isinstance(field, str) else field.get("type", "string")
        if isinstance(field, dict) and field.get("one_of"):
            return field["one_of"][0]
        today = datetime.date.today()
        return {
            "string": f"{name} (stand-in)",
            "number": 0,
            "boolean": True,
            "date": (today + datetime.timedelta(days=7)).isoformat(),
            "datetime": datetime.datetime.combine(today + datetime.timedelta(days=7), datetime.time(9), datetime.timezone.utc).isoformat(),
            "list": [],
            "object": {},
        }.get(kind, f"{name} (stand-in)")


def optional(field: Any) -> bool:
    return isinstance(field, dict) and field.get("optional") is True


def rework_notes(claim: dict[str, Any]) -> list[str]:
    """What earlier rounds left for this attempt: an approver's rejection (its note),
    the step's earlier completions (`history`), and the previous attempt's handoff."""
    notes = []
    steps = claim["data"].get("steps", {})
    for step_id, step in steps.items():
        if step.get("decision") == "rejected" and step.get("note"):
            notes.append(f"Reworked after {step_id} was rejected with the note: {step['note']!r}.")
    # The step's last completion: still in place while the step is being reworked,
    # or the newest of its history.
    mine = steps.get(claim["step"]["id"], {})
    earlier = mine.get("summary") or (mine.get("history") or [{}])[-1].get("summary")
    if earlier:
        notes.append(f"Earlier round: {earlier!r}.")
    handoff = claim.get("handoff") or {}
    if handoff.get("returned"):
        notes.append(f"Returned by {handoff['returned']['by']}: {handoff['returned']['note']!r}.")
    if handoff.get("issues"):
        notes.append(f"The last attempt was refused: {'; '.join(handoff['issues'])}.")
    if handoff.get("progress"):
        notes.append(f"An earlier lease had got as far as: {handoff['progress']!r}.")
    return notes


def repair(submission: dict[str, Any], issues: list[str], step: dict[str, Any]) -> bool:
    """Mends a refused submission from the server's issues; whether anything changed.
    Issues name the field first (`output.amount: missing`, `reason: required`)."""
    changed = False
    for issue in issues:
        where, _, what = issue.partition(": ")
        if where == "reason" and "reason" not in submission:
            submission["reason"] = f"Chosen as {submission.get('next')}: the inputs show it."
            changed = True
        elif where == "next" and isinstance(step.get("next"), list) and submission.get("next") is None:
            submission["next"] = step["next"][0]["to"]
            submission["reason"] = f"{step['next'][0]['when']}: so the inputs show."
            changed = True
        elif where == "summary":
            submission["summary"] = (submission.get("summary") or f"Did {step['id']}.")[:2000]
            changed = True
        elif where.startswith("output.") and what == "missing":
            name = where.removeprefix("output.")
            if name in step["output"]:
                submission["output"][name] = StandIn().value(name, step["output"][name], {})
                changed = True
        elif where.startswith("output.") and what.startswith("not declared"):
            submission["output"].pop(where.removeprefix("output."), None)
            changed = True
        elif where == "evidence" and "link required" in what:
            submission["evidence"].append({"kind": "link", "ref": f"https://intranet.example.com/{step['id']}"})
            changed = True
    return changed


async def upload_log(server: Server, claim: dict[str, Any], submission: dict[str, Any]) -> dict[str, str]:
    """Uploads a work log of what was done, to cite as evidence."""
    text = json.dumps({"step": claim["step"]["id"], "output": submission["output"], "summary": submission["summary"]}, indent=2)
    uploaded = await server.write(
        "upload",
        fileName=f"{claim['step']['id']}-work-log.json",
        contentType="application/json",
        contentBase64=base64.b64encode(text.encode()).decode(),
    )
    return {"kind": "file", "ref": uploaded["id"]}


async def submit(server: Server, claim: dict[str, Any], token: str, submission: dict[str, Any]) -> dict[str, Any]:
    """Submits; on `not_accepted`, repairs from the issues and submits once more. A
    refusal it cannot repair is escalated to a person, with the issues in the note."""
    for attempt in (1, 2):
        try:
            return await server.write("submit", token=token, **submission)
        except Refused as refused:
            if refused.code != "not_accepted":
                raise
            log(f"    not accepted: {'; '.join(refused.issues)}")
            if attempt == 2 or not repair(submission, refused.issues, claim["step"]):
                await server.write("escalate", token=token, note="The server refused my submission: " + "; ".join(refused.issues))
                log("    escalated: the refusal is not one I can repair")
                return {}
    return {}


async def work_on(server: Server, worker: StandIn, item: dict[str, Any]) -> bool:
    """Works on one offered step; whether this agent got to claim it."""
    arguments = item["claim"]["arguments"]
    try:
        claim = await server.write("claim", **arguments)
    except Refused as refused:
        # Another agent took it first, or the run moved on: nothing to do here.
        log(f"  {arguments['stepId']} of {arguments['runId']}: {refused.code} {refused.issues}")
        return False
    token = claim["token"]
    log(f"  claimed {arguments['stepId']} of {arguments['runId']} until {claim['expiresAt']}")
    rework = rework_notes(claim)
    for note in rework:
        log(f"    {note}")
    try:
        submission = worker.work(arguments["runId"], claim, rework)
    except CannotDo as cannot:
        await server.write("escalate", token=token, note=f"I cannot do this step: {cannot}.")
        log(f"    escalated: {cannot}")
        return True
    # A long piece of work renews its lease before it runs out; the progress note is
    # handed to whoever claims the step next if this agent stops.
    renewed = await server.write("renew", token=token, progress="Output ready; uploading the work log.")
    token = renewed["token"]
    log(f"    renewed until {renewed['expiresAt']}, with a progress note")
    submission["evidence"].append(await upload_log(server, claim, submission))
    view = await submit(server, claim, token, submission)
    if view:
        states = {step["id"]: step["state"] for step in view["steps"]}
        log(f"    submitted: {arguments['stepId']} {states.get(arguments['stepId'])}, run {view['run']['state']}")
    return True


async def run(url: str, process: str | None, until_idle: bool, poll_seconds: float) -> None:
    base = url.rstrip("/")
    client_id = os.environ.get("AGENTPROCESS_CLIENT_ID")
    if client_id:
        auth: httpx2.Auth | None = ClientCredentialsOAuthProvider(
            server_url=base + "/mcp", storage=Memory(), client_id=client_id,
            client_secret=os.environ["AGENTPROCESS_CLIENT_SECRET"], issuer=base)
        headers = None
    elif os.environ.get("AGENTPROCESS_TOKEN"):
        auth, headers = None, {"Authorization": f"Bearer {os.environ['AGENTPROCESS_TOKEN']}"}
    else:
        sys.exit("set AGENTPROCESS_CLIENT_ID and AGENTPROCESS_CLIENT_SECRET, or AGENTPROCESS_TOKEN")
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(auth=auth, headers=headers, timeout=httpx2.Timeout(30, read=300)))
        read, write, *_ = await stack.enter_async_context(streamable_http_client(base + "/mcp", http_client=http))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        server = Server(session)
        described = await server.call("describe")
        log(f"connected: {described['protocol']} {described['version']}, leases of {described['leaseSeconds']} s")
        worker = StandIn()
        while True:
            filters = {"process": process} if process else {}
            work = await server.call("get_work", **filters)
            claimed = False
            for item in work["items"]:
                try:
                    claimed = await work_on(server, worker, item) or claimed
                except Refused as refused:
                    # One step's refusal (its lease ended, the run was cancelled) must
                    # not stop the agent: the step is offered again, or is gone.
                    log(f"    {refused}")
            if not claimed:
                if until_idle:
                    log("no work left")
                    return
                await asyncio.sleep(poll_seconds)


class Memory:
    """Where the SDK keeps the access token: in memory, for the life of the process."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the server, such as http://127.0.0.1:8080")
    parser.add_argument("--process", help="work only on runs of this process")
    parser.add_argument("--until-idle", action="store_true", help="stop once get_work offers nothing")
    parser.add_argument("--poll-seconds", type=float, default=5, help="wait between empty get_work calls")
    arguments = parser.parse_args()
    asyncio.run(run(arguments.url, arguments.process, arguments.until_idle, arguments.poll_seconds))


if __name__ == "__main__":
    main()
