//! `get_work` items of one run (tools.md): for an agent, the ready agent steps it may
//! claim, each with its `claim` call; for a person, the open work items assigned to
//! them, each with its `decide` call. Ordering and paging across runs are the store's.

use agentprocess_format::StepKind;
use jiff::Timestamp;
use serde_json::{Value, json};

use crate::context::{Actor, ProcessVersion, Settings};
use crate::guard::{assigned, handoff_at};
use crate::model::{Run, StepState};
use crate::view::{handoff, snapshot, step_state, work_item};

/// The items of `run` that `actor` may act on at `now`, oldest first.
pub fn work_items(
    run: &Run,
    version: &ProcessVersion,
    actor: &Actor,
    settings: &Settings,
    now: Timestamp,
) -> Vec<Value> {
    if run.is_over() {
        return Vec::new();
    }
    let steps = &version.process.document().steps;
    let mut found: Vec<(Timestamp, Value)> = Vec::new();
    match actor {
        Actor::Agent { .. } => {
            for (step, definition) in run.steps.iter().zip(steps) {
                if !matches!(definition.kind, StepKind::Agent(_)) || step_state(step, now) != Some(StepState::Ready) {
                    continue;
                }
                let since = step.ready_since.unwrap_or(run.started_at);
                let item = json!({
                    "runId": run.id, "stepId": step.id, "process": run.process, "version": run.version,
                    "mode": run.mode.as_str(), "readySince": since, "due": step.due_at, "overdue": step.overdue,
                    "handoff": handoff(&handoff_at(step, now)),
                    "claim": { "tool": "claim", "arguments": { "runId": run.id, "stepId": step.id, "requestId": "<new UUID>" } }
                });
                found.push((since, item));
            }
        }
        Actor::Person { .. } => {
            let snapshot = snapshot(run);
            for (index, step) in run.steps.iter().enumerate() {
                let Some(open) = &step.work_item else {
                    continue;
                };
                if !assigned(actor, &open.assigned_to, settings) {
                    continue;
                }
                if let Some(item) = work_item(run, version, index, &snapshot) {
                    let entry = json!({
                        "runId": run.id, "process": run.process, "version": run.version,
                        "mode": run.mode.as_str(), "workItem": item
                    });
                    found.push((open.created_at, entry));
                }
            }
        }
    }
    found.sort_by_key(|(since, _)| *since);
    found.into_iter().map(|(_, item)| item).collect()
}
