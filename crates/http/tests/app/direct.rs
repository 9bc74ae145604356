//! Plain tool calls answered on the direct path give the very answer rmcp gives.

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt as _;

use crate::harness::{TestApp, on_both};

/// Status, headers that matter and the body, byte for byte.
async fn answer(router: &Router, token: &str, version: Option<&str>, body: &Value) -> (StatusCode, HeaderMap, Vec<u8>) {
    let mut request = Request::post("/mcp")
        .header(header::HOST, "localhost")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream");
    if let Some(version) = version {
        request = request.header("mcp-protocol-version", version);
    }
    let request = request.body(Body::from(body.to_string())).expect("request");
    let response = router.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let mut headers = response.headers().clone();
    // Set by the server's own layers on both paths alike, or per response.
    headers.remove(header::DATE);
    let bytes = axum::body::to_bytes(response.into_body(), 16 << 20)
        .await
        .expect("body");
    (status, headers, bytes.to_vec())
}

on_both!(direct_tool_calls_answer_byte_for_byte_as_rmcp_does, same_answers);
async fn same_answers(app: TestApp) -> TestApp {
    let app = crate::writes::app_with_a_process(app).await;
    let bot = app.mcp_token("bot").await;
    let started = app
        .call(
            &bot,
            "start_run",
            json!({ "requestId": "r1", "process": "purchase-order", "inputs": {
                "item": "Chairs", "supplier": "Acme Chairs", "amount": 1.20e3, "costCenter": "CC-4100",
                "neededBy": "2027-01-15" } }),
        )
        .await;
    assert_eq!(started["ok"], true, "{started}");
    let run = started["data"]["run"]["id"].as_str().expect("run id").to_owned();

    let rmcp = app.router_through_rmcp();
    let calls = [
        ("get_work", json!({ "limit": 5 })),
        ("get_run", json!({ "runId": run })),
        ("get_run", json!({ "runId": "no-such-run" })),
        ("list_runs", json!({ "process": "purchase-order" })),
        // Refused, so nothing changes between the two calls.
        (
            "start_run",
            json!({ "requestId": "r2", "process": "purchase-order", "inputs": { "amount": "x" } }),
        ),
        ("claim", json!({ "runId": run })),
    ];
    let mut compared = 0;
    for (tool, arguments) in calls {
        for version in [None, Some("2025-03-26"), Some("2025-06-18"), Some("2025-11-25")] {
            for (id, meta) in [
                (json!(3), Value::Null),
                (
                    json!("call-3"),
                    json!({ "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" }),
                ),
            ] {
                let mut params = json!({ "name": tool, "arguments": arguments });
                if !meta.is_null() {
                    params["_meta"] = meta;
                }
                let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
                let direct = answer(&app.router, &bot, version, &body).await;
                let through_rmcp = answer(&rmcp, &bot, version, &body).await;
                assert_eq!(direct.0, StatusCode::OK, "{tool} {version:?}");
                assert_eq!(
                    (direct.0, &direct.1, String::from_utf8_lossy(&direct.2)),
                    (
                        through_rmcp.0,
                        &through_rmcp.1,
                        String::from_utf8_lossy(&through_rmcp.2)
                    ),
                    "{tool} {version:?} {id}"
                );
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 48);
    app
}
