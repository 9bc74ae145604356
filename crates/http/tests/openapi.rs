//! The checked-in OpenAPI document is the one the code generates.

use std::path::PathBuf;

#[test]
fn the_checked_in_openapi_document_is_current() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas/openapi.json");
    let generated = agentprocess_http::openapi_text();
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &generated).expect("write schemas/openapi.json");
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "schemas/openapi.json is not what the code generates: run \
         UPDATE_OPENAPI=1 cargo test -p agentprocess-http --test openapi, and commit it"
    );
}

#[test]
fn every_operation_has_its_own_id_says_which_role_it_needs_and_answers_errors_in_the_protocols_body() {
    let document: serde_json::Value = serde_json::from_str(&agentprocess_http::openapi_text()).expect("JSON");
    assert_eq!(document["openapi"], "3.1.0");
    let paths = document["paths"].as_object().expect("paths");
    let mut operations = 0;
    let mut ids = std::collections::BTreeSet::new();
    for (path, item) in paths {
        assert!(path.starts_with("/api/v1/"), "{path}");
        for (method, operation) in item.as_object().expect("path item") {
            operations += 1;
            let id = operation["operationId"].as_str().unwrap_or_default();
            assert!(
                ids.insert(id.to_owned()),
                "{method} {path}: operationId {id:?} is not unique"
            );
            let role = operation["x-agentprocess-role"].as_str().unwrap_or_default();
            assert!(
                ["member", "operator", "admin"].contains(&role),
                "{method} {path}: role {role:?}"
            );
            assert_eq!(
                operation["responses"]["default"]["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/ErrorBody",
                "{method} {path}"
            );
            for (status, response) in operation["responses"].as_object().expect("responses") {
                assert!(
                    response["description"].as_str().is_some_and(|text| !text.is_empty()),
                    "{method} {path} {status}"
                );
            }
        }
    }
    assert!(operations >= 45, "{operations} operations");
}

/// A page size the document offers is one the server takes: 1 to the largest page of
/// each list (asking for 0, or more, is refused with `invalid`).
#[test]
fn page_sizes_are_bounded_as_the_server_bounds_them() {
    let document: serde_json::Value = serde_json::from_str(&agentprocess_http::openapi_text()).expect("JSON");
    for (path, most) in [
        ("/api/v1/runs", u64::from(agentprocess_service::MAX_PAGE)),
        ("/api/v1/audit", 200),
    ] {
        let parameters = document["paths"][path]["get"]["parameters"]
            .as_array()
            .expect("parameters");
        let limit = parameters
            .iter()
            .find(|parameter| parameter["name"] == "limit")
            .unwrap_or_else(|| panic!("{path}: no limit"));
        let schema = &limit["schema"];
        assert_eq!(
            (schema["minimum"].as_u64(), schema["maximum"].as_u64()),
            (Some(1), Some(most)),
            "{path}: {schema}"
        );
    }
}

/// `docs/rest-reference.md` is the OpenAPI document in words: each operation with its
/// role, parameters, request body and answers, and every schema's fields.
#[test]
fn the_rest_reference_in_the_docs_is_current() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/rest-reference.md");
    let document: serde_json::Value = serde_json::from_str(&agentprocess_http::openapi_text()).expect("JSON");
    let generated = reference::markdown(&document);
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &generated).expect("write docs/rest-reference.md");
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "docs/rest-reference.md is not what the OpenAPI document says: run \
         UPDATE_OPENAPI=1 cargo test -p agentprocess-http --test openapi, and commit it"
    );
    // Every operation and every schema it names has its anchor.
    for (_, item) in document["paths"].as_object().expect("paths") {
        for (_, operation) in item.as_object().expect("path item") {
            let id = operation["operationId"].as_str().expect("operationId");
            assert!(generated.contains(&format!("<a id=\"{id}\"></a>")), "{id}");
        }
    }
    for name in document["components"]["schemas"].as_object().expect("schemas").keys() {
        assert!(
            generated.contains(&format!("<a id=\"{}\"></a>", reference::anchor(name))),
            "{name}"
        );
    }
}

