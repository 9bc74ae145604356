//! What every route with a browser session stands on: the shared state ([`Web`]),
//! the session layer, who is signed in, the CSRF checks, and the caller of the REST
//! surface (an API token, or a session). Sessions never reach `/mcp`: the session
//! layer wraps only the browser's routes and `/api/v1`.

use std::sync::Arc;

use agentprocess_auth::sessions::{SIGNED_IN, Sessions, SignedIn};
use agentprocess_auth::{Auth, Identity};
use agentprocess_service::Service;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, header};
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, Session, SessionManagerLayer};

use crate::cookies;
use crate::errors::ApiError;
use crate::windows::WindowCounts;

/// The session key holding the synchronizer token every unsafe request must echo.
const CSRF: &str = "csrf";

/// What the identity routes share.
pub struct Web {
    /// The service every page and operation calls.
    pub service: Arc<Service>,
    /// Identity over the same store.
    pub auth: Arc<Auth>,
    /// The organization's operations, over both.
    pub operations: agentprocess_operations::Operations,
    /// `scheme://host[:port]` of the public URL: the only origin unsafe requests with
    /// a session may come from.
    pub origin: String,
    /// The organization whose people the development sign-in offers, when it is on.
    pub dev_org: Option<String>,
    /// What anyone may do without an account, counted on this process.
    pub limits: Limits,
    /// What a visitor nobody knows yet carries instead of a session.
    pub visitors: cookies::VisitorCookies,
}

/// The bounds of what anyone may do without an account, on each API process: a
/// window each, a limit per key and one in all.
pub struct Limits {
    /// Dynamic client registrations, per network address.
    pub registrations: WindowCounts,
    /// Sign-ins started, per network address: each sends the server to a provider.
    pub sign_ins_by_address: WindowCounts,
    /// Sign-ins the server tried at the provider first, per organization (as typed).
    pub sign_ins_by_org: WindowCounts,
    /// Failed token requests, per client id from one address.
    pub token_failures_by_client: WindowCounts,
    /// Failed token requests, per network address.
    pub token_failures_by_address: WindowCounts,
}

/// Dynamic client registrations are counted per hour.
const REGISTRATION_WINDOW: std::time::Duration = std::time::Duration::from_secs(3600);
/// How many times the per-address registration limit one process accepts per window,
/// from everyone.
const REGISTRATIONS_IN_ALL_FACTOR: u32 = 50;

/// How many keys one limit counts in a window, at most: every key is counted in all.
const KEYS_COUNTED: u32 = 20_000;

impl Limits {
    /// The limits identity's settings set.
    pub fn new(settings: &agentprocess_auth::AuthSettings) -> Self {
        let anonymous = settings.anonymous;
        let window = agentprocess_auth::AnonymousLimits::WINDOW;
        let limit = |per_key: u32| WindowCounts::new(window, per_key, KEYS_COUNTED.max(per_key));
        Self {
            registrations: WindowCounts::new(
                REGISTRATION_WINDOW,
                settings.client_registrations_per_hour,
                settings
                    .client_registrations_per_hour
                    .saturating_mul(REGISTRATIONS_IN_ALL_FACTOR),
            ),
            sign_ins_by_address: limit(anonymous.sign_ins_per_address),
            sign_ins_by_org: limit(anonymous.sign_ins_per_organization),
            token_failures_by_client: limit(anonymous.token_failures_per_client),
            token_failures_by_address: limit(anonymous.token_failures_per_address),
        }
    }
}

impl Web {
    /// The service's clock.
    pub fn now(&self) -> jiff::Timestamp {
        self.service.now()
    }
}

/// The session cookie's name: `__Host-` prefixed (so it is bound to this host, path
/// `/`, and secure) whenever the server is reached over https.
pub fn session_cookie_name(secure: bool) -> &'static str {
    if secure {
        "__Host-agentprocess-session"
    } else {
        "agentprocess-session"
    }
}

/// The session layer: the cookie (see [`session_cookie_name`]), kept in the store,
/// ending after the configured idle time.
pub fn session_layer(web: &Web) -> SessionManagerLayer<Sessions> {
    let secure = web.origin.starts_with("https://");
    let idle = web.auth.settings().session_idle;
    SessionManagerLayer::new(Sessions::new(web.auth.store().clone()))
        .with_name(session_cookie_name(secure))
        .with_secure(secure)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_path("/")
        .with_always_save(true)
        .with_expiry(Expiry::OnInactivity(
            time::Duration::try_from(idle).unwrap_or(time::Duration::hours(8)),
        ))
}

