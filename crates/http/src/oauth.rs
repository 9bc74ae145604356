//! The server as the OAuth 2.1 authorization server of its own MCP resource: the
//! protected resource metadata (RFC 9728), the authorization server metadata (RFC
//! 8414), and the token endpoint. So far the token endpoint answers the
//! `client_credentials` grant of agent clients; the metadata lists only what is served.

use std::sync::Arc;

use agentprocess_auth::clients::{ClientCredentials, GrantError, GrantErrorOr};
use agentprocess_blobs::Blobs;
use agentprocess_service::Scope;
use agentprocess_store::Store;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::identity::Web;

/// Where the protected resource metadata of `/mcp` is served, below the public URL.
pub(crate) const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

pub(crate) fn routes<S, B>(web: Arc<Web<S, B>>) -> Router
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    Router::new()
        .route(RESOURCE_METADATA_PATH, get(resource_metadata::<S, B>))
        .route("/.well-known/oauth-protected-resource", get(resource_metadata::<S, B>))
        .route("/.well-known/oauth-authorization-server", get(server_metadata::<S, B>))
        .route("/oauth/token", post(token::<S, B>))
        .route("/oauth/revoke", post(revoke::<S, B>))
        .route("/oauth/authorize", get(authorize))
        .with_state(web)
}

/// The public URL without a trailing slash: the issuer.
fn issuer(public_url: &str) -> &str {
    public_url.trim_end_matches('/')
}

/// The MCP resource's identifier: the URL clients call.
pub(crate) fn mcp_resource(public_url: &str) -> String {
    format!("{}/mcp", issuer(public_url))
}

/// `WWW-Authenticate` of a 401 on `/mcp` (RFC 9728 §5.1, RFC 6750 §3): where to learn
/// how to get a token, and the scopes an agent asks for; `invalid_token` when one was
/// presented.
pub(crate) fn challenge(public_url: &str, token_presented: bool) -> HeaderValue {
    let mut text = format!(
        "Bearer resource_metadata=\"{}{RESOURCE_METADATA_PATH}\", scope=\"process:work process:start\"",
        issuer(public_url)
    );
    if token_presented {
        text.push_str(", error=\"invalid_token\"");
    }
    HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static("Bearer"))
}

async fn resource_metadata<S, B>(State(web): State<Arc<Web<S, B>>>) -> Response
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    let public_url = &web.service.settings().public_url;
    let body = json!({
        "resource": mcp_resource(public_url),
        "authorization_servers": [issuer(public_url)],
        "scopes_supported": Scope::ALL.map(Scope::name),
        "bearer_methods_supported": ["header"],
        "resource_name": "agentprocess",
        "resource_documentation": "https://agentprocess.io",
    });
    cacheable(Json(body))
}

async fn server_metadata<S, B>(State(web): State<Arc<Web<S, B>>>) -> Response
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    let issuer = issuer(&web.service.settings().public_url);
    // Only what is served: the authorization code grant and client registration come
    // with the people's flow. The authorization endpoint is named (clients such as the
    // MCP SDKs require it) but grants nothing yet: `response_types_supported` is empty.
    let body = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/oauth/authorize"),
        "token_endpoint": format!("{issuer}/oauth/token"),
        "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "revocation_endpoint": format!("{issuer}/oauth/revoke"),
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "response_types_supported": [],
        "scopes_supported": Scope::ALL.map(Scope::name),
    });
    cacheable(Json(body))
}

/// The authorization endpoint, until people can sign in from an MCP client: a plain
/// refusal that says what works instead. It never redirects, since no client or
/// redirect URI is verified yet.
async fn authorize() -> Response {
    let body = json!({
        "error": "unsupported_response_type",
        "error_description": "this server does not yet let people sign in from an MCP client; \
            agents use client_credentials at the token endpoint, with a client an organization admin makes",
    });
    no_store((StatusCode::BAD_REQUEST, Json(body)).into_response())
}

fn cacheable(body: Json<Value>) -> Response {
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
    response
}

/// The token request's form (RFC 6749 §4.4.2, RFC 8707).
#[derive(Debug, Deserialize)]
struct TokenForm {
    grant_type: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    scope: Option<String>,
    resource: Option<String>,
}

async fn token<S, B>(
    State(web): State<Arc<Web<S, B>>>,
    headers: HeaderMap,
    form: Result<Form<TokenForm>, axum::extract::rejection::FormRejection>,
) -> Response
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    let Ok(Form(form)) = form else {
        return refused(&GrantError::new(
            "invalid_request",
            "send the request as application/x-www-form-urlencoded",
        ));
    };
    let (client_id, client_secret) = match client_of(&headers, &form.client_id, &form.client_secret) {
        Ok(credentials) => credentials,
        Err(error) => return refused(&error),
    };
    match form.grant_type.as_deref() {
        Some("client_credentials") => {}
        Some(other) => {
            return refused(&GrantError::new(
                "unsupported_grant_type",
                format!("{other:?} is not served here; agent clients use client_credentials"),
            ));
        }
        None => return refused(&GrantError::new("invalid_request", "grant_type is required")),
    }
    let public_url = &web.service.settings().public_url;
    let asked = ClientCredentials {
        client_id: &client_id,
        client_secret: &client_secret,
        scope: form.scope.as_deref(),
        resource: form.resource.as_deref(),
    };
    let lifetime = web.auth.settings().access_token_lifetime.as_secs();
    match web
        .auth
        .client_credentials(asked, &mcp_resource(public_url), lifetime, web.service.now())
        .await
    {
        Ok(issued) => {
            let body = json!({
                "access_token": issued.access_token,
                "token_type": "Bearer",
                "expires_in": issued.expires_in,
                "scope": issued.scope,
            });
            no_store((StatusCode::OK, Json(body)).into_response())
        }
        Err(failure) => grant_failure(failure),
    }
}

