//! Housekeeping: uploads no run cites, and every record that outlives its use
//! (idempotency records past the replay window, settled webhook deliveries and their
//! notifications, spent credentials), removed a batch at a time so nothing grows
//! without bound and no purge holds a lock for long. Runs and the audit log are the
//! record and are kept.

use std::collections::HashMap;
use std::time::Duration;

use agentprocess_store::{Purge, Store};

use crate::scheduler::duration_millis;
use crate::{Service, millis};

/// Rows a purge statement removes at most.
const BATCH: u32 = 500;
/// Batches of one kind in one pass at most: a backlog is worked off over several
/// passes rather than in one long one.
const BATCHES_PER_PASS: u32 = 200;
/// Organizations listed per page while purging their records.
const ORGANIZATIONS_PER_PAGE: u32 = 500;
/// How long spent credentials (expired or revoked tokens, expired codes and refresh
/// tokens) are kept after they stopped working, for an admin's listing
/// and an incident's reading.
const SPENT_CREDENTIALS: Duration = Duration::from_secs(7 * 86_400);

/// How long what is purged by age is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    /// The replay window: how long a write's `requestId` is remembered with its result.
    pub requests: Duration,
    /// How long a delivered or abandoned webhook delivery (and then its notification)
    /// is kept.
    pub notifications: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            requests: Duration::from_secs(86_400),
            notifications: Duration::from_secs(7 * 86_400),
        }
    }
}

impl Retention {
    /// Each kind of record purged and the time (milliseconds) before which it goes.
    pub fn cutoffs(&self, now: i64) -> Vec<(Purge, i64)> {
        let before = |kept: Duration| now.saturating_sub(duration_millis(kept));
        Purge::ALL
            .into_iter()
            .map(|what| {
                let kept = match what {
                    Purge::Requests => self.requests,
                    Purge::SettledDeliveries | Purge::SettledMessages | Purge::Notifications => self.notifications,
                    Purge::Assertions | Purge::Sessions => Duration::ZERO,
                    Purge::ExpiredTokens | Purge::RevokedTokens | Purge::AuthorizationCodes | Purge::RefreshTokens => {
                        SPENT_CREDENTIALS
                    }
                };
                (what, before(kept))
            })
            .collect()
    }
}

/// How housekeeping runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepSettings {
    /// How old an upload no submission or decision ever cited must be to go.
    pub uncited_uploads: Duration,
    /// How long the other records are kept.
    pub retention: Retention,
    /// How often to look.
    pub interval: Duration,
}

impl Default for SweepSettings {
    fn default() -> Self {
        Self {
            uncited_uploads: Duration::from_secs(7 * 86_400),
            retention: Retention::default(),
            interval: Duration::from_secs(3_600),
        }
    }
}

impl Service {
    /// Sweeps every `settings.interval` until `stop` is cancelled. Several processes
    /// may sweep at once: each removes what the others have not.
    pub async fn run_sweeper(
        self: std::sync::Arc<Self>,
        settings: SweepSettings,
        stop: tokio_util::sync::CancellationToken,
    ) {
        loop {
            let swept = self.bounded(self.sweep_uploads(settings.uncited_uploads)).await;
            match swept.unwrap_or_else(|| Err(self.past_deadline())) {
                Ok(0) => {}
                Ok(removed) => tracing::info!(removed, "removed uploads no run cites"),
                Err(error) => tracing::warn!(%error, "upload sweep failed; trying again"),
            }
            if self.bounded(self.purge(&settings.retention)).await.is_none() {
                tracing::warn!(
                    error = self.past_deadline(),
                    "purge of old records stopped; going on next time"
                );
            }
            if !crate::clock::pause(&stop, settings.interval).await {
                return;
            }
        }
    }

    /// One pass over every kind of record kept for a time, by this service's clock.
    /// Organizations' records are purged one organization at a time (each statement
    /// names one, so a database sharded by organization routes it to one shard); the
    /// directory's credentials in one go.
    async fn purge(&self, retention: &Retention) {
        let cutoffs = retention.cutoffs(millis(self.now()));
        let (organizations, directory): (Vec<_>, Vec<_>) =
            cutoffs.into_iter().partition(|(what, _)| what.per_organization());
        let mut removed: HashMap<Purge, u64> = HashMap::new();
        for &(what, before) in &directory {
            *removed.entry(what).or_default() += self.purge_batches(what, None, before).await;
        }
        let mut after: Option<String> = None;
        loop {
            let page = match self
                .store
                .organization_ids(after.as_deref(), ORGANIZATIONS_PER_PAGE)
                .await
            {
                Ok(page) => page,
                Err(error) => {
                    tracing::warn!(%error, "listing organizations to purge failed; trying again next pass");
                    break;
                }
            };
            for org in &page {
                for &(what, before) in &organizations {
                    *removed.entry(what).or_default() += self.purge_batches(what, Some(org), before).await;
                }
            }
            if page.len() < ORGANIZATIONS_PER_PAGE as usize {
                break;
            }
            after = page.last().cloned();
        }
        for (what, removed) in removed {
            if removed > 0 {
                tracing::info!(removed, what = what.name(), "purged");
            }
        }
    }

    /// Batches of one kind (of one organization) until one comes back short, at most
    /// [`BATCHES_PER_PASS`]; how many rows went.
    async fn purge_batches(&self, what: Purge, org: Option<&str>, before: i64) -> u64 {
        let mut removed = 0;
        for _ in 0..BATCHES_PER_PASS {
            match self.store.purge(what, org, before, BATCH).await {
                Ok(batch) => {
                    removed += batch;
                    if batch < u64::from(BATCH) {
                        break;
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, what = what.name(), org, "purge failed; trying again next pass");
                    break;
                }
            }
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_cut_off_by_its_own_retention() {
        let retention = Retention {
            requests: Duration::from_secs(1),
            notifications: Duration::from_secs(2),
        };
        let cutoffs: std::collections::HashMap<_, _> = retention.cutoffs(1_000_000).into_iter().collect();
        assert_eq!(cutoffs[&Purge::Requests], 999_000);
        assert_eq!(cutoffs[&Purge::SettledDeliveries], 998_000);
        assert_eq!(cutoffs[&Purge::Notifications], 998_000);
        assert_eq!(cutoffs[&Purge::Assertions], 1_000_000);
        assert_eq!(cutoffs[&Purge::ExpiredTokens], 1_000_000 - 7 * 86_400_000);
        assert_eq!(cutoffs.len(), Purge::ALL.len());
    }
}
