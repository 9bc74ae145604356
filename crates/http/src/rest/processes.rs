//! Processes: import a PROCESS.md as a draft, bind its roles to groups and its agent
//! steps to agents, publish it as a numbered version with its content hash, read
//! versions and compare two.

use std::sync::Arc;

use agentprocess_engine::{Claimants, EVERY_AGENT_STEP};
use agentprocess_operations::processes::{AgentBinding, Binding, Diff, KeepOpen, unpack};
use agentprocess_service::admin::{Draft, Published};
use agentprocess_store::{KeptOpen, Openings, StoredVersion};
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Multipart, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{AdminWrites, Body, Created, Items, Key, MemberReads, OperatorReads, needs, query, time_text};
use agentprocess_web::errors::ApiError;
use agentprocess_web::session::{Authenticated, Web};

pub(super) fn routes() -> OpenApiRouter<Arc<Web>> {
    OpenApiRouter::new()
        .routes(needs::<MemberReads>(routes!(processes)))
        .routes(needs::<AdminWrites>(routes!(import)))
        .routes(needs::<OperatorReads>(routes!(draft)))
        .routes(needs::<AdminWrites>(routes!(bind)))
        .routes(needs::<AdminWrites>(routes!(bind_agents, unbind_agents)))
        .routes(needs::<AdminWrites>(routes!(publish)))
        .routes(needs::<MemberReads>(routes!(versions)))
        .routes(needs::<MemberReads>(routes!(version)))
        .routes(needs::<AdminWrites>(routes!(keep_version_open, close_version)))
        .routes(needs::<MemberReads>(routes!(diff)))
        .routes(needs::<OperatorReads>(routes!(check_agreement)))
}

/// The multipart body of an import.
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
pub(super) struct ImportForm {
    /// The PROCESS.md; its file name may carry the folder, as `purchase-order/PROCESS.md`.
    /// Or the process's folder as a tar, tar.gz or zip archive holding one PROCESS.md,
    /// whose folder is then the one it sits in.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// The name of the folder the file sits in, which must then be the process's name.
    folder: Option<String>,
}

/// What publishing did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct PublishedView {
    process: String,
    number: u32,
    content_hash: String,
    /// The latest version already had this text and these bindings.
    unchanged: bool,
}

/// A version named in a diff.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct VersionRef {
    number: u32,
    content_hash: String,
}

/// Two versions compared.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct DiffView {
    process: String,
    from: VersionRef,
    to: VersionRef,
    roles_changed: bool,
    /// Whether the agents bound to its agent steps differ.
    agents_changed: bool,
    /// A unified diff of the two PROCESS.md texts.
    diff: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct RoleView {
    role: String,
    group: Option<String>,
}

/// Who may claim an agent step.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct AgentStepView {
    step: String,
    /// Agent ids that may claim it; with `groups` empty too, any agent may.
    agents: Vec<String>,
    /// Groups whose agents may claim it.
    groups: Vec<String>,
    /// `step` when bound on its own, `all` when it follows the binding of every
    /// agent step, `none` when any agent of the organization may claim it.
    #[schema(pattern = "^(step|all|none)$")]
    bound_by: &'static str,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct DraftView {
    process: String,
    roles: Vec<RoleView>,
    /// Every agent step and who may claim it.
    agent_steps: Vec<AgentStepView>,
    /// The binding of every agent step without one of its own (`*`), if any.
    all_agent_steps: Option<ClaimantsView>,
    /// What the organization must connect before running it; shown, never checked.
    requires_systems: Vec<String>,
    /// Whether every role is bound, so it can be published.
    publishable: bool,
    /// What the admin should know about the binding just made (a group bound while
    /// its identity provider has not yet filled it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
}

impl From<Draft> for DraftView {
    fn from(draft: Draft) -> Self {
        let roles: Vec<RoleView> = draft
            .roles
            .iter()
            .map(|role| RoleView {
                role: role.clone(),
                group: draft.bindings.get(role).cloned(),
            })
            .collect();
        let agent_steps = draft
            .agent_steps
            .iter()
            .map(|step| {
                let (claimants, bound_by) = match draft.agents.covering(step) {
                    Some((key, claimants)) if key == step => (claimants.clone(), "step"),
                    Some((_, claimants)) => (claimants.clone(), "all"),
                    None => (Claimants::default(), "none"),
                };
                AgentStepView {
                    step: step.clone(),
                    agents: claimants.agents,
                    groups: claimants.groups,
                    bound_by,
                }
            })
            .collect();
        Self {
            publishable: roles.iter().all(|role| role.group.is_some()),
            process: draft.process,
            roles,
            agent_steps,
            all_agent_steps: draft.agents.0.get(EVERY_AGENT_STEP).map(ClaimantsView::of),
            requires_systems: draft.systems,
            notes: draft.notes,
        }
    }
}

