//! Limits per organization and per identity, so that one organization cannot take what
//! the others need from a shared server: token buckets on calls and on writes, a bound
//! on calls in progress (kept below the database pool, so another organization always
//! finds a connection), and caps on open runs and on stored bytes.
//!
//! Rates and the bound on calls in progress hold in each API process: a deployment of
//! N processes admits N times as much, as its database pools are N times as large. The
//! caps are counted in the database, so they hold for the deployment (give or take the
//! starts and uploads in flight at that moment).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentprocess_engine::{Code, ToolError};
use agentprocess_store::Limits;
use agentprocess_store::SqlStore;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use agentprocess_store::{Limit, LimitValues, OrgLimits};

/// How long a call waits for one of its organization's calls in progress to finish
/// before it is refused.
const PATIENCE: Duration = Duration::from_secs(2);

/// How long a count of open runs or stored bytes is trusted while far from the cap.
const TALLY_FOR: Duration = Duration::from_secs(10);

/// The most organizations, and identities, whose buckets are kept at once; past it the
/// memory starts afresh (every bucket full again).
const KEPT: usize = 10_000;

/// How long a caller over a cap (open runs, stored bytes) is told to wait.
const CAP_WAIT: Duration = Duration::from_secs(60);

/// An organization at one of its limits: the call was refused and changed nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub struct OverLimit {
    /// Which limit.
    pub limit: Limit,
    /// Its value for the organization.
    pub value: u64,
    /// The organization.
    pub org: String,
    /// How long until the call may pass.
    pub wait: Duration,
}

impl OverLimit {
    /// What the caller is told: `retry`, naming the limit.
    pub fn to_tool_error(&self) -> ToolError {
        ToolError::new(
            Code::Retry,
            self.message(),
            vec![format!(
                "{}: the organization's limit is {} (GET /api/v1/organization/limits)",
                self.limit.key(),
                self.value
            )],
        )
    }

    /// Whole seconds to wait, at least one (for `Retry-After`).
    pub fn retry_after_seconds(&self) -> u64 {
        self.wait.as_secs() + u64::from(self.wait.subsec_nanos() > 0)
    }

    fn message(&self) -> String {
        let (what, then) = match self.limit {
            Limit::CallsPerSecond => ("calls per second", "slow down"),
            Limit::IdentityCallsPerSecond => ("calls per second from one identity", "slow down"),
            Limit::WritesPerSecond => ("writes per second", "slow down"),
            Limit::ConcurrentCalls => ("calls in progress at once", "wait for a call to finish"),
            Limit::OpenRuns => ("open runs", "finish or cancel runs, or ask for a higher limit"),
            Limit::StoredBytes => ("bytes of stored files", "ask for a higher limit"),
        };
        format!(
            "organization {} is at its limit of {} {what}: {then}, then retry with the same requestId \
             (in {} s or more)",
            self.org,
            self.value,
            self.retry_after_seconds()
        )
    }
}

/// What a call holds while it runs: its place among the organization's calls in
/// progress.
#[derive(Debug)]
pub struct Admission(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

/// The limits of every organization calling this process, and what they have used.
pub(crate) struct Gate {
    defaults: LimitValues,
    cache_for: Duration,
    orgs: Mutex<HashMap<String, Arc<OrgGate>>>,
    identities: Mutex<HashMap<(String, String), Bucket>>,
}

/// One organization's limits as last read, and its buckets.
#[derive(Default)]
struct OrgGate {
    read: Mutex<Option<Read>>,
    calls: Mutex<Bucket>,
    writes: Mutex<Bucket>,
    open_runs: tokio::sync::Mutex<Tally>,
    stored_bytes: tokio::sync::Mutex<Tally>,
}

/// Limits read from the store, and the bound on calls in progress they set.
struct Read {
    limits: LimitValues,
    at: Instant,
    in_progress: Option<Arc<Semaphore>>,
}

/// A token bucket holding two seconds of its rate; full when new.
#[derive(Debug, Default, Clone, Copy)]
struct Bucket {
    /// Tokens used, as of `at` (so a new bucket is full whatever its rate).
    used: f64,
    at: Option<Instant>,
}

impl Bucket {
    /// Takes a token at `rate` per second, or tells how long until one is there.
    fn take(&mut self, rate: u64, now: Instant) -> Result<(), Duration> {
        let rate = rate as f64;
        let capacity = rate * 2.0;
        let elapsed = self
            .at
            .map_or(0.0, |at| now.saturating_duration_since(at).as_secs_f64());
        self.used = (self.used - elapsed * rate).max(0.0);
        self.at = Some(now);
        if self.used + 1.0 <= capacity {
            self.used += 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((self.used + 1.0 - capacity) / rate))
        }
    }

    /// Gives back a token taken for a call refused by a later limit.
    fn give_back(&mut self) {
        self.used = (self.used - 1.0).max(0.0);
    }
}

