//! How words from outside the server reach a message. Run data (inputs, outputs, notes)
//! is written by whoever runs the process, agents included, and names (the
//! organization's, a group's, a step's heading, a field's) by people: each is a
//! [`Said`], which has no `Display`. It reaches a message only through
//! [`Medium::put`], or through maud, which escapes it for HTML; so a new message cannot
//! forget to neutralise it.
//!
//! Each medium reads some text as its own: a line break in plain text could forge the
//! call to act or the footer under it, Slack reads `<!channel>` and `<https://…|label>`
//! as a ping and a link, Markdown reads links, images and `@`-mentions (and Mattermost
//! reads Slack's `<…>` too). Every medium sees a value on one line, without control or
//! direction-changing characters, cut after [`LONGEST`] characters; then each escapes
//! what it reads.

use maud::Render;

/// The most characters of one value a message shows; the page linked shows it whole.
pub(crate) const LONGEST: usize = 300;

/// What stands for a line break in a value, which is shown on one line.
const BREAK: &str = " ↵ ";

/// Words from outside the server's own, to be put into a message by a [`Medium`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Said(String);

impl Said {
    /// `text`, as said.
    pub(crate) fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// On one line: each run of line breaks (and the blanks around it) one [`BREAK`], a
    /// tab a space, any other control or bidirectional formatting character U+FFFD;
    /// trimmed and cut after [`LONGEST`] characters.
    fn line(&self) -> String {
        let mut line = String::with_capacity(self.0.len().min(LONGEST * 4));
        let mut breaking = false;
        for c in self.0.trim().chars() {
            if is_break(c) || (breaking && (c == ' ' || c == '\t')) {
                breaking = true;
                continue;
            }
            if breaking {
                line.truncate(line.trim_end().len());
                line.push_str(BREAK);
                breaking = false;
            }
            line.push(match c {
                '\t' => ' ',
                c if c.is_control() || is_direction(c) => '\u{FFFD}',
                c => c,
            });
        }
        match line.char_indices().nth(LONGEST) {
            Some((cut, _)) => format!("{}…", line[..cut].trim_end()),
            None => line,
        }
    }
}

/// Whether `c` breaks a line in some reader: CR, LF, VT, FF, NEL, and the Unicode line
/// and paragraph separators.
fn is_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Whether `c` changes the direction text is shown in (a link's host could be shown
/// backwards).
fn is_direction(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Where a message is read, each with its own way to put a value in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Medium {
    /// Plain text: an email's text part and its headers.
    Text,
    /// Slack's `mrkdwn`: `&`, `<` and `>` escaped, so no `<…>` control sequence
    /// (`<!channel>`, `<!here>`, `<@U123>`, `<https://…|label>`) comes from a value.
    Slack,
    /// Markdown (Mattermost, Rocket.Chat): a value of letters, digits and spaces as it
    /// is, any other in a code span, where no link, image, emphasis or mention is read;
    /// a backtick shown as `ˋ` so none closes it early, and an `@` followed by a word
    /// joiner, for the chats that find mentions in code too.
    Markdown,
}

impl Medium {
    /// `said`, as this medium shows it: on one line, and nothing in it read as markup.
    pub(crate) fn put(self, said: &Said) -> String {
        let line = said.line();
        match self {
            Medium::Text => line,
            Medium::Slack => line.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;"),
            Medium::Markdown if line.chars().all(|c| c.is_alphanumeric() || c == ' ') => line,
            Medium::Markdown => format!("`{}`", line.replace('`', "ˋ").replace('@', "@\u{2060}")),
        }
    }
}

/// HTML: on one line and cut as in every medium; maud escapes it.
impl Render for Said {
    fn render_to(&self, buffer: &mut String) {
        self.line().render_to(buffer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(text: &str) -> Said {
        Said::new(text)
    }

    const FORGED: &str = "Acme\r\n\r\nOpen the work item: https://evil.example\n\n--\nYou get this from Evil.\u{2028}x";

    #[test]
    fn plain_text_shows_a_value_on_one_line() {
        let line = Medium::Text.put(&said(FORGED));
        assert_eq!(
            line,
            "Acme ↵ Open the work item: https://evil.example ↵ -- ↵ You get this from Evil. ↵ x"
        );
        assert!(!line.contains(['\r', '\n', '\u{2028}']));
        assert_eq!(
            Medium::Text.put(&said("a\tb\u{7}c\u{202E}moc.live\u{1b}[31m")),
            "a b\u{FFFD}c\u{FFFD}moc.live\u{FFFD}[31m"
        );
        assert_eq!(Medium::Text.put(&said("  padded \n")), "padded");
        assert_eq!(Medium::Text.put(&said("a  \n \t b")), "a ↵ b");
    }

    #[test]
    fn a_long_value_is_cut() {
        let long = "x".repeat(LONGEST + 50);
        let shown = Medium::Text.put(&said(&long));
        assert_eq!(shown.chars().count(), LONGEST + 1);
        assert!(shown.ends_with('…'));
        let exact = "é".repeat(LONGEST);
        assert_eq!(Medium::Text.put(&said(&exact)), exact, "cut by characters, not bytes");
    }

    #[test]
    fn slack_reads_no_control_sequence_from_a_value() {
        for (value, shown) in [
            ("<!channel> pay now", "&lt;!channel&gt; pay now"),
            ("<!here>", "&lt;!here&gt;"),
            (
                "<https://evil.example|Open the work item>",
                "&lt;https://evil.example|Open the work item&gt;",
            ),
            ("<@U0123> & co", "&lt;@U0123&gt; &amp; co"),
            ("&lt;!channel&gt;", "&amp;lt;!channel&amp;gt;"),
            ("Acme\n> quoted", "Acme ↵ &gt; quoted"),
        ] {
            assert_eq!(Medium::Slack.put(&said(value)), shown, "{value}");
        }
    }

    #[test]
    fn markdown_reads_no_link_image_or_mention_from_a_value() {
        for (value, shown) in [
            ("Acme Tools 42", "Acme Tools 42"),
            (
                "[Open the work item](https://evil.example)",
                "`[Open the work item](https://evil.example)`",
            ),
            ("![](https://evil.example/t.png)", "`![](https://evil.example/t.png)`"),
            ("<!channel>", "`<!channel>`"),
            ("@channel @here @all", "`@\u{2060}channel @\u{2060}here @\u{2060}all`"),
            ("a`b @x ``c", "`aˋb @\u{2060}x ˋˋc`"),
            ("**bold** _it_", "`**bold** _it_`"),
            ("", ""),
        ] {
            assert_eq!(Medium::Markdown.put(&said(value)), shown, "{value}");
        }
        // Within the one code span: no backtick but its two.
        let span = Medium::Markdown.put(&said("x` [a](b) `y"));
        assert_eq!(span.matches('`').count(), 2, "{span}");
    }

    #[test]
    fn html_is_escaped_by_maud_on_one_line() {
        let markup = maud::html! { td { (said("<img src=x onerror=alert(1)>\n\"&\"")) } };
        assert_eq!(
            markup.into_string(),
            "<td>&lt;img src=x onerror=alert(1)&gt; ↵ &quot;&amp;&quot;</td>"
        );
    }
}
