//! The browser: everything a person reaches with a session cookie.
//!
//! - [`session`]: the state every page shares ([`session::Web`]), the session layer,
//!   who is signed in, the CSRF checks, and the REST surface's caller (a token or a
//!   session), which the `http` crate's `/api/v1` stands on;
//! - [`errors`]: refusals as JSON and as pages; [`cookies`]: what a visitor carries
//!   before signing in; [`windows`]: what anyone may do without an account;
//! - the pages: sign-up and sign-in (`sign_in`), the OAuth authorization endpoint
//!   and its consent page ([`consent`]), and the people's app with the admin pages
//!   ([`app`]).
//!
//! The `http` crate hosts these routes beside `/mcp` and `/api/v1`, under the
//! session layer; the admin pages reach `/api/v1` through the router it hands them.

pub mod app;
pub mod consent;
pub mod cookies;
pub mod errors;
pub mod session;
mod sign_in;
pub mod windows;

use std::sync::Arc;

use axum::Router;

use crate::session::Web;

/// The media types a download may be shown inline as.
pub const INLINE_TYPES: [&str; 5] = ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"];

/// The browser's routes (without the session layer, which the host puts around them
/// and `/api/v1` together): sign-up and sign-in, consent, the people's app and the
/// admin pages.
pub fn routes(web: Arc<Web>) -> Router {
    sign_in::routes(Arc::clone(&web))
        .merge(consent::routes(Arc::clone(&web)))
        .merge(app::routes(web))
}