/// A count kept in the database (open runs, stored bytes): counted again when old or
/// near the cap, and in between raised by what this process added.
#[derive(Debug, Default)]
struct Tally {
    counted: u64,
    added: u64,
    at: Option<Instant>,
}

impl Gate {
    pub(crate) fn new(defaults: LimitValues, cache_for: Duration) -> Self {
        Self {
            defaults,
            cache_for,
            orgs: Mutex::new(HashMap::new()),
            identities: Mutex::new(HashMap::new()),
        }
    }

    /// What this server grants an organization with `overrides`: its defaults, with
    /// what the platform granted in their place (0: no limit).
    pub(crate) fn ceiling(&self, overrides: &OrgLimits) -> LimitValues {
        let mut ceiling = LimitValues::default();
        for limit in Limit::ALL {
            let value = match overrides.granted.get(limit) {
                Some(0) => None,
                Some(value) => Some(value),
                None => self.defaults.get(limit),
            };
            ceiling.set(limit, value);
        }
        ceiling
    }

    /// The limits in force: the ceiling, lowered where the organization chose to.
    pub(crate) fn effective(&self, overrides: &OrgLimits) -> LimitValues {
        let mut effective = self.ceiling(overrides);
        for limit in Limit::ALL {
            let lowest = match (effective.get(limit), overrides.chosen.get(limit)) {
                (Some(ceiling), Some(chosen)) => Some(ceiling.min(chosen)),
                (ceiling, chosen) => ceiling.or(chosen),
            };
            effective.set(limit, lowest);
        }
        effective
    }

    fn org(&self, org: &str) -> Arc<OrgGate> {
        let mut orgs = self.orgs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Every call comes here: a known organization costs a lookup, not a new key.
        if let Some(gate) = orgs.get(org) {
            return Arc::clone(gate);
        }
        if orgs.len() >= KEPT {
            orgs.clear();
        }
        Arc::clone(orgs.entry(org.to_owned()).or_default())
    }

    /// Forgets what was read of `org`'s limits, so the next call reads them again.
    pub(crate) fn forget(&self, org: &str) {
        let gate = self.org(org);
        *gate.read.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    /// `org`'s limits in force, and the bound on its calls in progress; read from the
    /// store when not read within the cache time. A store that cannot answer leaves
    /// the limits last read (the server's defaults at first) for another cache time.
    async fn limits(&self, store: &SqlStore, org: &str) -> (Arc<OrgGate>, LimitValues, Option<Arc<Semaphore>>) {
        let gate = self.org(org);
        let now = Instant::now();
        let held = {
            let read = gate.read.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            read.as_ref()
                .map(|read| (read.limits, read.in_progress.clone(), read.at))
        };
        if let Some((limits, in_progress, at)) = &held
            && now.saturating_duration_since(*at) < self.cache_for
        {
            return (gate, *limits, in_progress.clone());
        }
        let limits = match store.org_limits(org).await {
            Ok(overrides) => self.effective(&overrides),
            Err(error) => {
                tracing::warn!(%org, error = %error, "the organization's limits could not be read; the last read hold");
                held.as_ref()
                    .map_or_else(|| self.effective(&OrgLimits::default()), |(limits, ..)| *limits)
            }
        };
        let mut read = gate.read.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // A bound that did not change keeps its semaphore (and the calls it counts); a
        // new bound starts a new one, and the calls under the old finish under it.
        let in_progress = match (held, limits.concurrent_calls) {
            (Some((old, Some(semaphore), _)), Some(_)) if old.concurrent_calls == limits.concurrent_calls => {
                Some(semaphore)
            }
            (_, Some(bound)) => Some(Arc::new(Semaphore::new(usize::try_from(bound).unwrap_or(usize::MAX)))),
            (_, None) => None,
        };
        *read = Some(Read {
            limits,
            at: now,
            in_progress: in_progress.clone(),
        });
        drop(read);
        (gate, limits, in_progress)
    }

    /// Admits one call of `identity` of `org` (a write when `writes`), or says which
    /// limit it is over.
    pub(crate) async fn admit(
        &self,
        store: &SqlStore,
        org: &str,
        identity: &str,
        writes: bool,
    ) -> Result<Admission, OverLimit> {
        let (gate, limits, in_progress) = self.limits(store, org).await;
        let over = |limit: Limit, value: u64, wait: Duration| OverLimit {
            limit,
            value,
            org: org.to_owned(),
            wait,
        };
        let now = Instant::now();
        let mut taken: Vec<&Mutex<Bucket>> = Vec::new();
        let give_back = |taken: &[&Mutex<Bucket>]| {
            for bucket in taken {
                bucket
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .give_back();
            }
        };
        let mut buckets = vec![(Limit::CallsPerSecond, &gate.calls)];
        if writes {
            buckets.push((Limit::WritesPerSecond, &gate.writes));
        }
        for (limit, bucket) in buckets {
            let Some(rate) = limits.get(limit) else { continue };
            let result = bucket
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(rate, now);
            if let Err(wait) = result {
                give_back(&taken);
                return Err(over(limit, rate, wait));
            }
            taken.push(bucket);
        }
        if let Some(rate) = limits.identity_calls_per_second {
            let mut identities = self
                .identities
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let key = (org.to_owned(), identity.to_owned());
            if !identities.contains_key(&key) && identities.len() >= KEPT {
                identities.clear();
            }
            if let Err(wait) = identities.entry(key).or_default().take(rate, now) {
                drop(identities);
                give_back(&taken);
                return Err(over(Limit::IdentityCallsPerSecond, rate, wait));
            }
        }
        let Some(semaphore) = in_progress else {
            return Ok(Admission(None));
        };
        match tokio::time::timeout(PATIENCE, semaphore.acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Admission(Some(permit))),
            _ => Err(over(
                Limit::ConcurrentCalls,
                limits.concurrent_calls.unwrap_or_default(),
                PATIENCE,
            )),
        }
    }

