//! `submit`: an agent completes its claimed step, or learns every reason it cannot.

use crate::Transition;
use crate::acceptance::{Submission, Submitter, check_submission};
use crate::check::{Checked, Judged, Material, judge_submission, settle};
use crate::context::{Context, ProcessVersion};
use crate::error::ToolError;
use crate::guard::{agent, claimed_step, expire_leases, not_ended};
use crate::model::{Evidence, Record, Run};
use crate::view::{json_bytes, run_data};

/// The outcome of a submission (or a person's decision) that got as far as the
/// acceptance rules.
#[derive(Debug, Clone, PartialEq)]
pub enum Submitted {
    /// The step completed and the run moved on, or (check-1) an unsure check held the
    /// submission and escalated the step.
    Accepted(Transition),
    /// Refused with every issue. Run data and the claim are unchanged; the run here
    /// differs only in the step's handoff (`issues`, and a failed check's verdict),
    /// which the caller keeps so the next attempt sees them.
    NotAccepted {
        /// The run with the issues in the step's handoff.
        run: Run,
        /// `not_accepted` with the issues.
        error: ToolError,
    },
    /// The step has a check and no answers about this material are at hand: ask the
    /// evaluator every question about it, then make the same call with the answers.
    /// Nothing changed.
    Check(Box<Material>),
}

/// Submits `submission` with the claim `token` holds. `file_issues` are the caller's
/// findings on file evidence (`evidence f_000: not found`), which join the others.
/// `checked` carries the evaluator's answers on a step with a check.
pub fn submit(
    run: &Run,
    version: &ProcessVersion,
    token: &str,
    submission: Submission,
    file_issues: Vec<String>,
    checked: Option<&Checked>,
    context: &mut Context<'_>,
) -> Result<Submitted, ToolError> {
    not_ended(run)?;
    let by = agent(context.actor, "submit")?;
    let mut run = run.clone();
    expire_leases(&mut run, context.now);
    let index = claimed_step(&run, token)?;
    let definition = &version.process.document().steps[index];
    let mut issues = check_submission(definition, &submission, Submitter::Agent, context.settings.person);
    issues.extend(file_issues);
    let judged = if issues.is_empty() {
        judge_submission(
            &run,
            version,
            index,
            &submission,
            checked,
            context.settings,
            context.now,
        )?
    } else {
        Judged::Complete(None)
    };
    let record = record(submission, by, context.now, definition.next.as_ref());
    if issues.is_empty() {
        issues.extend(run_data_cap(&run, index, &record, context.settings.run_data_bytes));
    }
    if !issues.is_empty() {
        run.steps[index].handoff.issues = Some(issues.clone());
        return Ok(Submitted::NotAccepted {
            run,
            error: ToolError::not_accepted(issues),
        });
    }
    Ok(settle(run, version, index, record, judged, context))
}

/// The completion a submission records: `next` and `reason` only on a route list.
pub(crate) fn record(
    submission: Submission,
    by: String,
    at: jiff::Timestamp,
    next: Option<&agentprocess_format::Next>,
) -> Record {
    let routed = matches!(next, Some(agentprocess_format::Next::Routes(_)));
    let evidence = submission.evidence.into_iter().map(Evidence::from).collect();
    Record {
        output: Some(submission.output),
        evidence: Some(evidence),
        summary: submission.summary.filter(|summary| !summary.trim().is_empty()),
        next: submission.next.filter(|_| routed),
        reason: submission.reason.filter(|_| routed),
        by,
        at,
        ..Record::default()
    }
}

/// The run data with `record` in place must fit `limits.runDataBytes`.
pub(crate) fn run_data_cap(run: &Run, index: usize, record: &Record, limit: usize) -> Option<String> {
    let mut with = run.clone();
    with.steps[index].record = Some(record.clone());
    let bytes = json_bytes(&run_data(&with));
    (bytes > limit)
        .then(|| format!("run data: {bytes} bytes with this submission; the limit is {limit} (limits.runDataBytes)"))
}
