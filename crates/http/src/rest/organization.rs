//! The organization, its domains, members, groups, API tokens and audit log.

use std::sync::Arc;

use agentprocess_auth::groups::NewGroup;
use agentprocess_auth::members::{Invite, MemberChange, OrganizationChange};
use agentprocess_auth::tokens::NewToken;
use agentprocess_auth::{Identity, Role};
use agentprocess_store::{AuditFilter, AuditRow, Domain, Group, Organization, TokenRow};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use tower_sessions::Session;

use super::{Items, body, idempotent, replayed, time_text};
use agentprocess_auth::idempotency::Operation;
use agentprocess_web::errors::ApiError;
use agentprocess_web::session::{ApiCaller, Authenticated, Via, Web, csrf_token};

/// The most audit entries one page holds.
const AUDIT_PAGE: u32 = 200;

pub(super) fn routes() -> Router<Arc<Web>> {
    Router::new()
        .route("/api/v1/session", get(me))
        .route("/api/v1/organization", get(organization).patch(change_organization))
        .route("/api/v1/organization/sign-in", axum::routing::put(set_sign_in))
        .route("/api/v1/organization/domains", axum::routing::post(add_domain))
        .route("/api/v1/organization/domains/{domain}", delete(remove_domain))
        .route(
            "/api/v1/organization/domains/{domain}/verify",
            axum::routing::post(verify_domain),
        )
        .route("/api/v1/members", get(members).post(invite))
        .route("/api/v1/members/{id}", get(member).patch(change_member))
        .route("/api/v1/groups", get(groups).post(create_group))
        .route(
            "/api/v1/groups/{id}",
            get(group).patch(rename_group).delete(delete_group),
        )
        .route("/api/v1/groups/{id}/claim-values", axum::routing::put(set_claim_values))
        .route(
            "/api/v1/groups/{id}/members/{member}",
            axum::routing::put(add_to_group).delete(remove_from_group),
        )
        .route("/api/v1/tokens", get(tokens).post(create_token))
        .route("/api/v1/tokens/{id}", delete(revoke_token))
        .route("/api/v1/audit", get(audit))
        .route("/api/v1/audit/export", get(audit_export))
}

/// A person, as the REST surface shows them.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct MemberView {
    id: String,
    email: Option<String>,
    name: String,
    role: Option<&'static str>,
    groups: Vec<String>,
    active: bool,
}

