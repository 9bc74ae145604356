//! `/api/v1`: the REST admin surface. JSON in and out, errors as
//! `{ code, message, issues? }` with the HTTP status of each code.

mod agents;
mod apps;
mod clients;
mod limits;
pub(crate) mod openapi;
mod organization;
mod processes;
mod runs;

use std::marker::PhantomData;
use std::sync::Arc;

use agentprocess_auth::Role;

use agentprocess_operations::time_text;
use axum::Json;
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use serde::Serialize;
use serde::de::DeserializeOwned;
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;

use agentprocess_web::errors::ApiError;
use agentprocess_web::session::{Acting, ApiCaller, Authenticated, Via, Web};

pub(super) fn routes(web: Arc<Web>) -> Router {
    let (router, _) = api().split_for_parts();
    router
        .route(
            "/api/v1/openapi.json",
            axum::routing::get(|| async { Json(openapi::document()) }),
        )
        .with_state(web)
        .layer(axum::middleware::from_fn(agentprocess_web::errors::refuse_nul))
        .layer(axum::middleware::from_fn(agentprocess_web::errors::json_errors))
}

/// Every route of `/api/v1` with the document that describes it: each path is written
/// once, in its handler's `#[utoipa::path]`.
fn api() -> OpenApiRouter<Arc<Web>> {
    OpenApiRouter::with_openapi(openapi::Document::openapi())
        .merge(organization::routes())
        .merge(agents::routes())
        .merge(clients::routes())
        .merge(limits::routes())
        .merge(apps::routes())
        .merge(processes::routes())
        .merge(runs::routes())
}

/// The caller, refused unless they may do what `N` names: checked before anything else
/// of the request is read, so someone without the role learns nothing of what it
/// takes. The operation checks again; this only puts the refusal first.
struct Allowed<N>(ApiCaller, PhantomData<N>);

/// What an endpoint needs of its caller.
trait Need {
    fn check(acting: &Acting) -> Result<(), agentprocess_auth::Error>;
}

macro_rules! needs {
    ($($need:ident: $role:ident, $writes:literal;)*) => {$(
        struct $need;

        impl Need for $need {
            fn check(acting: &Acting) -> Result<(), agentprocess_auth::Error> {
                acting.require(Role::$role, $writes)
            }
        }
    )*};
}

needs! {
    AdminWrites: Admin, true;
    AdminReads: Admin, false;
    OperatorWrites: Operator, true;
    OperatorReads: Operator, false;
    MemberWrites: Member, true;
    MemberReads: Member, false;
}

/// A person at a browser: a token cannot make more of itself.
struct FromSession;

impl Need for FromSession {
    fn check(acting: &Acting) -> Result<(), agentprocess_auth::Error> {
        if acting.via == Via::Session {
            Ok(())
        } else {
            Err(agentprocess_auth::Error::forbidden(
                "API tokens are made from a signed-in session",
            ))
        }
    }
}

impl<N: Need> FromRequestParts<Arc<Web>> for Allowed<N> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, web: &Arc<Web>) -> Result<Self, ApiError> {
        let Authenticated(caller) = Authenticated::from_request_parts(parts, web).await?;
        N::check(&caller)?;
        Ok(Self(caller, PhantomData))
    }
}

/// A JSON body, or `invalid` naming what is wrong with it.
struct Body<T>(T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        Json::<T>::from_request(request, state)
            .await
            .map(|Json(value)| Self(value))
            .map_err(|rejection| {
                ApiError::invalid(
                    "the request body is not valid; nothing changed",
                    vec![rejection.body_text()],
                )
            })
    }
}

/// A query string, or `invalid` with `message` naming what is wrong with it.
fn query<T>(query: Result<Query<T>, QueryRejection>, message: &str) -> Result<T, ApiError> {
    query
        .map(|Query(value)| value)
        .map_err(|rejection| ApiError::invalid(message, vec![rejection.body_text()]))
}

/// 201 with a secret shown this once, never kept by a cache.
fn shown_once(view: impl Serialize) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let mut response = (axum::http::StatusCode::CREATED, Json(view)).into_response();
    response.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    response
}

/// A creating request's `Idempotency-Key`, when it sent one.
struct Key(Option<String>);

impl Key {
    fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Key {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let Some(value) = parts.headers.get("idempotency-key") else {
            return Ok(Self(None));
        };
        let key = value.to_str().map_err(|_| {
            ApiError::invalid(
                "the Idempotency-Key header is not usable",
                vec!["Idempotency-Key: use printable ASCII, a new UUID per request".to_owned()],
            )
        })?;
        Ok(Self(Some(key.to_owned())))
    }
}

/// A list.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct Items<T> {
    items: Vec<T>,
}
