//! How a person reads a process: a field's name as a label ("Expected annual spend"),
//! a step's title from the heading of its section of the body, and the fields a step's
//! words name. The web pages and the messages people are sent read a process alike.

use agentprocess_format::{Field, Fields, ProcessDocument};
use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use serde_json::{Map, Value};

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// What a person calls step `id`: the heading of its section of the process body
/// (`## Finance approval`), or its id read as words.
pub fn step_title(body: &str, id: &str) -> String {
    section(body, id)
        .and_then(heading_text)
        .filter(|heading| !heading.is_empty() && heading != id)
        .unwrap_or_else(|| label(id))
}

/// The inputs that say what an item on step `step` is about: those its text or its
/// section of the body names (by name or label), or else the first three declared.
pub fn about<'a>(declared: &'a Fields, body: &str, step: &str, text: &str) -> Vec<(&'a str, &'a Field)> {
    let all: Vec<(&str, &Field)> = declared.0.iter().map(|(name, field)| (name.as_str(), field)).collect();
    let named = named(&all, body, step, text);
    if named.is_empty() {
        all.into_iter().take(3).collect()
    } else {
        named
    }
}

/// A value as text for people, in a form or a message: a string as it is, anything else
/// as JSON (numbers keep their digits).
pub fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// What an item on step `step` is about, with the values a run holds: the inputs its
/// words name (or the first three declared), then the latest `outputs` of earlier
/// steps that they name.
pub fn facts_about<'a>(
    document: &'a ProcessDocument,
    body: &str,
    inputs: &'a Map<String, Value>,
    outputs: &'a Map<String, Value>,
    step: &str,
    text: &str,
) -> Vec<(&'a str, &'a Field, Option<&'a Value>)> {
    let mut shown: Vec<(&str, &Field, Option<&Value>)> = about(&document.inputs, body, step, text)
        .into_iter()
        .map(|(name, field)| (name, field, inputs.get(name)))
        .collect();
    let mut handed_in: Vec<(&str, &Field)> = Vec::new();
    for (name, field) in document.steps.iter().flat_map(|step| step.output.0.iter()) {
        let fresh = !handed_in.iter().any(|(seen, _)| seen == name) && document.inputs.get(name).is_none();
        if fresh && outputs.contains_key(name) {
            handed_in.push((name.as_str(), field));
        }
    }
    shown.extend(
        named(&handed_in, body, step, text)
            .into_iter()
            .map(|(name, field)| (name, field, outputs.get(name))),
    );
    shown
}

/// The fields of `declared` that the words of an item on step `step` name: its text
/// or its section of the body, by a field's name or its label.
pub fn named<'a>(declared: &[(&'a str, &'a Field)], body: &str, step: &str, text: &str) -> Vec<(&'a str, &'a Field)> {
    let words = format!("{text}\n{}", section(body, step).unwrap_or_default()).to_lowercase();
    declared
        .iter()
        .filter(|(name, _)| says(&words, &name.to_lowercase()) || says(&words, &label(name).to_lowercase()))
        .copied()
        .collect()
}

