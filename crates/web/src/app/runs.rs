//! The runs page: the organization's runs, filtered by process and state as
//! `list_runs` filters them, each with where it stands (its current steps, named as
//! the process body names them), whom it waits on, and since when. A signed-in person
//! lands here.

use std::sync::Arc;

use agentprocess_engine::{Assignee, RunState, StepState};
use agentprocess_service::ListRuns;
use agentprocess_views::RunView;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use jiff::tz::TimeZone;
use maud::{Markup, html};
use serde::Deserialize;

use super::facts::step_title;
use super::layout::{page, refused};
use super::time::when;
use super::{Visitor, unless_member};
use crate::session::Web;

/// How many runs a page shows.
const PAGE: u32 = 50;

/// The states a person may filter by, with the words the page uses for them.
const STATES: [(RunState, &str); 4] = [
    (RunState::Active, "Active: an agent can work on it"),
    (RunState::Waiting, "Waiting: on people, a timer or an event"),
    (RunState::Ended, "Ended"),
    (RunState::Cancelled, "Cancelled"),
];

#[derive(Debug, Default, Deserialize)]
pub(super) struct Filter {
    process: Option<String>,
    state: Option<String>,
    cursor: Option<String>,
}

/// The title of a runs page that cannot be shown.
const CANNOT: &str = "The runs cannot be shown";

pub(super) async fn runs(State(web): State<Arc<Web>>, visitor: Visitor, Query(filter): Query<Filter>) -> Response {
    if let Some(response) = unless_member(&visitor, CANNOT, "only members of the organization see its runs") {
        return response;
    }
    let process = filter.process.filter(|process| !process.is_empty());
    // A state that is none of the four filters nothing, as an empty choice does.
    let state = filter.state.as_deref().and_then(RunState::parse);
    let args = ListRuns {
        process: process.clone(),
        state,
        limit: PAGE,
        cursor: filter.cursor.filter(|cursor| !cursor.is_empty()),
        ..ListRuns::default()
    };
    let listed = match web.service.run_views(&visitor.caller, args).await {
        Ok(listed) => listed,
        Err(error) => return refused(&visitor, CANNOT, &error.into_tool_error()),
    };
    let processes = match web.service.admin().latest_versions(visitor.caller.org()).await {
        Ok(versions) => versions.into_iter().map(|version| version.process).collect::<Vec<_>>(),
        Err(error) => return refused(&visitor, CANNOT, &error.into_tool_error()),
    };
    let next = listed.next_cursor.as_deref().map(|cursor| {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        if let Some(process) = &process {
            query.append_pair("process", process);
        }
        if let Some(state) = state {
            query.append_pair("state", state.as_str());
        }
        query.append_pair("cursor", cursor);
        format!("/runs?{}", query.finish())
    });
    let body = html! {
        form method="get" action="/runs" class="filters" {
            div class="field" {
                label for="process" { "Process" }
                select id="process" name="process" {
                    option value="" { "All processes" }
                    @for name in &processes {
                        option value=(name) selected[process.as_deref() == Some(name.as_str())] { (name) }
                    }
                }
            }
            div class="field" {
                label for="state" { "State" }
                select id="state" name="state" {
                    option value="" { "Any state" }
                    @for (each, words) in STATES {
                        option value=(each.as_str()) selected[state == Some(each)] { (words) }
                    }
                }
            }
            button type="submit" { "Filter" }
        }
        (listing(&listed.items, &visitor.zone))
        @if let Some(next) = next { p { a href=(next) { "The next runs" } } }
    };
    page(StatusCode::OK, "Runs", Some(&visitor), body)
}

/// The runs as a table, oldest first, with a count.
fn listing(runs: &[RunView], zone: &TimeZone) -> Markup {
    html! {
        p role="status" {
            @match runs.len() {
                0 => "No run matches.",
                1 => "One run.",
                count => { (count) " runs, oldest first." }
            }
        }
        @if !runs.is_empty() {
            table {
                thead { tr {
                    th scope="col" { "Run" } th scope="col" { "State" } th scope="col" { "Where it stands" }
                    th scope="col" { "Waiting on" } th scope="col" { "Since" }
                } }
                tbody {
                    @for run in runs {
                        tr {
                            td data-label="Run" {
                                a href=(format!("/runs/{}", run.run.id)) { (run.run.process) " v" (run.run.version) }
                                br; small { code { (run.run.id) } }
                            }
                            td data-label="State" {
                                (run.run.state.as_str())
                                @if let Some(outcome) = &run.run.outcome { " · " (outcome) }
                            }
                            td data-label="Where it stands" { (standing(run)) }
                            td data-label="Waiting on" { (waiting_on(run)) }
                            td data-label="Since" { (when(zone, run.run.updated_at)) }
                        }
                    }
                }
            }
        }
    }
}

/// The steps the run is on, named as the body names them.
fn standing(run: &RunView) -> Markup {
    let current: Vec<String> = run
        .steps
        .iter()
        .filter(|step| {
            matches!(
                step.state,
                Some(StepState::Ready | StepState::Claimed | StepState::Waiting)
            )
        })
        .map(|step| step_title(&run.body, &step.id))
        .collect();
    html! { (current.join(", ")) }
}

/// Whom the run waits on: the people of its open work items, an agent, an event or a
/// timer.
fn waiting_on(run: &RunView) -> Markup {
    let mut who: Vec<String> = run
        .work_items
        .iter()
        .map(|item| match &item.assigned_to {
            Assignee::Group(group) => format!("the {group} group"),
            Assignee::Person(person) => person.clone(),
        })
        .collect();
    if run
        .steps
        .iter()
        .any(|step| matches!(step.state, Some(StepState::Ready | StepState::Claimed)))
    {
        who.push("an agent".to_owned());
    }
    for step in run.steps.iter().filter(|step| step.state == Some(StepState::Waiting)) {
        match step.kind.as_str() {
            "wait_for" => who.push("an event".to_owned()),
            "wait" | "wait_until" => who.push("a timer".to_owned()),
            _ => {}
        }
    }
    let mut said: Vec<String> = Vec::new();
    for name in who {
        if !said.contains(&name) {
            said.push(name);
        }
    }
    html! { (said.join(", ")) }
}
