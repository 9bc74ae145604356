//! `send_event`: an event delivered to one run (spec §3.6). It satisfies one waiting
//! `wait_for` of its name, or is held, oldest first, until one is ready or the run ends.

use std::collections::VecDeque;

use agentprocess_format::StepKind;
use agentprocess_format::values::{is_step_id, step_id_issue};
use serde_json::{Map, Value};

use crate::context::{Actor, Context, ProcessVersion};
use crate::error::{Code, ToolError};
use crate::guard::not_ended;
use crate::machine::Machine;
use crate::model::{HeldEvent, Record, Run, StepState};
use crate::outcome::Transition;
use crate::view::{json_bytes, run_data};

/// Delivers event `name` with `data`. Returns the new run and `consumedBy`: the wait
/// step it satisfied, or `None` when it is held.
pub fn send_event(
    run: &Run,
    version: &ProcessVersion,
    name: &str,
    data: Map<String, Value>,
    context: &mut Context<'_>,
) -> Result<(Transition, Option<String>), ToolError> {
    not_ended(run)?;
    let sender = match context.actor {
        Actor::Agent { id, .. } => id.clone(),
        Actor::Person {
            person, operator: true, ..
        } => person.clone(),
        Actor::Person { .. } => {
            return Err(ToolError::new(
                Code::Forbidden,
                "events come from agents and operators",
                Vec::new(),
            ));
        }
    };
    let mut issues = Vec::new();
    if !is_step_id(name) {
        issues.push(format!("name: {}", step_id_issue(name, "event name")));
    }
    let held_bytes = json_bytes(&run_data(run)).saturating_add(json_bytes(&data));
    if held_bytes > context.settings.run_data_bytes {
        issues.push(format!(
            "data: run data would be {held_bytes} bytes with this event; the limit is {} (limits.runDataBytes)",
            context.settings.run_data_bytes
        ));
    }
    if !issues.is_empty() {
        return Err(ToolError::new(Code::Invalid, "the event was not delivered", issues));
    }
    let steps = &version.process.document().steps;
    let waiting = run.steps.iter().zip(steps).position(|(step, definition)| {
        step.state == Some(StepState::Waiting) && matches!(&definition.kind, StepKind::WaitFor(event) if event == name)
    });
    let mut run = run.clone();
    let Some(index) = waiting else {
        run.events.push(HeldEvent {
            name: name.to_owned(),
            data,
            sender,
            at: context.now,
        });
        run.updated_at = context.now;
        return Ok((
            Transition {
                run,
                effects: Vec::new(),
            },
            None,
        ));
    };
    let consumed = run.steps[index].id.clone();
    let mut machine = Machine::new(&mut run, version, context.now, context.ids);
    let record = Record {
        output: Some(data),
        by: sender,
        at: context.now,
        ..Record::default()
    };
    let mut queue = VecDeque::new();
    machine.complete(index, record, None, &mut queue);
    machine.run_queue(queue);
    let effects = machine.effects;
    Ok((Transition { run, effects }, Some(consumed)))
}
