//! The organization's policies of who decides, over MCP and REST: off, the person who
//! started a run is offered and decides its approvals; with the policies on, they are
//! not offered them and a `decide` from them is `forbidden` naming the policy, and no
//! one decides two approvals of one run. The audit log keeps the policies in force at
//! each decision. Only admins change them.

use agentprocess_auth::Role;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::harness::{TestApp, on_both};

const TWO_APPROVALS: &str = "---
name: two-approvals
description: Two approvals of one payment.
steps:
  - id: first_approval
    person: approver
    approve: Approve the payment.
  - id: second_approval
    person: approver
    approve: Approve the payment again.
  - id: done
    finish: paid
---
Two people approve a payment.
";

/// The first item of `get_work` for `token`, if any.
async fn first_item(app: &TestApp, token: &str) -> Option<Value> {
    let work = app.call(token, "get_work", json!({})).await;
    assert_eq!(work["ok"], true, "{work}");
    work["data"]["items"]
        .as_array()
        .and_then(|items| items.first().cloned())
}

async fn decide(app: &TestApp, token: &str, run: &str, item: &Value, request: &str) -> Value {
    let arguments = json!({ "requestId": request, "runId": run, "workItemId": item["workItem"]["id"],
                            "snapshot": item["workItem"]["snapshot"], "decision": "approved" });
    app.call(token, "decide", arguments).await
}

on_both!(
    policies_keep_the_initiator_and_a_second_approval_from_a_person,
    policies
);
async fn policies(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_member("max", Role::Member, &["approvers"])
        .await
        .with_member("mia", Role::Member, &["approvers"])
        .await
        .with_member("nia", Role::Member, &["approvers"])
        .await;
    let admin = app.api_token("ann", "admin").await;
    app.publish(&admin, "two-approvals", TWO_APPROVALS.as_bytes(), "approvers")
        .await;
    let (max, mia, nia) = (
        app.mcp_token("max").await,
        app.mcp_token("mia").await,
        app.mcp_token("nia").await,
    );
    let start = |request: &'static str| json!({ "requestId": request, "process": "two-approvals", "inputs": {} });

    // Off (the default): the initiator is offered their own run's approval.
    let (status, off) = app.rest(&admin, Method::GET, "/organization/policies", None).await;
    assert_eq!(
        (status, off),
        (
            StatusCode::OK,
            json!({ "initiatorDoesNotDecide": false, "fourEyes": false })
        )
    );
    let started = app.call(&max, "start_run", start("s1")).await;
    let open_run = started["data"]["run"]["id"].as_str().expect("run").to_owned();
    assert!(
        first_item(&app, &max).await.is_some(),
        "offered while the policies are off"
    );

    // Only an admin turns them on.
    let on = json!({ "initiatorDoesNotDecide": true, "fourEyes": true });
    let reader = app.api_token("max", "read").await;
    let (status, _) = app
        .rest(&reader, Method::PUT, "/organization/policies", Some(on.clone()))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, saved) = app
        .rest(&admin, Method::PUT, "/organization/policies", Some(on.clone()))
        .await;
    assert_eq!((status, saved), (StatusCode::OK, on.clone()));

    // The initiator: not offered, and refused naming the policy; nothing changes.
    assert!(first_item(&app, &max).await.is_none(), "hidden from the initiator");
    let item = first_item(&app, &mia).await.expect("mia is offered it");
    assert_eq!(item["runId"], json!(open_run));
    let refused = decide(&app, &max, &open_run, &item, "d-max").await;
    assert_eq!(refused["error"]["code"], "forbidden", "{refused}");
    let issue = refused["error"]["issues"][0].as_str().unwrap_or_default();
    assert!(issue.starts_with("policy: initiatorDoesNotDecide"), "{refused}");
    assert!(
        first_item(&app, &mia).await.is_some(),
        "a refused decide changed nothing"
    );

    // Four eyes: mia decides the first approval, not the second.
    let decided = decide(&app, &mia, &open_run, &item, "d-mia-1").await;
    assert_eq!(decided["ok"], true, "{decided}");
    assert!(
        first_item(&app, &mia).await.is_none(),
        "the second approval is hidden from mia"
    );
    let second = first_item(&app, &nia)
        .await
        .expect("nia is offered the second approval");
    assert_eq!(second["workItem"]["stepId"], "second_approval");
    let refused = decide(&app, &mia, &open_run, &second, "d-mia-2").await;
    assert_eq!(refused["error"]["code"], "forbidden", "{refused}");
    let issue = refused["error"]["issues"][0].as_str().unwrap_or_default();
    assert!(
        issue.starts_with("policy: fourEyes") && issue.contains("first_approval"),
        "{refused}"
    );
    let decided = decide(&app, &nia, &open_run, &second, "d-nia").await;
    assert_eq!(decided["ok"], true, "{decided}");
    assert_eq!(decided["data"]["run"]["state"], "ended", "{decided}");

    // Each decision's audit entry names the policies in force.
    let (status, audit) = app.rest(&admin, Method::GET, "/audit?kind=run.decided", None).await;
    assert_eq!(status, StatusCode::OK, "{audit}");
    let entries = audit["items"].as_array().expect("entries");
    assert_eq!(entries.len(), 2, "{audit}");
    for entry in entries {
        assert_eq!(entry["detail"]["policies"], on, "{entry}");
    }
    app
}
