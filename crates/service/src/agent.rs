//! The agent's loop: `claim`, `renew`, `submit`, `escalate`.

use agentprocess_blobs::Blobs;
use agentprocess_engine::{Submission, Submitted, Transition};
use agentprocess_store::{Store, StoreTx};
use agentprocess_views::{ClaimResult, RenewResult, RunView};

use crate::ids::RunIds;
use crate::write::{Change, Locked, Target, Write, fresh};
use crate::{Caller, Error, Service, Tool, retry};

impl<S: Store, B: Blobs> Service<S, B> {
    /// `claim`.
    pub async fn claim(
        &self,
        caller: &Caller,
        run_id: &str,
        step_id: &str,
        write: &Write,
    ) -> Result<ClaimResult, Error> {
        let Locked { tx, run, version } = fresh!(self.open_run(caller, write, Tool::Claim, Target::Run(run_id)).await?);
        let actor = caller.actor();
        let mut ids = RunIds { run: run.id.clone() };
        let mut context = self.context(self.now(), &actor, &mut ids);
        let claimed = agentprocess_engine::claim(&run, &version, step_id, &mut context)?;
        let change = Change {
            before: Some(&run),
            transition: &claimed.transition,
            version: &version,
        };
        let result = ClaimResult::of(&claimed, &version);
        self.finish(tx, caller, write, Tool::Claim, Some(change), result).await
    }

    /// `renew`.
    pub async fn renew(
        &self,
        caller: &Caller,
        token: &str,
        progress: Option<String>,
        write: &Write,
    ) -> Result<RenewResult, Error> {
        let Locked { tx, run, version } =
            fresh!(self.open_run(caller, write, Tool::Renew, Target::Token(token)).await?);
        let actor = caller.actor();
        let mut ids = RunIds { run: run.id.clone() };
        let mut context = self.context(self.now(), &actor, &mut ids);
        let (transition, renewed) = agentprocess_engine::renew(&run, token, progress, &mut context)?;
        let change = Change {
            before: Some(&run),
            transition: &transition,
            version: &version,
        };
        self.finish(tx, caller, write, Tool::Renew, Some(change), RenewResult::from(renewed))
            .await
    }

    /// `submit`. A submission that is not accepted keeps its issues in the step's
    /// handoff, and records nothing for its `requestId`.
    pub async fn submit(
        &self,
        caller: &Caller,
        token: &str,
        mut submission: Submission,
        write: &Write,
    ) -> Result<RunView, Error> {
        let Locked { mut tx, run, version } =
            fresh!(self.open_run(caller, write, Tool::Submit, Target::Token(token)).await?);
        let file_issues = self
            .verify_files(&mut tx, caller.org(), &mut submission.evidence)
            .await?;
        let now = self.now();
        let actor = caller.actor();
        let mut ids = RunIds { run: run.id.clone() };
        let mut context = self.context(now, &actor, &mut ids);
        match agentprocess_engine::submit(&run, &version, token, submission, file_issues, &mut context)? {
            Submitted::Accepted(transition) => {
                let change = Change {
                    before: Some(&run),
                    transition: &transition,
                    version: &version,
                };
                let view = RunView::of(&transition.run, &version, now);
                self.finish(tx, caller, write, Tool::Submit, Some(change), view).await
            }
            Submitted::NotAccepted {
                run: with_issues,
                error,
            } => {
                let kept = Transition {
                    run: with_issues,
                    effects: Vec::new(),
                };
                let change = Change {
                    before: Some(&run),
                    transition: &kept,
                    version: &version,
                };
                self.save(&mut tx, caller.org(), change).await?;
                tx.commit().await.map_err(retry)?;
                Err(error.into())
            }
        }
    }

    /// `escalate`.
    pub async fn escalate(&self, caller: &Caller, token: &str, note: &str, write: &Write) -> Result<RunView, Error> {
        let Locked { tx, run, version } = fresh!(
            self.open_run(caller, write, Tool::Escalate, Target::Token(token))
                .await?
        );
        let now = self.now();
        let actor = caller.actor();
        let mut ids = RunIds { run: run.id.clone() };
        let mut context = self.context(now, &actor, &mut ids);
        let transition = agentprocess_engine::escalate(&run, token, note, &mut context)?;
        let change = Change {
            before: Some(&run),
            transition: &transition,
            version: &version,
        };
        let view = RunView::of(&transition.run, &version, now);
        self.finish(tx, caller, write, Tool::Escalate, Some(change), view).await
    }
}
