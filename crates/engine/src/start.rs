//! `start_run`: inputs checked against the declaration, the version pinned, the first
//! step made current.

use agentprocess_format::PersonRef;
use serde_json::{Map, Value};

use crate::context::{Actor, Context, ProcessVersion};
use crate::error::{Code, ToolError};
use crate::fields::check_fields;
use crate::machine::Machine;
use crate::model::{Mode, Run, StepRun};
use crate::outcome::Transition;
use crate::view::json_bytes;

/// What `start_run` asks for, once the server has chosen the run id.
#[derive(Debug, Clone, PartialEq)]
pub struct StartRun {
    /// The new run's id.
    pub id: String,
    /// The inputs, checked against the process's `inputs`.
    pub inputs: Map<String, Value>,
    /// `live` or `test`.
    pub mode: Mode,
}

/// Starts a run of `version`.
pub fn start(version: &ProcessVersion, command: StartRun, context: &mut Context<'_>) -> Result<Transition, ToolError> {
    let document = version.process.document();
    if let Actor::Agent { .. } = context.actor
        && let Some(step) = document
            .steps
            .iter()
            .find(|step| step.person == Some(PersonRef::Initiator))
    {
        return Err(ToolError::new(
            Code::Invalid,
            "an agent cannot start this process: a step is assigned to initiator",
            vec![format!(
                "steps.{}.person: initiator needs a run started by a person",
                step.id
            )],
        ));
    }
    let mut issues = check_fields(&document.inputs, &command.inputs, "inputs", context.settings.person);
    let bytes = json_bytes(&command.inputs);
    if bytes > context.settings.run_data_bytes {
        issues.push(format!(
            "inputs: {bytes} bytes; the limit is {} (limits.runDataBytes)",
            context.settings.run_data_bytes
        ));
    }
    if !issues.is_empty() {
        return Err(ToolError::new(
            Code::Invalid,
            "the inputs do not match the process",
            issues,
        ));
    }

    let initiator = match context.actor {
        Actor::Person { person, .. } => Some(person.clone()),
        Actor::Agent { .. } => None,
    };
    let steps = document.steps.iter().map(|step| StepRun::new(&step.id)).collect();
    let mut run = Run {
        mode: command.mode,
        initiator,
        inputs: command.inputs,
        ..Run::new(
            command.id,
            (&document.name, version.number),
            context.actor.name(),
            context.now,
            steps,
        )
    };
    let mut machine = Machine::new(&mut run, version, context.now, context.ids);
    if !document.steps.is_empty() {
        machine.enter(0);
    }
    let effects = machine.effects;
    Ok(Transition { run, effects })
}
