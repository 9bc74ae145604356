//! A tool's answer as MCP carries it: `{ ok: true, data }` or
//! `{ ok: false, error: { code, message, issues? } }`.

use agentprocess_engine::ToolError;
use serde_json::{Map, Value, json};

/// The envelope of a result.
pub fn envelope(result: Result<Value, ToolError>) -> Value {
    match result {
        // Built by hand: `json!` would respell the numbers in `data`.
        Ok(data) => {
            let mut body = Map::new();
            body.insert("ok".to_owned(), Value::Bool(true));
            body.insert("data".to_owned(), data);
            Value::Object(body)
        }
        Err(error) => {
            let mut body = Map::new();
            body.insert("code".to_owned(), json!(error.code.as_str()));
            body.insert("message".to_owned(), json!(error.message));
            if !error.issues.is_empty() {
                body.insert("issues".to_owned(), json!(error.issues));
            }
            json!({ "ok": false, "error": body })
        }
    }
}
