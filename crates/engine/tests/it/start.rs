//! `start_run`: inputs, the initiator rule, the run-data cap, and the first step of
//! every kind.

use agentprocess_engine::{Code, Effect, Mode, Notification, StepState, TimerKind, snapshot};
use serde_json::{Map, Value, json};

use crate::support::{
    agent, assert_valid_view, fixture, fixture_names, person, run_view, sample_inputs, start_as, started_fixture, t0,
    version_of,
};

fn object(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("an object")
}

#[test]
fn every_fixture_starts_and_its_view_meets_the_schemas() {
    for name in fixture_names() {
        let version = fixture(&name);
        let transition = start_as(&version, &person(&version), sample_inputs(&version), Mode::Live)
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        let view = run_view(&transition.run, &version, t0());
        assert_valid_view(&view);
        assert_eq!(view["run"]["version"], 1, "{name}");
        assert_eq!(view["run"]["startedBy"], "mira@example.com", "{name}");
        let first = &view["steps"][0];
        let expected = match first["kind"].as_str() {
            Some("agent") => "ready",
            _ => "waiting",
        };
        assert_eq!(first["state"], expected, "{name}");
        let others_unreached = view["steps"].as_array().expect("steps")[1..]
            .iter()
            .all(|step| step["state"].is_null());
        assert!(others_unreached, "{name}: {view:#}");
    }
}

#[test]
fn an_agent_step_first_is_ready_and_the_run_active() {
    let version = fixture("invoice-approval");
    let transition = start_as(&version, &agent(), sample_inputs(&version), Mode::Live).expect("starts");
    let view = run_view(&transition.run, &version, t0());
    assert_eq!(view["run"]["state"], "active");
    assert_eq!(view["run"]["startedBy"], "a_screener");
    assert_eq!(view["workItems"], json!([]));
    assert_eq!(view["data"], json!({ "inputs": sample_inputs(&version), "steps": {} }));
}

#[test]
fn a_person_step_first_opens_one_work_item_with_its_decide_call() {
    let (_, transition, view) = started_fixture("contract-review", Mode::Live);
    assert_eq!(view["run"]["state"], "waiting");
    let items = view["workItems"].as_array().expect("work items");
    assert_eq!(items.len(), 1);
    let item = &items[0];
    assert_eq!(item["stepId"], "prepare");
    assert_eq!(item["kind"], "task");
    assert_eq!(item["assignedTo"], json!({ "person": "dana@example.com" }));
    assert_eq!(item["output"], json!({ "revision": "string", "summary": "string" }));
    assert_eq!(item["evidence"], json!(["file"]));
    assert_eq!(item["next"], Value::Null);
    assert_eq!(item["handoff"], Value::Null);
    assert_eq!(item["snapshot"], json!(snapshot(&transition.run)));
    assert_eq!(
        item["decide"],
        json!({
            "tool": "decide",
            "arguments": { "runId": "r_1", "workItemId": "w_1", "snapshot": snapshot(&transition.run), "requestId": "<new UUID>" },
            "decisions": ["completed", "failed"]
        })
    );
    assert!(item.get("mode").is_none());
    assert_eq!(
        transition.effects,
        [Effect::Notify(Notification::WorkItem {
            step: "prepare".into(),
            work_item: "w_1".into()
        })]
    );
}

#[test]
fn a_role_goes_to_its_group_and_due_starts_the_clock() {
    let (_, transition, view) = started_fixture("employee-onboarding", Mode::Live);
    assert_eq!(
        view["workItems"][0]["assignedTo"],
        json!({ "group": "g_hr-operations" })
    );
    assert_eq!(view["workItems"][0]["due"], "2026-10-08T09:00:00Z");
    assert_eq!(
        view["steps"][0],
        json!({ "id": "hr_setup", "kind": "task", "state": "waiting", "due": "2026-10-08T09:00:00Z", "overdue": false })
    );
    assert!(transition.effects.iter().any(|effect| matches!(
        effect,
        Effect::ScheduleTimer(timer) if timer.kind == TimerKind::Due && timer.id == "hr_setup:due:1"
    )));
}

#[test]
fn test_mode_marks_work_items_and_notifies_nobody() {
    let (_, transition, view) = started_fixture("contract-review", Mode::Test);
    assert_eq!(view["run"]["mode"], "test");
    assert_eq!(view["workItems"][0]["mode"], "test");
    assert!(
        !transition
            .effects
            .iter()
            .any(|effect| matches!(effect, Effect::Notify(_)))
    );
    assert_valid_view(&view);
}

