//! What a server offers beyond the core, and the refusals when a document needs more.

use crate::document::{EvidenceKind, Step, StepKind};
use crate::issue::Issues;
use crate::path;

/// The profiles and optional tools a server offers. A document that needs one the
/// server lacks is refused at publication (spec §4.2, §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The `parallel-1` profile.
    pub parallel: bool,
    /// The `check-1` profile (offered only while an evaluator is configured).
    pub check: bool,
    /// The `upload` tool, needed by `evidence: [file]`.
    pub upload: bool,
    /// The `send_event` tool, needed by `wait_for`.
    pub send_event: bool,
}

impl Capabilities {
    /// Every profile and optional tool.
    pub const ALL: Capabilities = Capabilities {
        parallel: true,
        check: true,
        upload: true,
        send_event: true,
    };

    /// The core alone: no profile, no optional tool.
    pub const CORE: Capabilities = Capabilities {
        parallel: false,
        check: false,
        upload: false,
        send_event: false,
    };
}

impl Default for Capabilities {
    fn default() -> Self {
        Self::ALL
    }
}

/// Refuses each key whose profile or tool is not offered.
pub(crate) fn check(offered: Capabilities, paths: &[String], steps: &[Step], issues: &mut Issues) {
    for (at, step) in paths.iter().zip(steps) {
        if !offered.parallel && matches!(step.kind, StepKind::Parallel(_)) {
            issues.push(
                path::child(at, "parallel"),
                "needs the parallel-1 profile, which this server does not offer",
            );
        }
        if !offered.check && step.check.is_some() {
            issues.push(
                path::child(at, "check"),
                "needs the check-1 profile, which this server does not offer: it runs checks only with an evaluator configured",
            );
        }
        if !offered.upload && step.evidence.contains(&EvidenceKind::File) {
            issues.push(
                path::child(at, "evidence"),
                "file evidence needs the upload tool, which this server does not offer",
            );
        }
        if !offered.send_event && matches!(step.kind, StepKind::WaitFor(_)) {
            issues.push(
                path::child(at, "wait_for"),
                "needs the send_event tool, which this server does not offer",
            );
        }
    }
}
