//! Log lines. As JSON, one object a line: `timestamp`, `level`, `target`, `message`,
//! the event's fields, the innermost `span`, and the OpenTelemetry `trace_id` and
//! `span_id` of the span the event happened in, so a line leads to its trace.
//!
//! What goes into a line is what the code logs: callers log ids (organization, run,
//! step, timer) and error texts, never tokens, secrets, arguments or run data.

use std::fmt;

use opentelemetry::trace::TraceContextExt as _;
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime as _, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Info from our crates; the HTTP and database libraries only when something is wrong.
pub(crate) const DEFAULT_FILTER: &str = "info,rmcp=warn,sqlx=warn,h2=warn,tonic=warn,hyper=warn,opentelemetry=warn";

/// The JSON line format.
pub(crate) struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let mut line = Map::new();
        let mut timestamp = String::new();
        SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
        line.insert("timestamp".to_owned(), Value::String(timestamp));
        let metadata = event.metadata();
        line.insert("level".to_owned(), Value::String(metadata.level().to_string()));
        line.insert("target".to_owned(), Value::String(metadata.target().to_owned()));
        let mut fields = Fields(Map::new());
        event.record(&mut fields);
        // The message first, then the fields in the order they were written.
        if let Some(message) = fields.0.remove("message") {
            line.insert("message".to_owned(), message);
        }
        line.extend(fields.0);
        // The event's explicit parent, else the span it happened in.
        let span = if event.is_root() {
            None
        } else {
            event
                .parent()
                .and_then(|id| ctx.span(id))
                .or_else(|| ctx.lookup_current())
        };
        if let Some(span) = span {
            line.insert("span".to_owned(), Value::String(span.name().to_owned()));
            let context = tracing::dispatcher::get_default(|dispatch| {
                tracing_opentelemetry::get_otel_context(&span.id(), dispatch)
            })
            .unwrap_or_default();
            let span_context = context.span().span_context().clone();
            if span_context.is_valid() {
                line.insert(
                    "trace_id".to_owned(),
                    Value::String(span_context.trace_id().to_string()),
                );
                line.insert("span_id".to_owned(), Value::String(span_context.span_id().to_string()));
            }
        }
        writeln!(writer, "{}", Value::Object(line))
    }
}

/// An event's fields as JSON values.
struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), Value::String(format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), Value::String(value.to_owned()));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), Value::Bool(value));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0.insert(field.name().to_owned(), Value::String(value.to_string()));
    }
}
