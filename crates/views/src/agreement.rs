//! The check agreement report: how a step's advisory check verdicts compared with the
//! decisions of the approval that followed it (check.md §4, "Earn trust first"), and the
//! pass threshold at which trusting the check would have let through no more than a
//! chosen share of what people rejected.
//!
//! A pair is one advisory verdict on a checked step and the first `approved` or
//! `rejected` decision of a following approval (an `approve` step the checked step's
//! `next` leads to, or whose `on_reject` returns to it) made after that verdict and
//! before the step's next completion.

use agentprocess_engine::{CheckRecord, Decision, Outcome, ProcessVersion, QuestionType, Record, Run, Verdict};
use agentprocess_format::{Next, StepKind};
use jiff::Timestamp;
use serde::Serialize;

/// The pass thresholds the curve is drawn at: 0.50, 0.51, …, 1.00.
const CURVE: std::ops::RangeInclusive<u32> = 50..=100;

/// What the report covers.
#[derive(Debug, Clone, PartialEq)]
pub struct AgreementQuery {
    /// The first version included.
    pub from_version: Option<u32>,
    /// The last version included.
    pub to_version: Option<u32>,
    /// Only verdicts made at or after this time.
    pub since: Option<Timestamp>,
    /// Only verdicts made before this time.
    pub until: Option<Timestamp>,
    /// The false-pass rate the admin would accept, 0–1.
    pub target: f64,
}

/// The false-pass rate aimed at when none is given.
pub const DEFAULT_TARGET: f64 = 0.05;

impl AgreementQuery {
    /// The query from its parts as a caller writes them (times in RFC 3339), or every
    /// issue with them.
    pub fn parse(
        from_version: Option<u32>,
        to_version: Option<u32>,
        since: Option<&str>,
        until: Option<&str>,
        target: Option<f64>,
    ) -> Result<Self, Vec<String>> {
        let mut issues = Vec::new();
        let mut time = |name: &str, text: Option<&str>| {
            text.and_then(|text| match text.parse::<Timestamp>() {
                Ok(at) => Some(at),
                Err(_) => {
                    issues.push(format!("{name}: {text:?} is not an RFC 3339 time"));
                    None
                }
            })
        };
        let since = time("since", since);
        let until = time("until", until);
        let target = target.unwrap_or(DEFAULT_TARGET);
        if !(0.0..=1.0).contains(&target) {
            issues.push(format!("target: {target} is not between 0 and 1"));
        }
        if let (Some(from), Some(to)) = (from_version, to_version)
            && from > to
        {
            issues.push(format!("fromVersion: {from} is after toVersion {to}"));
        }
        if !issues.is_empty() {
            return Err(issues);
        }
        Ok(Self {
            from_version,
            to_version,
            since,
            until,
            target,
        })
    }
}

/// The report of one process.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgreementReport {
    /// The process.
    pub process: String,
    /// The first version included, when limited.
    pub from_version: Option<u32>,
    /// The last version included, when limited.
    pub to_version: Option<u32>,
    /// The window's start, when limited.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub since: Option<Timestamp>,
    /// The window's end, when limited.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub until: Option<Timestamp>,
    /// The false-pass rate aimed at.
    pub target: f64,
    /// How many runs were read.
    pub runs: u64,
    /// One entry per checked step and the approval after it.
    pub steps: Vec<StepAgreement>,
}

/// One checked step against one approval.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepAgreement {
    /// The checked step.
    pub step: String,
    /// The approval after it.
    pub approval: String,
    /// Verdicts with a decision after them.
    pub pairs: u64,
    /// Per verdict (`pass`, `fail`, `unsure`, `error`), how many were approved and rejected.
    pub matrix: Vec<MatrixRow>,
    /// Share of pairs the check passed.
    pub pass_rate: Option<f64>,
    /// Share of the check's passes that the approver rejected.
    pub false_pass_rate: Option<f64>,
    /// Share of the check's fails that the approver approved.
    pub false_fail_rate: Option<f64>,
    /// Share of pairs the check was unsure of.
    pub unsure_rate: Option<f64>,
    /// The lowest pass threshold (for the check's yes/no questions) at which the false
    /// pass rate would have been at or under the target; `None` when none would.
    pub threshold: Option<Threshold>,
    /// The pass rate and false-pass rate at each threshold from 0.5 to 1.
    pub curve: Vec<CurvePoint>,
}

