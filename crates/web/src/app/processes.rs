//! The process catalog (each process's latest version, with the systems it needs and
//! its inputs), a version's page (the body rendered, the frontmatter, the content hash,
//! the map, and the diff against the version before), and the start-run form generated
//! from the process's `inputs`.

use std::collections::HashMap;
use std::sync::Arc;

use agentprocess_engine::{Code, ToolError};
use agentprocess_store::{Openings, Role, StoredVersion};
use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Map, Value};
use similar::{ChangeTag, TextDiff};
use tower_sessions::Session;

use super::forms::{INPUTS, controls, sent, values_of};
use super::layout::{page, refused};
use super::markdown::render;
use super::refusals;
use super::time::at_millis;
use super::{Visitor, unless_member};
use crate::errors::ApiError;
use crate::session::{Web, check_csrf, csrf_token};

/// The title of a process page that cannot be shown.
const CANNOT: &str = "This process cannot be shown";

/// Why a person without a role does not see the catalog.
const SEE: &str = "only members of the organization see its processes";

fn failed(visitor: &Visitor, error: agentprocess_service::Error) -> Response {
    refused(visitor, CANNOT, &error.into_tool_error())
}

/// A version's frontmatter (as written, in JSON) and body.
fn parts(version: &StoredVersion) -> (Value, String) {
    agentprocess_format::read_parts(version.source.as_bytes()).unwrap_or((Value::Null, String::new()))
}

