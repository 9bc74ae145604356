"""Telemetry reaches a real OTLP receiver: the spans of a tool call with their
attributes and parents, a fired timer continuing the trace of the call that set it,
the metrics, and JSON log lines that carry trace ids and nothing secret."""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.request
import secrets
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import otlp
import rawmcp
import servers
from client import request_id
from scheduling import SHARED_REDIS, Deployment, post_advance

PROCESSES = Path(__file__).resolve().parent / "processes"
DASHBOARD = servers.REPO / "deploy" / "grafana" / "agentprocess.json"
SERVER_KIND = 2  # SpanKind.SPAN_KIND_SERVER
STATUS_ERROR = 2


class Traced:
    """An API process on its own database, exporting to a receiver."""

    def __init__(self, protocol: str) -> None:
        self.receiver = otlp.Receiver(grpc=protocol == "grpc")
        self.database, self.url, self.tokens, _ = servers.seed_postgres([PROCESSES / "pause", PROCESSES / "filed"])
        self.workdir = Path(tempfile.mkdtemp(prefix="agentprocess-e2e-otel-"))
        self.secret = secrets.token_bytes(32)
        port = servers.free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.log = self.workdir / "api.log"
        env = dict(
            os.environ,
            OTEL_EXPORTER_OTLP_ENDPOINT=self.receiver.endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
            OTEL_METRIC_EXPORT_INTERVAL="300",
            OTEL_BSP_SCHEDULE_DELAY="100",
            OTEL_RESOURCE_ATTRIBUTES="deployment.environment.name=e2e",
            AGENTPROCESS_LOG="info,agentprocess_mcp=debug",
        )
        env.pop("OTEL_SERVICE_NAME", None)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [*servers.api_command(self.url, port, self.secret, self.workdir), "--log-json",
                 "--webhook-allow-private-networks", "--allow-plain-http-hooks", "--metrics-organizations", "acme"],
                stdout=log, stderr=subprocess.STDOUT, env=env,
            )
        servers.wait_ready(self.base, self.process)

    def call(self, tool: str, arguments: dict, token: str = "alice", **kwargs) -> dict:
        return rawmcp.call(self.base, self.tokens[token], tool, arguments, **kwargs)

    def spans_named(self, name: str) -> list[otlp.Span]:
        return [span for span in self.receiver.spans() if span.name == name]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.receiver.close()
        servers.psql(f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)")


@pytest.fixture(scope="module")
def traced():
    deployment = Traced("http/protobuf")
    yield deployment
    deployment.close()


def traceparent() -> tuple[str, str, str]:
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    return trace_id, parent_id, f"00-{trace_id}-{parent_id}-01"


def start_traced(traced: Traced) -> tuple[str, str, str, otlp.Span]:
    """Starts a `pause` run in a trace of the test's: (trace id, parent span id, run id,
    the call's span)."""
    trace_id, parent_id, header = traceparent()
    result = traced.call("start_run", {"process": "pause", "inputs": {}, "requestId": request_id()},
                         meta={"traceparent": header})
    span = traced.receiver.wait_for(
        lambda: [s for s in traced.spans_named("tools/call start_run") if s.trace_id == trace_id],
        what="start_run span")[0]
    return trace_id, parent_id, result["data"]["run"]["id"], span


def test_a_tool_call_is_a_server_span_in_the_callers_trace_with_its_attributes(traced):
    _, parent_id, run_id, span = start_traced(traced)
    assert span.parent_span_id == parent_id
    assert span.kind == SERVER_KIND
    assert span.attributes["mcp.method.name"] == "tools/call"
    assert span.attributes["gen_ai.tool.name"] == "start_run"
    assert span.attributes["agentprocess.organization"] == "acme"
    assert span.attributes["agentprocess.run"] == run_id
    assert span.attributes["agentprocess.outcome"] == "ok"
    assert "error.type" not in span.attributes
    assert span.resource["service.name"] == "agentprocess-api"
    assert span.resource["deployment.environment.name"] == "e2e"
    # The database transaction is a child of the call.
    children = traced.receiver.wait_for(
        lambda: [s for s in traced.receiver.spans() if s.parent_span_id == span.span_id],
        what="child spans")
    transactions = [s for s in children if s.name == "db.transaction"]
    assert transactions and transactions[0].attributes["db.system.name"] == "postgresql"


