//! The run view (what `start_run`, `get_run` and every write return) and the items of
//! `list_runs`.

use std::collections::BTreeMap;

use agentprocess_engine::{Mode, ProcessVersion, Run, RunState, StepState, run_state, snapshot, step_state};
use agentprocess_format::exact;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::data::RunData;
use crate::work::WorkItemView;

/// The run view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    /// The run itself.
    pub run: RunSummary,
    /// Its run data.
    pub data: RunData,
    /// Every step, in the process's order.
    pub steps: Vec<StepView>,
    /// The open work items.
    pub work_items: Vec<WorkItemView>,
    /// The process body.
    pub body: String,
    /// Where a drawing of the process places each step (the centre of its box), by
    /// step id: the layout of the run page's map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub layout: Option<BTreeMap<String, Point>>,
}

/// A step's place in the drawing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    /// From the left.
    pub x: u32,
    /// From the top.
    pub y: u32,
}

impl RunView {
    /// `run` as it stands at `now`.
    pub fn of(run: &Run, version: &ProcessVersion, now: Timestamp) -> Self {
        let snapshot = snapshot(run);
        let document = version.process.document();
        let steps = run
            .steps
            .iter()
            .zip(&document.steps)
            .map(|(step, definition)| {
                let state = step_state(step, now);
                let pending = matches!(state, Some(StepState::Ready | StepState::Claimed | StepState::Waiting));
                let due = step.due_at.filter(|_| pending);
                StepView {
                    id: step.id.clone(),
                    kind: definition.kind.key().to_owned(),
                    state,
                    due,
                    overdue: due.map(|_| step.overdue),
                }
            })
            .collect();
        let work_items = (0..run.steps.len())
            .filter_map(|index| WorkItemView::of(run, version, index, &snapshot))
            .collect();
        Self {
            run: RunSummary::of(run, now),
            data: RunData::of(run),
            steps,
            work_items,
            body: version.process.body().to_owned(),
            layout: Some(
                crate::map::layout(&document.steps)
                    .nodes
                    .into_iter()
                    .map(|node| (node.id, Point { x: node.x, y: node.y }))
                    .collect(),
            ),
        }
    }
}

impl crate::ToolResult for RunView {
    fn sign_files(&mut self, url: &dyn Fn(&str) -> String) {
        self.data.sign_files(url);
    }

    fn run_data_mut(&mut self) -> Option<&mut RunData> {
        Some(&mut self.data)
    }
}

/// `run`: who started it, when, and where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// The run id.
    pub id: String,
    /// The process name.
    pub process: String,
    /// The pinned version number.
    pub version: u32,
    /// `live` or `test`.
    #[schema(value_type = String, pattern = "^(live|test)$")]
    pub mode: Mode,
    /// `active`, `waiting`, `ended` or `cancelled`.
    #[schema(value_type = String, pattern = "^(active|waiting|ended|cancelled)$")]
    pub state: RunState,
    /// The finish outcome, `rejected` or `failed`, once ended.
    pub outcome: Option<String>,
    /// Who ended it, when, and why.
    pub ended: Option<Ended>,
    /// A person value, or an agent id.
    pub started_by: String,
    /// When it started.
    #[schema(value_type = String, format = DateTime)]
    pub started_at: Timestamp,
    /// When it last changed.
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
}

impl RunSummary {
    /// The summary of `run` at `now`.
    pub fn of(run: &Run, now: Timestamp) -> Self {
        Self {
            id: run.id.clone(),
            process: run.process.clone(),
            version: run.version,
            mode: run.mode,
            state: run_state(run, now),
            outcome: run.end.as_ref().and_then(|end| end.outcome.clone()),
            ended: run.end.as_ref().map(|end| Ended {
                by: end.by.clone(),
                at: end.at,
                note: end.note.clone(),
            }),
            started_by: run.started_by.clone(),
            started_at: run.started_at,
            updated_at: run.updated_at,
        }
    }
}

/// `run.ended`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Ended {
    /// Who ended it (`server` for a finish).
    pub by: String,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    /// The cancel reason, or the note of a rejection or failure.
    pub note: Option<String>,
}

/// One step of the run view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StepView {
    /// The step id.
    pub id: String,
    /// Its kind's key (`agent`, `approve`, `wait_for`, ...).
    pub kind: String,
    /// Its state; `null` when not reached.
    #[schema(value_type = Option<String>, pattern = "^(ready|claimed|waiting|done|failed|cancelled)$")]
    pub state: Option<StepState>,
    /// When its `due` passes, while it is pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub due: Option<Timestamp>,
    /// Whether `due` has passed, beside `due`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overdue: Option<bool>,
}

/// An item of `list_runs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunListItem {
    /// The run id.
    pub id: String,
    /// The process name.
    pub process: String,
    /// The pinned version number.
    pub version: u32,
    /// `active`, `waiting`, `ended` or `cancelled`.
    #[schema(value_type = String, pattern = "^(active|waiting|ended|cancelled)$")]
    pub state: RunState,
    /// The outcome, once ended.
    pub outcome: Option<String>,
    /// When it started.
    #[schema(value_type = String, format = DateTime)]
    pub started_at: Timestamp,
    /// When it last changed.
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
    /// Its inputs, numbers as they were sent.
    #[serde(deserialize_with = "exact::deserialize_object")]
    #[schema(value_type = Object)]
    pub inputs: Map<String, Value>,
}

impl RunListItem {
    /// `run` as `list_runs` lists it at `now`.
    pub fn of(run: Run, now: Timestamp) -> Self {
        Self {
            state: run_state(&run, now),
            outcome: run.end.as_ref().and_then(|end| end.outcome.clone()),
            id: run.id,
            process: run.process,
            version: run.version,
            started_at: run.started_at,
            updated_at: run.updated_at,
            inputs: run.inputs,
        }
    }
}

/// A page of a list: its items and the cursor of the next page (`null` on the last).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    /// This page's items.
    pub items: Vec<T>,
    /// Where the next page starts.
    pub next_cursor: Option<String>,
}
