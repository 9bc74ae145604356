//! The check-1 profile's calls to the evaluator. They happen outside every run lock:
//! a write reads its run, learns from the engine that the step's check needs answers,
//! lets the lock go, asks here, then locks again and applies (see
//! docs/design/server.md, "Checks").

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use agentprocess_engine::{Checked, Material, ProcessVersion, Submitted, Transition};
use agentprocess_evaluator::{Evaluator, EvaluatorError};
use agentprocess_format::Question;
use agentprocess_store::StoreTx as _;
use agentprocess_views::RunView;

use crate::stored::Change;
use crate::stored::Loaded;
use crate::write::{Hold, Write};
use crate::{Caller, Error, Service, Tool, retry};

/// The model recorded on an `error` verdict when no evaluator is configured.
const NO_EVALUATOR: &str = "none";

/// The longest wait a provider's `Retry-After` gets before the one retry.
const LONGEST_RETRY_WAIT: Duration = Duration::from_secs(5);

/// The wait before the one retry when the provider names none.
const RETRY_WAIT: Duration = Duration::from_millis(200);

impl Service {
    /// Asks the evaluator every question of `material` at once, each on its own, each
    /// retried once; `answers: None` when any of them got no answer.
    pub(crate) async fn ask(&self, material: &Material) -> Checked {
        let seen = material.seen();
        let Some(evaluator) = &self.evaluator else {
            return Checked {
                model: NO_EVALUATOR.to_owned(),
                seen,
                truncated: material.truncated,
                answers: None,
            };
        };
        let asked = material
            .questions
            .iter()
            .map(|question| ask_twice(evaluator.as_ref(), material, question));
        let answers: Result<Vec<_>, EvaluatorError> = futures_util::future::join_all(asked).await.into_iter().collect();
        self.evaluator_answering.store(answers.is_ok(), Ordering::Relaxed);
        let answers = match answers {
            Ok(answers) => Some(answers),
            Err(error) => {
                tracing::warn!(error = %error.message, "the evaluator did not answer a check");
                None
            }
        };
        Checked {
            model: evaluator.model().to_owned(),
            seen,
            truncated: material.truncated,
            answers,
        }
    }

    /// Whether an evaluator is configured, so that processes with `check:` publish.
    pub fn evaluator_configured(&self) -> bool {
        self.evaluator.is_some()
    }

    /// Whether `describe` offers check-1: an evaluator is configured and its last
    /// probe or question was answered.
    pub fn check_offered(&self) -> bool {
        self.evaluator.is_some() && self.evaluator_answering.load(Ordering::Relaxed)
    }

    /// Asks the evaluator its probe question and notes whether it answered.
    pub async fn probe_evaluator(&self) -> Result<(), EvaluatorError> {
        let Some(evaluator) = &self.evaluator else {
            return Ok(());
        };
        let probed = evaluator.probe().await;
        self.evaluator_answering.store(probed.is_ok(), Ordering::Relaxed);
        probed
    }

    /// Probes the evaluator every `every`, so that `describe` drops check-1 while it
    /// does not answer and offers it again once it does.
    pub async fn watch_evaluator(self: Arc<Self>, every: Duration) {
        loop {
            tokio::time::sleep(every).await;
            if let Err(error) = self.probe_evaluator().await {
                tracing::warn!(error = %error.message, "the evaluator does not answer; check-1 is not offered");
            }
        }
    }
}

/// One question, retried once after a failure (after the provider's `Retry-After`, up
/// to a few seconds).
async fn ask_twice(
    evaluator: &dyn Evaluator,
    material: &Material,
    question: &Question,
) -> Result<agentprocess_engine::Answer, EvaluatorError> {
    match evaluator.answer(material, question).await {
        Ok(answer) => Ok(answer),
        Err(error) if error.unusable => Err(error),
        Err(error) => {
            let wait = error
                .retry_after
                .map_or(RETRY_WAIT, |wait| wait.min(LONGEST_RETRY_WAIT));
            tracing::info!(error = %error.message, "the evaluator did not answer; asking once more");
            tokio::time::sleep(wait).await;
            evaluator.answer(material, question).await
        }
    }
}

/// How many times one write asks the evaluator before it gives up on a run that keeps
/// changing under it (each change makes the earlier answers about other material).
pub(crate) const CHECK_ROUNDS: usize = 3;

/// What a `submit` or `decide` does next with the engine's outcome.
pub(crate) enum Concluded {
    /// The call's answer.
    Done(Box<RunView>),
    /// The lock is let go; ask the evaluator about this and try again.
    Ask(Box<Material>),
}

impl Service {
    /// Carries out `submitted`, made at `now`, in `tx`: an accepted write finishes (with `audited`, when
    /// given, in the audit log), a refusal keeps its handoff and is the error, and a
    /// check that needs answers rolls back at once, so that no lock is held while the
    /// evaluator thinks.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn conclude(
        &self,
        mut tx: Hold,
        caller: &Caller,
        write: &Write,
        tool: Tool,
        (run, version, now): (&Loaded, &ProcessVersion, jiff::Timestamp),
        submitted: Submitted,
        audited: Option<(
            agentprocess_auth::audit::AuditEvent,
            serde_json::Map<String, serde_json::Value>,
        )>,
    ) -> Result<Concluded, Error> {
        match submitted {
            Submitted::Accepted(transition) => {
                if let Some((kind, detail)) = audited {
                    self.audit(&mut tx, caller, kind, &run.id, detail);
                }
                let change = Change {
                    before: Some(run),
                    transition: &transition,
                    version,
                };
                let view = RunView::of(&transition.run, version, now);
                let view = self.finish(tx, caller, write, tool, Some(change), view).await?;
                Ok(Concluded::Done(Box::new(view)))
            }
            Submitted::NotAccepted { run: kept, error } => {
                let kept = Transition {
                    run: kept,
                    effects: Vec::new(),
                };
                let change = Change {
                    before: Some(run),
                    transition: &kept,
                    version,
                };
                self.save(tx, caller.org(), change).await?;
                Err(error.into())
            }
            Submitted::Check(material) => {
                if let Some(tx) = tx.into_tx() {
                    tx.rollback().await.map_err(retry)?;
                }
                Ok(Concluded::Ask(material))
            }
        }
    }
}

/// A write whose run kept changing while its check was being answered.
pub(crate) fn kept_changing() -> Error {
    retry("the run kept changing while the step's check was answered")
}