def test_the_traceparent_header_makes_the_http_span_the_tool_spans_parent(traced):
    trace_id, parent_id, header = traceparent()
    traced.call("get_work", {}, token="agent-1", traceparent=header)
    http_span = traced.receiver.wait_for(
        lambda: [s for s in traced.spans_named("POST /mcp") if s.trace_id == trace_id], what="HTTP span")[0]
    assert http_span.parent_span_id == parent_id
    assert http_span.attributes["http.request.method"] == "POST"
    assert http_span.attributes["http.route"] == "/mcp"
    assert http_span.attributes["http.response.status_code"] == 200
    tool = traced.receiver.wait_for(
        lambda: [s for s in traced.spans_named("tools/call get_work") if s.trace_id == trace_id],
        what="get_work span")[0]
    assert tool.parent_span_id == http_span.span_id


def test_a_refused_call_carries_its_error_code(traced):
    trace_id, _, header = traceparent()
    refused = traced.call("claim", {"runId": "r_missing", "stepId": "x", "requestId": request_id()},
                          token="agent-1", meta={"traceparent": header})
    assert refused["ok"] is False and refused["error"]["code"] == "not_found"
    span = traced.receiver.wait_for(
        lambda: [s for s in traced.spans_named("tools/call claim") if s.trace_id == trace_id], what="claim span")[0]
    assert span.attributes["error.type"] == "not_found"
    assert span.attributes["agentprocess.outcome"] == "not_found"
    assert span.attributes["agentprocess.run"] == "r_missing"
    assert span.attributes["agentprocess.step"] == "x"
    # A refusal is an answer, not a fault of the server.
    assert span.status_code != STATUS_ERROR
    # Its debug log line leads to the same trace.
    lines = [json.loads(line) for line in traced.log.read_text().splitlines() if line.startswith("{")]
    refusals = [line for line in lines if line.get("message") == "tool call refused" and line.get("trace_id") == trace_id]
    assert refusals and refusals[0]["code"] == "not_found" and refusals[0]["span"] == "tools/call"


def test_a_fired_timer_continues_the_trace_of_the_call_that_set_it(traced):
    trace_id, _, run_id, start = start_traced(traced)
    post_advance(traced.base, 120)
    fired = traced.receiver.wait_for(
        lambda: [s for s in traced.spans_named("timer fire") if s.attributes.get("agentprocess.run") == run_id],
        what="timer fire span")[0]
    assert fired.trace_id == trace_id
    assert fired.parent_span_id == start.span_id
    assert fired.attributes["agentprocess.timer"].startswith("pause:wait:")
    assert fired.attributes["agentprocess.timer.lateness_ms"] >= 0


def test_evidence_store_calls_are_spans_of_the_tool_call(traced):
    trace_id, _, header = traceparent()
    uploaded = traced.call("upload", {"fileName": "a.txt", "contentType": "text/plain",
                                      "contentBase64": base64.b64encode(b"bytes").decode(),
                                      "requestId": request_id()}, token="agent-1", meta={"traceparent": header})
    assert uploaded["ok"], uploaded
    tool = traced.receiver.wait_for(
        lambda: [s for s in traced.spans_named("tools/call upload") if s.trace_id == trace_id], what="upload span")[0]
    put = traced.receiver.wait_for(
        lambda: [s for s in traced.spans_named("blob put") if s.parent_span_id == tool.span_id], what="blob span")[0]
    assert put.attributes["agentprocess.blob.store"] == "local"
    assert put.kind == 3  # SpanKind.SPAN_KIND_CLIENT


def test_a_rest_upload_is_a_span_with_the_tools_attributes_and_counted(traced):
    trace_id, parent_id, header = traceparent()
    status, body = rawmcp.post_form(
        f"{traced.base}/v1/uploads",
        {"Authorization": f"Bearer {traced.tokens['alice']}", "Idempotency-Key": request_id(), "traceparent": header},
        [("file", "note.txt", b"a note", "text/plain")],
    )
    assert status == 201, body
    http_span = traced.receiver.wait_for(
        lambda: [s for s in traced.spans_named("POST /v1/uploads") if s.trace_id == trace_id], what="HTTP span")[0]
    assert http_span.parent_span_id == parent_id and http_span.attributes["http.response.status_code"] == 201
    upload = traced.receiver.wait_for(
        lambda: [s for s in traced.spans_named("upload") if s.parent_span_id == http_span.span_id],
        what="upload span")[0]
    assert upload.attributes["gen_ai.tool.name"] == "upload"
    assert upload.attributes["agentprocess.organization"] == "acme"
    assert upload.attributes["agentprocess.outcome"] == "ok"
    assert traced.receiver.wait_for(
        lambda: [p for p in traced.receiver.points() if p.metric == "agentprocess.tool.calls"
                 and p.attributes.get("gen_ai.tool.name") == "upload"], what="upload count")


