//! The call deadline: a call held up past it is answered `retry`, changes nothing,
//! and goes through once whatever held it up is gone.

use std::time::Duration;

use agentprocess_store::Dialect;
use serde_json::{Value, json};
use sqlx::{Connection as _, PgConnection};

use crate::harness::TestApp;
use crate::writes::app_with_a_process;

fn code(result: &Value) -> &str {
    result["error"]["code"].as_str().unwrap_or("ok")
}

/// PostgreSQL only: the call is held up by another client's lock on the run's row,
/// which SQLite (one connection, whole-database locks) has no equivalent of.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_held_past_its_deadline_is_answered_retry_and_changes_nothing() {
    let app = TestApp::with_call_deadline(Dialect::Postgres, Duration::from_millis(500)).await;
    let app = app_with_a_process(app).await;
    let bot = app.mcp_token("bot").await;
    let inputs = json!({ "item": "Chairs", "supplier": "Acme Chairs", "amount": 1200, "costCenter": "CC-4100",
                         "neededBy": "2027-01-15" });
    let started = app
        .call(
            &bot,
            "start_run",
            json!({ "requestId": "s-1", "process": "purchase-order", "inputs": inputs }),
        )
        .await;
    let run = started["data"]["run"]["id"].as_str().expect("a run").to_owned();

    // Another client locks the run's row and keeps its transaction open.
    let mut other = PgConnection::connect(app.database_url()).await.expect("another client");
    let mut held = other.begin().await.expect("a transaction");
    sqlx::query("SELECT 1 FROM runs WHERE org_id = $1 AND id = $2 FOR UPDATE")
        .bind(&app.org)
        .bind(&run)
        .execute(&mut *held)
        .await
        .expect("the row locked");

    // More calls than the pool has connections, each past its deadline: every one is
    // answered, with `retry`.
    let claim = json!({ "requestId": "c-1", "runId": run, "stepId": "check_budget" });
    for _ in 0..10 {
        let answer = tokio::time::timeout(Duration::from_secs(10), app.call(&bot, "claim", claim.clone()))
            .await
            .expect("answered, not left waiting on the lock");
        assert_eq!(code(&answer), "retry", "{answer}");
    }

    // The lock gone and the pool's connections back, the run shows nothing was
    // claimed, and the same call (the same requestId: nothing was recorded) goes
    // through.
    held.rollback().await.expect("released");
    let view = answered(&app, &bot, "get_run", json!({ "runId": run })).await;
    assert_eq!(
        view["data"]["steps"][0]["state"], "ready",
        "nothing was claimed: {view}"
    );
    let claimed = answered(&app, &bot, "claim", claim).await;
    assert_eq!(claimed["ok"], true, "{claimed}");
    let view = app.call(&bot, "get_run", json!({ "runId": run })).await;
    assert_eq!(view["data"]["steps"][0]["state"], "claimed", "{view}");
    app.finish().await;
}

/// The call's answer once it is not `retry`, trying for up to 15 s while connections
/// the calls past their deadline left behind are checked and replaced.
async fn answered(app: &TestApp, token: &str, tool: &str, arguments: Value) -> Value {
    for _ in 0..60 {
        let answer = app.call(token, tool, arguments.clone()).await;
        if code(&answer) != "retry" {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("{tool} still answered retry after 15 s");
}
