//! A run as the engine keeps it: everything needed to answer any call, and nothing of
//! a caller's credentials but token hashes. Serializable so the store can keep it as
//! one row.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use agentprocess_format::EvidenceKind;

use crate::acceptance::EvidenceItem;
use crate::verdict::CheckRecord;

/// `live` or `test` (spec §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Real work.
    Live,
    /// A rehearsal: agents cause no external effects, nobody is notified.
    Test,
}

impl Mode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Live => "live",
            Mode::Test => "test",
        }
    }

    /// The mode a wire name stands for.
    pub fn parse(text: &str) -> Option<Self> {
        [Mode::Live, Mode::Test].into_iter().find(|mode| mode.as_str() == text)
    }
}

/// One run of one pinned process version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// The run id.
    pub id: String,
    /// The process name.
    pub process: String,
    /// The pinned version number; never changes.
    pub version: u32,
    /// `live` or `test`.
    pub mode: Mode,
    /// Who started it: a person value, or an agent id.
    pub started_by: String,
    /// The person who started it; `None` when an agent did.
    pub initiator: Option<String>,
    /// When it started.
    pub started_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// Set once the run has ended or been cancelled.
    pub end: Option<End>,
    /// The inputs, numbers kept as sent.
    #[serde(deserialize_with = "agentprocess_format::exact::deserialize_object")]
    pub inputs: Map<String, Value>,
    /// One entry per step of the process, in the process's order.
    pub steps: Vec<StepRun>,
    /// Events delivered and not yet consumed, oldest first.
    pub events: Vec<HeldEvent>,
    /// Counts completions, so that rework knows what came after what.
    pub completions: u64,
    /// Ids of work items that received a decision, so a second decision is
    /// `already_decided` rather than `not_found`.
    pub decided: Vec<String>,
}

impl Run {
    /// A live run of version `version` of `process`, started by `started_by` (an agent:
    /// no initiator) at `at`, with `steps`, no inputs, nothing held and nothing decided
    /// yet. Its other fields are set with struct update syntax.
    pub fn new(
        id: impl Into<String>,
        (process, version): (&str, u32),
        started_by: &str,
        at: Timestamp,
        steps: Vec<StepRun>,
    ) -> Self {
        Self {
            id: id.into(),
            process: process.to_owned(),
            version,
            mode: Mode::Live,
            started_by: started_by.to_owned(),
            initiator: None,
            started_at: at,
            updated_at: at,
            end: None,
            inputs: Map::new(),
            steps,
            events: Vec::new(),
            completions: 0,
            decided: Vec::new(),
        }
    }

    /// The step with this id.
    pub fn step(&self, id: &str) -> Option<&StepRun> {
        self.steps.iter().find(|step| step.id == id)
    }

    /// Whether the run has ended or been cancelled.
    pub fn is_over(&self) -> bool {
        self.end.is_some()
    }
}

/// How a run ended (`run.ended` plus state and outcome).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct End {
    /// `true` for `cancel`, `false` for an outcome.
    pub cancelled: bool,
    /// The finish outcome, `rejected` or `failed`; `None` when cancelled.
    pub outcome: Option<String>,
    /// Who ended it (`server` for a finish).
    pub by: String,
    /// When.
    pub at: Timestamp,
    /// The cancel reason, the `failed` note, the rejection note, or `None` for a finish.
    pub note: Option<String>,
}

/// The state of a step (spec §3.5); `None` in [`StepRun::state`] is "not reached".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepState {
    /// An agent step anyone allowed may claim.
    Ready,
    /// An agent step held by a live claim.
    Claimed,
    /// Waiting on a person, a timer, an event or the branches of a fork.
    Waiting,
    /// Completed.
    Done,
    /// Its `failed` decision, or a server failure, ended the run.
    Failed,
    /// Unfinished when the run ended.
    Cancelled,
}

impl StepState {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            StepState::Ready => "ready",
            StepState::Claimed => "claimed",
            StepState::Waiting => "waiting",
            StepState::Done => "done",
            StepState::Failed => "failed",
            StepState::Cancelled => "cancelled",
        }
    }
}

/// A step within a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRun {
    /// The step id.
    pub id: String,
    /// Its state, `None` when not currently reached.
    pub state: Option<StepState>,
    /// Its current completion in run data.
    pub record: Option<Record>,
    /// Earlier completions, oldest first.
    pub history: Vec<Record>,
    /// The completion counter when `record` was made.
    pub completed: Option<u64>,
    /// The completion counter when the step was last entered.
    pub entered: Option<u64>,
    /// When it last became ready or waiting.
    pub ready_since: Option<Timestamp>,
    /// When its `due` passes, while current.
    pub due_at: Option<Timestamp>,
    /// Whether `due` has passed while it was current.
    pub overdue: bool,
    /// How many times it has been entered; names its timers.
    pub attempt: u32,
    /// The live claim of an agent step.
    pub claim: Option<Claim>,
    /// The open work item of a person step or an escalation.
    pub work_item: Option<WorkItem>,
    /// What the previous attempt left for the next one.
    pub handoff: Handoff,
    /// Hashes of this step's most recent dead tokens (renewed, submitted, escalated,
    /// expired), so that using one is `stale` rather than `invalid`.
    pub retired_tokens: Vec<String>,
}