/// The caller's network address: the connection's peer, or behind a trusted proxy
/// the client it forwards for, as the router's front worked it out.
pub fn client_address(extensions: &axum::http::Extensions) -> Option<String> {
    extensions
        .get::<agentprocess_auth::forwarded::ClientIp>()
        .map(|agentprocess_auth::forwarded::ClientIp(address)| address.to_string())
}

/// The caller's network address (see [`client_address`]).
pub(crate) fn address(parts: &Parts) -> Option<String> {
    client_address(&parts.extensions)
}

/// The caller's network address, as an extractor.
pub struct ClientAddress(pub Option<String>);

impl<T: Send + Sync> FromRequestParts<T> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &T) -> Result<Self, Self::Rejection> {
        Ok(Self(address(parts)))
    }
}

pub use agentprocess_auth::{Acting, Via};

/// Who calls the REST surface: who acts, holding its place among its organization's
/// calls in progress until the handler that took it returns.
#[derive(Debug, Clone)]
pub struct ApiCaller {
    /// Who acts.
    pub acting: Acting,
    _admission: Arc<agentprocess_service::Admission>,
}

impl std::ops::Deref for ApiCaller {
    type Target = Acting;

    fn deref(&self) -> &Acting {
        &self.acting
    }
}

/// The synchronizer token of a session, made on first use.
pub async fn csrf_token(session: &Session) -> Result<String, ApiError> {
    if let Some(token) = session.get::<String>(CSRF).await.map_err(ApiError::session)? {
        return Ok(token);
    }
    let token = agentprocess_auth::secrets::new_token("");
    session.insert(CSRF, &token).await.map_err(ApiError::session)?;
    Ok(token)
}

/// The CSRF token of a form a visitor may send before signing in (sign-in, sign-up,
/// the development sign-in): the session's when it has one, else one bound to a
/// cookie, so showing the form stores no session.
pub async fn form_token(web: &Web, session: &Session, headers: &HeaderMap) -> Result<cookies::FormToken, ApiError> {
    match session.get::<String>(CSRF).await.map_err(ApiError::session)? {
        Some(token) => Ok(cookies::FormToken::of_session(token)),
        None => Ok(web.visitors.form_token(headers)),
    }
}

/// The CSRF check of a form from [`form_token`]: from this server's own origin, with
/// the session's token or the visitor cookie's.
pub async fn check_form_csrf(web: &Web, headers: &HeaderMap, session: &Session, echoed: &str) -> Result<(), ApiError> {
    if web.visitors.form_token_matches(headers, echoed) {
        return same_origin(headers, &web.origin);
    }
    check_csrf(headers, &web.origin, session, Some(echoed)).await
}

/// The CSRF check of an unsafe request that rides on a session: it must come from the
/// server's own origin (by `Origin`, or `Sec-Fetch-Site` when a browser sends no
/// Origin) and echo the session's synchronizer token.
pub async fn check_csrf(
    headers: &HeaderMap,
    origin: &str,
    session: &Session,
    echoed: Option<&str>,
) -> Result<(), ApiError> {
    same_origin(headers, origin)?;
    let expected = session.get::<String>(CSRF).await.map_err(ApiError::session)?;
    match (expected, echoed) {
        (Some(expected), Some(echoed)) if agentprocess_auth::secrets::same(&expected, echoed) => Ok(()),
        _ => Err(ApiError::forbidden(
            "the CSRF token is missing or wrong: send the session's token in X-CSRF-Token",
        )),
    }
}

/// Refuses a request that does not come from this server's own pages.
fn same_origin(headers: &HeaderMap, origin: &str) -> Result<(), ApiError> {
    let same_origin = match headers.get(header::ORIGIN).and_then(|value| value.to_str().ok()) {
        Some(sent) => sent == origin,
        None => headers
            .get("sec-fetch-site")
            .and_then(|value| value.to_str().ok())
            .is_some_and(|site| site == "same-origin"),
    };
    if !same_origin {
        return Err(ApiError::forbidden(
            "a request with a session cookie must come from this server's own pages (Origin)",
        ));
    }
    Ok(())
}