def test_redis_calls_are_spans_linked_to_the_call_that_set_the_timer():
    receiver = otlp.Receiver()
    env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY="100")
    deployment = Deployment(SHARED_REDIS, api_env=env)
    try:
        trace_id, _, header = traceparent()
        rawmcp.call(deployment.server.base, deployment.server.tokens["alice"], "start_run",
                    {"process": "pause", "inputs": {}, "requestId": request_id()}, meta={"traceparent": header})
        queued = receiver.wait_for(lambda: [s for s in receiver.spans() if s.name == "queue timers"],
                                   what="queue timers span")[0]
        # After the call, on a task of its own: a trace of its own, linked to the call's.
        assert queued.trace_id != trace_id
        assert [linked for linked, _ in queued.links] == [trace_id]
        zadd = receiver.wait_for(
            lambda: [s for s in receiver.spans() if s.name == "ZADD" and s.parent_span_id == queued.span_id],
            what="ZADD span")[0]
        assert zadd.attributes["db.system.name"] == "redis"
        assert zadd.attributes["db.operation.name"] == "ZADD"
    finally:
        deployment.close()
        receiver.close()


def test_a_webhook_attempt_continues_the_trace_through_the_timer_that_ended_the_run():
    # A deployment of its own: its webhook must not reach the other tests' runs.
    traced = Traced("http/protobuf")
    try:
        servers.add_webhook(traced.url, "http://127.0.0.1:9/hook")
        trace_id, _, run_id, _ = start_traced(traced)
        post_advance(traced.base, 120)
        fired = traced.receiver.wait_for(
            lambda: [s for s in traced.spans_named("timer fire") if s.attributes.get("agentprocess.run") == run_id],
            what="timer fire span")[0]
        attempt = traced.receiver.wait_for(
            lambda: [s for s in traced.spans_named("POST") if s.trace_id == trace_id], what="webhook attempt span")[0]
        # run.ended was written while the timer fired: the attempt is that span's child.
        assert attempt.parent_span_id == fired.span_id
        assert attempt.kind == 3  # SpanKind.SPAN_KIND_CLIENT
        assert attempt.attributes["agentprocess.notification"].startswith("ntf_")
    finally:
        traced.close()


def test_the_metrics_arrive_with_their_attributes(traced):
    traced.call("start_run", {"process": "pause", "inputs": {}, "requestId": request_id()})
    traced.call("get_run", {"runId": "r_missing"})

    def point(metric: str, **wanted):
        return [p for p in traced.receiver.points()
                if p.metric == metric and all(p.attributes.get(k) == v for k, v in wanted.items())]

    receive = traced.receiver.wait_for
    assert receive(lambda: point("agentprocess.tool.calls", **{"gen_ai.tool.name": "start_run",
                                                              "agentprocess.outcome": "ok",
                                                              "agentprocess.organization": "acme"}),
                   what="tool calls")
    assert receive(lambda: point("agentprocess.tool.calls", **{"gen_ai.tool.name": "get_run",
                                                              "agentprocess.outcome": "not_found"}),
                   what="refused tool calls")
    durations = receive(lambda: point("mcp.server.operation.duration", **{"gen_ai.tool.name": "start_run"}),
                        what="tool durations")
    assert durations[-1].kind == "histogram" and durations[-1].value >= 1
    assert receive(lambda: point("mcp.server.operation.duration", **{"error.type": "not_found"}),
                   what="refused tool durations")
    assert receive(lambda: point("http.server.request.duration", **{"http.route": "/mcp",
                                                                    "http.request.method": "POST"}),
                   what="HTTP durations")
    assert receive(lambda: point("agentprocess.runs.started", **{"agentprocess.organization": "acme"}),
                   what="runs started")
    assert receive(lambda: point("agentprocess.timers.scheduled", **{"agentprocess.timer.kind": "wait"}),
                   what="timers scheduled")
    assert receive(lambda: point("db.client.connection.count", **{"db.client.connection.state": "idle"}),
                   what="pool connections")
    # The work gauges are sampled by the process that fires the timers (this one).
    assert receive(lambda: point("agentprocess.steps.ready"), what="ready steps")
    assert receive(lambda: point("agentprocess.work_items.open"), what="open work items")
    post_advance(traced.base, 120)
    assert receive(lambda: point("agentprocess.timers.fired", **{"agentprocess.timer.kind": "wait"}),
                   what="timers fired")
    assert receive(lambda: point("agentprocess.timers.lateness"), what="timer lateness")
    assert receive(lambda: point("agentprocess.runs.ended", **{"agentprocess.organization": "acme",
                                                              "agentprocess.run.state": "ended"}),
                   what="runs ended")
    assert receive(lambda: point("agentprocess.run.lock.wait"), what="run lock waits")
    assert {p.resource.get("service.name") for p in traced.receiver.points()} == {"agentprocess-api"}
    # What tenants write (process names, outcomes) is in traces, never a metric's label.
    labels = {key for p in traced.receiver.points() for key in p.attributes}
    assert not labels & {"agentprocess.process", "agentprocess.run.outcome"}, labels


