//! The path of every write: reserve the `requestId`, lock the run, apply the engine,
//! persist, store the result, commit.

use std::sync::Arc;

use agentprocess_blobs::Blobs;
use agentprocess_engine::{Code, Effect, ProcessVersion, Run, ToolError, Transition};
use agentprocess_store::{RequestSlot, Store, StoreTx, TimerRow};
use serde_json::Value;

use crate::index::run_row;
use crate::{Caller, Service, millis, not_found, retry};

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
    /// A replay: the stored result.
    Replay(Value),
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

    /// What a replay returns: the stored result, with fresh file URLs.
    pub(crate) fn replayed(&self, caller: &Caller, stored: Value) -> Value {
        self.present(caller.org(), stored)
    }
}
