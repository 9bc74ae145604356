//! People in MCP clients: a client registers (RFC 7591), sends the person to the
//! authorization endpoint, the person signs in (the development sign-in stands in for
//! their provider here; the e2e suite drives a real one) and consents, and the client
//! trades the code (PKCE S256) for tokens that rotate. Every refusal the issue lists.

use agentprocess_auth::Role;
use agentprocess_auth::authorization::s256;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};

use crate::harness::{TestApp, on_both};
use crate::oauth::{form_post, mcp_post};

const REDIRECT: &str = "http://127.0.0.1:5555/callback";
const VERIFIER: &str = "the-verifier-of-this-test-which-is-long-enough-for-pkce";

/// A browser: the cookies the server set (its session, a visitor's CSRF cookie, the
/// page to return to), the server's forms.
pub(crate) struct Browser {
    cookies: std::collections::BTreeMap<String, String>,
    /// Cookies the page script would set (`tz=…`).
    extra: Vec<String>,
}

/// An answer: status, `Location`, headers, body.
pub(crate) struct Page {
    pub(crate) status: StatusCode,
    pub(crate) location: String,
    pub(crate) headers: axum::http::HeaderMap,
    pub(crate) text: String,
}

impl Browser {
    pub(crate) fn new() -> Self {
        Self {
            cookies: std::collections::BTreeMap::new(),
            extra: Vec::new(),
        }
    }

    /// A browser signed in as `who` through the development sign-in.
    pub(crate) async fn signed_in(app: &TestApp, who: &str) -> Self {
        let mut browser = Self::new();
        let form = browser.get(app, "/dev/sign-in").await;
        browser
            .post_form(
                app,
                "/dev/sign-in",
                &[("csrf", &csrf_of(&form.text)), ("identity", who)],
            )
            .await;
        browser
    }

    /// Sends `name=value` with every later request, as the page script's cookies are.
    pub(crate) fn set_cookie(&mut self, pair: &str) {
        self.extra.push(pair.to_owned());
    }

