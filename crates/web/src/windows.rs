//! Counts per key within fixed windows, on each API process: how the routes anyone
//! may call without an account (client registration, starting a sign-in, failing at
//! the token endpoint) are bounded. Memory is bounded too: every key counted is
//! counted in all, and the total has a cap.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Counts per key, restarted every `window`.
#[derive(Debug)]
pub struct WindowCounts {
    window: Duration,
    /// The limit per key.
    per_key: u32,
    /// The limit over every key together.
    in_all: u32,
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    started: Option<Instant>,
    total: u32,
    per_key: HashMap<String, u32>,
}

impl WindowCounts {
    /// At most `per_key` per key and `in_all` in all within each `window`.
    pub fn new(window: Duration, per_key: u32, in_all: u32) -> Self {
        Self {
            window,
            per_key,
            in_all,
            counts: Mutex::new(Counts::default()),
        }
    }

    /// Counts one for `key` if it is within the limits; otherwise the seconds until
    /// the window ends.
    pub fn admit(&self, key: &str) -> Result<(), u64> {
        self.with(key, true)
    }

    /// Whether `key` is within the limits, without counting.
    pub fn within(&self, key: &str) -> Result<(), u64> {
        self.with(key, false)
    }

    fn with(&self, key: &str, count: bool) -> Result<(), u64> {
        // A poisoned lock only loses the counting, never a request.
        let Ok(mut counts) = self.counts.lock() else {
            return Ok(());
        };
        let now = Instant::now();
        if counts
            .started
            .is_none_or(|started| now.duration_since(started) >= self.window)
        {
            *counts = Counts {
                started: Some(now),
                ..Counts::default()
            };
        }
        let left = counts.started.map_or(self.window, |started| {
            self.window.saturating_sub(now.duration_since(started))
        });
        let mine = counts.per_key.get(key).copied().unwrap_or(0);
        if mine >= self.per_key || counts.total >= self.in_all {
            return Err(left.as_secs().max(1));
        }
        if count {
            counts.per_key.insert(key.to_owned(), mine + 1);
            counts.total += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_and_all_keys_are_bounded() {
        let counts = WindowCounts::new(Duration::from_secs(3600), 3, 5);
        for _ in 0..3 {
            assert!(counts.admit("192.0.2.1").is_ok());
        }
        assert!(counts.within("192.0.2.1").is_err());
        assert!(counts.admit("192.0.2.1").is_err());
        assert!(counts.within("192.0.2.2").is_ok());
        assert!(counts.admit("192.0.2.2").is_ok());
        assert!(counts.admit("192.0.2.3").is_ok());
        assert!(counts.admit("192.0.2.4").is_err(), "five in all");
    }
}
