//! Acceptance (spec §6 rule 3): does a submission complete its step? Every rule that
//! needs only the step and the submission; file verification needs the stored bytes
//! and is the caller's, whose issues join these.

use agentprocess_format::{EvidenceKind, Next, Step};
use serde_json::{Map, Value};

use crate::fields::{PersonFormat, check_fields};

/// Longest `summary`, in characters (tools.md: 1–2000).
pub const MAX_SUMMARY_CHARS: usize = 2000;

/// One evidence item as submitted: `{ kind, ref }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceItem {
    /// `file` (an upload id) or `link` (a URL or document number).
    pub kind: EvidenceKind,
    /// `ref`.
    pub reference: String,
    /// For a file the caller verified: the SHA-256 recorded at upload.
    pub sha256: Option<String>,
}

/// What a `submit`, or a `decide … completed`, carries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Submission {
    /// `output`.
    pub output: Map<String, Value>,
    /// `evidence`.
    pub evidence: Vec<EvidenceItem>,
    /// `summary`: what was done and found.
    pub summary: Option<String>,
    /// `next`: the chosen route.
    pub next: Option<String>,
    /// `reason`: why that route.
    pub reason: Option<String>,
}

/// Who submits: agents must write a summary, people may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitter {
    /// `submit` from an agent.
    Agent,
    /// `decide … completed` from a person.
    Person,
}

/// Every issue that keeps `submission` from completing `step`, in the order: summary,
/// output fields, evidence, next and reason.
pub fn check_submission(step: &Step, submission: &Submission, by: Submitter, person: PersonFormat) -> Vec<String> {
    let mut issues = Vec::new();
    match submission.summary.as_deref().map(str::trim) {
        None | Some("") if by == Submitter::Agent => issues.push("summary: missing".to_owned()),
        Some(summary) if summary.chars().count() > MAX_SUMMARY_CHARS => {
            issues.push(format!("summary: longer than {MAX_SUMMARY_CHARS} characters"));
        }
        _ => {}
    }
    issues.extend(check_fields(&step.output, &submission.output, "output", person));
    for (index, item) in submission.evidence.iter().enumerate() {
        if item.reference.trim().is_empty() {
            issues.push(format!("evidence[{index}].ref: missing"));
        }
    }
    for kind in &step.evidence {
        if !submission
            .evidence
            .iter()
            .any(|item| item.kind == *kind && !item.reference.trim().is_empty())
        {
            issues.push(format!("evidence: {} required", kind.name()));
        }
    }
    issues.extend(check_route(step, submission));
    issues
}

/// `next` and `reason`: required on a step whose `next` is a list, one of its routes;
/// not accepted on any other step.
fn check_route(step: &Step, submission: &Submission) -> Vec<String> {
    let mut issues = Vec::new();
    let reason_given = submission
        .reason
        .as_deref()
        .is_some_and(|reason| !reason.trim().is_empty());
    match &step.next {
        Some(Next::Routes(routes)) => {
            let names: Vec<&str> = routes.iter().map(|route| route.to.as_str()).collect();
            match submission.next.as_deref() {
                None => issues.push(format!("next: required, one of {}", names.join(", "))),
                Some(chosen) if !names.contains(&chosen) => {
                    issues.push(format!("next: {chosen:?} is not one of {}", names.join(", ")));
                }
                Some(_) => {}
            }
            if !reason_given {
                issues.push("reason: required".to_owned());
            }
        }
        _ => {
            if submission.next.is_some() {
                issues.push("next: not accepted; this step has a single next".to_owned());
            }
            if submission.reason.is_some() {
                issues.push("reason: not accepted; this step has a single next".to_owned());
            }
        }
    }
    issues
}
