//! The inbox: the signed-in person's open work items (their groups' items, and
//! escalations for operators), soonest due first, each named as the process body names
//! its step and with the inputs it is about (those its text or section names, or the
//! first declared), labelled, filtered by process and group. The list refreshes itself
//! while the page is open.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use agentprocess_engine::{Actor, Assignee, Decision, ProcessVersion};
use agentprocess_format::Field;
use agentprocess_service::{Caller, RunFacts};
use agentprocess_views::PersonWork;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::Visitor;
use super::facts::{label, step_title, value_of};
use super::forms::process_choice;
use super::layout::{fragment, page, refreshing, shortened};
use super::time::when;
use crate::errors::ApiError;
use crate::session::Web;

/// The most characters of a text input the inbox shows.
const LONGEST: usize = 60;

/// How many items the inbox shows.
const SHOWN: u32 = 100;

/// The id of the part of the page that refreshes itself.
const ITEMS: &str = "items";

#[derive(Debug, Default, Deserialize)]
pub(super) struct Filter {
    process: Option<String>,
    group: Option<String>,
    /// The decision just made; a word that is none is not confirmed.
    decided: Option<String>,
}

/// The confirmation of a decision just made, naming it.
fn confirmation(decision: Decision) -> &'static str {
    match decision {
        Decision::Approved => "You approved it. The run goes on.",
        Decision::Rejected => "You rejected it. The run goes where the process sends a rejection.",
        Decision::Completed => "You completed it. The run goes on.",
        Decision::Returned => "You returned it for another attempt.",
        Decision::Failed => "You failed the run. It has ended.",
    }
}

