//! The in-process timer loop over the timer rows: the embedded mode's scheduler, and
//! the API's until a separate scheduler takes over. Any number of loops may run over
//! one database: a timer row is removed in the same transaction that applies it,
//! under the run's lock, so each timer has one effect.

use std::future::Future;
use std::time::Duration;

use agentprocess_blobs::Blobs;
use agentprocess_engine::{ToolError, timer_fired};
use agentprocess_store::{Store, StoreTx, TimerRow};

use crate::ids::RunIds;
use crate::write::Change;
use crate::{Service, millis, retry};

/// Timers applied per pass.
const BATCH: u32 = 64;

/// The longest sleep between passes, so timers written by other processes are seen.
const MAX_SLEEP: Duration = Duration::from_secs(1);

impl<S: Store, B: Blobs> Service<S, B> {
    /// Fires timers as they fall due until `shutdown` completes.
    pub async fn run_timers(&self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            let pause = match self.fire_due_timers().await {
                Ok(fired) if fired == BATCH as usize => Duration::ZERO,
                Ok(_) => self.until_next_timer().await,
                Err(error) => {
                    tracing::warn!(%error, "timer pass failed; trying again");
                    MAX_SLEEP
                }
            };
            tokio::select! {
                () = &mut shutdown => return,
                () = self.wake.notified() => {}
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    async fn until_next_timer(&self) -> Duration {
        match self.store.next_timer_at().await {
            Ok(Some(at)) => {
                let wait = at.saturating_sub(millis(self.now())).max(0);
                Duration::from_millis(u64::try_from(wait).unwrap_or(0)).min(MAX_SLEEP)
            }
            _ => MAX_SLEEP,
        }
    }

    /// Applies every timer due now (up to one batch); returns how many were due.
    pub async fn fire_due_timers(&self) -> Result<usize, ToolError> {
        let due = self.store.due_timers(millis(self.now()), BATCH).await.map_err(retry)?;
        for timer in &due {
            if let Err(error) = self.fire(timer).await {
                tracing::warn!(org = %timer.org, run = %timer.run_id, timer = %timer.timer_id, %error, "timer not applied");
            }
        }
        Ok(due.len())
    }

    async fn fire(&self, timer: &TimerRow) -> Result<(), ToolError> {
        let mut tx = self.store.begin().await.map_err(retry)?;
        let locked = self.lock(&mut tx, &timer.org, &timer.run_id).await;
        // Removing the row under the run's lock decides which loop applies it.
        if !tx
            .remove_timer(&timer.org, &timer.run_id, &timer.timer_id)
            .await
            .map_err(retry)?
        {
            return Ok(());
        }
        let (run, version) = match locked {
            Ok(found) => found,
            Err(error) if error.code == agentprocess_engine::Code::NotFound => {
                return tx.commit().await.map_err(retry);
            }
            Err(error) => return Err(error),
        };
        let mut ids = RunIds { run: run.id.clone() };
        let transition = timer_fired(&run, &version, &timer.timer_id, self.now(), &mut ids);
        let change = Change {
            before: Some(&run),
            transition: &transition,
            version: &version,
        };
        self.save(&mut tx, &timer.org, change).await?;
        tx.commit().await.map_err(retry)?;
        tracing::debug!(org = %timer.org, run = %timer.run_id, timer = %timer.timer_id, "timer fired");
        Ok(())
    }
}
