//! The page every screen of the web app sits in: one stylesheet, AA contrast, visible
//! focus, a layout that works on a phone, and no scripts.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:60rem;margin:0 auto;padding:0 1rem;\
line-height:1.5;color:#1a1a1a;background:#fff}nav{display:flex;gap:1rem;padding:.6rem 0;border-bottom:1px solid #ccc}\
a{color:#0b57d0}:focus-visible{outline:3px solid #0b57d0;outline-offset:2px}\
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.4rem;border-bottom:1px solid #ddd;vertical-align:top}\
.badge{display:inline-block;padding:0 .4rem;border-radius:.3rem;font-size:.85em}\
.overdue{background:#fde2e1;color:#8a1c14}.due{background:#fff4ce;color:#5c4400}.test{background:#e3e3ff;color:#2b2b8a}\
.problems{border-left:4px solid #b00;padding:.2rem 1rem;background:#fee}.issue{color:#8a1c14;margin:.2rem 0}\
.notice{border-left:4px solid #0b57d0;padding:.2rem 1rem;background:#eef4ff}\
.field{margin:.8rem 0}label{display:block;font-weight:600}input,select,textarea{width:100%;max-width:36rem;padding:.4rem;\
font:inherit;box-sizing:border-box}button{margin:.6rem .4rem 0 0;padding:.5rem 1rem;font:inherit}\
pre{background:#f5f5f5;padding:.6rem;overflow:auto}fieldset{border:1px solid #ccc;margin:1rem 0}\
.map{max-width:100%;height:auto}.map rect{fill:#fff;stroke:#555;stroke-width:1.5}\
.map .step-id{font-weight:600;font-size:13px}.map .step-kind{font-size:11px;fill:#333}\
.map .state-done rect{fill:#dff3e4;stroke:#1e7a3a}.map .state-ready rect,.map .state-claimed rect{fill:#e6efff;stroke:#0b57d0}\
.map .state-waiting rect{fill:#fff4ce;stroke:#8a6d00}.map .state-failed rect{fill:#fde2e1;stroke:#8a1c14}\
.map .state-cancelled rect{fill:#eee;stroke:#777}.map .edge path{fill:none;stroke:#444;stroke-width:1.5}\
.map .edge-reject path{stroke:#b3261e;stroke-dasharray:6 4}.map .edge-timeout path{stroke:#8a6d00;stroke-dasharray:2 3}\
.map .edge-branch path,.map .edge-join path{stroke:#5b3fa0}.map .edge-label{font-size:11px;fill:#333}\
@media (max-width:40rem){td,th{display:block}}";

/// A whole page.
pub(crate) fn page(status: StatusCode, title: &str, who: Option<&str>, body: Markup) -> Response {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · agentprocess" }
                style { (maud::PreEscaped(STYLE)) }
            }
            body {
                nav aria-label="Main" {
                    a href="/inbox" { "Inbox" }
                    a href="/account" { "Account" }
                    @if let Some(who) = who { span { "Signed in as " (who) } }
                }
                main {
                    h1 { (title) }
                    (body)
                }
            }
        }
    };
    let mut response = (status, Html(markup.into_string())).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A refusal's message and every issue, for the top of a page.
pub(crate) fn problems(message: &str, issues: &[String]) -> Markup {
    html! {
        div class="problems" role="alert" {
            p { (message) }
            @if !issues.is_empty() {
                ul { @for issue in issues { li { (issue) } } }
            }
        }
    }
}

/// A page that cannot be shown, with the refusal's status, message and issues.
pub(crate) fn refused(who: &str, title: &str, error: &agentprocess_engine::ToolError) -> Response {
    page(
        crate::identity::errors::status_of(error.code),
        title,
        Some(who),
        problems(&error.message, &error.issues),
    )
}
