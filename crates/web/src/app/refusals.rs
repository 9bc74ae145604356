//! A refusal as a person reads it. The protocol's codes, messages and issues are
//! written for programs (`note: required with rejected`); a page says in a sentence
//! what to do, names each field to fix by its label, and keeps the protocol's own
//! words in a closed "Technical details" below, for whoever reports a problem.

use agentprocess_engine::{Code, ToolError};
use maud::{Markup, html};

use super::facts::label;

/// The prefix of an output field's form name, which is also how issues name it.
pub(crate) const OUTPUT: &str = "output.";

/// The prefix of an input field's form name, likewise.
pub(crate) const INPUTS: &str = "inputs.";

/// What a person may do about a refusal with `code`.
fn what_to_do(code: Code) -> &'static str {
    match code {
        Code::Invalid => "Some of what was sent needs fixing. Nothing was changed.",
        Code::NotAccepted => "What was sent does not meet the step's rules. Nothing was changed.",
        Code::Stale => "This changed since you opened the page. Look at it again, then try once more.",
        Code::Conflict => {
            "Someone got there first: this was already done, or someone else is doing it. Look at where it stands now."
        }
        Code::Forbidden => {
            "Your role in the organization does not allow this. If you need it, ask one of the organization's admins."
        }
        Code::NotFound => {
            "There is nothing here: it does not exist, or it belongs to another organization. Check the link."
        }
        Code::Retry => "The server could not do this just now. Nothing was changed: try again in a moment.",
    }
}

/// The box at the top of a page for a refusal: what to do, each issue in words, and
/// the protocol's words under "Technical details". A refusal by one of the
/// organization's policies of who decides says why in its own message, addressed to
/// the person: that is the sentence, and its issue stays in the details.
pub(crate) fn shown(error: &ToolError) -> Markup {
    if by_policy(error) {
        let words = format!("{} Nothing was changed.", sentence(&error.message));
        return boxed(error, &words, &[]);
    }
    shown_as(error, what_to_do(error.code))
}

/// Whether `error` is a refusal by one of the organization's policies of who decides.
fn by_policy(error: &ToolError) -> bool {
    error.code == Code::Forbidden
        && !error.issues.is_empty()
        && error
            .issues
            .iter()
            .all(|issue| issue.starts_with(agentprocess_service::POLICY_ISSUE))
}

/// The same, led by `sentence` instead of the code's own: for a page where the code
/// alone does not say what happened (a sign-in that failed is `forbidden`).
pub(crate) fn shown_as(error: &ToolError, sentence: &str) -> Markup {
    boxed(error, sentence, &error.issues)
}

/// The box: `sentence`, the `told` issues in words, and under "Technical details" the
/// code, the message and every issue.
fn boxed(error: &ToolError, sentence: &str, told: &[String]) -> Markup {
    let fields: Vec<(Option<&str>, String)> = told.iter().map(|issue| in_words(issue)).collect();
    html! {
        div class="problems" role="alert" {
            h2 { "There is a problem" }
            p { (sentence) }
            @if !fields.is_empty() {
                ul {
                    @for (field, words) in &fields {
                        li { @match field { Some(id) => a href=(format!("#{id}")) { (words) }, None => (words) } }
                    }
                }
            }
            details {
                summary { "Technical details" }
                dl {
                    dt { "Code" } dd { code { (error.code.as_str()) } }
                    dt { "Message" } dd { (error.message) }
                    @if !error.issues.is_empty() {
                        dt { "Issues" } dd { ul { @for issue in &error.issues { li { code { (issue) } } } } }
                    }
                }
            }
        }
    }
}

/// An issue as a sentence naming its field by label (`Amount must be a number.`),
/// with the form field it is about when a form names its fields by the issue's path
/// (`output.amount`).
pub(crate) fn in_words(issue: &str) -> (Option<&str>, String) {
    let Some((path, text)) = issue.split_once(": ") else {
        return (None, sentence(issue));
    };
    let field = [OUTPUT, INPUTS]
        .iter()
        .any(|prefix| path.starts_with(prefix))
        .then_some(path);
    let name = [OUTPUT, INPUTS, "input."]
        .iter()
        .find_map(|prefix| path.strip_prefix(prefix))
        .unwrap_or(path);
    (field, format!("{} {}", named(name), predicate(text)))
}

/// The label of a field's path: `regions[2]` reads "Regions, item 3".
fn named(path: &str) -> String {
    let (name, rest) = path.split_at(path.find(['.', '[']).unwrap_or(path.len()));
    let mut words = label(name);
    for part in rest.split(['.', '[']).filter(|part| !part.is_empty()) {
        match part.strip_suffix(']').and_then(|index| index.parse::<usize>().ok()) {
            Some(index) => words.push_str(&format!(", item {}", index.saturating_add(1))),
            None => words.push_str(&format!(", {}", label(part).to_lowercase())),
        }
    }
    words
}