    pub(crate) async fn send(&mut self, app: &TestApp, request: axum::http::request::Builder, body: Body) -> Page {
        let mut request = request.header(header::HOST, "localhost");
        let pairs: Vec<String> = self
            .cookies
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        let cookies: Vec<&str> = pairs.iter().chain(&self.extra).map(String::as_str).collect();
        if !cookies.is_empty() {
            request = request.header(header::COOKIE, cookies.join("; "));
        }
        let response = tower::ServiceExt::oneshot(app.router.clone(), request.body(body).expect("request"))
            .await
            .expect("infallible");
        for cookie in response
            .headers()
            .get_all(header::SET_COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
        {
            let Some((name, value)) = cookie.split(';').next().and_then(|pair| pair.split_once('=')) else {
                continue;
            };
            let removed = value.is_empty() || cookie.contains("Max-Age=0");
            if removed {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        let status = response.status();
        let location = response
            .headers()
            .get(header::LOCATION)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("body");
        Page {
            status,
            location,
            headers,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    pub(crate) async fn get(&mut self, app: &TestApp, path: &str) -> Page {
        self.send(app, Request::get(path), Body::empty()).await
    }

    pub(crate) async fn post_form(&mut self, app: &TestApp, path: &str, fields: &[(&str, &str)]) -> Page {
        let owned: Vec<(String, String)> = fields
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        self.post_pairs(app, path, &owned).await
    }

    pub(crate) async fn post_pairs(&mut self, app: &TestApp, path: &str, fields: &[(String, String)]) -> Page {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        let request = Request::post(path)
            .header(header::ORIGIN, "http://localhost")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        self.send(app, request, Body::from(body)).await
    }

    /// A `multipart/form-data` form: `fields`, then `files` as (field, file name,
    /// media type, bytes).
    pub(crate) async fn post_multipart(
        &mut self,
        app: &TestApp,
        path: &str,
        fields: &[(String, String)],
        files: &[(&str, &str, &str, &[u8])],
    ) -> Page {
        const BOUNDARY: &str = "----form-boundary-7MA4YWxkTrZu0gW";
        let mut body = Vec::new();
        for (name, value) in fields {
            body.extend_from_slice(
                format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                    .as_bytes(),
            );
        }
        for (name, file_name, media_type, bytes) in files {
            body.extend_from_slice(
                format!(
                    "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{file_name}\"\r\n\
                     Content-Type: {media_type}\r\n\r\n"
                )
                .as_bytes(),
            );
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
        let request = Request::post(path).header(header::ORIGIN, "http://localhost").header(
            header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={BOUNDARY}"),
        );
        self.send(app, request, Body::from(body)).await
    }
}

pub(crate) fn csrf_of(page: &str) -> String {
    let start = page.find("name=\"csrf\" value=\"").expect("a CSRF field") + 19;
    let end = start + page[start..].find('"').expect("end of value");
    page[start..end].to_owned()
}

/// The query parameters of a URL.
fn query_of(location: &str) -> std::collections::HashMap<String, String> {
    url::Url::parse(location)
        .expect("a URL")
        .query_pairs()
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect()
}

async fn json_post(app: &TestApp, path: &str, body: &Value) -> (StatusCode, Value) {
    app.send(
        Request::post(path)
            .header(header::HOST, "localhost")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .expect("request"),
    )
    .await
}

/// A client that registers itself, native, with a loopback redirect: its id.
async fn registered(app: &TestApp) -> String {
    let (status, client) = json_post(
        app,
        "/oauth/register",
        &json!({
            "client_name": "Desk Agent", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "application_type": "native",
        }),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{client}");
    assert_eq!(client["token_endpoint_auth_method"], "none");
    assert!(client.get("client_secret").is_none(), "{client}");
    client["client_id"].as_str().expect("client_id").to_owned()
}

fn authorize_path(client_id: &str, extra: &[(&str, &str)]) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query.extend_pairs([
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", "http://127.0.0.1:61234/callback"),
        ("state", "st4te"),
        ("code_challenge", s256(VERIFIER).as_str()),
        ("code_challenge_method", "S256"),
    ]);
    query.extend_pairs(extra);
    format!("/oauth/authorize?{}", query.finish())
}

/// `person` signs in (from the authorization request, through the development
/// sign-in) and answers the consent page with `answer`: where they are sent back,
/// and the consent page's text.
async fn consent(app: &TestApp, browser: &mut Browser, path: &str, person: &str, answer: &str) -> (String, String) {
    let first = browser.get(app, path).await;
    assert_eq!(
        (first.status, first.location.as_str()),
        (StatusCode::SEE_OTHER, "/login"),
        "{}",
        first.text
    );
    let form = browser.get(app, "/dev/sign-in").await;
    let signed_in = browser
        .post_form(
            app,
            "/dev/sign-in",
            &[("csrf", &csrf_of(&form.text)), ("identity", person)],
        )
        .await;
    assert_eq!(signed_in.status, StatusCode::SEE_OTHER, "{}", signed_in.text);
    assert_eq!(signed_in.location, path, "back to the authorization request");
    let page = browser.get(app, path).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let client_id = query_of(&format!("http://localhost{path}"))["client_id"].clone();
    let answered = browser
        .post_form(
            app,
            "/oauth/authorize",
            &[
                ("csrf", &csrf_of(&page.text)),
                ("client_id", &client_id),
                ("answer", answer),
            ],
        )
        .await;
    assert_eq!(answered.status, StatusCode::SEE_OTHER, "{}", answered.text);
    (answered.location, page.text)
}

async fn exchange(app: &TestApp, client_id: &str, code: &str, verifier: &str) -> (StatusCode, Value) {
    form_post(
        app,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("client_id", client_id),
            ("code", code),
            ("redirect_uri", "http://127.0.0.1:61234/callback"),
            ("code_verifier", verifier),
            ("resource", "http://localhost/mcp"),
        ],
        None,
    )
    .await
}

async fn refresh(app: &TestApp, client_id: &str, token: &str) -> (StatusCode, Value) {
    form_post(
        app,
        "/oauth/token",
        &[
            ("grant_type", "refresh_token"),
            ("client_id", client_id),
            ("refresh_token", token),
        ],
        None,
    )
    .await
}

async fn tools_list(app: &TestApp, token: &str) -> StatusCode {
    mcp_post(
        app,
        Some(token),
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
    )
    .await
    .0
}

/// A `decide` by `token`, well formed, of a run that does not exist: what matters is
/// whether the token may decide at all (`forbidden`) or reaches the run (`not_found`).
async fn decide_with(app: &TestApp, token: &str, request_id: &str) -> Value {
    let arguments = json!({ "requestId": request_id, "runId": "run_none", "workItemId": "wi_none",
                            "snapshot": "x", "decision": "approved" });
    app.call(token, "decide", arguments).await
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_default()
}

on_both!(
    a_person_signs_in_from_a_registered_client_and_its_tokens_rotate,
    person_flow
);
async fn person_flow(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Operator, &["reviewers"])
        .await
        .with_dev_sign_in();
    let client_id = registered(&app).await;
    let mut browser = Browser::new();
    let path = authorize_path(&client_id, &[("scope", "process:work process:decide")]);
    let (back, page) = consent(&app, &mut browser, &path, "ann", "allow").await;
    for shown in [
        "Desk Agent",
        "127.0.0.1",
        "on your own computer",
        "process:work",
        "decide work items",
    ] {
        assert!(page.contains(shown), "{shown} on the consent page: {page}");
    }
    assert!(back.starts_with("http://127.0.0.1:61234/callback?"), "{back}");
    let answer = query_of(&back);
    assert_eq!(answer["state"], "st4te");
    assert_eq!(answer["iss"], "http://localhost");
    let code = answer["code"].clone();

    let (status, wrong) = exchange(
        &app,
        &client_id,
        &code,
        "a-verifier-that-is-not-the-one-of-the-challenge-at-all",
    )
    .await;
    assert_eq!(
        (status, text(&wrong, "error")),
        (StatusCode::BAD_REQUEST, "invalid_grant"),
        "{wrong}"
    );
    let (status, issued) = exchange(&app, &client_id, &code, VERIFIER).await;
    assert_eq!(status, StatusCode::OK, "{issued}");
    assert_eq!(
        issued["scope"], "process:work",
        "decide is withheld: the client is not operated by people"
    );
    let access = text(&issued, "access_token").to_owned();
    let first_refresh = text(&issued, "refresh_token").to_owned();
    assert!(first_refresh.starts_with("aprt_"));
    assert_eq!(tools_list(&app, &access).await, StatusCode::OK);
    let decided = decide_with(&app, &access, "d1").await;
    assert_eq!(decided["error"]["code"], "forbidden", "{decided}");
    assert!(
        text(&decided["error"], "message").contains("in the browser"),
        "{decided}"
    );
    // A person's client may still be granted process:operate: cancel is challenged
    // with the scopes to ask for, and the client can get them.
    let cancel = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                         "params": { "name": "cancel", "arguments": { "requestId": "c1", "runId": "run_x", "reason": "no" } } });
    let (status, challenge) = mcp_post(&app, Some(&access), cancel).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        challenge.contains("insufficient_scope") && challenge.contains("scope=\"process:work process:operate\""),
        "{challenge}"
    );

    // Rotation: each refresh gives a new refresh token; the old one, again at once, is
    // refused and the grant lives on.
    let (status, second) = refresh(&app, &client_id, &first_refresh).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    let second_refresh = text(&second, "refresh_token").to_owned();
    assert_ne!(second_refresh, first_refresh);
    let (status, again) = refresh(&app, &client_id, &first_refresh).await;
    assert_eq!(
        (status, text(&again, "error")),
        (StatusCode::BAD_REQUEST, "invalid_grant"),
        "{again}"
    );
    let newest = text(&second, "access_token").to_owned();
    assert_eq!(
        tools_list(&app, &newest).await,
        StatusCode::OK,
        "within the grace window the grant lives"
    );

    // Past the grace window, a reuse revokes the whole family.
    app.clock.advance(11);
    let (status, reused) = refresh(&app, &client_id, &first_refresh).await;
    assert_eq!(
        (status, text(&reused, "error")),
        (StatusCode::BAD_REQUEST, "invalid_grant"),
        "{reused}"
    );
    assert!(text(&reused, "error_description").contains("revoked"), "{reused}");
    app.clock.advance(11);
    assert_eq!(tools_list(&app, &newest).await, StatusCode::UNAUTHORIZED);
    let (status, _) = refresh(&app, &client_id, &second_refresh).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "the newest refresh token died with its family"
    );

