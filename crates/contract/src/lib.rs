#![doc = include_str!("../README.md")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// What can go wrong loading the schemas.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file is not JSON, or not the shape `index.json` should have.
    #[error("{path}: {problem}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
}

/// One tool's two schemas.
struct ToolSchemas {
    arguments: Value,
    arguments_validator: jsonschema::Validator,
    result: jsonschema::Validator,
}

/// The compiled schemas of one protocol version.
pub struct Contract {
    dir: PathBuf,
    tools: BTreeMap<String, ToolSchemas>,
    tool_error: jsonschema::Validator,
}

impl std::fmt::Debug for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contract")
            .field("dir", &self.dir)
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The official schemas next to this repository (`../shared/agentprocess/schemas/core-2`),
/// or the folder `AGENTPROCESS_SCHEMAS` names.
pub fn default_dir() -> PathBuf {
    std::env::var_os("AGENTPROCESS_SCHEMAS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/agentprocess/schemas/core-2"),
        PathBuf::from,
    )
}

impl Contract {
    /// Reads `dir/index.json` and compiles every schema it lists.
    pub fn load(dir: &Path) -> Result<Self, Error> {
        let index_path = dir.join("index.json");
        let index = read_json(&index_path)?;
        let malformed = |problem: &str| Error::Malformed {
            path: index_path.clone(),
            problem: problem.to_owned(),
        };
        let listed = index
            .get("tools")
            .and_then(Value::as_object)
            .ok_or_else(|| malformed("no `tools` object"))?;
        let mut tools = BTreeMap::new();
        for (tool, files) in listed {
            let file = |key: &str| {
                files
                    .get(key)
                    .and_then(Value::as_str)
                    .map(|name| dir.join(name))
                    .ok_or_else(|| malformed(&format!("tools.{tool}.{key}: expected a file name")))
            };
            let arguments_path = file("arguments")?;
            let arguments = read_json(&arguments_path)?;
            let arguments_validator = compile(&arguments_path, &arguments)?;
            let result_path = file("result")?;
            let result = compile(&result_path, &read_json(&result_path)?)?;
            tools.insert(
                tool.clone(),
                ToolSchemas {
                    arguments,
                    arguments_validator,
                    result,
                },
            );
        }
        let error_name = index
            .pointer("/shared/tool-error")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed("shared.tool-error: expected a file name"))?;
        let error_path = dir.join(error_name);
        let tool_error = compile(&error_path, &read_json(&error_path)?)?;
        Ok(Self {
            dir: dir.to_owned(),
            tools,
            tool_error,
        })
    }

    /// The tools the contract names, in name order.
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// A tool's official argument schema, as written.
    pub fn arguments(&self, tool: &str) -> Option<&Value> {
        self.tools.get(tool).map(|schemas| &schemas.arguments)
    }

    /// Every way `envelope` (a tool's whole result: `{ ok: true, data }` or
    /// `{ ok: false, error }`) breaks the contract of `tool`; empty when it holds.
    pub fn check_result(&self, tool: &str, envelope: &Value) -> Vec<String> {
        let Some(object) = envelope.as_object() else {
            return vec!["the result is not an object".to_owned()];
        };
        let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
        keys.sort_unstable();
        match (object.get("ok"), keys.as_slice()) {
            (Some(Value::Bool(true)), ["data", "ok"]) => self.check_data(tool, &object["data"]),
            (Some(Value::Bool(false)), ["error", "ok"]) => self.check_error(&object["error"]),
            _ => vec![format!(
                "the result must be {{ ok: true, data }} or {{ ok: false, error }}; it has {keys:?}"
            )],
        }
    }

    /// Every way `data`, the `data` of a successful call, breaks `tool`'s result schema.
    pub fn check_data(&self, tool: &str, data: &Value) -> Vec<String> {
        match self.tools.get(tool) {
            Some(schemas) => violations(&schemas.result, data, ""),
            None => vec![format!("{tool}: not a tool of the contract")],
        }
    }

    /// Every way `arguments` break `tool`'s official argument schema.
    pub fn check_arguments(&self, tool: &str, arguments: &Value) -> Vec<String> {
        match self.tools.get(tool) {
            Some(schemas) => violations(&schemas.arguments_validator, arguments, ""),
            None => vec![format!("{tool}: not a tool of the contract")],
        }
    }

    /// Every way `error`, written as the protocol writes it, breaks `tool-error.json`.
    pub fn check_error(&self, error: &Value) -> Vec<String> {
        violations(&self.tool_error, error, "")
    }
}

