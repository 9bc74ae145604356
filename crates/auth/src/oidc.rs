//! Signing in at an organization's OpenID provider: discovery, the authorization
//! request (code flow, PKCE S256, `state`, `nonce`), and the checks of the ID token
//! (issuer, audience, signature against the provider's JWKS, expiry, nonce).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreJsonWebKeySet, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, RequestTokenError, Scope, SignatureVerificationError, TokenResponse as _,
};
use serde::{Deserialize, Serialize};

pub use crate::outbound::chain;
use crate::outbound::{Outbound, OutboundError, OutboundSettings};

/// How long a provider's metadata and keys are used before they are fetched again.
const METADATA_SECONDS: u64 = 600;

/// What the server does when it talks to identity providers.
#[derive(Debug, Clone)]
pub struct OidcSettings {
    /// Where providers send people back: `<public-url>/auth/callback`.
    pub redirect_uri: String,
    /// Let issuers on loopback and private addresses, and plain `http`, be used. Only
    /// for development and tests: a sign-up form could otherwise aim the server at its
    /// own network.
    pub allow_private_issuers: bool,
    /// Hosts (`host` or `host:port`) a provider may be on although their address is
    /// private (an identity provider inside the operator's network); over https still.
    pub allow_hosts: Vec<String>,
    /// PEM bundles of root certificates trusted beside the public ones.
    pub extra_roots_pem: Vec<Vec<u8>>,
    /// How long one request to a provider may take.
    pub timeout: Duration,
}

/// The largest answer read from a provider (metadata, keys, tokens).
const MAX_ANSWER_BYTES: usize = 512 * 1024;

/// The URLs of a provider's metadata the server or a browser is sent to.
const ENDPOINTS: [&str; 5] = [
    "authorization_endpoint",
    "token_endpoint",
    "jwks_uri",
    "userinfo_endpoint",
    "end_session_endpoint",
];

/// Talks to identity providers, keeping each one's metadata for a while.
#[derive(Clone)]
pub struct Oidc {
    outbound: Outbound,
    settings: OidcSettings,
    metadata: Arc<Mutex<HashMap<String, (Instant, CoreProviderMetadata)>>>,
}

impl std::fmt::Debug for Oidc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oidc")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// A sign-in that went to the provider and has not come back yet. Kept in the
/// browser's session until the callback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// The issuer the person was sent to.
    pub issuer: String,
    /// The client id used.
    pub client_id: String,
    /// `state`, compared with the callback's.
    pub state: String,
    /// `nonce`, compared with the ID token's.
    pub nonce: String,
    /// The PKCE verifier.
    pub verifier: String,
    /// For a sign-in that must be fresh: when it began (seconds since the epoch, by
    /// this machine's clock), which the ID token's `auth_time` may not precede.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_since: Option<i64>,
}

/// How far a provider's clock may lag this machine's when it says when the person
/// signed in (seconds).
const AUTH_TIME_SKEW: i64 = 120;

/// An organization's client at its provider.
#[derive(Debug, Clone)]
pub struct ClientConfig<'a> {
    /// The issuer URL.
    pub issuer: &'a str,
    /// The client id.
    pub client_id: &'a str,
    /// The client secret, for a confidential client.
    pub client_secret: Option<&'a str>,
}

/// What a verified ID token says about the person.
#[derive(Debug, Clone, PartialEq)]
pub struct Claims {
    /// `iss`.
    pub issuer: String,
    /// `sub`.
    pub subject: String,
    /// `email`, if present.
    pub email: Option<String>,
    /// `email_verified`, if present.
    pub email_verified: Option<bool>,
    /// `name`, if present.
    pub name: Option<String>,
    /// Every claim of the token, for the configurable ones (groups, Google's `hd`).
    pub all: serde_json::Map<String, serde_json::Value>,
}

/// Why a sign-in at a provider failed, in words for the person trying.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OidcError {
    /// The issuer URL is not one the server may use.
    #[error("issuer: {0}")]
    Issuer(String),
    /// Discovery failed.
    #[error("discovery at {issuer} failed: {reason}")]
    Discovery {
        /// The issuer tried.
        issuer: String,
        /// Why.
        reason: String,
    },
    /// The provider refused the authorization request before any login. Only its
    /// status and OAuth error are kept: never the page it answered with.
    #[error("the identity provider refused the sign-in request ({})", refusal_text(*.status, .error.as_deref(), .description.as_deref()))]
    Refused {
        /// Its HTTP status (0 when it could not be reached).
        status: u16,
        /// Its OAuth `error`, or why it could not be reached.
        error: Option<String>,
        /// Its OAuth `error_description`.
        description: Option<String>,
    },
    /// The callback is not the answer to this sign-in.
    #[error("{0}")]
    Callback(String),
    /// The code could not be exchanged for tokens.
    #[error("the identity provider did not give tokens for the code: {0}")]
    Exchange(String),
    /// The ID token failed a check.
    #[error("the ID token was refused: {0}")]
    IdToken(String),
}

