//! A work item's page: what the person is asked (the step's text, the escalation, what
//! an earlier attempt left), the run data the decision is about, and exactly the
//! decisions the item accepts, as forms. The form carries the item's snapshot and a
//! request id made when the page was drawn, so sending it twice decides once; a
//! stale snapshot shows the fresh data and asks again.

use std::sync::Arc;

use agentprocess_blobs::Blobs;
use agentprocess_engine::ToolError;
use agentprocess_store::Store;
use agentprocess_views::{RunView, WorkItemView};
use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde_json::{Map, Value, json};
use tower_sessions::Session;

use super::forms::{controls, output_of};
use super::layout::{page, problems};
use super::{Visitor, recent_enough};
use crate::identity::{ApiError, Web, check_csrf, csrf_token};

/// Why the page is drawn again after a decision was sent.
enum Outcome {
    /// Refused: the message and every issue.
    Refused(ToolError),
}

pub(super) async fn show<S, B>(
    State(web): State<Arc<Web<S, B>>>,
    session: Session,
    Visitor { who, caller }: Visitor,
    Path((run_id, item_id)): Path<(String, String)>,
) -> Response
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    let run = match web.service.get_run(&caller, &run_id).await {
        Ok(run) => run,
        Err(error) => return refused_page(&who, &error.into_tool_error()),
    };
    draw(&session, &who, &run, &item_id, None).await
}

fn refused_page(who: &str, error: &ToolError) -> Response {
    let status = crate::identity::errors::status_of(error.code);
    page(
        status,
        "This work item cannot be shown",
        Some(who),
        problems(&error.message, &error.issues),
    )
}