/// Renders the OpenAPI document as Markdown.
mod reference {
    use std::fmt::Write as _;

    use serde_json::Value;

    const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

    pub(crate) fn anchor(schema: &str) -> String {
        format!("schema-{}", schema.to_lowercase())
    }

    pub(crate) fn markdown(document: &Value) -> String {
        let mut out = String::from(
            "# The REST reference\n\n\
             Every operation of `/api/v1` and every body it takes and answers, generated from the\n\
             OpenAPI document the server serves at `/api/v1/openapi.json` (also\n\
             `schemas/openapi.json`) by `UPDATE_OPENAPI=1 cargo test -p agentprocess-http --test\n\
             openapi`. [rest.md](rest.md) explains the surface: how to call it, roles, errors,\n\
             idempotency. Fields marked *yes* are required; the others may be left out (or\n\
             `null`). Request bodies refuse unknown fields.\n",
        );
        let mut tags: Vec<&str> = Vec::new();
        let paths = document["paths"].as_object().expect("paths");
        for item in paths.values() {
            for method in METHODS {
                if let Some(tag) = item[method]["tags"][0].as_str()
                    && !tags.contains(&tag)
                {
                    tags.push(tag);
                }
            }
        }
        out.push_str("\n## Operations\n\n");
        for tag in &tags {
            let _ = write!(out, "- {tag}:");
            for (path, item) in paths {
                for method in METHODS {
                    let operation = &item[method];
                    if operation["tags"][0].as_str() == Some(tag) {
                        let id = operation["operationId"].as_str().unwrap_or_default();
                        let _ = write!(out, " [`{} {}`](#{id})", method.to_uppercase(), short(path));
                    }
                }
            }
            out.push('\n');
        }
        for tag in &tags {
            let _ = write!(out, "\n## {tag}\n");
            for (path, item) in paths {
                for method in METHODS {
                    let operation = &item[method];
                    if operation["tags"][0].as_str() == Some(tag) {
                        self::operation(&mut out, method, path, operation);
                    }
                }
            }
        }
        out.push_str("\n## Schemas\n");
        for (name, schema) in document["components"]["schemas"].as_object().expect("schemas") {
            let _ = write!(out, "\n<a id=\"{}\"></a>\n\n### {name}\n\n", anchor(name));
            self::schema(&mut out, schema);
        }
        out
    }

    fn short(path: &str) -> &str {
        path.strip_prefix("/api/v1").unwrap_or(path)
    }

