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
pub fn check_submission(
    step: &Step,
    submission: &Submission,
    by: Submitter,
    person: PersonFormat,
) -> Vec<String> {
    let mut issues = Vec::new();
    match submission.summary.as_deref().map(str::trim) {
        None | Some("") if by == Submitter::Agent => issues.push("summary: missing".to_owned()),
        Some(summary) if summary.chars().count() > MAX_SUMMARY_CHARS => {
            issues.push(format!(
                "summary: longer than {MAX_SUMMARY_CHARS} characters"
            ));
        }
        _ => {}
    }
    issues.extend(check_fields(
        &step.output,
        &submission.output,
        "output",
        person,
    ));
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
                    issues.push(format!(
                        "next: {chosen:?} is not one of {}",
                        names.join(", ")
                    ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use agentprocess_format::{Options, validate};
    use serde_json::json;

    const VENDOR: &str = "---
name: vendor
description: Screen a vendor.
steps:
  - id: check_vendor
    agent: Check the vendor.
    output:
      cleared: boolean
      summary: string
    evidence: [file]
    next: [approve, decline]
  - id: approve
    task: Approve.
    person: finance
    output: { note: { type: string, optional: true } }
    next: done
  - id: decline
    finish: declined
  - id: done
    finish: onboarded
---
";

    fn step(id: &str) -> Step {
        let process = validate(VENDOR.as_bytes(), &Options::default()).expect("publishes");
        process.document().step(id).expect("step").clone()
    }

    fn submission(value: serde_json::Value) -> Submission {
        let output = value["output"].as_object().cloned().unwrap_or_default();
        let evidence = value["evidence"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|item| EvidenceItem {
                        kind: if item["kind"] == "file" {
                            EvidenceKind::File
                        } else {
                            EvidenceKind::Link
                        },
                        reference: item["ref"].as_str().unwrap_or_default().to_owned(),
                        sha256: None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let text = |key: &str| value[key].as_str().map(str::to_owned);
        Submission {
            output,
            evidence,
            summary: text("summary"),
            next: text("next"),
            reason: text("reason"),
        }
    }

    fn check(id: &str, by: Submitter, value: serde_json::Value) -> Vec<String> {
        check_submission(&step(id), &submission(value), by, PersonFormat::Email)
    }

    #[test]
    fn a_complete_submission_is_accepted() {
        let issues = check(
            "check_vendor",
            Submitter::Agent,
            json!({
                "output": { "cleared": true, "summary": "No matches." },
                "evidence": [{ "kind": "file", "ref": "f_91a" }, { "kind": "link", "ref": "https://lists" }],
                "summary": "Searched both lists.", "next": "approve", "reason": "Vendor is cleared."
            }),
        );
        assert_eq!(issues, Vec::<String>::new());
    }

    #[test]
    fn every_issue_at_once_in_the_tool_contract_wording() {
        let issues = check(
            "check_vendor",
            Submitter::Agent,
            json!({ "output": { "cleared": "yes", "extra": 1 }, "evidence": [{ "kind": "link", "ref": "x" }] }),
        );
        assert_eq!(
            issues,
            [
                "summary: missing",
                "output.cleared: expected boolean",
                "output.summary: missing",
                "output.extra: not declared",
                "evidence: file required",
                "next: required, one of approve, decline",
                "reason: required",
            ]
        );
    }

    #[test]
    fn the_route_must_be_one_of_the_list() {
        let issues = check(
            "check_vendor",
            Submitter::Agent,
            json!({
                "output": { "cleared": true, "summary": "ok" }, "evidence": [{ "kind": "file", "ref": "f_1" }],
                "summary": "Done.", "next": "done", "reason": "  "
            }),
        );
        assert_eq!(
            issues,
            [
                "next: \"done\" is not one of approve, decline",
                "reason: required"
            ]
        );
    }

    #[test]
    fn next_and_reason_on_a_single_next_step_are_not_accepted() {
        let issues = check(
            "approve",
            Submitter::Person,
            json!({ "next": "done", "reason": "Because." }),
        );
        assert_eq!(
            issues,
            [
                "next: not accepted; this step has a single next",
                "reason: not accepted; this step has a single next"
            ]
        );
    }

    #[test]
    fn people_may_leave_out_the_summary_but_not_exceed_it() {
        assert!(check("approve", Submitter::Person, json!({})).is_empty());
        assert_eq!(
            check("approve", Submitter::Agent, json!({})),
            ["summary: missing"]
        );
        let long = "x".repeat(MAX_SUMMARY_CHARS + 1);
        assert_eq!(
            check("approve", Submitter::Person, json!({ "summary": long })),
            ["summary: longer than 2000 characters"]
        );
        let longest = "é".repeat(MAX_SUMMARY_CHARS);
        assert!(check("approve", Submitter::Agent, json!({ "summary": longest })).is_empty());
    }

    #[test]
    fn an_evidence_item_needs_a_ref() {
        let issues = check(
            "check_vendor",
            Submitter::Agent,
            json!({
                "output": { "cleared": true, "summary": "ok" }, "evidence": [{ "kind": "file", "ref": " " }],
                "summary": "Done.", "next": "approve", "reason": "Clear."
            }),
        );
        assert_eq!(
            issues,
            ["evidence[0].ref: missing", "evidence: file required"]
        );
    }
}
