//! How a run moves on its own: entering a step, completing it, following `next`,
//! forking and joining, and ending the run. Every command ends here; nothing else
//! makes a step current.

use std::collections::VecDeque;

use agentprocess_format::{DataPath, Duration, Next, PersonRef, Step, StepKind};
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use crate::context::{Ids, ProcessVersion};
use crate::effect::{Effect, Notification, Timer, TimerId, TimerKind};
use crate::model::{Assignee, End, Escalation, Handoff, Record, Run, StepState, WorkItem};

/// The run being changed, and the effects gathered on the way.
pub(crate) struct Machine<'a> {
    pub(crate) run: &'a mut Run,
    pub(crate) version: &'a ProcessVersion,
    pub(crate) now: Timestamp,
    pub(crate) ids: &'a mut dyn Ids,
    pub(crate) effects: Vec<Effect>,
    /// For each step, the parallel step whose branch holds it.
    parents: Vec<Option<usize>>,
}

/// Where a completed step goes.
enum Target {
    Step(usize),
    Join,
}

impl<'a> Machine<'a> {
    pub(crate) fn new(run: &'a mut Run, version: &'a ProcessVersion, now: Timestamp, ids: &'a mut dyn Ids) -> Self {
        let parents = version.process.document().enclosing_parallel();
        Self {
            run,
            version,
            now,
            ids,
            effects: Vec::new(),
            parents,
        }
    }

