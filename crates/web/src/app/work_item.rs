//! A work item's page: what the person is asked (the step's text, the process body's
//! section for the step, the escalation, what an earlier attempt left), the run data
//! the decision is about with its evidence (images and PDFs previewed), and exactly
//! the decisions the item accepts, as forms. The form carries the item's snapshot and a
//! request id made when the page was drawn, so sending it twice decides once; a stale
//! snapshot shows the fresh data and asks again, keeping what the person entered.

use std::sync::Arc;

use agentprocess_engine::{Code, Decision, ItemKind, ProcessVersion, StepState, ToolError};
use agentprocess_format::EvidenceKind;
use agentprocess_service::Write;
use agentprocess_store::{Store, Upload};
use agentprocess_tools::commands;
use agentprocess_views::{RecordView, RunView, WorkItemView};
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};
use jiff::tz::TimeZone;
use maud::{Markup, html};
use serde_json::{Map, Value, json};
use tower_sessions::Session;

use super::check::verdict;
use super::evidence::{Files, evidence, files, size};
use super::facts::{changed_fields, label, step_title, summary, value_of};
use super::forms::{OUTPUT, controls, sent, values_of};
use super::layout::{page, refused};
use super::markdown::{render, section};
use super::refusals;
use super::time::{at_millis, when};
use super::{Visitor, recent_enough};
use crate::errors::ApiError;
use crate::session::{Web, check_csrf, csrf_token};

/// The title of a work item page that cannot be shown.
const CANNOT: &str = "This work item cannot be shown";

/// The form field of files to attach as evidence.
const FILES: &str = "evidence.files";
/// The form field of links to attach as evidence, one per line.
const LINKS: &str = "evidence.links";
/// The form field of a file already uploaded by an earlier try of the same form.
const UPLOADED: &str = "evidence.uploaded";
/// The form field of when the run last changed before the page was drawn.
const SEEN: &str = "seen";
/// The form field that completes an escalated step with the submission its check held.
const HELD: &str = "held";

/// Everything the page needs that is not in the run view.
struct Context<'a> {
    visitor: &'a Visitor,
    /// The run's process version: the declarations its facts are read by.
    version: Arc<ProcessVersion>,
    files: Files,
    /// Who decided the item and when, once it is closed.
    decided: Option<(String, i64)>,
}

/// The form as sent: its fields, and the files it uploaded.
#[derive(Default)]
struct Sent {
    fields: Vec<(String, String)>,
    uploaded: Vec<Upload>,
}

pub(super) async fn show(
    State(web): State<Arc<Web>>,
    session: Session,
    visitor: Visitor,
    Path((run_id, item_id)): Path<(String, String)>,
) -> Response {
    let run = match web.service.get_run(&visitor.caller, &run_id).await {
        Ok(run) => run,
        Err(error) => return refused(&visitor, CANNOT, &error.into_tool_error()),
    };
    draw(&web, &session, &visitor, &run, &item_id, None, Sent::default()).await
}

