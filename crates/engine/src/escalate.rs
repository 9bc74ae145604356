//! `escalate`: "I cannot finish this". The step waits on a person in the operators'
//! queue, with the agent's note; the token dies.

use crate::Transition;
use crate::context::Context;
use crate::effect::{Effect, Notification};
use crate::error::{Code, ToolError};
use crate::guard::{agent, claimed_step, expire_leases, not_ended};
use crate::model::{Assignee, Escalation, Mode, Run, StepState, WorkItem};

/// Escalates the step `token` holds, with `note`.
pub fn escalate(run: &Run, token: &str, note: &str, context: &mut Context<'_>) -> Result<Transition, ToolError> {
    not_ended(run)?;
    let by = agent(context.actor, "escalate")?;
    if note.trim().is_empty() {
        return Err(ToolError::new(
            Code::Invalid,
            "an escalation needs a note",
            vec!["note: required".to_owned()],
        ));
    }
    let mut run = run.clone();
    expire_leases(&mut run, context.now);
    let index = claimed_step(&run, token)?;
    let id = context.ids.work_item();
    let step = &mut run.steps[index];
    step.retire_claim();
    step.state = Some(StepState::Waiting);
    step.work_item = Some(WorkItem {
        id: id.clone(),
        assigned_to: Assignee::Group(context.settings.escalation_group.clone()),
        created_at: context.now,
        escalation: Some(Escalation {
            note: note.to_owned(),
            by,
            at: context.now,
        }),
    });
    let step_id = step.id.clone();
    run.updated_at = context.now;
    let effects = if run.mode == Mode::Live {
        vec![Effect::Notify(Notification::WorkItem {
            step: step_id,
            work_item: id,
        })]
    } else {
        Vec::new()
    };
    Ok(Transition { run, effects })
}
