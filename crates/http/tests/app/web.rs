//! The people's web app, over HTTP: a person signs in, finds their item in the inbox,
//! completes a task through the form generated from its `output`, rejects with a note
//! and sees the run go back, approves, and meets every refusal beside its field; a
//! stale page shows the fresh data; nothing on the web surface decides without a
//! session and its CSRF token. The catalog, a version's page with its diff, the start
//! form, the run page with its timers, held events and events sent from it, evidence
//! attached to a decision and previewed, and times in the person's time zone.

use agentprocess_auth::Role;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
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

/// REVIEW published for the reviewers and a run of it started by ann: her admin API
/// token, her MCP token and the run's id.
async fn review_started(app: &TestApp) -> (String, String, String) {
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
    (admin, starter, run)
}

/// The field `name`'s value in a form of `page`.
pub(crate) fn hidden(page: &str, name: &str) -> String {
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
    let (admin, starter, run) = review_started(&app).await;

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
    // What the item is about: its inputs, labelled; its step named in words; its
    // process's version and its run linked apart.
    for shown in [
        "Title: Q3 report",
        ">Fill</a>",
        "href=\"/processes/review-form/versions/1\"",
        &format!("href=\"/runs/{run}\">its run"),
    ] {
        assert!(inbox.text.contains(shown), "{shown}: {}", inbox.text);
    }

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
        (StatusCode::SEE_OTHER, "/inbox?decided=completed"),
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
    assert!(again.text.contains("This work item was decided by"), "{}", again.text);
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
    assert_eq!(rejected.location, "/inbox?decided=rejected", "{}", rejected.text);
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

const ORDER: &str = "---
name: web-order
description: Orders a part and waits for the supplier. Start it when a part is needed.
inputs:
  part:
    type: string
    description: Which part
  quantity: number
requires:
  systems: [supplier-portal]
steps:
  - id: receipt
    person: buyer
    task: Attach the supplier's receipt.
    evidence: [file]
  - id: check
    person: buyer
    approve: Check the receipt.
  - id: confirmed
    wait_for: supplier_confirmed
    timeout: 3d
    on_timeout: done
  - id: shipped
    wait_for: shipped
  - id: done
    finish: ordered
---
# Ordering a part

## Receipt

Scan the paper receipt and attach it as a PNG.

## Check

Compare the receipt with the order.
";

/// The run id a redirect to a run page names.
fn run_of(location: &str) -> String {
    location.strip_prefix("/runs/").expect("a run page").to_owned()
}

/// The bytes of a 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d,
    0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

on_both!(
    people_start_runs_attach_evidence_and_follow_runs_in_the_browser,
    follows
);
async fn follows(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &["buyers"])
        .await
        .with_dev_sign_in();
    let admin = app.api_token("ann", "admin").await;
    let first = ORDER.replace("Compare the receipt with the order.", "Compare the receipt.");
    app.publish(&admin, "web-order", first.as_bytes(), "buyers").await;
    app.publish(&admin, "web-order", ORDER.as_bytes(), "buyers").await;
    let mut browser = Browser::signed_in(&app, "ann").await;

    // The catalog: the latest version, the systems it needs, its inputs.
    let catalog = browser.get(&app, "/processes").await;
    assert_eq!(catalog.status, StatusCode::OK, "{}", catalog.text);
    for shown in [
        "href=\"/processes/web-order\"",
        "v2",
        "<span class=\"system\">supplier-portal</span>",
        "<code>quantity</code> · number · required",
        "href=\"/processes/web-order/start\"",
    ] {
        assert!(catalog.text.contains(shown), "{shown}: {}", catalog.text);
    }
    // Every page may load only its own stylesheet and script.
    let policy = catalog.headers["content-security-policy"].to_str().expect("policy");
    assert!(
        policy.contains("script-src 'self'") && policy.contains("default-src 'none'"),
        "{policy}"
    );
    let stylesheet = browser.get(&app, "/assets/app.css").await;
    assert_eq!(stylesheet.headers["content-type"], "text/css; charset=utf-8");
    assert!(stylesheet.text.contains(":focus-visible"));

    // A version's page: the body rendered, the hash, the map, the diff to version 1.
    let version = browser.get(&app, "/processes/web-order").await;
    for shown in [
        "<h2>Receipt</h2>",
        "Content hash",
        "<svg class=\"map\"",
        "Changes since version 1",
        "<ins class=\"add\">+ Compare the receipt with the order.",
        "<del class=\"del\">- Compare the receipt.",
    ] {
        assert!(version.text.contains(shown), "{shown}: {}", version.text);
    }
    // With no run, the map says what each step is, not a state it has none of.
    assert!(!version.text.contains(" · none"), "{}", version.text);
    let first_version = browser.get(&app, "/processes/web-order/versions/1").await;
    assert!(!first_version.text.contains("Changes since"), "{}", first_version.text);
    let missing = browser.get(&app, "/processes/web-order/versions/9").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);

    // The start form: one labelled control per input; what is wrong is named beside
    // its field, what was typed is kept, and no run starts.
    let start = browser.get(&app, "/processes/web-order/start").await;
    for shown in [
        "<label for=\"inputs.part\">",
        "<input id=\"inputs.quantity\"",
        "id=\"mode-test\"",
    ] {
        assert!(start.text.contains(shown), "{shown}: {}", start.text);
    }
    let mut fields = vec![
        ("csrf".to_owned(), hidden(&start.text, "csrf")),
        ("version".to_owned(), "2".to_owned()),
        ("requestId".to_owned(), hidden(&start.text, "requestId")),
        ("inputs.part".to_owned(), "gear".to_owned()),
        ("inputs.quantity".to_owned(), "many".to_owned()),
        ("mode".to_owned(), "test".to_owned()),
    ];
    let refused = browser.post_pairs(&app, "/processes/web-order/start", &fields).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text);
    // Said in words beside the field and at the top, linked to it; in the protocol's
    // words only in the technical details.
    for shown in [
        "<p class=\"issue\" role=\"alert\">Quantity must be a number.</p>",
        "<a href=\"#inputs.quantity\">Quantity must be a number.</a>",
        "<summary>Technical details</summary>",
        "<code>inputs.quantity: expected number</code>",
    ] {
        assert!(refused.text.contains(shown), "{shown}: {}", refused.text);
    }
    assert!(refused.text.contains("value=\"gear\""), "kept: {}", refused.text);
    let token = app.mcp_token("ann").await;
    let runs = app.call(&token, "list_runs", json!({})).await;
    assert_eq!(runs["data"]["items"], json!([]), "nothing started: {runs}");
    fields[4].1 = "3".to_owned();
    let started = browser.post_pairs(&app, "/processes/web-order/start", &fields).await;
    assert_eq!(started.status, StatusCode::SEE_OTHER, "{}", started.text);
    let run = run_of(&started.location);
    let view = run_view(&app, &token, &run).await;
    assert_eq!(
        (
            view["run"]["mode"].as_str(),
            view["data"]["inputs"]["quantity"].as_u64()
        ),
        (Some("test"), Some(3))
    );

    // The task's page: the body's section for its step, and a file input.
    let inbox = browser.get(&app, "/inbox").await;
    let receipt = item_link(&inbox.text);
    let page = browser.get(&app, &receipt).await;
    assert!(page.text.contains("Scan the paper receipt"), "{}", page.text);
    assert!(page.text.contains("enctype=\"multipart/form-data\""), "{}", page.text);
    let base = |page: &str| {
        vec![
            ("csrf".to_owned(), hidden(page, "csrf")),
            ("snapshot".to_owned(), hidden(page, "snapshot")),
            ("requestId".to_owned(), hidden(page, "requestId")),
        ]
    };
    let completed = |page: &str| [base(page), vec![("decision".to_owned(), "completed".to_owned())]].concat();
    // Without the file the step requires, it is refused beside the evidence.
    let no_file = browser
        .post_multipart(&app, &receipt, &completed(&page.text), &[])
        .await;
    assert!(no_file.text.contains("evidence"), "{}", no_file.text);
    assert!(no_file.text.contains("class=\"issue\""), "{}", no_file.text);
    let done = browser
        .post_multipart(
            &app,
            &receipt,
            &completed(&page.text),
            &[("evidence.files", "receipt.png", "image/png", PNG)],
        )
        .await;
    assert_eq!(done.location, "/inbox?decided=completed", "{}", done.text);
    let view = run_view(&app, &token, &run).await;
    let evidence = &view["data"]["steps"]["receipt"]["evidence"][0];
    assert_eq!(evidence["kind"], "file", "{view}");
    assert_eq!(
        evidence["sha256"].as_str(),
        Some(agentprocess_service::sha256_hex(PNG).as_str())
    );
    // The approval's page previews the image, with its name, size and hash.
    let check = item_link(&browser.get(&app, "/inbox").await.text);
    let page = browser.get(&app, &check).await;
    for shown in [
        "receipt.png",
        "70 bytes",
        "image/png",
        "<img src=\"",
        "alt=\"Preview of receipt.png\"",
    ] {
        assert!(page.text.contains(shown), "{shown}: {}", page.text);
    }
    // The preview is shown inline; the download link saves the file; neither is sniffed.
    let preview = page
        .text
        .split("<img src=\"")
        .nth(1)
        .expect("a preview")
        .split('"')
        .next()
        .expect("end");
    let preview = preview.replace("&amp;", "&");
    let preview = preview.strip_prefix("http://localhost").unwrap_or(&preview).to_owned();
    let shown = browser.get(&app, &preview).await;
    assert_eq!(shown.status, StatusCode::OK, "{preview}");
    assert!(
        shown.headers["content-disposition"]
            .to_str()
            .expect("disposition")
            .starts_with("inline")
    );
    assert_eq!(shown.headers["x-content-type-options"], "nosniff");
    let saved = browser.get(&app, preview.trim_end_matches("&inline=1")).await;
    assert!(
        saved.headers["content-disposition"]
            .to_str()
            .expect("disposition")
            .starts_with("attachment")
    );
    let approve = [base(&page.text), vec![("decision".to_owned(), "approved".to_owned())]].concat();
    assert_eq!(
        browser.post_pairs(&app, &check, &approve).await.location,
        "/inbox?decided=approved"
    );
    // The closed item says who decided it.
    let closed = browser.get(&app, &check).await;
    assert!(closed.text.contains("This work item was decided by"), "{}", closed.text);

    // The run page: the wait's timeout timer; an event no step waits for yet is held.
    let page = browser.get(&app, &format!("/runs/{run}")).await;
    for shown in [
        "Timers",
        "the wait for the event times out",
        "list=\"event-names\"",
        "<option value=\"shipped\">",
    ] {
        assert!(page.text.contains(shown), "{shown}: {}", page.text);
    }
    let send = |page: &str, name: &str, data: &str| {
        vec![
            ("csrf".to_owned(), hidden(page, "csrf")),
            ("requestId".to_owned(), hidden(page, "requestId")),
            ("name".to_owned(), name.to_owned()),
            ("data".to_owned(), data.to_owned()),
        ]
    };
    let bad = browser
        .post_pairs(
            &app,
            &format!("/runs/{run}/events"),
            &send(&page.text, "shipped", "[1]"),
        )
        .await;
    assert!(bad.text.contains("class=\"problems\""), "{}", bad.text);
    assert!(bad.text.contains("data"), "{}", bad.text);
    let sent = browser
        .post_pairs(
            &app,
            &format!("/runs/{run}/events"),
            &send(&page.text, "shipped", r#"{"carrier": "DHL"}"#),
        )
        .await;
    assert_eq!(sent.location, format!("/runs/{run}"), "{}", sent.text);
    // In the person's time zone, and the part that refreshes alone on request.
    browser.set_cookie("tz=Asia%2FTokyo");
    let page = browser.get(&app, &format!("/runs/{run}")).await;
    for shown in ["Held events", "<strong>shipped</strong>", "DHL", " JST</time>"] {
        assert!(page.text.contains(shown), "{shown}: {}", page.text);
    }
    let request = Request::get(format!("/runs/{run}")).header("x-refresh", "standing");
    let part = browser.send(&app, request, Body::empty()).await;
    assert!(
        part.text.contains("Held events") && !part.text.contains("<html"),
        "{}",
        part.text
    );
    assert!(
        !part.text.contains("Send an event"),
        "the forms stay put: {}",
        part.text
    );
    // The supplier's confirmation, from the run page, takes the wait on; the held
    // event is taken by the next wait, and the run ends.
    let confirmed = browser
        .post_pairs(
            &app,
            &format!("/runs/{run}/events"),
            &send(&page.text, "supplier_confirmed", ""),
        )
        .await;
    assert_eq!(confirmed.location, format!("/runs/{run}"), "{}", confirmed.text);
    let view = run_view(&app, &token, &run).await;
    assert_eq!(view["run"]["outcome"], "ordered", "{view}");
    assert_eq!(view["data"]["steps"]["shipped"]["output"], json!({ "carrier": "DHL" }));
    let ended = browser.get(&app, &format!("/runs/{run}")).await;
    assert!(
        !ended.text.contains("data-refresh") && !ended.text.contains("Send an event"),
        "{}",
        ended.text
    );
    app
}

