//! A process body as HTML, safely: raw HTML in it is shown as text, and a link or image
//! whose address is not http, https, mailto or relative loses it. And the body's
//! section for one step, when it has one.

use maud::{Markup, PreEscaped};
use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

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

/// A heading's text or a step id, as the two are compared: lowercase, with `_`, `-`
/// and runs of spaces as one space, and no backticks.
fn normal(text: &str) -> String {
    text.to_lowercase()
        .replace('`', "")
        .split(|c: char| c == '_' || c == '-' || c.is_whitespace())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The words of the first heading in `markdown`, without its Markdown (`## **Finance**
/// approval ##` reads "Finance approval").
pub(crate) fn heading_text(markdown: &str) -> Option<String> {
    let mut words: Option<String> = None;
    for event in Parser::new_ext(markdown, options()) {
        match event {
            Event::Start(Tag::Heading { .. }) => words = Some(String::new()),
            Event::Text(text) | Event::Code(text) => {
                if let Some(words) = words.as_mut() {
                    words.push_str(&text);
                }
            }
            Event::End(TagEnd::Heading(_)) => return words.map(|words| words.trim().to_owned()),
            _ => {}
        }
    }
    None
}

/// The section of `body` under the heading that names `step` (`## Check the vendor` or
/// ``## `check_vendor` `` for the step `check_vendor`), up to the next heading of its
/// level or above: the Markdown, heading included.
pub(crate) fn section<'a>(body: &'a str, step: &str) -> Option<&'a str> {
    let wanted = normal(step);
    let mut open: Option<(HeadingLevel, usize)> = None;
    let mut heading: Option<(HeadingLevel, usize, String)> = None;
    for (event, range) in Parser::new_ext(body, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                if let Some((open_level, start)) = open
                    && level <= open_level
                {
                    return Some(body[start..range.start].trim_end());
                }
                heading = Some((level, range.start, String::new()));
            }
            Event::Text(text) | Event::Code(text) => {
                if let Some((_, _, words)) = heading.as_mut() {
                    words.push_str(&text);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, start, words)) = heading.take()
                    && open.is_none()
                    && normal(&words) == wanted
                {
                    open = Some((level, start));
                }
            }
            _ => {}
        }
    }
    open.map(|(_, start)| body[start..].trim_end())
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

    #[test]
    fn a_step_has_the_section_whose_heading_names_it() {
        let body = "Intro.\n\n## Check the vendor\n\nLook them up.\n\n### Details\n\nMore.\n\n\
                    ## `place_order`\n\nPlace it.\n\n# Appendix\n\nEnd.\n";
        assert_eq!(
            section(body, "check-the-vendor"),
            Some("## Check the vendor\n\nLook them up.\n\n### Details\n\nMore.")
        );
        assert_eq!(section(body, "place_order"), Some("## `place_order`\n\nPlace it."));
        assert_eq!(section(body, "appendix"), Some("# Appendix\n\nEnd."));
        assert_eq!(section(body, "details"), Some("### Details\n\nMore."));
        assert_eq!(section(body, "archive"), None);
    }
}
