//! An older version does not walk around the organization's controls: once version 2
//! binds `write_erp` to one agent and the approver role to another group, neither an
//! agent nor a person may start a run on version 1 (`forbidden`, in words, nothing
//! made), while a run started before goes on by its own version. An admin keeps
//! version 1 open (with a reason, audited, shown on the pages) and closes it again;
//! only an admin may, and a replay still answers what was made while it was open.

use agentprocess_auth::Role;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::admin_pages::{base, with};
use crate::harness::{TestApp, on_both};
use crate::people_oauth::Browser;

const VENDOR_PAYMENT: &str = "---
name: vendor-payment
description: A vendor's invoice paid through the ERP.
steps:
  - id: collect
    agent: Collect the invoice.
  - id: write_erp
    agent: Write the payment in the ERP.
  - id: approval
    person: approver
    approve: Approve the payment.
  - id: done
    finish: paid
---
The payment is written by the ERP agent and approved by finance.
";

fn start(request: &str, version: Option<u32>) -> Value {
    let mut arguments = json!({ "requestId": request, "process": "vendor-payment", "inputs": {} });
    if let Some(version) = version {
        arguments["version"] = json!(version);
    }
    arguments
}

/// How many runs the organization has, as an operator lists them.
async fn runs(app: &TestApp, token: &str) -> usize {
    let listed = app.call(token, "list_runs", json!({})).await;
    assert_eq!(listed["ok"], true, "{listed}");
    listed["data"]["items"].as_array().expect("items").len()
}

