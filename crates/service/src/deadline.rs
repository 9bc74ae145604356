//! The deadline of every call and every background pass. Work that outlives it is
//! dropped: a call is answered `retry` (a write that committed before is found again
//! by its `requestId`), a pass is tried again. No call waits for ever on a database
//! that stopped answering.
//!
//! Work dropped unfinished, past its deadline or because its caller went away, may
//! leave a connection mid-statement; the store is told, so that it checks the
//! connections coming back to its pool (`Store::suspect_connections`).

use std::future::Future;
use std::time::Duration;

use agentprocess_blobs::Blobs;
use agentprocess_store::Store;

use crate::{Error, Service};

/// Work that did not finish within the deadline.
#[derive(Debug, thiserror::Error)]
#[error("the work did not finish within its deadline of {0:?}")]
pub struct DeadlinePassed(pub Duration);

impl<S: Store, B: Blobs> Service<S, B> {
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
        let mut watch = Unfinished {
            store: &self.store,
            finished: false,
        };
        let output = tokio::time::timeout(limit, work).await.ok();
        watch.finished = output.is_some();
        output
    }
}

/// Tells the store when the work it watches is dropped unfinished, whether by the
/// deadline or by its caller.
struct Unfinished<'a, S: Store> {
    store: &'a S,
    finished: bool,
}

impl<S: Store> Drop for Unfinished<'_, S> {
    fn drop(&mut self) {
        if !self.finished {
            self.store.suspect_connections();
        }
    }
}
