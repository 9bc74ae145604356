//! An agent's OAuth clients: made by an admin, each with up to two live secrets (or
//! registered public keys, for `private_key_jwt`), used with `client_credentials` at
//! `/oauth/token`.

use std::sync::Arc;

use agentprocess_operations::clients::NewClient;
use agentprocess_store::{ClientSecret, OAuthClient};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{AdminReads, AdminWrites, Body, Items, Key, needs, shown_once, time_text};
use agentprocess_web::errors::ApiError;
use agentprocess_web::session::{Authenticated, Web};

pub(super) fn routes() -> OpenApiRouter<Arc<Web>> {
    OpenApiRouter::new()
        .routes(needs::<AdminReads>(routes!(clients)))
        .routes(needs::<AdminWrites>(routes!(create_client)))
        .routes(needs::<AdminWrites>(routes!(revoke_client)))
        .routes(needs::<AdminWrites>(routes!(add_secret)))
        .routes(needs::<AdminWrites>(routes!(revoke_secret)))
}

/// An OAuth client of an agent.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct ClientView {
    /// The `client_id`.
    client_id: String,
    name: Option<String>,
    created_at: String,
    revoked_at: Option<String>,
    /// How it authenticates: `client_secret` (HTTP Basic or the form) or
    /// `private_key_jwt` (a JWT signed with a key of its `jwks`).
    authentication: &'static str,
    /// The public keys of a `private_key_jwt` client.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    jwks: Option<serde_json::Value>,
    /// The live secrets (never the secrets themselves).
    secrets: Vec<SecretView>,
    /// Where it gets tokens, with `grant_type=client_credentials`.
    token_endpoint: String,
}

/// One secret of a client.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct SecretView {
    id: String,
    created_at: String,
    /// The secret itself: only in the answer that made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<String>,
}

impl From<&ClientSecret> for SecretView {
    fn from(secret: &ClientSecret) -> Self {
        Self {
            id: secret.id.clone(),
            created_at: time_text(secret.created_at),
            secret: None,
        }
    }
}

impl ClientView {
    fn of(client: &OAuthClient, secrets: &[ClientSecret], token_endpoint: String) -> Self {
        Self {
            client_id: client.id.clone(),
            name: client.name.clone(),
            created_at: time_text(client.created_at),
            revoked_at: client.revoked_at.map(time_text),
            authentication: if client.jwks.is_some() {
                "private_key_jwt"
            } else {
                "client_secret"
            },
            jwks: client.jwks.as_deref().and_then(|jwks| serde_json::from_str(jwks).ok()),
            secrets: secrets.iter().map(SecretView::from).collect(),
            token_endpoint,
        }
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/agents/{id}/clients",
    tag = "agents",
    params(("id" = String, Path, description = "The agent")),
    responses((status = 200, description = "The agent's OAuth clients", body = Items<ClientView>))
)]
pub(super) async fn clients(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
) -> Result<Json<Items<ClientView>>, ApiError> {
    let clients = web.operations.agent_clients(&caller, &id).await?;
    Ok(Json(
        clients
            .iter()
            .map(|(client, secrets)| ClientView::of(client, secrets, web.operations.token_endpoint()))
            .collect(),
    ))
}

/// The client, with its first secret in `secrets[0].secret` (shown this once), or
/// with no secret when it was given `jwks`.
#[utoipa::path(
    post,
    path = "/api/v1/agents/{id}/clients",
    tag = "agents",
    params(("id" = String, Path, description = "The agent"), Key),
    request_body = agentprocess_operations::clients::NewClient,
    responses((status = 201, description = "The client and its first secret, shown this once", body = ClientView))
)]
pub(super) async fn create_client(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
    key: Key,
    Body(new): Body<NewClient>,
) -> Result<Response, ApiError> {
    let (client, secret) = web.operations.create_client(&caller, &id, &new, key.as_deref()).await?;
    let token_endpoint = web.operations.token_endpoint();
    let view = match secret {
        Some((secret, plain)) => {
            let mut view = ClientView::of(&client, std::slice::from_ref(&secret), token_endpoint);
            if let Some(first) = view.secrets.first_mut() {
                first.secret = Some(plain);
            }
            view
        }
        None => ClientView::of(&client, &[], token_endpoint),
    };
    Ok(shown_once(view))
}

#[utoipa::path(
    delete,
    path = "/api/v1/agents/{id}/clients/{client}",
    tag = "agents",
    params(("id" = String, Path, description = "The agent"), ("client" = String, Path, description = "The client_id")),
    responses((status = 204, description = "Revoked, with every access token it was given"))
)]
pub(super) async fn revoke_client(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((id, client)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    web.operations.revoke_client(&caller, &id, &client).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A second secret, so the agent can switch to it before the first is revoked.
#[utoipa::path(
    post,
    path = "/api/v1/agents/{id}/clients/{client}/secrets",
    tag = "agents",
    params(("id" = String, Path, description = "The agent"), ("client" = String, Path, description = "The client_id"), Key),
    responses((status = 201, description = "The new secret, shown this once", body = SecretView))
)]
pub(super) async fn add_secret(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((id, client)): Path<(String, String)>,
    key: Key,
) -> Result<Response, ApiError> {
    let (secret, plain) = web
        .operations
        .add_client_secret(&caller, &id, &client, key.as_deref())
        .await?;
    let mut view = SecretView::from(&secret);
    view.secret = Some(plain);
    Ok(shown_once(view))
}

#[utoipa::path(
    delete,
    path = "/api/v1/agents/{id}/clients/{client}/secrets/{secret}",
    tag = "agents",
    params(("id" = String, Path, description = "The agent"), ("client" = String, Path, description = "The client_id"), ("secret" = String, Path, description = "The secret's id")),
    responses((status = 204, description = "Revoked"))
)]
pub(super) async fn revoke_secret(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((id, client, secret)): Path<(String, String, String)>,
) -> Result<StatusCode, ApiError> {
    web.operations
        .revoke_client_secret(&caller, &id, &client, &secret)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
