//! What the load-test binaries share: an MCP client, percentiles of measured
//! durations, and what processes used (CPU, memory).

pub mod client;
pub mod machine;

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
}