impl From<&Identity> for MemberView {
    fn from(identity: &Identity) -> Self {
        Self {
            id: identity.id.clone(),
            email: identity.person.clone(),
            name: identity.name.clone(),
            role: identity.role.map(Role::as_str),
            groups: identity.groups.clone(),
            active: identity.deactivated_at.is_none(),
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionView {
    organization: String,
    slug: String,
    member: MemberView,
    via: &'static str,
    /// The token to send in `X-CSRF-Token` with every change, for a session.
    #[serde(skip_serializing_if = "Option::is_none")]
    csrf_token: Option<String>,
}

#[utoipa::path(
    get,
    path = "/api/v1/session",
    tag = "session",
    responses((status = 200, description = "Who is calling", body = SessionView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("member")))
)]
pub(super) async fn me(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    session: Session,
) -> Result<Json<SessionView>, ApiError> {
    let organization = web.auth.organization(caller.org()).await?;
    let csrf_token = match caller.via {
        Via::Session => Some(csrf_token(&session).await?),
        Via::Token(_) => None,
    };
    Ok(Json(SessionView {
        organization: organization.name,
        slug: organization.slug,
        member: MemberView::from(&caller.identity),
        via: match caller.via {
            Via::Session => "session",
            Via::Token(_) => "token",
        },
        csrf_token,
    }))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct ProviderView {
    issuer: String,
    client_id: String,
    has_client_secret: bool,
    redirect_uri: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct DomainView {
    domain: String,
    verified: bool,
    /// The DNS TXT record that proves ownership.
    txt_record: TxtRecord,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct TxtRecord {
    name: String,
    value: String,
}

impl From<&Domain> for DomainView {
    fn from(domain: &Domain) -> Self {
        Self {
            domain: domain.domain.clone(),
            verified: domain.verified_at.is_some(),
            txt_record: TxtRecord {
                name: format!("_agentprocess.{}", domain.domain),
                value: domain.token.clone(),
            },
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct OrganizationView {
    id: String,
    slug: String,
    name: String,
    auto_provision: bool,
    groups_claim: Option<String>,
    revision: i64,
    sign_in: Option<ProviderView>,
    domains: Vec<DomainView>,
}

async fn organization_view(web: &Web, organization: Organization) -> Result<Response, ApiError> {
    let provider = web.auth.provider_summary(&organization.id).await?;
    let domains = web.auth.domains(&organization.id).await?;
    let revision = organization.revision;
    let view = OrganizationView {
        id: organization.id,
        slug: organization.slug,
        name: organization.name,
        auto_provision: organization.auto_provision,
        groups_claim: organization.groups_claim,
        revision,
        sign_in: provider.map(|(issuer, client_id, has_client_secret)| ProviderView {
            issuer,
            client_id,
            has_client_secret,
            redirect_uri: web.auth.oidc().redirect_uri().to_owned(),
        }),
        domains: domains.iter().map(DomainView::from).collect(),
    };
    let mut response = Json(view).into_response();
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{revision}\"")) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    Ok(response)
}

#[utoipa::path(
    get,
    path = "/api/v1/organization",
    tag = "organization",
    responses((status = 200, description = "The organization, with its revision as ETag", body = OrganizationView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("member")))
)]
pub(super) async fn organization(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Response, ApiError> {
    let organization = web.auth.organization(caller.org()).await?;
    organization_view(&web, organization).await
}

/// The revision an `If-Match` names, if any.
fn if_match(headers: &HeaderMap) -> Result<Option<i64>, ApiError> {
    let Some(value) = headers.get(header::IF_MATCH) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .map(|text| text.trim().trim_start_matches("W/").trim_matches('"'))
        .and_then(|text| text.parse().ok())
        .map(Some)
        .ok_or_else(|| ApiError::invalid("If-Match must be an ETag this surface gave", Vec::new()))
}

#[utoipa::path(
    patch,
    path = "/api/v1/organization",
    tag = "organization",
    params(("If-Match" = Option<String>, Header, description = "The ETag read; refused with conflict when it changed meanwhile")),
    request_body = agentprocess_auth::members::OrganizationChange,
    responses((status = 200, description = "The organization as changed", body = OrganizationView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn change_organization(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    headers: HeaderMap,
    change: Result<Json<OrganizationChange>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(Role::Admin, true)?;
    let change = body(change)?;
    let organization = web
        .auth
        .change_organization(&caller.actor(), caller.org(), &change, if_match(&headers)?, web.now())
        .await?;
    organization_view(&web, organization).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct SignIn {
    /// The provider's issuer URL.
    #[schema(pattern = "^https://[^\\s]+$")]
    issuer: String,
    /// The client id registered there.
    #[schema(min_length = 1)]
    client_id: String,
    /// Absent or empty for a public client.
    #[serde(default)]
    client_secret: Option<String>,
}

#[utoipa::path(
    put,
    path = "/api/v1/organization/sign-in",
    tag = "organization",
    request_body = SignIn,
    responses((status = 200, description = "The organization with its new provider", body = OrganizationView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn set_sign_in(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    sign_in: Result<Json<SignIn>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(Role::Admin, true)?;
    let sign_in = body(sign_in)?;
    web.auth
        .set_provider(
            &caller.actor(),
            caller.org(),
            &sign_in.issuer,
            &sign_in.client_id,
            sign_in.client_secret.as_deref(),
            web.now(),
        )
        .await?;
    let organization = web.auth.organization(caller.org()).await?;
    organization_view(&web, organization).await
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewDomain {
    /// A domain name, such as `acme.com`.
    #[schema(pattern = "^[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+$", max_length = 253)]
    domain: String,
}

#[utoipa::path(
    post,
    path = "/api/v1/organization/domains",
    tag = "organization",
    params(("Idempotency-Key" = Option<String>, Header, description = "Send the request again with the same key to get its first answer, never a second effect")),
    request_body = NewDomain,
    responses((status = 201, description = "The domain and the TXT record that proves it", body = DomainView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn add_domain(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    headers: HeaderMap,
    new: Result<Json<NewDomain>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(Role::Admin, true)?;
    let new = body(new)?;
    let request = idempotent(&web, &headers, &caller, Operation::DomainAdd, &new)?;
    let domain = match replayed(&web, request.as_ref(), caller.org()).await? {
        Some(domain) => domain,
        None => {
            web.auth
                .add_domain(&caller.actor(), caller.org(), &new.domain, web.now(), request.as_ref())
                .await?
        }
    };
    Ok((StatusCode::CREATED, Json(DomainView::from(&domain))).into_response())
}

#[utoipa::path(
    post,
    path = "/api/v1/organization/domains/{domain}/verify",
    tag = "organization",
    params(("domain" = String, Path, description = "The domain")),
    responses((status = 200, description = "The domain, verified", body = DomainView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn verify_domain(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(domain): Path<String>,
) -> Result<Json<DomainView>, ApiError> {
    caller.require(Role::Admin, true)?;
    let domain = web
        .auth
        .verify_domain(&caller.actor(), caller.org(), &domain, web.now())
        .await?;
    Ok(Json(DomainView::from(&domain)))
}

#[utoipa::path(
    delete,
    path = "/api/v1/organization/domains/{domain}",
    tag = "organization",
    params(("domain" = String, Path, description = "The domain")),
    responses((status = 204, description = "Removed"), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn remove_domain(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(domain): Path<String>,
) -> Result<StatusCode, ApiError> {
    caller.require(Role::Admin, true)?;
    web.auth
        .remove_domain(&caller.actor(), caller.org(), &domain, web.now())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    get,
    path = "/api/v1/members",
    tag = "members",
    responses((status = 200, description = "The members", body = Items<MemberView>), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("operator")))
)]
pub(super) async fn members(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<Items<MemberView>>, ApiError> {
    caller.require(Role::Operator, false)?;
    let members = web.auth.members(caller.org()).await?;
    Ok(Json(Items {
        items: members.iter().map(MemberView::from).collect(),
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/members/{id}",
    tag = "members",
    params(("id" = String, Path, description = "The id")),
    responses((status = 200, description = "A member", body = MemberView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("operator")))
)]
pub(super) async fn member(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
) -> Result<Json<MemberView>, ApiError> {
    if id != caller.identity.id {
        caller.require(Role::Operator, false)?;
    }
    let member = web.auth.member(caller.org(), &id).await?;
    Ok(Json(MemberView::from(&member)))
}

#[utoipa::path(
    post,
    path = "/api/v1/members",
    tag = "members",
    params(("Idempotency-Key" = Option<String>, Header, description = "Send the request again with the same key to get its first answer, never a second effect")),
    request_body = agentprocess_auth::members::Invite,
    responses((status = 201, description = "The invited member", body = MemberView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn invite(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    headers: HeaderMap,
    invite: Result<Json<Invite>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(Role::Admin, true)?;
    let invite = body(invite)?;
    let request = idempotent(&web, &headers, &caller, Operation::MemberInvite, &invite)?;
    let member = match replayed(&web, request.as_ref(), caller.org()).await? {
        Some(member) => member,
        None => {
            web.auth
                .invite(&caller.actor(), caller.org(), &invite, web.now(), request.as_ref())
                .await?
        }
    };
    Ok((StatusCode::CREATED, Json(MemberView::from(&member))).into_response())
}

#[utoipa::path(
    patch,
    path = "/api/v1/members/{id}",
    tag = "members",
    params(("id" = String, Path, description = "The id")),
    request_body = agentprocess_auth::members::MemberChange,
    responses((status = 200, description = "The member as changed", body = MemberView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn change_member(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
    change: Result<Json<MemberChange>, JsonRejection>,
) -> Result<Json<MemberView>, ApiError> {
    caller.require(Role::Admin, true)?;
    let change = body(change)?;
    let member = web
        .auth
        .change_member(&caller.actor(), caller.org(), &id, &change, web.now())
        .await?;
    Ok(Json(MemberView::from(&member)))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct GroupView {
    id: String,
    name: Option<String>,
    /// The values of the provider's groups claim that mean this group, beside its id.
    claim_values: Vec<String>,
    members: Vec<String>,
}

impl From<Group> for GroupView {
    fn from(group: Group) -> Self {
        Self {
            id: group.id,
            name: group.name,
            claim_values: group.claim_values,
            members: group.members,
        }
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/groups",
    tag = "groups",
    responses((status = 200, description = "The groups", body = Items<GroupView>), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("member")))
)]
pub(super) async fn groups(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<Items<GroupView>>, ApiError> {
    caller.require(Role::Member, false)?;
    let groups = web.auth.groups(caller.org()).await?;
    Ok(Json(Items {
        items: groups.into_iter().map(GroupView::from).collect(),
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/groups/{id}",
    tag = "groups",
    params(("id" = String, Path, description = "The id")),
    responses((status = 200, description = "A group", body = GroupView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("member")))
)]
pub(super) async fn group(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
) -> Result<Json<GroupView>, ApiError> {
    caller.require(Role::Member, false)?;
    Ok(Json(GroupView::from(web.auth.group(caller.org(), &id).await?)))
}

#[utoipa::path(
    post,
    path = "/api/v1/groups",
    tag = "groups",
    params(("Idempotency-Key" = Option<String>, Header, description = "Send the request again with the same key to get its first answer, never a second effect")),
    request_body = agentprocess_auth::groups::NewGroup,
    responses((status = 201, description = "The group", body = GroupView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn create_group(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    headers: HeaderMap,
    new: Result<Json<NewGroup>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(Role::Admin, true)?;
    let new = body(new)?;
    let request = idempotent(&web, &headers, &caller, Operation::GroupCreate, &new)?;
    let group = match replayed(&web, request.as_ref(), caller.org()).await? {
        Some(group) => group,
        None => {
            web.auth
                .create_group(&caller.actor(), caller.org(), &new, web.now(), request.as_ref())
                .await?
        }
    };
    Ok((StatusCode::CREATED, Json(GroupView::from(group))).into_response())
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GroupName {
    name: Option<String>,
}

#[utoipa::path(
    patch,
    path = "/api/v1/groups/{id}",
    tag = "groups",
    params(("id" = String, Path, description = "The id")),
    request_body = GroupName,
    responses((status = 200, description = "The group as renamed", body = GroupView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn rename_group(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
    name: Result<Json<GroupName>, JsonRejection>,
) -> Result<Json<GroupView>, ApiError> {
    caller.require(Role::Admin, true)?;
    let name = body(name)?;
    let group = web
        .auth
        .rename_group(&caller.actor(), caller.org(), &id, name.name.as_deref(), web.now())
        .await?;
    Ok(Json(GroupView::from(group)))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ClaimValues {
    /// Values of the groups claim that mean this group; empty, its id alone does.
    #[schema(max_items = 50)]
    values: Vec<String>,
}

#[utoipa::path(
    put,
    path = "/api/v1/groups/{id}/claim-values",
    tag = "groups",
    params(("id" = String, Path, description = "The id")),
    request_body = ClaimValues,
    responses((status = 200, description = "The group", body = GroupView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn set_claim_values(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
    values: Result<Json<ClaimValues>, JsonRejection>,
) -> Result<Json<GroupView>, ApiError> {
    caller.require(Role::Admin, true)?;
    let values = body(values)?;
    let group = web
        .auth
        .set_claim_values(&caller.actor(), caller.org(), &id, &values.values, web.now())
        .await?;
    Ok(Json(GroupView::from(group)))
}

#[utoipa::path(
    delete,
    path = "/api/v1/groups/{id}",
    tag = "groups",
    params(("id" = String, Path, description = "The id")),
    responses((status = 204, description = "Deleted"), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn delete_group(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    caller.require(Role::Admin, true)?;
    web.auth
        .delete_group(&caller.actor(), caller.org(), &id, web.now())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn membership(
    web: &Web,
    caller: &ApiCaller,
    group: &str,
    member: &str,
    inside: bool,
) -> Result<Json<GroupView>, ApiError> {
    caller.require(Role::Admin, true)?;
    let group = web
        .auth
        .set_membership(&caller.actor(), caller.org(), group, member, inside, web.now())
        .await?;
    Ok(Json(GroupView::from(group)))
}

#[utoipa::path(
    put,
    path = "/api/v1/groups/{id}/members/{member}",
    tag = "groups",
    params(("id" = String, Path, description = "The id"), ("member" = String, Path, description = "The member's id")),
    responses((status = 200, description = "The group", body = GroupView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn add_to_group(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((group, member)): Path<(String, String)>,
) -> Result<Json<GroupView>, ApiError> {
    membership(&web, &caller, &group, &member, true).await
}

#[utoipa::path(
    delete,
    path = "/api/v1/groups/{id}/members/{member}",
    tag = "groups",
    params(("id" = String, Path, description = "The id"), ("member" = String, Path, description = "The member's id")),
    responses((status = 200, description = "The group", body = GroupView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn remove_from_group(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((group, member)): Path<(String, String)>,
) -> Result<Json<GroupView>, ApiError> {
    membership(&web, &caller, &group, &member, false).await
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct TokenView {
    id: String,
    name: Option<String>,
    scope: Option<String>,
    owner: String,
    created_at: String,
    expires_at: Option<String>,
    revoked_at: Option<String>,
    /// The token itself: only in the answer that made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
}

impl TokenView {
    /// The answer that made a token: 201 with the token itself, this once, and never
    /// kept by a cache.
    pub(super) fn shown_once(row: &TokenRow, token: String) -> Response {
        let mut view = Self::from(row);
        view.token = Some(token);
        super::shown_once(view)
    }
}

impl From<&TokenRow> for TokenView {
    fn from(row: &TokenRow) -> Self {
        Self {
            id: row.id.clone(),
            name: row.name.clone(),
            scope: row.scope.clone(),
            owner: row.identity.clone(),
            created_at: time_text(row.created_at),
            expires_at: row.expires_at.map(time_text),
            revoked_at: row.revoked_at.map(time_text),
            token: None,
        }
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/tokens",
    tag = "tokens",
    responses((status = 200, description = "API tokens (all for admins, else the caller's own)", body = Items<TokenView>), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("member")))
)]
pub(super) async fn tokens(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<Items<TokenView>>, ApiError> {
    let admin = caller.identity.has_role(Role::Admin);
    let tokens = web.auth.tokens(caller.org()).await?;
    Ok(Json(Items {
        items: tokens
            .iter()
            .filter(|token| admin || token.identity == caller.identity.id)
            .map(TokenView::from)
            .collect(),
    }))
}

#[utoipa::path(
    post,
    path = "/api/v1/tokens",
    tag = "tokens",
    params(("Idempotency-Key" = Option<String>, Header, description = "Send the request again with the same key to get its first answer, never a second effect")),
    request_body = agentprocess_auth::tokens::NewToken,
    responses((status = 201, description = "The token, shown this once", body = TokenView), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("member")))
)]
pub(super) async fn create_token(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    headers: HeaderMap,
    new: Result<Json<NewToken>, JsonRejection>,
) -> Result<Response, ApiError> {
    // Only a person at a browser makes tokens: a token cannot make more of itself.
    if caller.via != Via::Session {
        return Err(ApiError::forbidden("API tokens are made from a signed-in session"));
    }
    let new = body(new)?;
    let request = idempotent(
        &web,
        &headers,
        &caller,
        Operation::TokenCreate,
        &(&caller.identity.id, &new),
    )?;
    let (row, token) = match replayed(&web, request.as_ref(), caller.org()).await? {
        Some(made) => made,
        None => {
            web.auth
                .create_token(&caller.actor(), &caller.identity, &new, web.now(), request.as_ref())
                .await?
        }
    };
    Ok(TokenView::shown_once(&row, token))
}

#[utoipa::path(
    delete,
    path = "/api/v1/tokens/{id}",
    tag = "tokens",
    params(("id" = String, Path, description = "The id")),
    responses((status = 204, description = "Revoked"), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("member")))
)]
pub(super) async fn revoke_token(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    caller.require(Role::Member, true)?;
    web.auth
        .revoke_token(&caller.actor(), &caller.identity, &id, web.now())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct AuditQuery {
    since: Option<String>,
    until: Option<String>,
    actor: Option<String>,
    kind: Option<String>,
    target: Option<String>,
    cursor: Option<String>,
    /// Page size, 1 to 200 (50).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct AuditView {
    id: String,
    at: String,
    actor: String,
    kind: String,
    target: Option<String>,
    detail: serde_json::Value,
    address: Option<String>,
}

impl From<AuditRow> for AuditView {
    fn from(row: AuditRow) -> Self {
        Self {
            at: time_text(row.at),
            detail: serde_json::from_str(&row.detail).unwrap_or(serde_json::Value::Null),
            id: row.id,
            actor: row.actor,
            kind: row.kind,
            target: row.target,
            address: row.address,
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct AuditPage {
    items: Vec<AuditView>,
    next_cursor: Option<String>,
}

fn audit_filter(query: AuditQuery) -> Result<AuditFilter, ApiError> {
    let mut issues = Vec::new();
    let mut at = |name: &str, text: Option<String>| {
        text.and_then(|text| match text.parse::<jiff::Timestamp>() {
            Ok(at) => Some(at.as_millisecond()),
            Err(_) => {
                issues.push(format!("{name}: {text:?} is not an RFC 3339 date-time"));
                None
            }
        })
    };
    let since = at("since", query.since);
    let until = at("until", query.until);
    let limit = query.limit.unwrap_or(50);
    if !(1..=AUDIT_PAGE).contains(&limit) {
        issues.push(format!("limit: {limit} is not between 1 and {AUDIT_PAGE}"));
    }
    if !issues.is_empty() {
        return Err(ApiError::invalid("the query has problems", issues));
    }
    Ok(AuditFilter {
        after: query.cursor,
        since,
        until,
        actor: query.actor,
        kind: query.kind,
        target: query.target,
        limit,
    })
}

#[utoipa::path(
    get,
    path = "/api/v1/audit",
    tag = "audit",
    params(AuditQuery),
    responses((status = 200, description = "Entries, oldest first", body = AuditPage), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn audit(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    query: Result<Query<AuditQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<AuditPage>, ApiError> {
    caller.require(Role::Admin, false)?;
    let query = query.map_err(|rejection| ApiError::invalid("the query is not valid", vec![rejection.body_text()]))?;
    let filter = audit_filter(query.0)?;
    let (rows, more) = web.auth.audit(caller.org(), &filter).await?;
    let next_cursor = if more {
        rows.last().map(|row| row.id.clone())
    } else {
        None
    };
    Ok(Json(AuditPage {
        items: rows.into_iter().map(AuditView::from).collect(),
        next_cursor,
    }))
}

/// The whole log (or the filtered part) as JSON lines, read page by page.
#[utoipa::path(
    get,
    path = "/api/v1/audit/export",
    tag = "audit",
    params(AuditQuery),
    responses((status = 200, description = "Entries as JSON lines", body = String, content_type = "application/x-ndjson"), (status = "default", description = "A refusal, in the protocol's error body", body = agentprocess_web::errors::ErrorBody)),
    extensions(("x-agentprocess-role" = json!("admin")))
)]
pub(super) async fn audit_export(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    query: Result<Query<AuditQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    caller.require(Role::Admin, false)?;
    let query = query.map_err(|rejection| ApiError::invalid("the query is not valid", vec![rejection.body_text()]))?;
    let mut filter = audit_filter(AuditQuery {
        limit: Some(AUDIT_PAGE),
        ..query.0
    })?;
    let mut lines = String::new();
    loop {
        let (rows, more) = web.auth.audit(caller.org(), &filter).await?;
        filter.after = rows.last().map(|row| row.id.clone());
        for row in rows {
            lines.push_str(&serde_json::to_string(&AuditView::from(row)).unwrap_or_default());
            lines.push('\n');
        }
        if !more {
            break;
        }
    }
    let mut response = lines.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/x-ndjson"));
    Ok(response)
}