/// The audit entries of `kind`, newest first.
async fn audited(app: &TestApp, admin: &str, kind: &str) -> Vec<Value> {
    let (status, log) = app.rest(admin, Method::GET, "/audit?limit=200", None).await;
    assert_eq!(status, StatusCode::OK, "{log}");
    log["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|entry| entry["kind"] == kind)
        .cloned()
        .collect()
}

on_both!(
    a_run_starts_on_an_older_version_only_while_an_admin_keeps_it_open,
    older_versions
);
async fn older_versions(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_member("ops", Role::Operator, &[])
        .await
        .with_member("max", Role::Member, &["people"])
        .await
        .with_member("fay", Role::Member, &["finance"])
        .await
        .with_agent("agent-1")
        .await
        .with_agent("agent-2")
        .await
        .with_dev_sign_in();
    let admin = app.api_token("ann", "admin").await;
    let (agent_2, max, ops) = (
        app.mcp_token("agent-2").await,
        app.mcp_token("max").await,
        app.mcp_token("ops").await,
    );

    // Version 1: any agent writes the ERP, and `people` approve. A run starts on it.
    app.publish(&admin, "vendor-payment", VENDOR_PAYMENT.as_bytes(), "people")
        .await;
    let before = app.call(&agent_2, "start_run", start("s-before", Some(1))).await;
    assert_eq!(before["ok"], true, "{before}");
    let in_flight = before["data"]["run"]["id"].as_str().expect("run").to_owned();

    // Version 2 binds write_erp to agent-1 and the approver role to finance.
    let (status, draft) = app
        .rest(
            &admin,
            Method::PUT,
            "/processes/vendor-payment/draft/agent-steps/write_erp",
            Some(json!({ "agents": ["agent-1"] })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{draft}");
    let (status, draft) = app
        .rest(
            &admin,
            Method::PUT,
            "/processes/vendor-payment/draft/roles/approver",
            Some(json!({ "group": "finance" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{draft}");
    let (status, published) = app
        .rest(&admin, Method::POST, "/processes/vendor-payment/publish", None)
        .await;
    assert_eq!((status, &published["number"]), (StatusCode::CREATED, &json!(2)));

    // The attack: agent-2 and a person of `people` name version 1. Refused in words,
    // and no run is made.
    let counted = runs(&app, &ops).await;
    for (token, request) in [(&agent_2, "s-agent"), (&max, "s-person")] {
        let refused = app.call(token, "start_run", start(request, Some(1))).await;
        assert_eq!(refused["ok"], false, "{refused}");
        assert_eq!(refused["error"]["code"], "forbidden", "{refused}");
        assert_eq!(
            refused["error"]["message"],
            "version 1 of vendor-payment is closed to new runs: version 2 is the latest, and no admin of \
             this organization keeps version 1 open"
        );
        assert_eq!(
            refused["error"]["issues"],
            json!([
                "version: 1 is closed to new runs; leave version out to start on the latest (2), or ask an \
                 admin to keep version 1 open"
            ])
        );
    }
    assert_eq!(runs(&app, &ops).await, counted, "a refused start makes no run");
    // Naming the latest, or no version, starts on version 2 and its controls.
    for (request, version) in [("s-latest", Some(2)), ("s-default", None)] {
        let started = app.call(&agent_2, "start_run", start(request, version)).await;
        assert_eq!(started["data"]["run"]["version"], 2, "{started}");
    }

    // The run started before keeps its version: version 1's bindings, as published.
    let run = app.call(&agent_2, "get_run", json!({ "runId": in_flight })).await;
    assert_eq!(run["data"]["run"]["version"], 1, "{run}");

    // The pages say where each version stands; the start form of version 1 says why
    // it cannot be used, and its page offers the latest.
    let mut browser = Browser::signed_in(&app, "max").await;
    let page = browser.get(&app, "/processes/vendor-payment/versions/1").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(page.text.contains("Closed to new runs"), "{}", page.text);
    assert!(
        page.text.contains("Start a run of the latest version (2)"),
        "{}",
        page.text
    );
    assert!(!page.text.contains("/start?version=1"), "{}", page.text);
    let form = browser.get(&app, "/processes/vendor-payment/start?version=1").await;
    assert_eq!(form.status, StatusCode::FORBIDDEN, "{}", form.text);
    assert!(form.text.contains("closed to new runs"), "{}", form.text);
    assert!(form.text.contains("Start a run of the latest version"), "{}", form.text);
    assert!(
        !form.text.contains("Your role"),
        "the refusal is not about a role: {}",
        form.text
    );

    // Only an admin keeps a version open, and says why; a version that does not
    // exist is not found.
    let member = app.api_token("max", "read").await;
    let keep = |reason: &str| Some(json!({ "reason": reason }));
    let (status, _) = app
        .rest(
            &member,
            Method::PUT,
            "/processes/vendor-payment/versions/1/open",
            keep("mine"),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, refused) = app
        .rest(
            &admin,
            Method::PUT,
            "/processes/vendor-payment/versions/1/open",
            keep("  "),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(
        refused["issues"],
        json!(["reason: required: say why runs may still start on this version"])
    );
    let (status, _) = app
        .rest(
            &admin,
            Method::PUT,
            "/processes/vendor-payment/versions/9/open",
            keep("why"),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app
        .rest(
            &admin,
            Method::DELETE,
            "/processes/vendor-payment/versions/9/open",
            None,
        )
        .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "closing what is not published is not found"
    );
    let (status, _) = app
        .rest(&admin, Method::DELETE, "/processes/elsewhere/versions/1/open", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(audited(&app, &admin, "process.version_kept_open").await.is_empty());

    let reason = "the bank's integration names version 1 until 2027-01-31";
    let (status, kept) = app
        .rest(
            &admin,
            Method::PUT,
            "/processes/vendor-payment/versions/1/open",
            keep(reason),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    assert_eq!(
        (&kept["number"], &kept["by"], &kept["reason"]),
        (&json!(1), &json!("ann"), &json!(reason))
    );
    let (_, versions) = app
        .rest(&admin, Method::GET, "/processes/vendor-payment/versions", None)
        .await;
    let standing: Vec<(Value, Value)> = versions["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|version| (version["openToNewRuns"].clone(), version["keptOpen"]["reason"].clone()))
        .collect();
    assert_eq!(standing, [(json!(true), json!(reason)), (json!(true), Value::Null)]);
    let entries = audited(&app, &admin, "process.version_kept_open").await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        (
            &entries[0]["target"],
            &entries[0]["detail"]["number"],
            &entries[0]["detail"]["reason"]
        ),
        (&json!("vendor-payment"), &json!(1), &json!(reason))
    );
    let page = browser.get(&app, "/processes/vendor-payment/versions/1").await;
    assert!(page.text.contains("Kept open to new runs by ann"), "{}", page.text);
    assert!(page.text.contains("/start?version=1"), "{}", page.text);

    // Kept open, version 1 takes new runs again.
    let opened = app.call(&agent_2, "start_run", start("s-open", Some(1))).await;
    assert_eq!(opened["data"]["run"]["version"], 1, "{opened}");

    // An admin closes it from the process's admin page; closing again records nothing.
    let mut ann = Browser::signed_in(&app, "ann").await;
    let admin_page = ann.get(&app, "/admin/processes/vendor-payment").await;
    assert!(
        admin_page.text.contains("Versions new runs start on"),
        "{}",
        admin_page.text
    );
    assert!(admin_page.text.contains(reason), "{}", admin_page.text);
    let back = "/admin/processes/vendor-payment";
    let closed = ann
        .post_pairs(
            &app,
            "/admin/do/close-version",
            &with(
                base(&admin_page, back),
                &[("process", "vendor-payment"), ("version", "1")],
            ),
        )
        .await;
    assert_eq!(closed.status, StatusCode::SEE_OTHER, "{}", closed.text);
    let (status, _) = app
        .rest(
            &admin,
            Method::DELETE,
            "/processes/vendor-payment/versions/1/open",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(audited(&app, &admin, "process.version_closed").await.len(), 1);
    let refused = app.call(&agent_2, "start_run", start("s-closed", Some(1))).await;
    assert_eq!(refused["error"]["code"], "forbidden", "{refused}");
    // A start made while it was open is still answered by its replay.
    let replayed = app.call(&agent_2, "start_run", start("s-open", Some(1))).await;
    assert_eq!(replayed["data"]["run"]["id"], opened["data"]["run"]["id"], "{replayed}");

    // The admin page's own form keeps it open again, with the reason it is given.
    let admin_page = ann.get(&app, back).await;
    let kept = ann
        .post_pairs(
            &app,
            "/admin/do/keep-version-open",
            &with(
                base(&admin_page, back),
                &[
                    ("process", "vendor-payment"),
                    ("version", "1"),
                    ("reason", "month-end runs <script>x</script>"),
                ],
            ),
        )
        .await;
    assert_eq!(kept.status, StatusCode::SEE_OTHER, "{}", kept.text);
    let after = ann.get(&app, back).await;
    assert!(after.text.contains("month-end runs &lt;script&gt;"), "{}", after.text);
    assert!(
        !after.text.contains("<script>x"),
        "a reason is text on the page: {}",
        after.text
    );
    app
}
