//! The argument schemas the project publishes in `schemas/core-2/tools/` are exactly
//! the ones `tools/list` advertises. `AGENTPROCESS_BLESS=1 cargo test -p
//! agentprocess-mcp --test schemas` rewrites them after a change to the declarations.

use std::path::PathBuf;

use agentprocess_mcp::arguments::{ARGUMENTS, input_schema};
use serde_json::{Value, json};

fn published(tool: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../schemas/core-2/tools/{tool}.arguments.json"))
}

#[test]
fn published_argument_schemas_match_what_tools_list_advertises() {
    let bless = std::env::var_os("AGENTPROCESS_BLESS").is_some();
    let mut stale = Vec::new();
    for spec in ARGUMENTS {
        let mut schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": format!("{} arguments", spec.name),
            "description": spec.description,
        });
        if let (Some(head), Value::Object(body)) = (schema.as_object_mut(), Value::Object(input_schema(spec))) {
            head.extend(body);
        }
        let text = format!("{}\n", serde_json::to_string_pretty(&schema).expect("serializes"));
        let path = published(spec.name);
        if bless {
            std::fs::write(&path, &text).expect("writes the schema");
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(spec.name);
        }
    }
    assert!(
        stale.is_empty(),
        "schemas/core-2/tools/ is out of date for {stale:?}; run AGENTPROCESS_BLESS=1 cargo test -p agentprocess-mcp --test schemas"
    );
}