/// The systems a process needs, shown where nobody misses them.
fn systems(frontmatter: &Value) -> Markup {
    let systems: Vec<&str> = frontmatter["requires"]["systems"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    html! {
        @if !systems.is_empty() {
            p { "Needs: " @for (index, system) in systems.iter().enumerate() {
                @if index > 0 { " " } span class="system" { (system) } } }
        }
    }
}

/// A declaration of fields as a list: name, type, whether required, description.
fn fields(declaration: &Value) -> Markup {
    let fields: Vec<(&String, &Value)> = declaration.as_object().into_iter().flatten().collect();
    html! {
        @if fields.is_empty() { p { "No inputs." } } @else {
            ul {
                @for (name, field) in fields {
                    @let ty = field.as_str().or_else(|| field["type"].as_str()).unwrap_or("string");
                    li {
                        code { (name) } " · " (ty)
                        @if field["optional"].as_bool() != Some(true) { " · required" }
                        @if let Some(description) = field["description"].as_str() { ": " (description) }
                    }
                }
            }
        }
    }
}

pub(super) async fn catalog(State(web): State<Arc<Web>>, visitor: Visitor) -> Response {
    if let Some(response) = unless_member(&visitor, CANNOT, SEE) {
        return response;
    }
    let versions = match web.service.admin().latest_versions(visitor.caller.org()).await {
        Ok(versions) => versions,
        Err(error) => return failed(&visitor, error),
    };
    let body = html! {
        @if versions.is_empty() { p { "No process is published yet." } }
        @for version in &versions {
            @let (frontmatter, _) = parts(version);
            section class="section" aria-labelledby=(format!("process-{}", version.process)) {
                h2 id=(format!("process-{}", version.process)) {
                    a href=(format!("/processes/{}", version.process)) { (version.process) }
                    " " small { "v" (version.number) }
                }
                p { (frontmatter["description"].as_str().unwrap_or("")) }
                (systems(&frontmatter))
                details { summary { "Inputs" } (fields(&frontmatter["inputs"])) }
                p { a href=(format!("/processes/{}/start", version.process)) { "Start a run of " (version.process) } }
            }
        }
    };
    page(StatusCode::OK, "Processes", Some(&visitor), body)
}

/// `before` to `after` as lines, each marked added, removed or kept.
fn diff(before: &str, after: &str) -> Markup {
    let diff = TextDiff::from_lines(before, after);
    html! {
        div class="diff" {
            @for group in diff.grouped_ops(2) {
                hr;
                @for op in group {
                    @for change in diff.iter_changes(&op) {
                        @match change.tag() {
                            ChangeTag::Delete => { del class="del" { "- " (change.value()) } }
                            ChangeTag::Insert => { ins class="add" { "+ " (change.value()) } }
                            ChangeTag::Equal => { span { "  " (change.value()) } }
                        }
                    }
                }
            }
        }
    }
}

pub(super) async fn latest_version(
    State(web): State<Arc<Web>>,
    visitor: Visitor,
    Path(name): Path<String>,
) -> Response {
    version_page(&web, &visitor, &name, None).await
}

pub(super) async fn version(
    State(web): State<Arc<Web>>,
    visitor: Visitor,
    Path((name, number)): Path<(String, u32)>,
) -> Response {
    version_page(&web, &visitor, &name, Some(number)).await
}

async fn version_page(web: &Web, visitor: &Visitor, name: &str, number: Option<u32>) -> Response {
    if let Some(response) = unless_member(visitor, CANNOT, SEE) {
        return response;
    }
    let versions = match web.service.admin().versions(visitor.caller.org(), name).await {
        Ok(versions) => versions,
        Err(error) => return failed(visitor, error),
    };
    let shown = match number {
        Some(number) => versions.iter().find(|version| version.number == number),
        None => versions.iter().max_by_key(|version| version.number),
    };
    let Some(shown) = shown else {
        let error = ToolError::new(
            Code::NotFound,
            match number {
                Some(number) => format!("{name} has no version {number}"),
                None => format!("there is no published process {name:?}"),
            },
            Vec::new(),
        );
        return refused(visitor, CANNOT, &error);
    };
    let previous = versions
        .iter()
        .filter(|version| version.number < shown.number)
        .max_by_key(|version| version.number);
    let parsed = match web.service.version_for(&visitor.caller, name, Some(shown.number)).await {
        Ok(parsed) => parsed,
        Err(error) => return failed(visitor, error),
    };
    let openings = match web.service.admin().openings(visitor.caller.org(), name).await {
        Ok(openings) => openings,
        Err(error) => return failed(visitor, error),
    };
    let open = openings.standing(shown.number).open_to_new_runs(shown.number);
    let map = agentprocess_views::map::layout(&parsed.process.document().steps);
    let checked = parsed.process.document().steps.iter().any(|step| step.check.is_some());
    let frontmatter = parsed.process.frontmatter();
    let roles: Value = serde_json::from_str(&shown.roles).unwrap_or(Value::Null);
    let body = html! {
        p { (frontmatter["description"].as_str().unwrap_or("")) }
        (systems(frontmatter))
        p {
            @if open { a href=(format!("/processes/{name}/start?version={}", shown.number)) { "Start a run of version " (shown.number) } }
            @else { a href=(format!("/processes/{name}/start")) { "Start a run of the latest version (" (openings.latest) ")" } }
            @if checked && visitor.caller.identity.has_role(Role::Operator) {
                " · " a href=(format!("/processes/{name}/check-agreement")) { "How its checks agree with approvers" }
            } }
        dl {
            dt { "New runs" } dd {
                (standing_words(&openings, shown.number, &visitor.zone))
                @if visitor.caller.identity.has_role(Role::Admin) {
                    " · " a href=(format!("/admin/processes/{name}")) { "Keep a version open or close it" }
                }
            }
            dt { "Published" } dd { (at_millis(&visitor.zone, shown.published_at)) }
            dt { "Content hash" } dd { code { (shown.content_hash) } }
            dt { "Roles" } dd {
                @if let Some(roles) = roles.as_object().filter(|roles| !roles.is_empty()) {
                    @for (role, group) in roles { code { (role) } " → " (group.as_str().unwrap_or("")) " " }
                } @else { "none" }
            }
            dt { "Versions" } dd {
                @for version in versions.iter().rev() {
                    @let marked = if version.number == openings.latest { " (latest)" }
                        else if openings.kept(version.number).is_some() { " (kept open)" } else { "" };
                    @if version.number == shown.number { strong { "v" (version.number) (marked) } " " }
                    @else { a href=(format!("/processes/{name}/versions/{}", version.number)) { "v" (version.number) (marked) } " " }
                }
            }
        }
        h2 { "Inputs" }
        (fields(&frontmatter["inputs"]))
        h2 { "Map" }
        figure { (super::map::svg(&map, &HashMap::new())) }
        h2 { "What the process says" }
        div class="body" { (render(parsed.process.body())) }
        details {
            summary { "Frontmatter" }
            pre { (serde_json::to_string_pretty(frontmatter).unwrap_or_default()) }
        }
        @if let Some(previous) = previous {
            h2 { "Changes since version " (previous.number) }
            (diff(&previous.source, &shown.source))
        }
    };
    page(
        StatusCode::OK,
        &format!("{name} v{}", shown.number),
        Some(visitor),
        body,
    )
}

/// Whether new runs start on version `number`, in words: the latest, kept open (by
/// whom, when, why), or closed.
pub(super) fn standing_words(openings: &Openings, number: u32, zone: &jiff::tz::TimeZone) -> Markup {
    html! {
        @if let Some(kept) = openings.kept(number) {
            "Kept open to new runs by " (kept.by) " on " (at_millis(zone, kept.at)) ": “" (kept.reason) "”"
            @if number == openings.latest { " (the latest)" }
        } @else if number == openings.latest {
            "New runs start on this version: it is the latest."
        } @else {
            "Closed to new runs: they start on the latest version (" (openings.latest) "). Runs already started on this version go on."
        }
    }
}

/// The start page of a version closed to new runs: what it means and where to go, in
/// the page's words (the refusal is not about the person's role), with the
/// protocol's refusal kept in a details element.
fn closed_page(visitor: &Visitor, name: &str, number: u32, refusal: &ToolError) -> Response {
    let body = html! {
        p { "New runs of " (name) " start on its latest version. No admin of your organization keeps version " (number) " open, so a run cannot start on it; runs already started on it go on." }
        p {
            a href=(format!("/processes/{name}/start")) { "Start a run of the latest version" }
            " · " a href=(format!("/processes/{name}/versions/{number}")) { "Version " (number) }
        }
        details {
            summary { "Technical details" }
            p { code { (refusal.code.as_str()) } ": " (refusal.message) }
        }
    };
    page(
        StatusCode::FORBIDDEN,
        &format!("Version {number} of {name} is closed to new runs"),
        Some(visitor),
        body,
    )
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Which {
    version: Option<u32>,
}

/// The start form of version `number` (the latest when `None`), holding what was sent.
async fn start_page(
    web: &Web,
    session: &Session,
    visitor: &Visitor,
    name: &str,
    number: Option<u32>,
    sent: (&[(String, String)], Option<&ToolError>),
) -> Response {
    let (values, error) = sent;
    let version = match web.service.version_for(&visitor.caller, name, number).await {
        Ok(version) => version,
        Err(error) => return failed(visitor, error),
    };
    if let Some(number) = number
        && let Err(closed) = web
            .service
            .refuse_closed_version(visitor.caller.org(), name, number)
            .await
    {
        return closed_page(visitor, name, number, &closed.into_tool_error());
    }
    let csrf = match csrf_token(session).await {
        Ok(token) => token,
        Err(error) => return error.into_response(),
    };
    let frontmatter = version.process.frontmatter();
    let empty = Map::new();
    let inputs = frontmatter["inputs"].as_object().unwrap_or(&empty);
    let issues = error.map_or(&[][..], |error| error.issues.as_slice());
    let test = values.iter().any(|(key, value)| key == "mode" && value == "test");
    let body = html! {
        @if let Some(error) = error { (refusals::shown(error)) }
        p { (frontmatter["description"].as_str().unwrap_or("")) }
        (systems(frontmatter))
        form method="post" action=(format!("/processes/{name}/start")) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="version" value=(version.number);
            input type="hidden" name="requestId" value=(agentprocess_auth::secrets::new_id("web_"));
            (controls(INPUTS, inputs, values, issues))
            fieldset {
                legend { "Mode" }
                div {
                    input id="mode-live" type="radio" name="mode" value="live" checked[!test];
                    label for="mode-live" class="inline" { "Live: the work is real" }
                }
                div {
                    input id="mode-test" type="radio" name="mode" value="test" checked[test];
                    label for="mode-test" class="inline" { "Test: nobody is notified, and the run is marked as a test" }
                }
            }
            button type="submit" class="primary" { "Start the run" }
        }
    };
    page(
        if error.is_some() {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::OK
        },
        &format!("Start {name} v{}", version.number),
        Some(visitor),
        body,
    )
}

pub(super) async fn start_form(
    State(web): State<Arc<Web>>,
    session: Session,
    visitor: Visitor,
    Path(name): Path<String>,
    Query(which): Query<Which>,
) -> Response {
    start_page(&web, &session, &visitor, &name, which.version, (&[], None)).await
}

pub(super) async fn start(
    State(web): State<Arc<Web>>,
    session: Session,
    headers: HeaderMap,
    visitor: Visitor,
    Path(name): Path<String>,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    if let Err(error) = check_csrf(&headers, &web.origin, &session, sent(&form, "csrf")).await {
        return error.into_response();
    }
    let number = sent(&form, "version").and_then(|number| number.parse::<u32>().ok());
    // A process that cannot be read here is refused by start_run below, in its words.
    let declared = match web.service.version_for(&visitor.caller, &name, number).await {
        Ok(version) => version.process.frontmatter()["inputs"]
            .as_object()
            .cloned()
            .unwrap_or_default(),
        Err(_) => Map::new(),
    };
    let start = agentprocess_tools::commands::StartRun {
        process: name.clone(),
        version: number,
        inputs: values_of(INPUTS, &declared, &form),
        mode: sent(&form, "mode").map(str::to_owned),
        request_id: sent(&form, "requestId").map(str::to_owned),
    };
    match agentprocess_tools::perform(&web.service, &visitor.caller, &start).await {
        Ok(view) => match view.pointer("/run/id").and_then(Value::as_str) {
            Some(run) => Redirect::to(&format!("/runs/{run}")).into_response(),
            None => ApiError::retry().into_response(),
        },
        Err(error) => start_page(&web, &session, &visitor, &name, number, (&form, Some(&error))).await,
    }
}
