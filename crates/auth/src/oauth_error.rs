//! The OAuth error in a provider's answer, and nothing else of it. An answer to a
//! request whose URL a tenant chose is not shown to anyone: only its `error` code
//! (RFC 6749 §5.2) and `error_description`, which are what tells an admin that a
//! redirect URI is not registered, and only in the characters OAuth allows them.

/// Error codes providers answer an authorization request with, registered (RFC 6749
/// §4.1.2.1, OpenID Connect Core §3.1.2.6) or in wide use (Google's
/// `redirect_uri_mismatch`, oidc-provider's `invalid_redirect_uri`).
const KNOWN: [&str; 14] = [
    "invalid_redirect_uri",
    "redirect_uri_mismatch",
    "invalid_client",
    "unauthorized_client",
    "unsupported_response_type",
    "invalid_scope",
    "invalid_request_uri",
    "invalid_request",
    "access_denied",
    "login_required",
    "consent_required",
    "interaction_required",
    "temporarily_unavailable",
    "server_error",
];

/// The longest `error` kept.
pub(crate) const MAX_ERROR: usize = 64;
/// The longest `error_description` kept, in characters.
pub(crate) const MAX_DESCRIPTION: usize = 300;

/// `error` and `error_description` of an answer's body: from a JSON object with an
/// `error` member, else the first known error code a page names (its description is
/// then not taken: the page around it is the provider's own words, or anyone's).
pub fn of_answer(body: &[u8]) -> (Option<String>, Option<String>) {
    if let Ok(serde_json::Value::Object(object)) = serde_json::from_slice::<serde_json::Value>(body)
        && let Some(error) = object.get("error").and_then(serde_json::Value::as_str)
    {
        let error = oauth_text(error, MAX_ERROR).filter(|code| !code.contains(' '));
        let description = error
            .as_ref()
            .and_then(|_| object.get("error_description"))
            .and_then(serde_json::Value::as_str)
            .and_then(|text| oauth_text(text, MAX_DESCRIPTION));
        return (error, description);
    }
    let text = String::from_utf8_lossy(body);
    let named = KNOWN.iter().find(|code| names(&text, code));
    (named.map(|code| (*code).to_owned()), None)
}

/// Whether `text` has `code` as a word of its own (not inside a longer identifier).
fn names(text: &str, code: &str) -> bool {
    let part_of_word = |character: Option<char>| character.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    text.match_indices(code).any(|(at, _)| {
        !part_of_word(text[..at].chars().next_back()) && !part_of_word(text[at + code.len()..].chars().next())
    })
}

/// `text` if it is made of the characters RFC 6749 allows in these fields
/// (%x20-21 / %x23-5B / %x5D-7E: printable ASCII without `"` and `\`), cut to `max`.
pub(crate) fn oauth_text(text: &str, max: usize) -> Option<String> {
    let allowed = |c: char| matches!(c, ' '..='!' | '#'..='[' | ']'..='~');
    let text = text.trim();
    if text.is_empty() || !text.chars().all(allowed) {
        return None;
    }
    let mut kept: String = text.chars().take(max).collect();
    if text.len() > kept.len() {
        kept.push('…');
    }
    Some(kept)
}

/// What a code usually means for the admin setting up sign-in, in the server's words.
pub fn meaning(code: &str) -> Option<&'static str> {
    Some(match code {
        "invalid_redirect_uri" | "redirect_uri_mismatch" => {
            "this server's redirect URI is not registered for the client at the provider"
        }
        "invalid_client" | "unauthorized_client" => {
            "the provider does not know this client id, or does not let it use the authorization code flow"
        }
        "invalid_scope" => "the provider does not offer a scope asked for (openid email profile)",
        "unsupported_response_type" => "the client may not use the authorization code flow",
        "access_denied" => "the provider refused access",
        "temporarily_unavailable" | "server_error" => "the provider failed; try again later",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_errors_keep_only_the_oauth_fields() {
        let body =
            br#"{"error":"invalid_request","error_description":"redirect_uri is not registered","secret":"s3cret"}"#;
        assert_eq!(
            of_answer(body),
            (
                Some("invalid_request".to_owned()),
                Some("redirect_uri is not registered".to_owned())
            )
        );
        let markup = br#"{"error":"<script>","error_description":"x"}"#;
        assert_eq!(of_answer(markup), (Some("<script>".to_owned()), Some("x".to_owned())));
        let quoted = br#"{"error":"bad\"code","error_description":"line\nbreak"}"#;
        assert_eq!(of_answer(quoted), (None, None));
        let long = format!(
            r#"{{"error":"server_error","error_description":"{}"}}"#,
            "a".repeat(1000)
        );
        assert_eq!(of_answer(long.as_bytes()).1.map(|text| text.chars().count()), Some(301));
    }

    #[test]
    fn pages_give_a_known_code_and_nothing_else() {
        let page = b"<h1>oops</h1><pre>error: invalid_redirect_uri</pre><p>internal: token=abc</p>";
        assert_eq!(of_answer(page), (Some("invalid_redirect_uri".to_owned()), None));
        assert_eq!(of_answer(b"<p>my_invalid_client_2 is fine</p>"), (None, None));
        assert_eq!(of_answer(b"ami-id\nhostname\nsecret"), (None, None));
        assert_eq!(of_answer(b"{\"data\":\"secret\"}"), (None, None));
    }
}
