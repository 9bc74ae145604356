//! The addresses hooks post to: the organization's webhook endpoints and its groups'
//! chat hooks. Each URL is a credential (a chat hook's URL is its bearer secret; a
//! webhook delivery carries its signature and run data), so it must be `https://`:
//! over plain `http://` anyone on the way reads it, and can replay it. An operator may
//! allow plain http (`--allow-plain-http-hooks`), for development and tests whose
//! receivers listen on loopback.
//!
//! One check, when a URL is set (by every surface: REST, the admin pages and
//! `agentprocess admin`, all through [`crate::Admin`]) and again before each post, so a
//! URL kept before the rule (or while the operator allowed plain http) is not posted
//! to either: the delivery or message records why, where admins read it.

use reqwest::Url;

/// Whether hooks may post over plain `http://`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PlainHttpHooks {
    /// Only `https://` (the default).
    #[default]
    Refused,
    /// `http://` too: the URL and what is posted cross the network readable.
    /// Development and tests only (`--allow-plain-http-hooks`).
    Allowed,
}

impl PlainHttpHooks {
    /// [`Self::Allowed`] when an operator's flag says so, else [`Self::Refused`].
    pub fn allowed_if(allowed: bool) -> Self {
        if allowed { Self::Allowed } else { Self::Refused }
    }
}

/// Every issue with `url` as a hook's address, each starting with `field`; none when
/// it may be set.
pub(crate) fn hook_url_issues(field: &str, url: &str, plain_http: PlainHttpHooks) -> Vec<String> {
    let parsed = match Url::parse(url) {
        Ok(parsed) => parsed,
        // The parser's words never repeat the URL, which may be a secret.
        Err(error) => return vec![format!("{field}: not a URL ({error})")],
    };
    let mut issues = Vec::new();
    if let Some(refusal) = scheme_refusal(&parsed, plain_http) {
        issues.push(format!("{field}: {refusal}"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        issues.push(format!("{field}: names no host"));
    }
    issues
}

/// Why a kept hook URL may not be posted to now, if its scheme is not allowed: `what`
/// names it (`the endpoint's URL`).
pub(crate) fn send_refusal(what: &str, url: &Url, plain_http: PlainHttpHooks) -> Option<String> {
    scheme_refusal(url, plain_http)
        .map(|refusal| format!("refused: {what} {refusal}; nothing was sent: set it again with an https:// URL"))
}

/// Why `url`'s scheme is not allowed, if it is not.
fn scheme_refusal(url: &Url, plain_http: PlainHttpHooks) -> Option<String> {
    match (url.scheme(), plain_http) {
        ("https", _) | ("http", PlainHttpHooks::Allowed) => None,
        ("http", PlainHttpHooks::Refused) => Some(
            "must be an https:// URL: this server does not post to plain http://, where anyone on the way could \
             read the URL and what is posted"
                .to_owned(),
        ),
        (other, PlainHttpHooks::Refused) => Some(format!("must be an https:// URL, not {other}:")),
        (other, PlainHttpHooks::Allowed) => Some(format!("must be an https:// or http:// URL, not {other}:")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_unless_plain_http_is_allowed() {
        let refused = |url: &str| hook_url_issues("url", url, PlainHttpHooks::Refused);
        assert_eq!(refused("https://hooks.example.com/T0/B0/secret"), Vec::<String>::new());
        let plain = refused("http://hooks.example.com/T0/B0/secret");
        assert_eq!(plain.len(), 1, "{plain:?}");
        assert!(plain[0].starts_with("url: must be an https:// URL"), "{plain:?}");
        assert!(!plain[0].contains("secret"), "the URL is not repeated: {plain:?}");
        assert_eq!(
            hook_url_issues("url", "http://127.0.0.1:8080/hook", PlainHttpHooks::Allowed),
            Vec::<String>::new()
        );
        assert_eq!(
            refused("ftp://example.com/x"),
            ["url: must be an https:// URL, not ftp:"]
        );
        // Every issue at once.
        assert_eq!(
            refused("mailto:someone"),
            ["url: must be an https:// URL, not mailto:", "url: names no host"]
        );
        assert_eq!(refused("not a url").len(), 1);
    }

    #[test]
    fn a_kept_plain_http_url_is_not_posted_to() {
        let kept = Url::parse("http://hooks.example.com/in").expect("url");
        let refusal = send_refusal("the hook's URL", &kept, PlainHttpHooks::Refused).expect("refused");
        assert!(
            refusal.starts_with("refused: the hook's URL must be an https:// URL"),
            "{refusal}"
        );
        assert_eq!(send_refusal("the hook's URL", &kept, PlainHttpHooks::Allowed), None);
        let https = Url::parse("https://hooks.example.com/in").expect("url");
        assert_eq!(send_refusal("the hook's URL", &https, PlainHttpHooks::Refused), None);
    }
}
