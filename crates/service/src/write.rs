//! The path of every write: lock the run and read what its `requestId` recorded (a
//! replay answers from there), apply the engine, write the run, its index rows and
//! timers, record the result under the `requestId`, commit.
//!
//! The `requestId` row is written last, with the result. Its primary key decides a
//! race between two writes with one `requestId`: the second's insert waits for the
//! first to commit, finds the row, and the second rolls back everything it did and
//! answers with the first's result (or `conflict`, if its arguments differ). If the
//! first rolled back instead, the second's insert succeeds. Either way there is one
//! effect, and a failed call leaves nothing behind.

use std::sync::Arc;

use agentprocess_engine::{Code, Effect, ProcessVersion, ToolError, Transition};
use agentprocess_store::{DirectoryTx as _, NewRequest, RunRow, Store, StoreTx, StoredRequest, StoredRun, TimerRow};
use agentprocess_timers::Entry;
use agentprocess_views::ToolResult;
use serde_json::Value;
use tracing::Instrument as _;

use crate::ids::token_run;
use crate::index::run_row;
use crate::notify::Outgoing;
use crate::recorded::{Recorded, RunRowRef, Sealing};
use crate::stored::Change;
use crate::stored::Loaded;
use crate::{Caller, Error, Limit, Service, Tool, invalid, millis, not_found, retry};
use agentprocess_store::SqlTx;

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

    /// What is recorded of the call under its `requestId`: its arguments and who made
    /// it. The caller is part of the call, so a replay answers only the identity that
    /// made the write; another one reusing the `requestId` gets `conflict`, and never
    /// the first caller's result (a claim token among them).
    fn recorded_hash(&self, caller: &Caller) -> String {
        crate::index::value_hash(&serde_json::json!({
            "arguments": self.args_hash,
            "caller": caller.identity.id,
        }))
    }
}

/// A write to carry out, or the answer an earlier one with the same `requestId` stored.
pub(crate) enum Opened<T, R> {
    /// No result is recorded under the `requestId`: go on in this transaction.
    Fresh(T),
    /// A replay: the stored result, as presented to the caller.
    Replay(R),
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
    pub(crate) run: Loaded,
    pub(crate) version: Arc<ProcessVersion>,
}

