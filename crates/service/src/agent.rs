//! The agent's loop: `claim`, `renew`, `submit`, `escalate`.

use std::sync::Arc;

use agentprocess_blobs::Blobs;
use agentprocess_engine::{Code, ProcessVersion, Run, Submission, Submitted, ToolError, Transition, run_view};
use agentprocess_store::{Store, StoreTx};
use serde_json::Value;

use crate::ids::{RunIds, token_run};
use crate::write::{Opened, Write};
use crate::{Caller, Service, invalid, retry};

impl<S: Store, B: Blobs> Service<S, B> {
    /// `claim`.
    pub async fn claim(&self, caller: &Caller, run_id: &str, step_id: &str, write: &Write) -> Result<Value, ToolError> {
        let mut tx = match self.open(caller, write, "claim").await? {
            Opened::Fresh(tx) => tx,
            Opened::Replay(stored) => return Ok(self.replayed(caller, stored)),
        };
        let (run, version) = self.lock(&mut tx, caller.org(), run_id).await?;
        let actor = caller.actor();
        let mut ids = RunIds { run: run.id.clone() };
        let mut context = self.context(self.now(), &actor, &mut ids);
        let claimed = agentprocess_engine::claim(&run, &version, step_id, &mut context)?;
        self.save(&mut tx, caller.org(), &claimed.transition, &version, false)
            .await?;
        self.finish(tx, caller, write, claimed.result).await
    }

    /// `renew`.
    pub async fn renew(
        &self,
        caller: &Caller,
        token: &str,
        progress: Option<String>,
        write: &Write,
    ) -> Result<Value, ToolError> {
        let mut tx = match self.open(caller, write, "renew").await? {
            Opened::Fresh(tx) => tx,
            Opened::Replay(stored) => return Ok(stored),
        };
        let (run, version) = self.lock_by_token(&mut tx, caller.org(), token).await?;
        let actor = caller.actor();
        let mut ids = RunIds { run: run.id.clone() };
        let mut context = self.context(self.now(), &actor, &mut ids);
        let (transition, result) = agentprocess_engine::renew(&run, token, progress, &mut context)?;
        self.save(&mut tx, caller.org(), &transition, &version, false).await?;
        self.finish(tx, caller, write, result).await
    }

    /// `submit`. A submission that is not accepted keeps its issues in the step's
    /// handoff, and records nothing for its `requestId`.
    pub async fn submit(
        &self,
        caller: &Caller,
        token: &str,
        mut submission: Submission,
        write: &Write,
    ) -> Result<Value, ToolError> {
        let mut tx = match self.open(caller, write, "submit").await? {
            Opened::Fresh(tx) => tx,
            Opened::Replay(stored) => return Ok(self.replayed(caller, stored)),
        };
        let (run, version) = self.lock_by_token(&mut tx, caller.org(), token).await?;
        let file_issues = self
            .verify_files(&mut tx, caller.org(), &mut submission.evidence)
            .await?;
        let now = self.now();
        let actor = caller.actor();
        let mut ids = RunIds { run: run.id.clone() };
        let mut context = self.context(now, &actor, &mut ids);
        match agentprocess_engine::submit(&run, &version, token, submission, file_issues, &mut context)? {
            Submitted::Accepted(transition) => {
                self.save(&mut tx, caller.org(), &transition, &version, false).await?;
                let view = run_view(&transition.run, &version, now);
                self.finish(tx, caller, write, view).await
            }
            Submitted::NotAccepted { run, error } => {
                let kept = Transition {
                    run,
                    effects: Vec::new(),
                };
                self.save(&mut tx, caller.org(), &kept, &version, false).await?;
                tx.release_request(caller.org(), &write.request_id)
                    .await
                    .map_err(retry)?;
                tx.commit().await.map_err(retry)?;
                Err(error)
            }
        }
    }

    /// `escalate`.
    pub async fn escalate(&self, caller: &Caller, token: &str, note: &str, write: &Write) -> Result<Value, ToolError> {
        let mut tx = match self.open(caller, write, "escalate").await? {
            Opened::Fresh(tx) => tx,
            Opened::Replay(stored) => return Ok(self.replayed(caller, stored)),
        };
        let (run, version) = self.lock_by_token(&mut tx, caller.org(), token).await?;
        let now = self.now();
        let actor = caller.actor();
        let mut ids = RunIds { run: run.id.clone() };
        let mut context = self.context(now, &actor, &mut ids);
        let transition = agentprocess_engine::escalate(&run, token, note, &mut context)?;
        self.save(&mut tx, caller.org(), &transition, &version, false).await?;
        let view = run_view(&transition.run, &version, now);
        self.finish(tx, caller, write, view).await
    }

    /// Locks the run a claim token names. A token of another shape, or naming no run
    /// of this organization, does not verify: `invalid`.
    async fn lock_by_token(
        &self,
        tx: &mut S::Tx,
        org: &str,
        token: &str,
    ) -> Result<(Run, Arc<ProcessVersion>), ToolError> {
        let unverified = || {
            invalid(
                "the token does not verify",
                vec!["token: not a token this server gave".to_owned()],
            )
        };
        let run_id = token_run(token).ok_or_else(unverified)?;
        match self.lock(tx, org, run_id).await {
            Err(error) if error.code == Code::NotFound => Err(unverified()),
            other => other,
        }
    }
}