    fn definition(&self, index: usize) -> &'a Step {
        &self.version.process.document().steps[index]
    }

    fn index_of(&self, id: &str) -> Option<usize> {
        self.version
            .process
            .document()
            .steps
            .iter()
            .position(|step| step.id == id)
    }

    fn live(&self) -> bool {
        self.run.mode == crate::model::Mode::Live
    }

    /// Makes step `index` current, and keeps moving while steps complete at once
    /// (a past `wait_until`, a held event, a finish, a fork).
    pub(crate) fn enter(&mut self, index: usize) {
        self.run_queue(VecDeque::from([index]));
    }

    /// Enters each queued step in turn, and those they lead to.
    pub(crate) fn run_queue(&mut self, mut queue: VecDeque<usize>) {
        while let Some(index) = queue.pop_front() {
            if self.run.is_over() {
                return;
            }
            self.enter_one(index, &mut queue);
        }
        self.run.updated_at = self.now;
    }

    fn enter_one(&mut self, index: usize, queue: &mut VecDeque<usize>) {
        let step = self.definition(index);
        let now = self.now;
        let completions = self.run.completions;
        let at = &mut self.run.steps[index];
        at.attempt += 1;
        at.entered = Some(completions);
        at.ready_since = Some(now);
        at.overdue = false;
        at.retire_claim();
        at.work_item = None;
        at.due_at = None;
        // A new attempt starts with an empty handoff (rework is a fresh attempt).
        at.handoff = Handoff::default();
        match &step.kind {
            StepKind::Agent(_) => {
                self.run.steps[index].state = Some(StepState::Ready);
                self.schedule_due(index);
            }
            StepKind::Task(_) | StepKind::Approve(_) => match self.assignee(step) {
                Ok(assigned_to) => {
                    self.open_work_item(index, assigned_to, None);
                    self.schedule_due(index);
                }
                Err(note) => self.fail(index, note),
            },
            StepKind::Wait(duration) => {
                let at = self.after(*duration);
                self.wait(index, TimerKind::Wait, at);
            }
            StepKind::WaitUntil(path) => match self.datetime_at(path) {
                Err(note) => self.fail(index, note),
                Ok(at) if at <= now => self.complete_by_server(index, "server", None, queue),
                Ok(at) => self.wait(index, TimerKind::WaitUntil, at),
            },
            StepKind::WaitFor(name) => {
                if let Some(held) = self.run.events.iter().position(|event| &event.name == name) {
                    let event = self.run.events.remove(held);
                    self.complete_by_server(index, &event.sender, Some(event.data), queue);
                } else {
                    self.run.steps[index].state = Some(StepState::Waiting);
                    if let Some(timeout) = step.timeout {
                        let at = self.after(timeout);
                        self.schedule(index, TimerKind::Timeout, at);
                    }
                }
            }
            StepKind::Finish(outcome) => {
                self.run.steps[index].state = Some(StepState::Done);
                self.end(false, Some(outcome.clone()), "server".to_owned(), None);
            }
            StepKind::Parallel(entries) => {
                self.run.steps[index].state = Some(StepState::Waiting);
                queue.extend(entries.iter().filter_map(|id| self.index_of(id)));
            }
        }
    }

    fn after(&self, duration: Duration) -> Timestamp {
        let seconds = i64::try_from(duration.seconds().unwrap_or(0)).unwrap_or(i64::MAX);
        self.now
            .checked_add(SignedDuration::from_secs(seconds))
            .unwrap_or(Timestamp::MAX)
    }

    fn wait(&mut self, index: usize, kind: TimerKind, at: Timestamp) {
        self.run.steps[index].state = Some(StepState::Waiting);
        self.schedule(index, kind, at);
    }

    fn timer_id(&self, index: usize, kind: TimerKind) -> String {
        let step = &self.run.steps[index];
        TimerId {
            step: step.id.clone(),
            kind,
            attempt: step.attempt,
        }
        .to_string()
    }

    fn schedule(&mut self, index: usize, kind: TimerKind, at: Timestamp) {
        let timer = Timer {
            id: self.timer_id(index, kind),
            step: self.run.steps[index].id.clone(),
            kind,
            at,
        };
        self.effects.push(Effect::ScheduleTimer(timer));
    }

    fn schedule_due(&mut self, index: usize) {
        if let Some(due) = self.definition(index).due {
            let at = self.after(due);
            self.run.steps[index].due_at = Some(at);
            self.schedule(index, TimerKind::Due, at);
        }
    }

    /// Cancels the timers of the step's current attempt.
    fn cancel_timers(&mut self, index: usize) {
        let step = self.definition(index);
        let mut kinds = Vec::new();
        if self.run.steps[index].due_at.is_some() {
            kinds.push(TimerKind::Due);
        }
        match step.kind {
            StepKind::Wait(_) => kinds.push(TimerKind::Wait),
            StepKind::WaitUntil(_) => kinds.push(TimerKind::WaitUntil),
            StepKind::WaitFor(_) if step.timeout.is_some() => kinds.push(TimerKind::Timeout),
            _ => {}
        }
        for kind in kinds {
            let id = self.timer_id(index, kind);
            self.effects.push(Effect::CancelTimer { id });
        }
        self.run.steps[index].due_at = None;
    }

    fn open_work_item(&mut self, index: usize, assigned_to: Assignee, escalation: Option<Escalation>) {
        let id = self.ids.work_item();
        let step = &mut self.run.steps[index];
        step.state = Some(StepState::Waiting);
        step.work_item = Some(WorkItem {
            id: id.clone(),
            assigned_to,
            created_at: self.now,
            escalation,
        });
        if self.live() {
            let step = self.run.steps[index].id.clone();
            self.effects
                .push(Effect::Notify(Notification::WorkItem { step, work_item: id }));
        }
    }

    /// Sends step `index` to the escalation group with `escalation`: the claim ends,
    /// an open work item counts as decided, and a new one waits in the operators' queue.
    pub(crate) fn escalate(&mut self, index: usize, escalation: Escalation, group: String) {
        let step = &mut self.run.steps[index];
        step.retire_claim();
        if let Some(open) = step.work_item.take() {
            self.run.decided.push(open.id);
        }
        self.open_work_item(index, Assignee::Group(group), Some(escalation));
        self.run.updated_at = self.now;
    }

    /// Opens the work item of person step `index` again, for its own assignee (a task
    /// a person returned after an unsure check).
    pub(crate) fn reopen(&mut self, index: usize) {
        match self.assignee(self.definition(index)) {
            Ok(assignee) => self.open_work_item(index, assignee, None),
            Err(reason) => self.fail(index, reason),
        }
    }

    /// Who a person step goes to: a role's group, the initiator, or a person in run data.
    fn assignee(&self, step: &Step) -> Result<Assignee, String> {
        match &step.person {
            Some(PersonRef::Role(role)) => self
                .version
                .roles
                .get(role)
                .map(|group| Assignee::Group(group.clone()))
                .ok_or_else(|| format!("the role {role:?} is bound to no group")),
            Some(PersonRef::Initiator) => self
                .run
                .initiator
                .clone()
                .map(Assignee::Person)
                .ok_or_else(|| "the run has no initiator: an agent started it".to_owned()),
            Some(PersonRef::Path(path)) => match self.value_at(path) {
                Some(Value::String(person)) => Ok(Assignee::Person(person.clone())),
                _ => Err(format!("person: {path} resolves to no person")),
            },
            None => Err("the step names no person".to_owned()),
        }
    }

    /// The value a path names in run data, if any.
    fn value_at(&self, path: &DataPath) -> Option<&Value> {
        match path {
            DataPath::Input(field) => self.run.inputs.get(field),
            DataPath::Output { step, field } => self.run.step(step)?.record.as_ref()?.output.as_ref()?.get(field),
        }
    }

    fn datetime_at(&self, path: &DataPath) -> Result<Timestamp, String> {
        match self.value_at(path) {
            Some(Value::String(text)) if agentprocess_format::values::is_datetime(text) => text
                .parse()
                .map_err(|_| format!("wait_until: {path} is not a datetime")),
            Some(_) => Err(format!("wait_until: {path} is not a datetime")),
            None => Err(format!("wait_until: {path} is missing")),
        }
    }

    /// Completes a server step (a wait) with `by` and, for `wait_for`, the event data.
    pub(crate) fn complete_by_server(
        &mut self,
        index: usize,
        by: &str,
        output: Option<serde_json::Map<String, Value>>,
        queue: &mut VecDeque<usize>,
    ) {
        let record = Record {
            output,
            by: by.to_owned(),
            at: self.now,
            ..Record::default()
        };
        self.complete(index, record, None, queue);
    }

    /// Records a completion and follows the step's `next`, or the route chosen from
    /// its list.
    pub(crate) fn complete(&mut self, index: usize, record: Record, chosen: Option<&str>, queue: &mut VecDeque<usize>) {
        self.record(index, record);
        let target = match &self.definition(index).next {
            Some(Next::Step(id)) => self.target(id),
            Some(Next::Join) => Some(Target::Join),
            Some(Next::Routes(_)) => chosen.and_then(|id| self.target(id)),
            None => None,
        };
        self.follow(index, target, queue);
    }

    /// A `wait_for` timed out: the server completes it and the run continues at its
    /// `on_timeout`, or at its `next` when it names none.
    pub(crate) fn time_out(&mut self, index: usize, queue: &mut VecDeque<usize>) {
        let Some(to) = self.definition(index).on_timeout.as_deref() else {
            return self.complete_by_server(index, "server", None, queue);
        };
        self.record(
            index,
            Record {
                by: "server".to_owned(),
                at: self.now,
                ..Record::default()
            },
        );
        let target = self.target(to);
        self.follow(index, target, queue);
    }

    /// A step id as a target: `join` in a process that uses parallel-1.
    fn target(&self, id: &str) -> Option<Target> {
        if id == "join" && self.version.process.document().uses_parallel() {
            return Some(Target::Join);
        }
        self.index_of(id).map(Target::Step)
    }

    fn follow(&mut self, index: usize, target: Option<Target>, queue: &mut VecDeque<usize>) {
        match target {
            Some(Target::Step(next)) => queue.push_back(next),
            Some(Target::Join) => self.join(index, queue),
            None => {}
        }
    }

    /// Records a completion that moves the run nowhere (a rejection without
    /// `on_reject`, a `failed` decision): the run ends next.
    pub(crate) fn conclude(&mut self, index: usize, record: Record) {
        self.record(index, record);
    }

    /// Makes `record` the step's current completion (the previous one goes to
    /// history) and leaves the step done.
    fn record(&mut self, index: usize, record: Record) {
        self.cancel_timers(index);
        self.run.completions += 1;
        let completions = self.run.completions;
        let step = &mut self.run.steps[index];
        if let Some(previous) = step.record.replace(record) {
            step.history.push(previous);
        }
        step.state = Some(StepState::Done);
        step.completed = Some(completions);
        step.retire_claim();
        step.work_item = None;
        step.handoff = Handoff::default();
    }

    /// An approval rejected into `on_reject` (spec §3.1, parallel-1 §3): every step
    /// downstream of the returned-to step that completed since it was entered moves
    /// its completion to history and is no longer reached; the rejecting approval
    /// keeps its rejection current; the returned-to step is entered again (a parallel
    /// step forks every branch again).
    pub(crate) fn reject_into(&mut self, approval: usize, target: usize, record: Record, queue: &mut VecDeque<usize>) {
        self.record(approval, record);
        self.run.steps[approval].state = None;
        let since = self.run.steps[target].entered.unwrap_or(0);
        for index in self.downstream(target) {
            if index == approval || index == target {
                continue;
            }
            let step = &mut self.run.steps[index];
            if step.completed.is_some_and(|completed| completed > since) {
                if let Some(previous) = step.record.take() {
                    step.history.push(previous);
                }
                step.completed = None;
                step.state = None;
            }
        }
        queue.push_back(target);
    }

    /// Every step reachable from `from` along `next`, `on_timeout` and `parallel:`
    /// edges, `from` included. The graph is acyclic on these edges, so this is what
    /// comes after it.
    fn downstream(&self, from: usize) -> Vec<usize> {
        let steps = &self.version.process.document().steps;
        let mut seen = vec![false; steps.len()];
        let mut stack = vec![from];
        let mut found = Vec::new();
        while let Some(index) = stack.pop() {
            if std::mem::replace(&mut seen[index], true) {
                continue;
            }
            found.push(index);
            let step = &steps[index];
            let mut targets: Vec<&str> = match &step.next {
                Some(Next::Step(id)) => vec![id.as_str()],
                Some(Next::Routes(routes)) => routes.iter().map(|route| route.to.as_str()).collect(),
                Some(Next::Join) | None => Vec::new(),
            };
            targets.extend(step.on_timeout.as_deref());
            if let StepKind::Parallel(entries) = &step.kind {
                targets.extend(entries.iter().map(String::as_str));
            }
            if let Some(parallel) = self.parents[index]
                && targets.is_empty()
            {
                // A branch's last step leads on to what follows its parallel step.
                targets.extend(match &steps[parallel].next {
                    Some(Next::Step(id)) => Some(id.as_str()),
                    _ => None,
                });
            }
            stack.extend(targets.into_iter().filter_map(|id| self.index_of(id)));
        }
        found
    }

    /// A branch reached `join`: when no step of any branch of the fork is still
    /// current, the parallel step is done and the run continues at its `next`.
    fn join(&mut self, index: usize, queue: &mut VecDeque<usize>) {
        let Some(parallel) = self.parents[index] else {
            return;
        };
        let open = self.parents.iter().enumerate().any(|(step, parent)| {
            *parent == Some(parallel)
                && matches!(
                    self.run.steps[step].state,
                    Some(StepState::Ready | StepState::Claimed | StepState::Waiting)
                )
        });
        if open {
            return;
        }
        self.run.steps[parallel].state = Some(StepState::Done);
        if let Some(Next::Step(id)) = &self.definition(parallel).next
            && let Some(next) = self.index_of(id)
        {
            queue.push_back(next);
        }
    }

    /// The server fails step `index` with `note`, and so ends the run (spec §3.5).
    pub(crate) fn fail(&mut self, index: usize, note: String) {
        self.cancel_timers(index);
        let step = &mut self.run.steps[index];
        step.state = Some(StepState::Failed);
        step.retire_claim();
        step.work_item = None;
        step.record = Some(Record {
            decision: Some(crate::model::Decision::Failed),
            note: Some(note.clone()),
            by: "server".to_owned(),
            at: self.now,
            ..Record::default()
        });
        self.end(false, Some("failed".to_owned()), "server".to_owned(), Some(note));
    }

    /// Ends the run: every unfinished step is cancelled, every work item removed,
    /// every token dead, held events discarded.
    pub(crate) fn end(&mut self, cancelled: bool, outcome: Option<String>, by: String, note: Option<String>) {
        for index in 0..self.run.steps.len() {
            if matches!(
                self.run.steps[index].state,
                Some(StepState::Ready | StepState::Claimed | StepState::Waiting)
            ) {
                self.cancel_timers(index);
                let step = &mut self.run.steps[index];
                step.state = Some(StepState::Cancelled);
                step.retire_claim();
                step.work_item = None;
            }
        }
        self.run.events.clear();
        if self.live() {
            let state = if cancelled { "cancelled" } else { "ended" };
            self.effects.push(Effect::Notify(Notification::RunEnded {
                state: state.to_owned(),
                outcome: outcome.clone(),
            }));
        }
        self.run.end = Some(End {
            cancelled,
            outcome,
            by,
            at: self.now,
            note,
        });
        self.run.updated_at = self.now;
    }
}
