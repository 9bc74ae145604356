//! Effects: what the caller carries out after the run is stored. Data, not actions.

use jiff::Timestamp;

/// Something to do once the transition is committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Fire `timer_fired` for this timer at `at`.
    ScheduleTimer(Timer),
    /// The timer with this id will never be needed.
    CancelTimer {
        /// The timer's id.
        id: String,
    },
    /// Tell people something (never in a test-mode run).
    Notify(Notification),
}

/// A timer the run waits on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timer {
    /// Unique within the run: `<step>:<kind>:<attempt>`.
    pub id: String,
    /// The step it belongs to.
    pub step: String,
    /// What firing it means.
    pub kind: TimerKind,
    /// When to fire.
    pub at: Timestamp,
}

/// What a timer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerKind {
    /// The step's `due` passes: mark it overdue and notify.
    Due,
    /// A `wait` step's duration passes.
    Wait,
    /// A `wait_until` step's time arrives.
    WaitUntil,
    /// A `wait_for` step's `timeout` passes.
    Timeout,
}

impl TimerKind {
    /// The name used in timer ids.
    pub fn as_str(self) -> &'static str {
        match self {
            TimerKind::Due => "due",
            TimerKind::Wait => "wait",
            TimerKind::WaitUntil => "wait_until",
            TimerKind::Timeout => "timeout",
        }
    }
}

/// A notification to deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notification {
    /// A work item opened for a group or a person.
    WorkItem {
        /// The step.
        step: String,
        /// The work item.
        work_item: String,
    },
    /// A step's `due` passed while it was still open: tell the assignee and the
    /// organization's operators.
    Overdue {
        /// The step.
        step: String,
    },
    /// The run ended or was cancelled.
    RunEnded {
        /// `ended` or `cancelled`.
        state: String,
        /// The outcome, if any.
        outcome: Option<String>,
    },
}