const BOTH: &str = "---
name: web-both
description: Two approvals at once. Start it when two people must agree.
steps:
  - id: split
    parallel: [left, right]
    next: done
  - id: left
    person: reviewer
    approve: Approve the left half.
    next: join
  - id: right
    person: reviewer
    approve: Approve the right half.
    next: join
  - id: done
    finish: agreed
---
Both halves are approved, in any order.
";

on_both!(a_stale_page_says_what_changed_since_it_was_opened, stale);
async fn stale(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &["reviewers"])
        .await
        .with_dev_sign_in();
    let admin = app.api_token("ann", "admin").await;
    app.publish(&admin, "web-both", BOTH.as_bytes(), "reviewers").await;
    let token = app.mcp_token("ann").await;
    let started = app
        .call(
            &token,
            "start_run",
            json!({ "requestId": "b1", "process": "web-both", "inputs": {} }),
        )
        .await;
    let run = started["data"]["run"]["id"].as_str().expect("run").to_owned();
    let mut browser = Browser::signed_in(&app, "ann").await;
    let view = run_view(&app, &token, &run).await;
    let item = |step: &str| {
        view["workItems"]
            .as_array()
            .expect("items")
            .iter()
            .find(|item| item["stepId"] == step)
            .expect(step)
            .clone()
    };
    let (left, right) = (item("left"), item("right"));
    let link = format!("/runs/{run}/items/{}", left["id"].as_str().expect("id"));
    let page = browser.get(&app, &link).await;
    // Meanwhile the other half is approved.
    let decided = app
        .call(
            &token,
            "decide",
            json!({ "requestId": "b2", "runId": run, "workItemId": right["id"], "snapshot": right["snapshot"], "decision": "approved" }),
        )
        .await;
    assert!(decided["data"].is_object(), "{decided}");
    let fields: Vec<(String, String)> = ["csrf", "snapshot", "requestId", "seen"]
        .iter()
        .map(|name| ((*name).to_owned(), hidden(&page.text, name)))
        .chain([("decision".to_owned(), "approved".to_owned())])
        .collect();
    let shown = browser.post_pairs(&app, &link, &fields).await;
    assert!(
        shown.text.contains("The run changed since you opened this page"),
        "{}",
        shown.text
    );
    assert!(
        shown.text.contains("Since then:") && shown.text.contains("<strong>right</strong>"),
        "{}",
        shown.text
    );
    app
}