/// One row of the confusion matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct MatrixRow {
    /// `pass`, `fail`, `unsure` or `error`.
    pub verdict: String,
    /// How many the approver approved.
    pub approved: u64,
    /// How many the approver rejected.
    pub rejected: u64,
}

/// A threshold to set.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Threshold {
    /// The yes/no `pass` threshold.
    pub pass: f64,
    /// The highest `fail` threshold (at or under `pass`) below which the approver
    /// approved no more than the target share; `None` when none would.
    pub fail: Option<f64>,
    /// The false-pass rate at `pass`.
    pub false_pass_rate: f64,
    /// The pass rate at `pass`.
    pub pass_rate: f64,
}

/// The curve at one threshold.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CurvePoint {
    /// The yes/no `pass` threshold.
    pub pass: f64,
    /// Share of pairs that would have passed.
    pub pass_rate: f64,
    /// Share of those the approver rejected; `None` when none would have passed.
    pub false_pass_rate: Option<f64>,
}

/// One advisory verdict and the decision after it.
#[derive(Debug, Clone, PartialEq)]
struct Pair {
    verdict: Verdict,
    approved: bool,
    /// The lowest yes-probability of the check's yes/no questions.
    lowest_yes: Option<f64>,
    /// Whether every choice and rubric question passed.
    others_pass: bool,
}

/// The report over `runs`, each with its version among `versions`.
pub fn report(process: &str, runs: &[Run], versions: &[&ProcessVersion], query: &AgreementQuery) -> AgreementReport {
    let included = |number: u32| {
        query.from_version.is_none_or(|from| number >= from) && query.to_version.is_none_or(|to| number <= to)
    };
    let mut steps: Vec<((String, String), Vec<Pair>)> = Vec::new();
    let mut read = 0;
    for run in runs
        .iter()
        .filter(|run| run.process == process && included(run.version))
    {
        let Some(version) = versions.iter().find(|version| version.number == run.version) else {
            continue;
        };
        read += 1;
        for (checked, approval) in followed(version) {
            let pairs = pairs(run, &checked, &approval, query);
            match steps
                .iter_mut()
                .find(|(key, _)| *key == (checked.clone(), approval.clone()))
            {
                Some((_, found)) => found.extend(pairs),
                None => steps.push(((checked, approval), pairs)),
            }
        }
    }
    AgreementReport {
        process: process.to_owned(),
        from_version: query.from_version,
        to_version: query.to_version,
        since: query.since,
        until: query.until,
        target: query.target,
        runs: read,
        steps: steps
            .into_iter()
            .map(|((step, approval), pairs)| agreement(step, approval, &pairs, query.target))
            .collect(),
    }
}

/// Each checked step and each approval after it: `(step, approval)`.
fn followed(version: &ProcessVersion) -> Vec<(String, String)> {
    let steps = &version.process.document().steps;
    let mut found = Vec::new();
    for step in steps.iter().filter(|step| step.check.is_some()) {
        let next: Vec<&str> = match &step.next {
            Some(Next::Step(id)) => vec![id.as_str()],
            Some(Next::Routes(routes)) => routes.iter().map(|route| route.to.as_str()).collect(),
            _ => Vec::new(),
        };
        for approval in steps.iter().filter(|other| matches!(other.kind, StepKind::Approve(_))) {
            if next.contains(&approval.id.as_str()) || approval.on_reject.as_deref() == Some(step.id.as_str()) {
                found.push((step.id.clone(), approval.id.clone()));
            }
        }
    }
    found
}

/// Every record of a step, oldest first.
fn records<'a>(run: &'a Run, step: &str) -> Vec<&'a Record> {
    run.step(step)
        .map(|step| step.history.iter().chain(step.record.iter()).collect())
        .unwrap_or_default()
}

/// The pairs of one run: each advisory verdict on `checked` in the window, with the
/// first decision of `approval` after it and before `checked` completed again.
fn pairs(run: &Run, checked: &str, approval: &str, query: &AgreementQuery) -> Vec<Pair> {
    let completions = records(run, checked);
    let decisions: Vec<&Record> = records(run, approval)
        .into_iter()
        .filter(|record| matches!(record.decision, Some(Decision::Approved | Decision::Rejected)))
        .collect();
    let mut pairs = Vec::new();
    for (index, completion) in completions.iter().enumerate() {
        let Some(check) = completion.check.as_ref().filter(|check| check.advisory) else {
            continue;
        };
        if query.since.is_some_and(|since| check.at < since) || query.until.is_some_and(|until| check.at >= until) {
            continue;
        }
        let before = completions.get(index + 1).map(|next| next.at);
        let decision = decisions
            .iter()
            .find(|decision| decision.at >= completion.at && before.is_none_or(|before| decision.at < before));
        if let Some(decision) = decision {
            pairs.push(pair(check, decision.decision == Some(Decision::Approved)));
        }
    }
    pairs
}

