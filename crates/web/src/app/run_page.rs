//! A run's page: where it stands, its steps, the open work items with links to their
//! pages, the events held for it and the timers it waits on, the process map, and the
//! record as a timeline: every completion of every step, reworked ones included, with
//! who, when, what they decided or handed in, and each evidence item's SHA-256. All of
//! that refreshes itself while the run is open. Operators cancel the run and send it
//! events here.

use std::collections::HashMap;
use std::sync::Arc;

use agentprocess_engine::{ProcessVersion, RunState, ToolError};
use agentprocess_format::{Fields, StepKind};
use agentprocess_service::RunDetails;
use agentprocess_tools::commands;
use agentprocess_views::map::ProcessMap;
use agentprocess_views::{RecordView, RunView};
use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use jiff::tz::TimeZone;
use maud::{Markup, html};
use serde_json::{Value, json};
use tower_sessions::Session;

use super::Visitor;
use super::evidence::{Files, evidence, files};
use super::facts::{step_title, summary};
use super::forms::sent;
use super::layout::{fragment, page, refreshing, refused as refused_page};
use super::refusals;
use super::time::when;
use crate::session::{Web, check_csrf, csrf_token};

/// The title of a run page that cannot be shown.
const CANNOT: &str = "This run cannot be shown";

/// Who the record names for what the server did itself (a timer, a finish).
const SERVER: &str = "server";

/// The id of the part of the page that refreshes itself.
const STANDING: &str = "standing";

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

fn record(entry: &Entry<'_>, details: &RunDetails, zone: &TimeZone, files: &Files) -> Markup {
    let record = entry.record;
    let no_fields = Fields::default();
    let declared = details
        .version
        .process
        .document()
        .steps
        .iter()
        .find(|step| step.id == entry.step)
        .map_or(&no_fields, |step| &step.output);
    html! {
        li {
            strong { (step_title(&details.view.body, entry.step)) } " · " (when(zone, record.at)) " · " (record.by)
            @if entry.reworked { " " span class="badge due" { "reworked since" } }
            @if let Some(decision) = record.decision { p { "Decision: " strong { (decision.as_str()) } } }
            @if let Some(summary) = &record.summary { p { (summary) } }
            @if let Some(note) = &record.note { p { "Note: " (note) } }
            @if let Some(next) = &record.next {
                p { "Next: " (step_title(&details.view.body, next)) @if let Some(reason) = &record.reason { " (" (reason) ")" } }
            }
            @if let Some(output) = record.output.as_ref().filter(|output| !output.is_empty()) {
                (summary(declared, output, zone))
            }
            @for item in record.evidence.iter().flatten() { (evidence(item, files.of(&item.reference))) }
        }
    }
}

