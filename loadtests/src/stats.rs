//! What the agents measured: counts, latencies in microseconds, and refusals.

use std::collections::BTreeMap;

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
