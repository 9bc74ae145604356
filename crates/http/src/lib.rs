#![doc = include_str!("../README.md")]

pub mod config;
mod direct;
mod headers;
mod hosts;
mod identity;
mod jsonrpc;
mod lifecycle;
mod oauth;
mod observe;
mod uploads;
mod web;
mod windows;

use std::sync::Arc;

use agentprocess_blobs::Blobs;
use agentprocess_engine::Code;
use agentprocess_mcp::McpServer;
use agentprocess_service::{FileDownload, Service};
use agentprocess_store::Store;
use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::Deserialize;

pub use identity::openapi_text;
pub use lifecycle::{Draining, ProcessSettings, serve};

/// What the HTTP surface needs beyond the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    /// Host names (without port) that `Host` may carry.
    pub allowed_hosts: Vec<String>,
    /// Origins (`https://app.example`) a browser may call `/mcp` from.
    pub allowed_origins: Vec<String>,
    /// The organization whose people `/dev/sign-in` lets anyone sign in as, with no
    /// identity provider. Only for development servers.
    pub dev_sign_in_org: Option<String>,
    /// Whether plain stateless `tools/call` requests are answered without building an
    /// rmcp service for each (see the `direct` module); off, rmcp serves every request.
    pub direct_tool_calls: bool,
}

/// The largest `/mcp` request body: a maximal upload in base64 plus room for the
/// JSON-RPC envelope and the other arguments.
pub fn max_body_bytes(max_upload_bytes: usize) -> usize {
    max_upload_bytes.div_ceil(3).saturating_mul(4).saturating_add(64 << 10)
}

/// `POST /test/clock` with `{ "advanceSeconds": n }` moves `clock` forward and wakes
/// the timer loop. Only for servers started for end-to-end tests.
pub fn test_clock_route<S: Store, B: Blobs>(
    service: Arc<Service<S, B>>,
    clock: Arc<agentprocess_service::TestClock>,
) -> Router {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Advance {
        advance_seconds: i64,
    }
    let handler = move |axum::Json(advance): axum::Json<Advance>| async move {
        let now = clock.advance(advance.advance_seconds);
        service.wake_timers();
        axum::Json(serde_json::json!({ "now": now.to_string() }))
    };
    Router::new().route("/test/clock", axum::routing::post(handler))
}

/// The system clock, or a test clock (returned too) when `test` is set.
pub fn clock(
    test: bool,
) -> (
    Arc<dyn agentprocess_service::Clock>,
    Option<Arc<agentprocess_service::TestClock>>,
) {
    if test {
        let clock = Arc::new(agentprocess_service::TestClock::default());
        (clock.clone(), Some(clock))
    } else {
        (Arc::new(agentprocess_service::SystemClock), None)
    }
}

/// `router` with `/test/clock` added when a test clock is given.
pub fn with_test_clock<S: Store, B: Blobs>(
    router: Router,
    service: &Arc<Service<S, B>>,
    clock: Option<Arc<agentprocess_service::TestClock>>,
) -> Router {
    match clock {
        Some(clock) => {
            tracing::warn!("test clock on: POST /test/clock moves this server's time; never use this in production");
            router.merge(test_clock_route(Arc::clone(service), clock))
        }
        None => router,
    }
}

/// The router: `/mcp`, `POST /v1/uploads`, `/files/…`, `/healthz`, `/readyz`, the
/// sign-up and sign-in pages and `/api/v1`.
pub fn router<S, B>(
    service: Arc<Service<S, B>>,
    auth: Arc<agentprocess_auth::Auth<S>>,
    settings: &HttpSettings,
) -> Router
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    let max_body = max_body_bytes(service.settings().max_upload_bytes);
    let https = service.settings().public_url.starts_with("https://");
    let allowed_hosts: Arc<[String]> = Arc::from(settings.allowed_hosts.clone());
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
        .route("/v1/uploads", axum::routing::post(uploads::upload::<S, B>))
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
    let authenticated = mcp.merge(rest).layer(middleware::from_fn_with_state(
        Arc::clone(&service),
        authenticate::<S, B>,
    ));
    let limits = identity::Limits::new(auth.settings());
    let web = Arc::new(identity::Web {
        service: Arc::clone(&service),
        auth,
        limits,
        origin: origin_of(&service.settings().public_url).unwrap_or_default(),
        dev_org: settings.dev_sign_in_org.clone(),
        visitors: identity::cookies::VisitorCookies::new(&service.settings().url_secret, https),
    });
    Router::new()
        .route("/files/{org}/{id}", get(download::<S, B>))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready::<S, B>))
        .with_state(Arc::clone(&service))
        .merge(authenticated)
        .merge(oauth::routes(Arc::clone(&web)))
        .merge(identity::routes(web))
        .layer(middleware::from_fn_with_state(service, backstop::<S, B>))
        .layer(middleware::from_fn(move |request, next| {
            hosts::check(Arc::clone(&allowed_hosts), request, next)
        }))
        .layer(middleware::from_fn(move |request, next| {
            headers::security_headers(https, request, next)
        }))
}

