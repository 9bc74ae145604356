//! The organization's limits: what the server grants it, what its admins chose below
//! that, what is in force, and what it uses. Admins may only lower a limit here; the
//! platform's operators raise one with `agentprocess admin set-limits`.

use std::sync::Arc;

use agentprocess_service::{Limit, LimitValues, LimitsReport};
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{AdminWrites, Body, MemberReads, needs, time_text};
use agentprocess_web::errors::ApiError;
use agentprocess_web::session::{Authenticated, Web};

pub(super) fn routes() -> OpenApiRouter<Arc<Web>> {
    OpenApiRouter::new()
        .routes(needs::<MemberReads>(routes!(limits)))
        .routes(needs::<AdminWrites>(routes!(choose)))
}

/// One limit.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct LimitView {
    /// callsPerSecond, identityCallsPerSecond, writesPerSecond, concurrentCalls,
    /// openRuns or storedBytes.
    name: &'static str,
    /// In force; `null`: no limit.
    value: Option<u64>,
    /// What the server grants the organization; `null`: no limit.
    ceiling: Option<u64>,
    /// What the organization's admins chose, if they did.
    chosen: Option<u64>,
    /// `process`: held in each API process of the deployment (rates and calls in
    /// progress); `organization`: counted over the whole organization.
    per: &'static str,
}

/// The organization's limits and what it uses.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct LimitsView {
    limits: Vec<LimitView>,
    /// Runs not yet ended or cancelled.
    open_runs: u64,
    /// Bytes of uploaded files kept.
    stored_bytes: u64,
    /// When the limits last changed, if ever.
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_at: Option<String>,
}

impl From<LimitsReport> for LimitsView {
    fn from(report: LimitsReport) -> Self {
        let limits = Limit::ALL
            .into_iter()
            .map(|limit| LimitView {
                name: limit.key(),
                value: report.effective.get(limit),
                ceiling: report.ceiling.get(limit),
                chosen: report.chosen.get(limit),
                per: match limit {
                    Limit::OpenRuns | Limit::StoredBytes => "organization",
                    _ => "process",
                },
            })
            .collect();
        Self {
            limits,
            open_runs: report.open_runs,
            stored_bytes: report.stored_bytes,
            updated_at: report.updated_at.map(time_text),
        }
    }
}

/// The limits an organization's admins choose: each at least 1 and at most what the
/// server grants; a limit left out follows the server.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct LimitChoice {
    #[schema(minimum = 1)]
    calls_per_second: Option<u64>,
    #[schema(minimum = 1)]
    identity_calls_per_second: Option<u64>,
    #[schema(minimum = 1)]
    writes_per_second: Option<u64>,
    #[schema(minimum = 1)]
    concurrent_calls: Option<u64>,
    #[schema(minimum = 1)]
    open_runs: Option<u64>,
    #[schema(minimum = 1)]
    stored_bytes: Option<u64>,
}

impl From<LimitChoice> for LimitValues {
    fn from(choice: LimitChoice) -> Self {
        Self {
            calls_per_second: choice.calls_per_second,
            identity_calls_per_second: choice.identity_calls_per_second,
            writes_per_second: choice.writes_per_second,
            concurrent_calls: choice.concurrent_calls,
            open_runs: choice.open_runs,
            stored_bytes: choice.stored_bytes,
        }
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/organization/limits",
    tag = "organization",
    responses((status = 200, description = "The limits and what the organization uses", body = LimitsView))
)]
pub(super) async fn limits(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<LimitsView>, ApiError> {
    Ok(Json(web.operations.limits(&caller).await?.into()))
}

#[utoipa::path(
    put,
    path = "/api/v1/organization/limits",
    operation_id = "choose_limits",
    tag = "organization",
    request_body = LimitChoice,
    responses((status = 200, description = "The limits as chosen", body = LimitsView))
)]
pub(super) async fn choose(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Body(choice): Body<LimitChoice>,
) -> Result<Json<LimitsView>, ApiError> {
    let chosen = LimitValues::from(choice);
    Ok(Json(web.operations.choose_limits(&caller, &chosen).await?.into()))
}
