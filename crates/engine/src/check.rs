//! The check-1 profile: what an evaluator is shown about a submission, and the verdict
//! its answers make (check.md §2, §3). The engine asks no model: it hands the caller
//! the [`Material`] and takes the [`Checked`] answers back on the next call.

use agentprocess_format::{Check, Question, QuestionKind, Step, StepKind};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use std::collections::VecDeque;

use crate::Transition;
use crate::acceptance::Submission;
use crate::context::{Context, ProcessVersion, Settings};
use crate::error::{Code, ToolError};
use crate::machine::Machine;
use crate::model::{Escalation, Evidence, Record, Run};
use crate::submit::{Submitted, run_data_cap};
use crate::view::{json_bytes, run_data};

/// The server's check limits (`describe.limits`, check.md §5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CheckLimits {
    /// `checkPass`: the default yes-probability at or above which a yes/no answer passes.
    pub pass: f64,
    /// `checkFail`: the default yes-probability below which a yes/no answer fails;
    /// without one, below `pass` fails.
    pub fail: Option<f64>,
    /// `checkConfidence`: the default confidence below which a choice or rubric answer
    /// is unsure.
    pub confidence: f64,
    /// `checkStateBytes`: how much run data, in bytes of JSON, the evaluator is shown.
    pub state_bytes: usize,
}

impl CheckLimits {
    /// check.md §5's server defaults.
    pub const DEFAULT: CheckLimits = CheckLimits {
        pass: 0.9,
        fail: None,
        confidence: 0.8,
        state_bytes: 64 * 1024,
    };
}

impl Default for CheckLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

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

/// The verdict of a check: the worst question's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every question passed.
    Pass,
    /// Some question failed and none was unsure.
    Fail,
    /// Some question was unsure.
    Unsure,
    /// The evaluator did not answer.
    Error,
}

impl Verdict {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unsure => "unsure",
            Verdict::Error => "error",
        }
    }
}

/// A question's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// At or above its threshold.
    Pass,
    /// Below it.
    Fail,
    /// Between the thresholds, or below the confidence asked for.
    Unsure,
}

/// A recorded verdict (`check-verdict.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRecord {
    /// `pass`, `fail`, `unsure` or `error`.
    pub verdict: Verdict,
    /// Whether the step's check is advisory.
    pub advisory: bool,
    /// The model that answered.
    pub model: String,
    /// Each question with its answer and result; empty for `error`.
    pub questions: Vec<QuestionRecord>,
    /// Present, `true`, when the run data shown was cut to `checkStateBytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// When the verdict was made.
    pub at: Timestamp,
}

impl CheckRecord {
    /// `check: <ask> → <answer>` for each question that did not pass (check.md §3).
    pub fn issues(&self) -> Vec<String> {
        self.questions
            .iter()
            .filter(|question| question.result != Outcome::Pass)
            .map(|question| format!("check: {} → {}", question.ask, question.shown))
            .collect()
    }
}

/// One question of a recorded verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionRecord {
    /// The question.
    pub ask: String,
    /// `yes_no`, `choice` or `rubric`.
    pub kind: String,
    /// The probability of yes, the chosen name, or the level.
    pub answer: Value,
    /// The confidence of a choice or rubric answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// `pass`, `fail` or `unsure`.
    pub result: Outcome,
    /// The answer as an issue line spells it: `no (0.12)`, `hedges (0.9)`,
    /// `level 1: One list is covered. (0.85)`. Not part of the record.
    #[serde(skip)]
    pub shown: String,
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
            ("yes_no", number(yes), None, result, format!("{word} ({yes})"))
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
            ("choice", Value::String(name.clone()), Some(confidence), result, shown)
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
            ("rubric", Value::from(*level), Some(confidence), result, shown)
        }
        _ => return None,
    };
    Some(QuestionRecord {
        ask: question.ask.clone(),
        kind: kind.to_owned(),
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

/// Carries out a judged submission's `record` on step `index`: completes, refuses
/// (keeping the verdict in the handoff) or escalates with the candidate held.
pub(crate) fn settle(
    mut run: Run,
    version: &ProcessVersion,
    index: usize,
    mut record: Record,
    judged: Judged,
    context: &mut Context<'_>,
) -> Submitted {
    match judged {
        Judged::Ask(material) => Submitted::Check(material),
        Judged::Complete(check) => {
            if check.is_some() {
                record.check = check;
                if let Some(issue) = run_data_cap(&run, index, &record, context.settings.run_data_bytes) {
                    return refused(run, index, vec![issue], None);
                }
            }
            let chosen = record.next.clone();
            let mut machine = Machine::new(&mut run, version, context.now, context.ids);
            let mut queue = VecDeque::new();
            machine.complete(index, record, chosen.as_deref(), &mut queue);
            machine.run_queue(queue);
            let effects = machine.effects;
            Submitted::Accepted(Transition { run, effects })
        }
        Judged::Refuse(check) => refused(run, index, check.issues(), Some(check)),
        Judged::Escalate(check) => {
            let escalation = Escalation {
                note: format!(
                    "The step's check was unsure; decide on the held submission.\n{}",
                    check.issues().join("\n")
                ),
                by: record.by.clone(),
                at: context.now,
                check: Some(check),
                candidate: Some(record),
            };
            let mut machine = Machine::new(&mut run, version, context.now, context.ids);
            machine.escalate(index, escalation, context.settings.escalation_group.clone());
            let effects = machine.effects;
            Submitted::Accepted(Transition { run, effects })
        }
    }
}

/// `not_accepted` with `issues`, which the step's handoff keeps with the verdict.
fn refused(mut run: Run, index: usize, issues: Vec<String>, check: Option<CheckRecord>) -> Submitted {
    let handoff = &mut run.steps[index].handoff;
    handoff.issues = Some(issues.clone());
    if check.is_some() {
        handoff.check = check;
    }
    Submitted::NotAccepted {
        run,
        error: ToolError::not_accepted(issues),
    }
}
