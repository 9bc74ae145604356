//! Runs (list and filter as `list_runs` does, one run's view, cancel) and webhooks.

use std::collections::HashMap;
use std::sync::Arc;

use agentprocess_engine::RunState;
use agentprocess_operations::webhooks::NewWebhook;
use agentprocess_service::{ListRuns, Write};
use agentprocess_store::{DeliveryRecord, Webhook};
use agentprocess_views::{Page, RunListItem, RunView};
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{
    AdminReads, AdminWrites, Body, Created, Id, Items, Key, MemberReads, OperatorWrites, needs, query, time_text,
};
use agentprocess_web::errors::ApiError;
use agentprocess_web::session::{Authenticated, Web};

pub(super) fn routes() -> OpenApiRouter<Arc<Web>> {
    OpenApiRouter::new()
        .routes(needs::<MemberReads>(routes!(runs)))
        .routes(needs::<MemberReads>(routes!(run)))
        .routes(needs::<OperatorWrites>(routes!(cancel)))
        .routes(needs::<AdminReads>(routes!(webhooks)))
        .routes(needs::<AdminWrites>(routes!(add_webhook)))
        .routes(needs::<AdminReads>(routes!(deliveries)))
        .routes(needs::<AdminWrites>(routes!(remove_webhook)))
        .routes(needs::<AdminWrites>(routes!(redeliver)))
}

/// The query of `GET /runs` as documented; `input.<field>=<value>` (any number, one per
/// input to match; the value as JSON, or as a string when it is not JSON) cannot be
/// named in advance.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub(super) struct RunsQuery {
    /// Only runs of this process.
    process: Option<String>,
    /// Only runs in this state.
    #[param(value_type = Option<String>, pattern = "^(active|waiting|ended|cancelled)$")]
    state: Option<RunState>,
    /// Page size, 1 to 100 (50).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    /// Where the previous page ended.
    cursor: Option<String>,
}

/// `list_runs`: `process`, `state`, `limit`, `cursor`, and `input.<field>=<value>` for
/// each input to match (the value as JSON, or as a string when it is not JSON).
#[utoipa::path(
    get,
    path = "/api/v1/runs",
    tag = "runs",
    params(RunsQuery),
    responses((status = 200, description = "list_runs's result", body = Page<RunListItem>))
)]
pub(super) async fn runs(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<Page<RunListItem>>, ApiError> {
    let mut args = ListRuns {
        limit: 50,
        ..ListRuns::default()
    };
    let mut issues = Vec::new();
    let mut inputs = Map::new();
    for (key, value) in query {
        match key.as_str() {
            "process" => args.process = Some(value),
            "state" => match RunState::parse(&value) {
                Some(state) => args.state = Some(state),
                None => issues.push("state: expected one of active, waiting, ended, cancelled".to_owned()),
            },
            "cursor" => args.cursor = Some(value),
            "limit" => match value.parse::<u32>() {
                Ok(limit) if (1..=agentprocess_service::MAX_PAGE).contains(&limit) => args.limit = limit,
                _ => issues.push(format!(
                    "limit: {value:?} is not between 1 and {}",
                    agentprocess_service::MAX_PAGE
                )),
            },
            _ => match key.strip_prefix("input.") {
                Some(field) if !field.is_empty() => {
                    let parsed = agentprocess_format::exact::parse(&value).unwrap_or(Value::String(value));
                    inputs.insert(field.to_owned(), parsed);
                }
                _ => issues.push(format!(
                    "{key}: not a filter (use process, state, limit, cursor, input.<field>)"
                )),
            },
        }
    }
    if !issues.is_empty() {
        return Err(ApiError::invalid("the query has problems", issues));
    }
    args.inputs = inputs;
    Ok(Json(web.operations.runs(&caller, args).await?))
}

#[utoipa::path(
    get,
    path = "/api/v1/runs/{id}",
    tag = "runs",
    params(Id),
    responses((status = 200, description = "get_run's result, with warnings when a work item waits for a person who is no member", body = RunWithWarnings))
)]
pub(super) async fn run(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Id(id): Id,
) -> Result<Json<RunWithWarnings>, ApiError> {
    let (view, warnings) = web.operations.run(&caller, &id).await?;
    Ok(Json(RunWithWarnings { view, warnings }))
}

/// The run view, and what keeps its work items from being decided.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct RunWithWarnings {
    #[serde(flatten)]
    view: RunView,
    /// Each open work item that waits for a person who is no member.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Cancel {
    reason: String,
}

/// The write of a REST call: its `Idempotency-Key` (the same semantics as a tool's
/// `requestId`: the same key with the same body gets the first answer, with another
/// body `conflict`), or a fresh one.
fn write_of(headers: &HeaderMap, arguments: &Map<String, Value>) -> Result<Write, ApiError> {
    let key = match headers.get("idempotency-key") {
        Some(value) => {
            let key = value.to_str().unwrap_or_default().trim();
            if key.is_empty() || key.len() > 128 {
                return Err(ApiError::invalid(
                    "Idempotency-Key must have 1 to 128 characters",
                    Vec::new(),
                ));
            }
            format!("rest:{key}")
        }
        None => agentprocess_auth::secrets::new_id("rest:"),
    };
    Ok(Write::from_arguments(key, arguments))
}

