//! The check-1 profile: what an evaluator is shown about a submission, and the verdict
//! its answers make (check.md §2, §3). The engine asks no model: it hands the caller
//! the [`Material`] and takes the [`Checked`] answers back on the next call.

use agentprocess_format::{Check, Question, QuestionKind, Step, StepKind};
use jiff::Timestamp;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::acceptance::Submission;
use crate::context::{ProcessVersion, Settings};
use crate::error::{Code, ToolError};
use crate::model::{Evidence, Run};
use crate::verdict::{CheckLimits, CheckRecord, Outcome, QuestionRecord, QuestionType, Verdict};
use crate::view::{json_bytes, run_data};

/// What an evaluator is shown for one submission (check.md §2): the step's
/// instructions, the body, the run data and the submission. Every question of the check
/// is asked against this same material, each on its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Material {
    /// The step's instructions.
    pub instructions: String,
    /// The process body.
    pub body: String,
    /// The run data before this submission, cut to `checkStateBytes`.
    pub run_data: Value,
    /// Whether steps were left out of `run_data` to fit.
    pub truncated: bool,
    /// The submission: `output`, `summary`, and `evidence` references.
    pub submission: Value,
    /// The questions, in the process's order.
    #[serde(skip)]
    pub questions: Vec<Question>,
}

impl Material {
    /// A hash of what the evaluator was shown: answers apply to a submission only while
    /// the material it would be shown is the same.
    pub fn seen(&self) -> String {
        let canonical = serde_json_canonicalizer::to_vec(self).unwrap_or_default();
        crate::guard::sha256_hex(&canonical)
    }
}

/// One question's answer, as the evaluator gives it.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A yes/no question: the probability of yes.
    YesNo {
        /// In 0–1.
        yes: f64,
    },
    /// A choice: the chosen answer's name and the confidence in it.
    Choice {
        /// One of the question's answer names.
        name: String,
        /// In 0–1.
        confidence: f64,
    },
    /// A rubric: the level (0-based) and the confidence in it.
    Rubric {
        /// Below the number of levels.
        level: usize,
        /// In 0–1.
        confidence: f64,
    },
}

/// What the caller brings back from the evaluator.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The model that answered (`model` on the verdict).
    pub model: String,
    /// [`Material::seen`] of the material the answers are about.
    pub seen: String,
    /// Whether the material's run data was cut.
    pub truncated: bool,
    /// One answer per question, in order; `None` when the evaluator did not answer.
    pub answers: Option<Vec<Answer>>,
}

/// The check and advisory flag of a step, when it has a check.
pub(crate) fn check_of(step: &Step) -> Option<(&Check, bool)> {
    step.check.as_ref().map(|check| (check, step.advisory))
}

/// The material for `submission` on step `index` of `run`.
pub fn material(
    run: &Run,
    version: &ProcessVersion,
    index: usize,
    submission: &Submission,
    settings: &Settings,
) -> Material {
    let definition = &version.process.document().steps[index];
    let instructions = match &definition.kind {
        StepKind::Agent(text) | StepKind::Task(text) => text.clone(),
        _ => String::new(),
    };
    let (run_data, truncated) = state(run, settings.check.state_bytes);
    // Shown as run data records evidence: `{ kind, ref, sha256? }`.
    let evidence: Vec<Value> = submission
        .evidence
        .iter()
        .filter_map(|item| serde_json::to_value(Evidence::from(item.clone())).ok())
        .collect();
    let mut shown = Map::new();
    shown.insert("output".to_owned(), Value::Object(submission.output.clone()));
    if let Some(summary) = &submission.summary {
        shown.insert("summary".to_owned(), Value::String(summary.clone()));
    }
    shown.insert("evidence".to_owned(), Value::Array(evidence));
    if let Some(next) = &submission.next {
        shown.insert("next".to_owned(), Value::String(next.clone()));
    }
    if let Some(reason) = &submission.reason {
        shown.insert("reason".to_owned(), Value::String(reason.clone()));
    }
    Material {
        instructions,
        body: version.process.body().to_owned(),
        run_data,
        truncated,
        submission: Value::Object(shown),
        questions: definition
            .check
            .as_ref()
            .map(|check| check.questions.clone())
            .unwrap_or_default(),
    }
}

/// The run data within `limit` bytes: whole steps are left out, the one completed
/// longest ago first (steps with only a history before any with a current record).
/// The inputs are always shown.
fn state(run: &Run, limit: usize) -> (Value, bool) {
    let mut data = run_data(run);
    if json_bytes(&data) <= limit {
        return (data, false);
    }
    let mut order: Vec<(Option<u64>, &str)> = run
        .steps
        .iter()
        .map(|step| (step.record.as_ref().and(step.completed), step.id.as_str()))
        .collect();
    order.sort_unstable();
    for (_, id) in order {
        if let Some(Value::Object(steps)) = data.get_mut("steps") {
            steps.shift_remove(id);
        }
        if json_bytes(&data) <= limit {
            break;
        }
    }
    (data, true)
}