/// Resolves `Authorization: Bearer …` to a caller and leaves it on the request for
/// the MCP handler; 401 otherwise.
async fn authenticate<S: Store, B: Blobs>(
    State(service): State<Arc<Service<S, B>>>,
    mut request: Request,
    next: Next,
) -> Response {
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
            caller.address = request
                .extensions()
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map(|axum::extract::ConnectInfo(address)| address.ip().to_string());
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Ok(None) => unauthorized(
            &service.settings().public_url,
            true,
            "the bearer token is not valid: it is unknown, expired or revoked, or not for this server",
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
async fn backstop<S: Store, B: Blobs>(
    State(service): State<Arc<Service<S, B>>>,
    request: Request,
    next: Next,
) -> Response {
    let limit = service.settings().call_deadline + BACKSTOP_MARGIN;
    match service.bounded_by(limit, next.run(request)).await {
        Some(response) => response,
        None => {
            tracing::error!(?limit, "a request did not finish within the deadline");
            try_again_shortly()
        }
    }
}

/// `response` as 429 with `Retry-After`: the caller's organization is at one of its
/// limits.
pub(crate) fn too_many_requests(over: &agentprocess_service::OverLimit, mut response: Response) -> Response {
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(over.retry_after_seconds()));
    response
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

/// The media types a download may be shown inline as.
pub(crate) const INLINE_TYPES: [&str; 5] = ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"];

async fn download<S: Store, B: Blobs>(
    State(service): State<Arc<Service<S, B>>>,
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
            let inline = preview && INLINE_TYPES.contains(&content_type.as_str());
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

async fn ready<S: Store, B: Blobs>(
    State(service): State<Arc<Service<S, B>>>,
    draining: Option<axum::Extension<Draining>>,
) -> Response {
    // The API stays ready through a Redis outage: writes go on, and the reconciler
    // queues their timers once Redis is back.
    readiness(service.store(), None, draining.as_deref()).await
}

/// `/readyz`: 200 when the database answers with every migration of this build
/// applied and the timer queue (when given) answers; 503 naming what is not, or while
/// the process shuts down.
pub async fn readiness<S: Store>(
    store: &S,
    queue: Option<&dyn agentprocess_timers::TimerQueue>,
    draining: Option<&Draining>,
) -> Response {
    let unready = |reason: String| {
        tracing::warn!(reason = %reason, "not ready");
        (StatusCode::SERVICE_UNAVAILABLE, reason).into_response()
    };
    if draining.is_some_and(Draining::is_draining) {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down").into_response();
    }
    match store.pending_migrations().await {
        Ok(pending) if pending.is_empty() => {}
        Ok(pending) => {
            let versions: Vec<String> = pending.iter().map(i64::to_string).collect();
            return unready(format!("migrations not applied: {}", versions.join(", ")));
        }
        Err(error) => return unready(format!("database unreachable: {error}")),
    }
    if let Some(queue) = queue
        && let Err(error) = queue.ping().await
    {
        return unready(format!("timer queue unreachable: {error}"));
    }
    (StatusCode::OK, "ready").into_response()
}

/// The background work of a process: firing timers and delivering webhooks.
#[derive(Debug, Clone, Default)]
pub struct Background {
    /// How timers are fired.
    pub scheduler: agentprocess_service::SchedulerSettings,
    /// How webhooks are delivered.
    pub webhooks: agentprocess_service::WebhookSettings,
}

/// Starts the timer loop, the reconciler (with a timer queue), the webhook loop and
/// the sampler of the work gauges; each stops when `stop` is cancelled, after
/// finishing what it has under way.
pub fn spawn_background<S: Store, B: Blobs>(
    service: &Arc<Service<S, B>>,
    background: &Background,
    stop: &tokio_util::sync::CancellationToken,
) -> tokio::task::JoinSet<()> {
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(Arc::clone(service).run_scheduler(background.scheduler.clone(), stop.clone()));
    tasks.spawn(Arc::clone(service).run_reconciler(background.scheduler.clone(), stop.clone()));
    tasks.spawn(Arc::clone(service).run_webhooks(background.webhooks.clone(), stop.clone()));
    tasks.spawn(Arc::clone(service).run_gauges(stop.clone()));
    tasks
}

/// The production and embedded assembly: PostgreSQL or SQLite, evidence in a
/// directory or in S3.
pub type SqlService = Service<agentprocess_store::SqlStore, agentprocess_blobs::ServerBlobs>;

/// Where uploaded evidence is kept.
#[derive(Debug, Clone)]
pub enum Storage {
    /// Files under a directory.
    Dir(std::path::PathBuf),
    /// Objects in an S3 bucket.
    S3 {
        /// How to reach it.
        settings: agentprocess_blobs::S3Settings,
        /// Create the bucket if it does not exist.
        create_bucket: bool,
    },
}

impl Storage {
    /// The store, ready for use.
    pub async fn open(&self) -> Result<agentprocess_blobs::ServerBlobs, agentprocess_blobs::Error> {
        Ok(match self {
            Storage::Dir(dir) => agentprocess_blobs::ServerBlobs::Local(agentprocess_blobs::LocalBlobs::new(dir)?),
            Storage::S3 {
                settings,
                create_bucket,
            } => {
                let s3 = agentprocess_blobs::S3Blobs::new(settings).await;
                if *create_bucket {
                    s3.create_bucket().await?;
                }
                agentprocess_blobs::ServerBlobs::S3(s3)
            }
        })
    }
}

/// Connects to `database_url`, applies migrations when `migrate` is set, and builds
/// the service over it with evidence in `storage`.
pub async fn assemble(
    database_url: &str,
    max_connections: u32,
    migrate: bool,
    storage: &Storage,
    settings: agentprocess_service::Settings,
    clock: Arc<dyn agentprocess_service::Clock>,
    extras: Extras,
) -> Result<Arc<SqlService>, AssembleError> {
    let store = agentprocess_store::SqlStore::connect(database_url, max_connections).await?;
    if migrate {
        store.migrate().await?;
    }
    observe_pool(&store);
    let blobs = storage.open().await?;
    let mut service = Service::new(store, blobs, clock, settings);
    if let Some(queue) = extras.queue {
        service = service.with_timer_queue(queue);
    }
    if let Some(evaluator) = extras.evaluator {
        service = service.with_evaluator(evaluator);
    }
    Ok(Arc::new(service))
}

/// Reports the store's connections as `db.client.connection.count`.
pub fn observe_pool(store: &agentprocess_store::SqlStore) {
    let sampled = store.clone();
    agentprocess_telemetry::observe_pool("agentprocess", move || sampled.pool_stats());
    let store = store.clone();
    agentprocess_telemetry::observe_dead_connections("agentprocess", move || store.connections_found_dead());
}

/// What a service may use besides its database and evidence store.
#[derive(Default)]
pub struct Extras {
    /// Where timers are mirrored for a separate scheduler; `None` fires them in process.
    pub queue: Option<Arc<dyn agentprocess_timers::TimerQueue>>,
    /// The check-1 evaluator; `None` leaves check-1 unoffered.
    pub evaluator: Option<Arc<dyn agentprocess_evaluator::Evaluator>>,
}

/// Why the service could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    /// The database could not be reached or migrated.
    #[error(transparent)]
    Store(#[from] agentprocess_store::Error),
    /// The evidence store could not be opened.
    #[error(transparent)]
    Blobs(#[from] agentprocess_blobs::Error),
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

/// The host name of a URL, without scheme, port or path.
pub fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split('/').next()?;
    let host = if let Some(bracketed) = authority.strip_prefix('[') {
        bracketed.split(']').next()?
    } else {
        authority.rsplit_once(':').map_or(authority, |(host, _)| host)
    };
    (!host.is_empty()).then(|| host.to_owned())
}
