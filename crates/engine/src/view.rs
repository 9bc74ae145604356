//! What a run looks like from outside: the run view, run data, work items and the
//! snapshot (tools.md, "Shared shapes"). Computed from the run alone, at read time:
//! a lease that has passed its expiry reads as `ready`.

use agentprocess_format::{Next, StepKind};
use jiff::Timestamp;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::context::ProcessVersion;
use crate::model::{Assignee, Handoff, Run, StepRun, StepState};

/// The state a step shows at `now`: a claim whose lease has ended reads as `ready`.
pub fn step_state(step: &StepRun, now: Timestamp) -> Option<StepState> {
    match (step.state, &step.claim) {
        (Some(StepState::Claimed), Some(claim)) if claim.expires_at <= now => Some(StepState::Ready),
        (state, _) => state,
    }
}

/// `run.state` at `now` (spec §3.5): `active` while any step is ready or claimed,
/// `waiting` when only people, timers, events or escalations are pending.
pub fn run_state(run: &Run, now: Timestamp) -> &'static str {
    match &run.end {
        Some(end) if end.cancelled => "cancelled",
        Some(_) => "ended",
        None if run
            .steps
            .iter()
            .any(|step| matches!(step_state(step, now), Some(StepState::Ready | StepState::Claimed))) =>
        {
            "active"
        }
        None => "waiting",
    }
}

/// The run data: `{ inputs, steps }`, where `steps` holds every step with a current
/// completion or a history.
pub fn run_data(run: &Run) -> Value {
    let mut steps = Map::new();
    for step in &run.steps {
        if step.record.is_none() && step.history.is_empty() {
            continue;
        }
        // `exact::to_value`, not serde_json's, and no `json!` around caller data: those
        // respell exponents, and numbers come back as they were sent.
        let mut entry = match step.record.as_ref().map(agentprocess_format::exact::to_value) {
            Some(Ok(Value::Object(record))) => record,
            _ => Map::new(),
        };
        entry.insert(
            "history".to_owned(),
            agentprocess_format::exact::to_value(&step.history).unwrap_or(Value::Array(Vec::new())),
        );
        steps.insert(step.id.clone(), Value::Object(entry));
    }
    let mut data = Map::new();
    data.insert("inputs".to_owned(), Value::Object(run.inputs.clone()));
    data.insert("steps".to_owned(), Value::Object(steps));
    Value::Object(data)
}

/// How many bytes `value` takes as JSON: what `limits.runDataBytes` counts.
pub(crate) fn json_bytes(value: &impl serde::Serialize) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |json| json.len())
}

