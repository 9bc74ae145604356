//! The runs page: the organization's runs, newest first, filtered as `list_runs`
//! filters them (process, state, input values) and by mode and start day, each with
//! where it stands (its current steps, named as the process body names them), whom
//! it waits on, and for how long. A signed-in person lands here.

use std::sync::Arc;

use agentprocess_engine::{Assignee, Mode, RunState, StepState};
use agentprocess_service::ListRuns;
use agentprocess_views::RunView;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use jiff::tz::TimeZone;
use maud::{Markup, html};
use serde_json::{Map, Value};

use super::facts::{label, shown, step_title};
use super::forms::{INPUTS, process_choice, sent, values_of};
use super::layout::{page, refused};
use super::time::{day_start, how_long, when};
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

/// The modes a person may filter by.
const MODES: [(Mode, &str); 2] = [(Mode::Live, "Live runs"), (Mode::Test, "Test runs")];

/// The title of a runs page that cannot be shown.
const CANNOT: &str = "The runs cannot be shown";

/// The page's filters, as the query string sends them (`inputs.<name>` for each
/// input of the chosen process).
struct Filter {
    sent: Vec<(String, String)>,
}

impl Filter {
    fn get(&self, name: &str) -> Option<&str> {
        sent(&self.sent, name)
    }

    /// The query of the same filters, at `cursor`.
    fn at(&self, cursor: &str) -> String {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        for (name, value) in self
            .sent
            .iter()
            .filter(|(name, value)| name != "cursor" && !value.trim().is_empty())
        {
            query.append_pair(name, value);
        }
        query.append_pair("cursor", cursor);
        format!("/runs?{}", query.finish())
    }
}

pub(super) async fn runs(
    State(web): State<Arc<Web>>,
    visitor: Visitor,
    Query(sent): Query<Vec<(String, String)>>,
) -> Response {
    if let Some(response) = unless_member(&visitor, CANNOT, "only members of the organization see its runs") {
        return response;
    }
    let filter = Filter { sent };
    let process = filter.get("process").map(str::to_owned);
    // A state, mode or day that is none of the choices filters nothing, as an empty
    // choice does.
    let state = filter.get("state").and_then(RunState::parse);
    let mode = filter.get("mode").and_then(Mode::parse);
    let from = filter.get("from").and_then(|day| day_start(&visitor.zone, day));
    let to = filter.get("to").and_then(|day| day_start(&visitor.zone, day));
    let oldest_first = filter.get("order") == Some("oldest");
    // The inputs a run may be found by: the chosen process's, typed by their
    // declaration as the start form types them.
    let version = match &process {
        Some(process) => web.service.version_for(&visitor.caller, process, None).await.ok(),
        None => None,
    };
    let declared: Map<String, Value> = version
        .as_ref()
        .and_then(|version| version.process.frontmatter()["inputs"].as_object().cloned())
        .unwrap_or_default();
    let args = ListRuns {
        process: process.clone(),
        state,
        mode,
        inputs: values_of(INPUTS, &declared, &filter.sent),
        started_from: from,
        // The last day chosen is a whole day.
        started_before: to.and_then(|to| to.checked_add(jiff::SignedDuration::from_hours(24)).ok()),
        newest_first: !oldest_first,
        limit: PAGE,
        cursor: filter.get("cursor").map(str::to_owned),
    };
    let listed = match web.service.run_views(&visitor.caller, args).await {
        Ok(listed) => listed,
        Err(error) => return refused(&visitor, CANNOT, &error.into_tool_error()),
    };
    let processes = match web.service.admin().latest_versions(visitor.caller.org()).await {
        Ok(versions) => versions.into_iter().map(|version| version.process).collect::<Vec<_>>(),
        Err(error) => return refused(&visitor, CANNOT, &error.into_tool_error()),
    };
    let next = listed.next_cursor.as_deref().map(|cursor| filter.at(cursor));
    let searchable: Vec<(&String, &Value)> = declared.iter().filter(|(_, field)| scalar(field)).collect();
    let choose = |name: &str, value: &str| filter.get(name) == Some(value);
    let body = html! {
        form method="get" action="/runs" class="filters" {
            (process_choice(processes.iter().map(String::as_str), process.as_deref()))
            div class="field" {
                label for="state" { "State" }
                select id="state" name="state" {
                    option value="" { "Any state" }
                    @for (each, words) in STATES {
                        option value=(each.as_str()) selected[state == Some(each)] { (words) }
                    }
                }
            }
            div class="field" {
                label for="mode" { "Mode" }
                select id="mode" name="mode" {
                    option value="" { "Live and test" }
                    @for (each, words) in MODES { option value=(each.as_str()) selected[mode == Some(each)] { (words) } }
                }
            }
            div class="field" {
                label for="from" { "Started from" }
                input id="from" name="from" type="date" value=(filter.get("from").unwrap_or_default());
            }
            div class="field" {
                label for="to" { "Started until" }
                input id="to" name="to" type="date" value=(filter.get("to").unwrap_or_default());
            }
            div class="field" {
                label for="order" { "Order" }
                select id="order" name="order" {
                    option value="newest" { "Newest first" }
                    option value="oldest" selected[oldest_first] { "Oldest first" }
                }
            }
            @for (name, field) in &searchable {
                @let id = format!("{INPUTS}{name}");
                div class="field" {
                    label for=(id) { (label(name)) }
                    @match field["one_of"].as_array() {
                        Some(choices) => select id=(id) name=(id) {
                            option value="" { "Any" }
                            @for choice in choices { option value=(shown(choice)) selected[choose(&id, &shown(choice))] { (shown(choice)) } }
                        },
                        None => input id=(id) name=(id) type="text" value=(filter.get(&id).unwrap_or_default());,
                    }
                }
            }
            button type="submit" { "Filter" }
        }
        @if process.is_some() && searchable.is_empty() && !declared.is_empty() {
            p class="quiet" { "This process's inputs are lists or objects: choose a process with plain inputs to find runs by them." }
        } @else if process.is_none() {
            p class="quiet" { "Choose a process to find its runs by their inputs." }
        }
        (listing(&listed.items, &visitor.zone, web.service.now(), oldest_first))
        @if let Some(next) = next { p { a href=(next) { "The next runs" } } }
    };
    page(StatusCode::OK, "Runs", Some(&visitor), body)
}

