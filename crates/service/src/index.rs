//! What the store's indexes need from a run: its state, input hashes and `get_work`
//! entries, derived from the engine's run each time it is written.

use agentprocess_engine::{Assignee, ProcessVersion, Run, StepState, run_state};
use agentprocess_format::StepKind;
use agentprocess_store::{RunRow, WorkKind, WorkRow};
use serde_json::Value;

use crate::ids::sha256_hex;
use crate::millis;

/// The row to write for `run`.
pub(crate) fn run_row(run: &Run, version: &ProcessVersion) -> Result<RunRow, serde_json::Error> {
    Ok(RunRow {
        id: run.id.clone(),
        process: run.process.clone(),
        version: run.version,
        mode: run.mode.as_str().to_owned(),
        state: run_state(run, run.updated_at).to_owned(),
        started_at: millis(run.started_at),
        updated_at: millis(run.updated_at),
        doc: serde_json::to_string(run)?,
        inputs: run
            .inputs
            .iter()
            .map(|(field, value)| (field.clone(), value_hash(value)))
            .collect(),
        work: work_rows(run, version),
    })
}

/// SHA-256 of a value's RFC 8785 JSON: equal values, equal hashes, whatever the
/// number spelling (`1080.50` and `1080.5`).
pub(crate) fn value_hash(value: &Value) -> String {
    let canonical = serde_json_canonicalizer::to_string(value).unwrap_or_else(|_| value.to_string());
    sha256_hex(canonical.as_bytes())
}

fn work_rows(run: &Run, version: &ProcessVersion) -> Vec<WorkRow> {
    if run.is_over() {
        return Vec::new();
    }
    let definitions = &version.process.document().steps;
    let mut rows = Vec::new();
    for (step, definition) in run.steps.iter().zip(definitions) {
        let row = |kind, since: jiff::Timestamp| WorkRow {
            run_id: run.id.clone(),
            step_id: step.id.clone(),
            kind,
            process: run.process.clone(),
            since: millis(since),
            lease_until: None,
            group: None,
            person: None,
        };
        if let Some(item) = &step.work_item {
            let mut entry = row(WorkKind::Item, item.created_at);
            match &item.assigned_to {
                Assignee::Group(group) => entry.group = Some(group.clone()),
                Assignee::Person(person) => entry.person = Some(person.to_lowercase()),
            }
            rows.push(entry);
        } else if matches!(definition.kind, StepKind::Agent(_))
            && matches!(step.state, Some(StepState::Ready | StepState::Claimed))
        {
            let mut entry = row(WorkKind::Agent, step.ready_since.unwrap_or(run.started_at));
            if step.state == Some(StepState::Claimed) {
                entry.lease_until = step.claim.as_ref().map(|claim| millis(claim.expires_at));
            }
            rows.push(entry);
        }
    }
    rows
}