/// A hash of the run data at the moment of the read: it changes exactly when run data
/// changes (SHA-256 over its RFC 8785 canonical JSON, lowercase hex).
pub fn snapshot(run: &Run) -> String {
    let canonical = serde_json_canonicalizer::to_vec(&run_data(run)).unwrap_or_default();
    Sha256::digest(&canonical)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The run view returned by `start_run`, `get_run` and every write.
pub fn run_view(run: &Run, version: &ProcessVersion, now: Timestamp) -> Value {
    let snapshot = snapshot(run);
    let document = version.process.document();
    let ended = run
        .end
        .as_ref()
        .map(|end| json!({ "by": end.by, "at": end.at, "note": end.note }));
    let steps: Vec<Value> = run
        .steps
        .iter()
        .zip(&document.steps)
        .map(|(step, definition)| {
            let state = step_state(step, now);
            let mut view =
                json!({ "id": step.id, "kind": definition.kind.key(), "state": state.map(StepState::as_str) });
            if let (Some(due), Some(StepState::Ready | StepState::Claimed | StepState::Waiting)) = (step.due_at, state)
            {
                view["due"] = json!(due);
                view["overdue"] = json!(step.overdue);
            }
            view
        })
        .collect();
    let work_items: Vec<Value> = (0..run.steps.len())
        .filter_map(|index| work_item(run, version, index, &snapshot))
        .collect();
    let mut view = json!({
        "run": {
            "id": run.id, "process": run.process, "version": run.version, "mode": run.mode.as_str(),
            "state": run_state(run, now), "outcome": run.end.as_ref().and_then(|end| end.outcome.clone()),
            "ended": ended, "startedBy": run.started_by, "startedAt": run.started_at, "updatedAt": run.updated_at
        },
        "data": null,
        "steps": steps,
        "workItems": work_items,
        "body": version.process.body(),
    });
    // Set after `json!`, which would respell the numbers of the run data.
    view["data"] = run_data(run);
    view
}

/// The open work item of step `index`, as `get_run` and `get_work` show it.
pub fn work_item(run: &Run, version: &ProcessVersion, index: usize, snapshot: &str) -> Option<Value> {
    let step = &run.steps[index];
    let item = step.work_item.as_ref()?;
    let definition = &version.process.document().steps[index];
    let escalated = item.escalation.is_some();
    let (kind, text, decisions) = match &definition.kind {
        StepKind::Approve(text) => ("approve", text, vec!["approved", "rejected", "failed"]),
        StepKind::Task(text) => ("task", text, vec!["completed", "failed"]),
        StepKind::Agent(text) if escalated => ("agent", text, vec!["returned", "completed", "failed"]),
        _ => return None,
    };
    let written = &version.process.frontmatter()["steps"][index];
    let (output, evidence, next) = if kind == "approve" {
        (Value::Null, Value::Null, Value::Null)
    } else {
        let evidence: Vec<&str> = definition.evidence.iter().map(|kind| kind.name()).collect();
        (
            written.get("output").cloned().unwrap_or_else(|| json!({})),
            json!(evidence),
            routes(definition),
        )
    };
    let assigned_to = match &item.assigned_to {
        Assignee::Group(group) => json!({ "group": group }),
        Assignee::Person(person) => json!({ "person": person }),
    };
    let escalation = item
        .escalation
        .as_ref()
        .map(|e| json!({ "note": e.note, "by": e.by, "at": e.at }));
    let mut view = json!({
        "id": item.id, "stepId": step.id, "kind": kind, "text": text,
        "output": output, "evidence": evidence, "next": next,
        "handoff": handoff(&step.handoff), "assignedTo": assigned_to, "snapshot": snapshot,
        "due": step.due_at, "escalation": escalation,
        "decide": {
            "tool": "decide",
            "arguments": { "runId": run.id, "workItemId": item.id, "snapshot": snapshot, "requestId": "<new UUID>" },
            "decisions": decisions
        }
    });
    if run.mode == crate::model::Mode::Test {
        view["mode"] = json!("test");
    }
    Some(view)
}

/// `[{ to, when? }]` when the step's `next` is a list, else `null`.
pub fn routes(definition: &agentprocess_format::Step) -> Value {
    match &definition.next {
        Some(Next::Routes(routes)) => Value::Array(
            routes
                .iter()
                .map(|route| match &route.when {
                    Some(when) => json!({ "to": route.to, "when": when }),
                    None => json!({ "to": route.to }),
                })
                .collect(),
        ),
        _ => Value::Null,
    }
}

/// The handoff object, or `null` on a first attempt.
pub fn handoff(handoff: &Handoff) -> Value {
    if handoff.is_empty() {
        return Value::Null;
    }
    let mut view = Map::new();
    if let Some(progress) = &handoff.progress {
        view.insert("progress".to_owned(), json!(progress));
    }
    if let Some(returned) = &handoff.returned {
        view.insert(
            "returned".to_owned(),
            json!({ "note": returned.note, "by": returned.by, "at": returned.at }),
        );
    }
    if let Some(issues) = &handoff.issues {
        view.insert("issues".to_owned(), json!(issues));
    }
    Value::Object(view)
}
