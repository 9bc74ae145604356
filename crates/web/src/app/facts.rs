//! Run data as a person reads it: each declared field under a label made from its name,
//! its `description` as help, and its value written for its type (numbers grouped,
//! dates and datetimes in the person's zone, booleans as yes or no, lists as lists,
//! links as links naming their host). The numbers keep their digits: grouping only
//! adds separators to the text the run holds.

use agentprocess_format::{Field, FieldType, Fields};
use jiff::tz::TimeZone;
use maud::{Markup, html};
use serde_json::{Map, Value};

use super::time::when;
pub(crate) use agentprocess_words::{label, shown, step_title};

/// A summary list of `values` as `declared` names them, in the declaration's order;
/// a value nothing declares (an older version's field) comes after, under its name.
pub(crate) fn summary(declared: &Fields, values: &Map<String, Value>, zone: &TimeZone) -> Markup {
    let undeclared = values.iter().filter(|(name, _)| declared.get(name).is_none());
    html! {
        dl class="summary" {
            @for (name, field) in &declared.0 {
                div {
                    dt {
                        (label(name))
                        @if let Some(description) = &field.description { small { (description) } }
                    }
                    dd {
                        @match values.get(name) {
                            Some(value) => (value_of(Some(field), value, zone)),
                            None => span class="quiet" { "Not given" },
                        }
                    }
                }
            }
            @for (name, value) in undeclared {
                div { dt { (label(name)) } dd { (value_of(None, value, zone)) } }
            }
        }
    }
}

/// One value, written for its declared type (as JSON text when it does not fit it).
pub(crate) fn value_of(field: Option<&Field>, value: &Value, zone: &TimeZone) -> Markup {
    let ty = field.map(|field| field.ty);
    match (ty, value) {
        // A value nothing declares is written for the type it has.
        (Some(FieldType::Number) | None, Value::Number(number)) => html! { (grouped(&number.to_string())) },
        (Some(FieldType::Boolean) | None, Value::Bool(yes)) => html! { @if *yes { "Yes" } @else { "No" } },
        (Some(FieldType::Date), Value::String(text)) => html! { (date(text)) },
        (Some(FieldType::Datetime), Value::String(text)) => match text.parse::<jiff::Timestamp>() {
            Ok(at) => when(zone, at),
            Err(_) => html! { (text) },
        },
        (_, Value::Array(items)) => {
            let item = field.and_then(|field| field.items.as_deref());
            html! {
                @if items.is_empty() { span class="quiet" { "None" } }
                @else { ul class="values" { @for each in items { li { (value_of(item, each, zone)) } } } }
            }
        }
        (_, Value::Object(members)) => html! {
            dl class="summary nested" {
                @for (name, member) in members { div { dt { (label(name)) } dd { (value_of(None, member, zone)) } } }
            }
        },
        (_, Value::String(text)) => link_or_text(text),
        _ => html! { (shown(value)) },
    }
}

/// A web address as a link that names the host the browser will open; other text,
/// and an address that carries a user name or password (which can make another host
/// look like the one named), as it is.
pub(crate) fn link_or_text(text: &str) -> Markup {
    let host = Some(text)
        .filter(|text| agentprocess_engine::is_web_link(text))
        .and_then(|text| url::Url::parse(text).ok())
        .filter(|url| url.username().is_empty() && url.password().is_none())
        .and_then(|url| url.host_str().map(str::to_owned));
    match host {
        Some(host) => {
            html! { a class="link" href=(text) rel="noopener noreferrer" { (text) } " " small { "(" (host) ")" } }
        }
        None => html! { (text) },
    }
}

/// A date (`2027-03-01`) as people write it: 1 March 2027.
fn date(text: &str) -> String {
    match text.parse::<jiff::civil::Date>() {
        Ok(date) => date.strftime("%-d %B %Y").to_string(),
        Err(_) => text.to_owned(),
    }
}

/// A decimal number's text with its whole part grouped by thousands (`1250.5` reads
/// 1,250.5); other spellings (`1e5`) are left as written.
fn grouped(text: &str) -> String {
    let (sign, unsigned) = text.strip_prefix('-').map_or(("", text), |rest| ("-", rest));
    let (whole, fraction) = unsigned.split_once('.').map_or((unsigned, None), |(w, f)| (w, Some(f)));
    if whole.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || fraction.is_some_and(|f| !f.bytes().all(|b| b.is_ascii_digit()))
    {
        return text.to_owned();
    }
    let mut out = String::from(sign);
    for (index, digit) in whole.chars().enumerate() {
        if index > 0 && (whole.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    if let Some(fraction) = fraction {
        out.push('.');
        out.push_str(fraction);
    }
    out
}

/// The fields whose values differ between `before` and `now`, with both values: what a
/// rework changed.
pub(crate) fn changed_fields<'a>(
    before: &'a Map<String, Value>,
    now: &'a Map<String, Value>,
) -> Vec<(&'a str, Option<&'a Value>, Option<&'a Value>)> {
    let mut names: Vec<&str> = now.keys().chain(before.keys()).map(String::as_str).collect();
    let mut seen = std::collections::BTreeSet::new();
    names.retain(|name| seen.insert(*name));
    names
        .into_iter()
        .filter(|name| before.get(*name) != now.get(*name))
        .map(|name| (name, before.get(name), now.get(name)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_without_changing_their_digits() {
        for (text, expected) in [
            ("1250.5", "1,250.5"),
            ("1000000", "1,000,000"),
            ("-12345.678", "-12,345.678"),
            ("999", "999"),
            ("1e5", "1e5"),
            ("0.1", "0.1"),
        ] {
            assert_eq!(grouped(text), expected, "{text}");
        }
    }

    #[test]
    fn dates_read_as_people_write_them() {
        assert_eq!(date("2027-03-01"), "1 March 2027");
        assert_eq!(date("not a date"), "not a date");
    }

    #[test]
    fn a_rework_shows_only_what_changed() {
        let before: Map<String, Value> =
            serde_json::from_str(r#"{"amount": 100, "vendor": "Acme", "note": "x"}"#).expect("JSON");
        let now: Map<String, Value> =
            serde_json::from_str(r#"{"amount": 90, "vendor": "Acme", "iban": "DE1"}"#).expect("JSON");
        let names: Vec<&str> = changed_fields(&before, &now)
            .into_iter()
            .map(|(name, _, _)| name)
            .collect();
        assert_eq!(names, ["amount", "iban", "note"]);
    }

    #[test]
    fn only_web_addresses_become_links() {
        let link = link_or_text("https://erp.example.com/vendors/42").into_string();
        assert!(
            link.contains("href=\"https://erp.example.com/vendors/42\"") && link.contains("(erp.example.com)"),
            "{link}"
        );
        assert_eq!(link_or_text("javascript:alert(1)").into_string(), "javascript:alert(1)");
        for disguised in ["https://bank.example@evil.example/", "https://a b.example/"] {
            assert!(!link_or_text(disguised).into_string().contains("href"), "{disguised}");
        }
        let backslash = link_or_text("https://evil.example\\@bank.example/").into_string();
        assert!(!backslash.contains("(bank.example)"), "{backslash}");
    }
}
