//! `get_work` items of one run (tools.md): for an agent, the ready agent steps it may
//! claim; for a person, the open work items assigned to them. Ordering and paging
//! across runs are the store's; how an item looks is `agentprocess-views`'.

use agentprocess_format::StepKind;
use jiff::Timestamp;

use crate::context::{Actor, ProcessVersion, Settings};
use crate::guard::{assigned, handoff_at};
use crate::model::{Handoff, Run, StepState};
use crate::view::{asked, step_state};

/// One item of `get_work`, by the index of its step in the run.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// A ready agent step the agent may claim.
    Claimable {
        /// The step's index.
        step: usize,
        /// Since when it is ready.
        since: Timestamp,
        /// What the previous attempt left, as of now.
        handoff: Handoff,
    },
    /// An open work item the person may decide.
    Decidable {
        /// The step's index.
        step: usize,
    },
}

/// The items of `run` that `actor` may act on at `now`, oldest first.
pub fn work_items(
    run: &Run,
    version: &ProcessVersion,
    actor: &Actor,
    settings: &Settings,
    now: Timestamp,
) -> Vec<Work> {
    if run.is_over() {
        return Vec::new();
    }
    let steps = &version.process.document().steps;
    let mut found: Vec<(Timestamp, Work)> = Vec::new();
    for (index, (step, definition)) in run.steps.iter().zip(steps).enumerate() {
        match actor {
            Actor::Agent { .. } => {
                if !matches!(definition.kind, StepKind::Agent(_)) || step_state(step, now) != Some(StepState::Ready) {
                    continue;
                }
                let since = step.ready_since.unwrap_or(run.started_at);
                let work = Work::Claimable {
                    step: index,
                    since,
                    handoff: handoff_at(step, now),
                };
                found.push((since, work));
            }
            Actor::Person { .. } => {
                let Some(open) = &step.work_item else {
                    continue;
                };
                if assigned(actor, &open.assigned_to, settings) && asked(definition, open).is_some() {
                    found.push((open.created_at, Work::Decidable { step: index }));
                }
            }
        }
    }
    found.sort_by_key(|(since, _)| *since);
    found.into_iter().map(|(_, item)| item).collect()
}