pub(super) async fn inbox(
    State(web): State<Arc<Web>>,
    visitor: Visitor,
    headers: HeaderMap,
    Query(filter): Query<Filter>,
) -> Response {
    let Visitor { caller, zone, .. } = &visitor;
    let process = filter.process.filter(|process| !process.is_empty());
    let group = filter.group.filter(|group| !group.is_empty());
    let mut items = match web.service.inbox(caller, SHOWN, process.clone()).await {
        Ok(items) => items,
        Err(error) => return ApiError::from_tool(error.into_tool_error()).into_response(),
    };
    // How many wait on each group, counted before the group filter narrows the list.
    let mut waiting: HashMap<String, usize> = HashMap::new();
    for (item, _) in &items {
        if let Assignee::Group(name) = &item.work_item.assigned_to {
            *waiting.entry(name.clone()).or_default() += 1;
        }
    }
    items.retain(|(item, _)| {
        group
            .as_ref()
            .is_none_or(|group| item.work_item.assigned_to == Assignee::Group(group.clone()))
    });
    // Soonest due first; items with no due date after those with one.
    items.sort_by(|(a, _), (b, _)| match (a.work_item.due, b.work_item.due) {
        (Some(a), Some(b)) => a.cmp(&b),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let versions = versions_of(&web, caller, &items).await;
    let list = listing(&items, &versions, web.service.now(), zone);
    if refreshing(&headers, ITEMS) {
        return fragment(list);
    }
    let groups: Vec<String> = match caller.actor() {
        Actor::Person {
            mut groups, operator, ..
        } => {
            if operator {
                groups.push(web.service.settings().engine.escalation_group.clone());
            }
            groups
        }
        Actor::Agent { .. } => Vec::new(),
    };
    // An operator sees how much of the organization's work is overdue, whoever it
    // waits on; the count is of what the queue shows.
    let overdue = if visitor.has_role(agentprocess_auth::Role::Operator) {
        web.service.overdue_count(caller).await.unwrap_or(0)
    } else {
        0
    };
    let processes: BTreeSet<&str> = items
        .iter()
        .map(|(item, _)| item.process.as_str())
        .chain(process.as_deref())
        .collect();
    let body = html! {
        @if let Some(decision) = filter.decided.as_deref().and_then(Decision::parse) {
            div class="notice" role="status" { p { strong { "Your decision was recorded. " } (confirmation(decision)) } }
        }
        @if overdue > 0 {
            div class="notice" role="status" {
                p { a href="/overdue" { @if overdue == 1 { "One step" } @else { (overdue) " steps" } } " of the organization "
                    @if overdue == 1 { "is" } @else { "are" } " overdue." }
            }
        }
        form method="get" action="/inbox" class="filters" {
            (process_choice(processes.iter().copied(), process.as_deref()))
            div class="field" {
                label for="group" { "Group" }
                select id="group" name="group" {
                    option value="" { "All my groups" }
                    @for name in &groups {
                        option value=(name) selected[group.as_deref() == Some(name.as_str())] {
                            (name) " (" (waiting.get(name).copied().unwrap_or(0)) ")"
                        }
                    }
                }
            }
            button type="submit" { "Filter" }
        }
        div id=(ITEMS) data-refresh="15" { (list) }
    };
    page(StatusCode::OK, "Inbox", Some(&visitor), body)
}

/// The published versions the items' runs are pinned to, by process and number: what
/// names their steps and labels their inputs. A version that cannot be read is left
/// out, and its items are shown by their ids.
async fn versions_of(web: &Web, caller: &Caller, items: &[(PersonWork, RunFacts)]) -> Versions {
    let mut versions = Versions::new();
    for (item, _) in items {
        let key = (item.process.clone(), item.version);
        if !versions.contains_key(&key)
            && let Ok(version) = web.service.version_for(caller, &item.process, Some(item.version)).await
        {
            versions.insert(key, version);
        }
    }
    versions
}

type Versions = HashMap<(String, u32), Arc<ProcessVersion>>;

/// What an item on step `step` is about, with the values the run holds.
fn what_it_is_about<'a>(
    version: &'a ProcessVersion,
    facts: &'a RunFacts,
    step: &str,
    text: &str,
) -> Vec<(&'a str, &'a Field, Option<&'a Value>)> {
    agentprocess_words::facts_about(
        version.process.document(),
        version.process.body(),
        &facts.inputs,
        &facts.outputs,
        step,
        text,
    )
}

/// The items as a table, with a count screen readers hear when it changes.
fn listing(items: &[(PersonWork, RunFacts)], versions: &Versions, now: Timestamp, zone: &TimeZone) -> Markup {
    html! {
        p role="status" {
            @match items.len() {
                0 => "Nothing is waiting for you.",
                1 => "One item is waiting for you.",
                count => { (count) " items are waiting for you." }
            }
        }
        @if !items.is_empty() {
            table {
                thead { tr { th scope="col" { "Step" } th scope="col" { "What you are asked" } th scope="col" { "Process" } th scope="col" { "Due" } } }
                tbody {
                    @for (item, facts) in items {
                        @let version = versions.get(&(item.process.clone(), item.version));
                        @let body = version.map_or("", |version| version.process.body());
                        @let step = &item.work_item.step_id;
                        tr {
                            td data-label="Step" { a href=(format!("/runs/{}/items/{}", item.run_id, item.work_item.id)) { (step_title(body, step)) }
                                 " " small { (item.work_item.kind.as_str()) } }
                            td data-label="Asked" {
                                (item.work_item.text)
                                @if let Some(version) = version {
                                    @let shown = what_it_is_about(version, facts, step, &item.work_item.text);
                                    @if !shown.is_empty() {
                                        br;
                                        small class="about" { @for (index, (name, field, value)) in shown.iter().enumerate() {
                                            @if index > 0 { " · " }
                                            (label(name)) ": "
                                            @match value {
                                                Some(Value::String(text)) => (shortened(text, LONGEST)),
                                                Some(value) => (value_of(Some(field), value, zone)),
                                                None => "not given",
                                            }
                                        } }
                                    }
                                }
                            }
                            td data-label="Process" { a href=(format!("/processes/{}/versions/{}", item.process, item.version)) { (item.process) " v" (item.version) }
                                 " · " a href=(format!("/runs/{}", item.run_id)) { "its run" }
                                 @if item.work_item.mode.is_some() { " " span class="badge test" { "test run" } } }
                            td data-label="Due" {
                                @if let Some(due) = item.work_item.due {
                                    @if due <= now { span class="badge overdue" { "overdue since " (when(zone, due)) } }
                                    @else { span class="badge due" { "due " (when(zone, due)) } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
