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

    /// The kind a name in a timer id stands for.
    pub fn parse(text: &str) -> Option<Self> {
        [
            TimerKind::Due,
            TimerKind::Wait,
            TimerKind::WaitUntil,
            TimerKind::Timeout,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == text)
    }
}

/// Which timer: of which attempt of which step, for what. Written `<step>:<kind>:<attempt>`
/// in timer rows and queues; step ids may hold `:`, so it is read from the right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerId {
    /// The step.
    pub step: String,
    /// What the timer is for.
    pub kind: TimerKind,
    /// The step's attempt when the timer was set.
    pub attempt: u32,
}

impl std::fmt::Display for TimerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.step, self.kind.as_str(), self.attempt)
    }
}

impl std::str::FromStr for TimerId {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let mut parts = text.rsplitn(3, ':');
        let (Some(attempt), Some(kind), Some(step)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("{text:?} is not <step>:<kind>:<attempt>"));
        };
        Ok(Self {
            step: step.to_owned(),
            kind: TimerKind::parse(kind).ok_or_else(|| format!("{kind:?} is not a timer kind"))?,
            attempt: attempt
                .parse()
                .map_err(|_| format!("{attempt:?} is not an attempt number"))?,
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timer_id_reads_back_as_written_even_when_the_step_id_holds_colons() {
        let id = TimerId {
            step: "a:b".to_owned(),
            kind: TimerKind::WaitUntil,
            attempt: 3,
        };
        assert_eq!(id.to_string(), "a:b:wait_until:3");
        assert_eq!("a:b:wait_until:3".parse::<TimerId>(), Ok(id));
        assert!("a:soon:1".parse::<TimerId>().is_err());
        assert!("a:due:x".parse::<TimerId>().is_err());
        assert!("due:1".parse::<TimerId>().is_err());
    }
}
