"""Walks a run to its end the way agents and people would: agents take ready steps
from get_work, people decide their work items, events are sent to waiting wait_for
steps, and the test clock moves when only time can move the run.

A `Plan` shared by the walks of one process makes every choice round-robin per
step: the route of a step whose `next` is a list, whether an approval is rejected,
whether an agent escalates first and the person returns or completes the step, and
whether a wait_for gets its event or times out. Each step visited often enough thus
takes each of its options.
"""

from __future__ import annotations

import asyncio
import base64
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from client import Client, request_id
from servers import FIXTURES


def definition(process: str, folder: Path = FIXTURES) -> dict:
    """The frontmatter of `folder/<process>/PROCESS.md`."""
    text = (folder / process / "PROCESS.md").read_text()
    return yaml.safe_load(text.split("\n---", 1)[0].removeprefix("---"))


def declared_routes(process: str, folder: Path = FIXTURES) -> set[tuple[str, str]]:
    """`(step, to)` for every route of every step whose `next` is a list."""
    routes = set()
    for step in definition(process, folder)["steps"]:
        if isinstance(step.get("next"), list):
            for route in step["next"]:
                routes.add((step["id"], route if isinstance(route, str) else route["to"]))
    return routes


def sample(declaration, persons: dict[str, str]):
    """A value of a declared field type."""
    if isinstance(declaration, str):
        declaration = {"type": declaration}
    if declaration.get("one_of"):
        return declaration["one_of"][0]
    kind = declaration.get("type")
    if kind == "number":
        return 1080.5
    if kind == "boolean":
        return True
    if kind == "date":
        return "2026-10-06"
    if kind == "datetime":
        return "2026-01-01T09:00:00Z"
    if kind == "person":
        return persons["alice"]
    if kind == "list":
        return [sample(declaration.get("items", "string"), persons)]
    if kind == "object":
        return {}
    return "sample text"


def fill(fields: dict | None, persons: dict[str, str]) -> dict:
    return {name: sample(declaration, persons) for name, declaration in (fields or {}).items()}


class Plan:
    """Round-robin choices per step, across the walks of one process."""

    def __init__(self):
        self.turns: dict[str, int] = {}

    def pick(self, key: str, options: int) -> int:
        turn = self.turns.get(key, 0)
        self.turns[key] = turn + 1
        return turn % options


@dataclass
class Walk:
    """What one walk did."""

    view: dict | None = None
    routes: set[tuple[str, str]] = field(default_factory=set)
    decisions: set[tuple[str, str]] = field(default_factory=set)
    file_checked: bool = False


