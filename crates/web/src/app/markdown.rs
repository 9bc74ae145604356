//! A process body as HTML, safely: raw HTML in it is shown as text, and a link or image
//! whose address is not http, https, mailto or relative loses it. And the body's
//! section for one step, when it has one.

pub(crate) use agentprocess_words::section;
use maud::{Markup, PreEscaped};
use pulldown_cmark::{CowStr, Event, Options, Parser, Tag};

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// Whether an address may stay in a link or an image.
fn harmless(address: &str) -> bool {
    let lower = address.trim().to_ascii_lowercase();
    match lower.split_once(':') {
        // A colon after a slash, `?` or `#` is not a scheme's.
        Some((scheme, _)) if !scheme.contains(['/', '?', '#']) => {
            matches!(scheme, "http" | "https" | "mailto")
        }
        _ => true,
    }
}

/// `text` (Markdown) as HTML.
pub(crate) fn render(text: &str) -> Markup {
    let events = Parser::new_ext(text, options()).map(|event| match event {
        Event::Html(html) | Event::InlineHtml(html) => Event::Text(html),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) if !harmless(&dest_url) => Event::Start(Tag::Link {
            link_type,
            dest_url: CowStr::Borrowed("#"),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) if !harmless(&dest_url) => Event::Start(Tag::Image {
            link_type,
            dest_url: CowStr::Borrowed(""),
            title,
            id,
        }),
        other => other,
    });
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events);
    PreEscaped(html)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_is_text_and_scripted_links_lose_their_address() {
        let html = render(
            "# Title\n\n<script>alert(1)</script>\n\nSee [the guide](https://example.com/guide), \
             [this](javascript:alert(1)) and [that](JavaScript:alert(2)) and [here](#steps).\n\n\
             ![x](data:image/svg+xml,<svg/>)\n",
        )
        .into_string();
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(html.contains(r#"href="https://example.com/guide""#), "{html}");
        assert!(html.contains(r##"href="#steps""##), "{html}");
        assert!(!html.to_lowercase().contains("javascript:"), "{html}");
        assert!(!html.contains("data:"), "{html}");
    }
}
