//! The frontmatter tree as JSON: what is hashed and stored.

use serde_json::{Map, Number, Value as Json};

use crate::yaml::{Node, Value};

/// The JSON value of `node`. Aliases are expanded (their count was bounded on reading).
pub(crate) fn to_json(node: &Node) -> Json {
    match &node.value {
        Value::Null => Json::Null,
        Value::Bool(value) => Json::Bool(*value),
        // Number text was checked on reading to be a finite JSON number.
        Value::Number(text) => text.parse::<Number>().map_or(Json::Null, Json::Number),
        Value::String(text) => Json::String(text.clone()),
        Value::List(items) => Json::Array(items.iter().map(|item| to_json(item)).collect()),
        Value::Map(entries) => {
            let mut map = Map::with_capacity(entries.len());
            for entry in entries {
                map.insert(entry.key.clone(), to_json(&entry.value));
            }
            Json::Object(map)
        }
    }
}
