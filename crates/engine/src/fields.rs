//! Field acceptance: is a value what its declaration says (spec §2.3)? Shared by run
//! inputs and by step outputs from `submit` and `decide`.

use agentprocess_format::values::{is_date, is_datetime, same_number};
use agentprocess_format::{Field, FieldType, Fields};
use serde_json::{Map, Value};

/// The form of a `person` value, as `describe.person.format` publishes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersonFormat {
    /// An email address: one `@` with text on both sides, a dot in the domain, no spaces.
    Email,
}

impl PersonFormat {
    /// The name `describe` shows.
    pub fn name(self) -> &'static str {
        match self {
            PersonFormat::Email => "email",
        }
    }

    /// Whether `text` is a person value of this form.
    pub fn accepts(self, text: &str) -> bool {
        match self {
            PersonFormat::Email => {
                let Some((local, domain)) = text.split_once('@') else {
                    return false;
                };
                !local.is_empty()
                    && !domain.contains('@')
                    && domain.split('.').count() >= 2
                    && domain.split('.').all(|label| !label.is_empty())
                    && !text.chars().any(|c| c.is_whitespace() || c.is_control())
            }
        }
    }
}

/// Checks `sent` (the `inputs` or `output` object) against `declared`. Returns every
/// issue, each prefixed with `at` and the field's path (`output.tags[2]`): required
/// fields that are missing, values of the wrong type or outside `one_of`, `null`, and
/// fields that are not declared. Declared fields come first, in declaration order,
/// then undeclared ones in the order sent.
pub fn check_fields(declared: &Fields, sent: &Map<String, Value>, at: &str, person: PersonFormat) -> Vec<String> {
    let mut issues = Vec::new();
    for (name, field) in &declared.0 {
        let path = format!("{at}.{name}");
        match sent.get(name) {
            None if field.optional => {}
            None => issues.push(format!("{path}: missing")),
            Some(value) => check_value(field, value, &path, person, &mut issues),
        }
    }
    for name in sent.keys() {
        if declared.get(name).is_none() {
            issues.push(format!("{at}.{name}: not declared"));
        }
    }
    issues
}

fn check_value(field: &Field, value: &Value, path: &str, person: PersonFormat, issues: &mut Vec<String>) {
    if value.is_null() {
        issues.push(format!("{path}: null is not a value; omit an optional field instead"));
        return;
    }
    if let Some(expected) = type_mismatch(field.ty, value, person) {
        issues.push(format!("{path}: expected {expected}"));
        return;
    }
    if let Some(allowed) = &field.one_of
        && !allowed.iter().any(|option| same_value(option, value))
    {
        let shown: Vec<String> = allowed.iter().map(show).collect();
        issues.push(format!("{path}: {} is not one of {}", show(value), shown.join(", ")));
    }
    if let (Some(items), Value::Array(list)) = (&field.items, value) {
        for (index, item) in list.iter().enumerate() {
            check_value(items, item, &format!("{path}[{index}]"), person, issues);
        }
    }
}

/// `None` when `value` has type `ty`, else what was expected.
fn type_mismatch(ty: FieldType, value: &Value, person: PersonFormat) -> Option<String> {
    let fits = match (ty, value) {
        (FieldType::String, Value::String(_))
        | (FieldType::Number, Value::Number(_))
        | (FieldType::Boolean, Value::Bool(_))
        | (FieldType::List, Value::Array(_))
        | (FieldType::Object, Value::Object(_)) => true,
        (FieldType::Date, Value::String(text)) => is_date(text),
        (FieldType::Datetime, Value::String(text)) => is_datetime(text),
        (FieldType::Person, Value::String(text)) => person.accepts(text),
        _ => false,
    };
    if fits {
        return None;
    }
    Some(match ty {
        FieldType::Date => "date (a real calendar date, YYYY-MM-DD)".to_owned(),
        FieldType::Datetime => "datetime (RFC 3339 with an offset)".to_owned(),
        FieldType::Person => format!("person ({})", person.name()),
        other => other.name().to_owned(),
    })
}

/// Equality for `one_of`: numbers compare by value (`1.50` is `1.5`), everything else
/// exactly.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => same_number(&x.to_string(), &y.to_string()),
        _ => a == b,
    }
}

