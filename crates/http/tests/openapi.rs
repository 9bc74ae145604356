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
