//! How the pool finds connections that stopped answering and stops handing them out.
//!
//! A connection can go quiet without a word: its peer vanished (a NAT or firewall that
//! dropped its entry, a host gone: a half-open connection) or froze. What that costs is
//! bounded in four places:
//! - the sockets themselves ([`crate::keepalive`]): the kernel gives up on a peer that has
//!   acknowledged nothing for its user timeout, busy or idle, and a statement on such a
//!   connection fails at once instead of waiting;
//! - every check the pool makes is a ping bounded by [`CHECK`]: a connection idle longer
//!   than [`IDLE_CHECK`] before it is handed out, and, while work was recently abandoned
//!   (see below), each connection as it comes back. sqlx's own ping of every released
//!   connection has no bound: a connection dropped mid-statement on a silent peer would
//!   hold its slot for good without this one first;
//! - once one connection is found dead, every idle connection is checked at once, all in
//!   parallel, before it is handed out again (the sweep): what silenced one usually
//!   silenced its neighbours, and finding them one call at a time costs a bound each;
//! - a call's deadline (the service) ends work still stuck, and says so here
//!   ([`Health::suspect`]), so the connections that work held are checked as they return.
//!
//! A connection is found dead when a check fails or times out, or when a statement on
//! it fails because the connection was lost (reset, timed out by the kernel, closed).
//! The latter is seen where the store's errors are made, which knows no pool, so it is
//! counted process-wide ([`connection_lost`]) and each pool notices at its next acquire:
//! in a process with several pools, one pool's loss costs the others a sweep of pings.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use sqlx::{AnyConnection, AnyPool, Connection as _};

/// The longest any check of a connection may take: a live server answers a ping in
/// milliseconds, even a busy one well within this.
pub(crate) const CHECK: Duration = Duration::from_secs(2);
/// Connections idle longer than this are checked before use.
const IDLE_CHECK: Duration = Duration::from_secs(5);
/// How long after abandoned work (or a connection found dead) released connections
/// are checked.
const SUSPECT_FOR: Duration = Duration::from_secs(60);

/// Connections lost under a statement in this process, ever.
static LOST: AtomicU64 = AtomicU64::new(0);

/// Whether `error` says the connection itself was lost, not that a statement failed.
pub(crate) fn is_lost_connection(error: &sqlx::Error) -> bool {
    use std::io::ErrorKind;
    matches!(error, sqlx::Error::Io(error) if matches!(
        error.kind(),
        ErrorKind::TimedOut
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe
            | ErrorKind::NotConnected
            | ErrorKind::UnexpectedEof
    ))
}

/// A statement failed because its connection was lost.
pub(crate) fn connection_lost() {
    LOST.fetch_add(1, Ordering::Relaxed);
}

/// How many connections were lost under a statement in this process so far.
pub(crate) fn lost_count() -> u64 {
    LOST.load(Ordering::Relaxed)
}

/// The pool's view of its connections' health, shared by its hooks and the store.
#[derive(Debug, Clone)]
pub(crate) struct Health {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    origin: Instant,
    /// Milliseconds after `origin` until which released connections are checked.
    suspect_until: AtomicU64,
    /// Milliseconds after `origin` when a connection was last found dead (0: never).
    dead_at: AtomicU64,
    /// The count of connections lost (`LOST`) this pool has answered with a sweep.
    lost_seen: AtomicU64,
    /// Connections found dead so far.
    found_dead: AtomicU64,
    /// Whether a sweep is under way.
    sweeping: AtomicBool,
    /// The pool, for the sweep; weak, since the pool holds the hooks that hold this.
    pool: OnceLock<Weak<AnyPool>>,
}

impl Health {
    pub(crate) fn new() -> Self {
        Self {
            shared: Arc::new(Shared {
                origin: Instant::now(),
                suspect_until: AtomicU64::new(0),
                dead_at: AtomicU64::new(0),
                lost_seen: AtomicU64::new(LOST.load(Ordering::Relaxed)),
                found_dead: AtomicU64::new(0),
                sweeping: AtomicBool::new(false),
                pool: OnceLock::new(),
            }),
        }
    }

    /// The pool the sweep checks.
    pub(crate) fn watch(&self, pool: &Arc<AnyPool>) {
        let _ = self.shared.pool.set(Arc::downgrade(pool));
    }

    /// Work holding connections was dropped unfinished: check what comes back.
    pub(crate) fn suspect(&self) {
        self.suspect_at(Instant::now());
    }

    /// Whether a released connection should be checked now.
    pub(crate) fn suspected(&self) -> bool {
        self.suspected_at(Instant::now())
    }

    /// Before an idle connection is handed out: a sweep of the idle ones if a
    /// connection was lost under a statement since the last look; then a check of this
    /// one if it has been idle since before a connection was last found dead (the
    /// sweep may not have reached it yet), or for longer than [`IDLE_CHECK`].
    pub(crate) async fn before_use(
        &self,
        connection: &mut AnyConnection,
        idle_for: Duration,
    ) -> Result<(), sqlx::Error> {
        let lost = LOST.load(Ordering::Relaxed);
        let seen = self.shared.lost_seen.swap(lost, Ordering::Relaxed);
        if seen != lost {
            tracing::warn!("a database connection was lost under a statement; checking the idle ones");
            self.found_dead(lost.saturating_sub(seen));
        }
        if idle_for > IDLE_CHECK || self.idle_since_last_death(idle_for, Instant::now()) {
            self.check(connection).await?;
        }
        Ok(())
    }

