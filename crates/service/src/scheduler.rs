//! The scheduler: fires timers as they fall due, from a timer queue (Redis, for any
//! number of scheduler processes) or straight from the timer rows (the embedded mode
//! and an API process without a queue). The same firing serves both.
//!
//! A timer is applied by removing its row under the run's lock, in the transaction
//! that applies it: whoever removes the row applies the timer, so a timer taken
//! twice (two schedulers, a queue entry restored after it fired, a scheduler that
//! died after committing but before removing the entry) has one effect. A queue
//! entry whose row is gone, or not due yet because the timer moved, does nothing.
//!
//! The reconciler re-adds to the queue every row that is due and unfired, so a
//! flushed, restarted or unreachable queue delays a timer by at most the reconcile
//! interval and never loses it.

use std::sync::Arc;
use std::time::Duration;

use agentprocess_engine::timer_fired;
use agentprocess_store::{Store, StoreTx, TimerRow};
use agentprocess_timers::{Entry, TimerQueue};
use futures_util::StreamExt as _;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::clock::pause;
use crate::ids::RunIds;
use crate::stored::Change;
use crate::{Error, Service, millis, retry};

/// How the scheduler paces itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerSettings {
    /// Timers taken per pass.
    pub batch: usize,
    /// Transactions applying timers at once.
    pub concurrency: usize,
    /// Timers applied in one transaction (each under its run's lock), to spare a
    /// commit per timer.
    pub per_transaction: usize,
    /// How long a taken queue entry stays hidden from other schedulers; if this one
    /// dies first, the entry is due again then.
    pub hold: Duration,
    /// The longest pause between passes when nothing is due.
    pub poll: Duration,
    /// How often the reconciler re-adds unfired rows to the queue; the most a lost
    /// queue entry delays its timer.
    pub reconcile: Duration,
}

impl Default for SchedulerSettings {
    fn default() -> Self {
        Self {
            batch: 256,
            concurrency: 8,
            per_transaction: 8,
            hold: Duration::from_secs(10),
            poll: Duration::from_millis(100),
            reconcile: Duration::from_secs(10),
        }
    }
}

/// What became of one taken timer.
enum Fired {
    /// Applied, this many milliseconds after it was due.
    Applied(i64),
    /// Nothing to do: fired or cancelled already, or moved later.
    Stale,
}

impl Service {
    /// Fires timers until `stop` is cancelled; a pass under way finishes first. From
    /// the timer queue when the service has one, else from the rows.
    pub async fn run_scheduler(self: Arc<Self>, settings: SchedulerSettings, stop: CancellationToken) {
        loop {
            let pass = self.bounded(self.scheduler_pass(&settings)).await;
            let pause = match pass.unwrap_or_else(|| Err(self.past_deadline())) {
                Ok(taken) if taken >= settings.batch => Duration::ZERO,
                Ok(_) => self.until_next_timer(&settings).await,
                Err(error) => after_failure("timer pass", &error, settings.poll),
            };
            if !rest(&stop, &self.wake, pause).await {
                return;
            }
        }
    }

    /// Re-adds unfired timer rows to the queue every `settings.reconcile` until `stop`
    /// is cancelled. Does nothing without a queue.
    pub async fn run_reconciler(self: Arc<Self>, settings: SchedulerSettings, stop: CancellationToken) {
        let Some(queue) = self.queue.clone() else {
            return;
        };
        loop {
            let pass = self.bounded(self.reconcile(queue.as_ref())).await;
            match pass.unwrap_or_else(|| Err(self.past_deadline())) {
                Ok(0) => {}
                Ok(restored) => tracing::info!(restored, "reconciler re-added timers missing from the queue"),
                Err(error) => tracing::warn!(%error, "reconciler pass failed; trying again"),
            }
            if !pause(&stop, settings.reconcile).await {
                return;
            }
        }
    }

    /// One reconciler pass: every row due by now, re-added where the queue lacks it
    /// (rows due later are re-added by a later pass, at most one interval late).
    /// Returns how many were missing.
    pub async fn reconcile(&self, queue: &dyn TimerQueue) -> Result<u64, String> {
        const PAGE: u32 = 1_000;
        let horizon = millis(self.now());
        let mut after: Option<TimerRow> = None;
        let mut restored = 0;
        loop {
            let rows = self
                .store
                .timers_before(horizon, after.as_ref(), PAGE)
                .await
                .map_err(|error| error.to_string())?;
            let entries: Vec<Entry> = rows.iter().map(entry_of).collect();
            restored += queue.restore(&entries).await.map_err(|error| error.to_string())?;
            if rows.len() < PAGE as usize {
                return Ok(restored);
            }
            after = rows.last().cloned();
        }
    }

