//! What the write path and the background loops report: run, timer and delivery
//! counts after commit, run lock waits, and the sampled work levels. The instruments
//! are `agentprocess_telemetry`'s; without a meter provider they do nothing.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use agentprocess_engine::{Effect, Notification};
use agentprocess_store::{DeliveryStatus, Store};
use agentprocess_telemetry::{KeyValue, gauges, labels, metrics};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::stored::Change;
use crate::{Service, millis};

/// How often the work levels are sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(15);

/// Counts what a committed change of `org`'s did: a run started or ended, timers set,
/// steps overdue. The process and the outcome, which tenants write, are left to traces.
pub(crate) fn committed(org: &str, change: &Change<'_>) {
    let metrics = metrics();
    let run = &change.transition.run;
    let organization = labels::organization(org);
    if change.before.is_none() {
        metrics.runs_started.add(1, std::slice::from_ref(&organization));
    }
    let was_over = change.before.is_some_and(|before| before.end.is_some());
    if let (false, Some(end)) = (was_over, &run.end) {
        let state = if end.cancelled { "cancelled" } else { "ended" };
        metrics
            .runs_ended
            .add(1, &[organization, KeyValue::new("agentprocess.run.state", state)]);
    }
    for effect in &change.transition.effects {
        match effect {
            Effect::ScheduleTimer(timer) => metrics
                .timers_scheduled
                .add(1, &[KeyValue::new("agentprocess.timer.kind", timer.kind.as_str())]),
            Effect::Notify(Notification::Overdue { .. }) => metrics.steps_overdue.add(1, &[]),
            Effect::Notify(_) | Effect::CancelTimer { .. } => {}
        }
    }
}

/// A timer applied `late_ms` after its time.
pub(crate) fn timer_fired(timer_id: &str, late_ms: i64) {
    let kind = KeyValue::new("agentprocess.timer.kind", timer_kind(timer_id).to_owned());
    let metrics = metrics();
    metrics.timers_fired.add(1, std::slice::from_ref(&kind));
    #[allow(clippy::cast_precision_loss)] // milliseconds far below 2^52
    metrics.timer_lateness.record(late_ms.max(0) as f64 / 1000.0, &[kind]);
}

/// The kind of a timer, by its id.
fn timer_kind(timer_id: &str) -> &'static str {
    timer_id
        .parse::<agentprocess_engine::TimerId>()
        .map_or("unknown", |id| id.kind.as_str())
}

/// A webhook attempt's result.
pub(crate) fn delivery(status: DeliveryStatus) {
    let status = match status {
        DeliveryStatus::Delivered => "delivered",
        DeliveryStatus::Pending => "retry",
        DeliveryStatus::Failed => "failed",
    };
    metrics()
        .webhook_deliveries
        .add(1, &[KeyValue::new("agentprocess.delivery.status", status)]);
}

/// How sending a message to people ended.
pub(crate) fn message(channel: agentprocess_store::Channel, outcome: &agentprocess_store::MessageOutcome) {
    use agentprocess_store::MessageOutcome;
    let status = match outcome {
        MessageOutcome::Sent { .. } => "sent",
        MessageOutcome::Retry { .. } => "retry",
        MessageOutcome::Failed { .. } => "failed",
        MessageOutcome::Dropped { .. } => "dropped",
    };
    metrics().messages.add(
        1,
        &[
            KeyValue::new("agentprocess.message.channel", channel.as_str()),
            KeyValue::new("agentprocess.message.status", status),
        ],
    );
}

/// Runs `lock` (taking a run's lock) in a span of its own and records the wait.
pub(crate) async fn run_lock<T>(run_id: &str, lock: impl Future<Output = T>) -> T {
    let span = tracing::info_span!("run lock", agentprocess.run = run_id);
    let started = Instant::now();
    let locked = lock.instrument(span).await;
    metrics().lock_wait.record(started.elapsed().as_secs_f64(), &[]);
    locked
}

impl Service {
    /// Samples the work levels (and the timer queue's length) every 15 seconds for
    /// the gauges, until `stop`.
    pub async fn run_gauges(self: Arc<Self>, stop: CancellationToken) {
        loop {
            if self.bounded(self.sample_levels()).await.is_none() {
                tracing::debug!(error = self.past_deadline(), "work levels not sampled");
            }
            if !crate::clock::pause(&stop, SAMPLE_EVERY).await {
                return;
            }
        }
    }

    async fn sample_levels(&self) {
        let gauges = gauges();
        match self.store.work_levels(millis(self.now())).await {
            Ok(levels) => {
                gauges.ready_steps.store(levels.ready_agent_steps, Ordering::Relaxed);
                gauges.open_work_items.store(levels.open_work_items, Ordering::Relaxed);
            }
            Err(error) => tracing::debug!(%error, "work levels not sampled"),
        }
        if let Some(queue) = &self.queue {
            match queue.count().await {
                Ok(count) => gauges
                    .queued_timers
                    .store(i64::try_from(count).unwrap_or(i64::MAX), Ordering::Relaxed),
                Err(error) => tracing::debug!(%error, "timer queue not sampled"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::timer_kind;

    #[test]
    fn the_kind_is_read_from_the_timer_id() {
        assert_eq!(timer_kind("review:wait_until:1"), "wait_until");
        assert_eq!(timer_kind("a:due:12"), "due");
        assert_eq!(timer_kind("odd"), "unknown");
    }
}
