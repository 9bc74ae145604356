//! The check agreement report as text for `agentprocess admin check-agreement`.

use std::fmt::Write as _;

use agentprocess_views::agreement::AgreementReport;

/// `report` as a few lines per checked step: the confusion matrix, the rates, and the
/// threshold that meets the target.
pub(crate) fn text(report: &AgreementReport) -> String {
    let mut out = String::new();
    let rate = |rate: Option<f64>| rate.map_or_else(|| "–".to_owned(), |rate| format!("{:.1}%", rate * 100.0));
    let _ = writeln!(
        out,
        "{}: {} runs read, target false-pass rate {}",
        report.process,
        report.runs,
        rate(Some(report.target))
    );
    if report.steps.is_empty() {
        let _ = writeln!(out, "no checked step is followed by an approval");
    }
    for step in &report.steps {
        let _ = writeln!(
            out,
            "\n{} → {}: {} verdicts with a decision",
            step.step, step.approval, step.pairs
        );
        let _ = writeln!(out, "  verdict   approved  rejected");
        for row in &step.matrix {
            let _ = writeln!(out, "  {:<8}  {:>8}  {:>8}", row.verdict, row.approved, row.rejected);
        }
        let _ = writeln!(
            out,
            "  pass rate {}, false-pass rate {}, false-fail rate {}, unsure rate {}",
            rate(step.pass_rate),
            rate(step.false_pass_rate),
            rate(step.false_fail_rate),
            rate(step.unsure_rate)
        );
        match &step.threshold {
            Some(threshold) => {
                let _ = writeln!(
                    out,
                    "  pass: {} meets the target (false-pass rate {}, pass rate {}){}",
                    threshold.pass,
                    rate(Some(threshold.false_pass_rate)),
                    rate(Some(threshold.pass_rate)),
                    threshold.fail.map(|fail| format!("; fail: {fail}")).unwrap_or_default()
                );
            }
            None => {
                let _ = writeln!(out, "  no pass threshold meets the target");
            }
        }
    }
    out
}