    /// Pings `connection` within [`CHECK`]; one that fails or does not answer in time
    /// is reported (the caller closes it) and sets off a sweep of the idle ones.
    pub(crate) async fn check(&self, connection: &mut AnyConnection) -> Result<(), sqlx::Error> {
        let checked = ping_within(connection).await;
        if let Err(error) = &checked {
            tracing::warn!(%error, "a database connection did not answer its check; checking the idle ones");
            self.found_dead(1);
        }
        checked
    }

    /// Connections found dead so far.
    pub(crate) fn found_dead_count(&self) -> u64 {
        self.shared.found_dead.load(Ordering::Relaxed)
    }

    fn count_dead(&self, count: u64) {
        self.shared.found_dead.fetch_add(count, Ordering::Relaxed);
    }

    /// `dead` connections were found dead: counts them, notes when, checks what
    /// comes back for a while, and sets off a sweep unless one is under way.
    fn found_dead(&self, dead: u64) {
        self.count_dead(dead);
        let now = self.millis_at(Instant::now()).max(1);
        self.shared.dead_at.fetch_max(now, Ordering::Relaxed);
        self.suspect();
        if self.shared.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        match self.shared.pool.get().and_then(Weak::upgrade) {
            Some(pool) => {
                let health = self.clone();
                let pool = AnyPool::clone(&pool);
                tokio::spawn(async move {
                    health.count_dead(sweep(&pool).await);
                    health.shared.sweeping.store(false, Ordering::Release);
                });
            }
            None => self.shared.sweeping.store(false, Ordering::Release),
        }
    }

    /// Whether a connection idle for `idle_for` at `now` has been idle since before a
    /// connection was last found dead: untested since whatever silenced that one.
    fn idle_since_last_death(&self, idle_for: Duration, now: Instant) -> bool {
        let dead_at = self.shared.dead_at.load(Ordering::Relaxed);
        dead_at != 0 && self.millis_at(now).saturating_sub(millis(idle_for)) <= dead_at
    }

    fn suspect_at(&self, now: Instant) {
        let until = self.millis_at(now).saturating_add(millis(SUSPECT_FOR));
        self.shared.suspect_until.fetch_max(until, Ordering::Relaxed);
    }

    fn suspected_at(&self, now: Instant) -> bool {
        self.millis_at(now) < self.shared.suspect_until.load(Ordering::Relaxed)
    }

    fn millis_at(&self, now: Instant) -> u64 {
        millis(now.saturating_duration_since(self.shared.origin))
    }
}

/// Takes every idle connection out of the pool at once and checks them all in
/// parallel: those that answer go back, the others are closed. Meanwhile callers get
/// new connections (or wait at most [`CHECK`] for a checked one). Returns how many
/// were dead.
async fn sweep(pool: &AnyPool) -> u64 {
    let mut checks = tokio::task::JoinSet::new();
    for _ in 0..pool.num_idle() {
        let Some(mut connection) = pool.try_acquire() else {
            break;
        };
        checks.spawn(async move {
            let answered = ping_within(&mut connection).await.is_ok();
            if !answered {
                connection.close_on_drop();
            }
            answered
        });
    }
    let checked = checks.len();
    let mut dead = 0;
    while let Some(answered) = checks.join_next().await {
        if !matches!(answered, Ok(true)) {
            dead += 1;
        }
    }
    tracing::warn!(
        checked,
        dead,
        "idle database connections checked after one was found dead"
    );
    dead
}

async fn ping_within(connection: &mut AnyConnection) -> Result<(), sqlx::Error> {
    match tokio::time::timeout(CHECK, connection.ping()).await {
        Ok(answered) => answered,
        // Silent: it would not hear a goodbye either.
        Err(_) => Err(sqlx::Error::Io(std::io::ErrorKind::TimedOut.into())),
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_idle_since_before_a_death_are_untested() {
        let health = Health::new();
        let at = |offset: Duration| health.shared.origin + offset;
        let second = Duration::from_secs(1);
        assert!(
            !health.idle_since_last_death(second, at(second * 10)),
            "none found dead yet"
        );
        health.shared.dead_at.store(millis(second * 10), Ordering::Relaxed);
        assert!(
            health.idle_since_last_death(second * 3, at(second * 12)),
            "idle since 9 s, before the death at 10 s"
        );
        assert!(
            !health.idle_since_last_death(second, at(second * 12)),
            "idle since 11 s: used after the death"
        );
    }

    #[test]
    fn suspicion_lasts_its_window_after_the_last_raise() {
        let health = Health::new();
        let at = |offset: Duration| health.shared.origin + offset;
        assert!(!health.suspected_at(at(Duration::ZERO)), "nothing abandoned yet");
        health.suspect_at(at(Duration::ZERO));
        assert!(health.suspected_at(at(Duration::from_secs(1))));
        health.suspect_at(at(SUSPECT_FOR / 2));
        let last_window_ends = SUSPECT_FOR / 2 + SUSPECT_FOR;
        assert!(
            health.suspected_at(at(last_window_ends - Duration::from_millis(1))),
            "the second raise extends the window"
        );
        assert!(
            !health.suspected_at(at(last_window_ends)),
            "over once the window after the last raise has passed"
        );
        health.suspect_at(at(Duration::ZERO));
        assert!(
            !health.suspected_at(at(last_window_ends)),
            "an older raise does not shorten or reopen it"
        );
    }
}