    /// Whether `org` may add `amount` to what `limit` caps (open runs, stored bytes);
    /// counts again in the store when the count is old or near the cap.
    pub(crate) async fn within_cap(
        &self,
        store: &SqlStore,
        org: &str,
        limit: Limit,
        amount: u64,
    ) -> Result<(), crate::Error> {
        let (gate, limits, _) = self.limits(store, org).await;
        let Some(cap) = limits.get(limit) else {
            return Ok(());
        };
        let tally = match limit {
            Limit::OpenRuns => &gate.open_runs,
            Limit::StoredBytes => &gate.stored_bytes,
            _ => return Ok(()),
        };
        let mut tally = tally.lock().await;
        let now = Instant::now();
        let fresh = tally.at.is_some_and(|at| now.saturating_duration_since(at) < TALLY_FOR);
        let near = tally.counted.saturating_add(tally.added).saturating_add(amount) > cap / 10 * 9;
        if !fresh || near {
            tally.counted = match limit {
                Limit::OpenRuns => store.open_runs(org, cap.saturating_add(1)).await,
                _ => store.stored_bytes(org).await,
            }
            .map_err(crate::retry)?;
            tally.added = 0;
            tally.at = Some(now);
        }
        if tally.counted.saturating_add(tally.added).saturating_add(amount) > cap {
            return Err(crate::Error::OverLimit(OverLimit {
                limit,
                value: cap,
                org: org.to_owned(),
                wait: CAP_WAIT,
            }));
        }
        tally.added = tally.added.saturating_add(amount);
        Ok(())
    }
}

/// An organization's limits, as its admins read them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitsReport {
    /// What this server grants it (`None`: no limit).
    pub ceiling: LimitValues,
    /// What its admins chose below that.
    pub chosen: LimitValues,
    /// What is in force (`None`: no limit).
    pub effective: LimitValues,
    /// When the platform or its admins last changed them.
    pub updated_at: Option<i64>,
    /// Its runs not yet ended or cancelled.
    pub open_runs: u64,
    /// The bytes of its uploaded files kept.
    pub stored_bytes: u64,
}

impl crate::Service {
    /// Admits one call of `identity` (a write when `writes`) under its organization's
    /// and its own limits; hold the admission until the call is answered.
    pub async fn admit(&self, identity: &agentprocess_store::Identity, writes: bool) -> Result<Admission, OverLimit> {
        self.gate.admit(&self.store, &identity.org, &identity.id, writes).await
    }