/// Agents and groups of agents.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct ClaimantsView {
    agents: Vec<String>,
    groups: Vec<String>,
}

impl ClaimantsView {
    fn of(claimants: &Claimants) -> Self {
        Self {
            agents: claimants.agents.clone(),
            groups: claimants.groups.clone(),
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct VersionView {
    process: String,
    number: u32,
    content_hash: String,
    published_at: String,
    roles: Value,
    /// Agent step id, or `*` for every agent step without its own, → the agents and
    /// groups that may claim it. Empty: any agent of the organization.
    agents: Value,
    /// Whether a new run may start on it: the latest version always, an older one
    /// only while an admin keeps it open.
    open_to_new_runs: bool,
    /// The admin's keeping of it open, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    kept_open: Option<KeptOpenView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    frontmatter: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<String>,
}

impl VersionView {
    /// The latest version of its process.
    fn latest(version: &StoredVersion) -> Self {
        let openings = Openings {
            latest: version.number,
            kept: Vec::new(),
        };
        Self::of(version, &openings)
    }

    fn of(version: &StoredVersion, openings: &Openings) -> Self {
        Self {
            process: version.process.clone(),
            number: version.number,
            content_hash: version.content_hash.clone(),
            published_at: time_text(version.published_at),
            roles: serde_json::from_str(&version.roles).unwrap_or(Value::Null),
            agents: serde_json::from_str(&version.agents).unwrap_or(Value::Null),
            open_to_new_runs: openings.standing(version.number).open_to_new_runs(version.number),
            kept_open: openings.kept(version.number).map(KeptOpenView::of),
            frontmatter: None,
            body: None,
        }
    }
}

/// An admin's keeping of a version open to new runs.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct KeptOpenView {
    process: String,
    number: u32,
    /// The admin who kept it open (an identity id).
    by: String,
    reason: String,
    at: String,
}

impl KeptOpenView {
    fn of(kept: &KeptOpen) -> Self {
        Self {
            process: kept.process.clone(),
            number: kept.number,
            by: kept.by.clone(),
            reason: kept.reason.clone(),
            at: time_text(kept.at),
        }
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/processes",
    tag = "processes",
    responses((status = 200, description = "The latest version of each process", body = Items<VersionView>))
)]
pub(super) async fn processes(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<Items<VersionView>>, ApiError> {
    let versions = web.operations.latest_versions(&caller).await?;
    Ok(Json(versions.iter().map(VersionView::latest).collect()))
}

/// `multipart/form-data` with the PROCESS.md in a part named `file` (or the folder as a
/// tar, tar.gz or zip archive holding it), and optionally the name of the folder it
/// sits in (part `folder`, or the file name's directory, as `purchase-order/PROCESS.md`,
/// or the archive's), which must then be the process's name.
#[utoipa::path(
    post,
    path = "/api/v1/processes",
    tag = "processes",
    params(Key),
    request_body(content = ImportForm, content_type = "multipart/form-data"),
    responses((status = 201, description = "The draft", body = DraftView))
)]
pub(super) async fn import(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    key: Key,
    mut multipart: Multipart,
) -> Result<Created<DraftView>, ApiError> {
    let unreadable = |error: axum::extract::multipart::MultipartError| {
        ApiError::invalid("the upload could not be read", vec![error.body_text()])
    };
    let (mut source, mut folder) = (None, None);
    while let Some(field) = multipart.next_field().await.map_err(unreadable)? {
        match field.name() {
            Some("file") => {
                if let Some((directory, _)) = field.file_name().and_then(|name| name.rsplit_once('/')) {
                    folder = folder.or_else(|| directory.rsplit('/').next().map(str::to_owned));
                }
                let unpacked = unpack(field.bytes().await.map_err(unreadable)?.into())?;
                folder = folder.or(unpacked.folder);
                source = Some(unpacked.text);
            }
            Some("folder") => folder = Some(field.text().await.map_err(unreadable)?),
            Some(other) => {
                return Err(ApiError::invalid(
                    "the upload has a part this surface does not take",
                    vec![format!("{other}: use the parts file and folder")],
                ));
            }
            None => {}
        }
    }
    let Some(source) = source else {
        return Err(ApiError::invalid(
            "the upload has no PROCESS.md",
            vec!["file: required".to_owned()],
        ));
    };
    let draft = web
        .operations
        .import(&caller, &source, folder.as_deref(), key.as_deref())
        .await?;
    Ok(Created(DraftView::from(draft)))
}

#[utoipa::path(
    get,
    path = "/api/v1/processes/{name}/draft",
    tag = "processes",
    params(("name" = String, Path, description = "The process name")),
    responses((status = 200, description = "The draft", body = DraftView))
)]
pub(super) async fn draft(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(name): Path<String>,
) -> Result<Json<DraftView>, ApiError> {
    Ok(Json(DraftView::from(web.operations.draft(&caller, &name).await?)))
}

