//! The check-1 profile (check.md §2–§3): every row of its tables, on the `vendor-check`
//! fixture and on processes of our own, with the bench's test evaluator
//! ([`crate::support::by_summary`]).

use std::sync::OnceLock;

use agentprocess_engine::{Answer, CheckLimits, Checked, Code, Outcome, Verdict, verdict};
use agentprocess_format::{Check, Question, QuestionKind};
use serde_json::{Value, json};

use crate::support::{Bench, agent, fixture, operator, sample_inputs, shared, t0, version_of};

fn vendor() -> Bench {
    let version = fixture("vendor-check");
    let inputs = sample_inputs(&version);
    Bench::start(version, &agent(), inputs)
}

/// The screening submission; `summary` steers the test evaluator.
fn screening(summary: &str) -> Value {
    json!({
        "output": { "cleared": true, "summary": "Cleared against OFAC and EU." },
        "evidence": [{ "kind": "file", "ref": "f_report", "sha256": "ab".repeat(32) }],
        "summary": summary,
        "next": "approve",
        "reason": "Cleared.",
    })
}

fn submit(bench: &mut Bench, summary: &str) -> Result<(), agentprocess_engine::ToolError> {
    let token = bench.token(&agent(), "check_vendor");
    bench.submit(&agent(), &token, screening(summary), Vec::new()).map(drop)
}

/// Asserts `record` meets the official `check-verdict.json`.
#[track_caller]
fn assert_verdict(record: &Value) {
    static SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();
    let schema = SCHEMA.get_or_init(|| {
        let path = shared().join("schemas/core-2/check-verdict.json");
        let schema: Value = serde_json::from_slice(&std::fs::read(path).expect("schema")).expect("JSON");
        jsonschema::draft202012::new(&schema).expect("a valid schema")
    });
    let errors: Vec<String> = schema.iter_errors(record).map(|error| error.to_string()).collect();
    assert!(errors.is_empty(), "breaks check-verdict.json: {errors:?}\n{record:#}");
}

fn yes_no(pass: Option<f64>, fail: Option<f64>) -> Question {
    Question {
        ask: "The cleared verdict matches the report.".to_owned(),
        kind: QuestionKind::YesNo { pass, fail },
    }
}

fn choice(confidence: Option<f64>) -> Question {
    Question {
        ask: "What does the summary do?".to_owned(),
        kind: QuestionKind::Choice {
            answers: vec![
                ("states".into(), "States the verdict.".into()),
                ("hedges".into(), "Hedges.".into()),
                ("unclear".into(), "Cannot tell.".into()),
            ],
            pass: vec!["states".into()],
            unsure: vec!["unclear".into()],
            confidence,
        },
    }
}

fn rubric(confidence: Option<f64>) -> Question {
    Question {
        ask: "How complete is the screening?".to_owned(),
        kind: QuestionKind::Rubric {
            levels: vec![
                "Neither list.".into(),
                "One list is covered.".into(),
                "Both lists.".into(),
            ],
            pass: 2,
            confidence,
        },
    }
}

/// The verdict of one question's answer under `limits`.
fn one(question: Question, answer: Answer, limits: &CheckLimits) -> (Outcome, String) {
    let check = Check {
        questions: vec![question],
    };
    let checked = Checked {
        model: "m".into(),
        seen: String::new(),
        truncated: false,
        answers: Some(vec![answer]),
    };
    let record = verdict(&check, false, &checked, limits, t0());
    assert_verdict(&serde_json::to_value(&record).expect("JSON"));
    let question = &record.questions[0];
    (question.result, record.issues().first().cloned().unwrap_or_default())
}

