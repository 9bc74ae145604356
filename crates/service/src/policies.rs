//! Policies an organization may turn on beyond the protocol, which leaves segregation
//! of duties to the server: the person who started a run does not decide its work
//! items, and no person decides two approvals of one run (four eyes across steps).
//! While one is on, such a person is not offered those items (`get_work`, the inbox)
//! and a `decide` from them is `forbidden`, naming the policy.

use agentprocess_engine::{Run, StepRun};
use agentprocess_format::StepKind;
use agentprocess_store::{Messages as _, MessagesTx as _, Store as _, StoreTx as _};
use serde::{Deserialize, Serialize};

use crate::{Error, Service, millis, retry};

/// An organization's policies; every one off unless turned on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policies {
    /// The person who started a run does not decide its approvals and tasks.
    #[serde(default)]
    pub initiator_does_not_decide: bool,
    /// No person decides two approvals of one run.
    #[serde(default)]
    pub four_eyes: bool,
}

impl Policies {
    /// Why `person` may not decide the item on `step` of `run` under these policies,
    /// naming the policy; `None` when they may.
    pub fn refusal(&self, run: &Run, step: &StepRun, kind: &StepKind, person: &str) -> Option<String> {
        let same = |other: &str| other.eq_ignore_ascii_case(person);
        let approval_or_task = matches!(kind, StepKind::Approve(_) | StepKind::Task(_));
        if self.initiator_does_not_decide && approval_or_task && run.initiator.as_deref().is_some_and(same) {
            return Some(format!(
                "policy: initiatorDoesNotDecide: {person} started this run, and this organization lets no one \
                 decide a run they started"
            ));
        }
        if self.four_eyes && matches!(kind, StepKind::Approve(_)) {
            let decided = run.steps.iter().filter(|other| other.id != step.id).find(|other| {
                other
                    .record
                    .iter()
                    .chain(&other.history)
                    .any(|record| record.decision.is_some() && same(&record.by))
            });
            if let Some(other) = decided {
                return Some(format!(
                    "policy: fourEyes: {person} decided the approval {} of this run, and this organization lets no \
                     one decide two approvals of one run",
                    other.id
                ));
            }
        }
        None
    }
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
        version: &agentprocess_engine::ProcessVersion,
        work_item: &str,
        person: Option<&str>,
    ) -> Result<(), Error> {
        let Some(person) = person else {
            return Ok(());
        };
        let open = run
            .steps
            .iter()
            .zip(&version.process.document().steps)
            .find(|(step, _)| step.work_item.as_ref().is_some_and(|item| item.id == work_item));
        let Some((step, definition)) = open else {
            return Ok(());
        };
        match policies.refusal(run, step, &definition.kind, person) {
            Some(issue) => Err(agentprocess_engine::ToolError::new(
                agentprocess_engine::Code::Forbidden,
                "this organization's policy keeps you from deciding this work item: someone else decides it",
                vec![issue],
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
mod tests {
    use super::*;

    #[test]
    fn each_policy_names_itself_and_off_refuses_nothing() {
        let approve = StepKind::Approve("Approve.".to_owned());
        let task = StepKind::Task("Do.".to_owned());
        let mut first = StepRun::new("first");
        first.record = Some(agentprocess_engine::Record {
            decision: Some(agentprocess_engine::Decision::Approved),
            by: "bob@x.test".to_owned(),
            ..agentprocess_engine::Record::default()
        });
        let at = jiff::Timestamp::UNIX_EPOCH;
        let started_by_ann = Run {
            initiator: Some("ann@x.test".to_owned()),
            completions: 1,
            ..Run::new("r", ("p", 1), "ann@x.test", at, vec![first, StepRun::new("second")])
        };
        let second = &started_by_ann.steps[1];
        let all = Policies {
            initiator_does_not_decide: true,
            four_eyes: true,
        };
        let refused = all
            .refusal(&started_by_ann, second, &task, "ANN@x.test")
            .expect("refused");
        assert!(refused.starts_with("policy: initiatorDoesNotDecide"), "{refused}");
        let refused = all
            .refusal(&started_by_ann, second, &approve, "bob@x.test")
            .expect("refused");
        assert!(
            refused.starts_with("policy: fourEyes") && refused.contains("first"),
            "{refused}"
        );
        assert_eq!(
            all.refusal(&started_by_ann, second, &task, "bob@x.test"),
            None,
            "a task is no approval"
        );
        assert_eq!(all.refusal(&started_by_ann, second, &approve, "cid@x.test"), None);
        let off = Policies::default();
        assert_eq!(off.refusal(&started_by_ann, second, &approve, "ann@x.test"), None);
    }
}
