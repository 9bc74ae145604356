//! Timers and events: `wait`, `wait_until`, `wait_for` with held events and timeouts,
//! and `due`.

use agentprocess_engine::{Actor, Code, Effect, Notification};
use serde_json::{Value, json};

use crate::support::{Bench, agent, operator, version_of};

const OFFBOARD: &str = "---
name: offboard
description: Wait for the settlement event, or chase it.
inputs:
  effectiveAt: datetime
steps:
  - id: effective
    wait_until: inputs.effectiveAt
  - id: invoice
    agent: Send the final invoice.
    due: 1d
  - id: settled
    wait_for: invoice-settled
    timeout: 30d
    on_timeout: chase
    next: verify
  - id: verify
    agent: Verify the ledger.
    next: done
  - id: chase
    task: Chase the payment.
    person: collections
    next: done
  - id: done
    finish: offboarded
---
";

fn bench() -> Bench {
    let mut inputs = serde_json::Map::new();
    inputs.insert("effectiveAt".into(), json!("2026-10-07T09:00:00Z"));
    Bench::start(version_of(OFFBOARD), &agent(), inputs)
}

fn pass_invoice(bench: &mut Bench) {
    let token = bench.token(&agent(), "invoice");
    bench
        .submit(&agent(), &token, json!({ "summary": "Invoice sent." }), Vec::new())
        .expect("accepted");
}

#[test]
fn a_wait_until_fires_once_and_only_for_its_attempt() {
    let mut bench = bench();
    assert_eq!(bench.states()[0], "waiting");
    bench.wait(86_400);
    assert!(
        bench.fire("effective:wait_until:2").is_empty(),
        "another attempt's timer is stale"
    );
    assert_eq!(bench.states()[0], "waiting");
    bench.fire("effective:wait_until:1");
    assert_eq!(bench.states()[..2], [json!("done"), json!("ready")]);
    assert_eq!(
        bench.view()["data"]["steps"]["effective"],
        json!({ "by": "server", "at": "2026-10-07T09:00:00Z", "history": [] })
    );
    let again = bench.run.clone();
    assert!(bench.fire("effective:wait_until:1").is_empty());
    assert_eq!(bench.run, again, "a second firing has no effect");
}

#[test]
fn due_marks_overdue_and_notifies_once() {
    let mut bench = bench();
    bench.fire("effective:wait_until:1");
    bench.wait(86_400);
    let effects = bench.fire("invoice:due:1");
    assert_eq!(
        effects,
        [Effect::Notify(Notification::Overdue { step: "invoice".into() })]
    );
    let view = bench.view();
    assert_eq!(view["steps"][1]["overdue"], true);
    assert!(bench.fire("invoice:due:1").is_empty());
}

#[test]
fn an_event_that_arrives_early_is_held_and_consumed_when_its_wait_is_ready() {
    let mut bench = bench();
    assert_eq!(
        bench
            .send_event(&agent(), "invoice-settled", json!({ "receipt": "rc-1" }))
            .expect("held"),
        None
    );
    assert_eq!(
        bench
            .send_event(&agent(), "invoice-settled", json!({ "receipt": "rc-2" }))
            .expect("held"),
        None
    );
    bench.fire("effective:wait_until:1");
    pass_invoice(&mut bench);
    let view = bench.view();
    assert_eq!(view["steps"][2]["state"], "done");
    assert_eq!(view["steps"][3]["state"], "ready");
    assert_eq!(
        view["data"]["steps"]["settled"],
        json!({ "output": { "receipt": "rc-1" }, "by": "a_screener", "at": "2026-10-06T09:00:00Z", "history": [] }),
        "held events are consumed oldest first"
    );
    assert_eq!(bench.run.events.len(), 1);
}

