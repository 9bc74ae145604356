//! The path of every write: read the run and what its `requestId` recorded (a replay
//! answers from there), apply the engine, then write the run with its index rows,
//! timers, notifications, audit entries and the result under the `requestId`, at once.
//!
//! A write first reads its run without a lock and writes only if the run's revision is
//! still the one it read: on PostgreSQL one statement, its own transaction, so a write
//! costs one round trip after the read. If another write changed the run meanwhile,
//! nothing was written, and the write is made again ([`on_run`]): once more the same
//! way, then holding the run's lock from the start (`SELECT … FOR UPDATE`), under
//! which nothing can change it. A write that needs a transaction before it writes (one
//! citing uploads) takes the lock then, and goes on only if the run is still as read.
//!
//! The `requestId`'s record is written with the change. Its primary key decides a race
//! between two writes with one `requestId`: the second's insert waits for the first to
//! commit and fails, nothing of the second is written, and it answers with the first's
//! result (or `conflict`, if its arguments differ). If the first failed instead, the
//! second's insert succeeds. Either way there is one effect, and a failed call leaves
//! nothing behind.

use std::sync::Arc;

use agentprocess_engine::{Code, Effect, ProcessVersion, ToolError, Transition};
use agentprocess_store::{
    AuditRow, Directory as _, DirectoryTx as _, NewRequest, RunRow, RunWrite, Store, StoreTx, StoredRequest, StoredRun,
    TimerRow, WriteOutcome,
};
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

/// What a write holds between reading its run and writing it.
pub(crate) struct Hold {
    /// Its transaction, when it holds one (with the run's lock, when it names a run).
    tx: Option<SqlTx>,
    /// The run's id and the revision it was read at; `None` for a new run.
    run: Option<(String, i64)>,
    /// Entries for the audit log, written with the change.
    audit: Vec<AuditRow>,
}

impl Hold {
    fn new(tx: Option<SqlTx>, run: Option<(String, i64)>) -> Self {
        Self {
            tx,
            run,
            audit: Vec::new(),
        }
    }

    /// The transaction, once the write is done with it.
    pub(crate) fn into_tx(self) -> Option<SqlTx> {
        self.tx
    }
}

/// When a write on a run takes the run's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lock {
    /// Only if it needs a transaction before it writes (to cite uploads). Otherwise it
    /// writes at once, and only if the run is still as it was read.
    Later,
    /// Before reading the run, so that nothing changes it under the write.
    Now,
}

impl Lock {
    /// How a write whose run changed under it `changed` times takes the lock next.
    pub(crate) fn after(changed: u32) -> Self {
        if changed < 2 { Self::Later } else { Self::Now }
    }
}

/// A write whose run another write changed since it was read; it is made again.
#[derive(Debug, thiserror::Error)]
#[error("the run changed while the write was made")]
pub(crate) struct RunChanged;

fn run_changed() -> Error {
    Error::internal(RunChanged)
}

/// Whether a write failed only because its run changed since it was read.
pub(crate) fn is_run_changed(error: &Error) -> bool {
    matches!(error, Error::Internal(cause) if cause.is::<RunChanged>())
}

/// Makes a write on a run: on the run as read, without a lock; if another write
/// changed the run meanwhile, once more the same way (a claim that lost its step to
/// another agent then sees it claimed, in one read); if it changed again, a last time
/// holding the run's lock from the start, under which nothing can change it. The body
/// opens its run with `$lock`.
macro_rules! on_run {
    (|$lock:ident| $body:expr) => {{
        let mut changed = 0;
        loop {
            let $lock = $crate::write::Lock::after(changed);
            match async { $body }.await {
                Err(error) if $lock == $crate::write::Lock::Later && $crate::write::is_run_changed(&error) => {
                    changed += 1;
                }
                done => break done,
            }
        }
    }};
}
pub(crate) use on_run;

