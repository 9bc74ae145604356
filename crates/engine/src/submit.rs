//! `submit`: an agent completes its claimed step, or learns every reason it cannot.

use std::collections::VecDeque;

use crate::acceptance::{Submission, Submitter, check_submission};
use crate::check::{Checked, Judged, Material, judge_submission};
use crate::context::{Context, ProcessVersion};
use crate::error::ToolError;
use crate::guard::{agent, claimed_step, expire_leases, not_ended};
use crate::machine::Machine;
use crate::model::{Escalation, Evidence, Record, Run};
use crate::outcome::Transition;
use crate::verdict::CheckRecord;
use crate::view::run_data_cap;

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
