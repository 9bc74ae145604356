//! The organization, its domains, members, groups, API tokens and audit log.

use std::sync::Arc;

use agentprocess_auth::groups::NewGroup;
use agentprocess_auth::members::{Invite, MemberChange, OrganizationChange};
use agentprocess_auth::tokens::NewToken;
use agentprocess_auth::{Identity, Role};
use agentprocess_operations::audit::AuditQuery;
use agentprocess_operations::groups::{ClaimValues, GroupName};
use agentprocess_operations::organization::{NewDomain, OrganizationState, SignIn};
use agentprocess_store::{AuditRow, Domain, Group, TokenRow};
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use tower_sessions::Session;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{
    AdminReads, AdminWrites, Anyone, Body, Created, FromSession, Id, Items, Key, MemberReads, MemberWrites,
    OperatorReads, SelfOrOperator, needs, query, time_text,
};
use agentprocess_web::errors::ApiError;
use agentprocess_web::session::{Authenticated, Via, Web, csrf_token};

pub(super) fn routes() -> OpenApiRouter<Arc<Web>> {
    OpenApiRouter::new()
        .routes(needs::<Anyone>(routes!(me)))
        .routes(needs::<Anyone>(routes!(organization)))
        .routes(needs::<AdminWrites>(routes!(change_organization)))
        .routes(needs::<AdminWrites>(routes!(set_sign_in)))
        .routes(needs::<AdminWrites>(routes!(add_domain)))
        .routes(needs::<AdminWrites>(routes!(remove_domain)))
        .routes(needs::<AdminWrites>(routes!(verify_domain)))
        .routes(needs::<OperatorReads>(routes!(members)))
        .routes(needs::<AdminWrites>(routes!(invite)))
        .routes(needs::<SelfOrOperator>(routes!(member)))
        .routes(needs::<AdminWrites>(routes!(change_member)))
        .routes(needs::<MemberReads>(routes!(groups)))
        .routes(needs::<AdminWrites>(routes!(create_group)))
        .routes(needs::<MemberReads>(routes!(group)))
        .routes(needs::<AdminWrites>(routes!(rename_group)))
        .routes(needs::<AdminWrites>(routes!(delete_group)))
        .routes(needs::<AdminWrites>(routes!(set_claim_values)))
        .routes(needs::<AdminWrites>(routes!(add_to_group)))
        .routes(needs::<AdminWrites>(routes!(remove_from_group)))
        .routes(needs::<Anyone>(routes!(tokens)))
        .routes(needs::<FromSession>(routes!(create_token)))
        .routes(needs::<MemberWrites>(routes!(revoke_token)))
        .routes(needs::<AdminReads>(routes!(audit)))
        .routes(needs::<AdminReads>(routes!(audit_export)))
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
    responses((status = 200, description = "Who is calling", body = SessionView))
)]
pub(super) async fn me(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    session: Session,
) -> Result<Json<SessionView>, ApiError> {
    let organization = web.auth.organization(caller.org()).await?;
    let csrf_token = match caller.via {
        Via::Session => Some(csrf_token(&session).await?),
        Via::Token(_) | Via::CommandLine => None,
    };
    Ok(Json(SessionView {
        organization: organization.name,
        slug: organization.slug,
        member: MemberView::from(&caller.identity),
        via: caller.via.as_str(),
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

/// The organization, with its revision as `ETag`.
fn organization_view(state: OrganizationState) -> Response {
    let OrganizationState {
        organization,
        provider,
        domains,
    } = state;
    let revision = organization.revision;
    let view = OrganizationView {
        id: organization.id,
        slug: organization.slug,
        name: organization.name,
        auto_provision: organization.auto_provision,
        groups_claim: organization.groups_claim,
        revision,
        sign_in: provider.map(|provider| ProviderView {
            issuer: provider.issuer,
            client_id: provider.client_id,
            has_client_secret: provider.has_client_secret,
            redirect_uri: provider.redirect_uri,
        }),
        domains: domains.iter().map(DomainView::from).collect(),
    };
    let mut response = Json(view).into_response();
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{revision}\"")) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
}

#[utoipa::path(
    get,
    path = "/api/v1/organization",
    tag = "organization",
    responses((status = 200, description = "The organization, with its revision as ETag", body = OrganizationView))
)]
pub(super) async fn organization(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Response, ApiError> {
    Ok(organization_view(web.operations.organization(&caller).await?))
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
    responses((status = 200, description = "The organization as changed", body = OrganizationView))
)]
pub(super) async fn change_organization(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    headers: HeaderMap,
    Body(change): Body<OrganizationChange>,
) -> Result<Response, ApiError> {
    let state = web
        .operations
        .change_organization(&caller, &change, if_match(&headers)?)
        .await?;
    Ok(organization_view(state))
}