#[test]
fn yes_no_answers_pass_at_the_threshold_fail_below_and_are_unsure_between() {
    let limits = CheckLimits::default();
    let yes = |p: f64| Answer::YesNo { yes: p };
    assert_eq!(one(yes_no(None, None), yes(0.9), &limits).0, Outcome::Pass);
    // Without `fail`, below `pass` fails.
    assert_eq!(
        one(yes_no(None, None), yes(0.89), &limits),
        (
            Outcome::Fail,
            "check: The cleared verdict matches the report. → no (0.89)".to_owned()
        )
    );
    assert_eq!(one(yes_no(Some(0.8), Some(0.5)), yes(0.6), &limits).0, Outcome::Unsure);
    assert_eq!(
        one(yes_no(Some(0.8), Some(0.5)), yes(0.12), &limits).1,
        "check: The cleared verdict matches the report. → no (0.12)"
    );
    assert_eq!(one(yes_no(Some(0.8), Some(0.5)), yes(0.5), &limits).0, Outcome::Unsure);
    // The server's checkFail applies where a question sets none; checkPass likewise.
    let strict = CheckLimits {
        pass: 0.95,
        fail: Some(0.4),
        ..CheckLimits::default()
    };
    assert_eq!(one(yes_no(None, None), yes(0.94), &strict).0, Outcome::Unsure);
    assert_eq!(one(yes_no(None, None), yes(0.39), &strict).0, Outcome::Fail);
    assert_eq!(one(yes_no(None, None), yes(0.96), &strict).0, Outcome::Pass);
    // An answer above pass reads `yes (p)` when listed (an unsure question's line).
    let (outcome, line) = one(yes_no(Some(0.3), None), yes(0.25), &limits);
    assert_eq!(
        (outcome, line.as_str()),
        (
            Outcome::Fail,
            "check: The cleared verdict matches the report. → no (0.25)"
        )
    );
}

#[test]
fn choice_answers_pass_in_pass_are_unsure_in_unsure_or_below_confidence_and_fail_otherwise() {
    let limits = CheckLimits::default();
    let answer = |name: &str, confidence: f64| Answer::Choice {
        name: name.to_owned(),
        confidence,
    };
    assert_eq!(one(choice(None), answer("states", 0.91), &limits).0, Outcome::Pass);
    assert_eq!(
        one(choice(None), answer("hedges", 0.9), &limits),
        (
            Outcome::Fail,
            "check: What does the summary do? → hedges (0.9)".to_owned()
        )
    );
    assert_eq!(one(choice(None), answer("unclear", 0.99), &limits).0, Outcome::Unsure);
    // Below checkConfidence (0.8) even a passing name is unsure; a question's own
    // confidence replaces the server's.
    assert_eq!(one(choice(None), answer("states", 0.79), &limits).0, Outcome::Unsure);
    assert_eq!(one(choice(Some(0.6)), answer("states", 0.7), &limits).0, Outcome::Pass);
    assert_eq!(
        one(choice(Some(0.95)), answer("hedges", 0.9), &limits).0,
        Outcome::Unsure
    );
}

#[test]
fn rubric_answers_pass_at_or_above_the_level_and_are_unsure_below_confidence() {
    let limits = CheckLimits::default();
    let level = |level: usize, confidence: f64| Answer::Rubric { level, confidence };
    assert_eq!(one(rubric(None), level(2, 0.85), &limits).0, Outcome::Pass);
    assert_eq!(
        one(rubric(None), level(1, 0.85), &limits),
        (
            Outcome::Fail,
            "check: How complete is the screening? → level 1: One list is covered. (0.85)".to_owned()
        )
    );
    assert_eq!(one(rubric(None), level(2, 0.5), &limits).0, Outcome::Unsure);
    assert_eq!(one(rubric(Some(0.4)), level(2, 0.5), &limits).0, Outcome::Pass);
}

