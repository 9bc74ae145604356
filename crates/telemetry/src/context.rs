//! W3C trace context across processes: from HTTP headers and MCP `_meta`, into timer
//! rows and back, so one trace follows a call into the timers it sets.

use std::collections::HashMap;

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::TraceContextExt as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The span of the HTTP request a handler serves, left on the request by the HTTP
/// layer so that work handed to other tasks (an MCP tool call) stays in its trace.
#[derive(Debug, Clone)]
pub struct RequestSpan(pub tracing::Span);

struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

struct Fields<'a>(&'a HashMap<&'a str, &'a str>);

impl Extractor for Fields<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).copied()
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().copied().collect()
    }
}

struct Out(HashMap<String, String>);

impl Injector for Out {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}

fn valid(context: Context) -> Option<Context> {
    context.span().span_context().is_valid().then_some(context)
}

/// The caller's trace context in `traceparent`/`tracestate` headers, if valid.
fn from_headers(headers: &http::HeaderMap) -> Option<Context> {
    valid(opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&Headers(headers))
    }))
}

/// A trace context from a `traceparent` (and `tracestate`) value, if valid.
fn from_traceparent(traceparent: &str, tracestate: Option<&str>) -> Option<Context> {
    let mut fields = HashMap::from([("traceparent", traceparent)]);
    if let Some(tracestate) = tracestate {
        fields.insert("tracestate", tracestate);
    }
    valid(opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&Fields(&fields))
    }))
}

/// The `traceparent` of `span`, to be continued elsewhere; `None` when the span is
/// not traced (telemetry off).
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut out = Out(HashMap::new());
    opentelemetry::global::get_text_map_propagator(|propagator| propagator.inject_context(&context, &mut out));
    out.0.remove("traceparent")
}

/// Makes `parent` the parent of `span`, which must not have been entered yet.
fn set_parent(span: &tracing::Span, parent: Option<Context>) {
    if let Some(parent) = parent {
        // Refused only once the span has started, which the callers rule out.
        let _ = span.set_parent(parent);
    }
}

/// Continues the caller's trace (its `traceparent`/`tracestate` headers, if valid) in
/// `span`, which must not have been entered yet.
pub fn continue_from_headers(span: &tracing::Span, headers: &http::HeaderMap) {
    set_parent(span, from_headers(headers));
}

/// Continues the trace a `traceparent` (and `tracestate`) names, if valid, in `span`,
/// which must not have been entered yet: MCP's `params._meta`, a timer row, a
/// notification row.
pub fn continue_from_traceparent(span: &tracing::Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    set_parent(span, traceparent.and_then(|value| from_traceparent(value, tracestate)));
}