#[utoipa::path(
    put,
    path = "/api/v1/organization/sign-in",
    tag = "organization",
    request_body = agentprocess_operations::organization::SignIn,
    responses((status = 200, description = "The organization with its new provider", body = OrganizationView))
)]
pub(super) async fn set_sign_in(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Body(sign_in): Body<SignIn>,
) -> Result<Response, ApiError> {
    Ok(organization_view(web.operations.set_sign_in(&caller, &sign_in).await?))
}

#[utoipa::path(
    post,
    path = "/api/v1/organization/domains",
    tag = "organization",
    params(Key),
    request_body = agentprocess_operations::organization::NewDomain,
    responses((status = 201, description = "The domain and the TXT record that proves it", body = DomainView))
)]
pub(super) async fn add_domain(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    key: Key,
    Body(new): Body<NewDomain>,
) -> Result<Created<DomainView>, ApiError> {
    let domain = web.operations.add_domain(&caller, &new, key.as_deref()).await?;
    Ok(Created(DomainView::from(&domain)))
}

#[utoipa::path(
    post,
    path = "/api/v1/organization/domains/{domain}/verify",
    tag = "organization",
    params(("domain" = String, Path, description = "The domain")),
    responses((status = 200, description = "The domain, verified", body = DomainView))
)]
pub(super) async fn verify_domain(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(domain): Path<String>,
) -> Result<Json<DomainView>, ApiError> {
    let domain = web.operations.verify_domain(&caller, &domain).await?;
    Ok(Json(DomainView::from(&domain)))
}

#[utoipa::path(
    delete,
    path = "/api/v1/organization/domains/{domain}",
    tag = "organization",
    params(("domain" = String, Path, description = "The domain")),
    responses((status = 204, description = "Removed"))
)]
pub(super) async fn remove_domain(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(domain): Path<String>,
) -> Result<StatusCode, ApiError> {
    web.operations.remove_domain(&caller, &domain).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    get,
    path = "/api/v1/members",
    tag = "members",
    responses((status = 200, description = "The members", body = Items<MemberView>))
)]
pub(super) async fn members(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<Items<MemberView>>, ApiError> {
    let members = web.operations.members(&caller).await?;
    Ok(Json(members.iter().map(MemberView::from).collect()))
}

#[utoipa::path(
    get,
    path = "/api/v1/members/{id}",
    tag = "members",
    params(Id),
    responses((status = 200, description = "A member", body = MemberView))
)]
pub(super) async fn member(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Id(id): Id,
) -> Result<Json<MemberView>, ApiError> {
    let member = web.operations.member(&caller, &id).await?;
    Ok(Json(MemberView::from(&member)))
}

#[utoipa::path(
    post,
    path = "/api/v1/members",
    tag = "members",
    params(Key),
    request_body = agentprocess_auth::members::Invite,
    responses((status = 201, description = "The invited member", body = MemberView))
)]
pub(super) async fn invite(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    key: Key,
    Body(invite): Body<Invite>,
) -> Result<Created<MemberView>, ApiError> {
    let member = web.operations.invite(&caller, &invite, key.as_deref()).await?;
    Ok(Created(MemberView::from(&member)))
}

#[utoipa::path(
    patch,
    path = "/api/v1/members/{id}",
    tag = "members",
    params(Id),
    request_body = agentprocess_auth::members::MemberChange,
    responses((status = 200, description = "The member as changed", body = MemberView))
)]
pub(super) async fn change_member(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Id(id): Id,
    Body(change): Body<MemberChange>,
) -> Result<Json<MemberView>, ApiError> {
    let member = web.operations.change_member(&caller, &id, &change).await?;
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
    responses((status = 200, description = "The groups", body = Items<GroupView>))
)]
pub(super) async fn groups(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<Items<GroupView>>, ApiError> {
    let groups = web.operations.groups(&caller).await?;
    Ok(Json(groups.into_iter().map(GroupView::from).collect()))
}

#[utoipa::path(
    get,
    path = "/api/v1/groups/{id}",
    tag = "groups",
    params(Id),
    responses((status = 200, description = "A group", body = GroupView))
)]
pub(super) async fn group(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Id(id): Id,
) -> Result<Json<GroupView>, ApiError> {
    Ok(Json(GroupView::from(web.operations.group(&caller, &id).await?)))
}

#[utoipa::path(
    post,
    path = "/api/v1/groups",
    tag = "groups",
    params(Key),
    request_body = agentprocess_auth::groups::NewGroup,
    responses((status = 201, description = "The group", body = GroupView))
)]
pub(super) async fn create_group(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    key: Key,
    Body(new): Body<NewGroup>,
) -> Result<Created<GroupView>, ApiError> {
    let group = web.operations.create_group(&caller, &new, key.as_deref()).await?;
    Ok(Created(GroupView::from(group)))
}

