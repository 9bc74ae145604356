//! Policies an organization may turn on beyond the protocol, which leaves segregation
//! of duties to the server: the person who started a run does not decide its work
//! items, and no person decides an approval of work they did in the same run (four
//! eyes: the maker is not the checker). While one is on, such a person is not offered
//! those items (`get_work`, the inbox), is not told they wait for them (messages), and
//! a `decide` from them is `forbidden`, saying why. [`Policies::keeps`] is the one rule
//! all of these ask.

use agentprocess_engine::{ProcessVersion, Record, Run, StepRun};
use agentprocess_format::StepKind;
use agentprocess_store::{Messages as _, MessagesTx as _, Store as _, StoreTx as _};
use serde::{Deserialize, Serialize};

use crate::{Error, Service, millis, retry};

/// How an issue of a refusal by a policy starts; the policy's name follows.
pub const POLICY_ISSUE: &str = "policy: ";

/// An organization's policies; every one off unless turned on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policies {
    /// The person who started a run does not decide its approvals and tasks.
    #[serde(default)]
    pub initiator_does_not_decide: bool,
    /// Four eyes: no person decides an approval of work they did in the same run: a task
    /// they completed, an approval they decided (another step, or an earlier round of
    /// another step), or an escalated agent step they completed.
    #[serde(default)]
    pub four_eyes: bool,
}

/// Why a policy keeps a person from deciding a work item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// `initiatorDoesNotDecide`: they started the run.
    Initiator,
    /// `fourEyes`: the item is an approval, and they did `work` on step `step` of the
    /// same run.
    OwnWork {
        /// The step they worked on.
        step: String,
        /// What they did there.
        work: WorkDone,
    },
}

/// Work a person did in a run, which an approval of the run then checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkDone {
    /// They completed a task.
    CompletedTask,
    /// They decided an approval.
    DecidedApproval,
    /// They completed an agent step escalated to people.
    CompletedEscalation,
    /// They sent the event a `wait_for` step consumed (an operator's `send_event`): its
    /// data is the run's data, as a task's output is.
    SentEvent,
}

impl WorkDone {
    /// What `person` did on a completion `record` of a step of `kind`, if it is work an
    /// approval checks. A task's or an escalated agent step's completion has no
    /// decision; an agent's own submission or event is by the agent, a timeout by the
    /// server, never a person.
    fn of(kind: &StepKind, record: &Record, person: &str) -> Option<Self> {
        if !record.by.eq_ignore_ascii_case(person) {
            return None;
        }
        match (kind, record.decision) {
            (StepKind::Approve(_), Some(_)) => Some(WorkDone::DecidedApproval),
            (StepKind::Task(_), None) => Some(WorkDone::CompletedTask),
            (StepKind::Agent(_), None) => Some(WorkDone::CompletedEscalation),
            (StepKind::WaitFor(_), _) => Some(WorkDone::SentEvent),
            _ => None,
        }
    }

    /// The work, said of `step` (`completed prepare_payment`).
    fn said(self, step: &str) -> String {
        match self {
            WorkDone::CompletedTask => format!("completed {step}"),
            WorkDone::DecidedApproval => format!("decided the approval {step}"),
            WorkDone::CompletedEscalation => format!("completed the escalated step {step}"),
            WorkDone::SentEvent => format!("sent the event {step} waited for"),
        }
    }
}

impl Kept {
    /// The policy's name, as the settings spell it.
    pub fn policy(&self) -> &'static str {
        match self {
            Kept::Initiator => "initiatorDoesNotDecide",
            Kept::OwnWork { .. } => "fourEyes",
        }
    }

    /// Why, said to the person kept: the refusal's message.
    pub fn said_to_them(&self) -> String {
        match self {
            Kept::Initiator => "you started this run; under the organization's initiator-does-not-decide policy \
                                someone else decides its approvals and tasks"
                .to_owned(),
            Kept::OwnWork { step, work } => format!(
                "you {} in this run; under the organization's four-eyes policy someone else decides this approval",
                work.said(step)
            ),
        }
    }

    /// Why, said of `person`, led by the policy's name: the refusal's issue, and the
    /// reason a message to them is dropped.
    pub fn issue(&self, person: &str) -> String {
        let why = match self {
            Kept::Initiator => format!("{person} started this run"),
            Kept::OwnWork { step, work } => format!("{person} {} in this run", work.said(step)),
        };
        format!("{POLICY_ISSUE}{}: {why}", self.policy())
    }
}

impl Policies {
    /// Whether every policy is off.
    pub fn all_off(&self) -> bool {
        *self == Policies::default()
    }

