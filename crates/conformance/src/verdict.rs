//! check-1 §3: what a step's check leaves in run data. A submission the server took on
//! a step with `check` records the verdict as `steps.<id>.check`: the step's questions
//! in order, each answered in its own kind, each result the one §2's thresholds give
//! that answer (the question's own, else `describe.limits`), and a verdict that is the
//! worst of them (unsure outranks fail, fail outranks pass). A blocking check that took
//! the submission passed or was unsure; an advisory one may record any verdict. What
//! the model answered is its own; what the server made of the answer is checked.

use serde_json::Value;

use crate::report::{Failure, ensure};

/// Fails when `view` (the answer to a submission the server took on `step`, a
/// fixture's step definition) does not record `step`'s check as check-1 says, under
/// the server's `limits` (`describe.limits`); else the verdict it records. Steps
/// without `check` pass unread (`None`), as does a blocking check the server escalated
/// after its evaluator's errors, which §3 allows (`None`, or `error` if recorded).
pub(crate) fn recorded(step: &Value, view: &Value, limits: &Value) -> Result<Option<String>, Failure> {
    let Some(asked) = questions(&step["check"]) else {
        return Ok(None);
    };
    let id = step["id"].as_str().unwrap_or_default();
    let record = &view["data"]["steps"][id]["check"];
    let advisory = step["advisory"] == true;
    if !advisory && (record.is_null() || record["verdict"] == "error") && escalated(view, id) {
        return Ok(record["verdict"].as_str().map(str::to_owned));
    }
    ensure!(
        record.is_object(),
        "steps.{id}.check is missing from the run data after a submission its check took"
    );
    ensure!(
        record["advisory"] == advisory,
        "steps.{id}.check records advisory {}, the step says {advisory}",
        record["advisory"]
    );
    ensure!(
        record["model"].as_str().is_some_and(|model| !model.is_empty()),
        "steps.{id}.check names no model"
    );
    let verdict = record["verdict"].as_str().unwrap_or_default();
    let allowed: &[&str] = if advisory {
        &["pass", "fail", "unsure", "error"]
    } else {
        &["pass", "unsure"]
    };
    ensure!(
        allowed.contains(&verdict),
        "steps.{id}.check records verdict {verdict:?} for a submission the server took (expected one of {allowed:?})"
    );
    if verdict == "error" {
        return Ok(Some(verdict.to_owned()));
    }
    let answers = record["questions"].as_array().map(Vec::as_slice).unwrap_or_default();
    ensure!(
        answers.len() == asked.len(),
        "steps.{id}.check answers {} questions, the step asks {}",
        answers.len(),
        asked.len()
    );
    let mut worst = "pass";
    for (index, (question, answer)) in asked.iter().zip(answers).enumerate() {
        let kind = kind(question);
        ensure!(
            answer["ask"].as_str() == ask(question) && answer["kind"] == kind,
            "steps.{id}.check question {index} is {} ({}), the step asks {:?} ({kind})",
            answer["ask"],
            answer["kind"],
            ask(question).unwrap_or_default()
        );
        ensure!(
            answered_in_kind(question, &answer["answer"]),
            "steps.{id}.check question {index} ({kind}) has the answer {}, which the question does not offer",
            answer["answer"]
        );
        let result = answer["result"].as_str().unwrap_or_default();
        let expected = expected_result(question, answer, limits);
        ensure!(
            Some(result) == expected,
            "steps.{id}.check question {index} answered {} (confidence {}) has result {result:?}, where the thresholds give {}",
            answer["answer"],
            answer["confidence"],
            expected.map_or(
                "none: the answer or the question lacks a value they need".to_owned(),
                |expected| format!("{expected:?}")
            )
        );
        worst = worse(worst, result);
    }
    ensure!(
        verdict == worst,
        "steps.{id}.check records verdict {verdict:?}, but its worst question is {worst:?}"
    );
    Ok(Some(verdict.to_owned()))
}

/// Whether the run has step `id` escalated to a person.
fn escalated(view: &Value, id: &str) -> bool {
    view["workItems"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|item| item["stepId"] == id && !item["escalation"].is_null())
}

/// The questions of a `check` key: the short form is one yes/no question.
fn questions(check: &Value) -> Option<&[Value]> {
    match check {
        Value::String(_) => Some(std::slice::from_ref(check)),
        Value::Array(list) => Some(list),
        _ => None,
    }
}

