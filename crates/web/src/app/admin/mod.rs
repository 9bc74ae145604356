//! The admin pages: members and groups, agents and their tokens, importing, binding
//! and publishing processes, webhooks and their deliveries, the audit log, and the
//! organization's sign-in settings. They are forms over the organization's
//! operations (`agentprocess_operations`), the same ones the REST surface calls, with
//! the person's own session as who acts: the same role checks, replays and audit
//! entries, the role refused before anything sent is read, and a refusal shown with
//! every issue.

mod actions;
mod pages;

use std::sync::Arc;

use agentprocess_auth::{Acting, Role, Via};
use axum::Router;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tower_sessions::Session;

use super::Visitor;
use super::layout::page;
use super::refusals;
use crate::errors::ApiError;
use crate::session::{Web, address, is_unsafe};

pub(crate) fn routes(web: Arc<Web>) -> Router {
    Router::new()
        .route("/admin", get(pages::show))
        .route("/admin/{page}", get(pages::show_page))
        .route("/admin/processes/{name}", get(pages::show_draft))
        .route("/admin/do/{action}", post(actions::act))
        .route(
            "/admin/import",
            post(actions::import).layer(axum::extract::DefaultBodyLimit::max(actions::MAX_IMPORT)),
        )
        .with_state(web)
}

/// Refuses what was sent when any of it holds a NUL character, as `/api/v1` does:
/// no name or text may hold one.
fn refuse_nul<'a>(sent: impl IntoIterator<Item = &'a str>) -> Result<(), ApiError> {
    if sent.into_iter().any(|text| text.contains('\0')) {
        Err(ApiError::nul())
    } else {
        Ok(())
    }
}

/// The person at the admin pages (or making their own tokens), acting by their session, holding their place among
/// their organization's calls in progress until the page is answered.
pub(crate) struct Caller {
    pub(in crate::app) visitor: Visitor,
    pub(in crate::app) session: Session,
    pub(in crate::app) acting: Acting,
    _admission: agentprocess_service::Admission,
}

impl Caller {
    fn is_admin(&self) -> bool {
        self.acting.identity.has_role(Role::Admin)
    }
}

impl FromRequestParts<Arc<Web>> for Caller {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, web: &Arc<Web>) -> Result<Self, Response> {
        let visitor = Visitor::from_request_parts(parts, web).await?;
        let session = Session::from_request_parts(parts, web)
            .await
            .map_err(IntoResponse::into_response)?;
        let identity = visitor.caller.identity.clone();
        let writes = is_unsafe(&parts.method);
        let admission = match web.service.admit(&identity, writes).await {
            Ok(admission) => admission,
            Err(over) => {
                let refusal = ApiError::from(over);
                return Err(page(
                    refusal.status(),
                    "Administration",
                    Some(&visitor),
                    refusals::shown(refusal.tool_error()),
                ));
            }
        };
        Ok(Caller {
            acting: Acting {
                identity,
                via: Via::Session,
                address: address(parts),
            },
            visitor,
            session,
            _admission: admission,
        })
    }
}
