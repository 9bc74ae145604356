//! The OpenAPI 3.1 document of `/api/v1`, generated from the handlers' annotations.
//! Served at `/api/v1/openapi.json` and checked in as `schemas/openapi.json`.

use std::sync::OnceLock;

use utoipa::Modify;
use utoipa::OpenApi;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};

use super::{agents, apps, clients, limits, organization, processes, runs};

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
    paths(
        organization::me,
        organization::organization,
        organization::change_organization,
        organization::set_sign_in,
        organization::add_domain,
        organization::remove_domain,
        organization::verify_domain,
        organization::members,
        organization::member,
        organization::invite,
        organization::change_member,
        organization::groups,
        organization::group,
        organization::create_group,
        organization::rename_group,
        organization::set_claim_values,
        organization::delete_group,
        organization::add_to_group,
        organization::remove_from_group,
        organization::tokens,
        organization::create_token,
        organization::revoke_token,
        organization::audit,
        organization::audit_export,
        limits::limits,
        limits::choose,
        agents::agents,
        agents::agent,
        agents::create,
        agents::change,
        agents::tokens,
        agents::create_token,
        agents::rotate_token,
        agents::revoke_token,
        processes::processes,
        processes::import,
        processes::draft,
        processes::bind,
        processes::publish,
        processes::versions,
        processes::version,
        processes::diff,
        processes::check_agreement,
        clients::clients,
        clients::create_client,
        clients::revoke_client,
        clients::add_secret,
        clients::revoke_secret,
        apps::apps,
        apps::create_app,
        apps::revoke_app,
        runs::runs,
        runs::run,
        runs::cancel,
        runs::webhooks,
        runs::add_webhook,
        runs::remove_webhook,
        runs::deliveries,
        runs::redeliver,
    ),
    modifiers(&Credentials),
    security(("session" = []), ("bearer" = []))
)]
struct Document;

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
    DOCUMENT.get_or_init(|| serde_json::to_value(Document::openapi()).unwrap_or_default())
}

/// The document as the checked-in file holds it: pretty JSON and a final newline.
pub fn document_text() -> String {
    let mut text = serde_json::to_string_pretty(document()).unwrap_or_default();
    text.push('\n');
    text
}