impl Oidc {
    /// A client for providers; no redirects are followed (a provider's metadata and
    /// keys come from where its issuer says, nowhere else).
    pub fn new(settings: OidcSettings) -> Result<Self, String> {
        let outbound = Outbound::new(OutboundSettings {
            allow_private: settings.allow_private_issuers,
            allow_hosts: settings.allow_hosts.clone(),
            extra_roots_pem: settings.extra_roots_pem.clone(),
            timeout: settings.timeout,
            max_bytes: MAX_ANSWER_BYTES,
            ..OutboundSettings::default()
        })?;
        Ok(Self {
            outbound,
            settings,
            metadata: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// The redirect URI to register at providers.
    pub fn redirect_uri(&self) -> &str {
        &self.settings.redirect_uri
    }

    /// Every reason `issuer` cannot be used, at once (empty when it can).
    pub fn issuer_issues(&self, issuer: &str) -> Vec<String> {
        let Ok(url) = reqwest::Url::parse(issuer) else {
            return vec![format!("issuer: {issuer:?} is not a URL")];
        };
        let mut issues = Vec::new();
        if !self.scheme_allowed(&url) {
            issues.push(format!("issuer: {issuer} must use https"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            issues.push(format!("issuer: {issuer} must have no query or fragment"));
        }
        if let Some(refusal) = self.outbound.refusal(&url) {
            issues.push(format!("issuer: {refusal}"));
        }
        issues
    }

    /// Whether a provider URL's scheme may be used: https, or plain http where private
    /// providers are allowed (development and tests).
    fn scheme_allowed(&self, url: &reqwest::Url) -> bool {
        url.scheme() == "https" || (self.settings.allow_private_issuers && url.scheme() == "http")
    }

    /// Every reason the endpoints a provider's metadata names cannot be used: each must
    /// be a URL the issuer itself could be (https, and a public address unless allowed).
    fn endpoint_issues(&self, document: &serde_json::Value) -> Vec<String> {
        let mut issues = Vec::new();
        for name in ENDPOINTS {
            let Some(value) = document.get(name) else {
                continue;
            };
            let Some(url) = value.as_str().and_then(|text| reqwest::Url::parse(text).ok()) else {
                issues.push(format!("{name} is not a URL"));
                continue;
            };
            if !self.scheme_allowed(&url) {
                issues.push(format!("{name} must use https"));
            }
            if let Some(refusal) = self.outbound.refusal(&url) {
                issues.push(format!("{name}: {refusal}"));
            }
        }
        issues
    }

    /// A GET of `url` for JSON, read whole within the cap.
    async fn get_json(&self, url: reqwest::Url) -> Result<crate::outbound::Fetched, OutboundError> {
        self.outbound
            .send(
                self.outbound
                    .request(reqwest::Method::GET, url)
                    .header(reqwest::header::ACCEPT, "application/json"),
            )
            .await
    }

    /// Discovery (OpenID Connect Discovery §4) and the provider's keys. What went wrong
    /// is said in the server's words: a provider's answer is never repeated, since the
    /// URL it came from was typed by whoever filled in a form.
    async fn discover_metadata(&self, issuer: &str) -> Result<CoreProviderMetadata, String> {
        let at = format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'));
        let url = reqwest::Url::parse(&at).map_err(|error| format!("{at} is not a URL ({error})"))?;
        let fetched = self
            .get_json(url)
            .await
            .map_err(|error| format!("the provider could not be reached ({error})"))?;
        if fetched.status != reqwest::StatusCode::OK {
            return Err(format!("{at} answered HTTP {}", fetched.status.as_u16()));
        }
        let document: serde_json::Value = serde_json::from_slice(&fetched.body)
            .map_err(|error| format!("{at} did not answer JSON ({})", where_in(&error)))?;
        let issues = self.endpoint_issues(&document);
        if !issues.is_empty() {
            return Err(format!(
                "the provider's metadata names endpoints the server may not use: {}",
                issues.join("; ")
            ));
        }
        let mut metadata: CoreProviderMetadata = serde_json::from_value(document)
            .map_err(|error| format!("the provider's metadata is not valid ({})", where_in(&error)))?;
        let named = metadata.issuer().as_str();
        if named != issuer {
            let hint = if named.trim_end_matches('/') == issuer.trim_end_matches('/') {
                " (they differ in a trailing slash: type the issuer exactly as the provider names itself)"
            } else {
                ""
            };
            return Err(format!(
                "issuer mismatch: the metadata names another issuer than {issuer}{hint}"
            ));
        }
        let keys_at = metadata.jwks_uri().url().clone();
        let fetched = self
            .get_json(keys_at.clone())
            .await
            .map_err(|error| format!("the provider's keys could not be fetched ({error})"))?;
        if fetched.status != reqwest::StatusCode::OK {
            return Err(format!("{keys_at} answered HTTP {}", fetched.status.as_u16()));
        }
        let keys: CoreJsonWebKeySet = serde_json::from_slice(&fetched.body)
            .map_err(|error| format!("the provider's keys are not a JSON Web Key Set ({})", where_in(&error)))?;
        metadata = metadata.set_jwks(keys);
        Ok(metadata)
    }

    /// The provider's metadata and keys, from the cache unless `fresh`.
    async fn metadata(&self, issuer: &str, fresh: bool) -> Result<CoreProviderMetadata, OidcError> {
        if !fresh
            && let Ok(cache) = self.metadata.lock()
            && let Some((at, metadata)) = cache.get(issuer)
            && at.elapsed() < Duration::from_secs(METADATA_SECONDS)
        {
            return Ok(metadata.clone());
        }
        IssuerUrl::new(issuer.to_owned()).map_err(|error| OidcError::Issuer(error.to_string()))?;
        let metadata = self
            .discover_metadata(issuer)
            .await
            .map_err(|reason| OidcError::Discovery {
                issuer: issuer.to_owned(),
                reason,
            })?;
        if let Ok(mut cache) = self.metadata.lock() {
            cache.insert(issuer.to_owned(), (Instant::now(), metadata.clone()));
        }
        Ok(metadata)
    }

    /// Runs discovery at `issuer` afresh: whether the provider answers as itself, with
    /// its keys.
    pub async fn discover(&self, issuer: &str) -> Result<(), OidcError> {
        self.metadata(issuer, true).await.map(|_| ())
    }

    /// Runs discovery for `config` and makes the authorization request: the URL to
    /// send the person to, and what to keep until they come back. The request is
    /// tried once by the server first, so a provider that refuses it (an unknown
    /// client, an unregistered redirect URI) is reported before anyone leaves. `fresh`
    /// asks the provider to sign the person in again even if it has a session of its
    /// own (`max_age=0`, `prompt=login`), before a decision that needs a recent sign-in.
    pub async fn begin(
        &self,
        config: &ClientConfig<'_>,
        fresh: bool,
        preflight: bool,
    ) -> Result<(String, Pending), OidcError> {
        let metadata = self.metadata(config.issuer, false).await?;
        // Providers that offer a `groups` scope (Okta's custom claim, oidc-provider) put
        // the groups claim in the ID token only when it is asked for.
        let groups = metadata
            .scopes_supported()
            .is_some_and(|scopes| scopes.iter().any(|scope| scope.as_str() == "groups"));
        let client = self.client(metadata, config)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("email".to_owned()))
            .add_scope(Scope::new("profile".to_owned()));
        if groups {
            request = request.add_scope(Scope::new("groups".to_owned()));
        }
        if fresh {
            request = request
                .set_max_age(Duration::ZERO)
                .add_prompt(openidconnect::core::CoreAuthPrompt::Login);
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        if preflight {
            self.preflight(&url).await?;
        }
        Ok((
            url.to_string(),
            Pending {
                issuer: config.issuer.to_owned(),
                client_id: config.client_id.to_owned(),
                state: state.secret().clone(),
                nonce: nonce.secret().clone(),
                verifier: verifier.secret().clone(),
                fresh_since: fresh.then(|| jiff::Timestamp::now().as_second()),
            },
        ))
    }

    async fn preflight(&self, url: &reqwest::Url) -> Result<(), OidcError> {
        let fetched = self
            .outbound
            .send(self.outbound.request(reqwest::Method::GET, url.clone()))
            .await
            .map_err(|error| OidcError::Refused {
                status: 0,
                error: Some(format!("the authorization endpoint could not be reached ({error})")),
                description: None,
            })?;
        if fetched.status.is_success() || fetched.status.is_redirection() {
            return Ok(());
        }
        let (error, description) = crate::oauth_error::of_answer(&fetched.body);
        Err(OidcError::Refused {
            status: fetched.status.as_u16(),
            error,
            description,
        })
    }

    /// Finishes a sign-in: the callback's `state` and `iss` must be this sign-in's,
    /// the code is exchanged (with the PKCE verifier), and the ID token is checked.
    /// A signature by a key the cached keys do not have sends the server for fresh
    /// keys once.
    pub async fn finish(
        &self,
        config: &ClientConfig<'_>,
        pending: &Pending,
        callback: &Callback,
    ) -> Result<Claims, OidcError> {
        if let Some(error) = &callback.error {
            let description = callback.error_description.as_deref().unwrap_or("");
            return Err(OidcError::Callback(format!(
                "the identity provider answered {error}{}{description}",
                if description.is_empty() { "" } else { ": " }
            )));
        }
        let state = callback.state.as_deref().unwrap_or("");
        if !crate::secrets::same(state, &pending.state) {
            return Err(OidcError::Callback(
                "the sign-in's state does not match: start the sign-in again".to_owned(),
            ));
        }
        // RFC 9207: a provider that names itself must be the one the person went to.
        if let Some(iss) = &callback.iss
            && iss != &pending.issuer
        {
            return Err(OidcError::Callback(format!(
                "the answer came from {iss}, not from {}",
                pending.issuer
            )));
        }
        let Some(code) = callback.code.as_deref().filter(|code| !code.is_empty()) else {
            return Err(OidcError::Callback("the identity provider sent no code".to_owned()));
        };
        let metadata = self.metadata(config.issuer, false).await?;
        let client = self.client(metadata, config)?;
        let response = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|error| OidcError::Exchange(error.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier.clone()))
            .request_async(&ProviderHttp(&self.outbound))
            .await
            .map_err(|error| {
                OidcError::Exchange(match error {
                    RequestTokenError::ServerResponse(response) => {
                        use crate::oauth_error::{MAX_DESCRIPTION, MAX_ERROR, oauth_text};
                        let error =
                            oauth_text(response.error().as_ref(), MAX_ERROR).unwrap_or_else(|| "an error".to_owned());
                        let description = response
                            .error_description()
                            .and_then(|text| oauth_text(text, MAX_DESCRIPTION))
                            .unwrap_or_default();
                        format!("{error}{}{description}", if description.is_empty() { "" } else { ": " })
                    }
                    RequestTokenError::Request(error) => {
                        format!("the token endpoint could not be reached ({})", chain(&error))
                    }
                    other => other.to_string(),
                })
            })?;
        let id_token = response
            .id_token()
            .ok_or_else(|| OidcError::IdToken("the provider sent no ID token".to_owned()))?;
        let nonce = Nonce::new(pending.nonce.clone());
        let verified = match id_token.claims(&client.id_token_verifier(), &nonce) {
            Ok(_) => Ok(()),
            Err(ClaimsVerificationError::SignatureVerification(SignatureVerificationError::NoMatchingKey)) => {
                // The provider may have rotated its keys since they were fetched.
                let fresh = self.metadata(config.issuer, true).await?;
                let client = self.client(fresh, config)?;
                id_token.claims(&client.id_token_verifier(), &nonce).map(|_| ())
            }
            Err(error) => Err(error),
        };
        verified.map_err(|error| OidcError::IdToken(verification_reason(&error)))?;
        let claims = claims_of(&id_token.to_string())?;
        // `max_age=0` asked the provider to sign the person in again; the token must say
        // it did (OpenID Connect Core §3.1.2.1 makes `auth_time` required then).
        if let Some(since) = pending.fresh_since {
            match claims.all.get("auth_time").and_then(serde_json::Value::as_i64) {
                Some(at) if at >= since - AUTH_TIME_SKEW => {}
                Some(_) => {
                    return Err(OidcError::IdToken(
                        "the provider did not sign the person in again (auth_time is before this sign-in began)"
                            .to_owned(),
                    ));
                }
                None => {
                    return Err(OidcError::IdToken(
                        "the provider did not say when the person signed in (no auth_time) after max_age=0".to_owned(),
                    ));
                }
            }
        }
        Ok(claims)
    }

    fn client(
        &self,
        metadata: CoreProviderMetadata,
        config: &ClientConfig<'_>,
    ) -> Result<
        CoreClient<
            openidconnect::EndpointSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointMaybeSet,
            openidconnect::EndpointMaybeSet,
        >,
        OidcError,
    > {
        let redirect = RedirectUrl::new(self.settings.redirect_uri.clone())
            .map_err(|error| OidcError::Issuer(format!("the redirect URI is not valid: {error}")))?;
        Ok(CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(config.client_id.to_owned()),
            config.client_secret.map(|secret| ClientSecret::new(secret.to_owned())),
        )
        .set_redirect_uri(redirect))
    }
}

/// The query of `/auth/callback`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Callback {
    /// The authorization code.
    pub code: Option<String>,
    /// The state sent.
    pub state: Option<String>,
    /// The issuer, when the provider names itself (RFC 9207).
    pub iss: Option<String>,
    /// An error instead of a code.
    pub error: Option<String>,
    /// What the error means.
    pub error_description: Option<String>,
}

/// The claims of an ID token whose signature was checked: its payload, decoded.
fn claims_of(jwt: &str) -> Result<Claims, OidcError> {
    let damaged = || OidcError::IdToken("the payload is not JSON".to_owned());
    let payload = jwt.split('.').nth(1).ok_or_else(damaged)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| damaged())?;
    let all: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&bytes).map_err(|_| damaged())?;
    let text = |name: &str| all.get(name).and_then(serde_json::Value::as_str).map(str::to_owned);
    let email_verified = match all.get("email_verified") {
        Some(serde_json::Value::Bool(verified)) => Some(*verified),
        // Some providers send the boolean as a string.
        Some(serde_json::Value::String(text)) => Some(text == "true"),
        _ => None,
    };
    Ok(Claims {
        issuer: text("iss").unwrap_or_default(),
        subject: text("sub").unwrap_or_default(),
        email: text("email"),
        email_verified,
        name: text("name"),
        all,
    })
}