#[test]
fn the_verdict_is_the_worst_question_and_no_answer_is_an_error() {
    let check = Check {
        questions: vec![yes_no(Some(0.9), Some(0.5)), choice(None), rubric(None)],
    };
    let verdict_of = |answers: Option<Vec<Answer>>| {
        let checked = Checked {
            model: "m".into(),
            seen: String::new(),
            truncated: false,
            answers,
        };
        verdict(&check, false, &checked, &CheckLimits::default(), t0())
    };
    let answers = |yes: f64, name: &str, level: usize| {
        Some(vec![
            Answer::YesNo { yes },
            Answer::Choice {
                name: name.to_owned(),
                confidence: 0.9,
            },
            Answer::Rubric { level, confidence: 0.9 },
        ])
    };
    assert_eq!(verdict_of(answers(0.95, "states", 2)).verdict, Verdict::Pass);
    assert_eq!(verdict_of(answers(0.95, "hedges", 2)).verdict, Verdict::Fail);
    // Unsure outranks fail.
    assert_eq!(verdict_of(answers(0.6, "hedges", 0)).verdict, Verdict::Unsure);
    let error = verdict_of(None);
    assert_eq!(error.verdict, Verdict::Error);
    assert!(error.questions.is_empty());
    assert_verdict(&serde_json::to_value(&error).expect("JSON"));
    // Too few answers, an answer of the wrong kind, a name that is not an answer, a
    // level past the last: no answer.
    assert_eq!(
        verdict_of(Some(vec![Answer::YesNo { yes: 1.0 }])).verdict,
        Verdict::Error
    );
    assert_eq!(verdict_of(answers(0.95, "maybe", 2)).verdict, Verdict::Error);
    assert_eq!(verdict_of(answers(0.95, "states", 3)).verdict, Verdict::Error);
    let swapped = Some(vec![
        Answer::Rubric {
            level: 0,
            confidence: 1.0,
        },
        Answer::YesNo { yes: 1.0 },
        Answer::YesNo { yes: 1.0 },
    ]);
    assert_eq!(verdict_of(swapped).verdict, Verdict::Error);
}

#[test]
fn the_evaluator_sees_the_instructions_body_run_data_and_submission_and_each_question() {
    let mut bench = vendor();
    submit(&mut bench, "Searched both lists by legal name.").expect("passes");
    let shown = bench.shown.clone().expect("the evaluator was asked");
    assert!(
        shown
            .instructions
            .starts_with("Check the vendor against the OFAC and EU sanctions lists.")
    );
    assert!(shown.body.contains("# Vendor check"));
    assert_eq!(shown.run_data["inputs"], bench.view()["data"]["inputs"]);
    assert_eq!(shown.run_data["steps"], json!({}), "the run data before the submission");
    assert!(!shown.truncated);
    assert_eq!(
        shown.submission,
        json!({
            "output": { "cleared": true, "summary": "Cleared against OFAC and EU." },
            "summary": "Searched both lists by legal name.",
            "evidence": [{ "kind": "file", "ref": "f_report", "sha256": "ab".repeat(32) }],
            "next": "approve",
            "reason": "Cleared.",
        })
    );
    let asks: Vec<&str> = shown.questions.iter().map(|question| question.ask.as_str()).collect();
    assert_eq!(
        asks,
        [
            "The cleared verdict matches what the attached report says.",
            "What does the summary do?",
            "How complete is the screening?"
        ]
    );
}

#[test]
fn a_pass_completes_the_step_and_records_the_verdict_in_run_data() {
    let mut bench = vendor();
    submit(&mut bench, "Both lists, no hits.").expect("passes");
    let view = bench.view();
    assert_eq!(view["steps"][0]["state"], "done");
    let check = &view["data"]["steps"]["check_vendor"]["check"];
    assert_verdict(check);
    assert_eq!(check["verdict"], "pass");
    assert_eq!(check["advisory"], false);
    assert_eq!(check["model"], "test-rule");
    assert_eq!(check["at"], "2026-10-06T09:00:00Z");
    assert_eq!(
        check["questions"][0],
        json!({ "ask": "The cleared verdict matches what the attached report says.", "kind": "yes_no", "answer": 0.97, "result": "pass" })
    );
    assert_eq!(
        check["questions"][1],
        json!({ "ask": "What does the summary do?", "kind": "choice", "answer": "states", "confidence": 0.95, "result": "pass" })
    );
    assert_eq!(check["questions"][2]["answer"], 2);
    assert!(check.get("truncated").is_none());
    // The approver reads it on their work item's run.
    assert_eq!(view["workItems"][0]["stepId"], "approve");
}

