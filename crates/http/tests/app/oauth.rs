//! The server as the OAuth authorization server of its MCP resource: discovery from a
//! 401, agent clients with `client_credentials`, scopes, and every refusal.

use agentprocess_auth::Role;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use base64::Engine as _;
use serde_json::{Value, json};

use crate::harness::{TestApp, on_both};
use crate::writes::SIGN_OFF;

/// A `tools/list` over `/mcp` with `token`: the status and `WWW-Authenticate`.
async fn mcp_status(app: &TestApp, token: Option<&str>) -> (StatusCode, String) {
    mcp_post(app, token, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" })).await
}

/// A `start_run` over `/mcp` with `token`: the status and `WWW-Authenticate`.
async fn start_run_with(app: &TestApp, token: &str) -> (StatusCode, String) {
    let arguments = json!({ "requestId": "r2", "process": "sign-off", "inputs": { "approver": "ann@acme.test" } });
    let body = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": { "name": "start_run", "arguments": arguments },
    });
    mcp_post(app, Some(token), body).await
}

/// A raw JSON-RPC message to `/mcp`, with `token` when given.
pub(crate) async fn mcp_post(app: &TestApp, token: Option<&str>, body: Value) -> (StatusCode, String) {
    let mut request = Request::post("/mcp")
        .header(header::HOST, "localhost")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = request.body(Body::from(body.to_string())).expect("request");
    let response = tower::ServiceExt::oneshot(app.router.clone(), request)
        .await
        .expect("infallible");
    let challenge = response
        .headers()
        .get(header::WWW_AUTHENTICATE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (response.status(), challenge)
}

/// `POST /oauth/token` with a form, and HTTP Basic credentials when given.
async fn token_request(app: &TestApp, form: &[(&str, &str)], basic: Option<(&str, &str)>) -> (StatusCode, Value) {
    form_post(app, "/oauth/token", form, basic).await
}

/// A form POSTed to `path`, with HTTP Basic credentials when given.
pub(crate) async fn form_post(
    app: &TestApp,
    path: &str,
    form: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> (StatusCode, Value) {
    let body: String = form
        .iter()
        .map(|(key, value)| format!("{key}={}", value.replace(' ', "+")))
        .collect::<Vec<_>>()
        .join("&");
    let mut request = Request::post(path)
        .header(header::HOST, "localhost")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some((id, secret)) = basic {
        let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
        request = request.header(header::AUTHORIZATION, format!("Basic {encoded}"));
    }
    app.send(request.body(Body::from(body)).expect("request")).await
}

/// An organization with an admin, an agent `bot` and one OAuth client of it:
/// (app, admin token, client id, client secret).
async fn with_client(app: TestApp) -> (TestApp, String, String, String) {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_agent("bot")
        .await;
    let admin = app.api_token("ann", "admin").await;
    let (status, client) = app
        .rest(
            &admin,
            Method::POST,
            "/agents/bot/clients",
            Some(json!({ "name": "ci runner" })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{client}");
    assert_eq!(client["tokenEndpoint"], "http://localhost/oauth/token");
    let id = client["clientId"].as_str().expect("client id").to_owned();
    let secret = client["secrets"][0]["secret"].as_str().expect("secret").to_owned();
    (app, admin, id, secret)
}

on_both!(
    a_401_leads_to_the_metadata_and_the_metadata_to_the_token_endpoint,
    discovery
);
async fn discovery(app: TestApp) -> TestApp {
    let app = app.with_org("acme").await;
    let (status, challenge) = mcp_status(&app, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge,
        "Bearer resource_metadata=\"http://localhost/.well-known/oauth-protected-resource/mcp\", \
         scope=\"process:work process:start\""
    );
    let (status, challenge) = mcp_status(&app, Some("apt_forged")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(challenge.ends_with("error=\"invalid_token\""), "{challenge}");

    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let (status, resource) = app
            .send(
                Request::get(path)
                    .header(header::HOST, "localhost")
                    .body(Body::empty())
                    .expect("request"),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(resource["resource"], "http://localhost/mcp");
        assert_eq!(resource["authorization_servers"], json!(["http://localhost"]));
    }
    let (status, server) = app
        .send(
            Request::get("/.well-known/oauth-authorization-server")
                .header(header::HOST, "localhost")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    // RFC 8414 §3.3: the issuer is the URL the metadata was fetched from, less the suffix.
    assert_eq!(server["issuer"], "http://localhost");
    assert_eq!(server["token_endpoint"], "http://localhost/oauth/token");
    assert_eq!(
        server["grant_types_supported"],
        json!(["authorization_code", "refresh_token", "client_credentials"])
    );
    assert_eq!(server["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(server["authorization_response_iss_parameter_supported"], true);
    assert_eq!(server["client_id_metadata_document_supported"], true);
    for method in ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"] {
        assert!(
            server["token_endpoint_auth_methods_supported"]
                .as_array()
                .is_some_and(|methods| methods.contains(&json!(method))),
            "{method}"
        );
    }
    app
}

on_both!(an_agent_client_gets_tokens_that_do_its_scopes_and_nothing_else, grants);
async fn grants(app: TestApp) -> TestApp {
    let (app, admin, id, secret) = with_client(app).await;
    app.publish(&admin, "sign-off", SIGN_OFF.as_bytes(), "unused").await;
    let grant = [("grant_type", "client_credentials")];
    let (status, issued) = token_request(&app, &grant, Some((&id, &secret))).await;
    assert_eq!(status, StatusCode::OK, "{issued}");
    assert_eq!(issued["token_type"], "Bearer");
    assert_eq!(issued["expires_in"], 3600);
    assert_eq!(issued["scope"], "process:work process:start");
    let token = issued["access_token"].as_str().expect("token").to_owned();
    assert!(token.starts_with("apo_"));
    let started = app
        .call(
            &token,
            "start_run",
            json!({ "requestId": "r1", "process": "sign-off", "inputs": { "approver": "ann@acme.test" } }),
        )
        .await;
    assert_eq!(started["ok"], true, "{started}");
    assert_eq!(started["data"]["run"]["startedBy"], "bot");

    // client_secret_post, asking for the agent loop only: start_run is then refused,
    // naming the scope.
    let (status, narrow) = token_request(
        &app,
        &[
            ("grant_type", "client_credentials"),
            ("client_id", &id),
            ("client_secret", &secret),
            ("scope", "process:work"),
        ],
        None,
    )
    .await;
    assert_eq!(
        (status, narrow["scope"].as_str()),
        (StatusCode::OK, Some("process:work")),
        "{narrow}"
    );
    let narrow = narrow["access_token"].as_str().expect("token");
    assert_eq!(app.call(narrow, "get_work", json!({})).await["ok"], true);
    // Outside its scopes: 403 before the tool runs, with the scopes to ask for.
    let (status, challenge) = start_run_with(&app, narrow).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        challenge.starts_with(
            "Bearer error=\"insufficient_scope\", scope=\"process:work process:start\", \
             resource_metadata=\"http://localhost/.well-known/oauth-protected-resource/mcp\""
        ),
        "{challenge}"
    );

    // The token lives an hour.
    app.clock.advance(3601);
    assert_eq!(mcp_status(&app, Some(&token)).await.0, StatusCode::UNAUTHORIZED);
    app
}

/// A token request's form, its Basic credentials, and the status and error it gets.
type Refusal<'a> = (Vec<(&'a str, &'a str)>, Option<(&'a str, &'a str)>, StatusCode, &'a str);

on_both!(the_token_endpoint_refuses_in_oauths_words, refusals);
async fn refusals(app: TestApp) -> TestApp {
    let (app, _admin, id, secret) = with_client(app).await;
    let grant = [("grant_type", "client_credentials")];
    let cases: Vec<Refusal<'_>> = vec![
        (
            grant.to_vec(),
            Some((&id, "apcs_wrong")),
            StatusCode::UNAUTHORIZED,
            "invalid_client",
        ),
        (
            grant.to_vec(),
            Some(("apc_unknown", &secret)),
            StatusCode::UNAUTHORIZED,
            "invalid_client",
        ),
        (grant.to_vec(), None, StatusCode::UNAUTHORIZED, "invalid_client"),
        (
            vec![("grant_type", "password")],
            Some((&id, &secret)),
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
        ),
        (
            vec![("grant_type", "client_credentials"), ("scope", "process:decide")],
            Some((&id, &secret)),
            StatusCode::BAD_REQUEST,
            "invalid_scope",
        ),
        (
            vec![
                ("grant_type", "client_credentials"),
                ("resource", "https://elsewhere.example/mcp"),
            ],
            Some((&id, &secret)),
            StatusCode::BAD_REQUEST,
            "invalid_target",
        ),
        (
            vec![("grant_type", "client_credentials"), ("client_secret", &secret)],
            Some((&id, &secret)),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
    ];
    for (form, basic, status, error) in cases {
        let (got, body) = token_request(&app, &form, basic).await;
        assert_eq!((got, body["error"].as_str()), (status, Some(error)), "{form:?}: {body}");
    }
    app
}

on_both!(secrets_rotate_without_a_gap_and_revocation_stops_tokens, rotation);
async fn rotation(app: TestApp) -> TestApp {
    let (app, admin, id, first) = with_client(app).await;
    let grant = [("grant_type", "client_credentials")];
    let path = format!("/agents/bot/clients/{id}/secrets");
    let (status, second) = app.rest(&admin, Method::POST, &path, None).await;
    assert_eq!(status, StatusCode::CREATED, "{second}");
    let second_id = second["id"].as_str().expect("id").to_owned();
    let second = second["secret"].as_str().expect("secret").to_owned();
    let (status, third) = app.rest(&admin, Method::POST, &path, None).await;
    assert_eq!(
        (status, third["code"].as_str()),
        (StatusCode::CONFLICT, Some("conflict")),
        "{third}"
    );
    for secret in [&first, &second] {
        assert_eq!(token_request(&app, &grant, Some((&id, secret))).await.0, StatusCode::OK);
    }
    let (_, listed) = app.rest(&admin, Method::GET, "/agents/bot/clients", None).await;
    let live: Vec<&str> = listed["items"][0]["secrets"]
        .as_array()
        .expect("secrets")
        .iter()
        .filter_map(|secret| secret["id"].as_str())
        .collect();
    assert_eq!(live.len(), 2, "{listed}");
    let first_id = live
        .iter()
        .find(|id| **id != second_id)
        .expect("the first secret")
        .to_string();
    let (status, _) = app
        .rest(&admin, Method::DELETE, &format!("{path}/{first_id}"), None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        token_request(&app, &grant, Some((&id, &first))).await.0,
        StatusCode::UNAUTHORIZED
    );
    let (_, issued) = token_request(&app, &grant, Some((&id, &second))).await;
    let token = issued["access_token"].as_str().expect("token").to_owned();
    assert_eq!(mcp_status(&app, Some(&token)).await.0, StatusCode::OK);

    // A revoked client's tokens stop within the identity cache's bound.
    let (status, _) = app
        .rest(&admin, Method::DELETE, &format!("/agents/bot/clients/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    app.clock.advance(11);
    assert_eq!(mcp_status(&app, Some(&token)).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(
        token_request(&app, &grant, Some((&id, &second))).await.0,
        StatusCode::UNAUTHORIZED
    );
    let (_, log) = app
        .rest(&admin, Method::GET, "/audit?kind=agent.client_revoked", None)
        .await;
    assert_eq!(log["items"].as_array().map(Vec::len), Some(1), "{log}");
    app
}

on_both!(
    no_credential_the_server_hands_out_is_kept_in_clear,
    kept_hashed_or_sealed
);
/// A static MCP token, a person's API token, an OAuth client's secret and its access
/// token, a webhook's signing secret: none of them appears in any row (claim tokens:
/// see `writes`).
async fn kept_hashed_or_sealed(app: TestApp) -> TestApp {
    let (app, admin, id, secret) = with_client(app).await;
    let hook = json!({ "url": "https://hooks.example.com/agentprocess" });
    let (status, webhook) = app
        .rest_keyed(&admin, Method::POST, "/webhooks", Some(hook.clone()), Some("hook-1"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{webhook}");
    let signing = webhook["secret"]
        .as_str()
        .expect("the signing secret, shown once")
        .to_owned();
    assert!(signing.starts_with("whsec_"), "{signing}");
    let (_, replayed) = app
        .rest_keyed(&admin, Method::POST, "/webhooks", Some(hook), Some("hook-1"))
        .await;
    assert_eq!(
        replayed["secret"],
        signing.as_str(),
        "a replay shows the same secret, opened"
    );
    app.publish(&admin, "sign-off", SIGN_OFF.as_bytes(), "unused").await;
    let (status, issued) = token_request(&app, &[("grant_type", "client_credentials")], Some((&id, &secret))).await;
    assert_eq!(status, StatusCode::OK, "{issued}");
    let access = issued["access_token"].as_str().expect("token").to_owned();
    let mcp = app.mcp_token("bot").await;
    let started = app
        .call(
            &access,
            "start_run",
            json!({ "requestId": "r1", "process": "sign-off", "inputs": { "approver": "ann@acme.test" } }),
        )
        .await;
    assert_eq!(started["ok"], true, "{started}");
    let stored = app.every_stored_text().await;
    assert!(
        stored.iter().any(|text| text.contains("sign-off")),
        "the scan reads the rows"
    );
    // Each credential's secret part: what follows its prefix.
    for (what, credential) in [
        ("the admin's API token", admin.as_str()),
        ("the client secret", secret.as_str()),
        ("the access token", access.as_str()),
        ("the static MCP token", mcp.as_str()),
        ("the webhook signing secret", signing.as_str()),
    ] {
        let secret_part = &credential[credential.len().saturating_sub(24)..];
        assert!(
            !stored.iter().any(|text| text.contains(secret_part)),
            "{what} is kept in clear"
        );
    }
    app
}

on_both!(a_disabled_agent_gets_no_token, disabled);
async fn disabled(app: TestApp) -> TestApp {
    let (app, admin, id, secret) = with_client(app).await;
    let (status, _) = app
        .rest(&admin, Method::PATCH, "/agents/bot", Some(json!({ "enabled": false })))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = token_request(&app, &[("grant_type", "client_credentials")], Some((&id, &secret))).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("unauthorized_client")),
        "{body}"
    );
    // Another organization's admin cannot see or touch the client.
    let app = app.with_org("other").await.with_member("oz", Role::Admin, &[]).await;
    let other = app.api_token("oz", "admin").await;
    let (status, _) = app
        .rest(&other, Method::DELETE, &format!("/agents/bot/clients/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    app
}

on_both!(a_client_revokes_its_own_tokens_and_only_those, revocation);
async fn revocation(app: TestApp) -> TestApp {
    let (app, admin, id, secret) = with_client(app).await;
    let (status, other) = app
        .rest(&admin, Method::POST, "/agents/bot/clients", Some(json!({})))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{other}");
    let other_id = other["clientId"].as_str().expect("id").to_owned();
    let other_secret = other["secrets"][0]["secret"].as_str().expect("secret").to_owned();
    let grant = [("grant_type", "client_credentials")];
    let (_, issued) = token_request(&app, &grant, Some((&id, &secret))).await;
    let token = issued["access_token"].as_str().expect("token").to_owned();

    // Another client's revocation answers the same and changes nothing.
    let form = [("token", token.as_str()), ("token_type_hint", "access_token")];
    let (status, _) = form_post(&app, "/oauth/revoke", &form, Some((&other_id, &other_secret))).await;
    assert_eq!(status, StatusCode::OK);
    app.clock.advance(11);
    assert_eq!(mcp_status(&app, Some(&token)).await.0, StatusCode::OK);
    let (status, refused) = form_post(&app, "/oauth/revoke", &form, Some((&id, "apcs_wrong"))).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("invalid_client"))
    );

    let (status, _) = form_post(&app, "/oauth/revoke", &form, Some((&id, &secret))).await;
    assert_eq!(status, StatusCode::OK);
    app.clock.advance(11);
    assert_eq!(mcp_status(&app, Some(&token)).await.0, StatusCode::UNAUTHORIZED);
    let unknown = [("token", "apo_never-issued")];
    assert_eq!(
        form_post(&app, "/oauth/revoke", &unknown, Some((&id, &secret))).await.0,
        StatusCode::OK
    );
    let (_, log) = app
        .rest(&admin, Method::GET, "/audit?kind=oauth.token_revoked", None)
        .await;
    assert_eq!(log["items"].as_array().map(Vec::len), Some(1), "{log}");
    app
}

on_both!(
    a_token_in_the_query_string_for_another_audience_or_expired_is_refused,
    query_token
);
async fn query_token(app: TestApp) -> TestApp {
    let (app, admin, id, secret) = with_client(app).await;
    let (_, issued) = token_request(&app, &[("grant_type", "client_credentials")], Some((&id, &secret))).await;
    let token = issued["access_token"].as_str().expect("token").to_owned();
    let request = Request::post(format!("/mcp?access_token={token}"))
        .header(header::HOST, "localhost")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(Body::from(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#))
        .expect("request");
    let (status, _) = app.send(request).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "RFC 6750 §2.3 is not offered");
    assert_eq!(mcp_status(&app, Some(&token)).await.0, StatusCode::OK);
    // The admin's REST token is for another audience.
    let (status, challenge) = mcp_status(&app, Some(&admin)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    // An hour later the access token has expired.
    app.clock.advance(3601);
    let (status, challenge) = mcp_status(&app, Some(&token)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    app
}
