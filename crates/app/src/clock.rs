//! The process's clock: the system's, or one that end-to-end tests move forward.

use std::sync::Arc;

use agentprocess_service::{Clock, Service, SystemClock, TestClock};
use axum::Router;
use serde::Deserialize;

/// The system clock, or a test clock (returned too) when `test` is set.
pub fn clock(test: bool) -> (Arc<dyn Clock>, Option<Arc<TestClock>>) {
    if test {
        let clock = Arc::new(TestClock::default());
        (clock.clone(), Some(clock))
    } else {
        (Arc::new(SystemClock), None)
    }
}

/// `POST /test/clock` with `{ "advanceSeconds": n }` moves `clock` forward and wakes
/// the timer loop. Only for servers started for end-to-end tests.
pub fn test_clock_route(service: Arc<Service>, clock: Arc<TestClock>) -> Router {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Advance {
        advance_seconds: i64,
    }
    let handler = move |axum::Json(advance): axum::Json<Advance>| async move {
        let now = clock.advance(advance.advance_seconds);
        service.wake_timers();
        axum::Json(serde_json::json!({ "now": now.to_string() }))
    };
    Router::new().route("/test/clock", axum::routing::post(handler))
}

/// `router` with `/test/clock` added when a test clock is given.
pub fn with_test_clock(router: Router, service: &Arc<Service>, clock: Option<Arc<TestClock>>) -> Router {
    match clock {
        Some(clock) => {
            tracing::warn!("test clock on: POST /test/clock moves this server's time; never use this in production");
            router.merge(test_clock_route(Arc::clone(service), clock))
        }
        None => router,
    }
}
