//! The admin pages: members and groups, agents and their tokens, importing, binding
//! and publishing processes, webhooks and their deliveries, the audit log, and the
//! organization's sign-in settings. They are forms over the REST surface: every read
//! and every change is a request to `/api/v1`, made in process with the person's own
//! session (its CSRF token, their address), so the pages check, refuse, audit and
//! replay exactly as the REST surface does, and a refusal is shown with every issue.

mod actions;
mod pages;

use std::sync::Arc;

use agentprocess_store::Role;
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Method, Request, StatusCode, header};
use axum::routing::{get, post};
use serde_json::Value;
use tower_sessions::Session;

use super::Visitor;
use crate::session::{Web, csrf_token};

/// What the admin pages run on: the web app's state, and the REST surface they call.
pub(crate) struct Admin {
    web: Arc<Web>,
    rest: Router,
}

pub(crate) fn routes(web: Arc<Web>, rest: Router) -> Router {
    let admin = Arc::new(Admin { web, rest });
    Router::new()
        .route("/admin", get(pages::show))
        .route("/admin/{page}", get(pages::show_page))
        .route("/admin/processes/{name}", get(pages::show_draft))
        .route("/admin/do/{action}", post(actions::act))
        .route(
            "/admin/import",
            post(actions::import).layer(axum::extract::DefaultBodyLimit::max(4 << 20)),
        )
        .with_state(admin)
}

/// One answer of the REST surface.
pub(crate) struct Answer {
    status: StatusCode,
    /// The JSON body; `Null` for none.
    body: Value,
}

impl Answer {
    fn ok(&self) -> bool {
        self.status.is_success()
    }

    /// A refusal's message and every issue.
    fn refusal(&self) -> (String, Vec<String>) {
        let message = self.body["message"]
            .as_str()
            .map_or_else(|| format!("the server answered {}", self.status), str::to_owned);
        let issues = self.body["issues"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        (message, issues)
    }
}

/// The person at the admin pages, with what an in-process REST request needs.
pub(crate) struct Caller {
    visitor: Visitor,
    session: Session,
    address: Option<ConnectInfo<std::net::SocketAddr>>,
}

impl Caller {
    fn is_admin(&self) -> bool {
        self.visitor.caller.identity.has_role(Role::Admin)
    }
}

impl Admin {
    /// `method path` (under `/api/v1`) as `caller`, with a JSON body, a raw body of
    /// `content_type`, or none, and an `Idempotency-Key` when given.
    async fn call(&self, caller: &Caller, (method, path): (Method, &str), body: Payload, key: Option<&str>) -> Answer {
        let csrf = match csrf_token(&caller.session).await {
            Ok(token) => token,
            Err(_) => return failed(),
        };
        let mut request = Request::builder()
            .method(method)
            .uri(format!("/api/v1{path}"))
            .header(header::ORIGIN, &self.web.origin)
            .header("x-csrf-token", csrf);
        if let Some(key) = key.filter(|key| !key.is_empty()) {
            request = request.header("idempotency-key", key);
        }
        let body = match body {
            Payload::None => Body::empty(),
            Payload::Json(value) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                Body::from(value.to_string())
            }
            Payload::Raw(content_type, bytes) => {
                request = request.header(header::CONTENT_TYPE, content_type);
                Body::from(bytes)
            }
        };
        let Ok(mut request) = request.body(body) else {
            return failed();
        };
        // The person's own session and address: the REST surface sees them as if the
        // browser had called it.
        request.extensions_mut().insert(caller.session.clone());
        if let Some(address) = caller.address {
            request.extensions_mut().insert(address);
        }
        let Ok(response) = tower::ServiceExt::oneshot(self.rest.clone(), request).await;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 16 << 20)
            .await
            .unwrap_or_default();
        Answer {
            status,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        }
    }

    /// `GET path`, the items of its answer (or the answer itself when it has none).
    async fn read(&self, caller: &Caller, path: &str) -> Result<Value, Answer> {
        let answer = self.call(caller, (Method::GET, path), Payload::None, None).await;
        if answer.ok() { Ok(answer.body) } else { Err(answer) }
    }
}

/// What a REST request carries.
enum Payload {
    None,
    Json(Value),
    Raw(HeaderValue, Vec<u8>),
}

fn failed() -> Answer {
    Answer {
        status: StatusCode::SERVICE_UNAVAILABLE,
        body: serde_json::json!({ "message": agentprocess_service::RETRY_MESSAGE }),
    }
}

/// A path segment made from what a form sent, so no value can leave its segment.
fn segment(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}