    /// Takes what is due and fires it; returns how many were taken.
    async fn scheduler_pass(&self, settings: &SchedulerSettings) -> Result<usize, String> {
        let now = millis(self.now());
        let taken = match &self.queue {
            Some(queue) => {
                let hold_until = now.saturating_add(duration_millis(settings.hold));
                queue
                    .take_due(now, settings.batch, hold_until)
                    .await
                    .map_err(|error| error.to_string())?
            }
            None => {
                let limit = u32::try_from(settings.batch).unwrap_or(u32::MAX);
                let rows = self
                    .store
                    .timers_before(now, None, limit)
                    .await
                    .map_err(|error| error.to_string())?;
                rows.iter().map(entry_of).collect()
            }
        };
        if taken.is_empty() {
            return Ok(0);
        }
        let span = tracing::info_span!("scheduler pass", agentprocess.timers = taken.len());
        self.fire_taken(taken, settings).instrument(span).await
    }

    /// Fires timers taken from the queue or the rows; returns how many there were.
    async fn fire_taken(&self, mut taken: Vec<Entry>, settings: &SchedulerSettings) -> Result<usize, String> {
        // One lock order for every transaction that holds several runs.
        taken.sort_by(|a, b| (&a.org, &a.run_id, &a.timer_id).cmp(&(&b.org, &b.run_id, &b.timer_id)));
        let chunks: Vec<Vec<Entry>> = taken
            .chunks(settings.per_transaction.max(1))
            .map(<[Entry]>::to_vec)
            .collect();
        let results: Vec<(Entry, Result<Fired, Error>)> = futures_util::stream::iter(chunks)
            .map(|chunk| self.fire_chunk(chunk))
            .buffer_unordered(settings.concurrency.max(1))
            .flat_map(futures_util::stream::iter)
            .collect()
            .await;
        let count = results.len();
        let mut done = Vec::with_capacity(count);
        for (entry, fired) in results {
            match fired {
                Ok(Fired::Applied(late)) => {
                    crate::observe::timer_fired(&entry.timer_id, late);
                    tracing::debug!(org = %entry.org, run = %entry.run_id, timer = %entry.timer_id, late_ms = late, "timer fired");
                    done.push(entry);
                }
                Ok(Fired::Stale) => done.push(entry),
                // Left in the queue: it is due again when its hold ends.
                Err(error) => {
                    let error = agentprocess_auth::oidc::chain(&error);
                    tracing::warn!(org = %entry.org, run = %entry.run_id, timer = %entry.timer_id, %error, "timer not applied");
                }
            }
        }
        if let Some(queue) = &self.queue
            && let Err(error) = queue.remove(&done).await
        {
            // The entries come back when their hold ends, and then find no row.
            tracing::warn!(%error, "fired timers not removed from the queue");
        }
        Ok(count)
    }

    async fn until_next_timer(&self, settings: &SchedulerSettings) -> Duration {
        let next = match &self.queue {
            Some(queue) => queue.next_due().await.ok().flatten(),
            None => self.store.next_timer_at().await.ok().flatten(),
        };
        let longest = match self.queue {
            Some(_) => settings.poll,
            // Rows written by other processes are only seen by looking.
            None => settings.poll.max(Duration::from_secs(1)),
        };
        match next {
            Some(at) => {
                let wait = at.saturating_sub(millis(self.now())).max(0);
                Duration::from_millis(u64::try_from(wait).unwrap_or(0)).min(longest)
            }
            None => longest,
        }
    }

    /// Applies a chunk of timers in one transaction; if any fails, the transaction is
    /// rolled back and each is tried in a transaction of its own, so one timer that
    /// cannot be applied holds up no other.
    async fn fire_chunk(&self, chunk: Vec<Entry>) -> Vec<(Entry, Result<Fired, Error>)> {
        if chunk.len() > 1 {
            match self.fire_together(&chunk).await {
                Ok(fired) => return chunk.into_iter().zip(fired.into_iter().map(Ok)).collect(),
                Err(error) => tracing::debug!(%error, "a chunk of timers failed; firing them one by one"),
            }
        }
        let mut results = Vec::with_capacity(chunk.len());
        for entry in chunk {
            let fired = self
                .fire_together(std::slice::from_ref(&entry))
                .await
                .map(|mut fired| fired.remove(0));
            results.push((entry, fired));
        }
        results
    }