fn pair(check: &CheckRecord, approved: bool) -> Pair {
    let lowest_yes = check
        .questions
        .iter()
        .filter(|question| question.kind == QuestionType::YesNo)
        .filter_map(|question| question.answer.as_f64())
        .min_by(f64::total_cmp);
    Pair {
        verdict: check.verdict,
        approved,
        lowest_yes,
        others_pass: check
            .questions
            .iter()
            .filter(|question| question.kind != QuestionType::YesNo)
            .all(|question| question.result == Outcome::Pass),
    }
}

/// `part / whole`, or `None` of nothing.
fn share(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| round(part as f64 / whole as f64))
}

fn round(value: f64) -> f64 {
    (value * 10_000.0).round() / 10_000.0
}

fn agreement(step: String, approval: String, pairs: &[Pair], target: f64) -> StepAgreement {
    let count = |verdict: Verdict, approved: bool| {
        pairs
            .iter()
            .filter(|pair| pair.verdict == verdict && pair.approved == approved)
            .count()
    };
    let matrix = [Verdict::Pass, Verdict::Fail, Verdict::Unsure, Verdict::Error]
        .into_iter()
        .map(|verdict| MatrixRow {
            verdict: verdict.as_str().to_owned(),
            approved: count(verdict, true) as u64,
            rejected: count(verdict, false) as u64,
        })
        .collect();
    let of = |verdict: Verdict| pairs.iter().filter(|pair| pair.verdict == verdict).count();
    // Whether a pair would have passed with `threshold` as every yes/no question's pass.
    let passes_at = |pair: &Pair, threshold: f64| {
        pair.verdict != Verdict::Error && pair.others_pass && pair.lowest_yes.is_none_or(|yes| yes >= threshold)
    };
    let curve: Vec<CurvePoint> = CURVE
        .map(|hundredths| {
            let threshold = f64::from(hundredths) / 100.0;
            let passed: Vec<&Pair> = pairs.iter().filter(|pair| passes_at(pair, threshold)).collect();
            let rejected = passed.iter().filter(|pair| !pair.approved).count();
            CurvePoint {
                pass: threshold,
                pass_rate: share(passed.len(), pairs.len()).unwrap_or(0.0),
                false_pass_rate: share(rejected, passed.len()),
            }
        })
        .collect();
    let threshold = curve
        .iter()
        .find(|point| point.false_pass_rate.is_some_and(|rate| rate <= target))
        .map(|point| Threshold {
            pass: point.pass,
            fail: fail_threshold(pairs, point.pass, target),
            false_pass_rate: point.false_pass_rate.unwrap_or(0.0),
            pass_rate: point.pass_rate,
        });
    StepAgreement {
        step,
        approval,
        pairs: pairs.len() as u64,
        matrix,
        pass_rate: share(of(Verdict::Pass), pairs.len()),
        false_pass_rate: share(count(Verdict::Pass, false), of(Verdict::Pass)),
        false_fail_rate: share(count(Verdict::Fail, true), of(Verdict::Fail)),
        unsure_rate: share(of(Verdict::Unsure), pairs.len()),
        threshold,
        curve,
    }
}

/// The highest threshold at or under `pass` below which no more than `target` of the
/// pairs with yes/no answers were approved.
fn fail_threshold(pairs: &[Pair], pass: f64, target: f64) -> Option<f64> {
    CURVE
        .rev()
        .map(|hundredths| f64::from(hundredths) / 100.0)
        .filter(|fail| *fail <= pass)
        .find(|fail| {
            let below: Vec<&Pair> = pairs
                .iter()
                .filter(|pair| pair.verdict != Verdict::Error && pair.lowest_yes.is_some_and(|yes| yes < *fail))
                .collect();
            share(below.iter().filter(|pair| pair.approved).count(), below.len()).is_some_and(|rate| rate <= target)
        })
}
