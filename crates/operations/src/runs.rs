//! Runs as the REST surface reads and cancels them: through the service, as an
//! identity whose credential an admin issued.

use agentprocess_auth::{Acting, Role};
use agentprocess_engine::Assignee;
use agentprocess_service::{Caller, ListRuns, Write};
use agentprocess_store::Directory;
use agentprocess_views::{Page, RunListItem, RunView};

use crate::{Error, Operations};

fn caller_of(acting: &Acting) -> Caller {
    Caller::issued(acting.identity.clone(), acting.address.clone())
}

impl Operations {
    /// `list_runs`.
    pub async fn runs(&self, acting: &Acting, list: ListRuns) -> Result<Page<RunListItem>, Error> {
        acting.require(Role::Member, false)?;
        Ok(self.service.list_runs(&caller_of(acting), list).await?)
    }

    /// `get_run`, with a warning for each open work item that waits for a person
    /// value no member of the organization has: nobody can decide it until someone
    /// with that email is invited.
    pub async fn run(&self, acting: &Acting, id: &str) -> Result<(RunView, Vec<String>), Error> {
        acting.require(Role::Member, false)?;
        let view = self.service.get_run(&caller_of(acting), id).await?;
        let mut warnings = Vec::new();
        for item in &view.work_items {
            let Assignee::Person(person) = &item.assigned_to else {
                continue;
            };
            let known = self
                .service
                .store()
                .identity_by_person(acting.org(), person)
                .await
                .map_err(agentprocess_service::Error::from)?;
            if known.is_none() {
                warnings.push(format!(
                    "work item {} of step {} waits for {person}, who is no member of the organization: \
                     invite them, or cancel the run",
                    item.id, item.step_id,
                ));
            }
        }
        Ok((view, warnings))
    }

    /// `cancel`, as the `write` it is (the service records it in the audit log, in
    /// the run's transaction).
    pub async fn cancel(&self, acting: &Acting, id: &str, reason: &str, write: &Write) -> Result<RunView, Error> {
        acting.require(Role::Operator, true)?;
        Ok(self.service.cancel(&caller_of(acting), id, reason, write).await?)
    }
}
