//! Time is a port: the service asks a [`Clock`], never the system directly.

use std::time::Duration;

use jiff::Timestamp;
use tokio_util::sync::CancellationToken;

/// Where the service reads the time.
pub trait Clock: Send + Sync + 'static {
    /// Now.
    fn now(&self) -> Timestamp;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// The system clock moved forward on request: for end-to-end tests that must see
/// two-day waits and timeouts fire. Only a server started with its test clock turned
/// on uses it.
#[derive(Debug, Default)]
pub struct TestClock {
    offset_ms: std::sync::atomic::AtomicI64,
}

impl TestClock {
    /// Moves the clock forward by `seconds` and returns the new time.
    pub fn advance(&self, seconds: i64) -> Timestamp {
        self.offset_ms
            .fetch_add(seconds.saturating_mul(1000), std::sync::atomic::Ordering::SeqCst);
        self.now()
    }
}

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        let offset = self.offset_ms.load(std::sync::atomic::Ordering::SeqCst);
        let now = Timestamp::now();
        now.checked_add(jiff::SignedDuration::from_millis(offset))
            .unwrap_or(now)
    }
}

/// Waits `duration`; `false` once `stop` is cancelled.
pub(crate) async fn pause(stop: &CancellationToken, duration: Duration) -> bool {
    tokio::select! {
        biased;
        () = stop.cancelled() => false,
        () = tokio::time::sleep(duration) => true,
    }
}
