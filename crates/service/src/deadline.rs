//! The deadline of every call and every background pass. Work that outlives it is
//! dropped: a call is answered `retry` (a write that committed before is found again
//! by its `requestId`), a pass is tried again. No call waits for ever on a database
//! that stopped answering.
//!
//! Work dropped unfinished, past its deadline or because its caller went away, may
//! leave a connection mid-statement; the store is told, so that it checks the
//! connections coming back to its pool (`Store::suspect_connections`).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use agentprocess_store::Store;

use crate::{Error, Service};
use agentprocess_store::SqlStore;

/// Work that did not finish within the deadline.
#[derive(Debug, thiserror::Error)]
#[error("the work did not finish within its deadline of {0:?}")]
pub struct DeadlinePassed(pub Duration);

impl Service {
    /// `work`'s result, or [`DeadlinePassed`] (an internal failure, answered `retry`)
    /// once the call deadline has passed.
    pub async fn within_deadline<T>(&self, work: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
        self.bounded(work)
            .await
            .unwrap_or_else(|| Err(Error::internal(DeadlinePassed(self.settings.call_deadline))))
    }

    /// What a background pass reports when it outlived the deadline.
    pub(crate) fn past_deadline(&self) -> String {
        DeadlinePassed(self.settings.call_deadline).to_string()
    }

    /// `work`'s output, or `None` once the call deadline has passed.
    pub async fn bounded<F: Future>(&self, work: F) -> Option<F::Output> {
        self.bounded_by(self.settings.call_deadline, work).await
    }

    /// `work`'s output, or `None` once `limit` has passed.
    pub async fn bounded_by<F: Future>(&self, limit: Duration, work: F) -> Option<F::Output> {
        let mut watched = Unfinished {
            store: &self.store,
            work: Box::pin(work),
            finished: false,
        };
        let output = tokio::time::timeout(limit, watched.work.as_mut()).await.ok();
        watched.finished = output.is_some();
        output
    }
}

/// Work the deadline watches. Dropped unfinished, whether by the deadline or by its
/// caller, it tells the store before the work goes: the connections the work held go
/// back to the pool as it is dropped, and a release task may run at once on another
/// thread, so the store must already know to check them (told after, the pool's own
/// unbounded check could wait for good on a silent connection, and a transaction's
/// locks stay held on the server meanwhile).
struct Unfinished<'a, F> {
    store: &'a SqlStore,
    work: Pin<Box<F>>,
    finished: bool,
}

impl<F> Drop for Unfinished<'_, F> {
    fn drop(&mut self) {
        // Fields, the work among them, are dropped after this.
        if !self.finished {
            self.store.suspect_connections();
        }
    }
}
