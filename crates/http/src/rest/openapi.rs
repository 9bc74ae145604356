//! The OpenAPI 3.1 document of `/api/v1`, generated from the routes and their handlers'
//! annotations.
//! Served at `/api/v1/openapi.json` and checked in as `schemas/openapi.json`.

use std::sync::OnceLock;

use utoipa::Modify;
use utoipa::OpenApi;
use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::path::{Operation, Paths};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Ref, RefOr};

/// The document's own parts; the paths come from the routes (`super::api`).
#[derive(OpenApi)]
#[openapi(
    info(
        title = "agentprocess REST admin surface",
        description = "What an organization administers: its settings, members, groups, agents and \
                       tokens, processes, runs, webhooks and the audit log. Errors are the protocol's \
                       body `{ code, message, issues? }`. Unsafe requests with a session cookie need \
                       the server's Origin and the session's X-CSRF-Token.",
        license(name = "Apache-2.0", identifier = "Apache-2.0")
    ),
    components(schemas(agentprocess_web::errors::ErrorBody)),
    modifiers(&Credentials),
    security(("session" = []), ("bearer" = []))
)]
pub(super) struct Document;

/// The two ways to authenticate.
struct Credentials;

impl Modify for Credentials {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                agentprocess_web::session::session_cookie_name(true),
                "A browser session from /login (`agentprocess-session` on plain http)",
            ))),
        );
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("An API token (apr_…) made from a session"))
                    .build(),
            ),
        );
    }
}

/// Every operation may be refused, in the protocol's error body: said here once.
struct Refusals;

impl Modify for Refusals {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let refusal = ResponseBuilder::new()
            .description("A refusal, in the protocol's error body")
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build();
        each_operation(&mut openapi.paths, |operation| {
            operation
                .responses
                .responses
                .insert("default".to_owned(), RefOr::T(refusal.clone()));
        });
    }
}

/// Calls `change` on every operation of `paths`, whatever its method.
pub(super) fn each_operation(paths: &mut Paths, mut change: impl FnMut(&mut Operation)) {
    for item in paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for operation in operations.into_iter().flatten() {
            change(operation);
        }
    }
}

/// The document, as JSON.
pub(crate) fn document() -> &'static serde_json::Value {
    static DOCUMENT: OnceLock<serde_json::Value> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let (_, mut document) = super::api().split_for_parts();
        // After the routes: they bring the operations.
        Refusals.modify(&mut document);
        serde_json::to_value(document).unwrap_or_default()
    })
}

/// The document as the checked-in file holds it: pretty JSON and a final newline.
pub fn document_text() -> String {
    let mut text = serde_json::to_string_pretty(document()).unwrap_or_default();
    text.push('\n');
    text
}