/// What an issue's text says of its field, as the rest of a sentence.
fn predicate(text: &str) -> String {
    let expected = |what: &str| format!("must be {what}.");
    if let Some(decision) = text.strip_prefix("required with ") {
        return format!("is needed when the decision is \u{201c}{decision}\u{201d}.");
    }
    if let Some(choices) = text.split_once(" is not one of ").map(|(_, choices)| choices) {
        return format!("must be one of {choices}.");
    }
    if let Some(most) = text.strip_prefix("longer than ") {
        return format!("must be at most {most} long.");
    }
    match text {
        "missing" | "required" | "must not be empty" => "is needed.".to_owned(),
        "expected boolean" => expected("yes or no"),
        "expected number" | "expected a number" => expected("a number"),
        "expected an integer" => expected("a whole number"),
        "expected string" | "expected a string" => expected("text"),
        "expected list" => expected("a list, one item per line"),
        "expected object" | "expected an object" => expected("a JSON object"),
        "expected person (email)" => expected("a person's email address"),
        "not declared" => "is not a field of this form.".to_owned(),
        _ if text.starts_with("expected date ") => expected("a real date"),
        _ if text.starts_with("expected datetime ") => {
            expected("a date and time with its offset, such as 2027-01-31T17:00:00+01:00")
        }
        _ if text.starts_with("null is not a value") => "is needed, or left out when it is optional.".to_owned(),
        _ => format!("\u{2014} {text}."),
    }
}

/// `text` as a sentence: capitalized, with its full stop.
pub(crate) fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        let mut words: String = first.to_uppercase().collect();
        words.push_str(chars.as_str());
        if !words.ends_with('.') {
            words.push('.');
        }
        words
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issues_read_as_sentences_naming_the_field() {
        let cases = [
            (
                "note: required with rejected",
                None,
                "Note is needed when the decision is \u{201c}rejected\u{201d}.",
            ),
            (
                "output.annualSpend: expected number",
                Some("output.annualSpend"),
                "Annual spend must be a number.",
            ),
            (
                "inputs.tier: \"x\" is not one of gold, silver",
                Some("inputs.tier"),
                "Tier must be one of gold, silver.",
            ),
            (
                "output.regions[2]: expected string",
                Some("output.regions[2]"),
                "Regions, item 3 must be text.",
            ),
            (
                "output.due_on: expected date (a real calendar date, YYYY-MM-DD)",
                Some("output.due_on"),
                "Due on must be a real date.",
            ),
            (
                "email: exists already in acme",
                None,
                "Email \u{2014} exists already in acme.",
            ),
            ("the file is empty", None, "The file is empty."),
        ];
        for (issue, field, words) in cases {
            assert_eq!(in_words(issue), (field, words.to_owned()), "{issue}");
        }
    }

    #[test]
    fn the_protocols_words_stay_in_the_details() {
        let error = ToolError::new(
            Code::Invalid,
            "those arguments do not go together",
            vec!["note: required with rejected".to_owned()],
        );
        let html = shown(&error).into_string();
        let (visible, details) = html.split_once("<details>").expect("details");
        assert!(visible.contains("Nothing was changed"), "{html}");
        assert!(visible.contains("Note is needed"), "{html}");
        assert!(!visible.contains("those arguments"), "{html}");
        assert!(details.contains("those arguments do not go together"), "{html}");
        assert!(details.contains("<code>note: required with rejected</code>"), "{html}");
        assert!(details.contains("<code>invalid</code>"), "{html}");
    }

    #[test]
    fn a_refusal_by_a_policy_says_why_to_the_person() {
        let error = ToolError::new(
            Code::Forbidden,
            "you completed prepare_payment in this run; under the organization's four-eyes policy someone else \
             decides this approval",
            vec!["policy: fourEyes: pat@x.test completed prepare_payment in this run".to_owned()],
        );
        let html = shown(&error).into_string();
        let (visible, details) = html.split_once("<details>").expect("details");
        assert!(
            visible.contains("You completed prepare_payment in this run; under the organization's four-eyes"),
            "{html}"
        );
        assert!(visible.contains("Nothing was changed."), "{html}");
        assert!(!visible.contains("Your role"), "{html}");
        assert!(!visible.contains("pat@x.test"), "{html}");
        assert!(
            details.contains("<code>policy: fourEyes: pat@x.test completed"),
            "{html}"
        );
    }
}
