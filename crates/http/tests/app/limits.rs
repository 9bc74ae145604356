//! Limits per organization: over a rate an organization's calls answer `retry` (MCP)
//! or 429 with `Retry-After` (REST) and change nothing, while another organization is
//! served; open runs and stored bytes are capped; admins lower limits, never raise
//! them.

use std::time::Duration;

use agentprocess_service::LimitValues;
use agentprocess_store::Dialect;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use base64::Engine as _;
use serde_json::{Value, json};
use tower::ServiceExt as _;

use crate::harness::{TestApp, on_both};
use crate::writes::app_with_a_process;

fn code(result: &Value) -> &str {
    result["error"]["code"].as_str().unwrap_or("ok")
}

fn first_issue(result: &Value) -> &str {
    result["error"]["issues"][0].as_str().unwrap_or_default()
}

fn start(request: &str) -> Value {
    json!({ "requestId": request, "process": "purchase-order",
            "inputs": { "item": "Chairs", "supplier": "Acme Chairs", "amount": 1200, "costCenter": "CC-4100",
                        "neededBy": "2027-01-15" } })
}

fn upload(request: &str, text: &str) -> Value {
    json!({ "requestId": request, "fileName": "note.txt", "contentType": "text/plain",
            "contentBase64": base64::engine::general_purpose::STANDARD.encode(text) })
}

/// Grants `org` `limits` as the platform's operators do, and has the server read them
/// now.
async fn grant(app: &TestApp, org: &str, limits: LimitValues) {
    app.service
        .admin()
        .grant_limits(org, &limits, true)
        .await
        .expect("granted");
    app.service.limits_changed(org);
}

/// A second organization with an agent, and the agent's token.
async fn another_org(app: &TestApp) -> String {
    let admin = app.service.admin();
    admin.create_org("globex", "Globex").await.expect("org");
    admin
        .create_identity("globex", None, "g-bot", "g-bot", None, &[])
        .await
        .expect("agent");
    admin.issue_token("globex", "g-bot").await.expect("token")
}

