//! People: decisions on tasks, approvals and escalations, rework through `on_reject`,
//! and cancel.

use agentprocess_engine::{Actor, Code};
use serde_json::{Value, json};

use crate::support::{Bench, agent, fixture, operator, person, sample_inputs, version_of};

fn supplier() -> (Bench, Actor) {
    let version = version_of(
        "---
name: supplier
description: Screen and approve a supplier.
steps:
  - id: check_vendor
    agent: Check the vendor.
    output: { cleared: boolean }
  - id: prepare
    task: Prepare the contract.
    person: legal
    output: { revision: string }
    next: approve
  - id: approve
    approve: Approve it.
    person: finance-approver
    due: 2d
    on_reject: check_vendor
    next: done
  - id: done
    finish: onboarded
---
",
    );
    let mira = person(&version);
    (Bench::start(version, &agent(), Default::default()), mira)
}

fn screen(bench: &mut Bench) {
    let token = bench.token(&agent(), "check_vendor");
    bench
        .submit(
            &agent(),
            &token,
            json!({ "summary": "Clear.", "output": { "cleared": true } }),
            Vec::new(),
        )
        .expect("accepted");
}

fn prepare(bench: &mut Bench, who: &Actor, revision: &str) {
    let item = bench.item("prepare");
    bench
        .decide(
            who,
            json!({ "workItemId": item, "decision": "completed", "output": { "revision": revision } }),
        )
        .expect("completed");
}

#[test]
fn a_task_and_an_approval_take_the_run_to_its_finish() {
    let (mut bench, mira) = supplier();
    screen(&mut bench);
    prepare(&mut bench, &mira, "r1");
    let view = bench.view();
    assert_eq!(
        view["data"]["steps"]["prepare"],
        json!({ "output": { "revision": "r1" }, "evidence": [], "by": "mira@example.com", "at": "2026-10-06T09:00:00Z", "history": [] })
    );
    assert_eq!(
        view["workItems"][0]["decide"]["decisions"],
        json!(["approved", "rejected", "failed"])
    );
    let item = bench.item("approve");
    bench
        .decide(&mira, json!({ "workItemId": item, "decision": "approved" }))
        .expect("approved");
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "onboarded");
    assert_eq!(
        view["data"]["steps"]["approve"],
        json!({ "decision": "approved", "by": "mira@example.com", "at": "2026-10-06T09:00:00Z", "history": [] })
    );
}

#[test]
fn decide_errors_come_in_the_documented_order() {
    let (mut bench, mira) = supplier();
    screen(&mut bench);
    let item = bench.item("prepare");
    let code = |result: Result<(), agentprocess_engine::ToolError>| {
        let error = result.expect_err("refused");
        (error.code, error.issues)
    };
    // Argument combinations.
    assert_eq!(
        code(bench.decide(
            &mira,
            json!({ "workItemId": item, "decision": "completed", "output": { "revision": "r" }, "note": "x" })
        )),
        (Code::Invalid, vec!["note: not allowed with completed".into()])
    );
    assert_eq!(
        code(bench.decide(
            &mira,
            json!({ "workItemId": item, "decision": "failed", "next": "x", "output": {} })
        )),
        (
            Code::Invalid,
            vec![
                "next: not allowed with failed".into(),
                "output, evidence, summary: not allowed with failed".into(),
                "note: required with failed".into()
            ]
        )
    );
    // Never existed, stale, forbidden, wrong decision, not accepted.
    assert_eq!(
        code(bench.decide(&mira, json!({ "workItemId": "w_99", "decision": "completed" }))).0,
        Code::NotFound
    );
    assert_eq!(
        code(bench.decide(
            &mira,
            json!({ "workItemId": item, "snapshot": "old", "decision": "completed" })
        ))
        .0,
        Code::Stale
    );
    assert_eq!(
        code(bench.decide(&agent(), json!({ "workItemId": item, "decision": "completed" }))).0,
        Code::Forbidden
    );
    let outsider = Actor::Person {
        person: "x@example.com".into(),
        groups: vec!["g_other".into()],
        operator: false,
    };
    assert_eq!(
        code(bench.decide(&outsider, json!({ "workItemId": item, "decision": "completed" }))).0,
        Code::Forbidden
    );
    assert_eq!(
        code(bench.decide(&mira, json!({ "workItemId": item, "decision": "approved" }))),
        (
            Code::Invalid,
            vec!["decision: approved is not one of completed, failed".into()]
        )
    );
    assert_eq!(
        code(bench.decide(
            &mira,
            json!({ "workItemId": item, "decision": "completed", "output": { "revision": 3 } })
        )),
        (Code::NotAccepted, vec!["output.revision: expected string".into()])
    );
    // Decided once; a second decision is already_decided, before the stale snapshot.
    prepare(&mut bench, &mira, "r1");
    assert_eq!(
        code(bench.decide(
            &mira,
            json!({ "workItemId": item, "snapshot": "old", "decision": "completed" })
        )),
        (Code::Conflict, vec!["already_decided".into()])
    );
}

