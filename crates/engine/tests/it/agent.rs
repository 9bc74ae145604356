//! The agent loop: claim, renew, submit, escalate, and their errors in order.

use agentprocess_engine::{Actor, Code, Effect, TimerKind};
use serde_json::{Value, json};

use crate::support::{Bench, agent, fixture, sample_inputs, version_of};

fn other_agent() -> Actor {
    Actor::Agent {
        id: "a_other".to_owned(),
        groups: Vec::new(),
    }
}

fn invoice() -> Bench {
    let version = fixture("invoice-approval");
    let inputs = sample_inputs(&version);
    Bench::start(version, &agent(), inputs)
}

fn good_validation() -> Value {
    json!({
        "output": { "totalUsd": 8200, "supplier": "Acme", "matchSummary": "PO and receipt match." },
        "evidence": [{ "kind": "link", "ref": "https://erp/inv/284" }],
        "summary": "Matched the invoice to PO 77 and goods receipt 91.",
        "next": "manager_review", "reason": "Total is 8200 USD, under 10000."
    })
}

fn token_of(result: &Value) -> String {
    result["token"].as_str().expect("a token").to_owned()
}

#[test]
fn a_claim_returns_the_step_the_body_and_the_data_but_the_view_never_the_token() {
    let mut bench = invoice();
    let result = bench.claim(&agent(), "validate").expect("claims");
    assert_eq!(result["expiresAt"], "2026-10-06T09:10:00Z");
    assert_eq!(result["mode"], "live");
    assert_eq!(result["handoff"], Value::Null);
    assert_eq!(result["step"]["id"], "validate");
    assert_eq!(
        result["step"]["output"],
        json!({ "totalUsd": "number", "supplier": "string", "matchSummary": "string" })
    );
    assert_eq!(result["step"]["evidence"], json!(["link"]));
    assert_eq!(
        result["step"]["next"],
        json!([{ "to": "manager_review" }, { "to": "finance_review" }, { "to": "cfo_review" }])
    );
    assert!(
        result["step"]["instructions"]
            .as_str()
            .expect("text")
            .starts_with("Read the invoice")
    );
    assert_eq!(result["body"], json!(bench.version.process.body()));
    assert_eq!(result["data"]["steps"], json!({}));
    let view = bench.view();
    assert_eq!(view["steps"][0]["state"], "claimed");
    assert_eq!(view["run"]["state"], "active");
    let token = token_of(&result);
    assert!(!view.to_string().contains(&token), "a token appeared in the run view");
    assert!(
        !serde_json::to_string(&bench.run).expect("JSON").contains(&token),
        "the run keeps the token itself"
    );
}

#[test]
fn claim_errors() {
    let mut bench = invoice();
    bench.claim(&agent(), "validate").expect("claims");
    let conflict = |error: agentprocess_engine::ToolError| (error.code, error.issues);
    assert_eq!(
        conflict(bench.claim(&agent(), "validate").expect_err("held")),
        (Code::Conflict, vec!["claimed_by_you".into()])
    );
    assert_eq!(
        conflict(bench.claim(&other_agent(), "validate").expect_err("held")),
        (Code::Conflict, vec!["claimed_by_other".into()])
    );
    assert_eq!(
        conflict(bench.claim(&agent(), "record").expect_err("unreached")),
        (Code::Conflict, vec!["not_ready".into()])
    );
    assert_eq!(
        bench.claim(&agent(), "manager_review").expect_err("person step").code,
        Code::Forbidden
    );
    assert_eq!(bench.claim(&agent(), "nope").expect_err("no step").code, Code::NotFound);
    let person = crate::support::person(&bench.version);
    assert_eq!(
        bench.claim(&person, "validate").expect_err("people do not claim").code,
        Code::Forbidden
    );
}