    /// Why these policies keep `person` from deciding the open work item `work_item` of
    /// `run`; `None` when they do not, or it is no open item. Deciding, offering an
    /// item and telling someone it waits for them all ask this.
    pub fn keeps(&self, run: &Run, version: &ProcessVersion, work_item: &str, person: &str) -> Option<Kept> {
        if self.all_off() {
            return None;
        }
        let steps = &version.process.document().steps;
        let (step, definition) = run
            .steps
            .iter()
            .zip(steps)
            .find(|(step, _)| step.work_item.as_ref().is_some_and(|item| item.id == work_item))?;
        let approval = matches!(definition.kind, StepKind::Approve(_));
        let approval_or_task = approval || matches!(definition.kind, StepKind::Task(_));
        let initiator = run
            .initiator
            .as_deref()
            .is_some_and(|initiator| initiator.eq_ignore_ascii_case(person));
        if self.initiator_does_not_decide && approval_or_task && initiator {
            return Some(Kept::Initiator);
        }
        if self.four_eyes && approval {
            return own_work(run, version, step, person);
        }
        None
    }
}

/// The first work `person` did in `run` on a step other than `approval` (whose own
/// earlier rounds are the same check, made again after rework), in the process's order.
fn own_work(run: &Run, version: &ProcessVersion, approval: &StepRun, person: &str) -> Option<Kept> {
    run.steps
        .iter()
        .zip(&version.process.document().steps)
        .filter(|(other, _)| other.id != approval.id)
        .find_map(|(other, definition)| {
            let work = other
                .history
                .iter()
                .chain(&other.record)
                .find_map(|record| WorkDone::of(&definition.kind, record, person))?;
            Some(Kept::OwnWork {
                step: other.id.clone(),
                work,
            })
        })
}

impl Service {
    /// The organization's policies.
    pub async fn policies(&self, org: &str) -> Result<Policies, Error> {
        let Some(text) = self.store.org_policies(org).await.map_err(retry)? else {
            return Ok(Policies::default());
        };
        serde_json::from_str(&text).map_err(|error| Error::internal(format!("policies of {org}: {error}")))
    }

    /// Why the caller (a person) may not decide the item `work_item` of `run` under
    /// `policies`, as the tool's refusal; `Ok` when they may or it is no open item.
    pub(crate) fn permitted(
        policies: &Policies,
        run: &Run,
        version: &ProcessVersion,
        work_item: &str,
        person: Option<&str>,
    ) -> Result<(), Error> {
        let Some(person) = person else {
            return Ok(());
        };
        match policies.keeps(run, version, work_item, person) {
            Some(kept) => Err(agentprocess_engine::ToolError::new(
                agentprocess_engine::Code::Forbidden,
                kept.said_to_them(),
                vec![kept.issue(person)],
            )
            .into()),
            None => Ok(()),
        }
    }