/// The page of item `item_id` of `run`, with what the last decision sent met.
async fn draw(
    web: &Web,
    session: &Session,
    visitor: &Visitor,
    run: &RunView,
    item_id: &str,
    refusal: Option<ToolError>,
    sent: Sent,
) -> Response {
    let csrf = match csrf_token(session).await {
        Ok(token) => token,
        Err(error) => return error.into_response(),
    };
    let open = run.work_items.iter().find(|item| item.id == item_id);
    let decided = match open {
        Some(_) => None,
        None => web
            .service
            .decision_of(&visitor.caller, &run.run.id, item_id)
            .await
            .ok()
            .flatten(),
    };
    let version = match web
        .service
        .version_for(&visitor.caller, &run.run.process, Some(run.run.version))
        .await
    {
        Ok(version) => version,
        Err(error) => return refused(visitor, CANNOT, &error.into_tool_error()),
    };
    let context = Context {
        visitor,
        version,
        files: files(web, visitor.caller.org(), run).await,
        decided,
    };
    let Some(item) = open else {
        return closed(run, &context, refusal.as_ref());
    };
    let body = html! {
        @if let Some(error) = &refusal {
            @if error.code == Code::Stale {
                div class="notice" role="alert" {
                    p { "The run changed since you opened this page. Its data below is fresh: look again, then decide." }
                    (changed(run, &sent.fields, &context.visitor.zone))
                }
            } @else {
                (refusals::shown(error))
            }
        }
        p { "Run " a href=(format!("/runs/{}", run.run.id)) { code { (run.run.id) } } " of " strong { (run.run.process) } " v" (run.run.version)
            @if item.mode.is_some() { " " span class="badge test" { "test run" } }
            @if let Some(due) = item.due { " · due " (when(&context.visitor.zone, due)) } }
        section aria-labelledby="asked" {
            h2 id="asked" class="visually-hidden" { "What you are asked" }
            p class="lead" { (item.text) }
            @if let Some(escalation) = &item.escalation {
                @if let Some(check) = &escalation.check {
                    div class="notice" {
                        p { "The step's check was unsure about the submission of " strong { (escalation.by) } ". Decide on it:" }
                        (verdict(check, &context.visitor.zone))
                    }
                    @if let Some(candidate) = &escalation.candidate {
                        (held(candidate))
                    }
                } @else {
                    div class="notice" { p { "Escalated: " (escalation.note) } }
                }
            }
            @if let Some(handoff) = &item.handoff {
                details { summary { "What the previous attempt left" } pre { (pretty(&json!(handoff))) } }
            }
        }
        (facts(run, &context))
        (before(run, &context))
        (instructions(&run.body, &item.step_id))
        (decisions(item, &csrf, refusal.as_ref().map_or(&[][..], |error| &error.issues), &sent, run.run.updated_at))
    };
    page(
        StatusCode::OK,
        &step_title(&run.body, &item.step_id),
        Some(context.visitor),
        body,
    )
}

/// The submission a check held: its summary, output, evidence and route.
fn held(candidate: &Value) -> Markup {
    html! {
        section aria-labelledby="held" {
            h3 id="held" { "The held submission" }
            @if let Some(summary) = candidate["summary"].as_str() { p { (summary) } }
            @if let Some(output) = candidate.get("output") { pre { (pretty(output)) } }
            @if let Some(evidence) = candidate["evidence"].as_array().filter(|items| !items.is_empty()) {
                ul { @for item in evidence { li { (item["kind"].as_str().unwrap_or_default()) ": " code { (item["ref"].as_str().unwrap_or_default()) } } } }
            }
            @if let Some(next) = candidate["next"].as_str() {
                p { "Next: " strong { (next) } @if let Some(reason) = candidate["reason"].as_str() { " (" (reason) ")" } }
            }
        }
    }
}

/// What the run recorded after the time the form was drawn (its `seen` field).
fn changed(run: &RunView, form: &[(String, String)], zone: &TimeZone) -> Markup {
    let Some(seen) = sent(form, SEEN).and_then(|seen| seen.parse::<jiff::Timestamp>().ok()) else {
        return html! {};
    };
    let mut since: Vec<(&String, &agentprocess_views::RecordView)> = run
        .data
        .steps
        .iter()
        .flat_map(|(step, data)| {
            data.history
                .iter()
                .chain(data.current.iter())
                .map(move |record| (step, record))
        })
        .filter(|(_, record)| record.at > seen)
        .collect();
    since.sort_by_key(|(_, record)| record.at);
    html! {
        @if !since.is_empty() {
            p { "Since then:" }
            ul {
                @for (step, record) in since {
                    li { strong { (step) } " by " (record.by) " at " (when(zone, record.at))
                         @if let Some(decision) = record.decision { ": " (decision.as_str()) } }
                }
            }
        }
    }
}

/// The page of an item that is no longer open.
fn closed(run: &RunView, context: &Context<'_>, refusal: Option<&ToolError>) -> Response {
    let body = html! {
        // A second click on a form whose first decided is no error to the person.
        @if let Some(error) = refusal.filter(|error| error.code != Code::Conflict) {
            (refusals::shown(error))
        }
        div class="notice" role="status" {
            @if let Some((who, at)) = &context.decided {
                @let record = decision_record(run, who, *at);
                p { "This work item was decided by " strong { (who) } " at "
                    (at_millis(&context.visitor.zone, *at))
                    @if let Some(decision) = record.and_then(|record| record.decision) { ": " strong { (decision.as_str()) } }
                    "." }
                @if let Some(note) = record.and_then(|record| record.note.as_ref()) { p { "Their note: " (note) } }
            } @else {
                p { "This work item is no longer open: its run moved on without it." }
            }
            p { a href=(format!("/runs/{}", run.run.id)) { "See the run" } " · " a href="/inbox" { "Back to the inbox" } }
        }
        (facts(run, context))
        (before(run, context))
    };
    page(StatusCode::OK, "Work item closed", Some(context.visitor), body)
}

