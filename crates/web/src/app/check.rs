//! A check-1 verdict as people read it: the verdict, the model, and each question with
//! its answer and result.

use jiff::tz::TimeZone;
use maud::{Markup, html};
use serde_json::Value;

use super::time::when;

/// `check` (a `check-verdict.json` object) as a table under a one-line summary.
pub(super) fn verdict(check: &Value, zone: &TimeZone) -> Markup {
    let text = |value: &Value| match value {
        Value::String(text) => text.clone(),
        Value::Null => "no answer".to_owned(),
        other => other.to_string(),
    };
    let at = check["at"].as_str().and_then(|at| at.parse::<jiff::Timestamp>().ok());
    html! {
        div class="verdict" {
            p {
                "Check: " strong { (text(&check["verdict"])) }
                @if check["advisory"] == true { " (advisory)" }
                " · " (text(&check["model"]))
                @if let Some(at) = at { " · " (when(zone, at)) }
                @if check["truncated"] == true { " · shown the run data cut to fit" }
            }
            @if let Some(questions) = check["questions"].as_array().filter(|questions| !questions.is_empty()) {
                table {
                    thead { tr { th scope="col" { "Question" } th scope="col" { "Answer" } th scope="col" { "Confidence" } th scope="col" { "Result" } } }
                    tbody {
                        @for question in questions {
                            tr {
                                td { (text(&question["ask"])) }
                                td { (text(&question["answer"])) }
                                td { @if let Some(confidence) = question.get("confidence") { (text(confidence)) } }
                                td { (text(&question["result"])) }
                            }
                        }
                    }
                }
            }
        }
    }
}