/// Who ended the run, in words. The server ends a run when a step's completion leads
/// to its finish: then it was the last person or agent who completed a step.
fn ended_by(run: &RunView, entries: &[Entry<'_>], ended: &agentprocess_views::Ended, zone: &TimeZone) -> Markup {
    if ended.by != SERVER {
        return html! { "Ended by " (ended.by) " at " (when(zone, ended.at)) };
    }
    let last = entries.iter().rev().find(|entry| entry.record.by != SERVER);
    html! {
        "Ended at " (when(zone, ended.at))
        @if let Some(last) = last {
            ", after " (last.record.by) " "
            @match last.record.decision { Some(decision) => (decision.as_str()), None => "completed" }
            " " (step_title(&run.body, last.step))
        }
    }
}

/// Where the run stands: everything on the page but its forms, which the page script
/// redraws while the run is open.
fn standing(details: &RunDetails, map: &ProcessMap, zone: &TimeZone, files: &Files) -> Markup {
    let run = &details.view;
    let summary = &run.run;
    // Who ended the run is read from the same timeline the record shows.
    let entries = timeline(run);
    let states: HashMap<String, String> = run
        .steps
        .iter()
        .filter_map(|step| Some((step.id.clone(), step.state?.as_str().to_owned())))
        .collect();
    html! {
        p {
            strong { (summary.process) } " v" (summary.version) " · " (summary.state.as_str())
            @if let Some(outcome) = &summary.outcome { " · " (outcome) }
            @if summary.mode == agentprocess_engine::Mode::Test { " " span class="badge test" { "test run" } }
        }
        p { "Started by " (summary.started_by) " at " (when(zone, summary.started_at)) }
        @if let Some(ended) = &summary.ended {
            p { (ended_by(run, &entries, ended, zone)) @if let Some(note) = &ended.note { ": " (note) } }
        }
        @if !run.work_items.is_empty() {
            h2 { "Waiting for people" }
            ul {
                @for item in &run.work_items {
                    li { a href=(format!("/runs/{}/items/{}", summary.id, item.id)) { (step_title(&run.body, &item.step_id)) } " (" (item.kind.as_str()) ")" }
                }
            }
        }
        @if !details.timers.is_empty() {
            h2 { "Timers" }
            table {
                thead { tr { th scope="col" { "Step" } th scope="col" { "For" } th scope="col" { "Fires" } } }
                tbody {
                    @for timer in &details.timers {
                        tr {
                            td data-label="Step" { (step_title(&run.body, &timer.id.step)) }
                            td data-label="For" { (timer_meaning(timer.id.kind)) }
                            td data-label="Fires" { (when(zone, timer.at)) }
                        }
                    }
                }
            }
        }
        @if !details.held.is_empty() {
            h2 { "Held events" }
            p { "Delivered before any step waited for them; the first step that waits for one takes it." }
            ul {
                @for event in &details.held {
                    li {
                        strong { (event.name) } " from " (event.sender) " at " (when(zone, event.at))
                        @if !event.data.is_empty() { pre { (serde_json::to_string_pretty(&event.data).unwrap_or_default()) } }
                    }
                }
            }
        }
        h2 { "Map" }
        figure { (super::map::svg(map, &states)) }
        h2 { "Steps" }
        table {
            thead { tr { th scope="col" { "Step" } th scope="col" { "Kind" } th scope="col" { "State" } th scope="col" { "Due" } } }
            tbody {
                @for step in &run.steps {
                    tr {
                        td data-label="Step" { (step_title(&run.body, &step.id)) @if step_title(&run.body, &step.id) != step.id { br; small { code { (step.id) } } } }
                        td data-label="Kind" { (step.kind) }
                        td data-label="State" { (step.state.map_or("not reached", |state| state.as_str())) }
                        td data-label="Due" { @if let Some(due) = step.due { (when(zone, due)) @if step.overdue == Some(true) { " " span class="badge overdue" { "overdue" } } } }
                    }
                }
            }
        }
        h2 { "Record" }
        @if entries.is_empty() { p { "Nothing completed yet." } } @else { ol { @for entry in &entries { (record(entry, details, zone, files)) } } }
    }
}

/// What a timer's firing does, in words.
fn timer_meaning(kind: agentprocess_engine::TimerKind) -> &'static str {
    match kind {
        agentprocess_engine::TimerKind::Due => "the step becomes overdue",
        agentprocess_engine::TimerKind::Wait => "the wait ends",
        agentprocess_engine::TimerKind::WaitUntil => "the time waited for arrives",
        agentprocess_engine::TimerKind::Timeout => "the wait for the event times out",
    }
}

