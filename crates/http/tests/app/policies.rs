//! The organization's policies of who decides, over MCP and REST: off, the person who
//! started a run is offered and decides its approvals; with the policies on, they are
//! not offered them and a `decide` from them is `forbidden` naming the policy, and no
//! one decides an approval of work they did in the same run (four eyes: the person who
//! completed a task, or decided another approval, does not approve). The audit log
//! keeps the policies in force at each decision. Only admins change them.

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
    decide_as(app, token, run, item, request, json!({ "decision": "approved" })).await
}

/// `decide` on `item` with `decision` (the decision and what goes with it).
async fn decide_as(app: &TestApp, token: &str, run: &str, item: &Value, request: &str, decision: Value) -> Value {
    let mut arguments = json!({ "requestId": request, "runId": run, "workItemId": item["workItem"]["id"],
                                "snapshot": item["workItem"]["snapshot"] });
    for (name, value) in decision.as_object().expect("an object") {
        arguments[name] = value.clone();
    }
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

const PAYMENT: &str = "---
name: payment
description: Finance prepares a payment, approves it and releases it.
steps:
  - id: prepare_payment
    person: finance
    task: Prepare the payment.
    output:
      amount: number
  - id: approve_payment
    person: finance
    approve: Approve the payment.
  - id: release_payment
    person: finance
    approve: Release the payment.
  - id: done
    finish: paid
---
A payment, prepared and checked by different people.
";

/// The item of `run` that `token` is offered, if any.
async fn offered(app: &TestApp, token: &str, run: &str) -> Option<Value> {
    let work = app.call(token, "get_work", json!({})).await;
    assert_eq!(work["ok"], true, "{work}");
    work["data"]["items"]
        .as_array()
        .and_then(|items| items.iter().find(|item| item["runId"] == run).cloned())
}

/// `decide` from `token` on `item` is refused `forbidden` with `words` and `issue`, and
/// changes nothing of the run.
async fn refused_saying(app: &TestApp, token: &str, run: &str, item: &Value, words: &str, issue: &str) {
    let before = app.call(token, "get_run", json!({ "runId": run })).await;
    let refused = decide(
        app,
        token,
        run,
        item,
        &format!("refused-{}", item["workItem"]["id"].as_str().unwrap_or_default()),
    )
    .await;
    assert_eq!(refused["error"]["code"], "forbidden", "{refused}");
    assert_eq!(refused["error"]["message"], words, "{refused}");
    assert_eq!(refused["error"]["issues"], json!([issue]), "{refused}");
    let after = app.call(token, "get_run", json!({ "runId": run })).await;
    assert_eq!(before["data"], after["data"], "a refused decide changed the run");
}

/// A payment run started by `starter`, its task completed by `maker`: the run's id.
async fn pay(app: &TestApp, (starter, maker): (&str, &str), request: &str) -> String {
    let started = app
        .call(
            starter,
            "start_run",
            json!({ "requestId": request, "process": "payment", "inputs": {} }),
        )
        .await;
    let run = started["data"]["run"]["id"].as_str().expect("run").to_owned();
    let task = offered(app, maker, &run).await.expect("the maker is offered the task");
    let completed = decide_as(
        app,
        maker,
        &run,
        &task,
        &format!("{request}-prepared"),
        json!({ "decision": "completed", "output": { "amount": 120 } }),
    )
    .await;
    assert_eq!(completed["ok"], true, "{completed}");
    run
}

on_both!(
    four_eyes_keeps_whoever_completed_the_task_or_decided_an_approval_from_approving,
    maker_checker
);
async fn maker_checker(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_member("sam", Role::Member, &[])
        .await
        .with_member("pat", Role::Member, &["finance"])
        .await
        .with_member("bob", Role::Member, &["finance"])
        .await
        .with_member("eve", Role::Member, &["finance"])
        .await;
    let admin = app.api_token("ann", "admin").await;
    app.publish(&admin, "payment", PAYMENT.as_bytes(), "finance").await;
    let (sam, pat, bob, eve) = (
        app.mcp_token("sam").await,
        app.mcp_token("pat").await,
        app.mcp_token("bob").await,
        app.mcp_token("eve").await,
    );
    let on = json!({ "initiatorDoesNotDecide": false, "fourEyes": true });
    let (status, _) = app.rest(&admin, Method::PUT, "/organization/policies", Some(on)).await;
    assert_eq!(status, StatusCode::OK);

    // Pat completed the task: not offered its approval, and refused in words.
    let run = pay(&app, (&sam, &pat), "p1").await;
    assert!(offered(&app, &pat, &run).await.is_none(), "hidden from the maker");
    let approval = offered(&app, &bob, &run).await.expect("bob is offered it");
    assert_eq!(approval["workItem"]["stepId"], "approve_payment");
    refused_saying(
        &app,
        &pat,
        &run,
        &approval,
        "you completed prepare_payment in this run; under the organization's four-eyes policy someone else \
         decides this approval",
        "policy: fourEyes: pat@acme.test completed prepare_payment in this run",
    )
    .await;
    let approved = decide(&app, &bob, &run, &approval, "d-bob").await;
    assert_eq!(approved["ok"], true, "{approved}");

    // Bob decided the approval: not the release, nor pat; eve does.
    let release = offered(&app, &eve, &run).await.expect("eve is offered the release");
    assert_eq!(release["workItem"]["stepId"], "release_payment");
    assert!(
        offered(&app, &bob, &run).await.is_none(),
        "hidden from the first checker"
    );
    assert!(offered(&app, &pat, &run).await.is_none(), "hidden from the maker");
    refused_saying(
        &app,
        &bob,
        &run,
        &release,
        "you decided the approval approve_payment in this run; under the organization's four-eyes policy \
         someone else decides this approval",
        "policy: fourEyes: bob@acme.test decided the approval approve_payment in this run",
    )
    .await;
    let released = decide(&app, &eve, &run, &release, "d-eve").await;
    assert_eq!(released["ok"], true, "{released}");
    assert_eq!(released["data"]["run"]["state"], "ended", "{released}");

    // Off: the maker approves, and decides both approvals.
    let (status, _) = app
        .rest(&admin, Method::PUT, "/organization/policies", Some(json!({})))
        .await;
    assert_eq!(status, StatusCode::OK);
    let run = pay(&app, (&sam, &pat), "p2").await;
    for (step, request) in [("approve_payment", "d-pat-1"), ("release_payment", "d-pat-2")] {
        let item = offered(&app, &pat, &run).await.expect("offered to the maker");
        assert_eq!(item["workItem"]["stepId"], step);
        let decided = decide(&app, &pat, &run, &item, request).await;
        assert_eq!(decided["ok"], true, "{decided}");
    }
    let view = app.call(&pat, "get_run", json!({ "runId": run })).await;
    assert_eq!(view["data"]["run"]["state"], "ended", "{view}");
    app
}