#[utoipa::path(
    put,
    path = "/api/v1/processes/{name}/draft/roles/{role}",
    tag = "processes",
    params(("name" = String, Path, description = "The process name"), ("role" = String, Path, description = "The role")),
    request_body = agentprocess_operations::processes::Binding,
    responses((status = 200, description = "The draft", body = DraftView))
)]
pub(super) async fn bind(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((name, role)): Path<(String, String)>,
    Body(binding): Body<Binding>,
) -> Result<Json<DraftView>, ApiError> {
    let draft = web.operations.bind_role(&caller, (&name, &role), &binding).await?;
    Ok(Json(DraftView::from(draft)))
}

/// `{step}` is an agent step's id, or `*` for every agent step without a binding of
/// its own. Unbound, any agent of the organization may claim the step.
#[utoipa::path(
    put,
    path = "/api/v1/processes/{name}/draft/agent-steps/{step}",
    tag = "processes",
    params(("name" = String, Path, description = "The process name"), ("step" = String, Path, description = "An agent step's id, or * for every agent step")),
    request_body = agentprocess_operations::processes::AgentBinding,
    responses((status = 200, description = "The draft", body = DraftView))
)]
pub(super) async fn bind_agents(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((name, step)): Path<(String, String)>,
    Body(binding): Body<AgentBinding>,
) -> Result<Json<DraftView>, ApiError> {
    let draft = web.operations.bind_agents(&caller, (&name, &step), &binding).await?;
    Ok(Json(DraftView::from(draft)))
}

#[utoipa::path(
    delete,
    path = "/api/v1/processes/{name}/draft/agent-steps/{step}",
    tag = "processes",
    params(("name" = String, Path, description = "The process name"), ("step" = String, Path, description = "An agent step's id, or * for every agent step")),
    responses((status = 200, description = "The draft", body = DraftView))
)]
pub(super) async fn unbind_agents(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((name, step)): Path<(String, String)>,
) -> Result<Json<DraftView>, ApiError> {
    let draft = web.operations.unbind_agents(&caller, (&name, &step)).await?;
    Ok(Json(DraftView::from(draft)))
}

#[utoipa::path(
    post,
    path = "/api/v1/processes/{name}/publish",
    tag = "processes",
    params(("name" = String, Path, description = "The process name"), Key),
    responses((status = 201, description = "A new version", body = PublishedView), (status = 200, description = "Unchanged: the latest version", body = PublishedView))
)]
pub(super) async fn publish(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(name): Path<String>,
    key: Key,
) -> Result<Response, ApiError> {
    let published = web.operations.publish(&caller, &name, key.as_deref()).await?;
    Ok(published_response(&name, published))
}

/// 201 with the new version, or 200 when the latest version was unchanged.
fn published_response(name: &str, published: Published) -> Response {
    let status = if published.unchanged {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let view = json!({
        "process": name,
        "number": published.number,
        "contentHash": published.content_hash,
        "unchanged": published.unchanged,
    });
    (status, Json(view)).into_response()
}

#[utoipa::path(
    get,
    path = "/api/v1/processes/{name}/versions",
    tag = "processes",
    params(("name" = String, Path, description = "The process name")),
    responses((status = 200, description = "Versions, oldest first", body = Items<VersionView>))
)]
pub(super) async fn versions(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(name): Path<String>,
) -> Result<Json<Items<VersionView>>, ApiError> {
    let versions = web.operations.versions(&caller, &name).await?;
    let openings = web.operations.openings(&caller, &name).await?;
    Ok(Json(
        versions
            .iter()
            .map(|version| VersionView::of(version, &openings))
            .collect(),
    ))
}