#[test]
fn a_fail_is_not_accepted_with_each_failed_question_and_changes_no_run_data() {
    let mut bench = vendor();
    let token = bench.token(&agent(), "check_vendor");
    let before = bench.view()["snapshot"].clone();
    let error = bench
        .submit(&agent(), &token, screening("[fail]"), Vec::new())
        .expect_err("fails");
    assert_eq!(error.code, Code::NotAccepted);
    assert_eq!(
        error.issues,
        [
            "check: The cleared verdict matches what the attached report says. → no (0.1)",
            "check: What does the summary do? → hedges (0.9)",
            "check: How complete is the screening? → level 0: Neither list is clearly covered. (0.9)",
        ]
    );
    let view = bench.view();
    assert_eq!(view["snapshot"], before, "run data did not change");
    assert!(view["data"]["steps"].get("check_vendor").is_none());
    // The claim stands; the handoff carries the verdict and the same lines.
    let handoff = &bench.run.steps[0].handoff;
    assert_eq!(handoff.issues.as_deref(), Some(&error.issues[..]));
    let check = serde_json::to_value(handoff.check.as_ref().expect("handoff.check")).expect("JSON");
    assert_verdict(&check);
    assert_eq!(check["verdict"], "fail");
    // The same attempt continues: resubmitting with the same token passes.
    bench
        .submit(&agent(), &token, screening("Fixed: both lists."), Vec::new())
        .expect("passes now");
    assert!(bench.run.steps[0].handoff.is_empty(), "a completion clears the handoff");
    assert_eq!(
        bench.view()["data"]["steps"]["check_vendor"]["check"]["verdict"],
        "pass"
    );
}

#[test]
fn a_fail_travels_in_the_handoff_of_the_next_claim() {
    let mut bench = vendor();
    let token = bench.token(&agent(), "check_vendor");
    bench
        .submit(&agent(), &token, screening("[fail]"), Vec::new())
        .expect_err("fails");
    bench.wait(601);
    let claim = bench.claim(&agent(), "check_vendor").expect("claims after the lease");
    assert_eq!(claim["handoff"]["check"]["verdict"], "fail");
    assert_eq!(claim["handoff"]["issues"].as_array().map(Vec::len), Some(3));
}

#[test]
fn an_unsure_verdict_holds_the_candidate_and_escalates_as_escalate_does() {
    let mut bench = vendor();
    let token = bench.token(&agent(), "check_vendor");
    bench
        .submit(&agent(), &token, screening("[unsure]"), Vec::new())
        .expect("ok: the call returns the run view");
    let view = bench.view();
    assert_eq!(view["steps"][0]["state"], "waiting");
    assert_eq!(view["run"]["state"], "waiting");
    let item = &view["workItems"][0];
    assert_eq!(item["kind"], "agent");
    assert_eq!(item["assignedTo"], json!({ "group": "operators" }));
    assert_eq!(item["decide"]["decisions"], json!(["returned", "completed", "failed"]));
    let escalation = &item["escalation"];
    assert_eq!(escalation["by"], "a_screener");
    assert_verdict(&escalation["check"]);
    assert_eq!(escalation["check"]["verdict"], "unsure");
    assert_eq!(escalation["candidate"]["output"]["cleared"], true);
    assert_eq!(escalation["candidate"]["next"], "approve");
    assert!(escalation["note"].as_str().unwrap_or_default().contains("→"));
    // While it waits on a person, run data shows the unsure verdict.
    assert_eq!(view["data"]["steps"]["check_vendor"]["check"]["verdict"], "unsure");
    assert_eq!(view["data"]["steps"]["check_vendor"]["history"], json!([]));
    // The token died, as with escalate.
    assert_eq!(
        bench
            .submit(&agent(), &token, screening("Again."), Vec::new())
            .expect_err("dead")
            .code,
        Code::Stale
    );
}

/// A vendor run whose unsure screening an operator decided with `arguments` (the
/// work item's id added). The evaluator is gone by then: a person deciding after a
/// check is not checked again.
fn decided_after_unsure(mut arguments: Value) -> Bench {
    let mut bench = vendor();
    submit(&mut bench, "[unsure]").expect("escalates");
    arguments["workItemId"] = json!(bench.item("check_vendor"));
    bench.evaluator = None;
    bench.decide(&operator(), arguments).expect("decided");
    bench
}