    fn operation(out: &mut String, method: &str, path: &str, operation: &Value) {
        let id = operation["operationId"].as_str().unwrap_or_default();
        let role = operation["x-agentprocess-role"].as_str().unwrap_or_default();
        let _ = write!(
            out,
            "\n<a id=\"{id}\"></a>\n\n### `{} {path}`\n\nRole: {role}. Operation `{id}`.\n",
            method.to_uppercase()
        );
        if let Some(parameters) = operation["parameters"].as_array().filter(|list| !list.is_empty()) {
            out.push_str("\n| Parameter | In | Type | Required | Description |\n|---|---|---|---|---|\n");
            for parameter in parameters {
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} | {} |",
                    parameter["name"].as_str().unwrap_or_default(),
                    parameter["in"].as_str().unwrap_or_default(),
                    type_of(&parameter["schema"]),
                    if parameter["required"] == true { "yes" } else { "" },
                    cell(parameter["description"].as_str().unwrap_or_default()),
                );
            }
        }
        if let Some(content) = operation["requestBody"]["content"].as_object() {
            for (media, body) in content {
                let _ = writeln!(out, "\nRequest body (`{media}`): {}.", type_of(&body["schema"]));
            }
        }
        out.push_str("\n| Answer | Body | Description |\n|---|---|---|\n");
        for (status, response) in operation["responses"].as_object().expect("responses") {
            let body = response["content"]
                .as_object()
                .and_then(|content| content.values().next())
                .map(|body| type_of(&body["schema"]))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "| {status} | {body} | {} |",
                cell(response["description"].as_str().unwrap_or_default())
            );
        }
    }

    fn schema(out: &mut String, schema: &Value) {
        if let Some(description) = schema["description"].as_str() {
            let _ = writeln!(out, "{}\n", description.trim());
        }
        if let Some(parts) = schema["allOf"].as_array() {
            for part in parts {
                match part["$ref"].as_str() {
                    Some(_) => {
                        let _ = writeln!(out, "Every field of {}, and:\n", type_of(part));
                    }
                    None => fields(out, part),
                }
            }
            return;
        }
        if let Some(variants) = schema["oneOf"].as_array() {
            out.push_str("One of:\n\n");
            for variant in variants {
                let _ = writeln!(out, "- {}", variant_text(variant));
            }
            return;
        }
        if schema["properties"].is_object() {
            fields(out, schema);
        } else {
            let _ = writeln!(out, "A {}.", type_of(schema));
        }
    }

    fn variant_text(variant: &Value) -> String {
        let mut text = type_of(variant);
        if let Some(object) = variant["properties"].as_object() {
            let names: Vec<String> = object.keys().map(|key| format!("`{key}`")).collect();
            text = format!("an object with {}", names.join(", "));
        }
        match variant["description"].as_str() {
            Some(description) => format!("{text}: {}", one_line(description)),
            None => text,
        }
    }

    fn fields(out: &mut String, schema: &Value) {
        let Some(properties) = schema["properties"].as_object() else {
            if let Some(description) = schema["description"].as_str() {
                let _ = writeln!(out, "{}\n", description.trim());
            }
            return;
        };
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|list| list.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        out.push_str("| Field | Type | Required | Description |\n|---|---|---|---|\n");
        for (name, field) in properties {
            let _ = writeln!(
                out,
                "| `{name}` | {} | {} | {} |",
                type_of(field),
                if required.contains(&name.as_str()) { "yes" } else { "" },
                cell(field["description"].as_str().unwrap_or_default()),
            );
        }
        out.push('\n');
    }

    /// A schema's type in a few words, linking to named schemas.
    fn type_of(schema: &Value) -> String {
        if let Some(reference) = schema["$ref"].as_str() {
            let name = reference.rsplit('/').next().unwrap_or(reference);
            return format!("[{name}](#{})", anchor(name));
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(variants) = schema[key].as_array() {
                let kinds: Vec<String> = variants.iter().map(type_of).collect();
                return kinds.join(" or ");
            }
        }
        if let Some(parts) = schema["allOf"].as_array() {
            let kinds: Vec<String> = parts.iter().map(type_of).collect();
            return kinds.join(" and ");
        }
        if let Some(values) = schema["enum"].as_array() {
            let values: Vec<String> = values.iter().map(|value| format!("`{value}`")).collect();
            return values.join(", ");
        }
        let kinds: Vec<&str> = match &schema["type"] {
            Value::String(kind) => vec![kind.as_str()],
            Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let mut words: Vec<String> = Vec::new();
        for kind in kinds {
            words.push(match kind {
                "array" => format!("list of {}", type_of(&schema["items"])),
                "object" if schema["additionalProperties"].is_object() => {
                    format!("map of {}", type_of(&schema["additionalProperties"]))
                }
                "string" if schema["format"] == "binary" => "file".to_owned(),
                "string" if schema["format"].is_string() => {
                    format!("string ({})", schema["format"].as_str().unwrap_or_default())
                }
                other => other.to_owned(),
            });
        }
        if words.is_empty() {
            return "any".to_owned();
        }
        words.join(" or ")
    }

    fn one_line(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    fn cell(text: &str) -> String {
        one_line(text).replace('|', "\\|")
    }
}
