//! `timer_fired`: the scheduler reports a timer. A timer that is no longer current
//! (another attempt, a step that moved on, an ended run) changes nothing, so firing
//! twice has one effect.

use std::collections::VecDeque;

use agentprocess_format::StepKind;
use jiff::Timestamp;

use crate::context::{Ids, ProcessVersion};
use crate::effect::{Effect, Notification, TimerId, TimerKind};
use crate::machine::Machine;
use crate::model::{Mode, Run, StepState};
use crate::outcome::Transition;

/// Applies the timer `id` (a [`TimerId`]) at `now`.
pub fn timer_fired(run: &Run, version: &ProcessVersion, id: &str, now: Timestamp, ids: &mut dyn Ids) -> Transition {
    let unchanged = || Transition {
        run: run.clone(),
        effects: Vec::new(),
    };
    let Ok(TimerId {
        step: step_id,
        kind,
        attempt,
    }) = id.parse::<TimerId>()
    else {
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
    if run.is_over() || !current || attempt != step.attempt {
        return unchanged();
    }
    let definition = &version.process.document().steps[index];
    let mut run = run.clone();
    let mut machine = Machine::new(&mut run, version, now, ids);
    let mut queue = VecDeque::new();
    match (kind, &definition.kind) {
        (TimerKind::Due, _) => {
            if machine.run.steps[index].overdue {
                return unchanged();
            }
            machine.run.steps[index].overdue = true;
            if machine.run.mode == Mode::Live {
                machine
                    .effects
                    .push(Effect::Notify(Notification::Overdue { step: step_id }));
            }
        }
        (TimerKind::Wait, StepKind::Wait(_)) | (TimerKind::WaitUntil, StepKind::WaitUntil(_)) => {
            machine.complete_by_server(index, "server", None, &mut queue);
        }
        (TimerKind::Timeout, StepKind::WaitFor(_)) => machine.time_out(index, &mut queue),
        _ => return unchanged(),
    }
    machine.run_queue(queue);
    let effects = machine.effects;
    Transition { run, effects }
}
