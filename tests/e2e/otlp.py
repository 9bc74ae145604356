"""A small OTLP receiver on 127.0.0.1, built on the `opentelemetry-proto` messages:
over HTTP it accepts what an OpenTelemetry SDK exports (`/v1/traces`, `/v1/metrics`,
`/v1/logs`, protobuf or JSON), over gRPC the trace and metrics services; it keeps
what arrives for the tests to read."""

from __future__ import annotations

import threading
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

import servers

SIGNALS = {
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
    "/v1/logs": (ExportLogsServiceRequest, None),
}


def value_of(value: AnyValue):
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def attributes(pairs) -> dict:
    return {pair.key: value_of(pair.value) for pair in pairs}


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    attributes: dict
    resource: dict
    status_code: int
    links: list  # (trace id, span id) of each linked span


@dataclass
class Point:
    metric: str
    kind: str
    attributes: dict
    resource: dict
    value: float


@dataclass
class Receiver:
    """The receiver; `endpoint` is what OTEL_EXPORTER_OTLP_ENDPOINT takes. `grpc`: an
    OTLP/gRPC receiver instead of OTLP/HTTP."""

    grpc: bool = False
    requests: list = field(default_factory=list)
    content_types: set = field(default_factory=set)

    def keep(self, path: str, message, content_type: str) -> None:
        with self.lock:
            self.requests.append((path, message))
            self.content_types.add(content_type)

    def __post_init__(self) -> None:
        receiver = self
        self.lock = threading.Lock()
        if self.grpc:
            self._serve_grpc()
            return

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                message_types = SIGNALS.get(self.path)
                if message_types is None:
                    self.send_error(404)
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                content_type = self.headers.get("Content-Type", "")
                message = message_types[0]()
                if content_type.startswith("application/json"):
                    json_format.Parse(body, message)
                else:
                    message.ParseFromString(body)
                receiver.keep(self.path, message, content_type)
                answer = message_types[1]().SerializeToString() if message_types[1] else b""
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _serve_grpc(self) -> None:
        receiver = self

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request, context):  # noqa: N802 (the service's name)
                receiver.keep("/v1/traces", request, "application/grpc")
                return ExportTraceServiceResponse()

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request, context):  # noqa: N802 (the service's name)
                receiver.keep("/v1/metrics", request, "application/grpc")
                return ExportMetricsServiceResponse()

        self.grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), self.grpc_server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), self.grpc_server)
        self.port = self.grpc_server.add_insecure_port("127.0.0.1:0")
        self.grpc_server.start()

    @property
    def endpoint(self) -> str:
        port = self.port if self.grpc else self.server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def close(self) -> None:
        if self.grpc:
            self.grpc_server.stop(grace=None)
            return
        self.server.shutdown()
        self.server.server_close()

    def _of(self, path: str) -> list:
        with self.lock:
            return [message for kind, message in self.requests if kind == path]

    def spans(self) -> list[Span]:
        found = []
        for message in self._of("/v1/traces"):
            for resource_spans in message.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        found.append(Span(
                            span.name, span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(),
                            span.kind, attributes(span.attributes), resource, span.status.code,
                            [(link.trace_id.hex(), link.span_id.hex()) for link in span.links],
                        ))
        return found

    def points(self) -> list[Point]:
        found = []
        for message in self._of("/v1/metrics"):
            for resource_metrics in message.resource_metrics:
                resource = attributes(resource_metrics.resource.attributes)
                for scope_metrics in resource_metrics.scope_metrics:
                    for metric in scope_metrics.metrics:
                        kind = metric.WhichOneof("data")
                        for point in getattr(metric, kind).data_points:
                            if kind == "histogram":
                                value = point.count
                            else:
                                value = point.as_int if point.WhichOneof("value") == "as_int" else point.as_double
                            found.append(Point(metric.name, kind, attributes(point.attributes), resource, value))
        return found

    def wait_for(self, check, timeout: float = 20.0, what: str = "telemetry"):
        """Polls `check()` until it returns something truthy."""
        return servers.eventually(check, timeout, what)
