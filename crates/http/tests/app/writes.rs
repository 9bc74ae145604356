//! The write path through the whole router.

use agentprocess_auth::Role;
use agentprocess_store::Dialect;
use serde_json::{Value, json};

use crate::harness::{TestApp, on_both};

fn inputs(amount: Value) -> Value {
    json!({ "item": "Chairs", "supplier": "Acme Chairs", "amount": amount, "costCenter": "CC-4100",
            "neededBy": "2027-01-15" })
}

pub(crate) async fn app_with_a_process(app: TestApp) -> TestApp {
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

on_both!(claim_tokens_are_kept_sealed_and_replayed_in_clear, sealed_tokens);
/// A claim or renew result is recorded for replays with its token sealed: the
/// database holds no usable token, and a replay still answers with the token.
async fn sealed_tokens(app: TestApp) -> TestApp {
    use agentprocess_store::Store as _;
    let app = app_with_a_process(app).await;
    let bot = app.mcp_token("bot").await;
    let start = json!({ "requestId": "s-1", "process": "purchase-order", "inputs": inputs(json!(1200)) });
    let started = app.call(&bot, "start_run", start).await;
    let run = started["data"]["run"]["id"].as_str().expect("run id").to_owned();
    let claim = json!({ "requestId": "c-1", "runId": run, "stepId": "check_budget" });
    let claimed = app.call(&bot, "claim", claim.clone()).await;
    let token = claimed["data"]["token"].as_str().expect("a token").to_owned();
    let renew = json!({ "requestId": "n-1", "token": token });
    let renewed = app.call(&bot, "renew", renew.clone()).await;
    let renewed_token = renewed["data"]["token"].as_str().expect("a new token").to_owned();
    for (request_id, token) in [("c-1", &token), ("n-1", &renewed_token)] {
        let recorded = app.service.store().request(&app.org, request_id).await.expect("read");
        let recorded = recorded.expect("recorded").result;
        let secret = token.split_once('.').map_or(token.as_str(), |(_, secret)| secret);
        assert!(!recorded.contains(secret), "{request_id} holds its token: {recorded}");
    }
    assert_eq!(
        app.call(&bot, "claim", claim).await,
        claimed,
        "the replay answers the token"
    );
    assert_eq!(app.call(&bot, "renew", renew).await, renewed);
    let submit = json!({
        "requestId": "u-1", "token": renewed_token,
        "output": { "budgetRemaining": 25000.00, "supplierActive": true },
        "evidence": [{ "kind": "link", "ref": "https://erp.example.com/reports/budget/CC-4100" }],
        "summary": "Budget covers it", "next": "approval", "reason": "covered",
    });
    let submitted = app.call(&bot, "submit", submit).await;
    assert_eq!(submitted["ok"], true, "the renewed token still works: {submitted}");
    app
}

on_both!(a_large_run_replays_each_write_exactly, large_run_replays);
/// A run whose inputs and a completion are large keeps them as pieces and records its
/// results by reference; every replay still answers byte for byte what the call did.
async fn large_run_replays(app: TestApp) -> TestApp {
    let app = app_with_a_process(app).await;
    let bot = app.mcp_token("bot").await;
    let item = format!("Chairs: {}", "ergonomic, ".repeat(400));
    let amount: Value = serde_json::from_str("1080.50").expect("a number");
    let mut large = inputs(amount);
    large["item"] = json!(item);
    let start = json!({ "requestId": "big-start", "process": "purchase-order", "inputs": large });
    let started = app.call(&bot, "start_run", start.clone()).await;
    assert_eq!(started["ok"], true, "{started}");
    assert_eq!(app.call(&bot, "start_run", start).await, started);
    let run = started["data"]["run"]["id"].as_str().expect("run id").to_owned();

    let claim = json!({ "requestId": "big-claim", "runId": run, "stepId": "check_budget" });
    let claimed = app.call(&bot, "claim", claim.clone()).await;
    assert_eq!(claimed["data"]["data"]["inputs"]["item"], json!(item), "{claimed}");
    assert_eq!(app.call(&bot, "claim", claim).await, claimed);

    let links: Vec<Value> = (0..40)
        .map(|n| json!({ "kind": "link", "ref": format!("https://erp.example.com/reports/budget/CC-4100/{n}") }))
        .collect();
    let submit = json!({
        "requestId": "big-submit", "token": claimed["data"]["token"],
        "output": { "budgetRemaining": 25000.00, "supplierActive": true }, "evidence": links,
        "summary": "Budget covers it", "next": "approval", "reason": "covered",
    });
    let submitted = app.call(&bot, "submit", submit.clone()).await;
    assert_eq!(submitted["ok"], true, "{submitted}");
    let data = &submitted["data"]["data"];
    assert_eq!(
        data["steps"]["check_budget"]["evidence"].as_array().map(Vec::len),
        Some(40)
    );
    assert_eq!(data["inputs"]["amount"].to_string(), "1080.50", "numbers as sent");
    assert_eq!(app.call(&bot, "submit", submit).await, submitted);
    let read = app.call(&bot, "get_run", json!({ "runId": run })).await;
    assert_eq!(read["data"]["data"], *data, "the run reads as the submit answered");
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

pub(crate) const SIGN_OFF: &str = "---
name: sign-off
description: One person signs off a request. Start it when a request needs a named person's yes.
inputs:
  approver:
    type: person
    description: Who signs off
steps:
  - id: sign
    person: inputs.approver
    approve: Sign off the request.
  - id: done
    finish: signed
---
The approver reads the request and signs it off.
";

on_both!(
    a_work_item_for_no_member_warns_on_the_run_and_tells_the_webhooks,
    nobody
);
async fn nobody(app: TestApp) -> TestApp {
    use axum::http::{Method, StatusCode};
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_agent("bot")
        .await;
    let admin = app.api_token("ann", "admin").await;
    app.publish(&admin, "sign-off", SIGN_OFF.as_bytes(), "unused").await;
    let (status, _) = app
        .rest(
            &admin,
            Method::POST,
            "/webhooks",
            Some(json!({ "url": "https://hooks.example.com/a" })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let bot = app.mcp_token("bot").await;
    let mut runs = Vec::new();
    for (request, approver) in [("a", "ann@acme.test"), ("b", "nobody@acme.test")] {
        let arguments = json!({ "requestId": request, "process": "sign-off", "inputs": { "approver": approver } });
        let started = app.call(&bot, "start_run", arguments).await;
        runs.push(started["data"]["run"]["id"].as_str().expect("run").to_owned());
    }
    let (_, known) = app.rest(&admin, Method::GET, &format!("/runs/{}", runs[0]), None).await;
    assert!(known.get("warnings").is_none(), "{known}");
    let (_, unknown) = app.rest(&admin, Method::GET, &format!("/runs/{}", runs[1]), None).await;
    let warnings = unknown["warnings"].to_string();
    assert!(
        warnings.contains("waits for nobody@acme.test, who is no member"),
        "{unknown}"
    );
    let (_, deliveries) = app.rest(&admin, Method::GET, "/webhooks/deliveries", None).await;
    let events: Vec<(String, String)> = deliveries["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| {
            (
                item["event"].as_str().unwrap_or_default().to_owned(),
                item["runId"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert!(
        events.contains(&("work_item.unassignable".to_owned(), runs[1].clone())),
        "{events:?}"
    );
    assert!(
        !events.contains(&("work_item.unassignable".to_owned(), runs[0].clone())),
        "{events:?}"
    );
    app
}

const SIDE_BY_SIDE: &str = "---
name: side-by-side
description: Two agents work on one request side by side. Start it when a request has two independent halves.
inputs:
  topic: string
steps:
  - id: halves
    parallel: [left, right]
    next: done
  - id: left
    agent: Do the left half of the topic.
    output:
      result: string
    next: join
  - id: right
    agent: Do the right half of the topic.
    output:
      result: string
    next: join
  - id: done
    finish: both halves done
---
Each agent does its half; the run ends when both are in.
";

on_both!(writes_on_one_run_at_once_all_land_the_loser_made_again, side_by_side);
async fn side_by_side(app: TestApp) -> TestApp {
    let app = app_with_a_process(app).await;
    let admin = app.api_token("ann", "admin").await;
    app.publish(&admin, "side-by-side", SIDE_BY_SIDE.as_bytes(), "unused")
        .await;
    let (bot, bot2) = (app.mcp_token("bot").await, app.mcp_token("bot2").await);
    // Several runs, so that the two agents' writes on one run meet: each reads the run,
    // and the one whose write finds the run changed makes it again under the lock.
    for round in 0..6 {
        let started = app
            .call(
                &bot,
                "start_run",
                json!({ "requestId": format!("s{round}"), "process": "side-by-side", "inputs": { "topic": "t" } }),
            )
            .await;
        let run = started["data"]["run"]["id"].as_str().expect("run id").to_owned();
        let claim = |request: String, step: &str| json!({ "requestId": request, "runId": run, "stepId": step });
        let (left, right) = tokio::join!(
            app.call(&bot, "claim", claim(format!("cl{round}"), "left")),
            app.call(&bot2, "claim", claim(format!("cr{round}"), "right"))
        );
        assert_eq!((code(&left), code(&right)), ("ok", "ok"), "{left} {right}");
        let submit = |request: String, claimed: &Value| {
            json!({ "requestId": request, "token": claimed["data"]["token"], "output": { "result": "half" },
                    "summary": "Did my half." })
        };
        let (left_done, right_done) = tokio::join!(
            app.call(&bot, "submit", submit(format!("sl{round}"), &left)),
            app.call(&bot2, "submit", submit(format!("sr{round}"), &right))
        );
        assert_eq!(
            (code(&left_done), code(&right_done)),
            ("ok", "ok"),
            "{left_done} {right_done}"
        );
        let read = app.call(&bot, "get_run", json!({ "runId": run })).await;
        assert_eq!(read["data"]["run"]["state"], "ended", "{read}");
        let steps = &read["data"]["data"]["steps"];
        assert_eq!(
            (&steps["left"]["output"]["result"], &steps["right"]["output"]["result"]),
            (&json!("half"), &json!("half")),
            "{read}"
        );
    }
    app
}

/// A write whose run changes under it twice makes its third try holding the run's
/// lock from the start. Another writer holds the run's row, so both lock-free tries
/// find it locked (they do not wait for it; see `store::write`); the third waits for
/// the lock, then reads and writes what the other writer left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_run_changed_twice_tries_a_third_time_under_the_lock() {
    use sqlx::Connection as _;
    let app = app_with_a_process(TestApp::new(Dialect::Postgres).await).await;
    let bot = app.mcp_token("bot").await;
    let started = app
        .call(
            &bot,
            "start_run",
            json!({ "requestId": "s", "process": "purchase-order", "inputs": inputs(json!(1200)) }),
        )
        .await;
    let run = started["data"]["run"]["id"].as_str().expect("run id").to_owned();
    let work = app.call(&bot, "get_work", json!({})).await;
    let step = work["data"]["items"][0]["stepId"]
        .as_str()
        .expect("a ready step")
        .to_owned();
    let url = app.database_url().to_owned();

    let mut other = sqlx::PgConnection::connect(&url).await.expect("connect");
    let mut other_write = other.begin().await.expect("begin");
    sqlx::query("UPDATE runs SET revision = revision + 1 WHERE id = $1")
        .bind(&run)
        .execute(&mut *other_write)
        .await
        .expect("update");
    let claim = app.call(&bot, "claim", json!({ "requestId": "c", "runId": run, "stepId": step }));
    let land = async {
        agentprocess_testkit::lock_waits_reach(&url, 1).await;
        other_write.commit().await.expect("commit");
    };
    let (claimed, ()) = tokio::join!(claim, land);
    assert_eq!(code(&claimed), "ok", "{claimed}");
    assert!(claimed["data"]["token"].is_string(), "{claimed}");
    let revision: i64 = sqlx::query_scalar("SELECT revision FROM runs WHERE id = $1")
        .bind(&run)
        .fetch_one(&mut other)
        .await
        .expect("revision");
    // Started (0), the other write (1), the claim (2).
    assert_eq!(revision, 2);
    app.finish().await;
}
