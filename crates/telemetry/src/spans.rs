//! Spans of calls to other systems. They are made only inside traced work (a call,
//! a scheduler pass): a scheduler polls Redis ten times a second, and a trace per
//! poll would bury everything else.

use tracing::Span;

fn traced() -> bool {
    !Span::current().is_none()
}

/// A Redis command (`ZADD`, `ZREM`, `EVALSHA`, …), after the database client
/// semantic conventions.
pub fn redis(operation: &'static str) -> Span {
    if !traced() {
        return Span::none();
    }
    tracing::info_span!(
        "redis",
        otel.name = operation,
        otel.kind = "client",
        db.system.name = "redis",
        db.operation.name = operation,
    )
}

/// An evidence store call: `operation` (`put`, `get`, `delete`) on `store` (`s3`,
/// `local`).
pub fn blob(operation: &'static str, store: &'static str) -> Span {
    if !traced() {
        return Span::none();
    }
    tracing::info_span!(
        "blob",
        otel.name = %format_args!("blob {operation}"),
        otel.kind = "client",
        agentprocess.blob.operation = operation,
        agentprocess.blob.store = store,
    )
}

/// A root span for work started on behalf of the current span but finishing after
/// it (a child would hold the current span open until it ends): linked to it instead.
pub fn follows_current(name: &'static str) -> Span {
    let current = Span::current();
    if current.is_none() {
        return Span::none();
    }
    let span = tracing::info_span!(parent: None, "follow-up", otel.name = name);
    span.follows_from(&current);
    span
}