/// The verdict `checked` makes on `check` at `now`. Answers of the wrong kind, or too
/// few, count as no answer.
pub fn verdict(check: &Check, advisory: bool, checked: &Checked, limits: &CheckLimits, now: Timestamp) -> CheckRecord {
    let questions = checked.answers.as_ref().and_then(|answers| {
        (answers.len() == check.questions.len())
            .then(|| {
                check
                    .questions
                    .iter()
                    .zip(answers)
                    .map(|(question, answer)| judge(question, answer, limits))
                    .collect::<Option<Vec<_>>>()
            })
            .flatten()
    });
    let verdict = match &questions {
        None => Verdict::Error,
        Some(questions) => questions
            .iter()
            .map(|question| question.result)
            .max()
            .map_or(Verdict::Pass, |worst| match worst {
                Outcome::Pass => Verdict::Pass,
                Outcome::Fail => Verdict::Fail,
                Outcome::Unsure => Verdict::Unsure,
            }),
    };
    CheckRecord {
        verdict,
        advisory,
        model: checked.model.clone(),
        questions: questions.unwrap_or_default(),
        truncated: checked.truncated.then_some(true),
        at: now,
    }
}

/// One answer against its question's thresholds.
fn judge(question: &Question, answer: &Answer, limits: &CheckLimits) -> Option<QuestionRecord> {
    let (kind, answer, confidence, result, shown) = match (&question.kind, answer) {
        (QuestionKind::YesNo { pass, fail }, Answer::YesNo { yes }) => {
            let yes = rounded(*yes);
            let pass = pass.unwrap_or(limits.pass);
            let result = if yes >= pass {
                Outcome::Pass
            } else if fail.or(limits.fail).is_some_and(|fail| yes >= fail) {
                Outcome::Unsure
            } else {
                Outcome::Fail
            };
            let word = if yes < pass { "no" } else { "yes" };
            (
                QuestionType::YesNo,
                number(yes),
                None,
                result,
                format!("{word} ({yes})"),
            )
        }
        (
            QuestionKind::Choice {
                answers,
                pass,
                unsure,
                confidence: wanted,
            },
            Answer::Choice { name, confidence },
        ) => {
            if !answers.iter().any(|(known, _)| known == name) {
                return None;
            }
            let confidence = rounded(*confidence);
            let result = if confidence < wanted.unwrap_or(limits.confidence) || unsure.contains(name) {
                Outcome::Unsure
            } else if pass.contains(name) {
                Outcome::Pass
            } else {
                Outcome::Fail
            };
            let shown = format!("{name} ({confidence})");
            (
                QuestionType::Choice,
                Value::String(name.clone()),
                Some(confidence),
                result,
                shown,
            )
        }
        (
            QuestionKind::Rubric {
                levels,
                pass,
                confidence: wanted,
            },
            Answer::Rubric { level, confidence },
        ) => {
            let text = levels.get(*level)?;
            let confidence = rounded(*confidence);
            let result = if confidence < wanted.unwrap_or(limits.confidence) {
                Outcome::Unsure
            } else if level >= pass {
                Outcome::Pass
            } else {
                Outcome::Fail
            };
            let shown = format!("level {level}: {text} ({confidence})");
            (
                QuestionType::Rubric,
                Value::from(*level),
                Some(confidence),
                result,
                shown,
            )
        }
        _ => return None,
    };
    Some(QuestionRecord {
        ask: question.ask.clone(),
        kind,
        answer,
        confidence,
        result,
        shown,
    })
}

/// A probability to three decimals, within 0–1: what is recorded, compared and shown.
fn rounded(value: f64) -> f64 {
    let value = if value.is_finite() { value.clamp(0.0, 1.0) } else { 0.0 };
    (value * 1000.0).round() / 1000.0
}

fn number(value: f64) -> Value {
    serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
}

/// What a check makes of a submission that passed the objective rules.
pub(crate) enum Judged {
    /// The evaluator must be asked about this material (again, if the run changed).
    Ask(Box<Material>),
    /// Complete the step, recording the verdict (none when the step has no check).
    Complete(Option<CheckRecord>),
    /// Refuse with the verdict's issues, which go to the handoff with it.
    Refuse(CheckRecord),
    /// Hold the submission as the candidate and escalate with the verdict.
    Escalate(CheckRecord),
}

/// Judges `submission` on step `index` with the answers in `checked`, when they are
/// about this very material. An evaluator that did not answer a blocking check is
/// `retry`; an advisory check records every verdict, `error` included, and completes.
pub(crate) fn judge_submission(
    run: &Run,
    version: &ProcessVersion,
    index: usize,
    submission: &Submission,
    checked: Option<&Checked>,
    settings: &Settings,
    now: Timestamp,
) -> Result<Judged, ToolError> {
    let definition = &version.process.document().steps[index];
    let Some((check, advisory)) = check_of(definition) else {
        return Ok(Judged::Complete(None));
    };
    let material = material(run, version, index, submission, settings);
    let Some(checked) = checked.filter(|checked| checked.seen == material.seen()) else {
        return Ok(Judged::Ask(Box::new(material)));
    };
    let record = verdict(check, advisory, checked, &settings.check, now);
    Ok(match (record.verdict, advisory) {
        (_, true) | (Verdict::Pass, false) => Judged::Complete(Some(record)),
        (Verdict::Fail, false) => Judged::Refuse(record),
        (Verdict::Unsure, false) => Judged::Escalate(record),
        (Verdict::Error, false) => {
            return Err(ToolError::new(
                Code::Retry,
                "the step's check could not be answered now; nothing changed, send the same call again with the same requestId",
                Vec::new(),
            ));
        }
    })
}