fn ask(question: &Value) -> Option<&str> {
    question.as_str().or_else(|| question["ask"].as_str())
}

fn kind(question: &Value) -> &'static str {
    if question.get("one_of").is_some() {
        "choice"
    } else if question.get("levels").is_some() {
        "rubric"
    } else {
        "yes_no"
    }
}

/// A yes/no answer is a probability, a choice one of the question's names, a rubric
/// one of its levels.
fn answered_in_kind(question: &Value, answer: &Value) -> bool {
    match kind(question) {
        "choice" => answer
            .as_str()
            .is_some_and(|name| question["one_of"].get(name).is_some()),
        "rubric" => answer.as_u64().is_some_and(|level| {
            question["levels"]
                .as_array()
                .is_some_and(|levels| level < levels.len() as u64)
        }),
        _ => answer.as_f64().is_some_and(|p| (0.0..=1.0).contains(&p)),
    }
}

/// The result check-1 §2 gives `answer` to `question`: a yes/no probability at or
/// above `pass` passes, at or above `fail` (when there is one) is unsure, and fails
/// below; a choice or a level below the least confidence is unsure, and otherwise a
/// choice is unsure when listed in `unsure`, passes when listed in `pass` (publication
/// refuses a name in both), and fails; a level at or above `pass` passes, and fails
/// below.
fn expected_result(question: &Value, answer: &Value, limits: &Value) -> Option<&'static str> {
    let kind = kind(question);
    if kind == "yes_no" {
        let p = answer["answer"].as_f64()?;
        let pass = question["pass"]
            .as_f64()
            .or(limits["checkPass"].as_f64())
            .unwrap_or(0.9);
        let fail = question["fail"].as_f64().or(limits["checkFail"].as_f64());
        return Some(if p >= pass {
            "pass"
        } else if fail.is_some_and(|fail| p >= fail) {
            "unsure"
        } else {
            "fail"
        });
    }
    let confidence = answer["confidence"].as_f64()?;
    let least = question["confidence"]
        .as_f64()
        .or(limits["checkConfidence"].as_f64())
        .unwrap_or(0.8);
    if confidence < least {
        return Some("unsure");
    }
    if kind == "rubric" {
        return Some(if answer["answer"].as_u64()? >= question["pass"].as_u64()? {
            "pass"
        } else {
            "fail"
        });
    }
    let name = &answer["answer"];
    let listed = |key: &str| question[key].as_array().is_some_and(|names| names.contains(name));
    Some(if listed("unsure") {
        "unsure"
    } else if listed("pass") {
        "pass"
    } else {
        "fail"
    })
}

