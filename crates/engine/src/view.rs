//! What the run shows at a moment: step and run states, the run data and its
//! snapshot (tools.md, "Shared shapes"). Computed from the run alone, at read time: a
//! lease that has passed its expiry reads as `ready`. The views built on these (the
//! run view, work items) are `agentprocess-views`'.

use agentprocess_format::{Step, StepKind};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::{Decision, Record, Run, StepRun, StepState, WorkItem};

/// The state a step shows at `now`: a claim whose lease has ended reads as `ready`.
pub fn step_state(step: &StepRun, now: Timestamp) -> Option<StepState> {
    match (step.state, &step.claim) {
        (Some(StepState::Claimed), Some(claim)) if claim.expires_at <= now => Some(StepState::Ready),
        (state, _) => state,
    }
}

/// `run.state` (spec §3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// Some step is ready or claimed.
    Active,
    /// Only people, timers, events or escalations are pending.
    Waiting,
    /// A finish, a rejection or a failure ended it.
    Ended,
    /// `cancel` ended it.
    Cancelled,
}

impl RunState {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Active => "active",
            RunState::Waiting => "waiting",
            RunState::Ended => "ended",
            RunState::Cancelled => "cancelled",
        }
    }

    /// The state a wire name stands for.
    pub fn parse(text: &str) -> Option<Self> {
        [
            RunState::Active,
            RunState::Waiting,
            RunState::Ended,
            RunState::Cancelled,
        ]
        .into_iter()
        .find(|state| state.as_str() == text)
    }
}

/// `run.state` at `now`: `active` while any step is ready or claimed, `waiting` when
/// only people, timers, events or escalations are pending.
pub fn run_state(run: &Run, now: Timestamp) -> RunState {
    match &run.end {
        Some(end) if end.cancelled => RunState::Cancelled,
        Some(_) => RunState::Ended,
        None if run
            .steps
            .iter()
            .any(|step| matches!(step_state(step, now), Some(StepState::Ready | StepState::Claimed))) =>
        {
            RunState::Active
        }
        None => RunState::Waiting,
    }
}

/// What an open work item asks of a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked<'a> {
    /// What kind of work item it is.
    pub kind: ItemKind,
    /// The step's text.
    pub text: &'a str,
    /// The decisions `decide` accepts on it.
    pub decisions: &'static [Decision],
}

/// A work item's kind: the step a person decides, or an escalated agent step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
    /// An approval.
    Approve,
    /// A person's task.
    Task,
    /// An agent step escalated to people.
    Agent,
}

impl ItemKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Approve => "approve",
            ItemKind::Task => "task",
            ItemKind::Agent => "agent",
        }
    }
}

/// What `item`, open on a step defined by `definition`, asks; `None` for a step no
/// person decides.
pub fn asked<'a>(definition: &'a Step, item: &WorkItem) -> Option<Asked<'a>> {
    use Decision::{Approved, Completed, Failed, Rejected, Returned};
    let (kind, text, decisions): (_, _, &'static [Decision]) = match &definition.kind {
        StepKind::Approve(text) => (ItemKind::Approve, text, &[Approved, Rejected, Failed]),
        StepKind::Task(text) if item.escalation.is_some() => (ItemKind::Task, text, &[Returned, Completed, Failed]),
        StepKind::Task(text) => (ItemKind::Task, text, &[Completed, Failed]),
        StepKind::Agent(text) if item.escalation.is_some() => (ItemKind::Agent, text, &[Returned, Completed, Failed]),
        _ => return None,
    };
    Some(Asked { kind, text, decisions })
}

/// The run data as JSON: `{ inputs, steps }`, where `steps` holds every step with a
/// current completion or a history. What [`snapshot`] hashes and `runDataBytes` counts.
pub fn run_data(run: &Run) -> Value {
    let mut steps = Map::new();
    for step in &run.steps {
        let pending = step.pending_check();
        if step.record.is_none() && step.history.is_empty() && pending.is_none() {
            continue;
        }
        // `exact::to_value`, not serde_json's, and no `json!` around caller data: those
        // respell exponents, and numbers come back as they were sent.
        let mut entry = match step.record.as_ref().map(agentprocess_format::exact::to_value) {
            Some(Ok(Value::Object(record))) => record,
            _ => Map::new(),
        };
        if let Some(pending) = pending.and_then(|check| agentprocess_format::exact::to_value(check).ok()) {
            entry.insert("check".to_owned(), pending);
        }
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
    crate::guard::sha256_hex(&canonical)
}

/// The run data with `record` in place must fit `limits.runDataBytes`.
pub(crate) fn run_data_cap(run: &Run, index: usize, record: &Record, limit: usize) -> Option<String> {
    let mut with = run.clone();
    with.steps[index].record = Some(record.clone());
    let bytes = json_bytes(&run_data(&with));
    (bytes > limit)
        .then(|| format!("run data: {bytes} bytes with this submission; the limit is {limit} (limits.runDataBytes)"))
}
