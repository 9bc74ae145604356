//! The people's web app, served under the session layer on the sign-in of the
//! organizations' SSO. So far: the inbox (`/inbox`), the work item page
//! (`/runs/{run}/items/{item}`), where a person decides, and the run page
//! (`/runs/{run}`) with its record, where an operator cancels. A decision from here is a
//! `decide` call of the person's own session, CSRF-checked: the one place where a
//! decision is provably a person's.

mod account;
mod admin;
mod agreement;
pub(crate) mod assets;
mod check;
mod evidence;
mod facts;
pub mod forms;
mod inbox;
pub(crate) mod layout;
mod map;
mod markdown;
mod message_choices;
mod overdue;
mod processes;
pub(crate) mod refusals;
mod run_page;
mod runs;
mod time;
mod work_item;

use std::sync::Arc;

use agentprocess_auth::Identity;
use agentprocess_auth::sessions::{SIGNED_IN, SignedIn};
use agentprocess_service::Caller;
use axum::Router;
use axum::extract::FromRequestParts;
use axum::http::Uri;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tower_sessions::Session;

use crate::errors::ApiError;
use crate::session::{ClientAddress, Web, signed_in};

pub(crate) fn routes(web: Arc<Web>) -> Router {
    let admin = admin::routes(Arc::clone(&web));
    Router::new()
        .route("/assets/app.css", get(assets::stylesheet))
        .route("/assets/app.js", get(assets::script))
        .route("/assets/icon.svg", get(assets::icon))
        .route("/favicon.ico", get(assets::icon))
        .route("/", get(home))
        .route("/inbox", get(inbox::inbox))
        .route("/overdue", get(overdue::overdue))
        .route("/account", get(account::account))
        .route("/account/messages", post(account::choose_messages))
        .route("/account/tokens", post(account::make_token))
        .route("/account/tokens/{id}/revoke", post(account::revoke_token))
        .route("/processes", get(processes::catalog))
        .route("/processes/{name}", get(processes::latest_version))
        .route("/processes/{name}/versions/{number}", get(processes::version))
        .route("/processes/{name}/check-agreement", get(agreement::show))
        .route(
            "/processes/{name}/start",
            get(processes::start_form).post(processes::start),
        )
        .route("/runs", get(runs::runs))
        .route("/runs/{run}", get(run_page::show))
        .route("/runs/{run}/{action}", post(run_page::act_on))
        .route(
            "/runs/{run}/items/{item}",
            get(work_item::show).post(work_item::decide).layer(
                // A decision may carry evidence files: up to one upload's bound in all.
                axum::extract::DefaultBodyLimit::max(web.service.settings().max_upload_bytes.saturating_add(64 << 10)),
            ),
        )
        .with_state(web)
        .merge(admin)
}

/// The landing page of a signed-in person: the organization's runs. Anyone else is
/// sent to sign in first, and comes back here.
async fn home(_: Visitor) -> Redirect {
    Redirect::to("/runs")
}

/// The signed-in person and when they signed in, or the answer that sends them to
/// sign in (and back here after).
async fn person(web: &Web, session: &Session, uri: &Uri) -> Result<(Identity, i64), Response> {
    let identity = match signed_in(web, session).await {
        Ok(identity) => identity,
        Err(error) => return Err(error.into_response()),
    };
    let at = match session.get::<SignedIn>(SIGNED_IN).await {
        Ok(signed) => signed.map(|signed| signed.at),
        Err(error) => return Err(ApiError::session(error).into_response()),
    };
    match (identity, at) {
        (Some(identity), Some(at)) => Ok((identity, at)),
        _ => Err(sign_in_first(web, uri, "/login")),
    }
}

/// Sends the person to `login`, and back to `uri` after. The way back travels in a
/// signed cookie: an anonymous visit stores nothing on the server.
fn sign_in_first(web: &Web, uri: &Uri, login: &str) -> Response {
    let here = uri.path_and_query().map_or("/inbox", |path| path.as_str());
    let mut response = Redirect::to(login).into_response();
    if let Some(cookie) = web.visitors.return_to(here) {
        response.headers_mut().append(axum::http::header::SET_COOKIE, cookie);
    }
    response
}

/// The person at the browser.
pub(crate) struct Visitor {
    /// How pages name them.
    who: String,
    /// The caller their session acts as: the person, with their whole rights (no OAuth
    /// scopes narrow a session), and when they signed in, which the audit log records.
    caller: Caller,
    /// The time zone pages write times in.
    zone: jiff::tz::TimeZone,
}

impl Visitor {
    /// Whether they hold `role` or a higher one.
    pub(crate) fn has_role(&self, role: agentprocess_auth::Role) -> bool {
        self.caller.identity.has_role(role)
    }
}

/// Members and above read the organization's pages; a deactivated person reads
/// nothing. The page titled `title` that says `why`, for anyone else.
fn unless_member(visitor: &Visitor, title: &str, why: &str) -> Option<Response> {
    if visitor.has_role(agentprocess_auth::Role::Member) {
        return None;
    }
    let error = agentprocess_engine::ToolError::new(
        agentprocess_engine::Code::Forbidden,
        why,
        vec!["role: member required".to_owned()],
    );
    Some(layout::refused(visitor, title, &error))
}

/// A page's visitor: signed in, or sent to sign in (and back to the page after).
impl FromRequestParts<Arc<Web>> for Visitor {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, web: &Arc<Web>) -> Result<Self, Response> {
        let ClientAddress(address) = ClientAddress::from_request_parts(parts, web)
            .await
            .unwrap_or(ClientAddress(None));
        let session = Session::from_request_parts(parts, web)
            .await
            .map_err(IntoResponse::into_response)?;
        let (identity, signed_in_at) = person(web, &session, &parts.uri).await?;
        Ok(Visitor {
            who: identity.person.clone().unwrap_or_else(|| identity.id.clone()),
            caller: Caller::session(identity, address, signed_in_at),
            zone: time::zone_of(&parts.headers),
        })
    }
}

/// Unless the person signed in recently enough to decide: the answer that has their
/// provider sign them in again (and brings them back to `uri`).
async fn recent_enough(web: &Web, uri: &Uri, visitor: &Visitor) -> Result<(), Response> {
    let within = i64::try_from(web.auth.settings().decide_sign_in_within.as_millis()).unwrap_or(i64::MAX);
    let signed_in_at = visitor.caller.signed_in_at.unwrap_or(i64::MIN);
    if web.service.now().as_millisecond().saturating_sub(signed_in_at) <= within {
        return Ok(());
    }
    let organization = web
        .auth
        .organization(visitor.caller.org())
        .await
        .map_err(|error| ApiError::from(error).into_response())?;
    let login = format!("/login?org={}&fresh=1", organization.slug);
    Err(sign_in_first(web, uri, &login))
}
