//! The write path through the whole router.

use agentprocess_auth::Role;
use serde_json::{Value, json};

use crate::harness::{TestApp, on_both};

fn inputs(amount: Value) -> Value {
    json!({ "item": "Chairs", "supplier": "Acme Chairs", "amount": amount, "costCenter": "CC-4100",
            "neededBy": "2027-01-15" })
}

async fn app_with_a_process(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_member("bob", Role::Member, &["buyers"])
        .await
        .with_agent("bot")
        .await
        .with_agent("bot2")
        .await;
    let admin = app.api_token("ann", "admin").await;
    app.publish_example(&admin, "purchase-order", "buyers").await;
    app
}

fn code(result: &Value) -> &str {
    result["error"]["code"].as_str().unwrap_or("ok")
}

on_both!(a_replay_answers_the_same_and_other_arguments_conflict, replay);
async fn replay(app: TestApp) -> TestApp {
    let app = app_with_a_process(app).await;
    let bot = app.mcp_token("bot").await;
    let start = |request: &str, amount: Value| json!({ "requestId": request, "process": "purchase-order", "inputs": inputs(amount) });
    let first = app.call(&bot, "start_run", start("r1", json!(1200))).await;
    assert_eq!(first["ok"], true, "{first}");
    let again = app.call(&bot, "start_run", start("r1", json!(1200))).await;
    assert_eq!(again, first, "a replay answers exactly what the first call did");
    let other = app.call(&bot, "start_run", start("r1", json!(99))).await;
    assert_eq!(code(&other), "conflict", "{other}");
    let listed = app.call(&bot, "list_runs", json!({})).await;
    assert_eq!(
        listed["data"]["items"].as_array().map(Vec::len),
        Some(1),
        "one run, whatever was replayed"
    );

    // A refusal records nothing: the same requestId then succeeds with right arguments.
    let refused = app.call(&bot, "start_run", start("r2", json!("lots"))).await;
    assert_eq!(code(&refused), "invalid", "{refused}");
    let retried = app.call(&bot, "start_run", start("r2", json!(50))).await;
    assert_eq!(retried["ok"], true, "{retried}");
    app
}

on_both!(two_agents_claiming_one_step_at_once_get_one_claim, race);
async fn race(app: TestApp) -> TestApp {
    let app = app_with_a_process(app).await;
    let (bot, bot2) = (app.mcp_token("bot").await, app.mcp_token("bot2").await);
    let started = app
        .call(
            &bot,
            "start_run",
            json!({ "requestId": "s", "process": "purchase-order", "inputs": inputs(json!(10)) }),
        )
        .await;
    let run = started["data"]["run"]["id"].as_str().expect("run id").to_owned();
    let claim = |request: &'static str| json!({ "requestId": request, "runId": run, "stepId": "check_budget" });
    let (one, two) = tokio::join!(
        app.call(&bot, "claim", claim("c1")),
        app.call(&bot2, "claim", claim("c2"))
    );
    let codes = [code(&one), code(&two)];
    assert!(codes.contains(&"ok") && codes.contains(&"conflict"), "{one} {two}");
    app
}
