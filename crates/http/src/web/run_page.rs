//! A run's page: where it stands, its steps, the open work items with links to their
//! pages, and the record as a timeline: every completion of every step, reworked ones
//! included, with who, when, what they decided or handed in, and each evidence item's
//! SHA-256. Operators cancel the run here.

use std::collections::HashMap;
use std::sync::Arc;

use agentprocess_blobs::Blobs;
use agentprocess_store::Store;
use agentprocess_views::map::ProcessMap;
use agentprocess_views::{RecordView, RunView};
use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde_json::{Map, json};
use tower_sessions::Session;

use super::layout::{page, problems, refused as refused_page};

/// The title of a run page that cannot be shown.
const CANNOT: &str = "This run cannot be shown";
use super::Visitor;
use crate::identity::{ApiError, Web, check_csrf, csrf_token};

/// One line of the timeline.
struct Entry<'a> {
    step: &'a str,
    record: &'a RecordView,
    reworked: bool,
}

fn timeline(run: &RunView) -> Vec<Entry<'_>> {
    let mut entries: Vec<Entry<'_>> = run
        .data
        .steps
        .iter()
        .flat_map(|(step, data)| {
            let earlier = data.history.iter().map(move |record| Entry {
                step,
                record,
                reworked: true,
            });
            let current = data.current.iter().map(move |record| Entry {
                step,
                record,
                reworked: false,
            });
            earlier.chain(current)
        })
        .collect();
    entries.sort_by_key(|entry| entry.record.at);
    entries
}

fn record(entry: &Entry<'_>) -> Markup {
    let record = entry.record;
    html! {
        li {
            strong { (entry.step) } " · " (record.at) " · " (record.by)
            @if entry.reworked { " " span class="badge due" { "reworked since" } }
            @if let Some(decision) = &record.decision { p { "Decision: " strong { (decision) } } }
            @if let Some(summary) = &record.summary { p { (summary) } }
            @if let Some(note) = &record.note { p { "Note: " (note) } }
            @if let Some(next) = &record.next {
                p { "Next: " (next) @if let Some(reason) = &record.reason { " (" (reason) ")" } }
            }
            @if let Some(output) = &record.output {
                @if !output.is_empty() { pre { (serde_json::to_string_pretty(output).unwrap_or_default()) } }
            }
            @if let Some(evidence) = &record.evidence {
                ul {
                    @for item in evidence {
                        li {
                            (item.kind) ": "
                            @if let Some(url) = &item.url { a href=(url) { (item.reference) } } @else { (item.reference) }
                            @if let Some(sha256) = &item.sha256 { " " small { "SHA-256 " code { (sha256) } } }
                        }
                    }
                }
            }
        }
    }
}

