//! A declaration of fields (a step's `output`, a process's `inputs`) as form controls,
//! and a submitted form back into the object `decide` or `start_run` takes. Values the
//! person typed that do not fit their type are passed on as typed, so the engine names
//! the issue in the spec's words.

use maud::{Markup, html};

use super::facts::{label, shown};
use super::refusals::in_words;
use serde_json::{Map, Value};

pub(crate) use super::refusals::{INPUTS, OUTPUT};

/// One declared field, as the form needs it.
struct Declared<'a> {
    ty: &'a str,
    description: Option<&'a str>,
    optional: bool,
    one_of: Option<&'a Vec<Value>>,
    items: Option<String>,
}

fn declared(declaration: &Value) -> Declared<'_> {
    match declaration {
        Value::String(ty) => Declared {
            ty,
            description: None,
            optional: false,
            one_of: None,
            items: None,
        },
        _ => Declared {
            ty: declaration["type"].as_str().unwrap_or("string"),
            description: declaration["description"].as_str(),
            optional: declaration["optional"].as_bool().unwrap_or(false),
            one_of: declaration["one_of"].as_array(),
            items: match &declaration["items"] {
                Value::String(ty) => Some(ty.clone()),
                Value::Object(item) => item.get("type").and_then(Value::as_str).map(str::to_owned),
                _ => None,
            },
        },
    }
}

/// The controls of a declaration whose fields are named `<prefix><name>`, each
/// labelled, holding what `values` gives it, with `issues` beside the fields they name.
pub(crate) fn controls(
    prefix: &str,
    declaration: &Map<String, Value>,
    values: &[(String, String)],
    issues: &[String],
) -> Markup {
    html! {
        @for (name, declaration) in declaration {
            @let field = declared(declaration);
            @let id = format!("{prefix}{name}");
            @let value = values.iter().find(|(key, _)| *key == id).map_or("", |(_, value)| value.as_str());
            @let own: Vec<&String> = issues.iter().filter(|issue| names(issue, &id)).collect();
            div class="field" {
                label for=(id) {
                    (label(name))
                    @if !field.optional { " (required)" }
                }
                @if let Some(description) = field.description { small { (description) } }
                @if let Some(choices) = field.one_of {
                    select id=(id) name=(id) {
                        // A required choice is asked for, never preselected.
                        option value="" { @if field.optional { "(none)" } @else { "(choose)" } }
                        @for choice in choices { option value=(shown(choice)) selected[shown(choice) == value] { (shown(choice)) } }
                    }
                } @else {
                    @match field.ty {
                        "boolean" => {
                            select id=(id) name=(id) {
                                option value="" { "(choose)" }
                                option value="true" selected[value == "true"] { "yes" }
                                option value="false" selected[value == "false"] { "no" }
                            }
                        }
                        "number" => { input id=(id) name=(id) type="text" inputmode="decimal" value=(value); }
                        "date" => { input id=(id) name=(id) type="date" value=(value); }
                        "person" => { input id=(id) name=(id) type="email" autocomplete="off" value=(value); }
                        "list" | "object" => { textarea id=(id) name=(id) rows="3" { (value) } }
                        _ => { input id=(id) name=(id) type="text" value=(value); }
                    }
                    @if field.ty == "list" { small { "One item per line" @if let Some(items) = &field.items { " (" (items) ")" } "." } }
                    @if field.ty == "object" { small { "A JSON object." } }
                    @if field.ty == "datetime" { small { "Date and time with its offset, such as 2027-01-31T17:00:00+01:00." } }
                    @if field.ty == "person" { small { "The person's email address." } }
                }
                @for issue in own { p class="issue" role="alert" { (in_words(issue).1) } }
            }
        }
    }
}

/// A filter bar's choice of process among `names`, with `chosen` selected.
pub(crate) fn process_choice<'a>(names: impl IntoIterator<Item = &'a str>, chosen: Option<&str>) -> Markup {
    html! {
        div class="field" {
            label for="process" { "Process" }
            select id="process" name="process" {
                option value="" { "All processes" }
                @for name in names { option value=(name) selected[chosen == Some(name)] { (name) } }
            }
        }
    }
}

/// The value of the field `name` of a sent form, unless it is missing or blank.
pub(crate) fn sent<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
    form.iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
        .filter(|value| !value.trim().is_empty())
}

