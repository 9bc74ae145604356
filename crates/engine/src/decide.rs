//! `decide`: a person completes a task, approves or rejects, returns or completes an
//! escalated agent step, or fails the run (spec §3.4, tools.md).

use std::collections::VecDeque;

use agentprocess_format::StepKind;

use crate::acceptance::{EvidenceItem, Submission, Submitter, check_submission};
use crate::check::{Checked, Judged, judge_submission};
use crate::context::{Actor, Context, ProcessVersion};
use crate::error::{Code, ToolError};
use crate::guard::{assigned, not_ended};
use crate::machine::Machine;
use crate::model::{Decision, Escalation, Record, Returned, Run, StepState};
use crate::outcome::Transition;
use crate::submit::{Submitted, record, settle};
use crate::view::{run_data_cap, snapshot};

/// The arguments of `decide` after decoding.
#[derive(Debug, Clone, PartialEq)]
pub struct Decide {
    /// `workItemId`.
    pub work_item: String,
    /// `snapshot`: the run data hash of the read the person acted on.
    pub snapshot: String,
    /// `decision`.
    pub decision: Decision,
    /// `output`, `evidence`, `summary`, `next`, `reason` (for `completed`).
    pub submission: Submission,
    /// Whether `output`, `evidence` or `summary` were sent at all.
    pub sent_work: bool,
    /// `note`.
    pub note: Option<String>,
}

/// Applies a person's decision. `file_issues` are the caller's findings on file
/// evidence. Errors come in the order tools.md gives: `run_ended`, argument
/// combinations (`invalid`), `already_decided`, `not_found`, `stale`, `forbidden`,
/// `not_accepted`.
///
/// A person completing an ordinary task with a check is checked as an agent is
/// (`checked` carries the answers; [`Submitted::Check`] asks for them); a person
/// completing an escalated step is not checked again. Every other decision is
/// [`Submitted::Accepted`].
pub fn decide(
    run: &Run,
    version: &ProcessVersion,
    decide: Decide,
    file_issues: Vec<String>,
    checked: Option<&Checked>,
    context: &mut Context<'_>,
) -> Result<Submitted, ToolError> {
    not_ended(run)?;
    combinations(&decide)?;
    let target = locate(run, version, &decide, context)?;
    if decide.decision == Decision::Completed {
        return complete(run, version, target, decide, file_issues, checked, context);
    }
    Ok(apply(run, version, target, decide, context))
}

/// The work item a decision is on, found and checked: its step, the person deciding,
/// and the escalation it answers, if any.
struct Target {
    index: usize,
    by: String,
    escalation: Option<Escalation>,
}

/// Finds the work item and checks the decision against it, in tools.md's order:
/// `already_decided` or `not_found`, `stale`, `forbidden`, then whether the decision
/// is one this item takes.
fn locate(run: &Run, version: &ProcessVersion, decide: &Decide, context: &Context<'_>) -> Result<Target, ToolError> {
    let Some(index) = run
        .steps
        .iter()
        .position(|step| step.work_item.as_ref().is_some_and(|item| item.id == decide.work_item))
    else {
        if run.decided.contains(&decide.work_item) {
            return Err(ToolError::new(
                Code::Conflict,
                "the work item was already decided",
                vec!["already_decided".into()],
            ));
        }
        return Err(ToolError::new(
            Code::NotFound,
            format!("no work item {:?} on this run", decide.work_item),
            Vec::new(),
        ));
    };
    if decide.snapshot != snapshot(run) {
        return Err(ToolError::new(
            Code::Stale,
            "run data changed since that read; read the run again",
            Vec::new(),
        ));
    }
    let by = person_in_assignment(run, index, context)?;
    let escalation = run.steps[index]
        .work_item
        .as_ref()
        .and_then(|item| item.escalation.clone());
    let allowed: &[Decision] = match (&version.process.document().steps[index].kind, escalation.is_some()) {
        (StepKind::Approve(_), _) => &[Decision::Approved, Decision::Rejected, Decision::Failed],
        (_, true) => &[Decision::Returned, Decision::Completed, Decision::Failed],
        (StepKind::Task(_), false) => &[Decision::Completed, Decision::Failed],
        _ => &[],
    };
    if !allowed.contains(&decide.decision) {
        let names: Vec<&str> = allowed.iter().map(|decision| decision.as_str()).collect();
        return Err(ToolError::new(
            Code::Invalid,
            "that decision is not allowed on this work item",
            vec![format!(
                "decision: {} is not one of {}",
                decide.decision.as_str(),
                names.join(", ")
            )],
        ));
    }
    Ok(Target { index, by, escalation })
}

/// `completed`: the person's work (or the candidate an escalation held) goes through
/// the acceptance rules and, on an ordinary task, its check.
fn complete(
    run: &Run,
    version: &ProcessVersion,
    target: Target,
    mut decide: Decide,
    file_issues: Vec<String>,
    checked: Option<&Checked>,
    context: &mut Context<'_>,
) -> Result<Submitted, ToolError> {
    let Target { index, by, escalation } = target;
    let definition = &version.process.document().steps[index];
    let escalation = escalation.as_ref();
    if !decide.sent_work
        && let Some(candidate) = escalation.and_then(|escalation| escalation.candidate.as_ref())
    {
        decide.submission = held(
            candidate,
            decide.submission.next.take(),
            decide.submission.reason.take(),
        );
    }
    let mut issues = check_submission(
        definition,
        &decide.submission,
        Submitter::Person,
        context.settings.person,
    );
    issues.extend(file_issues);
    let judged = match escalation {
        _ if !issues.is_empty() => Judged::Complete(None),
        // The person decides after the check: their completion is not checked again.
        Some(escalation) => Judged::Complete(escalation.check.clone()),
        None => judge_submission(
            run,
            version,
            index,
            &decide.submission,
            checked,
            context.settings,
            context.now,
        )?,
    };
    let record = record(decide.submission, by, context.now, definition.next.as_ref());
    if issues.is_empty() {
        issues.extend(run_data_cap(run, index, &record, context.settings.run_data_bytes));
    }
    if !issues.is_empty() {
        return Err(ToolError::not_accepted(issues));
    }
    let mut run = run.clone();
    // A refusal leaves the item open; an escalation closes it as it opens its own.
    if matches!(judged, Judged::Complete(_)) {
        run.decided.push(decide.work_item);
    }
    Ok(settle(run, version, index, record, judged, context))
}