#[test]
fn an_agent_cannot_start_a_process_with_an_initiator_step() {
    let version = fixture("expense-reimbursement");
    let error = start_as(&version, &agent(), sample_inputs(&version), Mode::Live).expect_err("refused");
    assert_eq!(error.code, Code::Invalid);
    assert_eq!(
        error.issues,
        ["steps.receipts.person: initiator needs a run started by a person"]
    );
    let by_person = start_as(&version, &person(&version), sample_inputs(&version), Mode::Live).expect("starts");
    let view = run_view(&by_person.run, &version, t0());
    assert_eq!(
        view["workItems"][0]["assignedTo"],
        json!({ "person": "mira@example.com" })
    );
}

#[test]
fn inputs_are_checked_with_every_issue_at_once() {
    let version = fixture("invoice-approval");
    let error = start_as(
        &version,
        &agent(),
        object(json!({ "invoiceId": 42, "manager": "not-an-email", "colour": "blue" })),
        Mode::Live,
    )
    .expect_err("refused");
    assert_eq!(error.code, Code::Invalid);
    assert_eq!(
        error.issues,
        [
            "inputs.invoiceId: expected string",
            "inputs.invoiceDocument: missing",
            "inputs.manager: expected person (email)",
            "inputs.colour: not declared",
        ]
    );
}

#[test]
fn run_data_has_a_cap() {
    let version = fixture("supplier-rfp");
    let mut inputs = sample_inputs(&version);
    let first = inputs.keys().next().cloned().expect("an input");
    inputs.insert(first.clone(), json!("x".repeat(2 << 20)));
    let error = start_as(&version, &agent(), inputs, Mode::Live).expect_err("refused");
    assert_eq!(error.issues.len(), 1);
    assert!(error.issues[0].starts_with("inputs: 2097"), "{:?}", error.issues);
    assert!(
        error.issues[0].ends_with("bytes; the limit is 1048576 (limits.runDataBytes)"),
        "{:?}",
        error.issues
    );
}

const WAIT_FIRST: &str = "---
name: waits
description: Waits first.
inputs:
  at: { type: datetime, optional: true }
  who: { type: person, optional: true }
steps:
  - id: until
    wait_until: inputs.at
  - id: work
    agent: Work.
  - id: done
    finish: ok
---
";

#[test]
fn a_wait_until_in_the_past_continues_at_once() {
    let version = version_of(WAIT_FIRST);
    let transition = start_as(
        &version,
        &agent(),
        object(json!({ "at": "2026-10-01T00:00:00+02:00" })),
        Mode::Live,
    )
    .expect("starts");
    let view = run_view(&transition.run, &version, t0());
    assert_valid_view(&view);
    assert_eq!(view["steps"][0]["state"], "done");
    assert_eq!(view["steps"][1]["state"], "ready");
    assert_eq!(
        view["data"]["steps"]["until"],
        json!({ "by": "server", "at": "2026-10-06T09:00:00Z", "history": [] })
    );
}

#[test]
fn a_wait_until_in_the_future_waits_on_a_timer() {
    let version = version_of(WAIT_FIRST);
    let transition = start_as(
        &version,
        &agent(),
        object(json!({ "at": "2026-10-07T09:00:00+02:00" })),
        Mode::Live,
    )
    .expect("starts");
    assert_eq!(transition.run.steps[0].state, Some(StepState::Waiting));
    assert_eq!(run_view(&transition.run, &version, t0())["run"]["state"], "waiting");
    let [Effect::ScheduleTimer(timer)] = transition.effects.as_slice() else {
        panic!("{:?}", transition.effects)
    };
    assert_eq!(
        (timer.id.as_str(), timer.kind, timer.at.to_string()),
        (
            "until:wait_until:1",
            TimerKind::WaitUntil,
            "2026-10-07T07:00:00Z".to_owned()
        )
    );
}

#[test]
fn a_missing_wait_until_value_fails_the_run() {
    let version = version_of(WAIT_FIRST);
    let transition = start_as(&version, &agent(), Map::new(), Mode::Live).expect("starts");
    let view = run_view(&transition.run, &version, t0());
    assert_valid_view(&view);
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "failed");
    assert_eq!(
        view["run"]["ended"],
        json!({ "by": "server", "at": "2026-10-06T09:00:00Z", "note": "wait_until: inputs.at is missing" })
    );
    assert_eq!(view["steps"][0]["state"], "failed");
    assert_eq!(
        view["data"]["steps"]["until"],
        json!({ "decision": "failed", "note": "wait_until: inputs.at is missing", "by": "server", "at": "2026-10-06T09:00:00Z", "history": [] })
    );
    assert!(
        view["steps"].as_array().expect("steps")[1..]
            .iter()
            .all(|step| step["state"].is_null())
    );
}

