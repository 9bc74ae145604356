//! Acceptance (spec §6 rule 3): does a submission complete its step? Every rule that
//! needs only the step and the submission; file verification needs the stored bytes
//! and is the caller's, whose issues join these.

use agentprocess_format::{EvidenceKind, Next, Step};
use serde_json::{Map, Value};

use crate::fields::{PersonFormat, check_fields};

/// Longest `summary`, in characters (tools.md: 1–2000).
pub const MAX_SUMMARY_CHARS: usize = 2000;

/// One evidence item as submitted: `{ kind, ref }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceItem {
    /// `file` (an upload id) or `link` (a URL or document number).
    pub kind: EvidenceKind,
    /// `ref`.
    pub reference: String,
    /// For a file the caller verified: the SHA-256 recorded at upload.
    pub sha256: Option<String>,
}

/// What a `submit`, or a `decide … completed`, carries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Submission {
    /// `output`.
    pub output: Map<String, Value>,
    /// `evidence`.
    pub evidence: Vec<EvidenceItem>,
    /// `summary`: what was done and found.
    pub summary: Option<String>,
    /// `next`: the chosen route.
    pub next: Option<String>,
    /// `reason`: why that route.
    pub reason: Option<String>,
}

/// Who submits: agents must write a summary, people may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitter {
    /// `submit` from an agent.
    Agent,
    /// `decide … completed` from a person.
    Person,
}

/// Every issue that keeps `submission` from completing `step`, in the order: summary,
/// output fields, evidence, next and reason.
pub fn check_submission(step: &Step, submission: &Submission, by: Submitter, person: PersonFormat) -> Vec<String> {
    let mut issues = Vec::new();
    match submission.summary.as_deref().map(str::trim) {
        None | Some("") if by == Submitter::Agent => issues.push("summary: missing".to_owned()),
        Some(summary) if summary.chars().count() > MAX_SUMMARY_CHARS => {
            issues.push(format!("summary: longer than {MAX_SUMMARY_CHARS} characters"));
        }
        _ => {}
    }
    issues.extend(check_fields(&step.output, &submission.output, "output", person));
    for (index, item) in submission.evidence.iter().enumerate() {
        if item.reference.trim().is_empty() {
            issues.push(format!("evidence[{index}].ref: missing"));
        } else if item.kind == EvidenceKind::Link && !link_accepted(&item.reference) {
            issues.push(format!(
                "evidence[{index}].ref: a link is an http or https URL, or a reference with no scheme (a document number)"
            ));
        }
    }
    for kind in &step.evidence {
        if !submission
            .evidence
            .iter()
            .any(|item| item.kind == *kind && !item.reference.trim().is_empty())
        {
            issues.push(format!("evidence: {} required", kind.name()));
        }
    }
    issues.extend(check_route(step, submission));
    issues
}

/// `next` and `reason`: required on a step whose `next` is a list, one of its routes;
/// not accepted on any other step.
fn check_route(step: &Step, submission: &Submission) -> Vec<String> {
    let mut issues = Vec::new();
    let reason_given = submission
        .reason
        .as_deref()
        .is_some_and(|reason| !reason.trim().is_empty());
    match &step.next {
        Some(Next::Routes(routes)) => {
            let names: Vec<&str> = routes.iter().map(|route| route.to.as_str()).collect();
            match submission.next.as_deref() {
                None => issues.push(format!("next: required, one of {}", names.join(", "))),
                Some(chosen) if !names.contains(&chosen) => {
                    issues.push(format!("next: {chosen:?} is not one of {}", names.join(", ")));
                }
                Some(_) => {}
            }
            if !reason_given {
                issues.push("reason: required".to_owned());
            }
        }
        _ => {
            if submission.next.is_some() {
                issues.push("next: not accepted; this step has a single next".to_owned());
            }
            if submission.reason.is_some() {
                issues.push("reason: not accepted; this step has a single next".to_owned());
            }
        }
    }
    issues
}

/// Whether a link's `ref` is accepted: an `http`/`https` URL, or a reference that is no
/// URL at all (`INV-1001`, `TEST:ALERT-7`). A ref with a scheme browsers act on
/// (`javascript:`, `data:`, `file:`...), or any other `scheme://`, is refused: a page
/// that shows the link could be made to run or open it.
pub fn link_accepted(reference: &str) -> bool {
    // Browsers drop whitespace and control characters inside a scheme.
    let squeezed: String = reference
        .chars()
        .filter(|c| !c.is_ascii_whitespace() && !c.is_control())
        .collect::<String>()
        .to_ascii_lowercase();
    if is_web_link(reference) {
        return true;
    }
    const ACTIVE: [&str; 7] = [
        "javascript:",
        "vbscript:",
        "data:",
        "file:",
        "blob:",
        "filesystem:",
        "about:",
    ];
    let scheme_end = squeezed.find(':').filter(|at| {
        squeezed[..*at]
            .chars()
            .enumerate()
            .all(|(index, c)| c.is_ascii_alphabetic() || (index > 0 && (c.is_ascii_digit() || "+-.".contains(c))))
    });
    let other_url = scheme_end.is_some_and(|at| squeezed[at + 1..].starts_with("//"));
    !other_url && !ACTIVE.iter().any(|scheme| squeezed.starts_with(scheme))
}

/// Whether `reference` is an `http` or `https` URL as written, so a page may make it a
/// link; anything else is shown as text.
pub fn is_web_link(reference: &str) -> bool {
    let lower = reference.get(..8).unwrap_or(reference).to_ascii_lowercase();
    (lower.starts_with("http://") || lower.starts_with("https://"))
        && !reference.chars().any(|c| c.is_ascii_whitespace() || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_web_urls_or_references_without_a_scheme() {
        for accepted in [
            "https://example.com/a",
            "HTTP://example.com",
            "INV-1001",
            "TEST:ALERT-7",
            "mailto:a@b.c",
        ] {
            assert!(link_accepted(accepted), "{accepted}");
        }
        for refused in [
            "javascript:alert(1)",
            " JavaScript:alert(1)",
            "java\tscript:alert(1)",
            "data:text/html,<script>x()</script>",
            "vbscript:x",
            "file:///etc/passwd",
            "ftp://files.example.com/x",
        ] {
            assert!(!link_accepted(refused), "{refused}");
        }
        assert!(is_web_link("https://example.com/a"));
        assert!(!is_web_link("https://example.com/a b"));
        assert!(!is_web_link("INV-1001"));
        assert!(!is_web_link("javascript:alert(1)"));
    }
}
