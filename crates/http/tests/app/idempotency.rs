//! `Idempotency-Key` on the REST surface's creating requests, a folder imported as an
//! archive, and one webhook delivery sent again.

use std::io::Write as _;

use agentprocess_auth::Role;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::harness::{TestApp, on_both};
use crate::writes::SIGN_OFF;

async fn admin_app(app: TestApp) -> (TestApp, String) {
    let app = app.with_org("acme").await.with_member("ann", Role::Admin, &[]).await;
    let admin = app.api_token("ann", "admin").await;
    (app, admin)
}

fn count(page: &Value) -> usize {
    page["items"].as_array().map_or(0, Vec::len)
}

on_both!(a_creating_request_sent_again_with_its_key_has_one_effect, once);
async fn once(app: TestApp) -> TestApp {
    let (app, admin) = admin_app(app).await;
    let group = json!({ "id": "finance", "name": "Finance" });
    let first = app
        .rest_keyed(&admin, Method::POST, "/groups", Some(group.clone()), Some("k-1"))
        .await;
    let again = app
        .rest_keyed(&admin, Method::POST, "/groups", Some(group), Some("k-1"))
        .await;
    assert_eq!(first.0, StatusCode::CREATED, "{}", first.1);
    assert_eq!(again, first, "the same key and body get the first answer");
    let (_, groups) = app.rest(&admin, Method::GET, "/groups", None).await;
    assert_eq!(count(&groups), 1, "{groups}");
    let (_, log) = app.rest(&admin, Method::GET, "/audit?kind=group.created", None).await;
    assert_eq!(count(&log), 1, "one effect, one entry: {log}");

    let other = app
        .rest_keyed(
            &admin,
            Method::POST,
            "/groups",
            Some(json!({ "id": "legal" })),
            Some("k-1"),
        )
        .await;
    assert_eq!(
        (other.0, other.1["code"].as_str()),
        (StatusCode::CONFLICT, Some("conflict")),
        "{}",
        other.1
    );
    let (_, groups) = app.rest(&admin, Method::GET, "/groups", None).await;
    assert_eq!(count(&groups), 1, "the conflicting request made nothing: {groups}");

    // A token shown once is shown again to the retry of the request that made it (it
    // is kept sealed for that), and only one token exists.
    let agent = app
        .rest_keyed(
            &admin,
            Method::POST,
            "/agents",
            Some(json!({ "id": "bot" })),
            Some("k-2"),
        )
        .await;
    assert_eq!(agent.0, StatusCode::CREATED, "{}", agent.1);
    let made = app
        .rest_keyed(&admin, Method::POST, "/agents/bot/tokens", Some(json!({})), Some("k-3"))
        .await;
    let retried = app
        .rest_keyed(&admin, Method::POST, "/agents/bot/tokens", Some(json!({})), Some("k-3"))
        .await;
    assert_eq!(made.0, StatusCode::CREATED, "{}", made.1);
    assert!(
        made.1["token"].as_str().is_some_and(|token| token.starts_with("apt_")),
        "{}",
        made.1
    );
    assert_eq!(retried, made);
    let (_, tokens) = app.rest(&admin, Method::GET, "/agents/bot/tokens", None).await;
    assert_eq!(count(&tokens), 1, "{tokens}");
    app
}

on_both!(a_refused_request_leaves_its_key_unused, refused);
async fn refused(app: TestApp) -> TestApp {
    let (app, admin) = admin_app(app).await;
    let bad = app
        .rest_keyed(
            &admin,
            Method::POST,
            "/groups",
            Some(json!({ "id": "Not Valid" })),
            Some("k-9"),
        )
        .await;
    assert_eq!(bad.0, StatusCode::BAD_REQUEST, "{}", bad.1);
    let good = app
        .rest_keyed(
            &admin,
            Method::POST,
            "/groups",
            Some(json!({ "id": "finance" })),
            Some("k-9"),
        )
        .await;
    assert_eq!(good.0, StatusCode::CREATED, "{}", good.1);
    let blank = app
        .rest_keyed(
            &admin,
            Method::POST,
            "/groups",
            Some(json!({ "id": "legal" })),
            Some("  "),
        )
        .await;
    assert_eq!(blank.0, StatusCode::BAD_REQUEST, "{}", blank.1);
    app
}

fn tar_of(path: &str, bytes: &[u8]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    builder.append_data(&mut header, path, bytes).expect("appended");
    builder.into_inner().expect("a tar")
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("compressed");
    encoder.finish().expect("a gzip")
}

on_both!(a_process_folder_imports_as_an_archive, archives);
async fn archives(app: TestApp) -> TestApp {
    let (app, admin) = admin_app(app).await;
    let archive = gzip(&tar_of("sign-off/PROCESS.md", SIGN_OFF.as_bytes()));
    let (status, draft) = app.import(&admin, "sign-off.tar.gz", &archive).await;
    assert_eq!(status, StatusCode::CREATED, "{draft}");
    assert_eq!(draft["process"], "sign-off");
    // The archive's folder is the process's folder: a folder of another name is refused.
    let misnamed = gzip(&tar_of("other/PROCESS.md", SIGN_OFF.as_bytes()));
    let (status, refused) = app.import(&admin, "other.tgz", &misnamed).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    let (status, empty) = app
        .import(&admin, "empty.tar", &tar_of("sign-off/notes.md", b"notes"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{empty}");
    assert!(empty.to_string().contains("holds no PROCESS.md"), "{empty}");
    app
}

on_both!(one_webhook_delivery_is_sent_again, redelivery);
async fn redelivery(app: TestApp) -> TestApp {
    let (app, admin) = admin_app(app).await;
    let app = app.with_agent("bot").await;
    app.publish(&admin, "sign-off", SIGN_OFF.as_bytes(), "unused").await;
    let (status, webhook) = app
        .rest(
            &admin,
            Method::POST,
            "/webhooks",
            Some(json!({ "url": "https://hooks.example.com/a" })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{webhook}");
    let webhook = webhook["id"].as_str().expect("id").to_owned();
    let bot = app.mcp_token("bot").await;
    let arguments = json!({ "requestId": "r", "process": "sign-off", "inputs": { "approver": "ann@acme.test" } });
    let started = app.call(&bot, "start_run", arguments).await;
    assert_eq!(started["ok"], true, "{started}");
    let (_, deliveries) = app.rest(&admin, Method::GET, "/webhooks/deliveries", None).await;
    let notification = deliveries["items"][0]["notification"]
        .as_str()
        .expect("a delivery")
        .to_owned();

    let path = format!("/webhooks/{webhook}/deliveries/{notification}/redeliver");
    let (status, _) = app.rest(&admin, Method::POST, &path, None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (_, log) = app
        .rest(&admin, Method::GET, "/audit?kind=webhook.redelivered", None)
        .await;
    assert_eq!(count(&log), 1, "{log}");
    let unknown = format!("/webhooks/{webhook}/deliveries/n_none/redeliver");
    let (status, missing) = app.rest(&admin, Method::POST, &unknown, None).await;
    assert_eq!(
        (status, missing["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );

    // Once the webhook is removed, its deliveries are not sent again.
    let (status, _) = app
        .rest(&admin, Method::DELETE, &format!("/webhooks/{webhook}"), None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = app.rest(&admin, Method::POST, &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    app
}
