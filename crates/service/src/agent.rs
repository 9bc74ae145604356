//! The agent's loop: `claim`, `renew`, `submit`, `escalate`.

use agentprocess_engine::Submission;
use agentprocess_views::{ClaimResult, RenewResult, RunView};

use crate::check::{CHECK_ROUNDS, Concluded, kept_changing};
use crate::ids::RunIds;
use crate::stored::Change;
use crate::write::{Locked, Opened, Target, Write, fresh, on_run};
use crate::{Caller, Error, Service, Tool};

impl Service {
    /// `claim`.
    pub async fn claim(
        &self,
        caller: &Caller,
        run_id: &str,
        step_id: &str,
        write: &Write,
    ) -> Result<ClaimResult, Error> {
        on_run!(|lock| {
            let Locked { tx, run, version } = fresh!(
                self.open_run(caller, write, Tool::Claim, Target::Run(run_id), lock)
                    .await?
            );
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
        })
    }

    /// `renew`.
    pub async fn renew(
        &self,
        caller: &Caller,
        token: &str,
        progress: Option<String>,
        write: &Write,
    ) -> Result<RenewResult, Error> {
        on_run!(|lock| {
            let Locked { tx, run, version } = fresh!(
                self.open_run(caller, write, Tool::Renew, Target::Token(token), lock)
                    .await?
            );
            let actor = caller.actor();
            let mut ids = RunIds { run: run.id.clone() };
            let mut context = self.context(self.now(), &actor, &mut ids);
            let (transition, renewed) = agentprocess_engine::renew(&run, token, progress.clone(), &mut context)?;
            let change = Change {
                before: Some(&run),
                transition: &transition,
                version: &version,
            };
            self.finish(tx, caller, write, Tool::Renew, Some(change), RenewResult::from(renewed))
                .await
        })
    }

    /// `submit`. A submission that is not accepted keeps its issues in the step's
    /// handoff, and records nothing for its `requestId`. On a step with a check, the
    /// evaluator is asked with no lock held, and the answers applied under a new one
    /// if the run still shows the same material.
    pub async fn submit(
        &self,
        caller: &Caller,
        token: &str,
        submission: Submission,
        write: &Write,
    ) -> Result<RunView, Error> {
        let mut checked = None;
        for _ in 0..CHECK_ROUNDS {
            let concluded = on_run!(|lock| {
                let opened = self
                    .open_run(caller, write, Tool::Submit, Target::Token(token), lock)
                    .await?;
                let Locked { mut tx, run, version } = match opened {
                    Opened::Fresh(locked) => locked,
                    Opened::Replay(view) => return Ok(Concluded::Done(Box::new(view))),
                };
                let mut submission = submission.clone();
                let file_issues = self
                    .verify_files(&mut tx, caller.org(), &mut submission.evidence)
                    .await?;
                let now = self.now();
                let actor = caller.actor();
                let mut ids = RunIds { run: run.id.clone() };
                let mut context = self.context(now, &actor, &mut ids);
                let submitted = agentprocess_engine::submit(
                    &run,
                    &version,
                    token,
                    submission,
                    file_issues,
                    checked.as_ref(),
                    &mut context,
                )?;
                self.conclude(tx, caller, write, Tool::Submit, (&run, &version, now), submitted, None)
                    .await
            })?;
            match concluded {
                Concluded::Done(view) => return Ok(*view),
                Concluded::Ask(material) => checked = Some(self.ask(&material).await),
            }
        }
        Err(kept_changing())
    }

    /// `escalate`.
    pub async fn escalate(&self, caller: &Caller, token: &str, note: &str, write: &Write) -> Result<RunView, Error> {
        on_run!(|lock| {
            let Locked { tx, run, version } = fresh!(
                self.open_run(caller, write, Tool::Escalate, Target::Token(token), lock)
                    .await?
            );
            let now = self.now();
            let actor = caller.actor();
            let mut ids = RunIds { run: run.id.clone() };
            let mut context = self.context(now, &actor, &mut ids);
            let transition = agentprocess_engine::escalate(&run, &version, token, note, &mut context)?;
            let change = Change {
                before: Some(&run),
                transition: &transition,
                version: &version,
            };
            let view = RunView::of(&transition.run, &version, now);
            self.finish(tx, caller, write, Tool::Escalate, Some(change), view).await
        })
    }
}
