//! `timer_fired`: the scheduler reports a timer. A timer that is no longer current
//! (another attempt, a step that moved on, an ended run) changes nothing, so firing
//! twice has one effect.

use std::collections::VecDeque;

use agentprocess_format::StepKind;
use jiff::Timestamp;

use crate::Transition;
use crate::context::{Ids, ProcessVersion};
use crate::effect::{Effect, Notification, TimerKind};
use crate::machine::Machine;
use crate::model::{Mode, Run, StepState};

/// Applies the timer `id` (`<step>:<kind>:<attempt>`) at `now`.
pub fn timer_fired(run: &Run, version: &ProcessVersion, id: &str, now: Timestamp, ids: &mut dyn Ids) -> Transition {
    let unchanged = || Transition {
        run: run.clone(),
        effects: Vec::new(),
    };
    let mut parts = id.rsplitn(3, ':');
    let (Some(attempt), Some(kind), Some(step_id)) = (parts.next(), parts.next(), parts.next()) else {
        return unchanged();
    };
    let Some(index) = run.steps.iter().position(|step| step.id == step_id) else {
        return unchanged();
    };
    let step = &run.steps[index];
    let current = matches!(
        step.state,
        Some(StepState::Ready | StepState::Claimed | StepState::Waiting)
    );
    if run.is_over() || !current || attempt != step.attempt.to_string() {
        return unchanged();
    }
    let definition = &version.process.document().steps[index];
    let mut run = run.clone();
    let mut machine = Machine::new(&mut run, version, now, ids);
    let mut queue = VecDeque::new();
    match (kind, &definition.kind) {
        (k, _) if k == TimerKind::Due.as_str() => {
            if machine.run.steps[index].overdue {
                return unchanged();
            }
            machine.run.steps[index].overdue = true;
            if machine.run.mode == Mode::Live {
                machine.effects.push(Effect::Notify(Notification::Overdue {
                    step: step_id.to_owned(),
                }));
            }
        }
        (k, StepKind::Wait(_)) if k == TimerKind::Wait.as_str() => {
            machine.complete_by_server(index, "server", None, &mut queue);
        }
        (k, StepKind::WaitUntil(_)) if k == TimerKind::WaitUntil.as_str() => {
            machine.complete_by_server(index, "server", None, &mut queue);
        }
        (k, StepKind::WaitFor(_)) if k == TimerKind::Timeout.as_str() => machine.time_out(index, &mut queue),
        _ => return unchanged(),
    }
    machine.run_queue(queue);
    let effects = machine.effects;
    Transition { run, effects }
}
