//! Acceptance (spec §6 rule 3): every rule that needs only the step and the
//! submission, all issues at once, in the tool contracts' wording.

use agentprocess_engine::{MAX_SUMMARY_CHARS, PersonFormat, Submitter, check_submission};
use agentprocess_format::Step;
use serde_json::json;

use crate::support::{submission_of, version_of};

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
    let version = version_of(VENDOR);
    version.process.document().step(id).expect("step").clone()
}

fn check(id: &str, by: Submitter, value: serde_json::Value) -> Vec<String> {
    check_submission(&step(id), &submission_of(&value), by, PersonFormat::Email)
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
        ["next: \"done\" is not one of approve, decline", "reason: required"]
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
    assert_eq!(check("approve", Submitter::Agent, json!({})), ["summary: missing"]);
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
    assert_eq!(issues, ["evidence[0].ref: missing", "evidence: file required"]);
}
