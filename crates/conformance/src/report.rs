//! Outcomes, the text and JUnit reports, and the expected-failures list.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Why a case stopped before it could pass: something it checks did not hold, or
/// (`skipped`) the server offers nothing it could run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The explanation.
    pub(crate) reason: String,
    /// Whether the case could not run rather than failed.
    pub(crate) skipped: bool,
}

impl Failure {
    /// A failure with this explanation.
    pub(crate) fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            skipped: false,
        }
    }

    /// The case cannot run against this server, for this reason.
    pub(crate) fn skip(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            skipped: true,
        }
    }

    /// The outcome this stop gives its case.
    pub(crate) fn outcome(self) -> Outcome {
        if self.skipped {
            Outcome::Skipped(self.reason)
        } else {
            Outcome::Failed(self.reason)
        }
    }
}

/// `Err(Failure)` unless `condition` holds.
macro_rules! ensure {
    ($condition:expr, $($reason:tt)+) => {
        if !$condition {
            return Err($crate::report::Failure::new(format!($($reason)+)));
        }
    };
}
pub(crate) use ensure;

/// How a case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Everything it checks held.
    Passed,
    /// Everything it checks held; what it did, for the report (the routes each walk
    /// took).
    PassedWith(String),
    /// Something it checks did not hold.
    Failed(String),
    /// It could not run against this server, and why.
    Skipped(String),
}

/// One named case and its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The case's name, `group/what` (`errors/stale-after-renew`).
    pub name: String,
    /// Where the rule it checks is written (`tools.md, renew`).
    pub source: &'static str,
    /// How it ended.
    pub outcome: Outcome,
}

/// Every case of a run, in the order they ran.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The cases.
    pub cases: Vec<Case>,
}

/// Cases known to fail on the server under test, each with its reason
/// (`--expected-failures`, a YAML list of `{ case, reason }`).
#[derive(Debug, Clone, Default)]
pub struct ExpectedFailures(pub BTreeMap<String, String>);

#[derive(serde::Deserialize)]
struct Expected {
    case: String,
    reason: String,
}

impl ExpectedFailures {
    /// Reads the YAML list; an empty file is an empty list.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let listed: Vec<Expected> = serde_yaml_ng::from_str(&text)
            .map_err(|error| format!("{}: expected a list of {{ case, reason }}: {error}", path.display()))?;
        Ok(Self(
            listed.into_iter().map(|entry| (entry.case, entry.reason)).collect(),
        ))
    }
}

/// How one case counts once the expected failures are taken into account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Pass,
    Fail,
    Skip,
    ExpectedFail,
    /// Listed as expected to fail, yet it passed: the list is out of date.
    UnexpectedPass,
}

impl Report {
    /// Records a case's outcome.
    pub(crate) fn record(&mut self, name: String, source: &'static str, outcome: Outcome) {
        self.cases.push(Case { name, source, outcome });
    }

    fn verdict(case: &Case, expected: &ExpectedFailures) -> Verdict {
        let listed = expected.0.contains_key(&case.name);
        match (&case.outcome, listed) {
            (Outcome::Passed | Outcome::PassedWith(_), false) => Verdict::Pass,
            (Outcome::Passed | Outcome::PassedWith(_), true) => Verdict::UnexpectedPass,
            (Outcome::Failed(_), false) => Verdict::Fail,
            (Outcome::Failed(_), true) => Verdict::ExpectedFail,
            (Outcome::Skipped(_), _) => Verdict::Skip,
        }
    }

    /// True when every case that ran passed or failed as listed, and no listed case
    /// passed.
    pub fn succeeded(&self, expected: &ExpectedFailures) -> bool {
        self.cases
            .iter()
            .all(|case| !matches!(Self::verdict(case, expected), Verdict::Fail | Verdict::UnexpectedPass))
    }

    /// One line per case, then `conformance: P passed, F failed, S skipped`.
    pub fn text(&self, expected: &ExpectedFailures) -> String {
        let mut text = String::new();
        let (mut passed, mut failed, mut skipped) = (0, 0, 0);
        for case in &self.cases {
            let verdict = Self::verdict(case, expected);
            let (label, detail) = match (&case.outcome, verdict) {
                (_, Verdict::UnexpectedPass) => {
                    failed += 1;
                    ("FAIL", "listed in the expected failures, but it passes now".to_owned())
                }
                (Outcome::Passed, _) => {
                    passed += 1;
                    ("pass", String::new())
                }
                (Outcome::PassedWith(note), _) => {
                    passed += 1;
                    ("pass", note.clone())
                }
                (Outcome::Failed(reason), Verdict::ExpectedFail) => {
                    passed += 1;
                    ("xfail", format!("{} (expected: {})", reason, expected.0[&case.name]))
                }
                (Outcome::Failed(reason), _) => {
                    failed += 1;
                    ("FAIL", reason.clone())
                }
                (Outcome::Skipped(reason), _) => {
                    skipped += 1;
                    ("skip", reason.clone())
                }
            };
            let _ = write!(text, "{label:<5} {}  [{}]", case.name, case.source);
            if !detail.is_empty() {
                let _ = write!(text, "\n        {}", detail.replace('\n', "\n        "));
            }
            text.push('\n');
        }
        let _ = writeln!(text, "conformance: {passed} passed, {failed} failed, {skipped} skipped");
        text
    }

