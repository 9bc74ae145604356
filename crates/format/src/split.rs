//! Splitting a file into its frontmatter and its body.

use crate::issue::Issue;

/// A file cut at its frontmatter fences.
#[derive(Debug)]
pub(crate) struct Parts<'a> {
    /// The YAML between the fences, without them.
    pub(crate) frontmatter: &'a str,
    /// Every byte after the closing fence's line break, exactly as written.
    pub(crate) body: &'a str,
}

/// Cuts `text` at its fences: the first line is `---`, the frontmatter ends at the
/// next line that is exactly `---`, and the body is every byte after that line's
/// line break. A line may end in `\n` or `\r\n`.
pub(crate) fn split(text: &str) -> Result<Parts<'_>, Issue> {
    let mut lines = Lines { text, offset: 0 };
    match lines.next() {
        Some((_, "---")) => {}
        _ => {
            return Err(Issue::new("", "no frontmatter: the file must start with a line `---`"));
        }
    }
    let start = lines.offset;
    while let Some((line_start, line)) = lines.next() {
        if line == "---" {
            return Ok(Parts {
                frontmatter: &text[start..line_start],
                body: &text[lines.offset..],
            });
        }
    }
    Err(Issue::new(
        "",
        "frontmatter is not closed: no line `---` after the first",
    ))
}

/// Lines with their start offsets, each without its `\n` or `\r\n`.
struct Lines<'a> {
    text: &'a str,
    offset: usize,
}

impl<'a> Iterator for Lines<'a> {
    type Item = (usize, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        if self.offset >= self.text.len() {
            return None;
        }
        let start = self.offset;
        let rest = &self.text[start..];
        let (line, consumed) = match rest.find('\n') {
            Some(end) => (&rest[..end], end + 1),
            None => (rest, rest.len()),
        };
        self.offset += consumed;
        Some((start, line.strip_suffix('\r').unwrap_or(line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_is_every_byte_after_the_closing_line_break() {
        let parts = split("---\nname: a\n---\n\n# Title\r\nend").expect("splits");
        assert_eq!(parts.frontmatter, "name: a\n");
        assert_eq!(parts.body, "\n# Title\r\nend");
    }

    #[test]
    fn crlf_fences_are_accepted() {
        let parts = split("---\r\nname: a\r\n---\r\nbody\r\n").expect("splits");
        assert_eq!(parts.frontmatter, "name: a\r\n");
        assert_eq!(parts.body, "body\r\n");
    }

    #[test]
    fn a_closing_fence_at_the_end_gives_an_empty_body() {
        let parts = split("---\nname: a\n---").expect("splits");
        assert_eq!(parts.body, "");
    }

    #[test]
    fn a_fence_must_be_exactly_three_dashes() {
        let parts = split("---\na: |\n  ---x\n  --- \n---\nb").expect("splits");
        assert_eq!(parts.frontmatter, "a: |\n  ---x\n  --- \n");
        assert!(split(" ---\n---\n").is_err());
        assert!(split("----\n---\n").is_err());
    }

    #[test]
    fn missing_or_unclosed_frontmatter_is_refused() {
        assert_eq!(
            split("# Title\n").expect_err("refused").message,
            "no frontmatter: the file must start with a line `---`"
        );
        assert_eq!(
            split("---\nname: a\n").expect_err("refused").message,
            "frontmatter is not closed: no line `---` after the first"
        );
        assert!(split("").is_err());
    }
}