#[test]
fn an_event_satisfies_a_waiting_wait_for() {
    let mut bench = bench();
    bench.fire("effective:wait_until:1");
    pass_invoice(&mut bench);
    assert_eq!(bench.states()[2], "waiting");
    let consumed = bench
        .send_event(
            &operator(),
            "invoice-settled",
            serde_json::from_str(r#"{ "amount": 1080.50 }"#).expect("JSON"),
        )
        .expect("consumed");
    assert_eq!(consumed.as_deref(), Some("settled"));
    let view = bench.view();
    assert_eq!(view["data"]["steps"]["settled"]["by"], "ops@example.com");
    assert_eq!(
        view["data"]["steps"]["settled"]["output"]["amount"].to_string(),
        "1080.50"
    );
    assert!(
        bench.fire("settled:timeout:1").is_empty(),
        "the timeout of a satisfied wait is stale"
    );
}

#[test]
fn a_timeout_continues_at_on_timeout_and_a_late_event_is_held_until_the_run_ends() {
    let mut bench = bench();
    bench.fire("effective:wait_until:1");
    pass_invoice(&mut bench);
    bench.wait(30 * 86_400);
    bench.fire("settled:timeout:1");
    let view = bench.view();
    assert_eq!(view["steps"][2]["state"], "done");
    assert_eq!(view["steps"][4]["state"], "waiting");
    assert_eq!(view["workItems"][0]["stepId"], "chase");
    assert_eq!(
        bench.send_event(&agent(), "invoice-settled", json!({})).expect("held"),
        None
    );
    bench.cancel(&operator(), "Written off.").expect("cancelled");
    assert!(
        bench.run.events.is_empty(),
        "held events are discarded when the run ends"
    );
}

#[test]
fn who_may_send_events_and_what_they_are_called() {
    let mut bench = bench();
    let person = Actor::Person {
        person: "p@example.com".into(),
        groups: vec![],
        operator: false,
    };
    assert_eq!(
        bench
            .send_event(&person, "invoice-settled", json!({}))
            .expect_err("people do not")
            .code,
        Code::Forbidden
    );
    let error = bench
        .send_event(&agent(), "Invoice Settled", json!({}))
        .expect_err("bad name");
    assert_eq!(error.code, Code::Invalid);
    assert_eq!(
        error.issues,
        [
            "name: \"Invoice Settled\" is not a valid event name: start with a lowercase letter a–z, then up to 63 lowercase letters, digits, \"_\" or \"-\", such as \"invoice_settled\" (^[a-z][a-z0-9_-]{0,63}$)"
        ]
    );
    bench.settings.run_data_bytes = 100;
    let error = bench
        .send_event(&agent(), "big", json!({ "blob": "x".repeat(200) }))
        .expect_err("too big");
    assert!(
        error.issues[0].starts_with("data: run data would be"),
        "{:?}",
        error.issues
    );
}

#[test]
fn a_wait_step_continues_when_its_timer_fires() {
    let mut bench = Bench::start(
        version_of(
            "---\nname: pause\ndescription: x\nsteps:\n  - id: pause\n    wait: 4h\n  - id: work\n    agent: Work.\n  - id: done\n    finish: ok\n---\n",
        ),
        &agent(),
        Default::default(),
    );
    assert_eq!(bench.view()["run"]["state"], "waiting");
    bench.wait(4 * 3600);
    bench.fire("pause:wait:1");
    assert_eq!(bench.states(), [json!("done"), json!("ready"), Value::Null]);
    assert_eq!(bench.view()["run"]["state"], "active");
}

#[test]
fn a_returned_escalation_keeps_its_due_clock() {
    let mut bench = bench();
    bench.fire("effective:wait_until:1");
    assert_eq!(
        bench.view()["steps"][1]["due"],
        "2026-10-06T09:00:00Z".replace("06T09", "07T09")
    );
    bench.wait(3_600);
    let token = bench.token(&agent(), "invoice");
    bench
        .escalate(&agent(), &token, "The ledger is locked.")
        .expect("escalates");
    let item = bench.item("invoice");
    bench
        .decide(
            &operator(),
            json!({ "workItemId": item, "decision": "returned", "note": "Unlocked." }),
        )
        .expect("returned");
    let view = bench.view();
    assert_eq!(view["steps"][1]["state"], "ready");
    assert_eq!(
        view["steps"][1]["due"], "2026-10-07T09:00:00Z",
        "the same attempt keeps its clock"
    );
    bench.wait(86_400);
    assert_eq!(
        bench.fire("invoice:due:1"),
        [Effect::Notify(Notification::Overdue { step: "invoice".into() })]
    );
}
