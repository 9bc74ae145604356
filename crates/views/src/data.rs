//! Run data: `{ inputs, steps }`, each step with its current completion and history.

use std::collections::BTreeMap;

use agentprocess_engine::{Decision, Evidence, Record, Run};
use agentprocess_format::{EvidenceKind, exact};
use jiff::Timestamp;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// `data`: the run's inputs and every step that completed or has a history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunData {
    /// The inputs, numbers as they were sent.
    #[serde(deserialize_with = "exact::deserialize_object")]
    #[schema(value_type = Object)]
    pub inputs: Map<String, Value>,
    /// By step id.
    pub steps: BTreeMap<String, StepData>,
}

impl RunData {
    /// The run data of `run`.
    pub fn of(run: &Run) -> Self {
        let steps = run
            .steps
            .iter()
            .filter_map(|step| {
                // Over an earlier completion's.
                let pending = step.pending_check().and_then(|check| exact::to_value(check).ok());
                if step.record.is_none() && step.history.is_empty() && pending.is_none() {
                    return None;
                }
                let mut current = step.record.as_ref().map(RecordView::from);
                let mut check = None;
                match (&mut current, pending) {
                    (Some(current), Some(pending)) => current.check = Some(pending),
                    (None, pending) => check = pending,
                    (Some(_), None) => {}
                }
                let data = StepData {
                    current,
                    check,
                    history: step.history.iter().map(RecordView::from).collect(),
                };
                Some((step.id.clone(), data))
            })
            .collect();
        Self {
            inputs: run.inputs.clone(),
            steps,
        }
    }

    /// Fills the `url` of every file item, current and in history, with `url(ref)`.
    pub fn sign_files(&mut self, url: &dyn Fn(&str) -> String) {
        let records = self
            .steps
            .values_mut()
            .flat_map(|step| step.current.iter_mut().chain(step.history.iter_mut()));
        for item in records.flat_map(|record| record.evidence.iter_mut().flatten()) {
            if item.kind == EvidenceKind::File {
                item.url = Some(url(&item.reference));
            }
        }
    }
}

/// `data.steps.<id>`: the current completion's fields, if any, and `history`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct StepData {
    /// The current completion; `None` while the step is being reworked. (Its fields
    /// are `RecordView`'s, all absent when there is none.)
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub current: Option<RecordView>,
    /// An unsure check's verdict waiting on a person, on a step with no current
    /// completion (with one, it is the completion's `check`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub check: Option<Value>,
    /// Earlier completions, oldest first.
    pub history: Vec<RecordView>,
}

// By hand: `#[serde(flatten)]` would buffer the fields, and the numbers of `output`
// must be read from their text to keep their spelling.
impl<'de> Deserialize<'de> for StepData {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Shape {
            #[serde(default)]
            by: Option<String>,
            #[serde(default)]
            check: Option<Value>,
            #[serde(default)]
            history: Vec<RecordView>,
        }
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        let shape: Shape = serde_json::from_str(raw.get()).map_err(D::Error::custom)?;
        let (current, check) = match shape.by {
            Some(_) => (Some(serde_json::from_str(raw.get()).map_err(D::Error::custom)?), None),
            None => (None, shape.check),
        };
        Ok(Self {
            current,
            check,
            history: shape.history,
        })
    }
}

/// One completion of a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RecordView {
    /// `output`, numbers as they were sent.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "exact::deserialize_optional_object"
    )]
    #[schema(value_type = Option<Object>)]
    pub output: Option<Map<String, Value>>,
    /// `evidence`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Vec<EvidenceView>>,
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
    #[schema(value_type = Option<String>)]
    pub decision: Option<Decision>,
    /// `note`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The step's check verdict (check-1, `check-verdict.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub check: Option<Value>,
    /// Who completed it.
    pub by: String,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
}

impl From<&Record> for RecordView {
    fn from(record: &Record) -> Self {
        Self {
            output: record.output.clone(),
            evidence: record
                .evidence
                .as_ref()
                .map(|items| items.iter().map(EvidenceView::from).collect()),
            summary: record.summary.clone(),
            next: record.next.clone(),
            reason: record.reason.clone(),
            decision: record.decision,
            note: record.note.clone(),
            check: record.check.as_ref().and_then(|check| exact::to_value(check).ok()),
            by: record.by.clone(),
            at: record.at,
        }
    }
}

/// An evidence item: a file (with the SHA-256 recorded at upload, and a short-lived
/// `url` to fetch it) or a link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EvidenceView {
    /// `file` or `link`.
    #[schema(value_type = String, pattern = "^(file|link)$")]
    pub kind: EvidenceKind,
    /// The upload id or the link.
    #[serde(rename = "ref")]
    pub reference: String,
    /// For a file: the SHA-256 recorded at upload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// For a file: a signed URL that opens it for a few minutes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl From<&Evidence> for EvidenceView {
    fn from(evidence: &Evidence) -> Self {
        Self {
            kind: evidence.kind,
            reference: evidence.reference.clone(),
            sha256: evidence.sha256.clone(),
            url: None,
        }
    }
}