impl StepRun {
    /// A step not yet reached.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            state: None,
            record: None,
            history: Vec::new(),
            completed: None,
            entered: None,
            ready_since: None,
            due_at: None,
            overdue: false,
            attempt: 0,
            claim: None,
            work_item: None,
            handoff: Handoff::default(),
            retired_tokens: Vec::new(),
        }
    }

    /// An unsure check's verdict while it waits on a person: run data shows it as the
    /// step's `check` (check-1 §3).
    pub fn pending_check(&self) -> Option<&CheckRecord> {
        self.work_item
            .as_ref()
            .and_then(|item| item.escalation.as_ref())
            .and_then(|escalation| escalation.check.as_ref())
    }

    /// Ends the claim, keeping its token's hash so a late use reads as `stale`.
    pub fn retire_claim(&mut self) -> Option<Claim> {
        let claim = self.claim.take()?;
        self.retired_tokens.push(claim.token_hash.clone());
        let excess = self.retired_tokens.len().saturating_sub(RETIRED_TOKENS_KEPT);
        self.retired_tokens.drain(..excess);
        Some(claim)
    }
}

/// How many dead token hashes a step remembers.
pub(crate) const RETIRED_TOKENS_KEPT: usize = 32;

/// One completion of a step: `data.steps.<id>` without `history`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// `output`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "agentprocess_format::exact::deserialize_optional_object"
    )]
    pub output: Option<Map<String, Value>>,
    /// `evidence`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Vec<Evidence>>,
    /// `summary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// `next`, when chosen from a list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// `reason` for that choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `decision`: `approved`, `rejected` or `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// `note`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The step's check verdict (check-1), when it has a check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckRecord>,
    /// Who completed it.
    pub by: String,
    /// When.
    pub at: Timestamp,
}

/// An evidence item in run data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// `file` or `link`.
    pub kind: EvidenceKind,
    /// The upload id or the link.
    #[serde(rename = "ref")]
    pub reference: String,
    /// For a file: the SHA-256 recorded at upload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

impl From<EvidenceItem> for Evidence {
    fn from(item: EvidenceItem) -> Self {
        Self {
            kind: item.kind,
            reference: item.reference,
            sha256: item.sha256,
        }
    }
}

impl From<&Evidence> for EvidenceItem {
    fn from(evidence: &Evidence) -> Self {
        Self {
            kind: evidence.kind,
            reference: evidence.reference.clone(),
            sha256: evidence.sha256.clone(),
        }
    }
}

/// A live claim on an agent step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    /// The agent holding it.
    pub holder: String,
    /// SHA-256 of the token, lowercase hex; the token itself is never kept.
    pub token_hash: String,
    /// When the lease ends.
    pub expires_at: Timestamp,
    /// The latest `progress` note.
    pub progress: Option<String>,
}

/// To whom a work item is assigned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Assignee {
    /// Every member of a group.
    Group(String),
    /// One person, by person value.
    Person(String),
}

/// An open work item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItem {
    /// Its id, unique in the run.
    pub id: String,
    /// Who may decide it.
    pub assigned_to: Assignee,
    /// When it opened.
    pub created_at: Timestamp,
    /// Set when an agent escalated the step.
    pub escalation: Option<Escalation>,
}

/// An escalation of a step to the operators: an agent's, or a check's that was unsure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Escalation {
    /// The agent's note, or the unsure check's questions and answers.
    pub note: String,
    /// The agent, or whoever submitted the held candidate.
    pub by: String,
    /// When.
    pub at: Timestamp,
    /// The unsure verdict, when a check escalated the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckRecord>,
    /// The submission held while a person decides, when a check escalated the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<Record>,
}

/// What the previous attempt at a step left behind (spec §3.3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Handoff {
    /// The last `progress` note of a lease that ended.
    pub progress: Option<String>,
    /// The note of a person who returned the step.
    pub returned: Option<Returned>,
    /// The issues of the last refused submission.
    pub issues: Option<Vec<String>>,
    /// The verdict of a check that sent the submission back (fail, or unsure and
    /// returned by a person).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckRecord>,
}

impl Handoff {
    /// Whether nothing was left: a first attempt.
    pub fn is_empty(&self) -> bool {
        self.progress.is_none() && self.returned.is_none() && self.issues.is_none() && self.check.is_none()
    }
}

/// `handoff.returned`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Returned {
    /// Why it came back.
    pub note: String,
    /// Who returned it.
    pub by: String,
    /// When.
    pub at: Timestamp,
}

/// An event delivered to the run and not yet consumed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldEvent {
    /// The event name.
    pub name: String,
    /// Its data, which becomes the wait's output.
    #[serde(deserialize_with = "agentprocess_format::exact::deserialize_object")]
    pub data: Map<String, Value>,
    /// Who sent it.
    pub sender: String,
    /// When it arrived.
    pub at: Timestamp,
}

/// The five decisions. A record keeps `approved`, `rejected` or `failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// A task or an escalated agent step is done.
    Completed,
    /// An approval is given.
    Approved,
    /// An approval is refused.
    Rejected,
    /// An escalated agent step goes back to the agents.
    Returned,
    /// The run ends `failed`.
    Failed,
}

impl Decision {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Completed => "completed",
            Decision::Approved => "approved",
            Decision::Rejected => "rejected",
            Decision::Returned => "returned",
            Decision::Failed => "failed",
        }
    }

    /// The decision a wire name stands for.
    pub fn parse(text: &str) -> Option<Self> {
        [
            Decision::Completed,
            Decision::Approved,
            Decision::Rejected,
            Decision::Returned,
            Decision::Failed,
        ]
        .into_iter()
        .find(|decision| decision.as_str() == text)
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
