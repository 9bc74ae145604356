//! `/api/v1`: the REST admin surface. JSON in and out, errors as
//! `{ code, message, issues? }` with the HTTP status of each code.

mod agents;
mod apps;
mod archive;
mod clients;
mod limits;
pub(crate) mod openapi;
mod organization;
mod processes;
mod runs;

use std::sync::Arc;

use agentprocess_auth::idempotency::{Idempotent, Operation};
use axum::Json;
use axum::Router;
use axum::extract::rejection::JsonRejection;
use axum::http::HeaderMap;
use serde::Serialize;
use serde::de::DeserializeOwned;

use agentprocess_web::errors::ApiError;
use agentprocess_web::session::{ApiCaller, Web};

pub(super) fn routes(web: Arc<Web>) -> Router {
    organization::routes()
        .route(
            "/api/v1/openapi.json",
            axum::routing::get(|| async { Json(openapi::document()) }),
        )
        .merge(agents::routes())
        .merge(clients::routes())
        .merge(limits::routes())
        .merge(apps::routes())
        .merge(processes::routes())
        .merge(runs::routes())
        .with_state(web)
        .layer(axum::middleware::from_fn(agentprocess_web::errors::refuse_nul))
        .layer(axum::middleware::from_fn(agentprocess_web::errors::json_errors))
}

/// A JSON body, or `invalid` naming what is wrong with it.
fn body<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    body.map(|Json(value)| value).map_err(|rejection| {
        ApiError::invalid(
            "the request body is not valid; nothing changed",
            vec![rejection.body_text()],
        )
    })
}

/// 201 with a secret shown this once, never kept by a cache.
fn shown_once(view: impl Serialize) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let mut response = (axum::http::StatusCode::CREATED, Json(view)).into_response();
    response.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    response
}

/// A creating request's `Idempotency-Key`, when it sent one, for `operation` on
/// `arguments` (what the request asks, path included) by `caller`.
fn idempotent(
    web: &Web,
    headers: &HeaderMap,
    caller: &ApiCaller,
    operation: Operation,
    arguments: &impl Serialize,
) -> Result<Option<Idempotent>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value.to_str().map_err(|_| {
        ApiError::invalid(
            "the Idempotency-Key header is not usable",
            vec!["Idempotency-Key: use printable ASCII, a new UUID per request".to_owned()],
        )
    })?;
    Ok(Some(web.auth.idempotent(
        key,
        &caller.identity.id,
        operation,
        arguments,
    )?))
}

/// What a request with this key answered before, if it was made.
async fn replayed<T>(web: &Web, request: Option<&Idempotent>, org: &str) -> Result<Option<T>, ApiError>
where
    T: DeserializeOwned,
{
    match request {
        Some(request) => Ok(request.replayed(web.service.store(), org).await?),
        None => Ok(None),
    }
}

fn time_text(millis: i64) -> String {
    jiff::Timestamp::from_millisecond(millis)
        .map(|at| at.to_string())
        .unwrap_or_default()
}

/// A list.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct Items<T> {
    items: Vec<T>,
}
