//! What people hear of, over HTTP: a person chooses on their account page (CSRF
//! checked, a wrong value refused in words); the REST surface reads and sets the same
//! choices and the organization's settings (admins only); chat hooks keep their URL
//! to themselves (a group of another organization is not found); operators (only) see the queue of overdue work and its count in
//! their inbox.

use agentprocess_auth::Role;
use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::harness::{TestApp, on_both};
use crate::people_oauth::Browser;
use crate::web::hidden;

const DUE: &str = "---
name: quick-check
description: A reviewer checks within the hour.
steps:
  - id: check_it
    person: reviewer
    approve: Check it.
    due: 1h
  - id: done
    finish: checked
---
# Quick check

## Check it

Look it over.
";

on_both!(people_choose_what_they_hear_of_on_their_account_page, account_choices);
async fn account_choices(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("max", Role::Member, &["reviewers"])
        .await
        .with_dev_sign_in();
    let mut max = Browser::signed_in(&app, "max").await;
    let account = max.get(&app, "/account").await;
    assert_eq!(account.status, StatusCode::OK, "{}", account.text);
    assert!(account.text.contains("What you hear of"), "{}", account.text);
    assert!(
        account.text.contains("As the organization chose (immediately)"),
        "{}",
        account.text
    );
    let form = |page: &str, waiting: &str| {
        vec![
            ("csrf".to_owned(), hidden(page, "csrf")),
            ("waiting".to_owned(), waiting.to_owned()),
            ("overdue".to_owned(), "daily".to_owned()),
            ("escalation".to_owned(), String::new()),
            ("ended".to_owned(), String::new()),
        ]
    };
    let refused = max
        .post_pairs(&app, "/account/messages", &form(&account.text, "weekly"))
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
    assert!(refused.text.contains("immediately, daily or off"), "{}", refused.text);
    let mut forged = form(&account.text, "off");
    forged[0].1 = "forged".to_owned();
    assert_eq!(
        max.post_pairs(&app, "/account/messages", &forged).await.status,
        StatusCode::FORBIDDEN
    );
    let saved = max
        .post_pairs(&app, "/account/messages", &form(&account.text, "off"))
        .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.text);
    let account = max.get(&app, "/account").await;
    assert!(
        account.text.contains(r#"<option value="off" selected>Off</option>"#),
        "{}",
        account.text
    );

    // The REST surface reads the same; a member's read-only token changes nothing.
    let read = app.api_token("max", "read").await;
    let (status, own) = app.rest(&read, Method::GET, "/account/messages", None).await;
    assert_eq!(status, StatusCode::OK, "{own}");
    assert_eq!(own, json!({ "waiting": "off", "overdue": "daily" }));
    let (status, _) = app
        .rest(&read, Method::PUT, "/account/messages", Some(json!({ "ended": "off" })))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    app
}