#[test]
fn a_step_bound_to_other_agents_is_forbidden_to_the_rest_and_claimed_by_its_own() {
    let mut bench = invoice();
    let bound = |agents: &[&str], groups: &[&str]| agentprocess_engine::Claimants {
        agents: agents.iter().map(|agent| (*agent).to_owned()).collect(),
        groups: groups.iter().map(|group| (*group).to_owned()).collect(),
    };
    bench.version.agents.0.insert("*".to_owned(), bound(&["a_other"], &[]));
    let refused = bench.claim(&agent(), "validate").expect_err("bound to another agent");
    assert_eq!(refused.code, Code::Forbidden);
    assert_eq!(
        refused.issues,
        vec![
            "stepId: the organization binds validate of invoice-approval to the agent a_other; \
             agent a_screener is not among them"
                .to_owned()
        ]
    );
    assert_eq!(
        bench.view()["steps"][0]["state"],
        "ready",
        "a refused claim changes nothing"
    );
    // A binding of the step itself wins over the one of every step.
    bench
        .version
        .agents
        .0
        .insert("validate".to_owned(), bound(&[], &["screeners"]));
    assert_eq!(
        bench
            .claim(&other_agent(), "validate")
            .expect_err("not in the group")
            .code,
        Code::Forbidden
    );
    let in_group = Actor::Agent {
        id: "a_new".to_owned(),
        groups: vec!["screeners".to_owned()],
    };
    bench
        .claim(&in_group, "validate")
        .expect("a member of the bound group claims");
}

#[test]
fn an_accepted_submission_records_the_route_and_moves_on() {
    let mut bench = invoice();
    let token = bench.token(&agent(), "validate");
    bench.wait(60);
    let effects = bench
        .submit(&agent(), &token, good_validation(), Vec::new())
        .expect("accepted");
    let view = bench.view();
    assert_eq!(
        view["data"]["steps"]["validate"],
        json!({
            "output": { "totalUsd": 8200, "supplier": "Acme", "matchSummary": "PO and receipt match." },
            "evidence": [{ "kind": "link", "ref": "https://erp/inv/284" }],
            "summary": "Matched the invoice to PO 77 and goods receipt 91.",
            "next": "manager_review", "reason": "Total is 8200 USD, under 10000.",
            "by": "a_screener", "at": "2026-10-06T09:01:00Z", "history": []
        })
    );
    assert_eq!(view["steps"][0]["state"], "done");
    assert_eq!(view["steps"][1]["state"], "waiting");
    assert_eq!(view["run"]["state"], "waiting");
    assert_eq!(view["workItems"][0]["stepId"], "manager_review");
    assert_eq!(
        view["workItems"][0]["assignedTo"],
        json!({ "person": "dana@example.com" })
    );
    assert_eq!(view["workItems"][0]["due"], "2026-10-08T09:01:00Z");
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::ScheduleTimer(t) if t.kind == TimerKind::Due && t.step == "manager_review"))
    );
    // The token died with the submission.
    assert_eq!(
        bench
            .submit(&agent(), &token, good_validation(), Vec::new())
            .expect_err("dead")
            .code,
        Code::Stale
    );
}

#[test]
fn a_refused_submission_changes_nothing_but_the_handoff_and_the_claim_stands() {
    let mut bench = invoice();
    let token = bench.token(&agent(), "validate");
    let before = agentprocess_engine::snapshot(&bench.run);
    let error = bench
        .submit(
            &agent(),
            &token,
            json!({ "output": { "totalUsd": "8200", "colour": "red" }, "next": "cfo" }),
            vec!["evidence f_000: not found".to_owned()],
        )
        .expect_err("refused");
    assert_eq!(error.code, Code::NotAccepted);
    assert_eq!(
        error.issues,
        [
            "summary: missing",
            "output.totalUsd: expected number",
            "output.supplier: missing",
            "output.matchSummary: missing",
            "output.colour: not declared",
            "evidence: link required",
            "next: \"cfo\" is not one of manager_review, finance_review, cfo_review",
            "reason: required",
            "evidence f_000: not found",
        ]
    );
    assert_eq!(agentprocess_engine::snapshot(&bench.run), before);
    let view = bench.view();
    assert_eq!(view["steps"][0]["state"], "claimed");
    assert_eq!(
        bench.run.steps[0].handoff.issues.as_deref(),
        Some(error.issues.as_slice())
    );
    // The same claim can submit again, and then the handoff is spent.
    bench
        .submit(&agent(), &token, good_validation(), Vec::new())
        .expect("accepted");
    assert!(bench.run.steps[0].handoff.is_empty());
}

