//! What the store's indexes need from a run: its state, input hashes and `get_work`
//! entries, derived from the engine's run each time it is written. Work entries are
//! written as a change against the run before the write, so a claim touches one row.

use agentprocess_engine::{Actor, Assignee, ProcessVersion, Run, Settings, StepState, run_state, work_items};
use agentprocess_format::StepKind;
use agentprocess_store::{RunRow, WorkKind, WorkRow};
use agentprocess_views::WorkEntry;
use serde_json::Value;

use crate::ids::sha256_hex;
use crate::millis;
use crate::stored::Loaded;

/// The row to write for `run`, with its pieces and work entries new since `before` (the
/// run as it was read; `None` for a new run), and whether the run keeps any pieces.
pub(crate) fn run_row(
    before: Option<&Loaded>,
    run: &Run,
    version: &ProcessVersion,
    settings: &Settings,
) -> Result<(RunRow, bool), serde_json::Error> {
    let previous = before
        .map(|before| work_rows(before, version, settings))
        .unwrap_or_default();
    let split = crate::stored::split(before, run)?;
    let current = work_rows(run, version, settings);
    let gone = previous
        .iter()
        .filter(|old| !current.iter().any(|row| row.step_id == old.step_id))
        .map(|old| old.step_id.clone())
        .collect();
    let work = current.into_iter().filter(|row| !previous.contains(row)).collect();
    let row = RunRow {
        id: run.id.clone(),
        process: run.process.clone(),
        version: run.version,
        mode: run.mode,
        state: run_state(run, run.updated_at),
        started_at: millis(run.started_at),
        updated_at: millis(run.updated_at),
        doc: split.doc,
        pieces: split.pieces,
        inputs: run
            .inputs
            .iter()
            .map(|(field, value)| (field.clone(), value_hash(value)))
            .collect(),
        work,
        gone,
    };
    Ok((row, split.apart))
}

/// SHA-256 of a value's RFC 8785 JSON: equal values, equal hashes, whatever the
/// number spelling (`1080.50` and `1080.5`).
pub(crate) fn value_hash(value: &Value) -> String {
    let canonical = serde_json_canonicalizer::to_string(value).unwrap_or_else(|_| value.to_string());
    sha256_hex(canonical.as_bytes())
}

fn work_rows(run: &Run, version: &ProcessVersion, settings: &Settings) -> Vec<WorkRow> {
    if run.is_over() {
        return Vec::new();
    }
    // Ready agent steps carry their get_work item, the same for every agent.
    let anyone = Actor::Agent {
        id: String::new(),
        groups: Vec::new(),
    };
    let items = work_items(run, version, &anyone, settings, run.updated_at);
    let item_of = |step: &str| {
        let work = items.iter().find(|work| crate::work::step_id(run, work) == step)?;
        match WorkEntry::of(run, version, work.clone())? {
            WorkEntry::Agent(item) => serde_json::to_string(&item).ok(),
            WorkEntry::Person(_) => None,
        }
    };
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
            item: None,
            due_at: step.due_at.map(millis),
            bound_to: None,
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
            entry.bound_to = version
                .agents
                .covering(&step.id)
                .map(|(key, _)| format!("{}/{key}", version.number));
            if step.state == Some(StepState::Claimed) {
                entry.lease_until = step.claim.as_ref().map(|claim| millis(claim.expires_at));
            } else {
                entry.item = item_of(&step.id);
            }
            rows.push(entry);
        }
    }
    rows
}