on_both!(
    admins_set_the_organizations_messages_and_chat_hooks,
    organization_settings
);
async fn organization_settings(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_member("max", Role::Member, &["reviewers"])
        .await;
    let admin = app.api_token("ann", "admin").await;
    let (status, settings) = app.rest(&admin, Method::GET, "/organization/messages", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        settings,
        json!({ "defaults": {}, "remindEveryHours": 24, "digestHourUtc": 8 })
    );
    let wrong = json!({ "remindEveryHours": 100000, "digestHourUtc": 30 });
    let (status, refusal) = app
        .rest(&admin, Method::PUT, "/organization/messages", Some(wrong))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refusal}");
    assert_eq!(refusal["issues"].as_array().map(Vec::len), Some(2), "{refusal}");
    let chosen = json!({ "defaults": { "ended": "off" }, "remindEveryHours": 4, "digestHourUtc": 7 });
    let (status, saved) = app
        .rest(&admin, Method::PUT, "/organization/messages", Some(chosen.clone()))
        .await;
    assert_eq!((status, saved), (StatusCode::OK, chosen.clone()));
    let max = app.api_token("max", "read").await;
    let (status, seen) = app.rest(&max, Method::GET, "/organization/messages", None).await;
    assert_eq!((status, seen), (StatusCode::OK, chosen));
    let (status, _) = app
        .rest(&max, Method::PUT, "/organization/messages", Some(json!({})))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // A chat hook: its host is shown, never its URL; an unknown group is refused.
    let url = "https://hooks.example.com/services/T0/B0/secret-part";
    let (status, hook) = app
        .rest(
            &admin,
            Method::PUT,
            "/organization/chat-hooks/reviewers",
            Some(json!({ "url": url })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{hook}");
    assert_eq!(hook["host"], "hooks.example.com");
    assert_eq!(hook["kind"], "markdown", "not Slack's host: read as Markdown");
    let (status, hooks) = app.rest(&admin, Method::GET, "/organization/chat-hooks", None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!hooks.to_string().contains("secret-part"), "{hooks}");
    assert_eq!(hooks["items"][0]["kind"], "markdown", "{hooks}");
    // The admin says which markup the chat reads; a kind there is not is refused.
    let (status, hook) = app
        .rest(
            &admin,
            Method::PUT,
            "/organization/chat-hooks/reviewers",
            Some(json!({ "url": url, "kind": "slack" })),
        )
        .await;
    assert_eq!((status, &hook["kind"]), (StatusCode::OK, &json!("slack")), "{hook}");
    let (status, refusal) = app
        .rest(
            &admin,
            Method::PUT,
            "/organization/chat-hooks/reviewers",
            Some(json!({ "url": url, "kind": "html" })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refusal}");
    assert!(
        !app.every_stored_text()
            .await
            .iter()
            .any(|text| text.contains("secret-part")),
        "the URL is kept sealed"
    );
    let (status, refusal) = app
        .rest(
            &admin,
            Method::PUT,
            "/organization/chat-hooks/nobody",
            Some(json!({ "url": url })),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{refusal}");
    let (status, refusal) = app
        .rest(
            &admin,
            Method::PUT,
            "/organization/chat-hooks/reviewers",
            Some(json!({ "url": "ftp://x" })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refusal}");
    assert_eq!(refusal["issues"].as_array().map(Vec::len), Some(1), "{refusal}");
    let (status, _) = app
        .rest(&admin, Method::DELETE, "/organization/chat-hooks/reviewers", None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = app
        .rest(&admin, Method::DELETE, "/organization/chat-hooks/reviewers", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    app
}

on_both!(operators_see_the_queue_of_overdue_work, overdue_queue);
async fn overdue_queue(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_member("olga", Role::Operator, &[])
        .await
        .with_member("max", Role::Member, &["reviewers"])
        .await
        .with_dev_sign_in();
    let admin = app.api_token("ann", "admin").await;
    app.publish(&admin, "quick-check", DUE.as_bytes(), "reviewers").await;
    let starter = app.mcp_token("ann").await;
    let started = app
        .call(
            &starter,
            "start_run",
            json!({ "requestId": "r1", "process": "quick-check", "inputs": {} }),
        )
        .await;
    let run = started["data"]["run"]["id"].as_str().expect("run").to_owned();
    let mut olga = Browser::signed_in(&app, "olga").await;
    let queue = olga.get(&app, "/overdue").await;
    assert_eq!(queue.status, StatusCode::OK, "{}", queue.text);
    assert!(queue.text.contains("Nothing is overdue."), "{}", queue.text);
    assert!(
        queue.text.contains(r#"href="/overdue""#),
        "operators find it in the navigation"
    );

    app.clock.advance(2 * 3600);
    // Signed in again: two hours idle end a session.
    let mut olga = Browser::signed_in(&app, "olga").await;
    let queue = olga.get(&app, "/overdue").await;
    assert!(queue.text.contains("One step is overdue."), "{}", queue.text);
    assert!(queue.text.contains(&format!(r#"href="/runs/{run}""#)), "{}", queue.text);
    assert!(queue.text.contains("Check it"), "the step's title: {}", queue.text);
    assert!(queue.text.contains("the reviewers group"), "{}", queue.text);
    assert!(queue.text.contains("1 hour"), "overdue for: {}", queue.text);
    let inbox = olga.get(&app, "/inbox").await;
    assert!(
        inbox.text.contains("One step</a> of the organization is overdue."),
        "{}",
        inbox.text
    );

    // A member neither sees the queue nor is offered it.
    let mut max = Browser::signed_in(&app, "max").await;
    let refused = max.get(&app, "/overdue").await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text);
    assert!(!max.get(&app, "/inbox").await.text.contains(r#"href="/overdue""#));
    app
}
