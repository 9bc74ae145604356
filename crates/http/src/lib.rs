#![doc = include_str!("../README.md")]
#![recursion_limit = "256"]

mod direct;
mod forwarded;
mod headers;
mod hosts;
mod jsonrpc;
mod oauth;
mod rest;
mod uploads;

use std::sync::Arc;

use agentprocess_engine::Code;
use agentprocess_mcp::McpServer;
use agentprocess_service::{FileDownload, Service};
use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::Deserialize;

pub use agentprocess_app::HttpSettings;
pub use rest::openapi::document_text as openapi_text;

/// The largest `/mcp` request body: a maximal upload in base64 plus room for the
/// JSON-RPC envelope and the other arguments.
pub fn max_body_bytes(max_upload_bytes: usize) -> usize {
    max_upload_bytes.div_ceil(3).saturating_mul(4).saturating_add(64 << 10)
}

/// The router: `/mcp`, `POST /v1/uploads`, `/files/…`, `/healthz`, `/readyz`, the
/// sign-up and sign-in pages and `/api/v1`.
pub fn router(service: Arc<Service>, auth: Arc<agentprocess_auth::Auth>, settings: &HttpSettings) -> Router {
    let max_body = max_body_bytes(service.settings().max_upload_bytes);
    let https = service.settings().public_url.starts_with("https://");
    let allowed_hosts: Arc<[String]> = Arc::from(settings.allowed_hosts.clone());
    let trusted_proxies = Arc::new(settings.trusted_proxies.clone());
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_allowed_hosts(settings.allowed_hosts.clone())
        .with_allowed_origins(allowed_origins(settings, &service.settings().public_url))
        // Checked on every request that carries an Origin (a browser's): the server's
        // own origin and the configured ones pass, any other gets 403. Clients that send
        // no Origin pass.
        .enforce_origin_validation()
        .with_max_request_body_bytes(max_body);
    let server = McpServer::new(Arc::clone(&service));
    let direct = settings
        .direct_tool_calls
        .then(|| Arc::new(direct::Direct::new(server.clone(), &settings.allowed_hosts)));
    let mcp = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let rest = Router::new()
        .route("/v1/uploads", axum::routing::post(uploads::upload))
        .layer(axum::extract::DefaultBodyLimit::max(
            service.settings().max_upload_bytes.saturating_add(64 << 10),
        ))
        .with_state(Arc::clone(&service));
    let public_url: Arc<str> = Arc::from(service.settings().public_url.as_str());
    let mcp = Router::new()
        .route_service("/mcp", mcp)
        .layer(middleware::from_fn(move |request, next| {
            jsonrpc::front(max_body, Arc::clone(&public_url), direct.clone(), request, next)
        }));
    let authenticated = mcp
        .merge(rest)
        .layer(middleware::from_fn_with_state(Arc::clone(&service), authenticate));
    let limits = agentprocess_web::session::Limits::new(auth.settings());
    let web = Arc::new(agentprocess_web::session::Web {
        service: Arc::clone(&service),
        operations: agentprocess_operations::Operations::new(Arc::clone(&auth), Arc::clone(&service)),
        auth,
        limits,
        origin: origin_of(&service.settings().public_url).unwrap_or_default(),
        dev_org: settings.dev_sign_in_org.clone(),
        visitors: agentprocess_web::cookies::VisitorCookies::new(&service.settings().url_secret, https),
    });
    Router::new()
        .route("/files/{org}/{id}", get(download))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .with_state(Arc::clone(&service))
        .merge(authenticated)
        .merge(oauth::routes(Arc::clone(&web)))
        .merge(
            // The browser's pages and `/api/v1` share the session layer.
            agentprocess_web::routes(Arc::clone(&web))
                .merge(rest::routes(Arc::clone(&web)))
                .layer(agentprocess_web::session::session_layer(&web)),
        )
        .layer(middleware::from_fn_with_state(service, backstop))
        .layer(middleware::from_fn(move |request, next| {
            hosts::check(Arc::clone(&allowed_hosts), request, next)
        }))
        .layer(middleware::from_fn(move |request, next| {
            headers::security_headers(https, request, next)
        }))
        .layer(middleware::from_fn(move |request, next| {
            forwarded::client_ip(Arc::clone(&trusted_proxies), request, next)
        }))
}

