//! What the load-test binaries share: an MCP client, percentiles of measured
//! durations, and what processes used (CPU, memory).

pub mod client;
pub mod machine;

use std::sync::atomic::{AtomicU64, Ordering};

/// `requestId`s for one invocation of a load test: a tag of this process and the time it
/// started, so that ids from earlier invocations against the same database never
/// collide, then a count.
#[derive(Debug)]
pub struct RequestIds {
    tag: String,
    next: AtomicU64,
}

impl RequestIds {
    /// Ids tagged with this process and the time now.
    pub fn new() -> Self {
        Self {
            tag: format!("{}-{:x}", std::process::id(), nanos_now()),
            next: AtomicU64::new(0),
        }
    }

    /// A new id, naming what it is for (`claim`, `submit`, …).
    pub fn next(&self, kind: &str) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("lt-{}-{kind}-{n}", self.tag)
    }
}

impl Default for RequestIds {
    fn default() -> Self {
        Self::new()
    }
}

/// splitmix64: enough randomness to spread agents over listed items and to make text
/// that does not compress.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        // n is small (a page size); the modulo bias is irrelevant here.
        usize::try_from(self.next_u64() % u64::try_from(n.max(1)).unwrap_or(1)).unwrap_or(0)
    }

    /// `len` random letters, digits, `-` and `_`: text that neither PostgreSQL's
    /// compression nor any other can shrink much, so a benchmark's stored bytes are
    /// the bytes it asked for.
    pub fn text(&mut self, len: usize) -> String {
        const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        (0..len)
            .map(|_| char::from(ALPHABET[usize::try_from(self.next_u64() % 64).unwrap_or(0)]))
            .collect()
    }
}

/// Nanoseconds since the Unix epoch (0 if the clock is before it): a seed and a tag.
pub fn nanos_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_nanos()).unwrap_or(0))
        .unwrap_or(0)
}

/// Percentiles of a set of latencies, in milliseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Summary {
    /// How many samples.
    pub count: usize,
    /// The median.
    pub p50_ms: f64,
    /// The 99th percentile.
    pub p99_ms: f64,
    /// The largest.
    pub max_ms: f64,
}

/// Nearest-rank p50, p99 and maximum of `samples` (microseconds); zeros when empty.
pub fn summarize(samples: &mut [u64]) -> Summary {
    samples.sort_unstable();
    let Some(&max) = samples.last() else {
        return Summary::default();
    };
    let rank = |p: f64| {
        // Nearest rank: the smallest sample with at least p of all samples at or below it.
        let index = ((p * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1;
        samples[index]
    };
    Summary {
        count: samples.len(),
        p50_ms: millis(rank(0.50)),
        p99_ms: millis(rank(0.99)),
        max_ms: millis(max),
    }
}

/// Microseconds since `start`.
pub fn micros_since(start: std::time::Instant) -> u64 {
    u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX)
}

fn millis(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let mut samples: Vec<u64> = (1..=100).map(|n| n * 1000).collect();
        let summary = summarize(&mut samples);
        assert_eq!(summary.count, 100);
        assert!((summary.p50_ms - 50.0).abs() < 1e-9);
        assert!((summary.p99_ms - 99.0).abs() < 1e-9);
        assert!((summary.max_ms - 100.0).abs() < 1e-9);
        assert_eq!(summarize(&mut []).count, 0);
    }

    #[test]
    fn random_text_has_the_length_asked_and_varies() {
        let mut rng = Rng(7);
        let text = rng.text(4096);
        assert_eq!(text.len(), 4096);
        let distinct: std::collections::HashSet<char> = text.chars().collect();
        assert!(distinct.len() > 60, "{} distinct characters", distinct.len());
        assert_ne!(rng.text(32), rng.text(32));
        assert!(rng.below(5) < 5);
        assert_eq!(rng.below(0), 0);
    }
}
