//! `/healthz` and `/readyz`.

use agentprocess_store::Store;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::Draining;

/// `/readyz`: 200 when the database answers with every migration of this build
/// applied and the timer queue (when given) answers; 503 naming what is not, or while
/// the process shuts down.
pub async fn readiness(
    store: &agentprocess_store::SqlStore,
    queue: Option<&dyn agentprocess_timers::TimerQueue>,
    draining: Option<&Draining>,
) -> Response {
    let unready = |reason: String| {
        tracing::warn!(reason = %reason, "not ready");
        (StatusCode::SERVICE_UNAVAILABLE, reason).into_response()
    };
    if draining.is_some_and(Draining::is_draining) {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down").into_response();
    }
    match store.pending_migrations().await {
        Ok(pending) if pending.is_empty() => {}
        Ok(pending) => {
            let versions: Vec<String> = pending.iter().map(i64::to_string).collect();
            return unready(format!("migrations not applied: {}", versions.join(", ")));
        }
        Err(error) => return unready(format!("database unreachable: {error}")),
    }
    if let Some(queue) = queue
        && let Err(error) = queue.ping().await
    {
        return unready(format!("timer queue unreachable: {error}"));
    }
    (StatusCode::OK, "ready").into_response()
}

/// `/healthz` and `/readyz` of a process that serves nothing else (the scheduler):
/// ready while the database and the timer queue answer.
pub fn routes(service: std::sync::Arc<agentprocess_service::Service>) -> axum::Router {
    async fn ready(
        axum::extract::State(service): axum::extract::State<std::sync::Arc<agentprocess_service::Service>>,
        draining: Option<axum::Extension<Draining>>,
    ) -> Response {
        readiness(
            service.store(),
            service.timer_queue().map(|queue| &**queue),
            draining.as_deref(),
        )
        .await
    }
    axum::Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .route("/readyz", axum::routing::get(ready))
        .with_state(service)
}
