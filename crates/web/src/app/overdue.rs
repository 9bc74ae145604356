//! The operators' queue of overdue work: every open work item and agent step of the
//! organization past its `due`, longest overdue first, with who it waits on and for
//! how long it has been overdue.

use std::sync::Arc;

use agentprocess_service::{OVERDUE_SHOWN, Overdue, WaitsOn};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use jiff::Timestamp;
use maud::{Markup, html};

use super::Visitor;
use super::facts::step_title;
use super::layout::page;
use super::time::{how_long, when};
use crate::errors::ApiError;
use crate::session::Web;

pub(super) async fn overdue(State(web): State<Arc<Web>>, visitor: Visitor) -> Response {
    let listed = match web.service.overdue(&visitor.caller, OVERDUE_SHOWN).await {
        Ok(listed) => listed,
        Err(error) => return ApiError::from_tool(error.into_tool_error()).into_response(),
    };
    let body = listing(&listed, web.service.now(), &visitor.zone);
    page(StatusCode::OK, "Overdue work", Some(&visitor), body)
}

fn waits_on(waits: &WaitsOn, zone: &jiff::tz::TimeZone) -> Markup {
    match waits {
        WaitsOn::Group(group) => html! { "the " (group) " group" },
        WaitsOn::Person(person) => html! { (person) },
        WaitsOn::Agent { claimed_until: None } => html! { "any agent (not claimed)" },
        WaitsOn::Agent {
            claimed_until: Some(until),
        } => html! { "the agent holding its claim, until " (when(zone, *until)) },
    }
}

fn listing(listed: &[Overdue], now: Timestamp, zone: &jiff::tz::TimeZone) -> Markup {
    html! {
        p role="status" {
            @match listed.len() {
                0 => "Nothing is overdue.",
                1 => "One step is overdue.",
                count => { (count) " steps are overdue" @if count as u32 >= OVERDUE_SHOWN { " (the longest overdue shown)" } "." }
            }
        }
        @if !listed.is_empty() {
            table {
                thead { tr { th scope="col" { "Step" } th scope="col" { "Waits on" } th scope="col" { "Overdue for" } th scope="col" { "Process" } } }
                tbody {
                    @for one in listed {
                        tr {
                            td data-label="Step" { a href=(format!("/runs/{}", one.run_id)) { (step_title(one.version.process.body(), &one.step_id)) } }
                            td data-label="Waits on" { (waits_on(&one.waits_on, zone)) }
                            td data-label="Overdue for" { (how_long(one.due_at, now)) " (due " (when(zone, one.due_at)) ")" }
                            td data-label="Process" { (one.version.process.document().name) " v" (one.version.number) }
                        }
                    }
                }
            }
        }
    }
}