/// How a tool names its run: by id, or by a claim token that leads to it.
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    Run(&'a str),
    Token(&'a str),
}

impl Service {
    /// Starts a write that names no run (`start_run`, `upload`). A replay is answered
    /// before any work.
    pub(crate) async fn open<R: ToolResult>(
        &self,
        caller: &Caller,
        write: &Write,
        tool: Tool,
        adds: (Limit, u64),
    ) -> Result<Opened<SqlTx, R>, Error> {
        if let Some(stored) = self
            .store
            .request(caller.org(), &write.request_id)
            .await
            .map_err(retry)?
        {
            return self.answer(caller, write, tool, stored).await.map(Opened::Replay);
        }
        // After the replay (a write already made is answered whatever the cap), before
        // the transaction (so the count does not wait on a second connection).
        let (limit, amount) = adds;
        self.within_cap(caller.org(), limit, amount).await?;
        Ok(Opened::Fresh(self.store.begin().await.map_err(retry)?))
    }

    /// Starts a write on the run the call names, by id or by claim token: locks it
    /// and, in the same round trip, reads what the `requestId` recorded.
    pub(crate) async fn open_run<R: ToolResult>(
        &self,
        caller: &Caller,
        write: &Write,
        tool: Tool,
        target: Target<'_>,
    ) -> Result<Opened<Locked<SqlTx>, R>, Error> {
        // A token of another shape, or naming no run of this organization, does not
        // verify: `invalid`, not `not_found`.
        let unverified = || {
            invalid(
                "the token does not verify",
                vec!["token: not a token this server gave".to_owned()],
            )
        };
        let run_id = match target {
            Target::Run(run_id) => run_id,
            Target::Token(token) => token_run(token).ok_or_else(unverified)?,
        };
        let mut tx = self.store.begin().await.map_err(retry)?;
        let locked = crate::observe::run_lock(run_id, tx.lock_run(caller.org(), run_id, Some(&write.request_id)))
            .await
            .map_err(retry)?;
        let Some((stored, recorded)) = locked else {
            return Err(match target {
                Target::Run(_) => no_run(run_id),
                Target::Token(_) => unverified(),
            });
        };
        if let Some(recorded) = recorded {
            // A replay needs no lock, and may read the run's pieces (on SQLite, through
            // the one connection this transaction holds).
            drop(tx);
            return self.answer(caller, write, tool, recorded).await.map(Opened::Replay);
        }
        let (run, version) = self.parse_run(&mut tx, caller.org(), &stored).await?;
        Ok(Opened::Fresh(Locked { tx, run, version }))
    }

    /// The run a locked row holds, and its process version.
    pub(crate) async fn parse_run(
        &self,
        tx: &mut SqlTx,
        org: &str,
        stored: &StoredRun,
    ) -> Result<(Loaded, Arc<ProcessVersion>), Error> {
        let run = crate::stored::load(stored).map_err(retry)?;
        let version = self
            .process_version_in(tx, org, &run.process, Some(run.version))
            .await?;
        Ok((run, version))
    }

    /// What an earlier write with this `requestId` answered: its result for the same
    /// tool and arguments, `conflict` otherwise.
    async fn answer<R: ToolResult>(
        &self,
        caller: &Caller,
        write: &Write,
        tool: Tool,
        recorded: StoredRequest,
    ) -> Result<R, Error> {
        if recorded.tool != tool.name() || recorded.args_hash != write.recorded_hash(caller) {
            return Err(Error::Refused(ToolError::new(
                Code::Conflict,
                format!(
                    "requestId {:?} was used before with other arguments, or by another caller",
                    write.request_id
                ),
                Vec::new(),
            )));
        }
        // The views read their numbers from the text, so they come back as sent.
        let mut result = match crate::recorded::parse(&recorded.result).map_err(retry)? {
            Recorded::Whole(result) => result,
            Recorded::ByReference { row, result } => {
                let run = self.store.run(caller.org(), &row.id).await.map_err(retry)?;
                let run = run.ok_or_else(|| retry("the run of a recorded result vanished"))?;
                crate::recorded::rebuild(row, result, run.pieces).map_err(retry)?
            }
        };
        crate::recorded::open_credential(&mut result, &self.sealing(caller.org(), write)).map_err(retry)?;
        Ok(self.present(caller.org(), result))
    }

    /// Writes a change for a write that records no result (a refused submission, a
    /// timer); returns what [`Service::committed`] needs to know after commit.
    pub(crate) async fn save(&self, tx: &mut SqlTx, org: &str, change: Change<'_>) -> Result<Written, Error> {
        let (row, _, deliveries) = self.prepare_change(tx, org, change).await?;
        let recorded = tx
            .put_run(org, &row, change.before.is_none(), None)
            .await
            .map_err(retry)?;
        Ok(Written { recorded, deliveries })
    }

    /// Writes the change's timers and notifications, and makes the run's row (new when
    /// `before` is `None`) with its index rows; returns the row, whether the run keeps
    /// pieces, and how many webhook deliveries the notifications made.
    async fn prepare_change(
        &self,
        tx: &mut SqlTx,
        org: &str,
        change: Change<'_>,
    ) -> Result<(RunRow, bool, u64), Error> {
        let deliveries = self.apply_effects(tx, org, change.transition).await?;
        let (row, apart) = run_row(
            change.before,
            &change.transition.run,
            change.version,
            &self.settings.engine,
        )
        .map_err(retry)?;
        Ok((row, apart, deliveries))
    }

    /// How the credential in the record of `write` is sealed.
    fn sealing<'a>(&'a self, org: &'a str, write: &'a Write) -> Sealing<'a> {
        Sealing::of(&self.settings.seal_key, org, &write.request_id)
    }

    /// The record of a write's result under its `requestId`.
    fn new_request<'a>(&self, write: &'a Write, tool: Tool, recorded_hash: &'a str, result: &'a str) -> NewRequest<'a> {
        NewRequest {
            request_id: &write.request_id,
            tool: tool.name(),
            args_hash: recorded_hash,
            result,
            at: millis(self.now()),
        }
    }

    /// Writes timer rows and notifications; returns how many webhook deliveries the
    /// notifications made.
    async fn apply_effects(&self, tx: &mut SqlTx, org: &str, transition: &Transition) -> Result<u64, Error> {
        let run = &transition.run;
        let mut deliveries = 0;
        // A timer (and a webhook delivery) continues the trace of the call that caused it.
        let trace_parent = agentprocess_telemetry::context::traceparent(&tracing::Span::current());
        for effect in &transition.effects {
            match effect {
                Effect::ScheduleTimer(timer) => {
                    let row = TimerRow {
                        org: org.to_owned(),
                        run_id: run.id.clone(),
                        timer_id: timer.id.clone(),
                        fire_at: millis(timer.at),
                        trace_parent: trace_parent.clone(),
                    };
                    tx.schedule_timer(&row).await.map_err(retry)?;
                }
                Effect::CancelTimer { id } => {
                    tx.remove_timer(org, &run.id, id).await.map_err(retry)?;
                }
                Effect::Notify(notification) => {
                    let mut outgoing = vec![Outgoing::new(org, run, notification, &self.settings.public_url)];
                    if let Some((step, work_item, person)) = crate::notify::person_of(run, notification)
                        && tx.identity_by_person(org, person).await.map_err(retry)?.is_none()
                    {
                        tracing::warn!(%org, run = %run.id, %step, %person, "a work item went to no member");
                        outgoing.push(Outgoing::unassignable(org, run, step, work_item, person));
                    }
                    for outgoing in &outgoing {
                        deliveries += tx
                            .add_notification(org, &outgoing.row(run, millis(self.now()), trace_parent.as_deref()))
                            .await
                            .map_err(retry)?;
                    }
                }
            }
        }
        Ok(deliveries)
    }

    /// Appends to the audit log in the write's transaction, so the entry and the change
    /// commit or roll back together.
    pub(crate) async fn audit(
        &self,
        tx: &mut SqlTx,
        caller: &Caller,
        kind: agentprocess_auth::audit::AuditEvent,
        run: &str,
        mut detail: serde_json::Map<String, Value>,
    ) -> Result<(), Error> {
        if let Some(at) = caller.signed_in_at
            && let Ok(at) = jiff::Timestamp::from_millisecond(at)
        {
            detail.insert("sessionSignedInAt".to_owned(), Value::String(at.to_string()));
        }
        let actor = agentprocess_auth::audit::Actor {
            id: caller.identity.id.clone(),
            address: caller.address.clone(),
        };
        let entry = agentprocess_auth::audit::entry(&actor, kind, Some(run), detail, millis(self.now()));
        tx.append_audit(caller.org(), &entry).await.map_err(retry)
    }

    /// After a change committed: counts it, mirrors its timers in the queue (a lost
    /// add is repaired by the reconciler, so this never holds up the caller) or wakes
    /// the in-process timer loop, and wakes the webhook loop if there is something to
    /// post.
    pub(crate) fn committed(&self, org: &str, change: &Change<'_>, written: Written) {
        crate::observe::committed(org, change);
        let transition = change.transition;
        let run = &transition.run.id;
        let entry = |timer_id: &str, fire_at: i64| Entry {
            org: org.to_owned(),
            run_id: run.clone(),
            timer_id: timer_id.to_owned(),
            fire_at,
        };
        let mut added = Vec::new();
        let mut removed = Vec::new();
        let mut notified = false;
        for effect in &transition.effects {
            match effect {
                Effect::ScheduleTimer(timer) => added.push(entry(&timer.id, millis(timer.at))),
                Effect::CancelTimer { id } => removed.push(entry(id, 0)),
                Effect::Notify(_) => notified = true,
            }
        }
        if written.deliveries > 0 {
            self.deliveries_wake.notify_one();
        }
        if notified {
            self.messages_wake.notify_one();
        }
        match &self.queue {
            Some(queue) if !added.is_empty() || !removed.is_empty() => {
                let queue = Arc::clone(queue);
                let span = agentprocess_telemetry::spans::follows_current("queue timers");
                tokio::spawn(
                    async move {
                        let pushed = match queue.add(&added).await {
                            Ok(()) => queue.remove(&removed).await,
                            Err(error) => Err(error),
                        };
                        if let Err(error) = pushed {
                            tracing::warn!(%error, "timer not mirrored in the queue; the reconciler will add it");
                        }
                    }
                    .instrument(span),
                );
            }
            Some(_) => {}
            // Only a new timer can make the timer loop's next wake-up earlier.
            None if !added.is_empty() => self.wake.notify_one(),
            None => {}
        }
    }

    /// Writes the change (if any), records the result under the `requestId`, commits,
    /// and presents the result. If another write with the same `requestId` committed
    /// first, this one is rolled back and answers as a replay of that one.
    pub(crate) async fn finish<R: ToolResult>(
        &self,
        mut tx: SqlTx,
        caller: &Caller,
        write: &Write,
        tool: Tool,
        change: Option<Change<'_>>,
        mut result: R,
    ) -> Result<R, Error> {
        let recorded_hash = write.recorded_hash(caller);
        let written = match change {
            Some(change) => {
                let (row, apart, deliveries) = self.prepare_change(&mut tx, caller.org(), change).await?;
                // The run data of a run that keeps pieces is recorded by reference.
                let reference = apart.then(|| RunRowRef {
                    id: row.id.clone(),
                    doc: row.doc.clone(),
                });
                let text = crate::recorded::text(&mut result, reference.as_ref(), &self.sealing(caller.org(), write))
                    .map_err(retry)?;
                let request = self.new_request(write, tool, &recorded_hash, &text);
                Written {
                    recorded: tx
                        .put_run(caller.org(), &row, change.before.is_none(), Some(&request))
                        .await
                        .map_err(retry)?,
                    deliveries,
                }
            }
            None => {
                let text =
                    crate::recorded::text(&mut result, None, &self.sealing(caller.org(), write)).map_err(retry)?;
                let request = self.new_request(write, tool, &recorded_hash, &text);
                Written {
                    recorded: tx.record_request(caller.org(), &request).await.map_err(retry)?,
                    deliveries: 0,
                }
            }
        };
        if !written.recorded {
            drop(tx);
            let recorded = self
                .store
                .request(caller.org(), &write.request_id)
                .await
                .map_err(retry)?;
            let recorded = recorded.ok_or_else(|| retry("a recorded requestId vanished"))?;
            return self.answer(caller, write, tool, recorded).await;
        }
        tx.commit().await.map_err(retry)?;
        if let Some(change) = change {
            self.committed(caller.org(), &change, written);
        }
        Ok(self.present(caller.org(), result))
    }
}

/// What writing a change did.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Written {
    /// Whether the request was recorded (`false`: another write with the same
    /// `requestId` committed first).
    pub(crate) recorded: bool,
    /// Webhook deliveries its notifications made.
    pub(crate) deliveries: u64,
}

pub(crate) fn no_run(run_id: &str) -> Error {
    not_found(format!("no run {run_id:?} in this organization"))
}