#[test]
fn an_unsure_step_returned_goes_back_to_the_agents_with_the_verdict_in_the_handoff() {
    let mut bench = decided_after_unsure(json!({ "decision": "returned", "note": "Attach the EU report too." }));
    let claim = bench.claim(&agent(), "check_vendor").expect("claimable again");
    let handoff = &claim["handoff"];
    assert_eq!(handoff["returned"]["note"], "Attach the EU report too.");
    assert_eq!(handoff["check"]["verdict"], "unsure");
    let issues = handoff["issues"].as_array().expect("issues");
    assert_eq!(issues.len(), 3, "every question that did not pass: {issues:?}");
    assert_eq!(
        issues[0],
        "check: The cleared verdict matches what the attached report says. → no (0.7)"
    );
}

#[test]
fn an_unsure_step_completed_without_output_completes_with_the_candidate_unchecked() {
    let bench = decided_after_unsure(json!({ "decision": "completed" }));
    let view = bench.view();
    let record = &view["data"]["steps"]["check_vendor"];
    assert_eq!(record["output"]["cleared"], true);
    assert_eq!(record["summary"], "[unsure]");
    assert_eq!(record["next"], "approve");
    assert_eq!(record["by"], "ops@example.com");
    assert_eq!(
        record["check"]["verdict"], "unsure",
        "the approver sees the unsure verdict"
    );
    assert_eq!(view["workItems"][0]["stepId"], "approve");
}

#[test]
fn an_unsure_step_completed_with_the_persons_output_records_theirs() {
    let bench = decided_after_unsure(json!({
        "decision": "completed",
        "output": { "cleared": false, "summary": "EU list hit on an alias." },
        "evidence": [{ "kind": "link", "ref": "https://screening.example/r/1" }, { "kind": "file", "ref": "f_mine", "sha256": "cd".repeat(32) }],
        "next": "decline", "reason": "A hit.",
    }));
    let view = bench.view();
    assert_eq!(view["data"]["steps"]["check_vendor"]["output"]["cleared"], false);
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "declined");
}

#[test]
fn an_unsure_step_failed_ends_the_run_failed() {
    let bench = decided_after_unsure(json!({ "decision": "failed", "note": "The report is forged." }));
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "failed");
}

#[test]
fn an_evaluator_error_is_retry_and_changes_nothing() {
    let mut bench = vendor();
    let token = bench.token(&agent(), "check_vendor");
    let before = bench.run.clone();
    let error = bench
        .submit(&agent(), &token, screening("[error]"), Vec::new())
        .expect_err("no answer");
    assert_eq!(error.code, Code::Retry);
    assert_eq!(bench.run, before, "nothing changed, not even the handoff");
    bench
        .submit(&agent(), &token, screening("Both lists."), Vec::new())
        .expect("the same claim submits once the evaluator answers");
}

#[test]
fn answers_about_other_material_are_asked_again() {
    let mut bench = vendor();
    let token = bench.token(&agent(), "check_vendor");
    let (run, version) = (bench.run.clone(), bench.version.clone());
    let stale = Checked {
        model: "m".into(),
        seen: "not this material".into(),
        truncated: false,
        answers: Some(Vec::new()),
    };
    let settings = bench.settings.clone();
    let actor = agent();
    let mut ids = NoIds;
    let mut context = agentprocess_engine::Context {
        now: bench.now,
        actor: &actor,
        ids: &mut ids,
        settings: &settings,
    };
    let submitted = agentprocess_engine::submit(
        &run,
        &version,
        &token,
        crate::support::submission_of(&screening("x")),
        Vec::new(),
        Some(&stale),
        &mut context,
    )
    .expect("no refusal");
    assert!(
        matches!(submitted, agentprocess_engine::Submitted::Check(_)),
        "{submitted:?}"
    );
}

struct NoIds;

impl agentprocess_engine::Ids for NoIds {
    fn work_item(&mut self) -> String {
        "w_x".to_owned()
    }

