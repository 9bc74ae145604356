//! The REST surface through the whole router.

use agentprocess_auth::Role;
use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::harness::{TestApp, on_both};

on_both!(tokens_act_within_their_scope_and_the_log_records_it, scopes);
async fn scopes(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_member("bob", Role::Member, &[])
        .await;
    let (admin, read, member) = (
        app.api_token("ann", "admin").await,
        app.api_token("ann", "read").await,
        app.api_token("bob", "read").await,
    );
    let invite = json!({ "email": "cat@acme.test", "role": "operator" });
    assert_eq!(
        app.rest(&read, Method::POST, "/members", Some(invite.clone())).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        app.rest(&member, Method::GET, "/members", None).await.0,
        StatusCode::FORBIDDEN
    );
    let (status, invited) = app.rest(&admin, Method::POST, "/members", Some(invite.clone())).await;
    assert_eq!(
        (status, invited["role"].as_str()),
        (StatusCode::CREATED, Some("operator")),
        "{invited}"
    );
    let (status, again) = app.rest(&admin, Method::POST, "/members", Some(invite)).await;
    assert_eq!(
        (status, again["code"].as_str()),
        (StatusCode::CONFLICT, Some("conflict")),
        "{again}"
    );
    let (status, bad) = app
        .rest(
            &admin,
            Method::POST,
            "/members",
            Some(json!({ "email": "x", "role": "boss" })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    let (status, page) = app.rest(&read, Method::GET, "/audit?kind=member.invited", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["items"].as_array().map(Vec::len), Some(1), "{page}");
    let (status, unknown) = app.rest("apr_nothing", Method::GET, "/session", None).await;
    assert_eq!(
        (status, unknown["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("forbidden"))
    );
    app
}

on_both!(a_token_for_the_other_surface_is_told_where_it_belongs, other_surface);
async fn other_surface(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_agent("bot")
        .await;
    let (api, mcp) = (app.api_token("ann", "admin").await, app.mcp_token("bot").await);
    let (status, refused) = app.rest(&mcp, Method::GET, "/session", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|message| message.contains("/api/v1 takes an API token (apr_")),
        "{refused}"
    );
    let request = axum::http::Request::post("/mcp")
        .header(axum::http::header::HOST, "localhost")
        .header(axum::http::header::AUTHORIZATION, format!("Bearer {api}"))
        .header(axum::http::header::CONTENT_TYPE, "application/json")
        .header(axum::http::header::ACCEPT, "application/json, text/event-stream")
        .body(axum::body::Body::from(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        ))
        .expect("request");
    let response = tower::ServiceExt::oneshot(app.router.clone(), request)
        .await
        .expect("infallible");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let body = axum::body::to_bytes(response.into_body(), 1 << 16).await.expect("body");
    let body = String::from_utf8_lossy(&body);
    assert!(body.contains("an API token, for /api/v1"), "{body}");
    // A token of neither kind is only not valid, on both.
    let (_, unknown) = app.rest("apt_nothing-here", Method::GET, "/session", None).await;
    assert!(
        unknown["message"]
            .as_str()
            .is_some_and(|message| message.contains("/api/v1 takes"))
    );
    let (_, unknown) = app.rest("something", Method::GET, "/session", None).await;
    assert_eq!(
        unknown["message"],
        "the API token is not valid (unknown, expired or revoked)"
    );
    app
}

on_both!(axums_own_refusals_come_in_the_protocols_body, rejections);
async fn rejections(app: TestApp) -> TestApp {
    let app = app.with_org("acme").await.with_member("ann", Role::Admin, &[]).await;
    let admin = app.api_token("ann", "admin").await;
    let (status, body) = app
        .rest(&admin, Method::GET, "/processes/x/versions/not-a-number", None)
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid")),
        "{body}"
    );
    let (status, body) = app.rest(&admin, Method::POST, "/processes", Some(json!({}))).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid")),
        "{body}"
    );
    let (status, body) = app.rest(&admin, Method::DELETE, "/session", None).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
    assert_eq!(body["code"], "invalid");
    app
}

on_both!(an_expired_api_token_is_refused, expiry);
async fn expiry(app: TestApp) -> TestApp {
    let app = app.with_org("acme").await.with_member("ann", Role::Admin, &[]).await;
    let maker = app.api_token("ann", "admin").await;
    // A token cannot make more tokens (only a session can); the harness's token lives
    // the default 90 days, which the test clock then passes.
    let more = json!({ "name": "short", "scope": "read", "expiresInDays": 1 });
    let (status, refused) = app.rest(&maker, Method::POST, "/tokens", Some(more)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert_eq!(app.rest(&maker, Method::GET, "/session", None).await.0, StatusCode::OK);
    app.clock.advance(91 * 86_400);
    let (status, expired) = app.rest(&maker, Method::GET, "/session", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{expired}");
    app
}

on_both!(a_nul_character_is_refused_before_it_reaches_the_database, nul);
async fn nul(app: TestApp) -> TestApp {
    let app = app.with_org("acme").await.with_member("ann", Role::Admin, &[]).await;
    let admin = app.api_token("ann", "admin").await;
    for (method, path, body) in [
        (
            Method::POST,
            "/webhooks",
            Some(json!({ "url": "https://hooks.example.com/\u{0}" })),
        ),
        (Method::POST, "/groups", Some(json!({ "id": "g", "name": "a\u{0}b" }))),
        (Method::GET, "/members/a%00b", None),
        (
            Method::POST,
            "/organization/domains",
            Some(json!({ "domain": format!("{}.com", "a".repeat(64)) })),
        ),
    ] {
        let (status, answer) = app.rest(&admin, method, path, body).await;
        assert_eq!(
            (status, answer["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid")),
            "{path}: {answer}"
        );
    }
    let (_, groups) = app.rest(&admin, Method::GET, "/groups", None).await;
    assert_eq!(groups["items"], json!([]), "nothing was made");
    app
}

/// Over https: an anonymous page stores no session and sets only the visitor's CSRF
/// cookie; the session cookie comes with the sign-in. Both are `__Host-` prefixed,
/// `Secure`, `HttpOnly`, `SameSite=Lax`, path `/`; every answer carries HSTS, pages
/// the content security policy; and `/mcp` never reads the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookies_are_host_bound_secure_pages_unframeable_and_mcp_blind_to_them() {
    use axum::body::Body;
    use axum::http::{HeaderMap, Request, header};
    let app = TestApp::reached_at(agentprocess_store::Dialect::Sqlite, "https://localhost")
        .await
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_dev_sign_in();
    let cookies_of = |headers: &HeaderMap| -> Vec<String> {
        headers
            .get_all(header::SET_COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .map(str::to_owned)
            .collect()
    };
    let host_bound = |cookie: &str| {
        for part in ["__Host-", "Secure", "HttpOnly", "SameSite=Lax", "Path=/"] {
            assert!(cookie.contains(part), "{part} in {cookie}");
        }
        assert!(!cookie.contains("Domain="), "{cookie}");
    };
    let get = |path: &str| {
        Request::get(path)
            .header(header::HOST, "localhost")
            .body(Body::empty())
            .expect("request")
    };
    let page = tower::ServiceExt::oneshot(app.router.clone(), get("/dev/sign-in"))
        .await
        .expect("answer");
    let headers = page.headers().clone();
    let set = cookies_of(&headers);
    assert_eq!(set.len(), 1, "{set:?}");
    assert!(set[0].starts_with("__Host-agentprocess-csrf="), "{set:?}");
    host_bound(&set[0]);
    assert_eq!(headers[header::STRICT_TRANSPORT_SECURITY], "max-age=31536000");
    assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
    let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().expect("text");
    assert!(
        policy.contains("frame-ancestors 'none'") && policy.contains("default-src 'none'"),
        "{policy}"
    );
    let bytes = axum::body::to_bytes(page.into_body(), 1 << 20).await.expect("body");
    let csrf = crate::people_oauth::csrf_of(&String::from_utf8_lossy(&bytes));
    let visitor = set[0].split(';').next().expect("name=value").to_owned();
    let sign_in = Request::post("/dev/sign-in")
        .header(header::HOST, "localhost")
        .header(header::ORIGIN, "https://localhost")
        .header(header::COOKIE, &visitor)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("csrf={csrf}&identity=ann")))
        .expect("request");
    let signed_in = tower::ServiceExt::oneshot(app.router.clone(), sign_in)
        .await
        .expect("answer");
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
    let set = cookies_of(signed_in.headers());
    let session = set
        .iter()
        .find(|cookie| cookie.starts_with("__Host-agentprocess-session="))
        .unwrap_or_else(|| panic!("a session cookie in {set:?}"));
    host_bound(session);
    let pair = session.split(';').next().expect("name=value").to_owned();
    let mcp = Request::post("/mcp")
        .header(header::HOST, "localhost")
        .header(header::COOKIE, pair)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(Body::from(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#))
        .expect("request");
    let (status, _) = app.send(mcp).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    app.finish().await;
}

on_both!(
    a_group_the_identity_provider_fills_is_bound_while_empty_and_the_answer_says_so,
    provider_groups
);
async fn provider_groups(app: TestApp) -> TestApp {
    let app = app.with_org("acme").await.with_member("ann", Role::Admin, &[]).await;
    let admin = app.api_token("ann", "admin").await;
    let (status, _) = app
        .rest(&admin, Method::POST, "/groups", Some(json!({ "id": "finance" })))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let process = "---\nname: pay\ndescription: Pays an invoice.\nsteps:\n  - id: approve\n    person: approver\n    \
                   approve: Approve it.\n  - id: done\n    finish: paid\n---\nPay it.\n";
    let (status, imported) = app.import(&admin, "PROCESS.md", process.as_bytes()).await;
    assert_eq!(status, StatusCode::CREATED, "{imported}");
    let bind = |force: bool| json!({ "group": "finance", "force": force });
    let path = "/processes/pay/draft/roles/approver";

    // Groups the organization fills by hand: an empty one is refused unless forced.
    let (status, refused) = app.rest(&admin, Method::PUT, path, Some(bind(false))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert!(
        refused["issues"][0]
            .as_str()
            .is_some_and(|issue| issue.contains("add members first"))
    );
    let (status, forced) = app.rest(&admin, Method::PUT, path, Some(bind(true))).await;
    assert_eq!(status, StatusCode::OK, "{forced}");
    assert!(
        forced["notes"][0]
            .as_str()
            .is_some_and(|note| note.contains("waits until it has")),
        "{forced}"
    );

    // Groups from the provider's claim: bound while empty, saying who fills it.
    let (status, changed) = app
        .rest(
            &admin,
            Method::PATCH,
            "/organization",
            Some(json!({ "groupsClaim": "groups" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    let (status, bound) = app.rest(&admin, Method::PUT, path, Some(bind(false))).await;
    assert_eq!(status, StatusCode::OK, "{bound}");
    let note = bound["notes"][0].as_str().unwrap_or_default();
    assert!(
        note.contains("\"groups\" claim fills it") && note.contains("the value \"finance\""),
        "{bound}"
    );
    assert_eq!(bound["publishable"], true);
    // A group with members carries no note.
    let (_, ann) = app.rest(&admin, Method::GET, "/members", None).await;
    let ann_id = ann["items"][0]["id"].as_str().expect("ann").to_owned();
    let (status, _) = app
        .rest(&admin, Method::PUT, &format!("/groups/finance/members/{ann_id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, again) = app.rest(&admin, Method::PUT, path, Some(bind(false))).await;
    assert!(again.get("notes").is_none(), "{again}");
    app
}