    // A code is good once: using it again revokes what it gave.
    let mut browser = Browser::new();
    let (back, _) = consent(&app, &mut browser, &authorize_path(&client_id, &[]), "ann", "allow").await;
    let code = query_of(&back)["code"].clone();
    let (status, issued) = exchange(&app, &client_id, &code, VERIFIER).await;
    assert_eq!(status, StatusCode::OK, "{issued}");
    assert_eq!(issued["scope"], "process:work process:start process:operate");
    let access = text(&issued, "access_token").to_owned();
    let (status, replayed) = exchange(&app, &client_id, &code, VERIFIER).await;
    assert_eq!(
        (status, text(&replayed, "error")),
        (StatusCode::BAD_REQUEST, "invalid_grant"),
        "{replayed}"
    );
    app.clock.advance(11);
    assert_eq!(tools_list(&app, &access).await, StatusCode::UNAUTHORIZED);

    // Denied: the client hears access_denied, with its state and our issuer.
    let mut browser = Browser::new();
    let (back, _) = consent(&app, &mut browser, &authorize_path(&client_id, &[]), "ann", "deny").await;
    let answer = query_of(&back);
    assert_eq!(
        (answer["error"].as_str(), answer["state"].as_str()),
        ("access_denied", "st4te")
    );
    assert_eq!(answer["iss"], "http://localhost");