/// A write's run as read, and what it holds.
pub(crate) struct Locked {
    pub(crate) tx: Hold,
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
    ) -> Result<Opened<Hold, R>, Error> {
        if let Some(stored) = self
            .store
            .request(caller.org(), &write.request_id)
            .await
            .map_err(retry)?
        {
            return self.answer(caller, write, tool, stored).await.map(Opened::Replay);
        }
        // After the replay (a write already made is answered whatever the cap), before
        // the write (so the count does not wait on a second connection).
        let (limit, amount) = adds;
        self.within_cap(caller.org(), limit, amount).await?;
        Ok(Opened::Fresh(Hold::new(None, None)))
    }

    /// Starts a write on the run the call names, by id or by claim token: reads it
    /// (with its lock, for [`Lock::Now`]) and, in the same round trip, what the
    /// `requestId` recorded.
    pub(crate) async fn open_run<R: ToolResult>(
        &self,
        caller: &Caller,
        write: &Write,
        tool: Tool,
        target: Target<'_>,
        lock: Lock,
    ) -> Result<Opened<Locked, R>, Error> {
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
        let org = caller.org();
        let (tx, read) = match lock {
            Lock::Later => {
                let read = self.store.run_for_write(org, run_id, &write.request_id);
                (None, read.await.map_err(retry)?)
            }
            Lock::Now => {
                let mut tx = self.store.begin().await.map_err(retry)?;
                let locked = crate::observe::run_lock(run_id, tx.lock_run(org, run_id, Some(&write.request_id)));
                let read = locked.await.map_err(retry)?;
                (Some(tx), read)
            }
        };
        let Some((stored, recorded)) = read else {
            return Err(match target {
                Target::Run(_) => no_run(run_id),
                Target::Token(_) => unverified(),
            });
        };
        if let Some(recorded) = recorded {
            // A replay needs no lock, and may read the run's pieces (on SQLite, through
            // the one connection a transaction would hold).
            drop(tx);
            return self.answer(caller, write, tool, recorded).await.map(Opened::Replay);
        }
        let mut tx = Hold::new(tx, Some((stored.id.clone(), stored.revision)));
        let (run, version) = self.parse_run(&mut tx, org, &stored).await?;
        Ok(Opened::Fresh(Locked { tx, run, version }))
    }

    /// The run a stored row holds, and its process version.
    pub(crate) async fn parse_run(
        &self,
        hold: &mut Hold,
        org: &str,
        stored: &StoredRun,
    ) -> Result<(Loaded, Arc<ProcessVersion>), Error> {
        let run = crate::stored::load(stored).map_err(retry)?;
        let version = match &mut hold.tx {
            Some(tx) => {
                self.process_version_in(tx, org, &run.process, Some(run.version))
                    .await?
            }
            None => self.process_version(org, &run.process, Some(run.version)).await?,
        };
        Ok((run, version))
    }

    /// The write's transaction, begun now if it has none. A write on a run then takes
    /// the run's lock, and goes on only if the run is still as it was read.
    pub(crate) async fn transaction<'h>(&self, hold: &'h mut Hold, org: &str) -> Result<&'h mut SqlTx, Error> {
        if hold.tx.is_none() {
            let mut tx = self.store.begin().await.map_err(retry)?;
            if let Some((run_id, revision)) = &hold.run {
                let locked = crate::observe::run_lock(run_id, tx.lock_run(org, run_id, None));
                let locked = locked.await.map_err(retry)?;
                if locked.is_none_or(|(run, _)| run.revision != *revision) {
                    return Err(run_changed());
                }
            }
            hold.tx = Some(tx);
        }
        hold.tx
            .as_mut()
            .ok_or_else(|| retry("a transaction just begun is gone"))
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

    /// The answer of a write whose `requestId` another write recorded first.
    async fn replay<R: ToolResult>(&self, caller: &Caller, write: &Write, tool: Tool) -> Result<R, Error> {
        let recorded = self
            .store
            .request(caller.org(), &write.request_id)
            .await
            .map_err(retry)?;
        let recorded = recorded.ok_or_else(|| retry("a recorded requestId vanished"))?;
        self.answer(caller, write, tool, recorded).await
    }

    /// Writes a change that records no result (a refused submission) and commits it;
    /// returns what [`Service::committed`] needs to know after commit.
    pub(crate) async fn save(&self, hold: Hold, org: &str, change: Change<'_>) -> Result<Written, Error> {
        match self.write_change(hold, org, change, None).await? {
            WriteOutcome::Written { deliveries } => Ok(Written { deliveries }),
            WriteOutcome::RunChanged => Err(run_changed()),
            WriteOutcome::AlreadyRecorded => Err(retry("a write that records no requestId was taken for a replay")),
        }
    }

    /// Writes a timer's change in the scheduler's transaction, which holds the run's
    /// lock; the scheduler commits it.
    pub(crate) async fn save_in(
        &self,
        tx: &mut SqlTx,
        (org, revision): (&str, i64),
        change: Change<'_>,
    ) -> Result<Written, Error> {
        let (row, _) = self.run_row(&change)?;
        let beside = self.beside(Some(&mut *tx), org, change.transition).await?;
        let write = self.run_write(org, &row, Some(revision), change.transition, &beside);
        match tx.write_run(org, &write).await.map_err(retry)? {
            WriteOutcome::Written { deliveries } => Ok(Written { deliveries }),
            WriteOutcome::RunChanged => Err(retry("a run changed while its lock was held")),
            WriteOutcome::AlreadyRecorded => Err(retry("a timer's write was taken for a replay")),
        }
    }

    /// The row to write for a change, and whether the run keeps pieces.
    fn run_row(&self, change: &Change<'_>) -> Result<(RunRow, bool), Error> {
        run_row(
            change.before,
            &change.transition.run,
            change.version,
            &self.settings.engine,
        )
        .map_err(retry)
    }

    /// Writes `change` with what goes with it (timers, notifications, the audit
    /// entries, `request`): in the write's transaction, committed when written, or
    /// without one, at once.
    async fn write_change(
        &self,
        mut hold: Hold,
        org: &str,
        change: Change<'_>,
        request: Option<(&RunRow, NewRequest<'_>)>,
    ) -> Result<WriteOutcome, Error> {
        let own_row;
        let (row, request) = match request {
            Some((row, request)) => (row, Some(request)),
            None => {
                own_row = self.run_row(&change)?.0;
                (&own_row, None)
            }
        };
        let beside = self.beside(hold.tx.as_mut(), org, change.transition).await?;
        let revision = hold.run.as_ref().map(|(_, revision)| *revision);
        let mut write = self.run_write(org, row, revision, change.transition, &beside);
        write.audit = std::mem::take(&mut hold.audit);
        write.request = request;
        let Some(mut tx) = hold.tx else {
            return self.store.write_run(org, &write).await.map_err(retry);
        };
        let outcome = tx.write_run(org, &write).await.map_err(retry)?;
        if let WriteOutcome::Written { .. } = outcome {
            tx.commit().await.map_err(retry)?;
        }
        Ok(outcome)
    }

    /// What a change writes beside its run's row, gathered before the write is built
    /// (its notifications need the directory).
    async fn beside(&self, tx: Option<&mut SqlTx>, org: &str, transition: &Transition) -> Result<Beside, Error> {
        Ok(Beside {
            outgoing: self.outgoing(tx, org, transition).await?,
            trace_parent: trace_parent(),
        })
    }

    /// The store's write of a change: the run's row and the change's timers and
    /// notifications. `revision`: the one the run was read at (`None`: a new run).
    fn run_write<'a>(
        &self,
        org: &str,
        row: &'a RunRow,
        revision: Option<i64>,
        transition: &'a Transition,
        beside: &'a Beside,
    ) -> RunWrite<'a> {
        let (outgoing, trace_parent) = (&beside.outgoing, beside.trace_parent.as_deref());
        let run = &transition.run;
        let mut write = RunWrite::new(row, revision);
        for effect in &transition.effects {
            match effect {
                Effect::ScheduleTimer(timer) => write.schedule(TimerRow {
                    org: org.to_owned(),
                    run_id: run.id.clone(),
                    timer_id: timer.id.clone(),
                    fire_at: millis(timer.at),
                    trace_parent: trace_parent.map(str::to_owned),
                }),
                Effect::CancelTimer { id } => write.cancel(id),
                Effect::Notify(_) => {}
            }
        }
        let now = millis(self.now());
        write.notifications = outgoing
            .iter()
            .map(|outgoing| outgoing.row(run, now, trace_parent))
            .collect();
        write
    }

    /// The notifications of a transition, each with the notice that its work item
    /// went to no member when it went to a person who is not one.
    async fn outgoing(
        &self,
        mut tx: Option<&mut SqlTx>,
        org: &str,
        transition: &Transition,
    ) -> Result<Vec<Outgoing>, Error> {
        let run = &transition.run;
        let mut outgoing = Vec::new();
        for effect in &transition.effects {
            let Effect::Notify(notification) = effect else {
                continue;
            };
            outgoing.push(Outgoing::new(org, run, notification, &self.settings.public_url));
            if let Some((step, work_item, person)) = crate::notify::person_of(run, notification) {
                let member = match tx.as_deref_mut() {
                    Some(tx) => tx.identity_by_person(org, person).await,
                    None => self.store.identity_by_person(org, person).await,
                };
                if member.map_err(retry)?.is_none() {
                    tracing::warn!(%org, run = %run.id, %step, %person, "a work item went to no member");
                    outgoing.push(Outgoing::unassignable(org, run, step, work_item, person));
                }
            }
        }
        Ok(outgoing)
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

    /// An entry for the audit log, written with the change (so they commit or fail
    /// together).
    pub(crate) fn audit(
        &self,
        hold: &mut Hold,
        caller: &Caller,
        kind: agentprocess_auth::audit::AuditEvent,
        run: &str,
        mut detail: serde_json::Map<String, Value>,
    ) {
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
        hold.audit.push(entry);
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

    /// Writes the change (if any) with the result recorded under the `requestId`,
    /// commits, and presents the result. If another write with the same `requestId`
    /// was recorded first, nothing is written and this one answers as a replay of
    /// that one.
    pub(crate) async fn finish<R: ToolResult>(
        &self,
        mut hold: Hold,
        caller: &Caller,
        write: &Write,
        tool: Tool,
        change: Option<Change<'_>>,
        mut result: R,
    ) -> Result<R, Error> {
        let org = caller.org();
        let recorded_hash = write.recorded_hash(caller);
        let outcome = match change {
            Some(change) => {
                let (row, apart) = self.run_row(&change)?;
                // The run data of a run that keeps pieces is recorded by reference.
                let reference = apart.then(|| RunRowRef {
                    id: row.id.clone(),
                    doc: row.doc.clone(),
                });
                let text =
                    crate::recorded::text(&mut result, reference.as_ref(), &self.sealing(org, write)).map_err(retry)?;
                let request = self.new_request(write, tool, &recorded_hash, &text);
                self.write_change(hold, org, change, Some((&row, request))).await?
            }
            None => {
                let text = crate::recorded::text(&mut result, None, &self.sealing(org, write)).map_err(retry)?;
                let request = self.new_request(write, tool, &recorded_hash, &text);
                let tx = self.transaction(&mut hold, org).await?;
                let recorded = tx.record_request(org, &request).await.map_err(retry)?;
                match hold.into_tx() {
                    Some(tx) if recorded => {
                        tx.commit().await.map_err(retry)?;
                        WriteOutcome::Written { deliveries: 0 }
                    }
                    _ => WriteOutcome::AlreadyRecorded,
                }
            }
        };
        match outcome {
            WriteOutcome::Written { deliveries } => {
                if let Some(change) = change {
                    self.committed(org, &change, Written { deliveries });
                }
                Ok(self.present(org, result))
            }
            WriteOutcome::AlreadyRecorded => self.replay(caller, write, tool).await,
            WriteOutcome::RunChanged => Err(run_changed()),
        }
    }
}

/// The notifications of a change and the trace its timers and deliveries continue.
struct Beside {
    outgoing: Vec<Outgoing>,
    trace_parent: Option<String>,
}

/// The `traceparent` of the current call: a timer (and a webhook delivery) continues
/// the trace of the call that caused it.
fn trace_parent() -> Option<String> {
    agentprocess_telemetry::context::traceparent(&tracing::Span::current())
}

/// What writing a change did.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Written {
    /// Webhook deliveries its notifications made.
    pub(crate) deliveries: u64,
}

pub(crate) fn no_run(run_id: &str) -> Error {
    not_found(format!("no run {run_id:?} in this organization"))
}