/// Every other decision: approved, rejected, returned, failed. None can be refused
/// once [`locate`] accepted it.
fn apply(run: &Run, version: &ProcessVersion, target: Target, decide: Decide, context: &mut Context<'_>) -> Submitted {
    let Target { index, by, escalation } = target;
    let definition = &version.process.document().steps[index];
    let mut run = run.clone();
    let now = context.now;
    let note = decide.note;
    let mut queue = VecDeque::new();
    let mut machine = Machine::new(&mut run, version, now, context.ids);
    match decide.decision {
        // Answered by `complete`.
        Decision::Completed => {}
        Decision::Approved => {
            let record = Record {
                decision: Some(Decision::Approved),
                note,
                by,
                at: now,
                ..Record::default()
            };
            machine.complete(index, record, None, &mut queue);
        }
        Decision::Rejected => {
            let record = Record {
                decision: Some(Decision::Rejected),
                note: note.clone(),
                by: by.clone(),
                at: now,
                ..Record::default()
            };
            match definition
                .on_reject
                .as_deref()
                .and_then(|id| version.process.document().steps.iter().position(|s| s.id == id))
            {
                Some(target) => machine.reject_into(index, target, record, &mut queue),
                None => {
                    machine.conclude(index, record);
                    machine.end(false, Some("rejected".into()), by, note);
                }
            }
        }
        Decision::Returned => {
            let step = &mut machine.run.steps[index];
            step.work_item = None;
            step.handoff.returned = Some(Returned {
                note: note.unwrap_or_default(),
                by,
                at: now,
            });
            // The same attempt continues: an unsure check's verdict and lines travel
            // with it (check.md §3).
            if let Some(check) = escalation.and_then(|escalation| escalation.check) {
                step.handoff.issues = Some(check.issues());
                step.handoff.check = Some(check);
            }
            if matches!(definition.kind, StepKind::Task(_)) {
                machine.reopen(index);
            } else {
                machine.run.steps[index].state = Some(StepState::Ready);
            }
        }
        Decision::Failed => {
            let record = Record {
                decision: Some(Decision::Failed),
                note: note.clone(),
                by: by.clone(),
                at: now,
                ..Record::default()
            };
            machine.conclude(index, record);
            machine.run.steps[index].state = Some(StepState::Failed);
            machine.end(false, Some("failed".into()), by, note);
        }
    }
    machine.run_queue(queue);
    let effects = machine.effects;
    run.decided.push(decide.work_item);
    Submitted::Accepted(Transition { run, effects })
}

/// The submission a check held, as a person completes the step with it: their own
/// `next` and `reason`, when they chose a route.
fn held(candidate: &Record, next: Option<String>, reason: Option<String>) -> Submission {
    let routed = next.is_some();
    Submission {
        output: candidate.output.clone().unwrap_or_default(),
        evidence: candidate.evidence.iter().flatten().map(EvidenceItem::from).collect(),
        summary: candidate.summary.clone(),
        next: if routed { next } else { candidate.next.clone() },
        reason: if routed { reason } else { candidate.reason.clone() },
    }
}

/// tools.md: `next`/`reason` only with `completed`; `note` never with `completed`;
/// `output`, `evidence`, `summary` only with `completed`; a note where one is required.
fn combinations(decide: &Decide) -> Result<(), ToolError> {
    let mut issues = Vec::new();
    let completed = decide.decision == Decision::Completed;
    let name = decide.decision.as_str();
    if !completed {
        if decide.submission.next.is_some() {
            issues.push(format!("next: not allowed with {name}"));
        }
        if decide.submission.reason.is_some() {
            issues.push(format!("reason: not allowed with {name}"));
        }
        if decide.sent_work {
            issues.push(format!("output, evidence, summary: not allowed with {name}"));
        }
    }
    if completed && decide.note.is_some() {
        issues.push("note: not allowed with completed".to_owned());
    }
    let needs_note = matches!(
        decide.decision,
        Decision::Rejected | Decision::Returned | Decision::Failed
    );
    if needs_note && decide.note.as_deref().is_none_or(|note| note.trim().is_empty()) {
        issues.push(format!("note: required with {name}"));
    }
    if issues.is_empty() {
        Ok(())
    } else {
        Err(ToolError::new(
            Code::Invalid,
            "those arguments do not go together",
            issues,
        ))
    }
}

/// The caller's person value, when they may decide this item: a person (never an
/// agent) among those it is assigned to.
fn person_in_assignment(run: &Run, index: usize, context: &Context<'_>) -> Result<String, ToolError> {
    let Actor::Person { person, .. } = context.actor else {
        return Err(ToolError::new(Code::Forbidden, "only a person decides", Vec::new()));
    };
    let item = run.steps[index].work_item.as_ref();
    if !item.is_some_and(|item| assigned(context.actor, &item.assigned_to, context.settings)) {
        return Err(ToolError::new(
            Code::Forbidden,
            "this work item is assigned to someone else",
            Vec::new(),
        ));
    }
    Ok(person.clone())
}