    /// `org`'s limits and what it uses of those counted in the database.
    pub async fn organization_limits(&self, org: &str) -> Result<LimitsReport, crate::Error> {
        let overrides = self.store.org_limits(org).await.map_err(crate::retry)?;
        let effective = self.gate.effective(&overrides);
        let open_runs = self
            .store
            .open_runs(org, effective.open_runs.map_or(u64::MAX, |cap| cap.saturating_add(1)))
            .await
            .map_err(crate::retry)?;
        let stored_bytes = self.store.stored_bytes(org).await.map_err(crate::retry)?;
        Ok(LimitsReport {
            ceiling: self.gate.ceiling(&overrides),
            chosen: overrides.chosen,
            effective,
            updated_at: overrides.updated_at,
            open_runs,
            stored_bytes,
        })
    }

    /// What this server grants `org` (`None`: no limit): the ceiling of what its admins
    /// may choose.
    pub async fn limit_ceiling(&self, org: &str) -> Result<LimitValues, crate::Error> {
        let overrides = self.store.org_limits(org).await.map_err(crate::retry)?;
        Ok(self.gate.ceiling(&overrides))
    }

    /// `org`'s limits changed: this process reads them again at the next call (others
    /// within the identity cache time).
    pub fn limits_changed(&self, org: &str) {
        self.gate.forget(org);
    }

    /// Refuses a write that would take `org` past the cap `limit` puts on adding
    /// `amount` (open runs, stored bytes).
    pub(crate) async fn within_cap(&self, org: &str, limit: Limit, amount: u64) -> Result<(), crate::Error> {
        self.gate.within_cap(&self.store, org, limit, amount).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_holds_two_seconds_of_its_rate_and_refills_at_it() {
        let start = Instant::now();
        let mut bucket = Bucket::default();
        for _ in 0..4 {
            bucket.take(2, start).expect("a new bucket is full");
        }
        let wait = bucket.take(2, start).expect_err("four taken at 2/s");
        assert_eq!(wait, Duration::from_millis(500));
        bucket
            .take(2, start + Duration::from_millis(500))
            .expect("one more after half a second");
        assert!(bucket.take(2, start + Duration::from_millis(500)).is_err());
        bucket.give_back();
        bucket
            .take(2, start + Duration::from_millis(500))
            .expect("a token given back is there again");
    }

    fn values(pairs: &[(Limit, u64)]) -> LimitValues {
        let mut values = LimitValues::default();
        for (limit, value) in pairs {
            values.set(*limit, Some(*value));
        }
        values
    }

    #[test]
    fn the_platform_grants_over_the_defaults_and_the_organization_only_lowers() {
        let gate = Gate::new(
            values(&[
                (Limit::CallsPerSecond, 100),
                (Limit::OpenRuns, 1000),
                (Limit::WritesPerSecond, 50),
            ]),
            Duration::from_secs(10),
        );
        let overrides = OrgLimits {
            granted: values(&[(Limit::CallsPerSecond, 500), (Limit::OpenRuns, 0)]),
            chosen: values(&[
                (Limit::CallsPerSecond, 800),
                (Limit::WritesPerSecond, 10),
                (Limit::StoredBytes, 4096),
            ]),
            updated_at: Some(1),
        };
        let ceiling = gate.ceiling(&overrides);
        assert_eq!(ceiling.calls_per_second, Some(500), "granted above the default");
        assert_eq!(ceiling.open_runs, None, "0 granted: no limit");
        assert_eq!(ceiling.writes_per_second, Some(50), "the default");
        let effective = gate.effective(&overrides);
        assert_eq!(
            effective.calls_per_second,
            Some(500),
            "a choice above the ceiling does not raise it"
        );
        assert_eq!(effective.writes_per_second, Some(10));
        assert_eq!(
            effective.stored_bytes,
            Some(4096),
            "a choice where the server sets no limit"
        );
        assert_eq!(effective.open_runs, None);
    }

    #[test]
    fn the_refusal_names_the_limit_and_the_wait() {
        let over = OverLimit {
            limit: Limit::WritesPerSecond,
            value: 5,
            org: "acme".to_owned(),
            wait: Duration::from_millis(1200),
        };
        assert_eq!(over.retry_after_seconds(), 2);
        let told = over.to_tool_error();
        assert_eq!(told.code, Code::Retry);
        assert!(
            told.message.contains("limit of 5 writes per second"),
            "{}",
            told.message
        );
        assert_eq!(told.issues.len(), 1);
        assert!(told.issues[0].starts_with("writesPerSecond:"), "{:?}", told.issues);
    }
}