/// The page of item `item_id` of `run`, with what the last decision sent met.
async fn draw(session: &Session, who: &str, run: &RunView, item_id: &str, outcome: Option<Outcome>) -> Response {
    let csrf = match csrf_token(session).await {
        Ok(token) => token,
        Err(error) => return error.into_response(),
    };
    let Some(item) = run.work_items.iter().find(|item| item.id == item_id) else {
        let body = html! {
            @if let Some(Outcome::Refused(error)) = &outcome { (problems(&error.message, &error.issues)) }
            div class="notice" { p { "This work item is no longer open: it was decided, or its run moved on." } }
            (run_data(run))
        };
        return page(StatusCode::OK, "Work item closed", Some(who), body);
    };
    let issues: Vec<String> = match &outcome {
        Some(Outcome::Refused(error)) => error.issues.clone(),
        None => Vec::new(),
    };
    let body = html! {
        @if let Some(Outcome::Refused(error)) = &outcome {
            @if error.code.as_str() == "stale" {
                div class="notice" role="alert" {
                    p { "The run changed since you opened this page. Its data below is fresh: look again, then decide." }
                }
            } @else {
                (problems(&error.message, &error.issues))
            }
        }
        p { "Run " a href=(format!("/runs/{}", run.run.id)) { code { (run.run.id) } } " of " strong { (run.run.process) } " v" (run.run.version)
            @if item.mode.is_some() { " " span class="badge test" { "test run" } } }
        section aria-labelledby="asked" {
            h2 id="asked" { "What you are asked" }
            p { (item.text) }
            @if let Some(escalation) = &item.escalation {
                div class="notice" { p { "Escalated: " (escalation.note) } }
            }
            @if let Some(handoff) = &item.handoff {
                details { summary { "What the previous attempt left" } pre { (pretty(&json!(handoff))) } }
            }
        }
        (decisions(item, &csrf, &issues))
        (run_data(run))
    };
    page(StatusCode::OK, &format!("Work item: {}", item.step_id), Some(who), body)
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

fn run_data(run: &RunView) -> Markup {
    html! {
        section aria-labelledby="data" {
            h2 id="data" { "The run data" }
            pre { (pretty(&json!(run.data))) }
        }
    }
}

/// The forms of exactly the decisions `item` accepts.
fn decisions(item: &WorkItemView, csrf: &str, issues: &[String]) -> Markup {
    let request_id = agentprocess_auth::secrets::new_id("web_");
    let hidden = html! {
        input type="hidden" name="csrf" value=(csrf);
        input type="hidden" name="snapshot" value=(item.snapshot);
        input type="hidden" name="requestId" value=(request_id);
    };
    let note_issues: Vec<&String> = issues.iter().filter(|issue| issue.starts_with("note")).collect();
    let note = |label: &str| {
        html! {
            div class="field" {
                label for="note" { (label) }
                textarea id="note" name="note" rows="3" {}
                @for issue in &note_issues { p class="issue" role="alert" { (issue) } }
            }
        }
    };
    let empty = Map::new();
    let output = item.output.as_ref().unwrap_or(&empty);
    let complete = html! {
        (controls(output, issues))
        @if let Some(routes) = &item.next {
            div class="field" {
                label for="next" { "Where the run goes next" }
                select id="next" name="next" {
                    @for route in routes { option value=(route.to) { (route.to) @if let Some(when) = &route.when { " (" (when) ")" } } }
                }
            }
            div class="field" {
                label for="reason" { "Why" }
                textarea id="reason" name="reason" rows="2" {}
            }
        }
    };
    html! {
        section aria-labelledby="decide" {
            h2 id="decide" { "Your decision" }
            @match item.kind.as_str() {
                "approve" => {
                    form method="post" {
                        (hidden)
                        (note("Note (required to reject)"))
                        button type="submit" name="decision" value="approved" { "Approve" }
                        button type="submit" name="decision" value="rejected" { "Reject" }
                    }
                }
                "task" => {
                    form method="post" {
                        (hidden)
                        (complete)
                        button type="submit" name="decision" value="completed" { "Complete" }
                    }
                }
                _ => {
                    form method="post" {
                        (hidden)
                        fieldset {
                            legend { "Complete the step yourself" }
                            (complete)
                            button type="submit" name="decision" value="completed" { "Complete" }
                        }
                    }
                    form method="post" {
                        (hidden)
                        (note("Note (required)"))
                        button type="submit" name="decision" value="returned" { "Return to the agent" }
                        button type="submit" name="decision" value="failed" { "Fail the run" }
                    }
                }
            }
        }
    }
}

fn field<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
    form.iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

pub(super) async fn decide<S, B>(
    State(web): State<Arc<Web<S, B>>>,
    session: Session,
    uri: Uri,
    headers: HeaderMap,
    visitor: Visitor,
    Path((run_id, item_id)): Path<(String, String)>,
    Form(form): Form<Vec<(String, String)>>,
) -> Response
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    if let Err(error) = check_csrf(&headers, &web.origin, &session, field(&form, "csrf")).await {
        return error.into_response();
    }
    if let Err(response) = recent_enough(&web, &session, &uri, &visitor).await {
        return response;
    }
    let Visitor { who, caller } = visitor;
    let run = match web.service.get_run(&caller, &run_id).await {
        Ok(run) => run,
        Err(error) => return refused_page(&who, &error.into_tool_error()),
    };
    // A form sent again after its item closed (a second click) decides nothing.
    let Some(output) = run
        .work_items
        .iter()
        .find(|item| item.id == item_id)
        .map(|item| item.output.clone().unwrap_or_default())
    else {
        return draw(&session, &who, &run, &item_id, None).await;
    };
    let mut arguments = Map::new();
    arguments.insert("runId".to_owned(), json!(run_id));
    arguments.insert("workItemId".to_owned(), json!(item_id));
    for name in ["requestId", "snapshot", "decision", "note", "next", "reason"] {
        if let Some(value) = field(&form, name).filter(|value| !value.trim().is_empty()) {
            arguments.insert(name.to_owned(), json!(value));
        }
    }
    if field(&form, "decision") == Some("completed") {
        arguments.insert("output".to_owned(), Value::Object(output_of(&output, &form)));
    }
    let Some(spec) = agentprocess_mcp::arguments::spec("decide") else {
        return ApiError::retry().into_response();
    };
    match agentprocess_mcp::tools::call(&web.service, &caller, spec, arguments).await {
        Ok(_) => Redirect::to("/inbox?decided=1").into_response(),
        Err(error) => {
            // Drawn again on the run as it is now, with what was refused.
            let fresh = match web.service.get_run(&caller, &run_id).await {
                Ok(fresh) => fresh,
                Err(error) => return refused_page(&who, &error.into_tool_error()),
            };
            draw(&session, &who, &fresh, &item_id, Some(Outcome::Refused(error))).await
        }
    }
}