/// Resolves `Authorization: Bearer …` to a caller and leaves it on the request for
/// the MCP handler; 401 otherwise.
async fn authenticate(State(service): State<Arc<Service>>, mut request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|token| !token.is_empty());
    let Some(token) = token else {
        return unauthorized(&service.settings().public_url, false, "a bearer token is required");
    };
    match service.within_deadline(service.authenticate(token)).await {
        Ok(Some(mut caller)) => {
            caller.address = agentprocess_web::session::client_address(request.extensions());
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Ok(None) => unauthorized(
            &service.settings().public_url,
            true,
            agentprocess_auth::token_kinds::refusal_on_mcp(token),
        ),
        Err(error) => {
            // Logs the cause, once.
            let _retry = error.into_tool_error();
            try_again_shortly()
        }
    }
}

/// 503 with `Retry-After`: the server could not answer now (its database is down or
/// slow); the same request may be sent again.
fn try_again_shortly() -> Response {
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, "try again shortly").into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// Past the call deadline (and a margin, so that a tool call's own deadline answers
/// first, in the protocol's terms), any request is answered 503: the backstop for
/// every page and REST operation.
async fn backstop(State(service): State<Arc<Service>>, request: Request, next: Next) -> Response {
    let limit = service.settings().call_deadline + BACKSTOP_MARGIN;
    match service.bounded_by(limit, next.run(request)).await {
        Some(response) => response,
        None => {
            tracing::error!(?limit, "a request did not finish within the deadline");
            try_again_shortly()
        }
    }
}

/// How much longer than the call deadline the backstop waits.
const BACKSTOP_MARGIN: std::time::Duration = std::time::Duration::from_secs(5);

/// 401 with the challenge that tells an MCP client where to get a token.
fn unauthorized(public_url: &str, token_presented: bool, message: &'static str) -> Response {
    let mut response = (StatusCode::UNAUTHORIZED, message).into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, oauth::challenge(public_url, token_presented));
    response
}

#[derive(Debug, Deserialize)]
struct Signed {
    expires: i64,
    signature: String,
    /// Asks for the file to be shown in the page (a preview) rather than saved; honoured
    /// for raster images and PDFs only, which cannot run script in the server's origin.
    inline: Option<String>,
}

async fn download(
    State(service): State<Arc<Service>>,
    Path((org, id)): Path<(String, String)>,
    Query(signed): Query<Signed>,
) -> Response {
    let preview = signed.inline.is_some();
    match service
        .download(&org, &id, signed.expires, &signed.signature, preview)
        .await
    {
        Ok(Some(FileDownload::Redirect(url))) => {
            let mut response = StatusCode::FOUND.into_response();
            if let Ok(location) = HeaderValue::from_str(&url) {
                response.headers_mut().insert(header::LOCATION, location);
            }
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
            response
        }
        Ok(Some(FileDownload::Bytes {
            file_name,
            content_type,
            bytes,
        })) => {
            let inline = preview && agentprocess_web::INLINE_TYPES.contains(&content_type.as_str());
            let content_type =
                HeaderValue::from_str(&content_type).unwrap_or(HeaderValue::from_static("application/octet-stream"));
            let mut response = bytes.into_response();
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_TYPE, content_type);
            let disposition = agentprocess_blobs::attachment(&file_name);
            let disposition = if inline {
                disposition.replacen("attachment", "inline", 1)
            } else {
                disposition
            };
            if let Ok(value) = HeaderValue::from_str(&disposition) {
                headers.insert(header::CONTENT_DISPOSITION, value);
            }
            headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
            response
        }
        Ok(None) => (StatusCode::NOT_FOUND, "no such file").into_response(),
        Err(error) => match error.into_tool_error() {
            refusal if refusal.code == Code::Forbidden => (StatusCode::FORBIDDEN, refusal.message).into_response(),
            _ => (StatusCode::SERVICE_UNAVAILABLE, "try again shortly").into_response(),
        },
    }
}

async fn ready(
    State(service): State<Arc<Service>>,
    draining: Option<axum::Extension<agentprocess_app::Draining>>,
) -> Response {
    // The API stays ready through a Redis outage: writes go on, and the reconciler
    // queues their timers once Redis is back.
    agentprocess_app::readiness(service.store(), None, draining.as_deref()).await
}

/// The origins a browser may call `/mcp` from: the configured ones and the server's
/// own (the origin of its public URL).
fn allowed_origins(settings: &HttpSettings, public_url: &str) -> Vec<String> {
    let mut origins = settings.allowed_origins.clone();
    origins.extend(origin_of(public_url));
    origins
}

/// `scheme://host[:port]` of a URL, without path, query or user information.
pub fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    (!authority.is_empty()).then(|| format!("{}://{}", scheme.to_ascii_lowercase(), authority.to_ascii_lowercase()))
}
