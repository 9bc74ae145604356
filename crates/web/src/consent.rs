//! The authorization endpoint: a person, signed in through their organization's
//! identity provider (or already, by their session), sees which client asks to act
//! for them, where it sends them back and what it may do, and says yes or no. Served
//! under the session layer, like the sign-in pages.

use std::fmt::Write as _;
use std::sync::Arc;

use agentprocess_auth::authorization::{AuthorizationRequest, AuthorizeError, Consentable};
use agentprocess_auth::clients::GrantError;
use agentprocess_auth::redirects;
use axum::Router;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;
use tower_sessions::Session;

use crate::errors::ApiError;
use crate::session::{ClientAddress, Web, check_csrf, csrf_token, signed_in};
use crate::sign_in::{escape, page, problems};

/// The session key of the request on the consent page.
const PENDING_CONSENT: &str = "pendingConsent";

pub(crate) fn routes(web: Arc<Web>) -> Router {
    Router::new()
        .route("/oauth/authorize", get(authorize).post(answer))
        .with_state(web)
}

/// What a scope lets the client do, in the person's words.
fn meaning(scope: &str) -> &'static str {
    match scope {
        "process:work" => "see and work the steps your groups are given, and read runs",
        "process:start" => "start runs of your organization's processes",
        "process:operate" => "cancel runs and send events to them, as far as your role allows",
        "process:decide" => "approve, reject and complete work items in your name",
        _ => "",
    }
}

/// Where the answer goes: the redirect URI with `params` and `iss` added (RFC 9207).
fn back_to(redirect_uri: &str, params: &[(&str, Option<&str>)], issuer: &str) -> Response {
    let Ok(mut url) = url::Url::parse(redirect_uri) else {
        return shown(StatusCode::BAD_REQUEST, "the client's redirect URI cannot be used");
    };
    {
        let mut query = url.query_pairs_mut();
        for (name, value) in params {
            if let Some(value) = value {
                query.append_pair(name, value);
            }
        }
        query.append_pair("iss", issuer);
    }
    Redirect::to(url.as_str()).into_response()
}

fn error_back(redirect_uri: &str, state: Option<&str>, error: &GrantError, issuer: &str) -> Response {
    back_to(
        redirect_uri,
        &[
            ("error", Some(error.error)),
            ("error_description", Some(&error.description)),
            ("state", state),
        ],
        issuer,
    )
}

fn shown(status: StatusCode, message: &str) -> Response {
    let body = problems(&ApiError::invalid(message, Vec::new()));
    page(status, "This sign-in cannot go on", &body)
}

fn refusal(web: &Web, error: AuthorizeError) -> Response {
    match error {
        AuthorizeError::Shown(message) => shown(StatusCode::BAD_REQUEST, &message),
        AuthorizeError::Redirected {
            redirect_uri,
            state,
            error,
        } => error_back(
            &redirect_uri,
            state.as_deref(),
            &error,
            issuer(&web.service.settings().public_url),
        ),
        AuthorizeError::Failed(error) => ApiError::from(error).into_response(),
    }
}

async fn authorize(
    State(web): State<Arc<Web>>,
    session: Session,
    uri: Uri,
    query: Result<Query<AuthorizationRequest>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(asked)) = query else {
        return shown(
            StatusCode::BAD_REQUEST,
            "the authorization request's parameters cannot be read (each may appear once)",
        );
    };
    let public_url = &web.service.settings().public_url;
    let consentable = match web
        .auth
        .check_authorization(&asked, &mcp_resource(public_url), web.service.now())
        .await
    {
        Ok(consentable) => consentable,
        Err(error) => return refusal(&web, error),
    };
    let person = match signed_in(&web, &session).await {
        Ok(person) => person,
        Err(error) => return error.into_response(),
    };
    let Some(person) = person else {
        // Back here once signed in: the request's own path and query, nothing else.
        // In a signed cookie: an anonymous visit stores nothing on the server.
        let here = uri.path_and_query().map_or("/oauth/authorize", |path| path.as_str());
        let mut response = Redirect::to("/login").into_response();
        if let Some(cookie) = web.visitors.return_to(here) {
            response.headers_mut().append(axum::http::header::SET_COOKIE, cookie);
        }
        return response;
    };
    if let Err(error) = session.insert(PENDING_CONSENT, &consentable).await {
        return ApiError::session(error).into_response();
    }
    let csrf = match csrf_token(&session).await {
        Ok(token) => token,
        Err(error) => return error.into_response(),
    };
    consent_page(&consentable, person.person.as_deref().unwrap_or(&person.id), &csrf)
}