fn violations(validator: &jsonschema::Validator, value: &Value, at: &str) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|error| format!("{at}{}: {error}", error.instance_path()))
        .collect()
}

fn read_json(path: &Path) -> Result<Value, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|error| Error::Malformed {
        path: path.to_owned(),
        problem: error.to_string(),
    })
}

fn compile(path: &Path, schema: &Value) -> Result<jsonschema::Validator, Error> {
    jsonschema::draft202012::new(schema).map_err(|error| Error::Malformed {
        path: path.to_owned(),
        problem: format!("not a valid JSON Schema: {error}"),
    })
}

/// `schema` without what does not constrain a value: the annotations `$schema`, `$id`,
/// `title`, `description`, `$comment` and `examples`, at every level (but never a
/// property that happens to be named so).
pub fn structure(schema: &Value) -> Value {
    const ANNOTATIONS: [&str; 6] = ["$schema", "$id", "title", "description", "$comment", "examples"];
    /// Keywords whose value is a map from names to schemas.
    const SCHEMA_MAPS: [&str; 4] = ["properties", "patternProperties", "$defs", "dependentSchemas"];
    match schema {
        Value::Object(object) => {
            let mut kept = Map::new();
            for (key, value) in object {
                if ANNOTATIONS.contains(&key.as_str()) {
                    continue;
                }
                let value = match value {
                    Value::Object(members) if SCHEMA_MAPS.contains(&key.as_str()) => Value::Object(
                        members
                            .iter()
                            .map(|(name, schema)| (name.clone(), structure(schema)))
                            .collect(),
                    ),
                    Value::Array(items) if key != "enum" && key != "required" => {
                        Value::Array(items.iter().map(structure).collect())
                    }
                    Value::Object(_) if key != "const" && key != "default" => structure(value),
                    other => other.clone(),
                };
                kept.insert(key.clone(), value);
            }
            Value::Object(kept)
        }
        other => other.clone(),
    }
}

/// The places where two schemas differ structurally (annotations aside), as JSON
/// pointers with both values; empty when they are the same.
pub fn differences(advertised: &Value, official: &Value) -> Vec<String> {
    let mut found = Vec::new();
    diff("", &structure(advertised), &structure(official), &mut found);
    found
}

fn diff(at: &str, ours: &Value, theirs: &Value, found: &mut Vec<String>) {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let here = format!("{at}/{key}");
                match b.get(key) {
                    Some(other) => diff(&here, value, other, found),
                    None => found.push(format!("{here}: advertised {value}, not in the official schema")),
                }
            }
            for (key, value) in b.iter().filter(|(key, _)| !a.contains_key(*key)) {
                found.push(format!("{at}/{key}: official {value}, not advertised"));
            }
        }
        _ if json_equal(ours, theirs) => {}
        _ => found.push(format!("{at}: advertised {ours}, official {theirs}")),
    }
}

/// Equal as JSON values: numbers by value (`1` and `1.0`), arrays in order.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let whole = match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => true,
            };
            whole && x.as_f64() == y.as_f64()
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y)),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotations_go_and_a_property_named_description_stays() {
        let schema = json!({
            "$schema": "x", "title": "t", "description": "d", "type": "object",
            "properties": { "description": { "type": "string", "description": "the text" } },
            "required": ["description"]
        });
        assert_eq!(
            structure(&schema),
            json!({ "type": "object", "properties": { "description": { "type": "string" } }, "required": ["description"] })
        );
    }

    #[test]
    fn differences_name_each_place() {
        let ours = json!({ "type": "object", "properties": { "a": { "type": "string", "maxLength": 200 } } });
        let theirs =
            json!({ "type": "object", "properties": { "a": { "type": "string", "maxLength": 128 }, "b": {} } });
        assert_eq!(
            differences(&ours, &theirs),
            vec![
                "/properties/a/maxLength: advertised 200, official 128",
                "/properties/b: official {}, not advertised"
            ]
        );
        assert!(differences(&json!({ "maximum": 1.0 }), &json!({ "maximum": 1 })).is_empty());
    }
}
