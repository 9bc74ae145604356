//! The headers every response carries, set in one layer so no page can forget them:
//! on each HTML page the web app's content security policy (nothing inline, nothing
//! from elsewhere, never inside a frame), `X-Frame-Options` for browsers that predate
//! `frame-ancestors`, `nosniff` and a same-origin referrer; and on every response,
//! when the server is reached over https, HSTS.

use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// What pages may load: their own stylesheet, script, images and frames (evidence
/// previews), nothing inline and nothing from elsewhere; and no other site may frame
/// them (the consent page above all).
pub(crate) const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
frame-src 'self'; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'";

/// HSTS: a year, this host only (other hosts of the domain are not ours to decide).
const HSTS: &str = "max-age=31536000";

/// The layer: `https` says whether the public URL is https.
pub(crate) async fn security_headers(https: bool, request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let html = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().to_ascii_lowercase().starts_with("text/html"));
    if html {
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY));
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        headers
            .entry(header::REFERRER_POLICY)
            .or_insert(HeaderValue::from_static("same-origin"));
    }
    if https {
        headers.insert(header::STRICT_TRANSPORT_SECURITY, HeaderValue::from_static(HSTS));
    }
    response
}