fn verification_reason(error: &ClaimsVerificationError) -> String {
    match error {
        ClaimsVerificationError::Expired(_) => "it has expired".to_owned(),
        ClaimsVerificationError::InvalidAudience(_) => "it was issued to another client (audience)".to_owned(),
        ClaimsVerificationError::InvalidIssuer(_) => "it was issued by another issuer".to_owned(),
        ClaimsVerificationError::InvalidNonce(_) => "its nonce is not this sign-in's".to_owned(),
        ClaimsVerificationError::SignatureVerification(SignatureVerificationError::NoMatchingKey) => {
            "it is signed by a key the provider does not publish".to_owned()
        }
        ClaimsVerificationError::SignatureVerification(error) => format!("its signature is not valid ({error})"),
        other => other.to_string(),
    }
}

/// The OpenID client's requests, sent through [`Outbound`].
struct ProviderHttp<'a>(&'a Outbound);

impl<'c> openidconnect::AsyncHttpClient<'c> for ProviderHttp<'_> {
    type Error = OutboundError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<openidconnect::HttpResponse, OutboundError>> + Send + 'c>,
    >;

    fn call(&'c self, request: openidconnect::HttpRequest) -> Self::Future {
        Box::pin(self.0.send_http(request))
    }
}

/// Where in a document a JSON error is, without the text found there.
fn where_in(error: &serde_json::Error) -> String {
    let what = match error.classify() {
        serde_json::error::Category::Io | serde_json::error::Category::Eof => "it ends early",
        serde_json::error::Category::Syntax => "a syntax error",
        serde_json::error::Category::Data => "a field is missing or of the wrong type",
    };
    format!("{what} at line {} column {}", error.line(), error.column())
}

