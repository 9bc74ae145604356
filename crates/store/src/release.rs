//! The check of a connection as it goes back to the pool, after work was abandoned.
//!
//! sqlx pings every connection it takes back, with no time limit. When a call is
//! dropped mid-statement (its deadline passed, or its caller went away) on a
//! connection whose peer has gone silent (a half-open TCP connection, a frozen
//! server, a proxy that lost its upstream), that ping never returns and the pool
//! loses the connection's slot for good; a few such and no call gets a connection.
//! So while work has recently been abandoned, connections are pinged once more as
//! they come back, with a bound, and one that does not answer in time is closed.
//! Otherwise nothing extra is sent: the common release costs no round trip.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use std::time::Instant;

/// How long after abandoned work released connections are checked.
const SUSPECT_FOR: Duration = Duration::from_secs(60);
/// How long a released connection may take to answer the check.
pub(crate) const RELEASE_CHECK: Duration = Duration::from_secs(5);

/// Whether work was abandoned recently, shared by the pool's release hook and the
/// store.
#[derive(Debug, Clone)]
pub(crate) struct Suspicion {
    origin: Instant,
    /// Milliseconds after `origin` until which released connections are checked.
    until: Arc<AtomicU64>,
}

impl Suspicion {
    pub(crate) fn new() -> Self {
        Self {
            origin: Instant::now(),
            until: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Work holding connections was dropped unfinished: check what comes back.
    pub(crate) fn raise(&self) {
        self.raise_at(Instant::now());
    }

    /// Whether a released connection should be checked now.
    pub(crate) fn active(&self) -> bool {
        self.active_at(Instant::now())
    }

    fn raise_at(&self, now: Instant) {
        let until = self.millis_at(now).saturating_add(millis(SUSPECT_FOR));
        self.until.fetch_max(until, Ordering::Relaxed);
    }

    fn active_at(&self, now: Instant) -> bool {
        self.millis_at(now) < self.until.load(Ordering::Relaxed)
    }

    fn millis_at(&self, now: Instant) -> u64 {
        millis(now.saturating_duration_since(self.origin))
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suspicion_lasts_its_window_after_the_last_raise() {
        let suspicion = Suspicion::new();
        let at = |offset: Duration| suspicion.origin + offset;
        assert!(!suspicion.active_at(at(Duration::ZERO)), "nothing abandoned yet");
        suspicion.raise_at(at(Duration::ZERO));
        assert!(suspicion.active_at(at(Duration::from_secs(1))));
        suspicion.raise_at(at(SUSPECT_FOR / 2));
        let last_window_ends = SUSPECT_FOR / 2 + SUSPECT_FOR;
        assert!(
            suspicion.active_at(at(last_window_ends - Duration::from_millis(1))),
            "the second raise extends the window"
        );
        assert!(
            !suspicion.active_at(at(last_window_ends)),
            "over once the window after the last raise has passed"
        );
        suspicion.raise_at(at(Duration::ZERO));
        assert!(
            !suspicion.active_at(at(last_window_ends)),
            "an older raise does not shorten or reopen it"
        );
    }
}