    // An expired code.
    let mut browser = Browser::new();
    let (back, _) = consent(&app, &mut browser, &authorize_path(&client_id, &[]), "ann", "allow").await;
    app.clock.advance(61);
    let (status, late) = exchange(&app, &client_id, &query_of(&back)["code"], VERIFIER).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{late}");
    assert!(text(&late, "error_description").contains("expired"), "{late}");
    app
}

on_both!(the_authorization_endpoint_refuses_what_it_must, refusals);
async fn refusals(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Member, &[])
        .await
        .with_dev_sign_in();
    let client_id = registered(&app).await;
    let mut browser = Browser::new();
    // The client or its redirect URI cannot be trusted: shown, never redirected.
    for path in [
        authorize_path("apd_unknown", &[]),
        authorize_path(&client_id, &[]).replace("61234%2Fcallback", "61234%2Felsewhere"),
        authorize_path(&client_id, &[]).replace("127.0.0.1", "evil.example"),
    ] {
        let page = browser.get(&app, &path).await;
        assert_eq!(
            (page.status, page.location.as_str()),
            (StatusCode::BAD_REQUEST, ""),
            "{path}: {}",
            page.text
        );
    }
    // The rest goes back to the client, with the error, the state and the issuer.
    for (changed, error) in [
        (
            authorize_path(&client_id, &[]).replace("code_challenge_method=S256", "code_challenge_method=plain"),
            "invalid_request",
        ),
        (
            authorize_path(&client_id, &[]).replace("&code_challenge_method=S256", ""),
            "invalid_request",
        ),
        (
            authorize_path(&client_id, &[]).replace("response_type=code", "response_type=token"),
            "unsupported_response_type",
        ),
        (
            authorize_path(&client_id, &[("scope", "process:everything")]),
            "invalid_scope",
        ),
        (
            authorize_path(&client_id, &[("resource", "https://other.example/mcp")]),
            "invalid_target",
        ),
    ] {
        let page = browser.get(&app, &changed).await;
        assert_eq!(page.status, StatusCode::SEE_OTHER, "{changed}: {}", page.text);
        let answer = query_of(&page.location);
        assert_eq!(answer["error"], error, "{changed}");
        assert_eq!(
            (answer["state"].as_str(), answer["iss"].as_str()),
            ("st4te", "http://localhost")
        );
    }
    let no_pkce = authorize_path(&client_id, &[]);
    let start = no_pkce.find("&code_challenge=").expect("challenge");
    let end = start + 1 + no_pkce[start + 1..].find('&').expect("next");
    let page = browser
        .get(&app, &format!("{}{}", &no_pkce[..start], &no_pkce[end..]))
        .await;
    assert_eq!(query_of(&page.location)["error"], "invalid_request", "no PKCE at all");

    // Registration refuses what cannot be served, naming every issue.
    let (status, refused) = json_post(
        &app,
        "/oauth/register",
        &json!({ "redirect_uris": ["http://app.example.com/cb"], "application_type": "web",
                 "grant_types": ["client_credentials"], "token_endpoint_auth_method": "private_key_jwt" }),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(refused["error"], "invalid_redirect_uri", "{refused}");
    let (status, refused) = json_post(
        &app,
        "/oauth/register",
        &json!({ "redirect_uris": ["https://app.example.com/cb"], "grant_types": ["client_credentials"],
                 "token_endpoint_auth_method": "private_key_jwt" }),
    )
    .await;
    assert_eq!(
        (status, text(&refused, "error")),
        (StatusCode::BAD_REQUEST, "invalid_client_metadata")
    );
    for named in ["grant_types", "token_endpoint_auth_method"] {
        assert!(text(&refused, "error_description").contains(named), "{refused}");
    }
    // A public client sends no secret; a confidential one must.
    let (status, body) = form_post(
        &app,
        "/oauth/token",
        &[
            ("grant_type", "refresh_token"),
            ("client_id", &client_id),
            ("client_secret", "x"),
            ("refresh_token", "aprt_x"),
        ],
        None,
    )
    .await;
    assert_eq!(
        (status, text(&body, "error")),
        (StatusCode::UNAUTHORIZED, "invalid_client"),
        "{body}"
    );
    app
}