#[utoipa::path(
    get,
    path = "/api/v1/processes/{name}/versions/{number}",
    tag = "processes",
    params(("name" = String, Path, description = "The process name"), ("number" = u32, Path, description = "The version number")),
    responses((status = 200, description = "One version with its frontmatter and body", body = VersionView))
)]
pub(super) async fn version(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((name, number)): Path<(String, u32)>,
) -> Result<Json<VersionView>, ApiError> {
    let version = web.operations.version(&caller, &name, number).await?;
    let openings = web.operations.openings(&caller, &name).await?;
    let (frontmatter, text) =
        agentprocess_format::read_parts(version.source.as_bytes()).map_err(|_| ApiError::retry())?;
    let mut view = VersionView::of(&version, &openings);
    view.frontmatter = Some(frontmatter);
    view.body = Some(text);
    Ok(Json(view))
}

/// New runs start on the latest version of a process; an older version takes new runs
/// only while an admin keeps it open, so that naming it does not walk around what a
/// newer version added (an agent binding, a role's group, a check). Keeping the latest
/// open keeps it open once a newer one is published. Audited.
#[utoipa::path(
    put,
    path = "/api/v1/processes/{name}/versions/{number}/open",
    tag = "processes",
    params(("name" = String, Path, description = "The process name"), ("number" = u32, Path, description = "The version number")),
    request_body = KeepOpen,
    responses((status = 200, description = "The version is kept open to new runs", body = KeptOpenView))
)]
pub(super) async fn keep_version_open(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((name, number)): Path<(String, u32)>,
    Body(keep): Body<KeepOpen>,
) -> Result<Json<KeptOpenView>, ApiError> {
    let kept = web
        .operations
        .keep_version_open(&caller, (&name, number), &keep)
        .await?;
    Ok(Json(KeptOpenView::of(&kept)))
}

/// Closes a version an admin kept open: new runs start on it only while it is the
/// latest. Runs already started on it go on. Audited when it was kept open.
#[utoipa::path(
    delete,
    path = "/api/v1/processes/{name}/versions/{number}/open",
    tag = "processes",
    params(("name" = String, Path, description = "The process name"), ("number" = u32, Path, description = "The version number")),
    responses((status = 204, description = "The version is no longer kept open"))
)]
pub(super) async fn close_version(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path((name, number)): Path<(String, u32)>,
) -> Result<StatusCode, ApiError> {
    web.operations.close_version(&caller, (&name, number)).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct Pair {
    from: u32,
    to: u32,
}

#[utoipa::path(
    get,
    path = "/api/v1/processes/{name}/diff",
    tag = "processes",
    params(("name" = String, Path, description = "The process name"), Pair),
    responses((status = 200, description = "A unified diff of two versions", body = DiffView))
)]
pub(super) async fn diff(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(name): Path<String>,
    pair: Result<Query<Pair>, QueryRejection>,
) -> Result<Json<DiffView>, ApiError> {
    let pair = query(pair, "give from and to, two version numbers")?;
    let Diff { from, to, unified } = web.operations.diff(&caller, &name, (pair.from, pair.to)).await?;
    Ok(Json(DiffView {
        process: name,
        roles_changed: from.roles != to.roles,
        agents_changed: from.agents != to.agents,
        from: VersionRef {
            number: from.number,
            content_hash: from.content_hash,
        },
        to: VersionRef {
            number: to.number,
            content_hash: to.content_hash,
        },
        diff: unified,
    }))
}

/// What the agreement report covers.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct AgreementParams {
    /// The first version included.
    from_version: Option<u32>,
    /// The last version included.
    to_version: Option<u32>,
    /// Only verdicts made at or after this time (RFC 3339).
    since: Option<String>,
    /// Only verdicts made before this time (RFC 3339).
    until: Option<String>,
    /// The false-pass rate to stay at or under, 0–1; 0.05 by default.
    target: Option<f64>,
}

#[utoipa::path(
    get,
    path = "/api/v1/processes/{name}/check-agreement",
    tag = "processes",
    params(("name" = String, Path, description = "The process name"), AgreementParams),
    responses((status = 200, description = "Each checked step's advisory verdicts against the decisions of the approval after it: counts, the confusion matrix, false-pass and unsure rates, and the pass threshold that meets the target", body = agentprocess_views::agreement::AgreementReport))
)]
pub(super) async fn check_agreement(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(name): Path<String>,
    params: Result<Query<AgreementParams>, QueryRejection>,
) -> Result<Json<agentprocess_views::agreement::AgreementReport>, ApiError> {
    let params = query(params, "the report's parameters are not valid")?;
    let report = agentprocess_views::agreement::AgreementQuery::parse(
        params.from_version,
        params.to_version,
        params.since.as_deref(),
        params.until.as_deref(),
        params.target,
    )
    .map_err(|issues| ApiError::invalid("the report's parameters are not valid", issues))?;
    Ok(Json(web.operations.check_agreement(&caller, &name, &report).await?))
}
