//! What a visitor nobody knows yet carries in cookies instead of a session, so that
//! showing a page to an anonymous browser stores nothing on the server: the CSRF
//! token of the sign-in, sign-up and development sign-in forms (double submit: the
//! form carries an HMAC of the cookie's random value under this server's key), and the
//! page to return to after signing in (signed the same way). A session row is written
//! only when a person signs in or sends a form.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use base64::Engine as _;
use hmac::{KeyInit as _, Mac as _};

/// How long the visitor's CSRF cookie lives.
const CSRF_SECONDS: u64 = 2 * 3600;
/// How long the page to return to is remembered.
const RETURN_SECONDS: u64 = 3600;

/// The key and cookie settings of one server.
#[derive(Clone)]
pub struct VisitorCookies {
    key: [u8; 32],
    secure: bool,
}

impl std::fmt::Debug for VisitorCookies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VisitorCookies")
            .field("secure", &self.secure)
            .finish_non_exhaustive()
    }
}

/// A form's CSRF token, and the cookie to set for it when the visitor had none.
pub struct FormToken {
    /// The token the form carries.
    pub token: String,
    cookie: Option<HeaderValue>,
}

impl FormToken {
    /// A token that needs no cookie (the session's own).
    pub fn of_session(token: String) -> Self {
        Self { token, cookie: None }
    }

    /// `response`, setting the cookie the token is bound to when it is new.
    pub fn set_on(self, mut response: Response) -> Response {
        if let Some(cookie) = self.cookie {
            response.headers_mut().append(header::SET_COOKIE, cookie);
        }
        response
    }
}

impl VisitorCookies {
    /// Keyed by `url_secret` (through a label of its own, so the key serves nothing
    /// else); `secure` for a server reached over https.
    pub fn new(url_secret: &[u8], secure: bool) -> Self {
        use sha2::Digest as _;
        let mut hasher = sha2::Sha256::new();
        hasher.update(b"agentprocess visitor cookies\0");
        hasher.update(url_secret);
        Self {
            key: hasher.finalize().into(),
            secure,
        }
    }

    fn name(&self, base: &str) -> String {
        // `__Host-`: bound to this host and path `/`, and sent over https only.
        if self.secure {
            format!("__Host-{base}")
        } else {
            base.to_owned()
        }
    }

    fn cookie(&self, base: &str, value: &str, seconds: u64) -> Option<HeaderValue> {
        let secure = if self.secure { "; Secure" } else { "" };
        HeaderValue::from_str(&format!(
            "{}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={seconds}{secure}",
            self.name(base)
        ))
        .ok()
    }

    fn mac(&self, label: &str, value: &str) -> String {
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.key).expect("an HMAC takes any key length");
        mac.update(label.as_bytes());
        mac.update(b"\0");
        mac.update(value.as_bytes());
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    /// The visitor's CSRF token, made with its cookie when the browser has none.
    pub fn form_token(&self, headers: &HeaderMap) -> FormToken {
        if let Some(nonce) = cookie_value(headers, &self.name("agentprocess-csrf")) {
            return FormToken {
                token: self.mac("csrf", &nonce),
                cookie: None,
            };
        }
        let nonce = agentprocess_auth::secrets::new_token("");
        FormToken {
            token: self.mac("csrf", &nonce),
            cookie: self.cookie("agentprocess-csrf", &nonce, CSRF_SECONDS),
        }
    }

    /// Whether `echoed` is the CSRF token of the visitor's cookie.
    pub fn form_token_matches(&self, headers: &HeaderMap, echoed: &str) -> bool {
        cookie_value(headers, &self.name("agentprocess-csrf"))
            .is_some_and(|nonce| agentprocess_auth::secrets::same(&self.mac("csrf", &nonce), echoed))
    }

    /// The cookie that remembers `path` as where to go once signed in.
    pub fn return_to(&self, path: &str) -> Option<HeaderValue> {
        let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(path);
        let value = format!("{encoded}.{}", self.mac("return", path));
        self.cookie("agentprocess-return", &value, RETURN_SECONDS)
    }

    /// The page remembered by [`Self::return_to`], if its signature holds.
    pub fn returning_to(&self, headers: &HeaderMap) -> Option<String> {
        let value = cookie_value(headers, &self.name("agentprocess-return"))?;
        let (encoded, mac) = value.split_once('.')?;
        let path = String::from_utf8(base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded).ok()?).ok()?;
        agentprocess_auth::secrets::same(&self.mac("return", &path), mac).then_some(path)
    }

    /// The cookie that forgets the page to return to.
    pub fn returned(&self) -> Option<HeaderValue> {
        self.cookie("agentprocess-return", "", 0)
    }
}

/// The value of the cookie `name` the request carries, when it is not empty.
pub fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(found, value)| *found == name && !value.is_empty())
        .map(|(_, value)| value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_cookie(cookie: &HeaderValue) -> HeaderMap {
        let pair = cookie
            .to_str()
            .expect("text")
            .split(';')
            .next()
            .expect("pair")
            .to_owned();
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("other=1; {pair}")).expect("header"),
        );
        headers
    }

    #[test]
    fn a_visitor_token_is_bound_to_its_cookie_and_key() {
        let cookies = VisitorCookies::new(b"secret", true);
        let made = cookies.form_token(&HeaderMap::new());
        let cookie = made.cookie.clone().expect("a new cookie");
        assert!(cookie.to_str().expect("text").starts_with("__Host-agentprocess-csrf="));
        let headers = with_cookie(&cookie);
        assert!(cookies.form_token_matches(&headers, &made.token));
        assert_eq!(
            cookies.form_token(&headers).token,
            made.token,
            "the same cookie, the same token"
        );
        assert!(!cookies.form_token_matches(&headers, "forged"));
        assert!(!cookies.form_token_matches(&HeaderMap::new(), &made.token), "no cookie");
        assert!(!VisitorCookies::new(b"another", true).form_token_matches(&headers, &made.token));
    }

    #[test]
    fn the_page_to_return_to_must_carry_its_signature() {
        let cookies = VisitorCookies::new(b"secret", false);
        let cookie = cookies.return_to("/oauth/authorize?client_id=x;y").expect("cookie");
        assert_eq!(
            cookies.returning_to(&with_cookie(&cookie)).as_deref(),
            Some("/oauth/authorize?client_id=x;y")
        );
        let forged = HeaderValue::from_static("agentprocess-return=L2FkbWlu.AAAA");
        assert_eq!(cookies.returning_to(&with_cookie(&forged)), None);
    }
}