/// The words of a refusal: the status, and the provider's OAuth error with what it
/// usually means.
fn refusal_text(status: u16, error: Option<&str>, description: Option<&str>) -> String {
    let mut text = if status == 0 {
        String::new()
    } else {
        format!("HTTP {status}")
    };
    if let Some(error) = error {
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(error);
        if let Some(meaning) = crate::oauth_error::meaning(error) {
            text.push_str(" (");
            text.push_str(meaning);
            text.push(')');
        }
    }
    if let Some(description) = description {
        text.push_str(": ");
        text.push_str(description);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_come_from_the_payload() {
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(r#"{"iss":"https://idp","sub":"42","email":"a@b.c","email_verified":"true","groups":["x"]}"#);
        let claims = claims_of(&format!("h.{payload}.s")).expect("claims");
        assert_eq!(claims.subject, "42");
        assert_eq!(claims.email_verified, Some(true));
        assert_eq!(claims.all["groups"], serde_json::json!(["x"]));
    }

    #[test]
    fn issuers_must_be_https_and_public() {
        let oidc = Oidc::new(OidcSettings {
            redirect_uri: "https://ap.example/auth/callback".to_owned(),
            allow_private_issuers: false,
            allow_hosts: Vec::new(),
            extra_roots_pem: Vec::new(),
            timeout: Duration::from_secs(5),
        })
        .expect("client");
        assert!(oidc.issuer_issues("https://idp.example.com").is_empty());
        assert_eq!(oidc.issuer_issues("http://127.0.0.1:9").len(), 2);
        assert_eq!(oidc.issuer_issues("not a url").len(), 1);
    }
}
