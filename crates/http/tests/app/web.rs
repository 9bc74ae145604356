//! The people's web app, over HTTP: a person signs in, finds their item in the inbox,
//! completes a task through the form generated from its `output`, rejects with a note
//! and sees the run go back, approves, and meets every refusal beside its field; a
//! stale page shows the fresh data; nothing on the web surface decides without a
//! session and its CSRF token.

use agentprocess_auth::Role;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};

use crate::harness::{TestApp, on_both};
use crate::people_oauth::{Browser, csrf_of};

const REVIEW: &str = "---
name: review-form
description: A reviewer fills in a review, then approves it. Start it when a document needs a review.
inputs:
  title:
    type: string
    description: What is reviewed
steps:
  - id: fill
    person: reviewer
    task: Review the document and fill in the form.
    output:
      verdict:
        type: string
        one_of: [good, needs-work]
      tags:
        type: list
        items: string
      score: number
  - id: approval
    person: reviewer
    approve: Approve the review.
    on_reject: fill
  - id: done
    finish: reviewed
---
The reviewer reads the document and fills in the form.
";

/// The field `name`'s value in a form of `page`.
fn hidden(page: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = page.find(&marker).map(|at| at + marker.len()).expect(name);
    let end = start + page[start..].find('"').expect("end");
    page[start..end].to_owned()
}