#[utoipa::path(
    post,
    path = "/api/v1/runs/{id}/cancel",
    tag = "runs",
    params(Id, Key),
    request_body = Cancel,
    responses((status = 200, description = "cancel's result", body = RunView))
)]
pub(super) async fn cancel(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Id(id): Id,
    headers: HeaderMap,
    Body(cancel): Body<Cancel>,
) -> Result<Json<RunView>, ApiError> {
    let mut arguments = Map::new();
    arguments.insert("runId".to_owned(), json!(id));
    arguments.insert("reason".to_owned(), json!(cancel.reason));
    let write = write_of(&headers, &arguments)?;
    Ok(Json(web.operations.cancel(&caller, &id, &cancel.reason, &write).await?))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct WebhookView {
    id: String,
    url: String,
    created_at: String,
    /// The signing secret: only in the answer that made the webhook.
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<String>,
}

impl From<&Webhook> for WebhookView {
    fn from(webhook: &Webhook) -> Self {
        Self {
            id: webhook.id.clone(),
            url: webhook.url.clone(),
            created_at: time_text(webhook.created_at),
            secret: None,
        }
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/webhooks",
    tag = "webhooks",
    responses((status = 200, description = "The webhooks", body = Items<WebhookView>))
)]
pub(super) async fn webhooks(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<Items<WebhookView>>, ApiError> {
    let webhooks = web.operations.webhooks(&caller).await?;
    Ok(Json(webhooks.iter().map(WebhookView::from).collect()))
}

#[utoipa::path(
    post,
    path = "/api/v1/webhooks",
    tag = "webhooks",
    params(Key),
    request_body = agentprocess_operations::webhooks::NewWebhook,
    responses((status = 201, description = "The webhook with its secret, shown this once", body = WebhookView))
)]
pub(super) async fn add_webhook(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    key: Key,
    Body(new): Body<NewWebhook>,
) -> Result<Created<WebhookView>, ApiError> {
    let webhook = web.operations.add_webhook(&caller, &new, key.as_deref()).await?;
    let mut view = WebhookView::from(&webhook);
    view.secret = Some(webhook.secret.clone());
    Ok(Created(view))
}

#[utoipa::path(
    delete,
    path = "/api/v1/webhooks/{id}",
    tag = "webhooks",
    params(Id),
    responses((status = 204, description = "Removed"))
)]
pub(super) async fn remove_webhook(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Id(id): Id,
) -> Result<StatusCode, ApiError> {
    web.operations.remove_webhook(&caller, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Sends one delivery again: one more attempt, now, with the notification's `id`
/// unchanged (so the endpoint can tell it from a new notification).
#[utoipa::path(
    post,
    path = "/api/v1/webhooks/{id}/deliveries/{notification}/redeliver",
    tag = "webhooks",
    params(("id" = String, Path, description = "The webhook"), ("notification" = String, Path, description = "The notification")),
    responses((status = 202, description = "Due again; its outcome shows in the deliveries"))
)]
pub(super) async fn redeliver(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((id, notification)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    web.operations.redeliver(&caller, &id, &notification).await?;
    Ok(StatusCode::ACCEPTED)
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct DeliveryView {
    notification: String,
    event: String,
    run_id: String,
    webhook: String,
    status: String,
    attempts: u32,
    last_status_code: Option<u16>,
    last_error: Option<String>,
    created_at: String,
    updated_at: String,
}

impl From<&DeliveryRecord> for DeliveryView {
    fn from(record: &DeliveryRecord) -> Self {
        Self {
            notification: record.notification_id.clone(),
            event: record.event.clone(),
            run_id: record.run_id.clone(),
            webhook: record.webhook_id.clone(),
            status: record.status.as_str().to_owned(),
            attempts: record.attempts,
            last_status_code: record.last_status_code,
            last_error: record.last_error.clone(),
            created_at: time_text(record.created_at),
            updated_at: time_text(record.updated_at),
        }
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct DeliveriesQuery {
    limit: Option<u32>,
}

#[utoipa::path(
    get,
    path = "/api/v1/webhooks/deliveries",
    tag = "webhooks",
    params(DeliveriesQuery),
    responses((status = 200, description = "The latest deliveries, newest first", body = Items<DeliveryView>))
)]
pub(super) async fn deliveries(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    deliveries: Result<Query<DeliveriesQuery>, QueryRejection>,
) -> Result<Json<Items<DeliveryView>>, ApiError> {
    let limit = query(deliveries, "the query is not valid")?.limit.unwrap_or(50);
    let records = web.operations.deliveries(&caller, limit).await?;
    Ok(Json(records.iter().map(DeliveryView::from).collect()))
}