/// The names of the events the process's steps wait for.
fn awaited(version: &ProcessVersion) -> Vec<&str> {
    let mut names: Vec<&str> = version
        .process
        .document()
        .steps
        .iter()
        .filter_map(|step| match &step.kind {
            StepKind::WaitFor(name) => Some(name.as_str()),
            _ => None,
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// What the page is drawn from, beside the run.
struct Around<'a> {
    map: &'a ProcessMap,
    zone: &'a TimeZone,
    files: &'a Files,
    /// Whether the visitor may send events and cancel: only operators are shown how.
    operator: bool,
}

fn body(details: &RunDetails, around: &Around<'_>, csrf: &str, refused: Option<&ToolError>) -> Markup {
    let Around {
        map,
        zone,
        files,
        operator,
    } = *around;
    let summary = &details.view.run;
    let version = &details.version;
    let open = matches!(summary.state, RunState::Active | RunState::Waiting);
    let hidden = html! {
        input type="hidden" name="csrf" value=(csrf);
        input type="hidden" name="requestId" value=(agentprocess_auth::secrets::new_id("web_"));
    };
    let events = awaited(version);
    html! {
        @if let Some(error) = refused { (refusals::shown(error)) }
        p {
            "Runs on " a href=(format!("/processes/{}/versions/{}", summary.process, summary.version)) { (summary.process) " v" (summary.version) }
            ", content hash " code { (version.process.content_hash()) }
        }
        @if open {
            div id=(STANDING) data-refresh="10" { (standing(details, map, zone, files)) }
        } @else {
            (standing(details, map, zone, files))
        }
        @if open && operator {
            h2 { "Send an event" }
            form method="post" action=(format!("/runs/{}/events", summary.id)) {
                (hidden)
                div class="field" {
                    label for="event-name" { "Event name (required)" }
                    input id="event-name" name="name" type="text" list="event-names" autocomplete="off";
                    datalist id="event-names" { @for name in &events { option value=(name) {} } }
                    @if !events.is_empty() { small { "The process waits for: " (events.join(", ")) "." } }
                }
                div class="field" {
                    label for="event-data" { "Data (a JSON object; optional)" }
                    textarea id="event-data" name="data" rows="3" {}
                }
                button type="submit" { "Send the event" }
            }
            h2 { "Cancel the run" }
            form method="post" action=(format!("/runs/{}/cancel", summary.id)) {
                (hidden)
                div class="field" {
                    label for="reason" { "Why (required)" }
                    textarea id="reason" name="reason" rows="2" {}
                }
                button type="submit" class="warning" { "Cancel the run" }
            }
        }
    }
}

async fn draw(
    web: &Web,
    session: &Session,
    headers: &HeaderMap,
    visitor: &Visitor,
    run_id: &str,
    refused: Option<&ToolError>,
) -> Response {
    let Visitor { caller, zone, .. } = visitor;
    let details = match web.service.run_details(caller, run_id).await {
        Ok(details) => details,
        Err(error) => return refused_page(visitor, CANNOT, &error.into_tool_error()),
    };
    // The map is drawn from the version the run is pinned to.
    let map = agentprocess_views::map::layout(&details.version.process.document().steps);
    let files = files(web, caller.org(), &details.view).await;
    if refreshing(headers, STANDING) {
        return fragment(standing(&details, &map, zone, &files));
    }
    let csrf = match csrf_token(session).await {
        Ok(token) => token,
        Err(error) => return error.into_response(),
    };
    page(
        StatusCode::OK,
        &format!("Run {run_id}"),
        Some(visitor),
        body(
            &details,
            &Around {
                map: &map,
                zone,
                files: &files,
                operator: visitor.has_role(agentprocess_auth::Role::Operator),
            },
            &csrf,
            refused,
        ),
    )
}

pub(super) async fn show(
    State(web): State<Arc<Web>>,
    session: Session,
    headers: HeaderMap,
    visitor: Visitor,
    Path(run_id): Path<String>,
) -> Response {
    draw(&web, &session, &headers, &visitor, &run_id, None).await
}

/// The run page's `cancel` and `events` (send an event) forms as their tool's command.
fn command_of(action: &str, run_id: &str, form: &[(String, String)]) -> Option<RunCommand> {
    let field = |name: &str| sent(form, name).map(str::to_owned);
    match action {
        "cancel" => Some(RunCommand::Cancel(commands::Cancel {
            run_id: run_id.to_owned(),
            request_id: field("requestId"),
            reason: field("reason"),
        })),
        "events" => Some(RunCommand::SendEvent(commands::SendEvent {
            run_id: run_id.to_owned(),
            request_id: field("requestId"),
            name: field("name"),
            // Text that is not a JSON object is passed on as sent, so the refusal names
            // it in the spec's words.
            data: sent(form, "data").map(|data| serde_json::from_str::<Value>(data).unwrap_or_else(|_| json!(data))),
        })),
        _ => None,
    }
}

/// What the run page's forms ask.
enum RunCommand {
    Cancel(commands::Cancel),
    SendEvent(commands::SendEvent),
}

/// The run page's forms: `cancel` and `events` (send an event).
pub(super) async fn act_on(
    State(web): State<Arc<Web>>,
    session: Session,
    headers: HeaderMap,
    visitor: Visitor,
    Path((run_id, action)): Path<(String, String)>,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    let Some(command) = command_of(&action, &run_id, &form) else {
        return axum::http::StatusCode::NOT_FOUND.into_response();
    };
    if let Err(error) = check_csrf(&headers, &web.origin, &session, sent(&form, "csrf")).await {
        return error.into_response();
    }
    let done = match &command {
        RunCommand::Cancel(cancel) => commands::perform(&web.service, &visitor.caller, cancel).await,
        RunCommand::SendEvent(event) => commands::perform(&web.service, &visitor.caller, event).await,
    };
    match done {
        Ok(_) => Redirect::to(&format!("/runs/{run_id}")).into_response(),
        Err(refused) => draw(&web, &session, &HeaderMap::new(), &visitor, &run_id, Some(&refused)).await,
    }
}