#[utoipa::path(
    patch,
    path = "/api/v1/groups/{id}",
    tag = "groups",
    params(Id),
    request_body = agentprocess_operations::groups::GroupName,
    responses((status = 200, description = "The group as renamed", body = GroupView))
)]
pub(super) async fn rename_group(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Id(id): Id,
    Body(name): Body<GroupName>,
) -> Result<Json<GroupView>, ApiError> {
    let group = web.operations.rename_group(&caller, &id, &name).await?;
    Ok(Json(GroupView::from(group)))
}

#[utoipa::path(
    put,
    path = "/api/v1/groups/{id}/claim-values",
    tag = "groups",
    params(Id),
    request_body = agentprocess_operations::groups::ClaimValues,
    responses((status = 200, description = "The group", body = GroupView))
)]
pub(super) async fn set_claim_values(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Id(id): Id,
    Body(values): Body<ClaimValues>,
) -> Result<Json<GroupView>, ApiError> {
    let group = web.operations.set_claim_values(&caller, &id, &values).await?;
    Ok(Json(GroupView::from(group)))
}

#[utoipa::path(
    delete,
    path = "/api/v1/groups/{id}",
    tag = "groups",
    params(Id),
    responses((status = 204, description = "Deleted"))
)]
pub(super) async fn delete_group(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Id(id): Id,
) -> Result<StatusCode, ApiError> {
    web.operations.delete_group(&caller, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    put,
    path = "/api/v1/groups/{id}/members/{member}",
    tag = "groups",
    params(("id" = String, Path, description = "The id"), ("member" = String, Path, description = "The member's id")),
    responses((status = 200, description = "The group", body = GroupView))
)]
pub(super) async fn add_to_group(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((group, member)): Path<(String, String)>,
) -> Result<Json<GroupView>, ApiError> {
    let group = web.operations.set_membership(&caller, &group, &member, true).await?;
    Ok(Json(GroupView::from(group)))
}

#[utoipa::path(
    delete,
    path = "/api/v1/groups/{id}/members/{member}",
    tag = "groups",
    params(("id" = String, Path, description = "The id"), ("member" = String, Path, description = "The member's id")),
    responses((status = 200, description = "The group", body = GroupView))
)]
pub(super) async fn remove_from_group(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((group, member)): Path<(String, String)>,
) -> Result<Json<GroupView>, ApiError> {
    let group = web.operations.set_membership(&caller, &group, &member, false).await?;
    Ok(Json(GroupView::from(group)))
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
    responses((status = 200, description = "API tokens (all for admins, else the caller's own)", body = Items<TokenView>))
)]
pub(super) async fn tokens(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<Items<TokenView>>, ApiError> {
    let tokens = web.operations.tokens(&caller).await?;
    Ok(Json(tokens.iter().map(TokenView::from).collect()))
}

#[utoipa::path(
    post,
    path = "/api/v1/tokens",
    tag = "tokens",
    params(Key),
    request_body = agentprocess_auth::tokens::NewToken,
    responses((status = 201, description = "The token, shown this once", body = TokenView))
)]
pub(super) async fn create_token(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    key: Key,
    Body(new): Body<NewToken>,
) -> Result<Response, ApiError> {
    let (row, token) = web.operations.create_token(&caller, &new, key.as_deref()).await?;
    Ok(TokenView::shown_once(&row, token))
}

#[utoipa::path(
    delete,
    path = "/api/v1/tokens/{id}",
    tag = "tokens",
    params(Id),
    responses((status = 204, description = "Revoked"))
)]
pub(super) async fn revoke_token(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Id(id): Id,
) -> Result<StatusCode, ApiError> {
    web.operations.revoke_token(&caller, &id).await?;
    Ok(StatusCode::NO_CONTENT)
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

#[utoipa::path(
    get,
    path = "/api/v1/audit",
    tag = "audit",
    params(AuditQuery),
    responses((status = 200, description = "Entries, oldest first", body = AuditPage))
)]
pub(super) async fn audit(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    audit: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Json<AuditPage>, ApiError> {
    let page = web
        .operations
        .audit(&caller, query(audit, "the query is not valid")?)
        .await?;
    Ok(Json(AuditPage {
        items: page.entries.into_iter().map(AuditView::from).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// The whole log (or the filtered part) as JSON lines, read page by page.
#[utoipa::path(
    get,
    path = "/api/v1/audit/export",
    tag = "audit",
    params(AuditQuery),
    responses((status = 200, description = "Entries as JSON lines", body = String, content_type = "application/x-ndjson"))
)]
pub(super) async fn audit_export(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    audit: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let entries = web
        .operations
        .audit_export(&caller, query(audit, "the query is not valid")?)
        .await?;
    let mut lines = String::new();
    for row in entries {
        lines.push_str(&serde_json::to_string(&AuditView::from(row)).unwrap_or_default());
        lines.push('\n');
    }
    let mut response = lines.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/x-ndjson"));
    Ok(response)
}