#[test]
fn renew_replaces_the_token_and_keeps_progress_for_whoever_comes_next() {
    let mut bench = invoice();
    let first = bench.token(&agent(), "validate");
    bench.wait(300);
    let renewed = bench
        .renew(&agent(), &first, Some("PO matched; receipt pending"))
        .expect("renews");
    assert_eq!(renewed["expiresAt"], "2026-10-06T09:15:00Z");
    let second = token_of(&renewed);
    assert_ne!(first, second);
    assert_eq!(
        bench.renew(&agent(), &first, None).expect_err("old token").code,
        Code::Stale
    );
    // The lease ends: the step is claimable at once, and the progress note is handed on.
    bench.wait(601);
    assert_eq!(bench.view()["steps"][0]["state"], "ready");
    // get_work hands it on too, before any write has retired the claim.
    let listed = bench.work(&other_agent());
    assert_eq!(
        listed[0]["handoff"],
        json!({ "progress": "PO matched; receipt pending" })
    );
    assert_eq!(
        bench.renew(&agent(), &second, None).expect_err("lease over").code,
        Code::Stale
    );
    let next = bench.claim(&other_agent(), "validate").expect("claims");
    assert_eq!(next["handoff"], json!({ "progress": "PO matched; receipt pending" }));
    assert_eq!(
        bench
            .submit(&agent(), &second, good_validation(), Vec::new())
            .expect_err("old lease")
            .code,
        Code::Stale
    );
}

#[test]
fn a_token_that_never_verified_is_invalid() {
    let mut bench = invoice();
    bench.claim(&agent(), "validate").expect("claims");
    let error = bench
        .submit(&agent(), "forged", good_validation(), Vec::new())
        .expect_err("forged");
    assert_eq!(error.code, Code::Invalid);
}

#[test]
fn escalation_hands_the_step_to_the_operators_and_kills_the_token() {
    let mut bench = invoice();
    let token = bench.token(&agent(), "validate");
    assert_eq!(
        bench.escalate(&agent(), &token, "  ").expect_err("no note").code,
        Code::Invalid
    );
    bench
        .escalate(&agent(), &token, "Invoice is in EUR; need a USD valuation.")
        .expect("escalates");
    let view = bench.view();
    assert_eq!(view["steps"][0]["state"], "waiting");
    assert_eq!(view["run"]["state"], "waiting");
    let item = &view["workItems"][0];
    assert_eq!(item["kind"], "agent");
    assert_eq!(item["assignedTo"], json!({ "group": "operators" }));
    assert_eq!(
        item["escalation"],
        json!({ "note": "Invoice is in EUR; need a USD valuation.", "by": "a_screener", "at": "2026-10-06T09:00:00Z" })
    );
    assert_eq!(item["decide"]["decisions"], json!(["returned", "completed", "failed"]));
    assert_eq!(
        bench
            .submit(&agent(), &token, good_validation(), Vec::new())
            .expect_err("dead")
            .code,
        Code::Stale
    );
    assert_eq!(
        bench.claim(&agent(), "validate").expect_err("escalated").issues,
        ["not_ready"]
    );
}

const TWO_STEPS: &str = "---
name: two
description: Work, then finish.
steps:
  - id: work
    agent: Work.
  - id: done
    finish: worked
---
";

