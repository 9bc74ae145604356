//! Agents and their MCP bearer tokens.

use std::sync::Arc;

use agentprocess_auth::Identity;
use agentprocess_auth::agents::NewAgent;
use agentprocess_operations::agents::{AgentChange, NewAgentToken, Rotation};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::organization::TokenView;
use super::{AdminReads, AdminWrites, Body, Created, Id, Items, Key, OperatorReads, needs};
use agentprocess_web::errors::ApiError;
use agentprocess_web::session::{Authenticated, Web};

pub(super) fn routes() -> OpenApiRouter<Arc<Web>> {
    OpenApiRouter::new()
        .routes(needs::<OperatorReads>(routes!(agents)))
        .routes(needs::<AdminWrites>(routes!(create)))
        .routes(needs::<OperatorReads>(routes!(agent)))
        .routes(needs::<AdminWrites>(routes!(change)))
        .routes(needs::<AdminReads>(routes!(tokens)))
        .routes(needs::<AdminWrites>(routes!(create_token)))
        .routes(needs::<AdminWrites>(routes!(revoke_token)))
        .routes(needs::<AdminWrites>(routes!(rotate_token)))
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
    responses((status = 200, description = "The agents", body = Items<AgentView>))
)]
pub(super) async fn agents(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<Items<AgentView>>, ApiError> {
    let agents = web.operations.agents(&caller).await?;
    Ok(Json(agents.iter().map(AgentView::from).collect()))
}

#[utoipa::path(
    get,
    path = "/api/v1/agents/{id}",
    tag = "agents",
    params(Id),
    responses((status = 200, description = "An agent", body = AgentView))
)]
pub(super) async fn agent(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Id(id): Id,
) -> Result<Json<AgentView>, ApiError> {
    Ok(Json(AgentView::from(&web.operations.agent(&caller, &id).await?)))
}

#[utoipa::path(
    post,
    path = "/api/v1/agents",
    tag = "agents",
    params(Key),
    request_body = agentprocess_auth::agents::NewAgent,
    responses((status = 201, description = "The agent", body = AgentView))
)]
pub(super) async fn create(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    key: Key,
    Body(new): Body<NewAgent>,
) -> Result<Created<AgentView>, ApiError> {
    let agent = web.operations.create_agent(&caller, &new, key.as_deref()).await?;
    Ok(Created(AgentView::from(&agent)))
}

#[utoipa::path(
    patch,
    path = "/api/v1/agents/{id}",
    tag = "agents",
    params(Id),
    request_body = agentprocess_operations::agents::AgentChange,
    responses((status = 200, description = "The agent as changed", body = AgentView))
)]
pub(super) async fn change(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Id(id): Id,
    Body(change): Body<AgentChange>,
) -> Result<Json<AgentView>, ApiError> {
    let agent = web.operations.set_agent_enabled(&caller, &id, &change).await?;
    Ok(Json(AgentView::from(&agent)))
}

#[utoipa::path(
    get,
    path = "/api/v1/agents/{id}/tokens",
    operation_id = "agent_tokens",
    tag = "agents",
    params(Id),
    responses((status = 200, description = "The agent's MCP tokens", body = Items<TokenView>))
)]
pub(super) async fn tokens(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Id(id): Id,
) -> Result<Json<Items<TokenView>>, ApiError> {
    let tokens = web.operations.agent_tokens(&caller, &id).await?;
    Ok(Json(tokens.iter().map(TokenView::from).collect()))
}

#[utoipa::path(
    post,
    path = "/api/v1/agents/{id}/tokens",
    operation_id = "create_agent_token",
    tag = "agents",
    params(Id, Key),
    request_body = agentprocess_operations::agents::NewAgentToken,
    responses((status = 201, description = "The token, shown this once", body = TokenView))
)]
pub(super) async fn create_token(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Id(id): Id,
    key: Key,
    Body(new): Body<NewAgentToken>,
) -> Result<Response, ApiError> {
    let (row, token) = web
        .operations
        .create_agent_token(&caller, &id, &new, key.as_deref())
        .await?;
    Ok(TokenView::shown_once(&row, token))
}

#[utoipa::path(
    post,
    path = "/api/v1/agents/{id}/tokens/{token}/rotate",
    tag = "agents",
    params(("id" = String, Path, description = "The id"), ("token" = String, Path, description = "The token's id"), Key),
    request_body = agentprocess_operations::agents::Rotation,
    responses((status = 201, description = "The new token, shown this once", body = TokenView))
)]
pub(super) async fn rotate_token(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((id, token)): Path<(String, String)>,
    key: Key,
    Body(rotation): Body<Rotation>,
) -> Result<Response, ApiError> {
    let (row, secret) = web
        .operations
        .rotate_agent_token(&caller, (&id, &token), &rotation, key.as_deref())
        .await?;
    Ok(TokenView::shown_once(&row, secret))
}

#[utoipa::path(
    delete,
    path = "/api/v1/agents/{id}/tokens/{token}",
    operation_id = "revoke_agent_token",
    tag = "agents",
    params(("id" = String, Path, description = "The id"), ("token" = String, Path, description = "The token's id")),
    responses((status = 204, description = "Revoked"))
)]
pub(super) async fn revoke_token(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((id, token)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    web.operations.revoke_agent_token(&caller, &id, &token).await?;
    Ok(StatusCode::NO_CONTENT)
}