    /// The report as JUnit XML, one `testcase` per case.
    pub fn junit(&self, expected: &ExpectedFailures) -> String {
        let count = |wanted: &[Verdict]| {
            self.cases
                .iter()
                .filter(|case| wanted.contains(&Self::verdict(case, expected)))
                .count()
        };
        let failures = count(&[Verdict::Fail, Verdict::UnexpectedPass]);
        let skipped = count(&[Verdict::Skip]);
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            xml,
            "<testsuite name=\"agentprocess-conformance\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">",
            self.cases.len()
        );
        for case in &self.cases {
            let (group, _) = case.name.split_once('/').unwrap_or(("conformance", &case.name));
            let _ = write!(
                xml,
                "  <testcase classname=\"{}\" name=\"{}\">",
                escape(group),
                escape(&case.name)
            );
            match (&case.outcome, Self::verdict(case, expected)) {
                (_, Verdict::UnexpectedPass) => {
                    xml.push_str("<failure message=\"listed in the expected failures, but it passes now\"/>");
                }
                (Outcome::Failed(reason), Verdict::Fail) => {
                    let _ = write!(xml, "<failure message=\"{}\"/>", escape(reason));
                }
                (Outcome::Failed(reason), _) => {
                    let _ = write!(xml, "<system-out>expected failure: {}</system-out>", escape(reason));
                }
                (Outcome::Skipped(reason), _) => {
                    let _ = write!(xml, "<skipped message=\"{}\"/>", escape(reason));
                }
                (Outcome::PassedWith(note), _) => {
                    let _ = write!(xml, "<system-out>{}</system-out>", escape(note));
                }
                (Outcome::Passed, _) => {}
            }
            xml.push_str("</testcase>\n");
        }
        xml.push_str("</testsuite>\n");
        xml
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Whether `name` matches `pattern`, where `*` stands for any text.
pub(crate) fn matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return name.contains(pattern);
    }
    let mut rest = name;
    for (index, part) in parts.iter().enumerate() {
        if index == 0 {
            let Some(after) = rest.strip_prefix(part) else {
                return false;
            };
            rest = after;
        } else if index == parts.len() - 1 {
            return rest.ends_with(part);
        } else if let Some(at) = rest.find(part) {
            rest = &rest[at + part.len()..];
        } else {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Report {
        let mut report = Report::default();
        report.record("a/passes".to_owned(), "s", Outcome::Passed);
        report.record("a/fails".to_owned(), "s", Outcome::Failed("broke <here>".to_owned()));
        report.record("b/skips".to_owned(), "s", Outcome::Skipped("no clock".to_owned()));
        report
    }

    #[test]
    fn an_unlisted_failure_and_a_listed_pass_both_fail_the_run() {
        let report = report();
        assert!(!report.succeeded(&ExpectedFailures::default()));
        let listed = |name: &str| ExpectedFailures([(name.to_owned(), "known".to_owned())].into());
        assert!(report.succeeded(&listed("a/fails")));
        assert!(!report.succeeded(&listed("a/passes")));
        assert!(
            report
                .text(&listed("a/fails"))
                .ends_with("conformance: 2 passed, 0 failed, 1 skipped\n")
        );
        assert!(
            report
                .text(&ExpectedFailures::default())
                .ends_with("conformance: 1 passed, 1 failed, 1 skipped\n")
        );
    }

    #[test]
    fn junit_counts_and_escapes() {
        let xml = report().junit(&ExpectedFailures::default());
        assert!(xml.contains("tests=\"3\" failures=\"1\" skipped=\"1\""), "{xml}");
        assert!(xml.contains("<failure message=\"broke &lt;here&gt;\"/>"), "{xml}");
    }

    #[test]
    fn patterns_match_substrings_or_globs() {
        assert!(matches("errors", "errors/stale-after-renew"));
        assert!(matches("walk/*", "walk/invoice-approval"));
        assert!(matches("*renew", "errors/stale-after-renew"));
        assert!(matches("e*/s*w", "errors/stale-after-renew"));
        assert!(!matches("walk/*", "errors/walk"));
    }
}
