//! The stylesheet, the script and the icon every page links, built into the binary. Pages link
//! them with their content's hash in the query, so a browser may keep them for good and
//! a new build is fetched afresh.

use std::sync::LazyLock;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const STYLESHEET: &str = include_str!("assets/app.css");
const SCRIPT: &str = include_str!("assets/app.js");
const ICON: &str = include_str!("assets/icon.svg");

/// The first 16 hex digits of the SHA-256 of the assets.
static VERSION: LazyLock<String> = LazyLock::new(|| {
    let both = [STYLESHEET, SCRIPT, ICON].concat();
    agentprocess_service::sha256_hex(both.as_bytes())[..16].to_owned()
});

/// Where pages find the stylesheet.
pub(crate) fn stylesheet_url() -> String {
    format!("/assets/app.css?v={}", *VERSION)
}

/// Where pages find the icon.
pub(crate) fn icon_url() -> String {
    format!("/assets/icon.svg?v={}", *VERSION)
}

/// Where pages find the script.
pub(crate) fn script_url() -> String {
    format!("/assets/app.js?v={}", *VERSION)
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

pub(super) async fn stylesheet() -> Response {
    asset(STYLESHEET, "text/css; charset=utf-8")
}

pub(super) async fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}

/// The icon, also at `/favicon.ico`, where browsers look for it on every page.
pub(super) async fn icon() -> Response {
    asset(ICON, "image/svg+xml")
}