fn worse<'a>(a: &'a str, b: &'a str) -> &'a str {
    let rank = |result: &str| match result {
        "unsure" => 2,
        "fail" => 1,
        _ => 0,
    };
    if rank(b) > rank(a) { b } else { a }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn step() -> Value {
        json!({
            "id": "screen",
            "check": [
                { "ask": "The verdict follows from the rule.", "pass": 0.9, "fail": 0.5 },
                { "ask": "How is the rule stated?", "one_of": { "cites": "x", "absent": "y" }, "pass": ["cites"], "unsure": ["absent"] },
                { "ask": "How complete?", "levels": ["none", "some", "all"], "pass": 1 }
            ]
        })
    }

    fn view(verdict: &str, answers: Value) -> Value {
        json!({ "data": { "steps": { "screen": { "check": {
            "verdict": verdict, "advisory": false, "model": "m", "questions": answers
        } } } } })
    }

    /// Answers to the three questions: (probability, result), (name, confidence,
    /// result), (level, confidence, result).
    fn answers(yes: (f64, &str), choice: (&str, f64, &str), rubric: (u64, f64, &str)) -> Value {
        json!([
            { "ask": "The verdict follows from the rule.", "kind": "yes_no", "answer": yes.0, "result": yes.1 },
            { "ask": "How is the rule stated?", "kind": "choice", "answer": choice.0, "confidence": choice.1, "result": choice.2 },
            { "ask": "How complete?", "kind": "rubric", "answer": rubric.0, "confidence": rubric.1, "result": rubric.2 }
        ])
    }

    fn passing() -> Value {
        answers((0.95, "pass"), ("cites", 0.9, "pass"), (2, 0.9, "pass"))
    }

    const LIMITS: Value = Value::Null;

    #[test]
    fn a_record_of_every_question_in_kind_with_its_worst_verdict_passes() {
        let read =
            |step: &Value, record: &Value| recorded(step, record, &LIMITS).map(|verdict| verdict.unwrap_or_default());
        assert_eq!(read(&step(), &view("pass", passing())), Ok("pass".to_owned()));
        let between = answers((0.6, "unsure"), ("absent", 0.9, "unsure"), (0, 0.5, "unsure"));
        assert_eq!(read(&step(), &view("unsure", between)), Ok("unsure".to_owned()));
        let failing = answers((0.4, "fail"), ("cites", 0.9, "pass"), (0, 0.9, "fail"));
        let advisory = json!({ "id": "screen", "advisory": true, "check": step()["check"] });
        let mut record = view("fail", failing);
        record["data"]["steps"]["screen"]["check"]["advisory"] = json!(true);
        assert_eq!(
            read(&advisory, &record),
            Ok("fail".to_owned()),
            "an advisory check records a fail"
        );
        assert_eq!(
            recorded(&json!({ "id": "screen" }), &json!({}), &LIMITS),
            Ok(None),
            "no check, nothing to read"
        );
    }

    #[test]
    fn a_blocking_check_escalated_after_the_evaluators_errors_needs_no_verdict() {
        let escalated = json!({ "data": { "steps": {} }, "workItems": [
            { "stepId": "screen", "escalation": { "note": "The evaluator did not answer." } }
        ] });
        assert_eq!(recorded(&step(), &escalated, &LIMITS), Ok(None));
        let mut waiting = escalated.clone();
        waiting["workItems"][0]["escalation"] = Value::Null;
        assert!(
            recorded(&step(), &waiting, &LIMITS).is_err(),
            "a work item that is no escalation is not one"
        );
    }

    #[test]
    fn the_servers_defaults_apply_where_a_question_sets_no_threshold() {
        let short = json!({ "id": "screen", "check": "The verdict follows from the rule." });
        let one = |p: f64, result: &str| {
            view(
                result,
                json!([{ "ask": "The verdict follows from the rule.", "kind": "yes_no", "answer": p, "result": result }]),
            )
        };
        let limits = json!({ "checkPass": 0.7, "checkFail": 0.3 });
        assert!(recorded(&short, &one(0.75, "pass"), &limits).is_ok());
        assert!(recorded(&short, &one(0.5, "unsure"), &limits).is_ok());
        let unlimited = recorded(&short, &one(0.75, "pass"), &LIMITS).expect_err("0.75 is below the default 0.9");
        assert!(
            unlimited.reason.contains("where the thresholds give \"fail\""),
            "{}",
            unlimited.reason
        );
    }

    #[test]
    fn a_missing_wrong_or_inconsistent_record_fails() {
        let fails = |step: &Value, record: Value, expected: &str| {
            let failure = recorded(step, &record, &LIMITS).expect_err(expected);
            assert!(failure.reason.contains(expected), "{}", failure.reason);
        };
        fails(
            &step(),
            json!({ "data": { "steps": {} } }),
            "steps.screen.check is missing",
        );
        // (verdict, answers, what the failure says), each record wrong in one way.
        let wrong = [
            (
                "pass",
                ((0.95, "pass"), ("cites", 0.9, "pass"), (3, 0.9, "pass")),
                "which the question does not offer",
            ),
            (
                "pass",
                ((0.95, "pass"), ("cites", 0.9, "pass"), (2, 0.5, "pass")),
                "where the thresholds give \"unsure\"",
            ),
            (
                "pass",
                ((0.6, "pass"), ("cites", 0.9, "pass"), (2, 0.9, "pass")),
                "where the thresholds give \"unsure\"",
            ),
            (
                "pass",
                ((0.95, "pass"), ("absent", 0.9, "unsure"), (2, 0.9, "pass")),
                "its worst question is \"unsure\"",
            ),
            (
                "fail",
                ((0.4, "fail"), ("cites", 0.9, "pass"), (2, 0.9, "pass")),
                "for a submission the server took",
            ),
        ];
        for (verdict, (yes, choice, rubric), expected) in wrong {
            fails(&step(), view(verdict, answers(yes, choice, rubric)), expected);
        }
        let short = json!({ "id": "screen", "check": "The verdict follows from the rule." });
        fails(&short, view("pass", passing()), "answers 3 questions, the step asks 1");
    }
}
