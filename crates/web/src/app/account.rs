//! A person's account: the organization they are signed in to, as whom, their role and
//! groups, and signing out; in the app's own look, with its navigation.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;
use tower_sessions::Session;

use super::Visitor;
use super::layout::page;
use crate::errors::ApiError;
use crate::session::{Web, csrf_token};

pub(super) async fn account(State(web): State<Arc<Web>>, session: Session, visitor: Visitor) -> Response {
    let organization = match web.auth.organization(visitor.caller.org()).await {
        Ok(organization) => organization,
        Err(error) => return ApiError::from(error).into_response(),
    };
    let csrf = match csrf_token(&session).await {
        Ok(token) => token,
        Err(error) => return error.into_response(),
    };
    let identity = &visitor.caller.identity;
    let body = html! {
        dl class="summary" {
            div { dt { "Organization" } dd { (organization.name) " " code { (organization.slug) } } }
            div { dt { "Signed in as" } dd { (visitor.who) } }
            div { dt { "Role" } dd { (identity.role.map_or("none", agentprocess_auth::Role::as_str)) } }
            div { dt { "Groups" } dd { @if identity.groups.is_empty() { "None" } @else { (identity.groups.join(", ")) } } }
        }
        p { a href="/inbox" { "Your inbox" } ": the work items waiting for you." }
        p { "The REST admin surface is at " code { "/api/v1" } "; send this session's "
            code { "X-CSRF-Token" } " with every change." }
        form method="post" action="/logout" {
            input type="hidden" name="csrf" value=(csrf);
            button type="submit" { "Sign out" }
        }
    };
    page(StatusCode::OK, "Your account", Some(&visitor), body)
}
