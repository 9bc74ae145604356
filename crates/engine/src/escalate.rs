//! `escalate`: "I cannot finish this". The step waits on a person in the operators'
//! queue, with the agent's note; the token dies.

use crate::context::Context;
use crate::error::{Code, ToolError};
use crate::guard::{agent, claimed_step, expire_leases, not_ended};
use crate::machine::Machine;
use crate::model::{Escalation, Run};
use crate::outcome::Transition;

/// Escalates the step `token` holds, with `note`.
pub fn escalate(
    run: &Run,
    version: &crate::ProcessVersion,
    token: &str,
    note: &str,
    context: &mut Context<'_>,
) -> Result<Transition, ToolError> {
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
    let escalation = Escalation {
        note: note.to_owned(),
        by,
        at: context.now,
        check: None,
        candidate: None,
    };
    let mut machine = Machine::new(&mut run, version, context.now, context.ids);
    machine.escalate(index, escalation, context.settings.escalation_group.clone());
    let effects = machine.effects;
    Ok(Transition { run, effects })
}
