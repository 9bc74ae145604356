//! The page every screen of the web app sits in: one stylesheet and one script of its
//! own (the pages work without it; `crate::headers` lets nothing else load), and a way
//! for the script to fetch one part of a page again.

use agentprocess_auth::Role;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use super::Visitor;

/// The header the page script sends when it asks for one part of a page again.
const REFRESH: &str = "x-refresh";

/// Whether the request asks for the part `id` of its page alone.
pub(crate) fn refreshing(headers: &HeaderMap, id: &str) -> bool {
    headers
        .get(REFRESH)
        .is_some_and(|value| value.as_bytes() == id.as_bytes())
}

/// A part of a page on its own, for the page script's refresh.
pub(crate) fn fragment(markup: Markup) -> Response {
    let mut response = Html(markup.into_string()).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `text`, cut to `longest` characters with an ellipsis when it is longer.
pub(crate) fn shortened(text: &str, longest: usize) -> String {
    if text.chars().count() <= longest {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(longest.saturating_sub(1)).collect::<String>())
    }
}

/// A whole page of the app, with the navigation its visitor may use.
pub(crate) fn page(status: StatusCode, title: &str, visitor: Option<&Visitor>, body: Markup) -> Response {
    whole(status, title, visitor, body, None)
}

/// A page of one narrow column for someone not (yet) in the app: signing up, signing
/// in, or letting a client act for them.
pub(crate) fn narrow_page(status: StatusCode, title: &str, body: Markup) -> Response {
    whole(status, title, None, body, Some("narrow"))
}

fn whole(status: StatusCode, title: &str, visitor: Option<&Visitor>, body: Markup, class: Option<&str>) -> Response {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · agentprocess" }
                link rel="icon" href=(super::assets::icon_url()) type="image/svg+xml";
                link rel="stylesheet" href=(super::assets::stylesheet_url());
                script src=(super::assets::script_url()) defer {}
            }
            body class=[class] {
                a class="skip" href="#main" { "Skip to the content" }
                nav aria-label="Main" {
                    span class="brand" { "agentprocess" }
                    @if let Some(visitor) = visitor {
                        a href="/runs" { "Runs" }
                        a href="/inbox" { "Inbox" }
                        a href="/processes" { "Processes" }
                        // The administration answers operators and admins; nobody is
                        // shown a link that only refuses them.
                        @if visitor.has_role(Role::Operator) { a href="/overdue" { "Overdue" } a href="/admin" { "Admin" } }
                        a href="/account" { "Account" }
                        span class="signed-in" { "Signed in as " (visitor.who) }
                    }
                }
                main id="main" {
                    h1 { (title) }
                    (body)
                }
            }
        }
    };
    let mut response = (status, Html(markup.into_string())).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // The policy and the other page headers come from `crate::headers`.
    response
}

/// A page that cannot be shown, with the refusal's status, message and issues.
pub(crate) fn refused(visitor: &Visitor, title: &str, error: &agentprocess_engine::ToolError) -> Response {
    page(
        crate::errors::status_of(error.code),
        title,
        Some(visitor),
        super::refusals::shown(error),
    )
}
