//! The people's web app, served under the session layer on the sign-in of the
//! organizations' SSO. So far: the inbox (`/inbox`) and the work item page
//! (`/runs/{run}/items/{item}`), where a person decides. A decision from here is a
//! `decide` call of the person's own session, CSRF-checked: the one place where a
//! decision is provably a person's.

mod forms;
mod inbox;
mod layout;
mod work_item;

use std::sync::Arc;

use agentprocess_auth::Identity;
use agentprocess_blobs::Blobs;
use agentprocess_service::Caller;
use agentprocess_store::Store;
use axum::Router;
use axum::http::Uri;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use tower_sessions::Session;

use crate::identity::{ApiError, RETURN_TO, Web, signed_in};

pub(crate) fn routes<S, B>(web: Arc<Web<S, B>>) -> Router
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    Router::new()
        .route("/inbox", get(inbox::inbox::<S, B>))
        .route(
            "/runs/{run}/items/{item}",
            get(work_item::show::<S, B>).post(work_item::decide::<S, B>),
        )
        .with_state(web)
}

/// Whether a path is one the sign-in may send the person back to.
pub(crate) fn returns_to(path: &str) -> bool {
    path.starts_with("/oauth/authorize?")
        || path == "/inbox"
        || path.starts_with("/inbox?")
        || path.starts_with("/runs/")
}

/// The signed-in person, or the answer that sends them to sign in (and back here after).
async fn person<S, B>(web: &Web<S, B>, session: &Session, uri: &Uri) -> Result<Identity, Response>
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    match signed_in(web, session).await {
        Ok(Some(identity)) => Ok(identity),
        Ok(None) => {
            let here = uri.path_and_query().map_or("/inbox", |path| path.as_str());
            if let Err(error) = session.insert(RETURN_TO, here).await {
                return Err(ApiError::session(error).into_response());
            }
            Err(Redirect::to("/login").into_response())
        }
        Err(error) => Err(error.into_response()),
    }
}

/// The caller a session acts as: the person, with their whole rights (a session is
/// the person at the browser; no OAuth scopes narrow it).
fn caller(identity: Identity, address: Option<String>) -> Caller {
    Caller::issued(identity, address)
}