on_both!(pages_show_a_person_only_what_their_role_may_do, by_role);
async fn by_role(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &["reviewers"])
        .await
        .with_member("ola", Role::Operator, &["reviewers"])
        .await
        .with_member("max", Role::Member, &["reviewers"])
        .await
        .with_dev_sign_in();
    let (_, _, run) = review_started(&app).await;

    for (who, operator) in [("max", false), ("ola", true), ("ann", true)] {
        let mut browser = Browser::signed_in(&app, who).await;
        let home = browser.get(&app, "/").await;
        assert_eq!((home.status, home.location.as_str()), (StatusCode::SEE_OTHER, "/runs"));
        let inbox = browser.get(&app, "/inbox").await;
        assert_eq!(inbox.status, StatusCode::OK, "{who}: {}", inbox.text);
        assert_eq!(
            inbox.text.contains("href=\"/admin\""),
            operator,
            "{who}: the Admin link"
        );
        let page = browser.get(&app, &format!("/runs/{run}")).await;
        assert_eq!(page.status, StatusCode::OK, "{who}: {}", page.text);
        for form in ["Send an event", "Cancel the run"] {
            assert_eq!(page.text.contains(form), operator, "{who}: {form}");
        }
        // The runs page: every run of the organization, where it stands and whom it
        // waits on; filtered by state.
        let runs = browser.get(&app, "/runs").await;
        assert_eq!(runs.status, StatusCode::OK, "{who}: {}", runs.text);
        for shown in [
            format!("href=\"/runs/{run}\">review-form v1</a>"),
            "<td data-label=\"Where it stands\">Fill</td>".to_owned(),
            "<td data-label=\"Waiting on\">the reviewers group</td>".to_owned(),
        ] {
            assert!(runs.text.contains(&shown), "{who}: {shown}: {}", runs.text);
        }
        let ended = browser.get(&app, "/runs?state=ended").await;
        assert!(
            ended.text.contains("No run matches.") && !ended.text.contains(&run),
            "{}",
            ended.text
        );
        let waiting = browser.get(&app, "/runs?state=waiting&process=review-form").await;
        assert!(waiting.text.contains(&run), "{}", waiting.text);
    }
    app
}

