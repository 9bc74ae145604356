//! Dynamic client registration (RFC 7591), for MCP clients that know no other way.
//! Anyone may register, so registrations are rate-limited per network address (and
//! in all) on each API process (`Limits::registrations` of the web crate), and one
//! never used is removed after a day.

use std::sync::Arc;

use agentprocess_auth::clients::GrantError;
use agentprocess_auth::people_clients::Registration;
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{grant_failure, no_store, refused};
use agentprocess_web::session::{ClientAddress, Web};

pub(super) async fn register(
    State(web): State<Arc<Web>>,
    ClientAddress(address): ClientAddress,
    body: Result<Json<Registration>, JsonRejection>,
) -> Response {
    let address = address.unwrap_or_default();
    if let Err(seconds) = web.limits.registrations.admit(&address) {
        let mut response = no_store(
            (
                StatusCode::TOO_MANY_REQUESTS,
                Json(json!({
                    "error": "invalid_request",
                    "error_description": "too many client registrations from this address; try again later",
                })),
            )
                .into_response(),
        );
        if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    let Json(asked) = match body {
        Ok(body) => body,
        Err(rejection) => {
            return refused(&GrantError::new(
                "invalid_client_metadata",
                format!("send the client metadata as a JSON object: {}", rejection.body_text()),
            ));
        }
    };
    match web.auth.register_client(&asked, web.service.now()).await {
        Ok(registered) => {
            tracing::info!(client = %registered.client_id, "client registered");
            no_store((StatusCode::CREATED, Json(registered)).into_response())
        }
        // Registration refuses with invalid_redirect_uri or invalid_client_metadata,
        // both 400 in RFC 7591's error body, as `refused` writes them.
        Err(failure) => grant_failure(failure),
    }
}
