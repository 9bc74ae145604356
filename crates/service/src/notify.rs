//! Notifications: what the engine asks to tell people, written to the outbox in the
//! run's transaction, and the body every webhook endpoint receives.
//!
//! A body names what happened and where (organization, run, process, step, work item,
//! assignee) and never carries run data: endpoints fetch what they need through the
//! API with their own credentials.

use agentprocess_engine::{Notification, Run};
use agentprocess_store::NewNotification;
use serde_json::{Value, json};

use crate::ids::random_id;

/// A notification ready for the outbox.
pub(crate) struct Outgoing {
    id: String,
    event: &'static str,
    body: String,
}

impl Outgoing {
    /// The notification for `notification` about `run` (as the write leaves it); a
    /// work item's carries the URL of its page under `public_url`, where a person
    /// decides it.
    pub(crate) fn new(org: &str, run: &Run, notification: &Notification, public_url: &str) -> Self {
        let id = random_id("ntf_", 12);
        let (event, detail) = describe(run, notification, public_url);
        let mut body = json!({
            "id": id,
            "type": event,
            "createdAt": run.updated_at.to_string(),
            "organization": org,
            "run": {
                "id": run.id,
                "process": run.process,
                "version": run.version,
            },
        });
        if let (Value::Object(body), Value::Object(detail)) = (&mut body, detail) {
            body.extend(detail);
        }
        Self {
            id,
            event,
            body: body.to_string(),
        }
    }

    /// `work_item.unassignable`: a work item went to a person value that names no member
    /// of the organization, so nobody can decide it until someone with that email is
    /// invited (or an operator acts on the run).
    pub(crate) fn unassignable(org: &str, run: &Run, step: &str, work_item: &str, person: &str) -> Self {
        let id = random_id("ntf_", 12);
        let body = json!({
            "id": id,
            "type": "work_item.unassignable",
            "createdAt": run.updated_at.to_string(),
            "organization": org,
            "run": { "id": run.id, "process": run.process, "version": run.version },
            "step": step,
            "workItem": { "id": work_item, "person": person },
            "reason": format!("{person} is no member of the organization: invite them, or an operator cancels the run"),
        });
        Self {
            id,
            event: "work_item.unassignable",
            body: body.to_string(),
        }
    }

    /// The row to write; `trace_parent` is the causing call's trace context.
    pub(crate) fn row<'a>(
        &'a self,
        run: &'a Run,
        created_at: i64,
        trace_parent: Option<&'a str>,
    ) -> NewNotification<'a> {
        NewNotification {
            id: &self.id,
            run_id: &run.id,
            event: self.event,
            body: &self.body,
            created_at,
            trace_parent,
        }
    }
}

/// The person a work item notification goes to, when it goes to one person.
pub(crate) fn person_of<'a>(run: &'a Run, notification: &Notification) -> Option<(&'a str, &'a str, &'a str)> {
    let Notification::WorkItem { step, .. } = notification else {
        return None;
    };
    let item = run.step(step)?.work_item.as_ref()?;
    match &item.assigned_to {
        agentprocess_engine::Assignee::Person(person) => Some((run.step(step)?.id.as_str(), item.id.as_str(), person)),
        agentprocess_engine::Assignee::Group(_) => None,
    }
}

/// The web page of work item `item` of `run`.
pub(crate) fn item_url(public_url: &str, run: &str, item: &str) -> String {
    format!("{}/runs/{run}/items/{item}", public_url.trim_end_matches('/'))
}

/// The event type and its own fields.
fn describe(run: &Run, notification: &Notification, public_url: &str) -> (&'static str, Value) {
    match notification {
        Notification::WorkItem { step, work_item } => {
            let item = run.step(step).and_then(|step| step.work_item.as_ref());
            let escalated = item.is_some_and(|item| item.escalation.is_some());
            let event = if escalated {
                "escalation.waiting"
            } else {
                "work_item.created"
            };
            (
                event,
                json!({
                    "step": step,
                    "workItem": {
                        "id": work_item,
                        "assignedTo": item.map(|item| &item.assigned_to),
                        "url": item_url(public_url, &run.id, work_item),
                    },
                }),
            )
        }
        Notification::Overdue { step } => {
            let step_run = run.step(step);
            let item = step_run.and_then(|step| step.work_item.as_ref());
            (
                "step.overdue",
                json!({
                    "step": step,
                    "dueAt": step_run.and_then(|step| step.due_at).map(|at| at.to_string()),
                    "workItem": item.map(|item| json!({
                        "id": item.id,
                        "assignedTo": item.assigned_to,
                        "url": item_url(public_url, &run.id, &item.id),
                    })),
                }),
            )
        }
        Notification::RunEnded { state, outcome } => (
            "run.ended",
            json!({
                "state": state,
                "outcome": outcome,
            }),
        ),
    }
}
