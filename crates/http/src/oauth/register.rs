//! Dynamic client registration (RFC 7591), for MCP clients that know no other way.
//! Anyone may register, so registrations are rate-limited per network address (and
//! in all) on each API process, and one never used is removed after a day.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentprocess_auth::clients::GrantError;
use agentprocess_auth::people_clients::Registration;
use agentprocess_blobs::Blobs;
use agentprocess_store::Store;
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{grant_failure, no_store, refused};
use crate::identity::{ClientAddress, Web};

/// How many times the per-address limit one process accepts per window, from everyone.
const IN_ALL_FACTOR: u32 = 50;
/// The window.
const WINDOW: Duration = Duration::from_secs(3600);

/// Counts registrations per address within fixed windows.
#[derive(Debug, Default)]
pub(crate) struct RegistrationLimit {
    counts: Mutex<(Option<Instant>, u32, HashMap<String, u32>)>,
}

impl RegistrationLimit {
    /// Whether `address` may register now, counting it if so; otherwise the seconds
    /// until the window ends.
    fn admit(&self, address: &str, per_address: u32) -> Result<(), u64> {
        let Ok(mut counts) = self.counts.lock() else {
            return Ok(());
        };
        let now = Instant::now();
        let limit = per_address;
        let (started, total, per_address) = &mut *counts;
        if started.is_none_or(|started| now.duration_since(started) >= WINDOW) {
            *started = Some(now);
            *total = 0;
            per_address.clear();
        }
        let left = started.map_or(WINDOW, |started| WINDOW.saturating_sub(now.duration_since(started)));
        let mine = per_address.entry(address.to_owned()).or_insert(0);
        if *mine >= limit || *total >= limit.saturating_mul(IN_ALL_FACTOR) {
            return Err(left.as_secs().max(1));
        }
        *mine += 1;
        *total += 1;
        Ok(())
    }
}

pub(super) async fn register<S, B>(
    State(web): State<Arc<Web<S, B>>>,
    ClientAddress(address): ClientAddress,
    body: Result<Json<Registration>, JsonRejection>,
) -> Response
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    let address = address.unwrap_or_default();
    let limit = web.auth.settings().client_registrations_per_hour;
    if let Err(seconds) = web.registrations.admit(&address, limit) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_address_registers_a_bounded_number_of_times() {
        let limit = RegistrationLimit::default();
        for _ in 0..3 {
            assert!(limit.admit("192.0.2.1", 3).is_ok());
        }
        assert!(limit.admit("192.0.2.1", 3).is_err());
        assert!(limit.admit("192.0.2.2", 3).is_ok());
    }
}