    fn token(&mut self) -> String {
        "tok_x".to_owned()
    }
}

const ADVISORY: &str = "---
name: advisory
description: Screen, with an advisory check, then finish.
steps:
  - id: screen
    agent: Screen the vendor.
    output: { cleared: boolean }
    check:
      - ask: The screening is complete.
        fail: 0.5
    advisory: true
  - id: done
    finish: screened
---
";

#[test]
fn an_advisory_check_records_every_verdict_and_never_blocks() {
    for (summary, verdict) in [
        ("ok", "pass"),
        ("[fail]", "fail"),
        ("[unsure]", "unsure"),
        ("[error]", "error"),
    ] {
        let mut bench = Bench::start(version_of(ADVISORY), &agent(), Default::default());
        let token = bench.token(&agent(), "screen");
        bench
            .submit(
                &agent(),
                &token,
                json!({ "output": { "cleared": true }, "summary": summary }),
                Vec::new(),
            )
            .unwrap_or_else(|error| panic!("{summary}: {error}"));
        let view = bench.view();
        assert_eq!(view["run"]["outcome"], "screened", "{summary}");
        let check = &view["data"]["steps"]["screen"]["check"];
        assert_verdict(check);
        assert_eq!(check["verdict"], verdict, "{summary}");
        assert_eq!(check["advisory"], true);
    }
}

#[test]
fn run_data_past_check_state_bytes_is_cut_oldest_step_first_and_the_verdict_says_so() {
    let source = "---
name: long
description: Three steps of notes, then a checked one.
steps:
  - id: first
    agent: Note.
    output: { note: string }
  - id: second
    agent: Note.
    output: { note: string }
  - id: checked
    agent: Check.
    output: { ok: boolean }
    check: It is fine.
  - id: done
    finish: done
---
";
    let mut bench = Bench::start(version_of(source), &agent(), Default::default());
    bench.settings.check.state_bytes = 1500;
    for step in ["first", "second"] {
        let token = bench.token(&agent(), step);
        bench
            .submit(
                &agent(),
                &token,
                json!({ "output": { "note": "n".repeat(800) }, "summary": step }),
                Vec::new(),
            )
            .expect("noted");
    }
    let token = bench.token(&agent(), "checked");
    bench
        .submit(
            &agent(),
            &token,
            json!({ "output": { "ok": true }, "summary": "ok" }),
            Vec::new(),
        )
        .expect("passes");
    let shown = bench.shown.clone().expect("asked");
    assert!(shown.truncated);
    let steps = shown.run_data["steps"].as_object().expect("steps");
    assert!(steps.get("first").is_none(), "the oldest step went first");
    assert!(steps.get("second").is_some(), "{steps:?}");
    let check = &bench.view()["data"]["steps"]["checked"]["check"];
    assert_verdict(check);
    assert_eq!(check["truncated"], true);
}

#[test]
fn rework_through_on_reject_starts_empty_and_keeps_the_earlier_verdict_in_history() {
    let mut bench = vendor();
    submit(&mut bench, "Both lists.").expect("passes");
    let approver = bench.decider("approve");
    let item = bench.item("approve");
    bench
        .decide(
            &approver,
            json!({ "workItemId": item, "decision": "rejected", "note": "Spend not justified." }),
        )
        .expect("rejected");
    let claim = bench.claim(&agent(), "check_vendor").expect("rework");
    assert!(claim["handoff"].is_null(), "a fresh attempt: {:#}", claim["handoff"]);
    let token = claim["token"].as_str().expect("token").to_owned();
    bench
        .submit(&agent(), &token, screening("[unsure]"), Vec::new())
        .expect("escalates");
    // The earlier completion still stands, under the unsure verdict now waiting.
    let data = &bench.view()["data"]["steps"]["check_vendor"];
    assert_eq!(data["check"]["verdict"], "unsure");
    assert_eq!(data["summary"], "Both lists.");
    let item = bench.item("check_vendor");
    bench
        .decide(&operator(), json!({ "workItemId": item, "decision": "completed" }))
        .expect("completed with the candidate");
    let data = &bench.view()["data"]["steps"]["check_vendor"];
    assert_eq!(data["history"][0]["check"]["verdict"], "pass");
    assert_verdict(&data["history"][0]["check"]);
    assert_eq!(data["check"]["verdict"], "unsure");
}