/// A field's name as a label: `expectedAnnualSpend` and `expected_annual_spend` both
/// read "Expected annual spend"; a run of capitals (`VAT`) stays as written.
pub fn label(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    for (index, &c) in chars.iter().enumerate() {
        let previous = index.checked_sub(1).map(|i| chars[i]);
        let next = chars.get(index + 1).copied();
        let starts_word = c.is_uppercase()
            && previous.is_some_and(|p| {
                p.is_lowercase() || p.is_ascii_digit() || (p.is_uppercase() && next.is_some_and(char::is_lowercase))
            });
        if c == '_' || c == '-' || c == ' ' || starts_word {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            if c == '_' || c == '-' || c == ' ' {
                continue;
            }
        }
        word.push(c);
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut text = String::new();
    for (index, word) in words.iter().enumerate() {
        if index > 0 {
            text.push(' ');
        }
        let acronym = word.chars().count() > 1 && word.chars().all(|c| c.is_uppercase() || c.is_ascii_digit());
        if acronym {
            text.push_str(word);
        } else if index == 0 {
            let mut chars = word.chars();
            if let Some(first) = chars.next() {
                text.extend(first.to_uppercase());
                text.push_str(&chars.as_str().to_lowercase());
            }
        } else {
            text.push_str(&word.to_lowercase());
        }
    }
    text
}

/// Whether `words` holds `phrase` as whole words: `id` is not in "decide".
fn says(words: &str, phrase: &str) -> bool {
    if phrase.trim().is_empty() {
        return false;
    }
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    words
        .match_indices(phrase)
        .any(|(at, found)| !word(words[..at].chars().next_back()) && !word(words[at + found.len()..].chars().next()))
}

/// A heading's text or a step id, as the two are compared: lowercase, with `_`, `-`
/// and runs of spaces as one space, and no backticks.
fn normal(text: &str) -> String {
    text.to_lowercase()
        .replace('`', "")
        .split(|c: char| c == '_' || c == '-' || c.is_whitespace())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The words of the first heading in `markdown`, without its Markdown (`## **Finance**
/// approval ##` reads "Finance approval").
pub fn heading_text(markdown: &str) -> Option<String> {
    let mut words: Option<String> = None;
    for event in Parser::new_ext(markdown, options()) {
        match event {
            Event::Start(Tag::Heading { .. }) => words = Some(String::new()),
            Event::Text(text) | Event::Code(text) => {
                if let Some(words) = words.as_mut() {
                    words.push_str(&text);
                }
            }
            Event::End(TagEnd::Heading(_)) => return words.map(|words| words.trim().to_owned()),
            _ => {}
        }
    }
    None
}

/// The section of `body` under the heading that names `step` (`## Check the vendor` or
/// ``## `check_vendor` `` for the step `check_vendor`), up to the next heading of its
/// level or above: the Markdown, heading included.
pub fn section<'a>(body: &'a str, step: &str) -> Option<&'a str> {
    let wanted = normal(step);
    let mut open: Option<(HeadingLevel, usize)> = None;
    let mut heading: Option<(HeadingLevel, usize, String)> = None;
    for (event, range) in Parser::new_ext(body, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                if let Some((open_level, start)) = open
                    && level <= open_level
                {
                    return Some(body[start..range.start].trim_end());
                }
                heading = Some((level, range.start, String::new()));
            }
            Event::Text(text) | Event::Code(text) => {
                if let Some((_, _, words)) = heading.as_mut() {
                    words.push_str(&text);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, start, words)) = heading.take()
                    && open.is_none()
                    && normal(&words) == wanted
                {
                    open = Some((level, start));
                }
            }
            _ => {}
        }
    }
    open.map(|(_, start)| body[start..].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentprocess_format::FieldType;

    #[test]
    fn names_read_as_labels() {
        for (name, expected) in [
            ("expectedAnnualSpend", "Expected annual spend"),
            ("needed_by", "Needed by"),
            ("sanctionsClear", "Sanctions clear"),
            ("VAT", "VAT"),
            ("vendorVATNumber", "Vendor VAT number"),
            ("item", "Item"),
            ("invoice-ref", "Invoice ref"),
            ("address2", "Address2"),
        ] {
            assert_eq!(label(name), expected, "{name}");
        }
    }

    #[test]
    fn an_item_is_about_the_inputs_its_step_names_or_else_the_first_declared() {
        let declared = Fields(
            ["vendorName", "invoiceRef", "amount", "expectedAnnualSpend"]
                .into_iter()
                .map(|name| (name.to_owned(), Field::of(FieldType::String)))
                .collect(),
        );
        let body = "# Vendor\n\n## Finance approval\n\nCheck the expected annual spend against the budget.\n";
        let named = about(&declared, body, "finance_approval", "Approve the amount.");
        let names: Vec<&str> = named.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["amount", "expectedAnnualSpend"]);
        let first = about(&declared, "", "other", "Approve it.");
        let names: Vec<&str> = first.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["vendorName", "invoiceRef", "amount"]);
        assert_eq!(step_title(body, "finance_approval"), "Finance approval");
        assert_eq!(step_title("", "finance_approval"), "Finance approval");
        assert_eq!(step_title("## `register`\n\nText", "register"), "Register");
        assert_eq!(
            step_title("## **Finance** approval ##\n", "finance_approval"),
            "Finance approval"
        );
        let short = Fields(vec![("id".to_owned(), Field::of(FieldType::String))]);
        assert_eq!(
            about(&short, "", "s", "Decide on it.").len(),
            1,
            "the first declared, not a match in decide"
        );
        assert!(says("check the id.", "id") && !says("decide", "id"));
    }

    #[test]
    fn a_step_has_the_section_whose_heading_names_it() {
        let body = "Intro.\n\n## Check the vendor\n\nLook them up.\n\n### Details\n\nMore.\n\n\
                    ## `place_order`\n\nPlace it.\n\n# Appendix\n\nEnd.\n";
        assert_eq!(
            section(body, "check-the-vendor"),
            Some("## Check the vendor\n\nLook them up.\n\n### Details\n\nMore.")
        );
        assert_eq!(section(body, "place_order"), Some("## `place_order`\n\nPlace it."));
        assert_eq!(section(body, "appendix"), Some("# Appendix\n\nEnd."));
        assert_eq!(section(body, "details"), Some("### Details\n\nMore."));
        assert_eq!(section(body, "archive"), None);
    }
}
