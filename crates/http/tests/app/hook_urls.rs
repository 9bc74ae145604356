//! Hook URLs are credentials, so a webhook endpoint or a chat hook on plain http:// is
//! refused, in words, over REST and from the admin pages, and nothing is kept; a server
//! whose operator allows plain http hooks takes them.

use agentprocess_auth::Role;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::admin_pages::{base, with};
use crate::harness::{TestApp, on_both};
use crate::people_oauth::Browser;

/// A plain http hook whose path is its secret.
const PLAIN: &str = "http://hooks.example.com/services/T0/B0/plain-secret";
/// What a refusal says.
const WORDS: &str = "url: must be an https:// URL";

async fn admin_app(app: TestApp) -> TestApp {
    app.with_org("acme")
        .await
        .with_member("ann", Role::Admin, &["reviewers"])
        .await
        .with_dev_sign_in()
}

/// The issues of a REST refusal.
fn issues(refusal: &Value) -> Vec<String> {
    refusal["issues"]
        .as_array()
        .map(|issues| {
            issues
                .iter()
                .filter_map(|issue| issue.as_str())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// What the organization keeps of hooks: its webhooks, its chat hooks, and the audit
/// entries of either being set.
async fn kept(app: &TestApp, admin: &str) -> (Value, Value, Value) {
    let (_, webhooks) = app.rest(admin, Method::GET, "/webhooks", None).await;
    let (_, chat_hooks) = app.rest(admin, Method::GET, "/organization/chat-hooks", None).await;
    let (_, added) = app.rest(admin, Method::GET, "/audit?kind=webhook.added", None).await;
    let (_, set) = app.rest(admin, Method::GET, "/audit?kind=chat_hook.set", None).await;
    (
        webhooks["items"].clone(),
        chat_hooks["items"].clone(),
        json!([added["items"], set["items"]]),
    )
}

on_both!(
    plain_http_hooks_are_refused_in_words_over_rest_and_the_admin_pages,
    refused
);
async fn refused(app: TestApp) -> TestApp {
    let app = admin_app(app).await;
    let admin = app.api_token("ann", "admin").await;
    let before = kept(&app, &admin).await;
    assert_eq!(before.0, json!([]));

    // REST: each names the field and says https in words, without repeating the URL.
    let (status, refusal) = app
        .rest(&admin, Method::POST, "/webhooks", Some(json!({ "url": PLAIN })))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refusal}");
    assert!(
        issues(&refusal).iter().any(|issue| issue.starts_with(WORDS)),
        "{refusal}"
    );
    let (status, refusal) = app
        .rest(
            &admin,
            Method::PUT,
            "/organization/chat-hooks/reviewers",
            Some(json!({ "url": PLAIN })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refusal}");
    assert!(
        issues(&refusal).iter().any(|issue| issue.starts_with(WORDS)),
        "{refusal}"
    );
    assert!(!refusal.to_string().contains("plain-secret"), "{refusal}");
    // Every issue at once: plain http and credentials in the URL.
    let (status, refusal) = app
        .rest(
            &admin,
            Method::POST,
            "/webhooks",
            Some(json!({ "url": "http://user:pw@hooks.example.com/in" })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refusal}");
    assert_eq!(issues(&refusal).len(), 2, "{refusal}");

    // The admin pages: the same refusal, shown in words.
    let mut ann = Browser::signed_in(&app, "ann").await;
    let hooks = ann.get(&app, "/admin/webhooks").await;
    let page = ann
        .post_pairs(
            &app,
            "/admin/do/add-webhook",
            &with(base(&hooks, "/admin/webhooks"), &[("url", PLAIN)]),
        )
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST, "{}", page.text);
    assert!(page.text.contains(WORDS), "{}", page.text);
    let messages = ann.get(&app, "/admin/messages").await;
    let page = ann
        .post_pairs(
            &app,
            "/admin/do/set-chat-hook",
            &with(
                base(&messages, "/admin/messages"),
                &[("group", "reviewers"), ("url", PLAIN)],
            ),
        )
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST, "{}", page.text);
    assert!(page.text.contains(WORDS), "{}", page.text);
    assert!(!page.text.contains("plain-secret"), "{}", page.text);

    // Nothing was kept, nothing recorded.
    assert_eq!(kept(&app, &admin).await, before);
    assert!(
        !app.every_stored_text()
            .await
            .iter()
            .any(|text| text.contains("hooks.example.com")),
        "no row holds the URL"
    );

    // https is taken, from either surface.
    let (status, added) = app
        .rest(
            &admin,
            Method::POST,
            "/webhooks",
            Some(json!({ "url": "https://hooks.example.com/in" })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    let page = ann
        .post_pairs(
            &app,
            "/admin/do/set-chat-hook",
            &with(
                base(&messages, "/admin/messages"),
                &[("group", "reviewers"), ("url", "https://hooks.example.com/chat")],
            ),
        )
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.text);
    app
}

on_both!(
    a_server_that_allows_plain_http_hooks_takes_them,
    allowed,
    allowing_plain_http_hooks
);
async fn allowed(app: TestApp) -> TestApp {
    let app = admin_app(app).await;
    let admin = app.api_token("ann", "admin").await;
    let (status, added) = app
        .rest(&admin, Method::POST, "/webhooks", Some(json!({ "url": PLAIN })))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    let (status, hook) = app
        .rest(
            &admin,
            Method::PUT,
            "/organization/chat-hooks/reviewers",
            Some(json!({ "url": PLAIN })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{hook}");
    // Still no other scheme.
    let (status, refusal) = app
        .rest(
            &admin,
            Method::POST,
            "/webhooks",
            Some(json!({ "url": "ftp://hooks.example.com/in" })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refusal}");
    assert!(
        issues(&refusal)
            .iter()
            .any(|issue| issue.starts_with("url: must be an https:// or http:// URL")),
        "{refusal}"
    );
    app
}