const TASK: &str = "---
name: task-check
description: A person writes the memo, a model checks it.
inputs:
  owner: person
steps:
  - id: memo
    person: inputs.owner
    task: Write the memo.
    output: { memo: string }
    check:
      - ask: The memo states a decision.
        pass: 0.9
        fail: 0.5
  - id: done
    finish: written
---
";

fn task() -> Bench {
    Bench::start(
        version_of(TASK),
        &agent(),
        json!({ "owner": "dana@example.com" })
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
}

fn write_memo(bench: &mut Bench, summary: &str) -> Result<(), agentprocess_engine::ToolError> {
    let owner = bench.decider("memo");
    let item = bench.item("memo");
    bench.decide(
        &owner,
        json!({ "workItemId": item, "decision": "completed", "output": { "memo": "We go." }, "summary": summary }),
    )
}

#[test]
fn a_persons_task_submission_is_checked_too() {
    let mut bench = task();
    let error = write_memo(&mut bench, "[fail]").expect_err("fails");
    assert_eq!(error.code, Code::NotAccepted);
    assert_eq!(error.issues, ["check: The memo states a decision. → no (0.1)"]);
    // The work item stays open, and carries the verdict in its handoff.
    let owner = bench.decider("memo");
    let items = bench.work(&owner);
    assert_eq!(items[0]["workItem"]["handoff"]["check"]["verdict"], "fail");
    write_memo(&mut bench, "Decided.").expect("passes");
    let view = bench.view();
    assert_eq!(view["run"]["outcome"], "written");
    assert_eq!(view["data"]["steps"]["memo"]["check"]["verdict"], "pass");
}

#[test]
fn an_unsure_task_goes_to_the_operators_and_returned_goes_back_to_its_person() {
    let mut bench = task();
    let first = bench.item("memo");
    write_memo(&mut bench, "[unsure]").expect("escalates");
    let view = bench.view();
    let item = &view["workItems"][0];
    assert_eq!(item["kind"], "task");
    assert_eq!(item["assignedTo"], json!({ "group": "operators" }));
    assert_eq!(item["decide"]["decisions"], json!(["returned", "completed", "failed"]));
    assert_eq!(item["escalation"]["candidate"]["output"]["memo"], "We go.");
    assert_eq!(item["escalation"]["by"], "dana@example.com");
    // The person's own item was closed by the escalation.
    let owner = Bench::decider(&bench, "memo");
    let late = bench
        .decide(
            &owner,
            json!({ "workItemId": first, "decision": "completed", "output": { "memo": "x" } }),
        )
        .expect_err("closed");
    assert_eq!(late.issues, ["already_decided"]);
    let escalated = bench.item("memo");
    bench
        .decide(
            &operator(),
            json!({ "workItemId": escalated, "decision": "returned", "note": "Say which option." }),
        )
        .expect("returned");
    let view = bench.view();
    let item = &view["workItems"][0];
    assert_eq!(item["assignedTo"], json!({ "person": "dana@example.com" }));
    assert_eq!(item["handoff"]["returned"]["note"], "Say which option.");
    assert_eq!(item["handoff"]["check"]["verdict"], "unsure");
    assert_eq!(item["decide"]["decisions"], json!(["completed", "failed"]));
}

#[test]
fn an_operator_completing_an_unsure_task_is_not_checked_again() {
    let mut bench = task();
    write_memo(&mut bench, "[unsure]").expect("escalates");
    bench.evaluator = None;
    let escalated = bench.item("memo");
    bench
        .decide(
            &operator(),
            json!({ "workItemId": escalated, "decision": "completed", "output": { "memo": "We go, with option B." } }),
        )
        .expect("not checked");
    let view = bench.view();
    assert_eq!(view["run"]["outcome"], "written");
    assert_eq!(view["data"]["steps"]["memo"]["output"]["memo"], "We go, with option B.");
}
