//! The path of every write: reserve the `requestId`, lock the run, apply the engine,
//! persist, store the result, commit.

use std::sync::Arc;

use agentprocess_blobs::Blobs;
use agentprocess_engine::{Code, Effect, ProcessVersion, Run, ToolError, Transition};
use agentprocess_store::{RequestSlot, Store, StoreTx, TimerRow};
use serde_json::Value;

use crate::ids::token_run;
use crate::index::run_row;
use crate::{Caller, Service, invalid, millis, not_found, retry};

/// What makes a call a write: its `requestId` and the hash of its other arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// The client's `requestId`, unique within the organization.
    pub request_id: String,
    /// SHA-256 of the RFC 8785 JSON of the arguments without `requestId`.
    pub args_hash: String,
}

impl Write {
    /// The write for a call's arguments (`requestId` included; it is left out of the hash).
    pub fn from_arguments(request_id: impl Into<String>, arguments: &serde_json::Map<String, Value>) -> Self {
        let mut rest = arguments.clone();
        rest.remove("requestId");
        Self {
            request_id: request_id.into(),
            args_hash: crate::index::value_hash(&Value::Object(rest)),
        }
    }
}

/// A reserved write, or the answer an earlier one stored.
pub(crate) enum Opened<T> {
    /// First use of the `requestId`: go on in this transaction.
    Fresh(T),
    /// A replay: the stored result, as presented to the caller.
    Replay(Value),
}

/// The transaction of a fresh write, or returns the replayed result from the
/// enclosing tool function.
macro_rules! fresh {
    ($opened:expr) => {
        match $opened {
            $crate::write::Opened::Fresh(fresh) => fresh,
            $crate::write::Opened::Replay(result) => return Ok(result),
        }
    };
}
pub(crate) use fresh;

/// A write's transaction holding its run's lock.
pub(crate) struct Locked<T> {
    pub(crate) tx: T,
    pub(crate) run: Run,
    pub(crate) version: Arc<ProcessVersion>,
}

/// How a tool names its run: by id, or by a claim token that leads to it.
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    Run(&'a str),
    Token(&'a str),
}

impl<S: Store, B: Blobs> Service<S, B> {
    /// Starts the transaction of a write and reserves its `requestId`.
    pub(crate) async fn open(&self, caller: &Caller, write: &Write, tool: &str) -> Result<Opened<S::Tx>, ToolError> {
        let mut tx = self.store.begin().await.map_err(retry)?;
        let slot = tx
            .reserve_request(
                caller.org(),
                &write.request_id,
                tool,
                &write.args_hash,
                millis(self.now()),
            )
            .await
            .map_err(retry)?;
        match slot {
            RequestSlot::New => Ok(Opened::Fresh(tx)),
            RequestSlot::Replay(stored) => serde_json::from_str(&stored).map(Opened::Replay).map_err(retry),
            RequestSlot::Conflict => Err(ToolError::new(
                Code::Conflict,
                format!("requestId {:?} was used before with other arguments", write.request_id),
                Vec::new(),
            )),
        }
    }

    /// Reserves the `requestId` and locks the run the call names.
    pub(crate) async fn open_run(
        &self,
        caller: &Caller,
        write: &Write,
        tool: &str,
        target: Target<'_>,
    ) -> Result<Opened<Locked<S::Tx>>, ToolError> {
        let mut tx = match self.open(caller, write, tool).await? {
            Opened::Fresh(tx) => tx,
            Opened::Replay(result) => return Ok(Opened::Replay(result)),
        };
        let (run, version) = match target {
            Target::Run(run_id) => self.lock(&mut tx, caller.org(), run_id).await?,
            Target::Token(token) => self.lock_by_token(&mut tx, caller.org(), token).await?,
        };
        Ok(Opened::Fresh(Locked { tx, run, version }))
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

    /// Locks a run of the caller's organization and finds its version.
    pub(crate) async fn lock(
        &self,
        tx: &mut S::Tx,
        org: &str,
        run_id: &str,
    ) -> Result<(Run, Arc<ProcessVersion>), ToolError> {
        let stored = tx.lock_run(org, run_id).await.map_err(retry)?;
        let stored = stored.ok_or_else(|| not_found(format!("no run {run_id:?} in this organization")))?;
        let run: Run = serde_json::from_str(&stored.doc).map_err(retry)?;
        let version = self
            .process_version_in(tx, org, &run.process, Some(run.version))
            .await?;
        Ok((run, version))
    }

    /// Writes the run, its index rows and its timers.
    pub(crate) async fn save(
        &self,
        tx: &mut S::Tx,
        org: &str,
        transition: &Transition,
        version: &ProcessVersion,
        new: bool,
    ) -> Result<(), ToolError> {
        let run = &transition.run;
        let row = run_row(run, version).map_err(retry)?;
        tx.put_run(org, &row, new).await.map_err(retry)?;
        for effect in &transition.effects {
            match effect {
                Effect::ScheduleTimer(timer) => {
                    let row = TimerRow {
                        org: org.to_owned(),
                        run_id: run.id.clone(),
                        timer_id: timer.id.clone(),
                        fire_at: millis(timer.at),
                    };
                    tx.schedule_timer(&row).await.map_err(retry)?;
                }
                Effect::CancelTimer { id } => {
                    tx.remove_timer(org, &run.id, id).await.map_err(retry)?;
                }
                // Delivery of notifications (webhooks) is the scheduler's; until it
                // exists they are logged.
                Effect::Notify(notification) => {
                    tracing::info!(org, run = %run.id, ?notification, "notification");
                }
            }
        }
        Ok(())
    }

    /// Stores the result for the `requestId`, commits, and presents the result.
    pub(crate) async fn finish(
        &self,
        mut tx: S::Tx,
        caller: &Caller,
        write: &Write,
        result: Value,
    ) -> Result<Value, ToolError> {
        let text = serde_json::to_string(&result).map_err(retry)?;
        tx.complete_request(caller.org(), &write.request_id, &text)
            .await
            .map_err(retry)?;
        tx.commit().await.map_err(retry)?;
        self.wake.notify_one();
        Ok(self.present(caller.org(), result))
    }
}