def test_log_lines_are_json_and_hold_no_token_or_secret(traced):
    # A claim token, an upload, output and a summary pass through the server; a refused
    # submission and a lost claim are logged (at debug) on the way.
    run_id = traced.call("start_run", {"process": "filed", "inputs": {}, "requestId": request_id()})["data"]["run"]["id"]
    claim = traced.call("claim", {"runId": run_id, "stepId": "file", "requestId": request_id()}, token="agent-1")
    token = claim["data"]["token"]
    lost = traced.call("claim", {"runId": run_id, "stepId": "file", "requestId": request_id()}, token="agent-2")
    assert lost["ok"] is False
    secret_words = "quartz-heron-4417"
    uploaded = traced.call("upload", {"fileName": f"{secret_words}.txt", "contentType": "text/plain",
                                      "contentBase64": base64.b64encode(secret_words.encode()).decode(),
                                      "requestId": request_id()}, token="agent-1")
    refused = traced.call("submit", {"token": token, "output": {"title": 7}, "summary": secret_words,
                                     "evidence": [{"kind": "file", "ref": uploaded["data"]["id"]}],
                                     "requestId": request_id()}, token="agent-1")
    assert refused["ok"] is False
    done = traced.call("submit", {"token": token, "output": {"title": secret_words}, "summary": secret_words,
                                  "evidence": [{"kind": "file", "ref": uploaded["data"]["id"]}],
                                  "requestId": request_id()}, token="agent-1")
    assert done["ok"], done
    time.sleep(0.5)
    text = traced.log.read_text()
    assert "tool call refused" in text  # the debug lines are on, so this reads them too
    assert token not in text and token.split(".")[-1] not in text, "a claim token is in the log"
    assert secret_words not in text, "run data is in the log"
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines
    for line in lines:
        parsed = json.loads(line)
        assert {"timestamp", "level", "target"} <= set(parsed), line
    for name, token in traced.tokens.items():
        assert token not in text, f"{name}'s bearer token is in the log"
    assert traced.secret.hex() not in text
    assert base64.b64encode(traced.secret).decode() not in text
    assert "postgres://" not in text


@pytest.mark.parametrize("protocol, content_type", [("http/json", "application/json"), ("grpc", "application/grpc")])
def test_otlp_over_http_json_and_grpc_too(protocol, content_type):
    deployment = Traced(protocol)
    try:
        deployment.call("describe", {})
        deployment.receiver.wait_for(lambda: deployment.spans_named("tools/call describe"), what="span")
        deployment.receiver.wait_for(
            lambda: [p for p in deployment.receiver.points() if p.metric == "agentprocess.tool.calls"],
            what="metrics")
        assert deployment.receiver.content_types == {content_type}
    finally:
        deployment.close()