/// Whether an input declaration is one value a person can type to find runs by:
/// not a list or an object.
fn scalar(field: &Value) -> bool {
    let ty = field.as_str().or_else(|| field["type"].as_str()).unwrap_or("string");
    !matches!(ty, "list" | "object")
}

/// The runs as a table, with a count.
fn listing(runs: &[RunView], zone: &TimeZone, now: jiff::Timestamp, oldest_first: bool) -> Markup {
    html! {
        p role="status" {
            @match runs.len() {
                0 => "No run matches.",
                1 => "One run.",
                count => { (count) " runs, " @if oldest_first { "oldest" } @else { "newest" } " first." }
            }
        }
        @if !runs.is_empty() {
            table {
                thead { tr {
                    th scope="col" { "Run" } th scope="col" { "State" } th scope="col" { "Where it stands" }
                    th scope="col" { "Waiting on" } th scope="col" { "For" }
                } }
                tbody {
                    @for run in runs {
                        tr {
                            td data-label="Run" {
                                a href=(format!("/runs/{}", run.run.id)) { (run.run.process) " v" (run.run.version) }
                                @if run.run.mode == Mode::Test { " " span class="badge test" { "test run" } }
                                br; small { "started " (when(zone, run.run.started_at)) }
                            }
                            td data-label="State" {
                                (run.run.state.as_str())
                                @if let Some(outcome) = &run.run.outcome { " · " (outcome) }
                            }
                            td data-label="Where it stands" { (standing(run)) }
                            td data-label="Waiting on" { (waiting_on(run)) }
                            td data-label="For" {
                                @if matches!(run.run.state, RunState::Active | RunState::Waiting) {
                                    (how_long(run.run.updated_at, now)) br;
                                    small { "since " (when(zone, run.run.updated_at)) }
                                } @else {
                                    small { "ended " (when(zone, run.run.updated_at)) }
                                }
                            }
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