#[test]
fn a_rejection_reworks_everything_after_the_returned_to_step() {
    let (mut bench, mira) = supplier();
    screen(&mut bench);
    prepare(&mut bench, &mira, "r1");
    let item = bench.item("approve");
    bench.wait(3600);
    bench
        .decide(
            &mira,
            json!({ "workItemId": item, "decision": "rejected", "note": "Re-check the EU list." }),
        )
        .expect("rejected");
    let view = bench.view();
    assert_eq!(view["steps"][0]["state"], "ready");
    assert_eq!(view["steps"][1]["state"], Value::Null);
    assert_eq!(view["steps"][2]["state"], Value::Null);
    // The returned-to step keeps its completion until it completes again; the later
    // task moves to history; the rejection stays current so the agent can read it.
    assert_eq!(
        view["data"]["steps"]["check_vendor"]["output"],
        json!({ "cleared": true })
    );
    assert!(view["data"]["steps"]["prepare"].get("output").is_none());
    assert_eq!(
        view["data"]["steps"]["prepare"]["history"][0]["output"],
        json!({ "revision": "r1" })
    );
    assert_eq!(view["data"]["steps"]["approve"]["decision"], "rejected");
    assert_eq!(view["data"]["steps"]["approve"]["note"], "Re-check the EU list.");
    // Second pass: the old completions go to history as each step completes again.
    screen(&mut bench);
    prepare(&mut bench, &mira, "r2");
    let view = bench.view();
    assert_eq!(
        view["data"]["steps"]["check_vendor"]["history"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(view["data"]["steps"]["prepare"]["output"], json!({ "revision": "r2" }));
    assert_eq!(
        view["steps"][2]["due"], "2026-10-08T10:00:00Z",
        "a repeat restarts the due clock"
    );
    let item = bench.item("approve");
    bench
        .decide(&mira, json!({ "workItemId": item, "decision": "approved" }))
        .expect("approved");
    let view = bench.view();
    assert_eq!(view["run"]["outcome"], "onboarded");
    assert_eq!(view["data"]["steps"]["approve"]["history"][0]["decision"], "rejected");
}

#[test]
fn a_rejection_without_on_reject_ends_the_run_rejected() {
    let version = fixture("invoice-approval");
    let inputs = sample_inputs(&version);
    let mut bench = Bench::start(version, &agent(), inputs);
    let token = bench.token(&agent(), "validate");
    bench
        .submit(&agent(), &token, json!({
            "output": { "totalUsd": 120000, "supplier": "Acme", "matchSummary": "ok" },
            "evidence": [{ "kind": "link", "ref": "x" }], "summary": "Big one.", "next": "cfo_review", "reason": "Over 100000."
        }), Vec::new())
        .expect("accepted");
    let cfo = Actor::Person {
        person: "cfo@example.com".into(),
        groups: vec!["g_cfo".into()],
        operator: false,
    };
    let item = bench.item("cfo_review");
    bench
        .decide(
            &cfo,
            json!({ "workItemId": item, "decision": "rejected", "note": "Not budgeted." }),
        )
        .expect("rejected");
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "rejected");
    assert_eq!(
        view["run"]["ended"],
        json!({ "by": "cfo@example.com", "at": "2026-10-06T09:00:00Z", "note": "Not budgeted." })
    );
    assert_eq!(view["workItems"], json!([]));
}

#[test]
fn an_escalation_is_returned_with_a_note_or_completed_by_a_person() {
    let (mut bench, _) = supplier();
    let token = bench.token(&agent(), "check_vendor");
    bench
        .escalate(&agent(), &token, "The EU list is down.")
        .expect("escalates");
    let item = bench.item("check_vendor");
    let plain = Actor::Person {
        person: "p@example.com".into(),
        groups: vec![],
        operator: false,
    };
    assert_eq!(
        bench
            .decide(
                &plain,
                json!({ "workItemId": item, "decision": "returned", "note": "x" })
            )
            .expect_err("not an operator")
            .code,
        Code::Forbidden
    );
    bench
        .decide(
            &operator(),
            json!({ "workItemId": item, "decision": "returned", "note": "The list is back; try again." }),
        )
        .expect("returned");
    let claimed = bench.claim(&agent(), "check_vendor").expect("claims again");
    assert_eq!(
        claimed["handoff"]["returned"],
        json!({ "note": "The list is back; try again.", "by": "ops@example.com", "at": "2026-10-06T09:00:00Z" })
    );
    let token = claimed["token"].as_str().expect("token").to_owned();
    bench.escalate(&agent(), &token, "Still down.").expect("escalates");
    let item = bench.item("check_vendor");
    bench
        .decide(
            &operator(),
            json!({ "workItemId": item, "decision": "completed", "output": { "cleared": false } }),
        )
        .expect("completed");
    let view = bench.view();
    assert_eq!(view["data"]["steps"]["check_vendor"]["by"], "ops@example.com");
    assert_eq!(view["steps"][1]["state"], "waiting");
}

#[test]
fn a_failed_decision_ends_the_run_and_cancels_the_rest() {
    let (mut bench, mira) = supplier();
    screen(&mut bench);
    let item = bench.item("prepare");
    bench
        .decide(
            &mira,
            json!({ "workItemId": item, "decision": "failed", "note": "Supplier withdrew." }),
        )
        .expect("failed");
    let view = bench.view();
    assert_eq!(view["run"]["outcome"], "failed");
    assert_eq!(view["steps"][1]["state"], "failed");
    assert_eq!(
        view["data"]["steps"]["prepare"],
        json!({ "decision": "failed", "note": "Supplier withdrew.", "by": "mira@example.com", "at": "2026-10-06T09:00:00Z", "history": [] })
    );
}

#[test]
fn an_operator_cancels_with_a_reason_and_nothing_else_may() {
    let (mut bench, mira) = supplier();
    let token = bench.token(&agent(), "check_vendor");
    assert_eq!(
        bench.cancel(&agent(), "x").expect_err("agents never cancel").code,
        Code::Forbidden
    );
    assert_eq!(
        bench.cancel(&mira, "x").expect_err("not an operator").code,
        Code::Forbidden
    );
    assert_eq!(
        bench.cancel(&operator(), " ").expect_err("no reason").code,
        Code::Invalid
    );
    bench.cancel(&operator(), "Duplicate request.").expect("cancelled");
    let view = bench.view();
    assert_eq!(view["run"]["state"], "cancelled");
    assert_eq!(view["run"]["outcome"], Value::Null);
    assert_eq!(
        view["run"]["ended"],
        json!({ "by": "ops@example.com", "at": "2026-10-06T09:00:00Z", "note": "Duplicate request." })
    );
    assert_eq!(view["steps"][0]["state"], "cancelled");
    assert_eq!(
        bench.cancel(&operator(), "again").expect_err("over").issues,
        ["run_ended"]
    );
    assert_eq!(
        bench
            .submit(&agent(), &token, json!({}), Vec::new())
            .expect_err("over")
            .issues,
        ["run_ended"]
    );
}

#[test]
fn rework_from_after_the_join_reruns_every_branch() {
    let version = fixture("major-incident");
    let inputs = sample_inputs(&version);
    let commander = Actor::Person {
        person: "dana@example.com".into(),
        groups: vec![],
        operator: false,
    };
    let lead = person(&version);
    let mut bench = Bench::start(version, &agent(), inputs);
    let token = bench.token(&agent(), "activate");
    bench
        .submit(
            &agent(),
            &token,
            json!({ "summary": "Bridge open.", "output": { "bridge": "b-1" } }),
            Vec::new(),
        )
        .expect("accepted");
    assert_eq!(bench.view()["workItems"].as_array().map(Vec::len), Some(3));
    let finish = |bench: &mut Bench, step: &str, field: &str| {
        let item = bench.item(step);
        bench
            .decide(&lead, json!({ "workItemId": item, "decision": "completed", "output": { field: "done" }, "evidence": [{ "kind": "link", "ref": "x" }] }))
            .expect("completed");
    };
    // A decision prepared before a sibling completed is stale.
    let stale_snapshot = agentprocess_engine::snapshot(&bench.run);
    finish(&mut bench, "operations", "recoverySummary");
    let item = bench.item("security");
    assert_eq!(
        bench.decide(&lead, json!({ "workItemId": item, "snapshot": stale_snapshot, "decision": "completed", "output": { "containmentSummary": "x" }, "evidence": [{ "kind": "link", "ref": "x" }] })).expect_err("stale").code,
        Code::Stale
    );
    finish(&mut bench, "security", "containmentSummary");
    assert_eq!(bench.states()[1], "waiting");
    finish(&mut bench, "communications", "communicationsSummary");
    assert_eq!(
        bench.states(),
        [
            json!("done"),
            json!("done"),
            json!("done"),
            json!("done"),
            json!("done"),
            json!("waiting"),
            Value::Null
        ]
    );
    let item = bench.item("close_review");
    bench
        .decide(
            &commander,
            json!({ "workItemId": item, "decision": "rejected", "note": "Security exposure unclear." }),
        )
        .expect("rejected");
    assert_eq!(
        bench.states(),
        [
            json!("done"),
            json!("waiting"),
            json!("waiting"),
            json!("waiting"),
            json!("waiting"),
            Value::Null,
            Value::Null
        ]
    );
    let view = bench.view();
    assert_eq!(view["workItems"].as_array().map(Vec::len), Some(3));
    assert!(view["data"]["steps"]["operations"].get("output").is_none());
    assert_eq!(
        view["data"]["steps"]["operations"]["history"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(
        view["data"]["steps"]["close_review"]["note"],
        "Security exposure unclear."
    );
}

#[test]
fn rework_inside_a_branch_touches_no_sibling() {
    let version = version_of(
        "---
name: branch-rework
description: A rejection inside one branch.
steps:
  - id: fork
    parallel: [draft, legal]
    next: done
  - id: draft
    agent: Draft.
    next: draft_ok
  - id: draft_ok
    approve: Draft fine?
    person: editor
    on_reject: draft
    next: join
  - id: legal
    agent: Legal.
    next: join
  - id: done
    finish: ok
---
",
    );
    let editor = person(&version);
    let mut bench = Bench::start(version, &agent(), Default::default());
    let done = json!({ "summary": "Done." });
    let legal = bench.token(&agent(), "legal");
    bench
        .submit(&agent(), &legal, done.clone(), Vec::new())
        .expect("accepted");
    let draft = bench.token(&agent(), "draft");
    bench
        .submit(&agent(), &draft, done.clone(), Vec::new())
        .expect("accepted");
    let item = bench.item("draft_ok");
    bench
        .decide(
            &editor,
            json!({ "workItemId": item, "decision": "rejected", "note": "Tighten it." }),
        )
        .expect("rejected");
    assert_eq!(
        bench.states(),
        [
            json!("waiting"),
            json!("ready"),
            Value::Null,
            json!("done"),
            Value::Null
        ]
    );
    let view = bench.view();
    assert_eq!(
        view["data"]["steps"]["legal"]["history"],
        json!([]),
        "the sibling branch keeps its completion"
    );
    assert_eq!(view["data"]["steps"]["draft_ok"]["note"], "Tighten it.");
    let draft = bench.token(&agent(), "draft");
    bench.submit(&agent(), &draft, done, Vec::new()).expect("accepted");
    let item = bench.item("draft_ok");
    bench
        .decide(&editor, json!({ "workItemId": item, "decision": "approved" }))
        .expect("approved");
    assert_eq!(bench.view()["run"]["outcome"], "ok");
}