def test_with_no_endpoint_nothing_is_exported_and_the_server_runs(tmp_path):
    database, url, tokens, _ = servers.seed_postgres([PROCESSES / "pause"])
    port = servers.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    log = open(tmp_path / "api.log", "ab")
    process = subprocess.Popen(servers.api_command(url, port, secrets.token_bytes(32), tmp_path), stdout=log,
                               stderr=subprocess.STDOUT, env=env)
    try:
        servers.wait_ready(f"http://127.0.0.1:{port}", process)
        result = rawmcp.call(f"http://127.0.0.1:{port}", tokens["alice"], "describe", {})
        assert result["ok"]
        assert "OTLP" not in (tmp_path / "api.log").read_text()
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0
        servers.psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def dashboard_series() -> set[str]:
    """Every series a query of the dashboard selects (each selector carries a matcher)."""
    def panels(items):
        for panel in items:
            yield panel
            yield from panels(panel.get("panels", []))

    queries = [target["expr"] for panel in panels(json.loads(DASHBOARD.read_text())["panels"])
               for target in panel.get("targets", []) if "expr" in target]
    assert queries
    return {name for query in queries for name in re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{", query)}


def scrape(base: str) -> dict[str, set[str]]:
    """The series of a Prometheus scrape, with the label names each carries."""
    with urllib.request.urlopen(f"{base}/metrics", timeout=5) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    series: dict[str, set[str]] = {}
    for line in text.splitlines():
        match = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ", line)
        if match and not line.startswith("#"):
            labels = set(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)=", match.group(2) or ""))
            series.setdefault(match.group(1), set()).update(labels)
    return series


def test_prometheus_metrics_cover_every_series_of_the_dashboard():
    """The production layout (an API, a scheduler, Redis), each serving /metrics; one
    run of every kind of event the dashboard shows."""
    api_metrics, scheduler_metrics = servers.free_port(), servers.free_port()
    deployment = Deployment(
        SHARED_REDIS,
        flags=("--metrics-listen", f"127.0.0.1:{scheduler_metrics}", "--webhook-allow-private-networks",
               "--allow-plain-http-hooks"),
        api_flags=("--metrics-listen", f"127.0.0.1:{api_metrics}"),
    )
    try:
        base, tokens = deployment.server.base, deployment.server.tokens
        # A webhook that cannot be reached: a delivery attempt to retry.
        servers.add_webhook(deployment.server.database_url, "http://127.0.0.1:9/hook")
        for process in ("pause", "signoff"):
            rawmcp.call(base, tokens["alice"], "start_run",
                        {"process": process, "inputs": {}, "requestId": request_id()})
        rawmcp.call(base, tokens["agent-1"], "get_run", {"runId": "r_missing"})
        deployment.advance(3 * 3600)
        wanted = dashboard_series()
        expected_labels = {
            "agentprocess_tool_calls_total": {"gen_ai_tool_name", "agentprocess_outcome",
                                              "agentprocess_organization"},
            "mcp_server_operation_duration_seconds_bucket": {"gen_ai_tool_name", "agentprocess_organization"},
            "agentprocess_runs_started_total": {"agentprocess_organization"},
            "agentprocess_runs_ended_total": {"agentprocess_organization", "agentprocess_run_state"},
            "agentprocess_timers_lateness_seconds_bucket": {"agentprocess_timer_kind", "le"},
            "agentprocess_webhook_deliveries_total": {"agentprocess_delivery_status"},
            "db_client_connection_count": {"db_client_connection_state", "db_client_connection_pool_name"},
            "http_server_request_duration_seconds_bucket": {"http_route", "http_request_method",
                                                            "http_response_status_code"},
        }

        def missing():
            found: dict[str, set[str]] = {}
            for port in (api_metrics, scheduler_metrics):
                for name, labels in scrape(f"http://127.0.0.1:{port}").items():
                    found.setdefault(name, set()).update(labels)
            absent = {name for name in wanted if name not in found}
            absent |= {name for name, labels in expected_labels.items() if not labels <= found.get(name, set())}
            return absent

        deadline = time.monotonic() + 30
        while (absent := missing()) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert absent == set(), f"the dashboard reads series no service exports: {sorted(absent)}"
        # No organization is listed for metrics here: every series counts acme as `other`,
        # and nothing a tenant wrote is a label.
        for port in (api_metrics, scheduler_metrics):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                text = response.read().decode()
            if port == api_metrics:
                assert 'agentprocess_organization="other"' in text
            assert 'agentprocess_organization="acme"' not in text
            assert "agentprocess_process=" not in text and "agentprocess_run_outcome=" not in text
    finally:
        deployment.close()
