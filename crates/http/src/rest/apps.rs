//! Clients for the organization's people, made by an admin: the MCP clients or inbox
//! apps people sign in to with their own account (authorization code + PKCE). Only a
//! client made here and marked as operated by people may get `process:decide`.

use std::sync::Arc;

use agentprocess_auth::people_clients::NewApp;
use agentprocess_store::OAuthApp;
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
        .routes(needs::<AdminReads>(routes!(apps)))
        .routes(needs::<AdminWrites>(routes!(create_app)))
        .routes(needs::<AdminWrites>(routes!(revoke_app)))
}

/// A client for the organization's people.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct AppView {
    /// The `client_id`.
    client_id: String,
    name: Option<String>,
    redirect_uris: Vec<String>,
    /// `web` or `native`.
    application_type: String,
    /// `none` (a public client, PKCE alone) or `client_secret_basic`.
    token_endpoint_auth_method: String,
    /// Whether people, not agents, operate it: only then may its tokens decide.
    people_operated: bool,
    created_at: String,
    revoked_at: Option<String>,
    /// A confidential client's secret: only in the answer that made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    /// Where people are sent to sign in and consent.
    authorization_endpoint: String,
}

impl AppView {
    fn of(app: &OAuthApp, authorization_endpoint: String) -> Self {
        Self {
            client_id: app.id.clone(),
            name: app.name.clone(),
            redirect_uris: app.redirect_uris.clone(),
            application_type: app.application_type.clone(),
            token_endpoint_auth_method: app.auth_method.clone(),
            people_operated: app.people_operated,
            created_at: time_text(app.created_at),
            revoked_at: app.revoked_at.map(time_text),
            client_secret: None,
            authorization_endpoint,
        }
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/apps",
    tag = "apps",
    responses((status = 200, description = "The clients made for the organization's people", body = Items<AppView>))
)]
pub(super) async fn apps(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<Items<AppView>>, ApiError> {
    let apps = web.operations.apps(&caller).await?;
    Ok(Json(
        apps.iter()
            .map(|app| AppView::of(app, web.operations.authorization_endpoint()))
            .collect(),
    ))
}

/// The client, with its secret when it is confidential, shown this once.
#[utoipa::path(
    post,
    path = "/api/v1/apps",
    tag = "apps",
    params(Key),
    request_body = NewApp,
    responses((status = 201, description = "The client, and a confidential one's secret, shown this once", body = AppView))
)]
pub(super) async fn create_app(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    key: Key,
    Body(new): Body<NewApp>,
) -> Result<Response, ApiError> {
    let (app, secret) = web.operations.create_app(&caller, &new, key.as_deref()).await?;
    let mut view = AppView::of(&app, web.operations.authorization_endpoint());
    view.client_secret = secret;
    Ok(shown_once(view))
}

#[utoipa::path(
    delete,
    path = "/api/v1/apps/{id}",
    tag = "apps",
    params(("id" = String, Path, description = "The client_id")),
    responses((status = 204, description = "Revoked, with every grant and token of it"))
)]
pub(super) async fn revoke_app(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    web.operations.revoke_app(&caller, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