/// A refusal in RFC 6749's words, or 503 for a failure of the server (logged here).
fn grant_failure(failure: GrantErrorOr) -> Response {
    match failure {
        GrantErrorOr::Refused(error) => refused(&error),
        GrantErrorOr::Failed(error) => {
            tracing::error!(error = %agentprocess_auth::oidc::chain(&error), "token request failed");
            let mut response = no_store(
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    Json(json!({ "error": "temporarily_unavailable", "error_description": "try again shortly" })),
                )
                    .into_response(),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
    }
}

/// The client's credentials, from HTTP Basic (`client_secret_basic`) or the form
/// (`client_secret_post`), one or the other (RFC 6749 §2.3.1).
fn client_of(
    headers: &HeaderMap,
    form_id: &Option<String>,
    form_secret: &Option<String>,
) -> Result<(String, String), GrantError> {
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Basic "))
        .map(basic_credentials);
    match (basic, form_id, form_secret) {
        (Some(_), _, Some(_)) => Err(GrantError::new(
            "invalid_request",
            "authenticate the client one way only: HTTP Basic or client_secret in the form",
        )),
        (Some(Some((id, secret))), _, None) => Ok((id, secret)),
        (Some(None), _, _) => Err(GrantError::new(
            "invalid_client",
            "the Basic credentials are not client_id:client_secret",
        )),
        (None, Some(id), Some(secret)) => Ok((id.clone(), secret.clone())),
        (None, _, _) => Err(GrantError::new(
            "invalid_client",
            "authenticate the client with HTTP Basic (client_secret_basic) or client_id and client_secret in the form (client_secret_post)",
        )),
    }
}

/// The revocation request's form (RFC 7009 §2.1).
#[derive(Debug, Deserialize)]
struct RevokeForm {
    token: Option<String>,
    // Accepted and not needed: only access tokens are issued.
    #[serde(rename = "token_type_hint")]
    _hint: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
}

/// Token revocation (RFC 7009): 200 whether or not the token was the client's.
async fn revoke<S, B>(
    State(web): State<Arc<Web<S, B>>>,
    headers: HeaderMap,
    form: Result<Form<RevokeForm>, axum::extract::rejection::FormRejection>,
) -> Response
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    let Ok(Form(form)) = form else {
        return refused(&GrantError::new(
            "invalid_request",
            "send the request as application/x-www-form-urlencoded",
        ));
    };
    let (client_id, client_secret) = match client_of(&headers, &form.client_id, &form.client_secret) {
        Ok(credentials) => credentials,
        Err(error) => return refused(&error),
    };
    let Some(token) = form.token.filter(|token| !token.is_empty()) else {
        return refused(&GrantError::new("invalid_request", "token is required"));
    };
    match web
        .auth
        .revoke_access_token(&client_id, &client_secret, &token, web.service.now())
        .await
    {
        Ok(()) => no_store(StatusCode::OK.into_response()),
        Err(failure) => grant_failure(failure),
    }
}

/// An RFC 6749 §5.2 error: 401 with a Basic challenge for `invalid_client`, else 400.
fn refused(error: &GrantError) -> Response {
    let status = if error.error == "invalid_client" {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::BAD_REQUEST
    };
    let body = json!({ "error": error.error, "error_description": error.description });
    let mut response = no_store((status, Json(body)).into_response());
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"agentprocess\""),
        );
    }
    response
}

fn no_store(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

/// `client_id:client_secret` of HTTP Basic, each form-urlencoded (RFC 6749 §2.3.1).
fn basic_credentials(encoded: &str) -> Option<(String, String)> {
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (id, secret) = text.split_once(':')?;
    Some((form_decode(id)?, form_decode(secret)?))
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte.
fn form_decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        match byte {
            b'+' => bytes.push(b' '),
            b'%' => {
                let hex = tail.get(..2)?;
                bytes.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
                rest = &tail[2..];
                continue;
            }
            other => bytes.push(other),
        }
        rest = tail;
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_form_decoded() {
        let encoded = base64::engine::general_purpose::STANDARD.encode("apc_1%3Ax:s+e%2Bcret");
        assert_eq!(
            basic_credentials(&encoded),
            Some(("apc_1:x".to_owned(), "s e+cret".to_owned()))
        );
        assert_eq!(basic_credentials("not base64!"), None);
        let no_colon = base64::engine::general_purpose::STANDARD.encode("justone");
        assert_eq!(basic_credentials(&no_colon), None);
    }

    #[test]
    fn the_challenge_points_at_the_resource_metadata() {
        let value = challenge("https://process.example.com/", true);
        assert_eq!(
            value.to_str().expect("ASCII"),
            "Bearer resource_metadata=\"https://process.example.com/.well-known/oauth-protected-resource/mcp\", \
             scope=\"process:work process:start\", error=\"invalid_token\""
        );
    }
}