/// The record a decision by `who` at `at` (epoch milliseconds) left, current or
/// reworked since.
fn decision_record<'a>(run: &'a RunView, who: &str, at: i64) -> Option<&'a RecordView> {
    run.data
        .steps
        .values()
        .flat_map(|data| data.current.iter().chain(data.history.iter()))
        .find(|record| record.by == who && record.at.as_millisecond() == at)
}

/// The process body's section for the step, or the whole body folded away.
fn instructions(body: &str, step: &str) -> Markup {
    html! {
        @if let Some(part) = section(body, step) {
            div class="body section" { (render(part)) }
            details { summary { "The whole process description" } div class="body" { (render(body)) } }
        } @else if !body.trim().is_empty() {
            details { summary { "The process description" } div class="body" { (render(body)) } }
        }
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// The facts the decision is about: the inputs, then each step's current record in the
/// process's order, every field labelled and written for its type, with its evidence
/// (name, size, SHA-256, a download link and, for images and PDFs, a preview). Only a
/// step that is done holds a current fact: the record of a step reached again (the
/// one being decided, or one a rejection sent the run back past) is an earlier
/// attempt, shown by [`before`].
fn facts(run: &RunView, context: &Context<'_>) -> Markup {
    let document = context.version.process.document();
    html! {
        section aria-labelledby="facts" {
            h2 id="facts" { "The facts" }
            h3 { "Started with" }
            (summary(&document.inputs, &run.data.inputs, &context.visitor.zone))
            @for step in document.steps.iter().filter(|step| done(run, &step.id)) {
                @if let Some(data) = run.data.steps.get(&step.id) {
                    @if let Some(record) = &data.current {
                        h3 { (step_title(&run.body, &step.id)) }
                        p class="quiet" { "By " (record.by) " at " (when(&context.visitor.zone, record.at))
                            @if let Some(decision) = record.decision { " · " strong { (decision.as_str()) } } }
                        @if let Some(said) = &record.summary { p { (said) } }
                        @if let Some(output) = record.output.as_ref().filter(|output| !output.is_empty()) {
                            (summary(&step.output, output, &context.visitor.zone))
                        }
                        @for item in record.evidence.iter().flatten() {
                            (evidence(item, context.files.of(&item.reference)))
                        }
                        @if let Some(note) = &record.note { p { "Note: " (note) } }
                        @if let Some(check) = &record.check { (verdict(check, &context.visitor.zone)) }
                    } @else if let Some(check) = &data.check {
                        h3 { (step_title(&run.body, &step.id)) }
                        (verdict(check, &context.visitor.zone))
                    }
                }
            }
        }
    }
}

/// Whether step `id` of `run` is done, so that its record is a current fact.
fn done(run: &RunView, id: &str) -> bool {
    run.steps
        .iter()
        .any(|step| step.id == id && step.state == Some(StepState::Done))
}

/// What happened before: each step's earlier attempts with their decisions and notes
/// (for a step that is not done, its last record too), and, where a done step was
/// done again, the fields its current record changed.
fn before(run: &RunView, context: &Context<'_>) -> Markup {
    let document = context.version.process.document();
    let earlier: Vec<_> = document
        .steps
        .iter()
        .filter_map(|step| {
            let data = run.data.steps.get(&step.id)?;
            let reopened = !done(run, &step.id);
            let records: Vec<&RecordView> = data
                .history
                .iter()
                .chain(data.current.iter().filter(|_| reopened))
                .collect();
            let changes = match (reopened, data.history.last(), &data.current) {
                (false, Some(last), Some(current)) => outputs_changed(last, current),
                _ => Vec::new(),
            };
            (!records.is_empty()).then_some((step, records, changes))
        })
        .collect();
    html! {
        @if !earlier.is_empty() {
            section aria-labelledby="before" {
                h2 id="before" { "What happened before" }
                @for (step, records, changes) in earlier {
                    h3 { (step_title(&run.body, &step.id)) }
                    ol {
                        @for record in records {
                            li {
                                @match record.decision {
                                    Some(decision) => strong { (sentence_case(decision.as_str())) },
                                    None => strong { "Submitted" },
                                }
                                " by " (record.by) " at " (when(&context.visitor.zone, record.at))
                                @if let Some(note) = &record.note { ": " q { (note) } }
                                @if let Some(said) = &record.summary { p { (said) } }
                            }
                        }
                    }
                    @if !changes.is_empty() {
                        table {
                            caption { "Changed since the earlier attempt" }
                            thead { tr { th scope="col" { "Field" } th scope="col" { "Before" } th scope="col" { "Now" } } }
                            tbody {
                                @for (name, was, is) in changes {
                                    @let field = step.output.get(name);
                                    tr {
                                        th scope="row" data-label="Field" { (label(name)) }
                                        td data-label="Before" { @match was { Some(value) => (value_of(field, value, &context.visitor.zone)), None => "Not given" } }
                                        td data-label="Now" { @match is { Some(value) => (value_of(field, value, &context.visitor.zone)), None => "Not given" } }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The output fields `current` changed from `last`.
fn outputs_changed<'a>(
    last: &'a RecordView,
    current: &'a RecordView,
) -> Vec<(&'a str, Option<&'a Value>, Option<&'a Value>)> {
    match (&last.output, &current.output) {
        (Some(before), Some(now)) => changed_fields(before, now),
        _ => Vec::new(),
    }
}

/// `approved` as a sentence starts: Approved.
fn sentence_case(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The forms of exactly the decisions `item` accepts, holding what was `sent`.
fn decisions(item: &WorkItemView, csrf: &str, issues: &[String], sent: &Sent, seen: jiff::Timestamp) -> Markup {
    let request_id = agentprocess_auth::secrets::new_id("web_");
    let hidden = html! {
        input type="hidden" name="csrf" value=(csrf);
        input type="hidden" name="snapshot" value=(item.snapshot);
        input type="hidden" name="requestId" value=(request_id);
        input type="hidden" name=(SEEN) value=(seen);
    };
    let kept = |name: &str| {
        sent.fields
            .iter()
            .find(|(key, _)| key == name)
            .map_or("", |(_, value)| value.as_str())
    };
    let beside = |prefix: &str| -> Vec<&String> { issues.iter().filter(|issue| issue.starts_with(prefix)).collect() };
    let note = |label: &str| {
        html! {
            div class="field" {
                label for="note" { (label) }
                textarea id="note" name="note" rows="3" { (kept("note")) }
                @for issue in beside("note") { p class="issue" role="alert" { (issue) } }
            }
        }
    };
    let empty = Map::new();
    let output = item.output.as_ref().unwrap_or(&empty);
    let wanted = item.evidence.as_deref().unwrap_or_default();
    let complete = html! {
        (controls(OUTPUT, output, &sent.fields, issues))
        fieldset {
            legend { "Evidence" @if !wanted.is_empty() { " (required: " (wanted.iter().map(|kind| kind.name()).collect::<Vec<_>>().join(", ")) ")" } }
            @for upload in &sent.uploaded {
                div {
                    input type="checkbox" id=(format!("kept-{}", upload.id)) name=(UPLOADED) value=(upload.id) checked;
                    label class="inline" for=(format!("kept-{}", upload.id)) { "Attached: " (upload.file_name) " (" (size(upload.bytes)) ")" }
                }
            }
            div class="field" {
                label for=(FILES) { "Files" }
                input id=(FILES) name=(FILES) type="file" multiple;
            }
            div class="field" {
                label for=(LINKS) { "Links (one per line)" }
                textarea id=(LINKS) name=(LINKS) rows="2" { (kept(LINKS)) }
            }
            @for issue in beside("evidence") { p class="issue" role="alert" { (issue) } }
        }
        @if let Some(routes) = &item.next {
            div class="field" {
                label for="next" { "Where the run goes next" }
                select id="next" name="next" {
                    @for route in routes { option value=(route.to) selected[kept("next") == route.to] { (route.to) @if let Some(when) = &route.when { " (" (when) ")" } } }
                }
                @for issue in beside("next") { p class="issue" role="alert" { (issue) } }
            }
            div class="field" {
                label for="reason" { "Why" }
                textarea id="reason" name="reason" rows="2" { (kept("reason")) }
                @for issue in beside("reason") { p class="issue" role="alert" { (issue) } }
            }
        }
    };
    let held = item
        .escalation
        .as_ref()
        .is_some_and(|escalation| escalation.candidate.is_some());
    html! {
        section aria-labelledby="decide" {
            h2 id="decide" { "Your decision" }
            @if held {
                form method="post" {
                    (hidden)
                    input type="hidden" name=(HELD) value="1";
                    button type="submit" class="primary" name="decision" value="completed" { "Complete with the held submission" }
                }
            }
            @match item.kind {
                ItemKind::Approve => {
                    form method="post" {
                        (hidden)
                        (note("Note (required to reject)"))
                        button type="submit" class="primary" name="decision" value="approved" { "Approve" }
                        button type="submit" class="warning" name="decision" value="rejected" { "Reject" }
                    }
                }
                ItemKind::Task if item.escalation.is_none() => {
                    form method="post" enctype="multipart/form-data" {
                        (hidden)
                        (complete)
                        button type="submit" class="primary" name="decision" value="completed" { "Complete" }
                    }
                }
                _ => {
                    form method="post" enctype="multipart/form-data" {
                        (hidden)
                        fieldset {
                            legend { "Complete the step yourself" }
                            (complete)
                            button type="submit" class="primary" name="decision" value="completed" { "Complete" }
                        }
                    }
                    form method="post" {
                        (hidden)
                        (note("Note (required)"))
                        button type="submit" name="decision" value="returned" {
                            @if item.kind == ItemKind::Task { "Return to its person" } @else { "Return to the agent" }
                        }
                        button type="submit" class="warning" name="decision" value="failed" { "Fail the run" }
                    }
                }
            }
        }
    }
}

/// A file part of the form.
struct File {
    name: String,
    content_type: String,
    bytes: Vec<u8>,
}

/// The fields and files of a decision form, sent url-encoded or as multipart.
async fn read_form(request: Request, limit: usize) -> Result<(Vec<(String, String)>, Vec<File>), Response> {
    let multipart = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("multipart/form-data"));
    if !multipart {
        let axum::extract::Form(fields) = axum::extract::Form::<Vec<(String, String)>>::from_request(request, &())
            .await
            .map_err(IntoResponse::into_response)?;
        return Ok((fields, Vec::new()));
    }
    let mut parts = Multipart::from_request(request, &())
        .await
        .map_err(IntoResponse::into_response)?;
    let unreadable = |error: axum::extract::multipart::MultipartError| {
        ApiError::invalid("the form could not be read", vec![error.body_text()]).into_response()
    };
    let (mut fields, mut files) = (Vec::new(), Vec::new());
    while let Some(mut part) = parts.next_field().await.map_err(unreadable)? {
        let name = part.name().unwrap_or_default().to_owned();
        if name == FILES {
            let file_name = part.file_name().unwrap_or_default().to_owned();
            let content_type = part.content_type().unwrap_or("application/octet-stream").to_owned();
            let Some(bytes) = crate::app::forms::part_bytes(&mut part, limit)
                .await
                .map_err(unreadable)?
            else {
                let issue = format!("{FILES}: {file_name} is more than maxUploadBytes ({limit}) bytes");
                return Err(ApiError::invalid("the form was refused; nothing was stored", vec![issue]).into_response());
            };
            // A file input left empty sends one part with no name and no bytes.
            if !(file_name.is_empty() && bytes.is_empty()) {
                files.push(File {
                    name: file_name,
                    content_type,
                    bytes,
                });
            }
        } else {
            let text = part.text().await.map_err(unreadable)?;
            fields.push((name, text));
        }
    }
    Ok((fields, files))
}

pub(super) async fn decide(
    State(web): State<Arc<Web>>,
    session: Session,
    uri: Uri,
    headers: HeaderMap,
    visitor: Visitor,
    Path((run_id, item_id)): Path<(String, String)>,
    request: Request,
) -> Response {
    let limit = web.service.settings().max_upload_bytes;
    let (form, files) = match read_form(request, limit).await {
        Ok(read) => read,
        Err(response) => return response,
    };
    if let Err(error) = check_csrf(&headers, &web.origin, &session, sent(&form, "csrf")).await {
        return error.into_response();
    }
    if let Err(response) = recent_enough(&web, &uri, &visitor).await {
        return response;
    }
    let caller = &visitor.caller;
    let run = match web.service.get_run(caller, &run_id).await {
        Ok(run) => run,
        Err(error) => return refused(&visitor, CANNOT, &error.into_tool_error()),
    };
    // A form sent again after its item closed (a second click) decides nothing.
    let Some(output) = run
        .work_items
        .iter()
        .find(|item| item.id == item_id)
        .map(|item| item.output.clone().unwrap_or_default())
    else {
        return draw(&web, &session, &visitor, &run, &item_id, None, Sent::default()).await;
    };
    let request_id = sent(&form, "requestId").unwrap_or_default().to_owned();
    let uploaded = match upload(&web, caller, &request_id, &form, files).await {
        Ok(uploaded) => uploaded,
        Err(error) => {
            let sent = Sent {
                fields: form,
                uploaded: Vec::new(),
            };
            return draw(&web, &session, &visitor, &run, &item_id, Some(error), sent).await;
        }
    };
    let field = |name: &str| sent(&form, name).map(str::to_owned);
    let mut decide = commands::Decide {
        run_id: run_id.clone(),
        work_item_id: item_id.clone(),
        request_id: field("requestId"),
        snapshot: field("snapshot"),
        decision: field("decision"),
        note: field("note"),
        next: field("next"),
        reason: field("reason"),
        output: None,
        evidence: None,
    };
    // Completing with the held submission sends no output: the server uses the candidate.
    if sent(&form, "decision") == Some("completed") && sent(&form, HELD).is_none() {
        decide.output = Some(values_of(OUTPUT, &output, &form));
        let links = sent(&form, LINKS).unwrap_or_default().lines().map(str::trim);
        let evidence: Vec<commands::Evidence> = uploaded
            .iter()
            .map(|upload| commands::Evidence {
                kind: EvidenceKind::File,
                reference: upload.id.clone(),
            })
            .chain(links.filter(|link| !link.is_empty()).map(|link| commands::Evidence {
                kind: EvidenceKind::Link,
                reference: link.to_owned(),
            }))
            .collect();
        decide.evidence = (!evidence.is_empty()).then_some(evidence);
    }
    match commands::perform(&web.service, caller, &decide).await {
        Ok(_) => {
            let decided = sent(&form, "decision")
                .and_then(Decision::parse)
                .map_or("", Decision::as_str);
            Redirect::to(&format!("/inbox?decided={decided}")).into_response()
        }
        Err(error) => {
            // Drawn again on the run as it is now, with what was refused, holding what
            // the person entered and the files they attached.
            let fresh = match web.service.get_run(caller, &run_id).await {
                Ok(fresh) => fresh,
                Err(error) => return refused(&visitor, CANNOT, &error.into_tool_error()),
            };
            let sent = Sent { fields: form, uploaded };
            draw(&web, &session, &visitor, &fresh, &item_id, Some(error), sent).await
        }
    }
}

/// The files of the form stored as uploads (each with a request id made from the
/// form's, so sending the form again stores nothing twice), after those an earlier try
/// of the form uploaded and the person kept.
async fn upload(
    web: &Web,
    caller: &agentprocess_service::Caller,
    request_id: &str,
    form: &[(String, String)],
    files: Vec<File>,
) -> Result<Vec<Upload>, ToolError> {
    let mut uploaded = Vec::new();
    for (_, id) in form.iter().filter(|(key, _)| key == UPLOADED) {
        // Only an upload of this organization is found; a made-up id is dropped.
        if let Ok(Some(upload)) = web.service.store().upload(caller.org(), id).await {
            uploaded.push(upload);
        }
    }
    for (index, file) in files.into_iter().enumerate() {
        let mut arguments = Map::new();
        arguments.insert("fileName".to_owned(), json!(file.name));
        arguments.insert("contentType".to_owned(), json!(file.content_type));
        arguments.insert(
            "contentSha256".to_owned(),
            json!(agentprocess_service::sha256_hex(&file.bytes)),
        );
        let write = Write::from_arguments(format!("{request_id}.file-{index}"), &arguments);
        let result = web
            .service
            .upload(caller, &file.name, &file.content_type, file.bytes, &write)
            .await
            .map_err(agentprocess_service::Error::into_tool_error)?;
        match web.service.store().upload(caller.org(), &result.id).await {
            Ok(Some(upload)) => uploaded.push(upload),
            _ => {
                return Err(ToolError::new(
                    Code::Retry,
                    agentprocess_service::RETRY_MESSAGE,
                    Vec::new(),
                ));
            }
        }
    }
    Ok(uploaded)
}