fn body(
    run: &RunView,
    map: Option<&ProcessMap>,
    csrf: &str,
    refused: Option<&agentprocess_engine::ToolError>,
) -> Markup {
    let summary = &run.run;
    let states: HashMap<String, String> = run
        .steps
        .iter()
        .filter_map(|step| {
            let state = json!(step.state?);
            Some((step.id.clone(), state.as_str()?.to_owned()))
        })
        .collect();
    html! {
        @if let Some(error) = refused { (problems(&error.message, &error.issues)) }
        p {
            strong { (summary.process) } " v" (summary.version) " · " (json!(summary.state).as_str().unwrap_or(""))
            @if let Some(outcome) = &summary.outcome { " · " (outcome) }
            @if summary.mode == agentprocess_engine::Mode::Test { " " span class="badge test" { "test run" } }
        }
        p { "Started by " (summary.started_by) " at " (summary.started_at) }
        @if let Some(ended) = &summary.ended {
            p { "Ended by " (ended.by) " at " (ended.at) @if let Some(note) = &ended.note { ": " (note) } }
        }
        @if !run.work_items.is_empty() {
            h2 { "Waiting for people" }
            ul {
                @for item in &run.work_items {
                    li { a href=(format!("/runs/{}/items/{}", summary.id, item.id)) { (item.step_id) } " (" (item.kind) ")" }
                }
            }
        }
        @if let Some(map) = map {
            h2 { "Map" }
            figure { (super::map::svg(map, &states)) }
        }
        h2 { "Steps" }
        table {
            thead { tr { th scope="col" { "Step" } th scope="col" { "Kind" } th scope="col" { "State" } th scope="col" { "Due" } } }
            tbody {
                @for step in &run.steps {
                    tr {
                        td { (step.id) }
                        td { (step.kind) }
                        td { (step.state.map(|state| json!(state)).and_then(|state| state.as_str().map(str::to_owned)).unwrap_or_else(|| "not reached".to_owned())) }
                        td { @if let Some(due) = step.due { (due) @if step.overdue == Some(true) { " " span class="badge overdue" { "overdue" } } } }
                    }
                }
            }
        }
        h2 { "Record" }
        @let entries = timeline(run);
        @if entries.is_empty() { p { "Nothing completed yet." } } @else { ol { @for entry in &entries { (record(entry)) } } }
        @if matches!(json!(summary.state).as_str(), Some("active" | "waiting")) {
            h2 { "Cancel the run" }
            form method="post" action=(format!("/runs/{}/cancel", summary.id)) {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="requestId" value=(agentprocess_auth::secrets::new_id("web_"));
                div class="field" {
                    label for="reason" { "Why (required; operators only)" }
                    textarea id="reason" name="reason" rows="2" {}
                }
                button type="submit" { "Cancel the run" }
            }
        }
    }
}

async fn draw<S, B>(
    web: &Web<S, B>,
    session: &Session,
    visitor: (&str, &agentprocess_service::Caller),
    run: &RunView,
    refused: Option<&agentprocess_engine::ToolError>,
) -> Response
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    let (who, caller) = visitor;
    let csrf = match csrf_token(session).await {
        Ok(token) => token,
        Err(error) => return error.into_response(),
    };
    // The map is drawn from the version the run is pinned to; a run page without it
    // still shows everything else.
    let map = web
        .service
        .version_for(caller, &run.run.process, Some(run.run.version))
        .await
        .ok()
        .map(|version| agentprocess_views::map::layout(&version.process.document().steps));
    page(
        StatusCode::OK,
        &format!("Run {}", run.run.id),
        Some(who),
        body(run, map.as_ref(), &csrf, refused),
    )
}

pub(super) async fn show<S, B>(
    State(web): State<Arc<Web<S, B>>>,
    session: Session,
    Visitor { who, caller }: Visitor,
    Path(run_id): Path<String>,
) -> Response
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    match web.service.get_run(&caller, &run_id).await {
        Ok(run) => draw(&web, &session, (&who, &caller), &run, None).await,
        Err(error) => refused_page(&who, CANNOT, &error.into_tool_error()),
    }
}

pub(super) async fn cancel<S, B>(
    State(web): State<Arc<Web<S, B>>>,
    session: Session,
    headers: HeaderMap,
    Visitor { who, caller }: Visitor,
    Path(run_id): Path<String>,
    Form(form): Form<Vec<(String, String)>>,
) -> Response
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    let field = |name: &str| {
        form.iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    if let Err(error) = check_csrf(&headers, &web.origin, &session, field("csrf")).await {
        return error.into_response();
    }
    let mut arguments = Map::new();
    arguments.insert("runId".to_owned(), json!(run_id));
    for name in ["requestId", "reason"] {
        if let Some(value) = field(name).filter(|value| !value.trim().is_empty()) {
            arguments.insert(name.to_owned(), json!(value));
        }
    }
    let Some(spec) = agentprocess_mcp::arguments::spec("cancel") else {
        return ApiError::retry().into_response();
    };
    let refused = agentprocess_mcp::tools::call(&web.service, &caller, spec, arguments)
        .await
        .err();
    if refused.is_none() {
        return Redirect::to(&format!("/runs/{run_id}")).into_response();
    }
    match web.service.get_run(&caller, &run_id).await {
        Ok(run) => draw(&web, &session, (&who, &caller), &run, refused.as_ref()).await,
        Err(error) => refused_page(&who, CANNOT, &error.into_tool_error()),
    }
}
