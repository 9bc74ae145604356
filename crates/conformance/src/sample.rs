//! Values for declared fields: inputs and outputs the runner sends.

use serde_json::{Map, Value, json};

/// A value of a declared field (`"number"`, or `{ type, one_of?, items? }`).
pub(crate) fn sample(declaration: &Value, person: &str) -> Value {
    if let Some(first) = declaration["one_of"].as_array().and_then(|values| values.first()) {
        return first.clone();
    }
    let kind = declaration
        .as_str()
        .or_else(|| declaration["type"].as_str())
        .unwrap_or("string");
    match kind {
        "number" => json!(1080.5),
        "boolean" => json!(true),
        "date" => json!("2026-10-06"),
        "datetime" => json!("2026-10-06T09:00:00Z"),
        "person" => json!(person),
        "list" => {
            let items = declaration.get("items").cloned().unwrap_or(json!("string"));
            json!([sample(&items, person)])
        }
        "object" => json!({}),
        _ => json!("Conformance sample text."),
    }
}

/// A value for every declared field of `fields` (an object of declarations).
pub(crate) fn fill(fields: &Value, person: &str) -> Value {
    let filled: Map<String, Value> = fields
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, declaration)| (name.clone(), sample(declaration, person)))
        .collect();
    Value::Object(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_type_gets_a_value_of_its_kind() {
        let fields = json!({
            "amount": "number", "region": { "type": "string", "one_of": ["emea", "apac"] },
            "owner": "person", "days": { "type": "list", "items": "date" }, "note": { "type": "string" }
        });
        assert_eq!(
            fill(&fields, "a@example.com"),
            json!({ "amount": 1080.5, "region": "emea", "owner": "a@example.com", "days": ["2026-10-06"],
                    "note": "Conformance sample text." })
        );
    }
}