/// A value as it reads in an issue: strings quoted, numbers as sent.
fn show(value: &Value) -> String {
    match value {
        Value::String(text) => format!("{text:?}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(ty: FieldType) -> Field {
        Field::of(ty)
    }

    fn check(declared: Vec<(&str, Field)>, sent: Value) -> Vec<String> {
        let declared = Fields(
            declared
                .into_iter()
                .map(|(name, field)| (name.to_owned(), field))
                .collect(),
        );
        check_fields(
            &declared,
            sent.as_object().expect("an object"),
            "output",
            PersonFormat::Email,
        )
    }

    /// JSON read as the server reads what callers send: numbers keep their text.
    fn parse(text: &str) -> Value {
        agentprocess_format::exact::parse(text).expect("JSON")
    }

    #[test]
    fn the_tool_contract_wording() {
        assert_eq!(
            check(
                vec![
                    ("cleared", field(FieldType::Boolean)),
                    ("summary", field(FieldType::String))
                ],
                json!({ "cleared": "yes", "extra": 1 })
            ),
            [
                "output.cleared: expected boolean",
                "output.summary: missing",
                "output.extra: not declared"
            ]
        );
    }

    #[test]
    fn the_eight_types() {
        let all: Vec<(&str, Field)> = FieldType::ALL.iter().map(|ty| (ty.name(), field(*ty))).collect();
        let good = json!({
            "string": "x", "number": 1080.5, "boolean": false, "date": "2024-02-29",
            "datetime": "2026-10-06T09:00:00+02:00", "list": [1, "a"], "object": { "any": ["thing"] },
            "person": "mira@example.com"
        });
        assert_eq!(check(all.clone(), good), Vec::<String>::new());
        let bad = json!({
            "string": 1, "number": "1", "boolean": "true", "date": "2026-02-30",
            "datetime": "2026-10-06T09:00:00", "list": {}, "object": [], "person": "mira"
        });
        assert_eq!(
            check(all, bad),
            [
                "output.string: expected string",
                "output.number: expected number",
                "output.boolean: expected boolean",
                "output.date: expected date (a real calendar date, YYYY-MM-DD)",
                "output.datetime: expected datetime (RFC 3339 with an offset)",
                "output.list: expected list",
                "output.object: expected object",
                "output.person: expected person (email)",
            ]
        );
    }

    #[test]
    fn optional_fields_may_be_omitted_but_null_is_not_a_value() {
        let optional = Field {
            optional: true,
            ..field(FieldType::String)
        };
        assert!(check(vec![("note", optional.clone())], json!({})).is_empty());
        assert_eq!(
            check(vec![("note", optional)], json!({ "note": null })),
            ["output.note: null is not a value; omit an optional field instead"]
        );
        assert_eq!(
            check(vec![("note", field(FieldType::String))], json!({ "note": null })),
            ["output.note: null is not a value; omit an optional field instead"]
        );
    }

    #[test]
    fn one_of_applies_to_values_and_to_list_items() {
        let region = Field {
            one_of: Some(vec![json!("emea"), json!("apac")]),
            ..field(FieldType::String)
        };
        assert!(check(vec![("region", region.clone())], json!({ "region": "emea" })).is_empty());
        assert_eq!(
            check(vec![("region", region.clone())], json!({ "region": "amer" })),
            ["output.region: \"amer\" is not one of \"emea\", \"apac\""]
        );
        let regions = Field {
            items: Some(Box::new(region)),
            ..field(FieldType::List)
        };
        assert_eq!(
            check(vec![("regions", regions)], json!({ "regions": ["apac", "amer", 3] })),
            [
                "output.regions[1]: \"amer\" is not one of \"emea\", \"apac\"",
                "output.regions[2]: expected string"
            ]
        );
    }

    #[test]
    fn numbers_are_compared_by_value_and_kept_as_sent() {
        let amount = Field {
            one_of: Some(vec![parse("1.5"), parse("100")]),
            ..field(FieldType::Number)
        };
        let sent = parse(r#"{ "amount": 1.50 }"#);
        assert!(check(vec![("amount", amount.clone())], sent.clone()).is_empty());
        assert!(check(vec![("amount", amount.clone())], parse(r#"{ "amount": 1e2 }"#)).is_empty());
        assert_eq!(
            check(vec![("amount", amount)], parse(r#"{ "amount": 1.500000000000000001 }"#)),
            ["output.amount: 1.500000000000000001 is not one of 1.5, 100"]
        );
        // The number survives as sent: 1.50 stays 1.50, and 1e400 is neither infinity
        // nor respelled.
        assert_eq!(sent["amount"].to_string(), "1.50");
        let huge = parse(r#"{ "n": 1e400, "m": 2.5E-3 }"#);
        let fields = vec![("n", field(FieldType::Number)), ("m", field(FieldType::Number))];
        assert!(check(fields, huge.clone()).is_empty());
        assert_eq!(huge.to_string(), r#"{"n":1e400,"m":2.5E-3}"#);
    }

    #[test]
    fn items_check_every_element() {
        let dates = Field {
            items: Some(Box::new(field(FieldType::Date))),
            ..field(FieldType::List)
        };
        assert_eq!(
            check(
                vec![("days", dates)],
                json!({ "days": ["2026-10-06", "2026-13-01", null] })
            ),
            [
                "output.days[1]: expected date (a real calendar date, YYYY-MM-DD)",
                "output.days[2]: null is not a value; omit an optional field instead"
            ]
        );
    }

    #[test]
    fn person_values_are_emails() {
        for ok in ["mira@example.com", "a.b+c@sub.example.org"] {
            assert!(PersonFormat::Email.accepts(ok), "{ok}");
        }
        for bad in [
            "mira",
            "@example.com",
            "mira@",
            "mira@example",
            "mira@@example.com",
            "mi ra@example.com",
            "mira@example..com",
        ] {
            assert!(!PersonFormat::Email.accepts(bad), "{bad}");
        }
    }
}
