//! The OpenAPI 3.1 document of `/api/v1`, generated from the routes and their handlers'
//! annotations.
//! Served at `/api/v1/openapi.json` and checked in as `schemas/openapi.json`.

use std::sync::OnceLock;

use utoipa::Modify;
use utoipa::OpenApi;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};

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

/// The document, as JSON.
pub(crate) fn document() -> &'static serde_json::Value {
    static DOCUMENT: OnceLock<serde_json::Value> = OnceLock::new();
    DOCUMENT.get_or_init(|| serde_json::to_value(super::api().split_for_parts().1).unwrap_or_default())
}

/// The document as the checked-in file holds it: pretty JSON and a final newline.
pub fn document_text() -> String {
    let mut text = serde_json::to_string_pretty(document()).unwrap_or_default();
    text.push('\n');
    text
}
