//! The server as the OAuth 2.1 authorization server of its own MCP resource: the
//! protected resource metadata (RFC 9728), the authorization server metadata (RFC
//! 8414), the token endpoint (authorization code, refresh token, client credentials), client
//! registration (RFC 7591), revocation (RFC 7009) and introspection (RFC 7662). The
//! authorization endpoint, which signs people in and asks their consent, is a page of
//! the web crate (`agentprocess_web::consent`).

mod register;
mod token;

use std::sync::Arc;

use agentprocess_auth::clients::{GrantError, GrantErrorOr};
use agentprocess_service::Scope;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use agentprocess_web::consent::{issuer, mcp_resource};
use agentprocess_web::session::Web;

/// Where the protected resource metadata of `/mcp` is served, below the public URL.
pub(crate) const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// The signing algorithms accepted for `private_key_jwt` assertions.
const ASSERTION_ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// The routes that carry no session (the authorization endpoint, which signs people
/// in, is a page of the web crate, under the session layer).
pub(crate) fn routes(web: Arc<Web>) -> Router {
    Router::new()
        .route(RESOURCE_METADATA_PATH, get(resource_metadata))
        .route("/.well-known/oauth-protected-resource", get(resource_metadata))
        .route("/.well-known/oauth-authorization-server", get(server_metadata))
        .route("/oauth/token", post(token::token))
        .route("/oauth/revoke", post(token::revoke))
        .route("/oauth/introspect", post(token::introspect))
        .route("/oauth/register", post(register::register))
        .with_state(web)
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

async fn resource_metadata(State(web): State<Arc<Web>>) -> Response {
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

async fn server_metadata(State(web): State<Arc<Web>>) -> Response {
    let issuer = issuer(&web.service.settings().public_url);
    let client_methods = ["client_secret_basic", "client_secret_post", "private_key_jwt"];
    let all_methods = ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"];
    let body = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/oauth/authorize"),
        "token_endpoint": format!("{issuer}/oauth/token"),
        "registration_endpoint": format!("{issuer}/oauth/register"),
        "revocation_endpoint": format!("{issuer}/oauth/revoke"),
        "introspection_endpoint": format!("{issuer}/oauth/introspect"),
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": all_methods,
        "token_endpoint_auth_signing_alg_values_supported": ASSERTION_ALGORITHMS,
        "revocation_endpoint_auth_methods_supported": all_methods,
        "introspection_endpoint_auth_methods_supported": client_methods,
        "scopes_supported": Scope::ALL.map(Scope::name),
        "client_id_metadata_document_supported": web.auth.fetches_metadata_documents(),
        "authorization_response_iss_parameter_supported": true,
        "service_documentation": "https://agentprocess.io",
    });
    cacheable(Json(body))
}

fn cacheable(body: Json<Value>) -> Response {
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
    response
}

/// A refusal in RFC 6749's words, or 503 for a failure of the server (logged here).
fn grant_failure(failure: GrantErrorOr) -> Response {
    match failure {
        GrantErrorOr::Refused(error) => refused(&error),
        GrantErrorOr::Failed(error) => {
            tracing::error!(error = %agentprocess_auth::oidc::chain(&error), "OAuth request failed");
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

#[cfg(test)]
mod tests {
    use super::*;

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
