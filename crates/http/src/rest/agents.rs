//! Agents and their MCP bearer tokens.

use std::sync::Arc;

use agentprocess_auth::agents::NewAgent;
use agentprocess_auth::{Identity, Role};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::organization::TokenView;
use super::{Items, body, idempotent, replayed};
use agentprocess_auth::idempotency::Operation;
use agentprocess_web::errors::ApiError;
use agentprocess_web::session::{Authenticated, Web};

pub(super) fn routes() -> Router<Arc<Web>> {
    Router::new()
        .route("/api/v1/agents", get(agents).post(create))
        .route("/api/v1/agents/{id}", get(agent).patch(change))
        .route("/api/v1/agents/{id}/tokens", get(tokens).post(create_token))
        .route("/api/v1/agents/{id}/tokens/{token}", delete(revoke_token))
        .route("/api/v1/agents/{id}/tokens/{token}/rotate", post(rotate_token))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct AgentView {
    id: String,
    name: String,
    enabled: bool,
}

impl From<&Identity> for AgentView {
    fn from(agent: &Identity) -> Self {
        Self {
            id: agent.id.clone(),
            name: agent.name.clone(),
            enabled: agent.deactivated_at.is_none(),
        }
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/agents",
    tag = "agents",
    responses((status = 200, description = "The agents", body = Items<AgentView>), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("operator")))
)]
pub(super) async fn agents(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<Items<AgentView>>, ApiError> {
    caller.require(Role::Operator, false)?;
    let agents = web.auth.agents(caller.org()).await?;
    Ok(Json(Items {
        items: agents.iter().map(AgentView::from).collect(),
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/agents/{id}",
    tag = "agents",
    params(("id" = String, Path, description = "The id")),
    responses((status = 200, description = "An agent", body = AgentView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("operator")))
)]
pub(super) async fn agent(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
) -> Result<Json<AgentView>, ApiError> {
    caller.require(Role::Operator, false)?;
    Ok(Json(AgentView::from(&web.auth.agent(caller.org(), &id).await?)))
}

#[utoipa::path(
    post,
    path = "/api/v1/agents",
    tag = "agents",
    params(("Idempotency-Key" = Option<String>, Header, description = "Send the request again with the same key to get its first answer, never a second effect")),
    request_body = agentprocess_auth::agents::NewAgent,
    responses((status = 201, description = "The agent", body = AgentView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn create(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    headers: HeaderMap,
    new: Result<Json<NewAgent>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(Role::Admin, true)?;
    let new = body(new)?;
    let request = idempotent(&web, &headers, &caller, Operation::AgentCreate, &new)?;
    let agent = match replayed(&web, request.as_ref(), caller.org()).await? {
        Some(agent) => agent,
        None => {
            web.auth
                .create_agent(&caller.actor(), caller.org(), &new, web.now(), request.as_ref())
                .await?
        }
    };
    Ok((StatusCode::CREATED, Json(AgentView::from(&agent))).into_response())
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AgentChange {
    enabled: bool,
}

#[utoipa::path(
    patch,
    path = "/api/v1/agents/{id}",
    tag = "agents",
    params(("id" = String, Path, description = "The id")),
    request_body = AgentChange,
    responses((status = 200, description = "The agent as changed", body = AgentView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn change(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
    change: Result<Json<AgentChange>, JsonRejection>,
) -> Result<Json<AgentView>, ApiError> {
    caller.require(Role::Admin, true)?;
    let change = body(change)?;
    let agent = web
        .auth
        .set_agent_enabled(&caller.actor(), caller.org(), &id, change.enabled, web.now())
        .await?;
    Ok(Json(AgentView::from(&agent)))
}

#[utoipa::path(
    get,
    path = "/api/v1/agents/{id}/tokens",
    tag = "agents",
    params(("id" = String, Path, description = "The id")),
    responses((status = 200, description = "The agent's MCP tokens", body = Items<TokenView>), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn tokens(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
) -> Result<Json<Items<TokenView>>, ApiError> {
    caller.require(Role::Admin, false)?;
    let tokens = web.auth.agent_tokens(caller.org(), &id).await?;
    Ok(Json(Items {
        items: tokens.iter().map(TokenView::from).collect(),
    }))
}

#[derive(Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct NewAgentToken {
    /// Days until it stops working (1 to 366); absent, it lives until revoked.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 366)]
    expires_in_days: Option<u32>,
}

#[utoipa::path(
    post,
    path = "/api/v1/agents/{id}/tokens",
    tag = "agents",
    params(("id" = String, Path, description = "The id"), ("Idempotency-Key" = Option<String>, Header, description = "Send the request again with the same key to get its first answer, never a second effect")),
    request_body = NewAgentToken,
    responses((status = 201, description = "The token, shown this once", body = TokenView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn create_token(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
    headers: HeaderMap,
    new: Result<Json<NewAgentToken>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(Role::Admin, true)?;
    let new = body(new)?;
    let request = idempotent(&web, &headers, &caller, Operation::AgentTokenCreate, &(&id, &new))?;
    let (row, token) = match replayed(&web, request.as_ref(), caller.org()).await? {
        Some(made) => made,
        None => {
            let expires = new.expires_in_days;
            web.auth
                .create_agent_token(&caller.actor(), caller.org(), &id, expires, web.now(), request.as_ref())
                .await?
        }
    };
    Ok(TokenView::shown_once(&row, token))
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Rotation {
    /// How long the old token keeps working.
    #[schema(maximum = 604800)]
    overlap_seconds: u32,
}

#[utoipa::path(
    post,
    path = "/api/v1/agents/{id}/tokens/{token}/rotate",
    tag = "agents",
    params(("id" = String, Path, description = "The id"), ("token" = String, Path, description = "The token's id"), ("Idempotency-Key" = Option<String>, Header, description = "Send the request again with the same key to get its first answer, never a second effect")),
    request_body = Rotation,
    responses((status = 201, description = "The new token, shown this once", body = TokenView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn rotate_token(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((id, token)): Path<(String, String)>,
    headers: HeaderMap,
    rotation: Result<Json<Rotation>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(Role::Admin, true)?;
    let rotation = body(rotation)?;
    let request = idempotent(
        &web,
        &headers,
        &caller,
        Operation::AgentTokenRotate,
        &(&id, &token, &rotation),
    )?;
    let (row, secret) = match replayed(&web, request.as_ref(), caller.org()).await? {
        Some(made) => made,
        None => {
            web.auth
                .rotate_agent_token(
                    &caller.actor(),
                    caller.org(),
                    &id,
                    agentprocess_auth::agents::Rotation {
                        token: &token,
                        overlap_seconds: rotation.overlap_seconds,
                    },
                    web.now(),
                    request.as_ref(),
                )
                .await?
        }
    };
    Ok(TokenView::shown_once(&row, secret))
}

#[utoipa::path(
    delete,
    path = "/api/v1/agents/{id}/tokens/{token}",
    tag = "agents",
    params(("id" = String, Path, description = "The id"), ("token" = String, Path, description = "The token's id")),
    responses((status = 204, description = "Revoked"), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn revoke_token(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((id, token)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    caller.require(Role::Admin, true)?;
    web.auth
        .revoke_agent_token(&caller.actor(), caller.org(), &id, &token, web.now())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