#[test]
fn a_person_path_that_resolves_to_nothing_fails_the_run() {
    let version = version_of(
        "---\nname: who\ndescription: x\ninputs:\n  who: { type: person, optional: true }\nsteps:\n  - id: ok\n    approve: Fine?\n    person: inputs.who\n  - id: done\n    finish: ok\n---\n",
    );
    let transition = start_as(&version, &agent(), Map::new(), Mode::Live).expect("starts");
    let view = run_view(&transition.run, &version, t0());
    assert_valid_view(&view);
    assert_eq!(view["run"]["outcome"], "failed");
    assert_eq!(view["run"]["ended"]["note"], "person: inputs.who resolves to no person");
    assert_eq!(view["workItems"], json!([]));
}

#[test]
fn a_wait_and_a_finish_first() {
    let waiting = version_of(
        "---\nname: w\ndescription: x\nsteps:\n  - id: pause\n    wait: 2h\n  - id: done\n    finish: ok\n---\n",
    );
    let transition = start_as(&waiting, &agent(), Map::new(), Mode::Live).expect("starts");
    let [Effect::ScheduleTimer(timer)] = transition.effects.as_slice() else {
        panic!("{:?}", transition.effects)
    };
    assert_eq!(
        (timer.kind, timer.at.to_string()),
        (TimerKind::Wait, "2026-10-06T11:00:00Z".to_owned())
    );

    let finished = version_of("---\nname: f\ndescription: x\nsteps:\n  - id: done\n    finish: nothing-to-do\n---\n");
    let transition = start_as(&finished, &agent(), Map::new(), Mode::Live).expect("starts");
    let view = run_view(&transition.run, &finished, t0());
    assert_valid_view(&view);
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "nothing-to-do");
    assert_eq!(
        view["run"]["ended"],
        json!({ "by": "server", "at": "2026-10-06T09:00:00Z", "note": null })
    );
    assert_eq!(view["steps"][0]["state"], "done");
    assert_eq!(view["data"]["steps"], json!({}));
    assert_eq!(
        transition.effects,
        [Effect::Notify(Notification::RunEnded {
            state: "ended".into(),
            outcome: Some("nothing-to-do".into())
        })]
    );
}

#[test]
fn a_fork_first_makes_every_branch_entry_current_at_once() {
    let version = version_of(
        "---\nname: fork\ndescription: x\nsteps:\n  - id: respond\n    parallel: [ops, comms]\n    next: done\n  - id: ops\n    agent: Ops.\n    next: join\n  - id: comms\n    task: Comms.\n    person: comms-lead\n    next: join\n  - id: done\n    finish: ok\n---\n",
    );
    let transition = start_as(&version, &agent(), Map::new(), Mode::Live).expect("starts");
    let view = run_view(&transition.run, &version, t0());
    assert_valid_view(&view);
    let states: Vec<&Value> = view["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|step| &step["state"])
        .collect();
    assert_eq!(
        states,
        [&json!("waiting"), &json!("ready"), &json!("waiting"), &Value::Null]
    );
    assert_eq!(view["steps"][0]["kind"], "parallel");
    assert_eq!(view["run"]["state"], "active");
    assert_eq!(view["workItems"][0]["stepId"], "comms");
}

#[test]
fn the_snapshot_changes_exactly_when_run_data_changes() {
    let version = fixture("supplier-rfp");
    let one = start_as(&version, &agent(), sample_inputs(&version), Mode::Live).expect("starts");
    let two = start_as(&version, &person(&version), sample_inputs(&version), Mode::Test).expect("starts");
    assert_eq!(
        snapshot(&one.run),
        snapshot(&two.run),
        "same inputs, no completions: same run data"
    );
    let mut inputs = sample_inputs(&version);
    let first = inputs.keys().next().cloned().expect("an input");
    inputs.insert(first, json!("other"));
    let three = start_as(&version, &agent(), inputs, Mode::Live).expect("starts");
    assert_ne!(snapshot(&one.run), snapshot(&three.run));
    assert_eq!(snapshot(&one.run).len(), 64);
}