    /// Applies each timer whose row is still there and due, under its run's lock, all
    /// in one transaction. `entries` are in lock order (organization, run).
    async fn fire_together(&self, entries: &[Entry]) -> Result<Vec<Fired>, Error> {
        let now = self.now();
        let mut tx = self.store.begin().await.map_err(retry)?;
        let mut fired = Vec::with_capacity(entries.len());
        let mut changed = Vec::new();
        for entry in entries {
            let (stored, taken) = crate::observe::run_lock(
                &entry.run_id,
                tx.lock_run_for_timer(&entry.org, &entry.run_id, &entry.timer_id, millis(now)),
            )
            .await
            .map_err(retry)?;
            let Some(taken) = taken else {
                fired.push(Fired::Stale);
                continue;
            };
            let late = millis(now).saturating_sub(taken.due_at);
            fired.push(Fired::Applied(late));
            // A timer of a run that no longer exists: the row goes, nothing else.
            let Some(stored) = stored else {
                continue;
            };
            let span = fire_span(entry, late, taken.trace_parent.as_deref());
            let (run, version, transition, written) = async {
                let run = crate::stored::load(&stored).map_err(retry)?;
                let version = self
                    .process_version_in(&mut tx, &entry.org, &run.process, Some(run.version))
                    .await?;
                let mut ids = RunIds { run: run.id.clone() };
                let transition = timer_fired(&run, &version, &entry.timer_id, now, &mut ids);
                let change = Change {
                    before: Some(&run),
                    transition: &transition,
                    version: &version,
                };
                let written = self.save_in(&mut tx, (&entry.org, stored.revision), change).await?;
                Ok::<_, Error>((run, version, transition, written))
            }
            .instrument(span)
            .await?;
            changed.push((&entry.org, run, version, transition, written));
        }
        tx.commit().await.map_err(retry)?;
        for (org, run, version, transition, written) in &changed {
            let change = Change {
                before: Some(run),
                transition,
                version,
            };
            self.committed(org, &change, *written);
        }
        Ok(fired)
    }
}

/// The span of applying one timer: a child of the call that set it, when that call
/// was traced.
fn fire_span(entry: &Entry, late_ms: i64, trace_parent: Option<&str>) -> tracing::Span {
    let span = tracing::info_span!(
        "timer fire",
        agentprocess.organization = %entry.org,
        agentprocess.run = %entry.run_id,
        agentprocess.timer = %entry.timer_id,
        agentprocess.timer.lateness_ms = late_ms,
    );
    agentprocess_telemetry::context::continue_from_traceparent(&span, trace_parent, None);
    span
}

fn entry_of(row: &TimerRow) -> Entry {
    Entry {
        org: row.org.clone(),
        run_id: row.run_id.clone(),
        timer_id: row.timer_id.clone(),
        fire_at: row.fire_at,
    }
}

/// Waits `pause`, or less if `wake` is notified; `false` once `stop` is cancelled.
/// A stop wins over a pause that is over (a zero pause after a full batch): unbiased,
/// `select!` picks at random among ready branches, and a loop stopped by SIGTERM
/// went on taking passes half the time.
pub(crate) async fn rest(stop: &CancellationToken, wake: &tokio::sync::Notify, pause: Duration) -> bool {
    tokio::select! {
        biased;
        () = stop.cancelled() => false,
        () = wake.notified() => true,
        () = tokio::time::sleep(pause) => true,
    }
}

/// Logs a failed pass and says how long to wait before the next: at least a second.
pub(crate) fn after_failure(what: &str, error: &str, poll: Duration) -> Duration {
    tracing::warn!(%error, "{what} failed; trying again");
    poll.max(Duration::from_secs(1))
}

pub(crate) fn duration_millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stop_wins_over_a_pause_that_is_over() {
        let stop = CancellationToken::new();
        stop.cancel();
        let wake = tokio::sync::Notify::new();
        wake.notify_one();
        for _ in 0..64 {
            assert!(!rest(&stop, &wake, Duration::ZERO).await, "stopped, not another pass");
            assert!(!pause(&stop, Duration::ZERO).await);
        }
    }
}