class Walker:
    """Walks runs of `process`, whose PROCESS.md is in `folder/<process>/`."""

    def __init__(self, clients: dict[str, Client], server, process: str, choice: int, plan: Plan,
                 folder: Path = FIXTURES):
        self.clients = clients
        self.plan = plan
        self.server = server
        self.process = process
        self.choice = choice
        self.definition = definition(process, folder)
        self.steps = {step["id"]: step for step in self.definition["steps"]}
        self.walk = Walk()
        self.rejected: set[str] = set()
        self.escalated = False
        self.file_id: str | None = None
        self.mode: str | None = None  # the run's, read by drive()

    @property
    def persons(self) -> dict[str, str]:
        return self.server.persons

    def who(self, assigned: dict) -> Client:
        if "person" in assigned:
            name = next(n for n, p in self.persons.items() if p.lower() == assigned["person"].lower())
            return self.clients[name]
        if assigned["group"] == "operators":
            return self.clients["ops"]
        return self.clients["alice" if self.choice % 2 == 0 else "bob"]

    async def run(self, inputs: dict, mode: str | None = None) -> Walk:
        """Starts a run (in `mode`, when given) and takes it to its end."""
        arguments = {"mode": mode} if mode else {}
        view = await self.clients["alice"].call(
            "start_run", process=self.process, inputs=inputs, requestId=request_id(), **arguments
        )
        assert view["run"]["mode"] == (mode or "live"), view["run"]
        return await self.drive(view["run"]["id"])

    async def drive(self, run_id: str) -> Walk:
        """Takes an existing run to its end."""
        view = None
        for _ in range(200):
            view = await self.clients["alice"].call("get_run", runId=run_id)
            self.mode = view["run"]["mode"]
            if view["run"]["ended"] is not None:
                self.walk.view = view
                return self.walk
            if await self.agent_turn(run_id):
                continue
            if await self.person_turn(view):
                continue
            if await self.event_turn(view):
                continue
            await self.let_time_pass(run_id, view)
        raise AssertionError(f"{self.process} (choice {self.choice}) did not end: {view}")

    async def agent_turn(self, run_id: str) -> bool:
        agent = self.clients["agent-1" if self.choice % 2 == 0 else "agent-2"]
        work = await agent.call("get_work", process=self.process, limit=100)
        mine = [item for item in work["items"] if item["runId"] == run_id]
        if not mine:
            return False
        item = mine[0]
        claimed = await agent.call("claim", **{**item["claim"]["arguments"], "requestId": request_id()})
        assert item["mode"] == claimed["mode"] == self.mode, (item, claimed["mode"])
        step = claimed["step"]
        if not self.escalated and self.plan.pick("escalate", 4) == 3:
            self.escalated = True
            await agent.call("escalate", token=claimed["token"], note="Need a person here.", requestId=request_id())
            return True
        arguments = await self.work_arguments(agent, step)
        view = await agent.call("submit", token=claimed["token"], requestId=request_id(), **arguments)
        await self.check_file_urls(view)
        return True

    async def work_arguments(self, actor: Client, step: dict) -> dict:
        """output, evidence, summary, next and reason for a step's requirements."""
        arguments = {"output": fill(step.get("output"), self.persons), "summary": "Done as instructed."}
        evidence = []
        for kind in step.get("evidence") or []:
            if kind == "file":
                if self.file_id is None:
                    uploaded = await actor.call(
                        "upload", fileName="report.txt", contentType="text/plain",
                        contentBase64=base64.b64encode(b"evidence bytes").decode(), requestId=request_id(),
                    )
                    self.file_id = uploaded["id"]
                evidence.append({"kind": "file", "ref": self.file_id})
            else:
                evidence.append({"kind": "link", "ref": "https://example.com/ticket/1"})
        if evidence:
            arguments["evidence"] = evidence
        routes = step.get("next")
        if isinstance(routes, list):
            route = routes[self.plan.pick(f"route:{step.get('id')}", len(routes))]["to"]
            arguments["next"] = route
            arguments["reason"] = "Chosen by the walk."
            self.walk.routes.add((step.get("id"), route))
        return arguments

    async def person_turn(self, view: dict) -> bool:
        for item in view["workItems"]:
            person = self.who(item["assignedTo"])
            work = await person.call("get_work", limit=100)
            listed = [w for w in work["items"] if w["runId"] == view["run"]["id"]]
            mine = [w for w in listed if w["workItem"]["id"] == item["id"]]
            assert mine, f"{person.name} does not see {item['id']}"
            assert mine[0]["mode"] == self.mode, mine[0]
            if self.mode == "test":
                assert item.get("mode") == mine[0]["workItem"].get("mode") == "test", item
            arguments = dict(item["decide"]["arguments"], requestId=request_id())
            decision = self.decision(item)
            arguments["decision"] = decision
            if decision in ("rejected", "returned", "failed"):
                arguments["note"] = "Not yet."
            if decision == "completed":
                requirements = {"id": item["stepId"], "output": item["output"], "evidence": item["evidence"],
                                "next": item["next"]}
                arguments.update(await self.work_arguments(person, requirements))
            await person.call("decide", **arguments)
            self.walk.decisions.add((item["stepId"], decision))
            return True
        return False

    def decision(self, item: dict) -> str:
        if item["kind"] == "approve":
            if item["stepId"] not in self.rejected and self.plan.pick(f"reject:{item['stepId']}", 3) == 2:
                self.rejected.add(item["stepId"])
                return "rejected"
            return "approved"
        if item["escalation"] is not None and item["stepId"] not in self.rejected \
                and self.plan.pick(f"return:{item['stepId']}", 2) == 1:
            self.rejected.add(item["stepId"])
            return "returned"
        return "completed"

    async def event_turn(self, view: dict) -> bool:
        for step in view["steps"]:
            definition = self.steps.get(step["id"], {})
            if step["state"] != "waiting" or "wait_for" not in definition:
                continue
            if "timeout" in definition and self.plan.pick(f"timeout:{step['id']}", 2) == 1:
                return False  # let it time out
            sent = await self.clients["agent-1"].call(
                "send_event", runId=view["run"]["id"], name=definition["wait_for"],
                data={"reference": "evt-1"}, requestId=request_id(),
            )
            assert sent["consumedBy"] == step["id"], sent
            return True
        return False

    async def let_time_pass(self, run_id: str, view: dict) -> None:
        """Nothing to do but wait: move the clock past every duration the walked
        processes use (the longest is 30 days) and wait for a timer to move the run."""
        before = view["run"]["updatedAt"], [s["state"] for s in view["steps"]]
        self.server.advance(31 * 24 * 3600)
        for _ in range(100):
            await asyncio.sleep(0.05)
            now = await self.clients["alice"].call("get_run", runId=run_id)
            if (now["run"]["updatedAt"], [s["state"] for s in now["steps"]]) != before:
                return
        raise AssertionError(f"nothing moved {run_id} after the clock advanced: {view}")

    async def check_file_urls(self, view: dict) -> None:
        """Every file item carries sha256 and a URL that serves the same bytes."""
        for record in view["data"]["steps"].values():
            for item in record.get("evidence") or []:
                if item["kind"] != "file":
                    continue
                assert item["sha256"] and item["url"], item
                if not self.walk.file_checked:
                    with urllib.request.urlopen(item["url"], timeout=10) as response:
                        assert response.read() == b"evidence bytes"
                    self.walk.file_checked = True