    /// Replaces the organization's policies.
    pub async fn set_policies(&self, org: &str, policies: &Policies) -> Result<(), Error> {
        let text = serde_json::to_string(policies).map_err(retry)?;
        let mut tx = self.store.begin().await.map_err(retry)?;
        tx.put_org_policies(org, &text, millis(self.now()))
            .await
            .map_err(retry)?;
        tx.commit().await.map_err(retry)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use agentprocess_engine::{Assignee, Decision, WorkItem};
    use agentprocess_store::StoredVersion;

    const SOURCE: &str = "---
name: payment
description: A payment prepared, then approved twice.
steps:
  - id: collect
    agent: Collect the invoice.
  - id: prepare_payment
    person: clerks
    task: Prepare the payment.
  - id: bank_details
    wait_for: bank_details
  - id: first_approval
    person: approvers
    approve: Approve the payment.
  - id: second_approval
    person: approvers
    approve: Approve the payment again.
  - id: done
    finish: paid
---
A payment.
";

    /// A payment: an agent step, a task, an event, two approvals.
    pub(crate) fn version() -> ProcessVersion {
        crate::versions::parsed(&StoredVersion {
            process: "payment".to_owned(),
            number: 1,
            content_hash: String::new(),
            source: SOURCE.to_owned(),
            roles: r#"{"clerks": "clerks", "approvers": "approvers"}"#.to_owned(),
            agents: "{}".to_owned(),
            published_at: 0,
        })
        .expect("a version")
    }

    fn by(person: &str, decision: Option<Decision>) -> Record {
        Record {
            decision,
            by: person.to_owned(),
            ..Record::default()
        }
    }

    /// Started by ann: an agent step completed by an agent, then escalated and completed
    /// by cid; a task completed by old, sent back and completed by pat; the bank details
    /// sent as an event by the operator ops; the first
    /// approval decided by bob; the second open (`wi_2`, for the approvers), which sam
    /// rejected in an earlier round.
    pub(crate) fn run() -> Run {
        let at = jiff::Timestamp::UNIX_EPOCH;
        let mut collect = StepRun::new("collect");
        collect.history = vec![by("agent-1", None)];
        collect.record = Some(by("cid@x.test", None));
        let mut prepare = StepRun::new("prepare_payment");
        prepare.history = vec![by("old@x.test", None)];
        prepare.record = Some(by("pat@x.test", None));
        let mut details = StepRun::new("bank_details");
        details.record = Some(by("ops@x.test", None));
        let mut first = StepRun::new("first_approval");
        first.record = Some(by("bob@x.test", Some(Decision::Approved)));
        let mut second = StepRun::new("second_approval");
        second.history = vec![by("sam@x.test", Some(Decision::Rejected))];
        second.work_item = Some(WorkItem {
            id: "wi_2".to_owned(),
            assigned_to: Assignee::Group("approvers".to_owned()),
            created_at: at,
            escalation: None,
        });
        Run {
            initiator: Some("ann@x.test".to_owned()),
            ..Run::new(
                "r",
                ("payment", 1),
                "ann@x.test",
                at,
                vec![collect, prepare, details, first, second, StepRun::new("done")],
            )
        }
    }

    /// Every policy on.
    pub(crate) const ALL: Policies = Policies {
        initiator_does_not_decide: true,
        four_eyes: true,
    };

    #[test]
    fn four_eyes_keeps_whoever_did_work_of_the_run_from_its_approval() {
        let (run, version) = (run(), version());
        let kept = |policies: Policies, person: &str| policies.keeps(&run, &version, "wi_2", person);
        let own = |step: &str, work| {
            Some(Kept::OwnWork {
                step: step.to_owned(),
                work,
            })
        };
        assert_eq!(kept(ALL, "ANN@x.test"), Some(Kept::Initiator));
        assert_eq!(kept(ALL, "pat@x.test"), own("prepare_payment", WorkDone::CompletedTask));
        assert_eq!(
            kept(ALL, "old@x.test"),
            own("prepare_payment", WorkDone::CompletedTask),
            "an earlier round is work of the run"
        );
        assert_eq!(
            kept(ALL, "bob@x.test"),
            own("first_approval", WorkDone::DecidedApproval)
        );
        assert_eq!(kept(ALL, "cid@x.test"), own("collect", WorkDone::CompletedEscalation));
        assert_eq!(
            kept(ALL, "ops@x.test"),
            own("bank_details", WorkDone::SentEvent),
            "event data an operator supplied is work of the run"
        );
        assert_eq!(kept(ALL, "sam@x.test"), None, "the same approval's earlier round");
        assert_eq!(kept(ALL, "eve@x.test"), None);
        let four_eyes = Policies {
            four_eyes: true,
            ..Policies::default()
        };
        assert_eq!(kept(four_eyes, "ann@x.test"), None, "the initiator did no work");
        assert_eq!(
            kept(four_eyes, "pat@x.test"),
            own("prepare_payment", WorkDone::CompletedTask)
        );
        for person in ["ann@x.test", "pat@x.test", "bob@x.test", "cid@x.test"] {
            assert_eq!(kept(Policies::default(), person), None, "{person}: off keeps no one");
        }
        assert_eq!(ALL.keeps(&run, &version, "wi_9", "pat@x.test"), None, "no open item");
    }

    #[test]
    fn a_task_is_kept_only_from_the_initiator_and_each_reason_names_its_policy() {
        let (mut run, version) = (run(), version());
        let item = run.steps[4].work_item.take();
        run.steps[1].work_item = item;
        assert_eq!(ALL.keeps(&run, &version, "wi_2", "ann@x.test"), Some(Kept::Initiator));
        assert_eq!(
            ALL.keeps(&run, &version, "wi_2", "bob@x.test"),
            None,
            "a task is no approval"
        );

        let made = Kept::OwnWork {
            step: "prepare_payment".to_owned(),
            work: WorkDone::CompletedTask,
        };
        assert_eq!(
            made.said_to_them(),
            "you completed prepare_payment in this run; under the organization's four-eyes policy someone \
             else decides this approval"
        );
        assert_eq!(
            made.issue("pat@x.test"),
            "policy: fourEyes: pat@x.test completed prepare_payment in this run"
        );
        assert_eq!(
            Kept::Initiator.issue("ann@x.test"),
            "policy: initiatorDoesNotDecide: ann@x.test started this run"
        );
    }
}