/// The first work item link of the inbox.
fn item_link(inbox: &str) -> String {
    inbox
        .split("href=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').expect("end")])
        .find(|link| link.starts_with("/runs/") && link.contains("/items/"))
        .expect("an item in the inbox")
        .to_owned()
}

async fn run_view(app: &TestApp, token: &str, run: &str) -> Value {
    app.call(token, "get_run", json!({ "runId": run })).await["data"].clone()
}

on_both!(a_person_decides_in_the_browser, decides);
async fn decides(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &["reviewers"])
        .await
        .with_agent("bot")
        .await
        .with_dev_sign_in();
    let admin = app.api_token("ann", "admin").await;
    app.publish(&admin, "review-form", REVIEW.as_bytes(), "reviewers").await;
    let starter = app.mcp_token("ann").await;
    let started = app
        .call(
            &starter,
            "start_run",
            json!({ "requestId": "r1", "process": "review-form", "inputs": { "title": "Q3 report" } }),
        )
        .await;
    let run = started["data"]["run"]["id"].as_str().expect("run").to_owned();

    let mut browser = Browser::new();
    let first = browser.get(&app, "/inbox").await;
    assert_eq!(
        (first.status, first.location.as_str()),
        (StatusCode::SEE_OTHER, "/login")
    );
    let form = browser.get(&app, "/dev/sign-in").await;
    let signed_in = browser
        .post_form(
            &app,
            "/dev/sign-in",
            &[("csrf", &csrf_of(&form.text)), ("identity", "ann")],
        )
        .await;
    assert_eq!(signed_in.location, "/inbox", "back to where the person was going");
    let inbox = browser.get(&app, "/inbox").await;
    assert_eq!(inbox.status, StatusCode::OK, "{}", inbox.text);
    let link = item_link(&inbox.text);
    assert!(link.starts_with(&format!("/runs/{run}/items/")), "{link}");

    // The task's form: every declared field labelled, the one_of a select.
    let page = browser.get(&app, &link).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    for shown in [
        "Review the document",
        "<label for=\"output.verdict\">",
        "<select id=\"output.verdict\"",
        "<option value=\"needs-work\">",
        "<textarea id=\"output.tags\"",
        "Q3 report",
    ] {
        assert!(page.text.contains(shown), "{shown}: {}", page.text);
    }
    // A wrong type is refused beside its field, and nothing changes.
    let mut fields = vec![
        ("csrf".to_owned(), hidden(&page.text, "csrf")),
        ("snapshot".to_owned(), hidden(&page.text, "snapshot")),
        ("requestId".to_owned(), hidden(&page.text, "requestId")),
        ("decision".to_owned(), "completed".to_owned()),
        ("output.verdict".to_owned(), "good".to_owned()),
        ("output.tags".to_owned(), "clear\nshort".to_owned()),
        ("output.score".to_owned(), "high".to_owned()),
    ];
    let as_refs = |fields: &[(String, String)]| -> Vec<(String, String)> { fields.to_vec() };
    let refused = browser.post_pairs(&app, &link, &as_refs(&fields)).await;
    assert_eq!(refused.status, StatusCode::OK, "{}", refused.text);
    assert!(refused.text.contains("class=\"issue\""), "{}", refused.text);
    assert!(refused.text.contains("output.score"), "{}", refused.text);
    assert_eq!(run_view(&app, &starter, &run).await["steps"][0]["state"], "waiting");

    // Fixed, it completes the task; the approval comes next.
    let page = browser.get(&app, &link).await;
    fields[0].1 = hidden(&page.text, "csrf");
    fields[1].1 = hidden(&page.text, "snapshot");
    fields[2].1 = hidden(&page.text, "requestId");
    fields[6].1 = "4".to_owned();
    let done = browser.post_pairs(&app, &link, &fields).await;
    assert_eq!(
        (done.status, done.location.as_str()),
        (StatusCode::SEE_OTHER, "/inbox?decided=1"),
        "{}",
        done.text
    );
    let view = run_view(&app, &starter, &run).await;
    assert_eq!(
        view["data"]["steps"]["fill"]["output"],
        json!({ "verdict": "good", "tags": ["clear", "short"], "score": 4 })
    );
    // The same form again decides nothing twice: the item is closed now.
    let again = browser.post_pairs(&app, &link, &fields).await;
    assert!(again.text.contains("no longer open"), "{}", again.text);
    assert_eq!(
        run_view(&app, &starter, &run).await["data"]["steps"]["fill"]["history"],
        json!([])
    );

    // The approval: rejecting needs a note, then sends the run back to the task.
    let inbox = browser.get(&app, "/inbox").await;
    let approval = item_link(&inbox.text);
    let page = browser.get(&app, &approval).await;
    assert!(
        page.text.contains("Approve") && page.text.contains("Reject"),
        "{}",
        page.text
    );
    let base = [
        ("csrf", hidden(&page.text, "csrf")),
        ("snapshot", hidden(&page.text, "snapshot")),
        ("requestId", hidden(&page.text, "requestId")),
    ];
    let mut reject: Vec<(String, String)> = base
        .iter()
        .map(|(key, value)| ((*key).to_owned(), value.clone()))
        .collect();
    reject.push(("decision".to_owned(), "rejected".to_owned()));
    let no_note = browser.post_pairs(&app, &approval, &reject).await;
    assert!(no_note.text.contains("note"), "{}", no_note.text);
    // A stale snapshot shows the fresh data and asks again.
    let mut stale = reject.clone();
    stale[1].1 = "0".repeat(64);
    stale[2].1 = "web_stale".to_owned();
    stale.push(("note".to_owned(), "the score is too high".to_owned()));
    let shown = browser.post_pairs(&app, &approval, &stale).await;
    assert!(
        shown.text.contains("The run changed since you opened this page"),
        "{}",
        shown.text
    );
    // With the page's own snapshot and a note, the run goes back to the task.
    reject.push(("note".to_owned(), "the score is too high".to_owned()));
    let page = browser.get(&app, &approval).await;
    reject[0].1 = hidden(&page.text, "csrf");
    reject[2].1 = hidden(&page.text, "requestId");
    let rejected = browser.post_pairs(&app, &approval, &reject).await;
    assert_eq!(rejected.location, "/inbox?decided=1", "{}", rejected.text);
    let view = run_view(&app, &starter, &run).await;
    assert_eq!(view["data"]["steps"]["approval"]["decision"], "rejected");
    // The run view carries the map's layout: the approval is drawn below the task.
    let y = |step: &str| view["layout"][step]["y"].as_u64().expect("a placed step");
    assert!(
        y("fill") < y("approval") && y("approval") < y("done"),
        "{}",
        view["layout"]
    );
    assert_eq!(view["steps"][0]["state"], "waiting", "back on the task: {view}");

    // Decisions made here say so in the audit log, with when the person signed in.
    let (_, log) = app
        .rest(&admin, axum::http::Method::GET, "/audit?kind=run.decided", None)
        .await;
    let entries = log["items"].as_array().expect("entries");
    assert_eq!(entries.len(), 2, "{log}");
    assert!(
        entries
            .iter()
            .all(|entry| entry["detail"]["sessionSignedInAt"].is_string()),
        "{log}"
    );

    // Eleven minutes after signing in (the harness lets a person decide within ten),
    // deciding first sends the person to sign in again at their provider; viewing
    // does not.
    let open = item_link(&browser.get(&app, "/inbox").await.text);
    app.clock.advance(660);
    let page = browser.get(&app, &open).await;
    assert_eq!(page.status, StatusCode::OK);
    let late = browser
        .post_pairs(
            &app,
            &open,
            &[
                ("csrf".to_owned(), hidden(&page.text, "csrf")),
                ("snapshot".to_owned(), hidden(&page.text, "snapshot")),
                ("requestId".to_owned(), hidden(&page.text, "requestId")),
                ("decision".to_owned(), "completed".to_owned()),
            ],
        )
        .await;
    assert_eq!(
        (late.status, late.location.as_str()),
        (StatusCode::SEE_OTHER, "/login?org=acme&fresh=1")
    );

    // Without the session's CSRF token nothing is decided; an agent's bearer token is
    // no session at all.
    let open = item_link(&browser.get(&app, "/inbox").await.text);
    let forged = browser
        .post_pairs(&app, &open, &[("decision".to_owned(), "completed".to_owned())])
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let agent = app.mcp_token("bot").await;
    let request = Request::post(format!("/runs/{run}/items/x"))
        .header(header::HOST, "localhost")
        .header(header::AUTHORIZATION, format!("Bearer {agent}"))
        .header(header::ORIGIN, "http://localhost")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from("decision=approved"))
        .expect("request");
    let (status, _) = app.send(request).await;
    assert_eq!(
        status,
        StatusCode::SEE_OTHER,
        "no session: sent to sign in, and nothing decided"
    );
    app
}
