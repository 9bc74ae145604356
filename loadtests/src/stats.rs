//! What the agents measured: counts, latencies in microseconds, and refusals.

use std::collections::BTreeMap;
use std::time::Instant;

/// How many examples of each kind of error to keep for the report.
const SAMPLES_PER_KIND: usize = 3;

/// Counts and latencies of one agent task, merged into one at the end.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) cycles: u64,
    pub(crate) conflicts: u64,
    /// Conflict issues (`claimed_by_other`, …) and how often each came back.
    pub(crate) conflict_issues: BTreeMap<String, u64>,
    /// `get_work` pages with no items but a `nextCursor`.
    pub(crate) empty_pages: u64,
    /// Tasks that found no work left (no items and no `nextCursor`).
    pub(crate) ran_out: u64,
    pub(crate) get_work_us: Vec<u64>,
    pub(crate) claim_us: Vec<u64>,
    pub(crate) submit_us: Vec<u64>,
    /// From the start of the `get_work` that led to the claim to the end of the submit.
    pub(crate) cycle_us: Vec<u64>,
    /// Errors other than claim conflicts, by `tool: code` (or `tool: transport`).
    pub(crate) errors: BTreeMap<String, u64>,
    /// A few messages of each error kind.
    pub(crate) samples: BTreeMap<String, Vec<String>>,
}

impl Stats {
    /// Counts an error of `kind` and keeps its message if few of that kind are kept yet.
    pub(crate) fn error(&mut self, kind: String, message: String) {
        let samples = self.samples.entry(kind.clone()).or_default();
        if samples.len() < SAMPLES_PER_KIND {
            samples.push(message);
        }
        *self.errors.entry(kind).or_default() += 1;
    }

    /// Adds `other` to these.
    pub(crate) fn merge(&mut self, other: Stats) {
        self.cycles += other.cycles;
        self.conflicts += other.conflicts;
        self.empty_pages += other.empty_pages;
        self.ran_out += other.ran_out;
        for (issue, count) in other.conflict_issues {
            *self.conflict_issues.entry(issue).or_default() += count;
        }
        self.get_work_us.extend(other.get_work_us);
        self.claim_us.extend(other.claim_us);
        self.submit_us.extend(other.submit_us);
        self.cycle_us.extend(other.cycle_us);
        for (kind, count) in other.errors {
            *self.errors.entry(kind).or_default() += count;
        }
        for (kind, messages) in other.samples {
            let samples = self.samples.entry(kind).or_default();
            for message in messages {
                if samples.len() < SAMPLES_PER_KIND {
                    samples.push(message);
                }
            }
        }
    }

    /// The number of errors other than claim conflicts.
    pub(crate) fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// Microseconds since `start`.
pub(crate) fn micros_since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Percentiles of a set of latencies, in milliseconds.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Summary {
    pub(crate) count: usize,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) max_ms: f64,
}

/// Nearest-rank p50, p99 and maximum of `samples` (microseconds); zeros when empty.
pub(crate) fn summarize(samples: &mut [u64]) -> Summary {
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