on_both!(only_a_client_operated_by_people_gets_decide, people_operated);
async fn people_operated(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_agent("bot")
        .await
        .with_dev_sign_in();
    let admin = app.api_token("ann", "admin").await;
    let (status, made) = app
        .rest(
            &admin,
            Method::POST,
            "/apps",
            Some(json!({ "name": "Acme inbox", "redirectUris": [REDIRECT], "peopleOperated": true, "confidential": true })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let client_id = text(&made, "clientId").to_owned();
    let secret = text(&made, "clientSecret").to_owned();
    let mut browser = Browser::new();
    let (back, page) = consent(&app, &mut browser, &authorize_path(&client_id, &[]), "ann", "allow").await;
    assert!(page.contains("Acme inbox") && page.contains("process:decide"), "{page}");
    let code = query_of(&back)["code"].clone();
    let (status, issued) = form_post(
        &app,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("code_verifier", VERIFIER),
        ],
        Some((&client_id, &secret)),
    )
    .await;
    // RFC 6749 §4.1.3: the request named its redirect URI, so the exchange must too;
    // refused, the code is still good.
    assert_eq!(
        (status, issued["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "{issued}"
    );
    assert!(
        text(&issued, "error_description").contains("redirect_uri is required"),
        "{issued}"
    );
    let (status, issued) = form_post(
        &app,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", "http://127.0.0.1:61234/callback"),
            ("code_verifier", VERIFIER),
        ],
        Some((&client_id, &secret)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{issued}");
    assert_eq!(
        issued["scope"],
        "process:work process:start process:decide process:operate"
    );
    let access = text(&issued, "access_token").to_owned();
    let decided = decide_with(&app, &access, "d1").await;
    assert_eq!(
        decided["error"]["code"], "not_found",
        "the scope lets it through to the run: {decided}"
    );

    // Introspection: the client learns about its own token, nothing about others.
    let (status, about) = form_post(
        &app,
        "/oauth/introspect",
        &[("token", &access)],
        Some((&client_id, &secret)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{about}");
    assert_eq!(
        (about["active"].as_bool(), about["sub"].as_str()),
        (Some(true), Some("ann")),
        "{about}"
    );
    assert_eq!(about["client_id"], client_id.as_str());
    let (_, bot_client) = app
        .rest(&admin, Method::POST, "/agents/bot/clients", Some(json!({})))
        .await;
    let bot_id = text(&bot_client, "clientId").to_owned();
    let bot_secret = bot_client["secrets"][0]["secret"].as_str().expect("secret").to_owned();
    let (_, others) = form_post(
        &app,
        "/oauth/introspect",
        &[("token", &access)],
        Some((&bot_id, &bot_secret)),
    )
    .await;
    assert_eq!(others, json!({ "active": false }));
    // An agent's token never decides, and cancel is outside what an agent's client is
    // ever granted: both are the tool's own `forbidden`, saying who may, not a 403
    // challenge the client would answer by asking for a scope it cannot get.
    let (_, agent_token) = form_post(
        &app,
        "/oauth/token",
        &[("grant_type", "client_credentials")],
        Some((&bot_id, &bot_secret)),
    )
    .await;
    let agent_token = text(&agent_token, "access_token").to_owned();
    let decided = decide_with(&app, &agent_token, "d2").await;
    assert_eq!(decided["error"]["code"], "forbidden", "{decided}");
    let cancel = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                         "params": { "name": "cancel", "arguments": { "requestId": "c1", "runId": "run_x", "reason": "no" } } });
    let (status, challenge) = mcp_post(&app, Some(&agent_token), cancel).await;
    assert_eq!((status, challenge.as_str()), (StatusCode::OK, ""));
    let cancelled = app
        .call(
            &agent_token,
            "cancel",
            json!({ "requestId": "c1", "runId": "run_x", "reason": "no" }),
        )
        .await;
    assert_eq!(cancelled["error"]["code"], "forbidden", "{cancelled}");
    let said = cancelled["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("operators") && said.contains("process:operate, which an agent's OAuth client is never granted"),
        "{said}"
    );

    // Revoking the app ends every token of it.
    let (status, _) = app
        .rest(&admin, Method::DELETE, &format!("/apps/{client_id}"), None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    app.clock.advance(11);
    assert_eq!(tools_list(&app, &access).await, StatusCode::UNAUTHORIZED);
    app
}