/// Whether `issue` is about the field `id` (`output.amount`), or something inside it.
fn names(issue: &str, id: &str) -> bool {
    issue
        .strip_prefix(id)
        .is_some_and(|rest| rest.starts_with([':', '.', '[', ' ']))
}

/// The object a form gives for a declaration whose fields are named `<prefix><name>`:
/// each field the person filled in, read by its type; an empty one is left out.
pub(crate) fn values_of(
    prefix: &str,
    declaration: &Map<String, Value>,
    form: &[(String, String)],
) -> Map<String, Value> {
    let mut values = Map::new();
    for (name, declaration) in declaration {
        let field = declared(declaration);
        let key = format!("{prefix}{name}");
        let Some((_, text)) = form.iter().find(|(sent, _)| *sent == key) else {
            continue;
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let typed = |ty: &str, text: &str| match ty {
            "number" | "boolean" => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())),
            _ => Value::String(text.to_owned()),
        };
        let value = match field.ty {
            _ if field.one_of.is_some() => field
                .one_of
                .into_iter()
                .flatten()
                .find(|choice| shown(choice) == text)
                .cloned()
                .unwrap_or_else(|| Value::String(text.to_owned())),
            "list" => Value::Array(
                text.lines()
                    .map(str::trim)
                    .filter(|line| !line.is_empty())
                    .map(|line| typed(field.items.as_deref().unwrap_or("string"), line))
                    .collect(),
            ),
            "object" => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())),
            ty => typed(ty, text),
        };
        values.insert(name.clone(), value);
    }
    values
}

/// A part's bytes, read up to `limit`: `None` when it holds more.
pub async fn part_bytes(
    field: &mut axum::extract::multipart::Field<'_>,
    limit: usize,
) -> Result<Option<Vec<u8>>, axum::extract::multipart::MultipartError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = field.chunk().await? {
        if bytes.len() + chunk.len() > limit {
            return Ok(None);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declaration() -> Map<String, Value> {
        serde_json::from_value(serde_json::json!({
            "amount": "number",
            "approved": "boolean",
            "tier": { "type": "string", "one_of": ["gold", "silver"] },
            "count": { "type": "number", "one_of": [1, 2] },
            "tags": { "type": "list", "items": "string" },
            "sizes": { "type": "list", "items": "number" },
            "note": { "type": "string", "optional": true },
        }))
        .expect("declaration")
    }

    #[test]
    fn a_form_becomes_the_output_by_the_declared_types() {
        let form: Vec<(String, String)> = [
            ("output.amount", "12.50"),
            ("output.approved", "true"),
            ("output.tier", "gold"),
            ("output.count", "2"),
            ("output.tags", "a\n\n b \n"),
            ("output.sizes", "1\nx"),
            ("output.note", "  "),
        ]
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect();
        let output = values_of(OUTPUT, &declaration(), &form);
        // Numbers stay as the person wrote them.
        let expected: Value = serde_json::from_str(
            r#"{"amount": 12.50, "approved": true, "tier": "gold", "count": 2, "tags": ["a", "b"], "sizes": [1, "x"]}"#,
        )
        .expect("expected");
        assert_eq!(Value::Object(output), expected);
    }

    #[test]
    fn every_field_has_a_label_and_its_issues_beside_it() {
        let sent = [("output.tier".to_owned(), "silver".to_owned())];
        let issues = [
            "output.amount: expected a number".to_owned(),
            "output.amountless: not declared".to_owned(),
        ];
        let html = controls(OUTPUT, &declaration(), &sent, &issues).into_string();
        for name in ["amount", "approved", "tier", "tags", "note"] {
            assert!(
                html.contains(&format!("<label for=\"output.{name}\">")),
                "{name}: {html}"
            );
        }
        assert!(html.contains("Amount must be a number."), "{html}");
        // A required choice is asked for.
        assert!(html.contains("<option value=\"\">(choose)</option>"), "{html}");
        // An issue is shown beside its own field only, not one whose name it starts.
        assert_eq!(html.matches("not declared").count(), 0, "{html}");
        // What the person sent is kept.
        assert!(html.contains("<option value=\"silver\" selected>"), "{html}");
    }
}
