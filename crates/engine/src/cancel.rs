//! `cancel`: an operator stops an active or waiting run, with a reason.

use crate::context::{Actor, Context, ProcessVersion};
use crate::error::{Code, ToolError};
use crate::guard::not_ended;
use crate::machine::Machine;
use crate::model::Run;
use crate::outcome::Transition;

/// Cancels the run. Only an operator may; the reason becomes `run.ended.note`.
pub fn cancel(
    run: &Run,
    version: &ProcessVersion,
    reason: &str,
    context: &mut Context<'_>,
) -> Result<Transition, ToolError> {
    not_ended(run)?;
    let Actor::Person {
        person, operator: true, ..
    } = context.actor
    else {
        return Err(ToolError::new(
            Code::Forbidden,
            "only an operator cancels a run",
            Vec::new(),
        ));
    };
    if reason.trim().is_empty() {
        return Err(ToolError::new(
            Code::Invalid,
            "a cancellation needs a reason",
            vec!["reason: required".to_owned()],
        ));
    }
    let mut run = run.clone();
    let mut machine = Machine::new(&mut run, version, context.now, context.ids);
    machine.end(true, None, person.clone(), Some(reason.to_owned()));
    let effects = machine.effects;
    Ok(Transition { run, effects })
}