/// Sends `request` and answers its status, `Retry-After` and JSON body.
async fn sent(app: &TestApp, request: Request<Body>) -> (StatusCode, Option<String>, Value) {
    let response = app.router.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let retry_after = response
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("body");
    (
        status,
        retry_after,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

on_both!(
    over_a_rate_calls_answer_retry_and_429_and_another_organization_is_served,
    rates
);
async fn rates(app: TestApp) -> TestApp {
    let app = app_with_a_process(app).await;
    let bot = app.mcp_token("bot").await;
    let admin = app.api_token("ann", "admin").await;
    let other = another_org(&app).await;
    grant(
        &app,
        "acme",
        LimitValues {
            writes_per_second: Some(1),
            ..LimitValues::default()
        },
    )
    .await;

    // A bucket holds two seconds' worth: two writes pass, the third is refused.
    for request in ["s-1", "s-2"] {
        assert_eq!(code(&app.call(&bot, "start_run", start(request)).await), "ok");
    }
    let refused = app.call(&bot, "start_run", start("s-3")).await;
    assert_eq!(code(&refused), "retry", "{refused}");
    assert!(first_issue(&refused).starts_with("writesPerSecond:"), "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("acme is at its limit of 1 writes per second"),
        "{message}"
    );

    // Reads are not writes; another organization's writes are its own.
    let listed = app.call(&bot, "list_runs", json!({})).await;
    assert_eq!(listed["data"]["items"].as_array().map(Vec::len), Some(2), "{listed}");
    assert_eq!(code(&app.call(&other, "upload", upload("g-1", "hello")).await), "ok");

    // Over REST: 429 with Retry-After, the protocol's body, and nothing changed.
    let rename = Request::builder()
        .method(Method::PATCH)
        .uri("/api/v1/organization")
        .header(header::HOST, "localhost")
        .header(header::AUTHORIZATION, format!("Bearer {admin}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json!({ "name": "Renamed" }).to_string()))
        .expect("request");
    let (status, retry_after, body) = sent(&app, rename).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert_eq!(body["code"], "retry", "{body}");
    let (_, organization) = app.rest(&admin, Method::GET, "/organization", None).await;
    assert_ne!(organization["name"], "Renamed");

    // The refused start, sent again once the bucket refilled, goes through once.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let again = app.call(&bot, "start_run", start("s-3")).await;
    assert_eq!(code(&again), "ok", "{again}");
    let listed = app.call(&bot, "list_runs", json!({})).await;
    assert_eq!(listed["data"]["items"].as_array().map(Vec::len), Some(3), "{listed}");
    app
}

on_both!(open_runs_and_stored_bytes_are_capped_for_the_organization, caps);
async fn caps(app: TestApp) -> TestApp {
    let app = app_with_a_process(app).await;
    let bot = app.mcp_token("bot").await;
    let admin = app.api_token("ann", "admin").await;
    let ann = app.mcp_token("ann").await;
    grant(
        &app,
        "acme",
        LimitValues {
            open_runs: Some(2),
            stored_bytes: Some(10),
            ..LimitValues::default()
        },
    )
    .await;

    let first = app.call(&bot, "start_run", start("s-1")).await;
    let run = first["data"]["run"]["id"].as_str().expect("a run").to_owned();
    assert_eq!(code(&app.call(&bot, "start_run", start("s-2")).await), "ok");
    let refused = app.call(&bot, "start_run", start("s-3")).await;
    assert_eq!(code(&refused), "retry", "{refused}");
    assert!(first_issue(&refused).starts_with("openRuns:"), "{refused}");
    // A start already made is answered as it was, cap or not.
    let replayed = app.call(&bot, "start_run", start("s-1")).await;
    assert_eq!(replayed["data"]["run"]["id"], run.as_str(), "{replayed}");
    // A run ended makes room.
    let cancelled = app
        .call(
            &ann,
            "cancel",
            json!({ "requestId": "c-1", "runId": run, "reason": "room" }),
        )
        .await;
    assert_eq!(code(&cancelled), "ok", "{cancelled}");
    assert_eq!(code(&app.call(&bot, "start_run", start("s-3")).await), "ok");

    assert_eq!(code(&app.call(&bot, "upload", upload("u-1", "12345678")).await), "ok");
    let refused = app.call(&bot, "upload", upload("u-2", "123")).await;
    assert_eq!(code(&refused), "retry", "{refused}");
    assert!(first_issue(&refused).starts_with("storedBytes:"), "{refused}");
    // The same over POST /v1/uploads: 429, refused before the body is stored.
    let boundary = "limit-boundary";
    let form = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"n.txt\"\r\n\
         Content-Type: text/plain\r\n\r\n123\r\n--{boundary}--\r\n"
    );
    let posted = Request::post("/v1/uploads")
        .header(header::HOST, "localhost")
        .header(header::AUTHORIZATION, format!("Bearer {bot}"))
        .header("idempotency-key", "u-3")
        .header(
            header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(Body::from(form))
        .expect("request");
    let (status, retry_after, body) = sent(&app, posted).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(retry_after.as_deref(), Some("60"));
    assert_eq!(body["error"]["code"], "retry", "{body}");

    let (status, view) = app.rest(&admin, Method::GET, "/organization/limits", None).await;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(
        (view["openRuns"].as_u64(), view["storedBytes"].as_u64()),
        (Some(2), Some(8)),
        "{view}"
    );
    let stored = view["limits"]
        .as_array()
        .and_then(|limits| limits.iter().find(|limit| limit["name"] == "storedBytes"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        stored,
        json!({ "name": "storedBytes", "value": 10, "ceiling": 10, "chosen": null, "per": "organization" })
    );
    app
}

on_both!(admins_lower_their_limits_and_cannot_raise_them, choices);
async fn choices(app: TestApp) -> TestApp {
    let app = app_with_a_process(app).await;
    let bot = app.mcp_token("bot").await;
    let admin = app.api_token("ann", "admin").await;
    let read = app.api_token("ann", "read").await;
    let member = app.api_token("bob", "read").await;
    grant(
        &app,
        "acme",
        LimitValues {
            calls_per_second: Some(100),
            identity_calls_per_second: Some(100),
            writes_per_second: Some(50),
            ..LimitValues::default()
        },
    )
    .await;

    let (status, view) = app.rest(&member, Method::GET, "/organization/limits", None).await;
    assert_eq!(status, StatusCode::OK, "members read the limits: {view}");
    // Per identity, so that the bot's bucket is untouched by the admins' requests.
    let lower = json!({ "identityCallsPerSecond": 1 });
    assert_eq!(
        app.rest(&member, Method::PUT, "/organization/limits", Some(lower.clone()))
            .await
            .0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        app.rest(&read, Method::PUT, "/organization/limits", Some(lower.clone()))
            .await
            .0,
        StatusCode::FORBIDDEN
    );
    let (status, refused) = app
        .rest(
            &admin,
            Method::PUT,
            "/organization/limits",
            Some(json!({ "callsPerSecond": 0, "writesPerSecond": 51 })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(
        refused["issues"].as_array().map(Vec::len),
        Some(2),
        "every issue at once: {refused}"
    );
    assert!(
        refused["issues"][0]
            .as_str()
            .unwrap_or_default()
            .starts_with("callsPerSecond: at least 1")
    );
    assert!(
        refused["issues"][1]
            .as_str()
            .unwrap_or_default()
            .starts_with("writesPerSecond: at most 50")
    );
    let (status, unknown) = app
        .rest(
            &admin,
            Method::PUT,
            "/organization/limits",
            Some(json!({ "runsPerDay": 1 })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{unknown}");

    let (status, chosen) = app.rest(&admin, Method::PUT, "/organization/limits", Some(lower)).await;
    assert_eq!(status, StatusCode::OK, "{chosen}");
    let identity = chosen["limits"]
        .as_array()
        .and_then(|limits| limits.iter().find(|limit| limit["name"] == "identityCallsPerSecond"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        identity,
        json!({ "name": "identityCallsPerSecond", "value": 1, "ceiling": 100, "chosen": 1, "per": "process" })
    );
    // Read from the store: ann herself is now held to one call a second.
    let filter = agentprocess_store::AuditFilter {
        kind: Some("limits.chosen".to_owned()),
        ..agentprocess_store::AuditFilter::default()
    };
    let (entries, _) = app.auth.audit("acme", &filter).await.expect("the log");
    assert_eq!(entries.len(), 1, "{entries:?}");

    // In force at once: the bot's bucket holds two calls.
    for request in ["s-1", "s-2"] {
        assert_eq!(code(&app.call(&bot, "start_run", start(request)).await), "ok");
    }
    let refused = app.call(&bot, "start_run", start("s-3")).await;
    assert!(
        first_issue(&refused).starts_with("identityCallsPerSecond:"),
        "{refused}"
    );
    app
}

/// PostgreSQL only: a call is kept in progress by another client's lock on its run's
/// row, which SQLite has no equivalent of.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_its_bound_of_calls_in_progress_an_organization_waits_then_retries_while_another_is_served() {
    use sqlx::{Connection as _, PgConnection};

    let app = app_with_a_process(TestApp::new(Dialect::Postgres).await).await;
    let bot = app.mcp_token("bot").await;
    let bot2 = app.mcp_token("bot2").await;
    let other = another_org(&app).await;
    let started = app.call(&bot, "start_run", start("s-1")).await;
    let run = started["data"]["run"]["id"].as_str().expect("a run").to_owned();
    grant(
        &app,
        "acme",
        LimitValues {
            concurrent_calls: Some(1),
            ..LimitValues::default()
        },
    )
    .await;

    let mut holder = PgConnection::connect(app.database_url()).await.expect("another client");
    let mut held = holder.begin().await.expect("a transaction");
    sqlx::query("SELECT 1 FROM runs WHERE org_id = $1 AND id = $2 FOR UPDATE")
        .bind("acme")
        .bind(&run)
        .execute(&mut *held)
        .await
        .expect("the row locked");

    let claim = json!({ "requestId": "c-1", "runId": run, "stepId": "check_budget" });
    let (claimed, (waited, served)) = tokio::join!(app.call(&bot, "claim", claim), async {
        // The claim is in progress, waiting on the lock: acme's one place is taken.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let served = std::time::Instant::now();
        let other_answer = app.call(&other, "describe", json!({})).await;
        let served = (served.elapsed(), other_answer);
        let waited = std::time::Instant::now();
        let refused = app.call(&bot2, "get_work", json!({})).await;
        let waited = (waited.elapsed(), refused);
        held.rollback().await.expect("released");
        (waited, served)
    });
    assert_eq!(code(&served.1), "ok", "{}", served.1);
    assert!(
        served.0 < Duration::from_secs(1),
        "another organization waited {:?}",
        served.0
    );
    assert_eq!(code(&waited.1), "retry", "{}", waited.1);
    assert!(first_issue(&waited.1).starts_with("concurrentCalls:"), "{}", waited.1);
    assert!(
        waited.0 >= Duration::from_secs(2),
        "it waited for a place first: {:?}",
        waited.0
    );
    assert_eq!(code(&claimed), "ok", "the call in progress finished: {claimed}");
    assert_eq!(code(&app.call(&bot2, "get_work", json!({})).await), "ok");
    app.finish().await;
}