on_both!(people_make_list_and_revoke_their_own_api_tokens, own_tokens);
async fn own_tokens(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_member("max", Role::Member, &[])
        .await
        .with_dev_sign_in();
    let mut max = Browser::signed_in(&app, "max").await;
    let account = max.get(&app, "/account").await;
    assert_eq!(account.status, StatusCode::OK, "{}", account.text);
    assert!(account.text.contains("You have no API tokens."), "{}", account.text);
    // A member is offered read-only tokens; one that asks for more is refused in words.
    assert!(
        account
            .text
            .contains("<input type=\"hidden\" name=\"scope\" value=\"read\">"),
        "{}",
        account.text
    );
    let form = |page: &str, name: &str, scope: &str| {
        vec![
            ("csrf".to_owned(), hidden(page, "csrf")),
            ("requestId".to_owned(), hidden(page, "requestId")),
            ("name".to_owned(), name.to_owned()),
            ("scope".to_owned(), scope.to_owned()),
            ("days".to_owned(), "30".to_owned()),
        ]
    };
    let refused = max
        .post_pairs(&app, "/account/tokens", &form(&account.text, "ci", "admin"))
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
    assert!(
        refused.text.contains("Scope — only admins make admin tokens."),
        "{}",
        refused.text
    );
    let unnamed = max
        .post_pairs(&app, "/account/tokens", &form(&account.text, " ", "read"))
        .await;
    assert_eq!(unnamed.status, StatusCode::BAD_REQUEST, "{}", unnamed.text);
    assert!(max.get(&app, "/account").await.text.contains("You have no API tokens."));
    // Without the page's CSRF token nothing is made.
    let mut forged = form(&account.text, "ci", "read");
    forged[0].1 = "forged".to_owned();
    let forged = max.post_pairs(&app, "/account/tokens", &forged).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.text);

    // Made: shown this once, and it reads the REST surface as max, but changes nothing.
    let account = max.get(&app, "/account").await;
    let made = max
        .post_pairs(&app, "/account/tokens", &form(&account.text, "ci", "read"))
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    let token = made
        .text
        .split("<code class=\"secret\">")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .expect("the token")
        .to_owned();
    assert!(token.starts_with("apr_"), "{token}");
    assert_eq!(made.headers[header::CACHE_CONTROL], "no-store");
    let (status, _) = app.rest(&token, Method::GET, "/runs", None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, answer) = app
        .rest(
            &token,
            Method::POST,
            "/tokens",
            Some(json!({ "name": "more", "scope": "read" })),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    let account = max.get(&app, "/account").await;
    for shown in [
        "<td data-label=\"Name\">ci</td>",
        "<td data-label=\"May\">Read only</td>",
        "Revoke ci",
    ] {
        assert!(account.text.contains(shown), "{shown}: {}", account.text);
    }
    assert!(!account.text.contains(&token), "the token is shown only once");

    // Someone else's token is not max's to revoke here, and stays working.
    let anns = app.api_token("ann", "read").await;
    let (_, listed) = app.rest(&anns, Method::GET, "/tokens", None).await;
    let anns_id = listed["items"]
        .as_array()
        .and_then(|items| items.iter().find(|item| item["owner"] == "ann"))
        .and_then(|item| item["id"].as_str())
        .expect("ann's token")
        .to_owned();
    let csrf = vec![("csrf".to_owned(), hidden(&account.text, "csrf"))];
    let foreign = max
        .post_pairs(&app, &format!("/account/tokens/{anns_id}/revoke"), &csrf)
        .await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND, "{}", foreign.text);
    assert_eq!(app.rest(&anns, Method::GET, "/runs", None).await.0, StatusCode::OK);

    // Revoked: it stops working at once, and the page says so.
    let own_id = account
        .text
        .split("action=\"/account/tokens/")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .expect("the revoke form")
        .to_owned();
    let revoked = max
        .post_pairs(&app, &format!("/account/tokens/{own_id}/revoke"), &csrf)
        .await;
    assert_eq!(
        (revoked.status, revoked.location.as_str()),
        (StatusCode::SEE_OTHER, "/account#tokens"),
        "{}",
        revoked.text
    );
    assert_eq!(
        app.rest(&token, Method::GET, "/runs", None).await.0,
        StatusCode::UNAUTHORIZED
    );
    let account = max.get(&app, "/account").await;
    assert!(account.text.contains("Revoked "), "{}", account.text);
    assert!(!account.text.contains("Revoke ci"), "{}", account.text);
    app
}

