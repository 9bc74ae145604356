//! `/api/v1`: the REST admin surface. JSON in and out, errors as
//! `{ code, message, issues? }` with the HTTP status of each code.

mod agents;
mod apps;
mod clients;
mod limits;
mod messages;
pub(crate) mod openapi;
mod organization;
mod processes;
mod runs;

use std::sync::Arc;

use agentprocess_auth::Role;

use agentprocess_operations::time_text;
use axum::Json;
use axum::Router;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use utoipa::OpenApi as _;
use utoipa::openapi::extensions::ExtensionsBuilder;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

use agentprocess_web::errors::ApiError;
use agentprocess_web::session::{Acting, Required, Web};

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
        .merge(messages::routes())
        .merge(apps::routes())
        .merge(processes::routes())
        .merge(runs::routes())
}

/// What an endpoint needs of its caller, said once where the endpoint is registered
/// ([`needs`]): the document names its role, and the caller is refused before
/// anything else of the request is read, so someone without the role learns nothing of
/// what it takes. The operation checks again.
trait Need: 'static {
    /// The role the document names (`x-agentprocess-role`).
    const ROLE: Role;

    fn check(acting: &Acting) -> Result<(), agentprocess_auth::Error>;
}

macro_rules! needs {
    ($($need:ident: $role:ident, $writes:literal;)*) => {$(
        struct $need;

        impl Need for $need {
            const ROLE: Role = Role::$role;

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

/// Any caller: what they may see is the operation's to decide (their own tokens, the
/// session they called with).
struct Anyone;

impl Need for Anyone {
    const ROLE: Role = Role::Member;

    fn check(_: &Acting) -> Result<(), agentprocess_auth::Error> {
        Ok(())
    }
}

/// An operator, or a member reading their own entry: the operation decides, for it
/// depends on whom is read.
struct SelfOrOperator;

impl Need for SelfOrOperator {
    const ROLE: Role = Role::Operator;

    fn check(_: &Acting) -> Result<(), agentprocess_auth::Error> {
        Ok(())
    }
}

/// A person at a browser: a token cannot make more of itself.
struct FromSession;

impl Need for FromSession {
    const ROLE: Role = Role::Member;

    fn check(acting: &Acting) -> Result<(), agentprocess_auth::Error> {
        agentprocess_operations::tokens::from_session(acting)
    }
}

/// `routes` (one endpoint) needing what `N` names: in the document as its role, and
/// checked by `Authenticated` as it admits the caller.
fn needs<N: Need>(routes: UtoipaMethodRouter<Arc<Web>>) -> UtoipaMethodRouter<Arc<Web>> {
    let (schemas, mut paths, router) = routes;
    openapi::each_operation(&mut paths, |operation| {
        let role = ExtensionsBuilder::new()
            .add("x-agentprocess-role", N::ROLE.as_str())
            .build();
        operation.extensions.get_or_insert_with(Default::default).merge(role);
    });
    let router = router.route_layer(axum::middleware::from_fn(
        |mut request: Request, next: axum::middleware::Next| async move {
            request.extensions_mut().insert(Required(N::check));
            next.run(request).await
        },
    ));
    (schemas, paths, router)
}

/// A JSON body, or `invalid` naming what is wrong with it.
struct Body<T>(T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        Json::<T>::from_request(request, state)
            .await
            .map(|Json(value)| Self(value))
            .map_err(|rejection| ApiError::body(&rejection))
    }
}

/// A query string, or `invalid` with `message` naming what is wrong with it.
fn query<T>(query: Result<Query<T>, QueryRejection>, message: &str) -> Result<T, ApiError> {
    query
        .map(|Query(value)| value)
        .map_err(|rejection| ApiError::invalid(message, vec![rejection.body_text()]))
}

/// 201 with a secret shown this once, never kept by a cache.
fn shown_once(view: impl Serialize) -> Response {
    let mut response = Created(view).into_response();
    response.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    response
}

/// A creating request's `Idempotency-Key`, when it sent one.
#[derive(utoipa::IntoParams)]
#[into_params(names("Idempotency-Key"), parameter_in = Header)]
struct Key(
    /// Send the request again with the same key to get its first answer, never a second effect
    Option<String>,
);

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

/// The `{id}` of a path that names one thing.
#[derive(utoipa::IntoParams)]
#[into_params(names("id"), parameter_in = Path)]
struct Id(
    /// The id
    String,
);

impl<S: Send + Sync> FromRequestParts<S> for Id {
    type Rejection = PathRejection;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PathRejection> {
        let Path(id) = Path::<String>::from_request_parts(parts, state).await?;
        Ok(Self(id))
    }
}

/// 201 with what was made.
struct Created<T>(T);

impl<T: Serialize> IntoResponse for Created<T> {
    fn into_response(self) -> Response {
        (StatusCode::CREATED, Json(self.0)).into_response()
    }
}

/// A list.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct Items<T> {
    items: Vec<T>,
}

impl<T> FromIterator<T> for Items<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Self {
            items: iter.into_iter().collect(),
        }
    }
}