fn consent_page(consentable: &Consentable, who: &str, csrf: &str) -> Response {
    let client = consentable.client_name.as_deref().unwrap_or(&consentable.client_id);
    let mut body = format!(
        "<p><strong>{client}</strong> asks to act for you, <strong>{who}</strong>, on this process server.</p>\
         <p>Client id: <code>{id}</code><br>It sends you back to <strong>{host}</strong>.</p>",
        client = escape(client),
        who = escape(who),
        id = escape(&consentable.client_id),
        host = escape(&redirects::host_of(&consentable.redirect_uri)),
    );
    if consentable.only_loopback {
        body.push_str(
            "<div class=\"problems\" role=\"alert\"><p>Every address this client returns to is on your own \
             computer, so any program there could be it. Allow only if you started this sign-in yourself, \
             from an app you trust.</p></div>",
        );
    }
    body.push_str("<p>It will be able to:</p><ul>");
    for scope in consentable.scope.split_ascii_whitespace() {
        let _ = write!(
            body,
            "<li><code>{}</code>: {}</li>",
            escape(scope),
            escape(meaning(scope))
        );
    }
    body.push_str("</ul>");
    if !consentable.withheld.is_empty() {
        body.push_str(
            "<p>It also asked to decide work items for you. It will not get that: only clients your \
             organization's admin marks as operated by people may, because an agent could be holding this \
             client's tokens. You decide work items yourself, signed in to this server.</p>",
        );
    }
    let _ = write!(
        body,
        "<form method=\"post\" action=\"/oauth/authorize\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <input type=\"hidden\" name=\"client_id\" value=\"{id}\">\
         <button type=\"submit\" name=\"answer\" value=\"allow\">Allow</button> \
         <button type=\"submit\" name=\"answer\" value=\"deny\">Deny</button></form>",
        csrf = escape(csrf),
        id = escape(&consentable.client_id),
    );
    page(StatusCode::OK, "Allow access?", &body)
}

#[derive(Debug, Deserialize)]
struct Answer {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    client_id: String,
    #[serde(default)]
    answer: String,
}

async fn answer(
    State(web): State<Arc<Web>>,
    session: Session,
    headers: HeaderMap,
    ClientAddress(address): ClientAddress,
    Form(answer): Form<Answer>,
) -> Response {
    if let Err(error) = check_csrf(&headers, &web.origin, &session, Some(&answer.csrf)).await {
        return error.into_response();
    }
    let person = match signed_in(&web, &session).await {
        Ok(Some(person)) => person,
        Ok(None) => {
            return shown(
                StatusCode::FORBIDDEN,
                "you are no longer signed in: start again from the app",
            );
        }
        Err(error) => return error.into_response(),
    };
    // Taken out first: one answer per consent page.
    let consentable = match session.remove::<Consentable>(PENDING_CONSENT).await {
        Ok(Some(consentable)) if consentable.client_id == answer.client_id => consentable,
        Ok(_) => {
            return shown(
                StatusCode::CONFLICT,
                "this consent page is no longer current (it was answered, or another one was opened): start again from the app",
            );
        }
        Err(error) => return ApiError::session(error).into_response(),
    };
    let issuer = issuer(&web.service.settings().public_url).to_owned();
    if answer.answer != "allow" {
        let denied = GrantError::new("access_denied", "the person did not allow access");
        return error_back(
            &consentable.redirect_uri,
            consentable.state.as_deref(),
            &denied,
            &issuer,
        );
    }
    let actor = agentprocess_auth::audit::Actor {
        id: person.id.clone(),
        address,
    };
    match web.auth.consent(&consentable, &person, &actor, web.service.now()).await {
        Ok(code) => back_to(
            &consentable.redirect_uri,
            &[("code", Some(&code)), ("state", consentable.state.as_deref())],
            &issuer,
        ),
        Err(error) => refusal(&web, error),
    }
}

/// The public URL without a trailing slash: the issuer.
pub fn issuer(public_url: &str) -> &str {
    public_url.trim_end_matches('/')
}

/// The MCP resource's identifier: the URL clients call.
pub fn mcp_resource(public_url: &str) -> String {
    format!("{}/mcp", issuer(public_url))
}