#[test]
fn once_a_run_ends_every_write_is_a_run_ended_conflict_first_of_all() {
    let mut bench = Bench::start(version_of(TWO_STEPS), &agent(), Default::default());
    let token = bench.token(&agent(), "work");
    bench
        .submit(&agent(), &token, json!({ "summary": "Done." }), Vec::new())
        .expect("accepted");
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "worked");
    let ended = |error: agentprocess_engine::ToolError| (error.code, error.issues);
    let run_ended = (Code::Conflict, vec!["run_ended".to_owned()]);
    assert_eq!(ended(bench.claim(&agent(), "work").expect_err("over")), run_ended);
    assert_eq!(
        ended(bench.submit(&agent(), &token, json!({}), Vec::new()).expect_err("over")),
        run_ended
    );
    assert_eq!(
        ended(
            bench
                .submit(&agent(), "forged", json!({}), Vec::new())
                .expect_err("over")
        ),
        run_ended
    );
    assert_eq!(ended(bench.renew(&agent(), &token, None).expect_err("over")), run_ended);
    assert_eq!(
        ended(bench.escalate(&agent(), &token, "x").expect_err("over")),
        run_ended
    );
}

#[test]
fn next_and_reason_on_a_single_next_step_are_not_accepted() {
    let mut bench = Bench::start(version_of(TWO_STEPS), &agent(), Default::default());
    let token = bench.token(&agent(), "work");
    let error = bench
        .submit(
            &agent(),
            &token,
            json!({ "summary": "Done.", "next": "done", "reason": "Because." }),
            Vec::new(),
        )
        .expect_err("refused");
    assert_eq!(
        error.issues,
        [
            "next: not accepted; this step has a single next",
            "reason: not accepted; this step has a single next"
        ]
    );
}

#[test]
fn run_data_is_capped_on_submit() {
    let version = version_of(
        "---\nname: big\ndescription: x\nsteps:\n  - id: work\n    agent: Work.\n    output: { text: string }\n  - id: done\n    finish: ok\n---\n",
    );
    let mut bench = Bench::start(version, &agent(), Default::default());
    bench.settings.run_data_bytes = 1000;
    let token = bench.token(&agent(), "work");
    let error = bench
        .submit(
            &agent(),
            &token,
            json!({ "summary": "Big.", "output": { "text": "x".repeat(2000) } }),
            Vec::new(),
        )
        .expect_err("too big");
    assert_eq!(error.issues.len(), 1);
    assert!(error.issues[0].starts_with("run data: 2"), "{:?}", error.issues);
    assert!(error.issues[0].ends_with("bytes with this submission; the limit is 1000 (limits.runDataBytes)"));
}

#[test]
fn the_last_branch_to_join_continues_at_the_parallel_steps_next() {
    let version = version_of(
        "---\nname: fork\ndescription: x\nsteps:\n  - id: respond\n    parallel: [ops, sec]\n    next: close\n  - id: ops\n    agent: Ops.\n    next: join\n  - id: sec\n    agent: Sec.\n    next: sec2\n  - id: sec2\n    agent: Sec two.\n    next: join\n  - id: close\n    agent: Close.\n  - id: done\n    finish: closed\n---\n",
    );
    let mut bench = Bench::start(version, &agent(), Default::default());
    let done = json!({ "summary": "Done." });
    let ops = bench.token(&agent(), "ops");
    let sec = bench.token(&other_agent(), "sec");
    bench
        .submit(&agent(), &ops, done.clone(), Vec::new())
        .expect("accepted");
    let states = |bench: &Bench| -> Vec<Value> {
        bench.view()["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .map(|step| step["state"].clone())
            .collect()
    };
    assert_eq!(
        states(&bench),
        [
            json!("waiting"),
            json!("done"),
            json!("claimed"),
            Value::Null,
            Value::Null,
            Value::Null
        ]
    );
    bench
        .submit(&other_agent(), &sec, done.clone(), Vec::new())
        .expect("accepted");
    assert_eq!(
        states(&bench),
        [
            json!("waiting"),
            json!("done"),
            json!("done"),
            json!("ready"),
            Value::Null,
            Value::Null
        ]
    );
    let sec2 = bench.token(&agent(), "sec2");
    bench.submit(&agent(), &sec2, done, Vec::new()).expect("accepted");
    assert_eq!(
        states(&bench),
        [
            json!("done"),
            json!("done"),
            json!("done"),
            json!("done"),
            json!("ready"),
            Value::Null
        ]
    );
    // The parallel step records nothing in run data.
    assert!(bench.view()["data"]["steps"].get("respond").is_none());
}
