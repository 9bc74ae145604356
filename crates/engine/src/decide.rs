//! `decide`: a person completes a task, approves or rejects, returns or completes an
//! escalated agent step, or fails the run (spec §3.4, tools.md).

use std::collections::VecDeque;

use agentprocess_format::StepKind;

use crate::Transition;
use crate::acceptance::{Submission, Submitter, check_submission};
use crate::context::{Actor, Context, ProcessVersion};
use crate::error::{Code, ToolError};
use crate::guard::{assigned, not_ended};
use crate::machine::Machine;
use crate::model::{Record, Returned, Run, StepState};
use crate::submit::{record, run_data_cap};
use crate::view::snapshot;

/// The five decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// A task or an escalated agent step is done.
    Completed,
    /// An approval is given.
    Approved,
    /// An approval is refused.
    Rejected,
    /// An escalated agent step goes back to the agents.
    Returned,
    /// The run ends `failed`.
    Failed,
}

impl Decision {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Completed => "completed",
            Decision::Approved => "approved",
            Decision::Rejected => "rejected",
            Decision::Returned => "returned",
            Decision::Failed => "failed",
        }
    }
}

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
pub fn decide(
    run: &Run,
    version: &ProcessVersion,
    decide: Decide,
    file_issues: Vec<String>,
    context: &mut Context<'_>,
) -> Result<Transition, ToolError> {
    not_ended(run)?;
    combinations(&decide)?;
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
    let definition = &version.process.document().steps[index];
    let escalated = run.steps[index]
        .work_item
        .as_ref()
        .is_some_and(|item| item.escalation.is_some());
    let allowed: &[Decision] = match (&definition.kind, escalated) {
        (StepKind::Approve(_), _) => &[Decision::Approved, Decision::Rejected, Decision::Failed],
        (StepKind::Task(_), _) => &[Decision::Completed, Decision::Failed],
        (_, true) => &[Decision::Returned, Decision::Completed, Decision::Failed],
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

    let mut run = run.clone();
    let item = decide.work_item.clone();
    let now = context.now;
    let note = decide.note.clone();
    let mut queue = VecDeque::new();
    let mut machine = Machine::new(&mut run, version, now, context.ids);
    match decide.decision {
        Decision::Completed => {
            let mut issues = check_submission(
                definition,
                &decide.submission,
                Submitter::Person,
                context.settings.person,
            );
            issues.extend(file_issues);
            let record = record(decide.submission, by, now, definition.next.as_ref());
            if issues.is_empty() {
                issues.extend(run_data_cap(
                    machine.run,
                    index,
                    &record,
                    context.settings.run_data_bytes,
                ));
            }
            if !issues.is_empty() {
                return Err(ToolError::not_accepted(issues));
            }
            let chosen = record.next.clone();
            machine.complete(index, record, chosen.as_deref(), &mut queue);
        }
        Decision::Approved => {
            let record = Record {
                decision: Some("approved".into()),
                note,
                by,
                at: now,
                ..Record::default()
            };
            machine.complete(index, record, None, &mut queue);
        }
        Decision::Rejected => {
            let record = Record {
                decision: Some("rejected".into()),
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
            step.state = Some(StepState::Ready);
            step.handoff.returned = Some(Returned {
                note: note.unwrap_or_default(),
                by,
                at: now,
            });
        }
        Decision::Failed => {
            let record = Record {
                decision: Some("failed".into()),
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
    run.decided.push(item);
    Ok(Transition { run, effects })
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