on_both!(the_runs_page_finds_runs_by_mode_day_and_input_newest_first, runs_found);
async fn runs_found(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &["reviewers"])
        .await
        .with_dev_sign_in();
    let (_, starter, first) = review_started(&app).await;
    let second = app
        .call(
            &starter,
            "start_run",
            json!({ "requestId": "r2", "process": "review-form", "inputs": { "title": "Q4 plan" }, "mode": "test" }),
        )
        .await;
    let second = second["data"]["run"]["id"].as_str().expect("run").to_owned();
    let mut ann = Browser::signed_in(&app, "ann").await;
    let position = |text: &str, run: &str| text.find(&format!("href=\"/runs/{run}\"")).expect("listed");

    // Newest first unless asked otherwise.
    let all = ann.get(&app, "/runs").await;
    assert!(
        position(&all.text, &second) < position(&all.text, &first),
        "{}",
        all.text
    );
    assert!(all.text.contains("2 runs, newest first."), "{}", all.text);
    let oldest = ann.get(&app, "/runs?order=oldest").await;
    assert!(position(&oldest.text, &first) < position(&oldest.text, &second));

    // By mode.
    let tests = ann.get(&app, "/runs?mode=test").await;
    assert!(
        tests.text.contains(&second) && !tests.text.contains(&first),
        "{}",
        tests.text
    );
    // By the day they started, in the person's zone: today has both, tomorrow none.
    let today = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC).date();
    let tomorrow = today.tomorrow().expect("a day");
    let on_today = ann.get(&app, &format!("/runs?from={today}&to={today}")).await;
    assert!(on_today.text.contains("2 runs"), "{}", on_today.text);
    let from_tomorrow = ann.get(&app, &format!("/runs?from={tomorrow}")).await;
    assert!(from_tomorrow.text.contains("No run matches."), "{}", from_tomorrow.text);
    // By an input of the chosen process, offered as a field of its own.
    let chosen = ann.get(&app, "/runs?process=review-form").await;
    assert!(
        chosen.text.contains("<label for=\"inputs.title\">Title</label>"),
        "{}",
        chosen.text
    );
    let by_title = ann.get(&app, "/runs?process=review-form&inputs.title=Q4+plan").await;
    assert!(
        by_title.text.contains(&second) && !by_title.text.contains(&first),
        "{}",
        by_title.text
    );
    // How long each waits, in words.
    assert!(all.text.contains("<td data-label=\"For\">moments<br>"), "{}", all.text);
    app
}