pub(crate) fn is_unsafe(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The identity signed in with `session`, if it is still active and its sign-in is
/// younger than the absolute timeout.
pub async fn signed_in(web: &Web, session: &Session) -> Result<Option<Identity>, ApiError> {
    let Some(signed_in) = session.get::<SignedIn>(SIGNED_IN).await.map_err(ApiError::session)? else {
        return Ok(None);
    };
    let absolute = i64::try_from(web.auth.settings().session_absolute.as_millis()).unwrap_or(i64::MAX);
    if web.now().as_millisecond().saturating_sub(signed_in.at) >= absolute {
        session.flush().await.map_err(ApiError::session)?;
        return Ok(None);
    }
    let identity = web
        .auth
        .session_identity(&signed_in.org, &signed_in.identity)
        .await
        .map_err(ApiError::from)?;
    if identity.is_none() {
        // Deactivated or removed: the session ends here.
        session.flush().await.map_err(ApiError::session)?;
    }
    Ok(identity)
}

/// Starts a signed-in session: a new id (so an id planted before sign-in is
/// worthless), a new CSRF token, and who signed in when. Answers with where to go:
/// `back` (the page that sent the person to sign in) when it is one of the server's
/// own, or their inbox.
pub async fn sign_in_session(
    session: &Session,
    identity: &Identity,
    now: jiff::Timestamp,
    back: Option<String>,
) -> Result<String, ApiError> {
    session.cycle_id().await.map_err(ApiError::session)?;
    session.remove::<String>(CSRF).await.map_err(ApiError::session)?;
    session
        .insert(
            SIGNED_IN,
            SignedIn {
                org: identity.org.clone(),
                identity: identity.id.clone(),
                at: now.as_millisecond(),
            },
        )
        .await
        .map_err(ApiError::session)?;
    csrf_token(session).await?;
    Ok(back
        .filter(|path| returns_to(path))
        .unwrap_or_else(|| "/inbox".to_owned()))
}

/// Whether a path is one the sign-in may send the person back to.
fn returns_to(path: &str) -> bool {
    path.starts_with("/oauth/authorize?")
        || path == "/inbox"
        || path.starts_with("/inbox?")
        || path.starts_with("/runs/")
        || path == "/processes"
        || path.starts_with("/processes/")
        || path == "/admin"
        || path.starts_with("/admin/")
}

/// The REST caller: an API token in `Authorization: Bearer`, or else the session
/// (CSRF-checked for unsafe methods), refused when it lacks what the endpoint's
/// [`Required`] check asks.
pub struct Authenticated(pub ApiCaller);

/// What an endpoint requires of its caller, put on the request where the endpoint is
/// registered and checked as soon as the caller is known.
#[derive(Clone, Copy)]
pub struct Required(pub fn(&Acting) -> Result<(), agentprocess_auth::Error>);

impl FromRequestParts<Arc<Web>> for Authenticated {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, web: &Arc<Web>) -> Result<Self, ApiError> {
        let address = address(parts);
        let bearer = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim);
        let writes = is_unsafe(&parts.method);
        let required = parts.extensions.get::<Required>().copied();
        let admitted = |identity: Identity, via: Via| async move {
            let admission = web.service.admit(&identity, writes).await?;
            let acting = Acting { identity, via, address };
            if let Some(Required(check)) = required {
                check(&acting)?;
            }
            Ok(Self(ApiCaller {
                acting,
                _admission: Arc::new(admission),
            }))
        };
        if let Some(token) = bearer {
            let Some((identity, scope)) = web.auth.api_caller(token, web.now()).await.map_err(ApiError::from)? else {
                return Err(ApiError::unauthenticated(
                    agentprocess_auth::token_kinds::refusal_on_rest(token),
                ));
            };
            return admitted(identity, Via::Token(scope)).await;
        }
        let session = Session::from_request_parts(parts, web)
            .await
            .map_err(|_| ApiError::unauthenticated("sign in, or send an API token"))?;
        let Some(identity) = signed_in(web, &session).await? else {
            return Err(ApiError::unauthenticated("sign in, or send an API token"));
        };
        if is_unsafe(&parts.method) {
            let echoed = parts.headers.get("x-csrf-token").and_then(|value| value.to_str().ok());
            check_csrf(&parts.headers, &web.origin, &session, echoed).await?;
        }
        admitted(identity, Via::Session).await
    }
}
