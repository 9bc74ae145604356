//! The check agreement page of a process: a form for the versions, the window and the
//! target, then for each checked step its advisory verdicts against the approvers'
//! decisions, and a chart of the pass rate and the false-pass rate against the pass
//! threshold. Operators and admins only, as on the REST surface.

use std::sync::Arc;

use agentprocess_engine::{Code, ToolError};
use agentprocess_store::Role;
use agentprocess_views::agreement::{AgreementQuery, CurvePoint, DEFAULT_TARGET, StepAgreement};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use super::Visitor;
use super::layout::{page, refused};
use super::refusals;
use crate::session::Web;

/// The title of a report that cannot be shown.
const CANNOT: &str = "This report cannot be shown";

/// The form's fields, as sent (empty fields are absent).
#[derive(Debug, Default, Deserialize)]
pub(super) struct Asked {
    from_version: Option<String>,
    to_version: Option<String>,
    since: Option<String>,
    until: Option<String>,
    target: Option<String>,
}

/// A form field's text, when it was filled in.
fn filled(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|value| !value.is_empty())
}

impl Asked {
    /// The query, or every issue with the form.
    fn query(&self) -> Result<AgreementQuery, Vec<String>> {
        let mut issues = Vec::new();
        let mut number = |name: &str, value: &Option<String>| {
            filled(value).and_then(|text| {
                text.parse::<u32>()
                    .map_err(|_| issues.push(format!("{name}: {text:?} is not a version number")))
                    .ok()
            })
        };
        let from = number("fromVersion", &self.from_version);
        let to = number("toVersion", &self.to_version);
        let target = filled(&self.target).and_then(|text| {
            text.parse::<f64>()
                .map_err(|_| issues.push(format!("target: {text:?} is not a number")))
                .ok()
        });
        let parsed = AgreementQuery::parse(from, to, filled(&self.since), filled(&self.until), target);
        match parsed {
            Ok(query) if issues.is_empty() => Ok(query),
            Ok(_) => Err(issues),
            Err(more) => {
                issues.extend(more);
                Err(issues)
            }
        }
    }
}

pub(super) async fn show(
    State(web): State<Arc<Web>>,
    visitor: Visitor,
    Path(name): Path<String>,
    Query(asked): Query<Asked>,
) -> Response {
    if !visitor.caller.identity.has_role(Role::Operator) {
        let error = ToolError::new(
            Code::Forbidden,
            "only operators and admins see how checks agree with approvers",
            vec!["role: operator required".to_owned()],
        );
        return refused(&visitor, CANNOT, &error);
    }
    let title = format!("Check agreement: {name}");
    let query = match asked.query() {
        Ok(query) => query,
        Err(issues) => {
            let body = html! { (refusals::shown(&ToolError::new(Code::Invalid, "the report's settings are not valid", issues))) (form(&name, &asked)) };
            return page(StatusCode::BAD_REQUEST, &title, Some(&visitor), body);
        }
    };
    let report = match web
        .service
        .admin()
        .check_agreement(visitor.caller.org(), &name, &query)
        .await
    {
        Ok(report) => report,
        Err(error) => return refused(&visitor, CANNOT, &error.into_tool_error()),
    };
    let body = html! {
        p { "Each checked step's " strong { "advisory" } " verdicts against the decisions of the approval after it. "
            "A false pass is a verdict the check passed and the approver rejected. "
            (report.runs) " runs read." }
        (form(&name, &asked))
        @if report.steps.is_empty() {
            p { "No checked step of this process is followed by an approval." }
        }
        @for step in &report.steps { (step_section(step, report.target)) }
    };
    page(StatusCode::OK, &title, Some(&visitor), body)
}

fn form(name: &str, asked: &Asked) -> Markup {
    let value = |value: &Option<String>| value.clone().unwrap_or_default();
    html! {
        form method="get" action=(format!("/processes/{name}/check-agreement")) class="filters" {
            div class="field" { label for="from_version" { "From version" } input id="from_version" name="from_version" inputmode="numeric" value=(value(&asked.from_version)); }
            div class="field" { label for="to_version" { "To version" } input id="to_version" name="to_version" inputmode="numeric" value=(value(&asked.to_version)); }
            div class="field" { label for="since" { "Verdicts since (RFC 3339)" } input id="since" name="since" value=(value(&asked.since)); }
            div class="field" { label for="until" { "Verdicts until" } input id="until" name="until" value=(value(&asked.until)); }
            div class="field" { label for="target" { "Target false-pass rate (0–1)" } input id="target" name="target" inputmode="decimal" value=(asked.target.clone().unwrap_or_else(|| DEFAULT_TARGET.to_string())); }
            button type="submit" { "Show" }
        }
    }
}

fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "–".to_owned(), |rate| format!("{:.1}%", rate * 100.0))
}

fn step_section(step: &StepAgreement, target: f64) -> Markup {
    html! {
        section aria-labelledby=(format!("s-{}", step.step)) {
            h2 id=(format!("s-{}", step.step)) { (step.step) " → " (step.approval) }
            p { (step.pairs) " verdicts with a decision after them." }
            table {
                caption { "Verdicts against decisions" }
                thead { tr { th scope="col" { "Verdict" } th scope="col" { "Approved" } th scope="col" { "Rejected" } } }
                tbody {
                    @for row in &step.matrix {
                        tr { th scope="row" { (row.verdict) } td { (row.approved) } td { (row.rejected) } }
                    }
                }
            }
            dl {
                dt { "Pass rate" } dd { (percent(step.pass_rate)) }
                dt { "False-pass rate" } dd { (percent(step.false_pass_rate)) }
                dt { "False-fail rate" } dd { (percent(step.false_fail_rate)) }
                dt { "Unsure rate" } dd { (percent(step.unsure_rate)) }
                dt { "Threshold for a false-pass rate at or under " (percent(Some(target))) }
                dd {
                    @match &step.threshold {
                        Some(threshold) => {
                            "pass: " strong { (threshold.pass) }
                            @if let Some(fail) = threshold.fail { ", fail: " strong { (fail) } }
                            " (false-pass rate " (percent(Some(threshold.false_pass_rate))) ", pass rate " (percent(Some(threshold.pass_rate))) ")"
                        }
                        None => { "none: no threshold would have met it" }
                    }
                }
            }
            figure {
                (chart(&step.curve))
                figcaption { "Pass rate (solid) and false-pass rate (dashed) at each yes/no pass threshold from 0.5 to 1." }
            }
        }
    }
}

/// The curve as an SVG line chart: x the threshold (0.5–1), y the rate (0–1).
fn chart(curve: &[CurvePoint]) -> Markup {
    const WIDTH: f64 = 480.0;
    const HEIGHT: f64 = 200.0;
    const LEFT: f64 = 40.0;
    const BOTTOM: f64 = 24.0;
    let x = |threshold: f64| LEFT + (threshold - 0.5) / 0.5 * (WIDTH - LEFT - 8.0);
    let y = |rate: f64| 8.0 + (1.0 - rate) * (HEIGHT - BOTTOM - 8.0);
    let line = |rate: &dyn Fn(&CurvePoint) -> Option<f64>| -> String {
        curve
            .iter()
            .filter_map(|point| rate(point).map(|value| format!("{:.1},{:.1}", x(point.pass), y(value))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let passes = line(&|point| Some(point.pass_rate));
    let false_passes = line(&|point| point.false_pass_rate);
    html! {
        svg class="chart" viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) role="img" aria-label="Pass rate and false-pass rate against the pass threshold" {
            line x1=(LEFT) y1=(y(0.0)) x2=(WIDTH - 8.0) y2=(y(0.0)) stroke="currentColor" {}
            line x1=(LEFT) y1=(y(0.0)) x2=(LEFT) y2=(y(1.0)) stroke="currentColor" {}
            @for tick in [0.5, 0.6, 0.7, 0.8, 0.9, 1.0] {
                text x=(x(tick)) y=(HEIGHT - 6.0) text-anchor="middle" font-size="11" { (tick) }
            }
            @for tick in [0.0, 0.5, 1.0] {
                text x=(LEFT - 4.0) y=(y(tick) + 4.0) text-anchor="end" font-size="11" { (format!("{:.0}%", tick * 100.0)) }
            }
            polyline points=(passes) fill="none" stroke="currentColor" stroke-width="2" {}
            polyline points=(false_passes) fill="none" stroke="currentColor" stroke-width="2" stroke-dasharray="5 4" {}
        }
    }
}
