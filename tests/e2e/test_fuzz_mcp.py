"""The MCP surface under the structure-aware fuzzer (fuzz_mcp.py): a fixed number of
seeded cases per backend in CI, each checked by the oracle (no 5xx but a deliberate
503, an answer within the deadline, every tool result on the official schemas or a
refusal on tool-error.json); then the server still answers, in bounded memory.

A longer run: `FUZZ_CASES=20000 FUZZ_SEED=7 pytest tests/e2e/test_fuzz_mcp.py -s`."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

import fuzz_mcp
import rawmcp
import servers
from client import request_id
from walk import fill

CASES = int(os.environ.get("FUZZ_CASES", "300"))
SEED = int(os.environ.get("FUZZ_SEED", "20261204"))
# The most a server's resident memory may grow over the cases (a leak, or an input that
# makes it hold on to what it read).
MEMORY_GROWTH_BOUND = 256 << 20


@pytest.fixture(params=["sqlite", "postgres"])
def fuzzed(request):
    started = servers.start_sqlite() if request.param == "sqlite" else servers.start_postgres(processes=1)
    yield started
    servers.drop(started)


def known_values(server: servers.Server) -> dict[str, list[str]]:
    """Ids the server knows (a run, its steps, a claim token, the processes), so that
    generated calls reach past the first lookup."""
    token = server.tokens["alice"]
    listed = rawmcp.call(server.base, token, "list_processes", {})["data"]["items"]
    process = next(item for item in listed if item["name"] == "invoice-approval")
    view = rawmcp.call(server.base, token, "start_run", {"process": "invoice-approval", "requestId": request_id(),
                                                         "inputs": fill(process["inputs"], server.persons)})["data"]
    run = view["run"]["id"]
    claimed = rawmcp.call(server.base, server.tokens["agent-1"], "claim",
                          {"runId": run, "stepId": "validate", "requestId": request_id()})["data"]
    return {
        "runId": [run, "r_missing"],
        "stepId": [step["id"] for step in view["steps"]],
        "token": [claimed["token"]],
        "process": [item["name"] for item in listed],
        "contentBase64": [base64.b64encode(b"evidence").decode()],
        "contentType": ["text/plain", "application/pdf"],
        "name": ["payment-received"],
    }


def resident_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_generated_and_mutated_calls_break_nothing(fuzzed):
    server = fuzzed
    known = known_values(server)
    pid = server.processes[0].pid
    before = resident_bytes(pid)
    verdicts = []
    # The same cases as each kind of caller: an agent, a person, an operator.
    for offset, identity in enumerate(("agent-1", "alice", "ops")):
        verdict = fuzz_mcp.run(server.base, server.tokens[identity], SEED + offset, CASES // 3, known)
        verdicts.append(verdict)
    after = resident_bytes(pid)
    statuses = sum((v.statuses for v in verdicts), start=type(verdicts[0].statuses)())
    codes = sum((v.codes for v in verdicts), start=type(verdicts[0].codes)())
    broken = [problem for verdict in verdicts for problem in verdict.broken]
    print(f"\n{server.backend}: {sum(statuses.values())} cases, seed {SEED}; HTTP {dict(statuses)}; "
          f"answers {dict(codes)}; slowest {max(v.slowest for v in verdicts):.2f} s; "
          f"resident memory {before / 2**20:.0f} MiB before, {after / 2**20:.0f} MiB after")
    assert not broken, "\n".join(broken[:20])
    assert codes["ok"] > 0 and codes["invalid"] > 0, "the cases reached both answers and refusals"
    assert rawmcp.call(server.base, server.tokens["agent-1"], "describe", {})["ok"], "the server lives on"
    assert after - before < MEMORY_GROWTH_BOUND, f"resident memory grew by {(after - before) / 2**20:.0f} MiB"
