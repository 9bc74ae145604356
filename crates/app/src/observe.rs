//! The span and the duration metric of every HTTP request (the HTTP semantic
//! conventions), continuing the caller's trace from `traceparent`.
//!
//! Only the method, the route pattern and the status are recorded: never the query
//! (file URLs carry signatures there) or a header.

use std::time::Instant;

use agentprocess_telemetry::KeyValue;
use agentprocess_telemetry::context::RequestSpan;
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument as _;

/// Wraps one request (but a health probe) in its span and records its duration.
pub(crate) async fn request(mut request: Request, next: Next) -> Response {
    let method = request.method().as_str().to_owned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "other".to_owned(), |path| path.as_str().to_owned());
    // Probes every few seconds would bury the calls in traces.
    if route == "/healthz" || route == "/readyz" {
        return next.run(request).await;
    }
    let span = tracing::info_span!(
        "HTTP",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        http.route = %route,
        http.response.status_code = tracing::field::Empty,
    );
    agentprocess_telemetry::context::continue_from_headers(&span, request.headers());
    request.extensions_mut().insert(RequestSpan(span.clone()));
    let started = Instant::now();
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    span.record("http.response.status_code", i64::from(status));
    if response.status().is_server_error() {
        span.record("otel.status_code", "error");
    }
    agentprocess_telemetry::metrics().http_duration.record(
        started.elapsed().as_secs_f64(),
        &[
            KeyValue::new("http.request.method", method),
            KeyValue::new("http.route", route),
            KeyValue::new("http.response.status_code", i64::from(status)),
        ],
    );
    response
}
