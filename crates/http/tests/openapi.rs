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
fn every_operation_says_which_role_it_needs_and_answers_errors_in_the_protocols_body() {
    let document: serde_json::Value = serde_json::from_str(&agentprocess_http::openapi_text()).expect("JSON");
    assert_eq!(document["openapi"], "3.1.0");
    let paths = document["paths"].as_object().expect("paths");
    let mut operations = 0;
    for (path, item) in paths {
        assert!(path.starts_with("/api/v1/"), "{path}");
        for (method, operation) in item.as_object().expect("path item") {
            operations += 1;
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
