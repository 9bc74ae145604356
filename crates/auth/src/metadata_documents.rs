//! Client ID Metadata Documents: a client whose `client_id` is an https URL publishes
//! its metadata there, and the server fetches it. Any caller can make the server fetch
//! a URL this way, so the fetch is guarded: https only, no redirects followed, public
//! addresses only (unless the operator allows a host), a size cap and a time cap.
//! Documents are kept for their `Cache-Control` max-age, within a cap.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Url;
use serde::Deserialize;

use crate::outbound::{Outbound, OutboundError, OutboundSettings};
use crate::redirects;

/// How the server fetches metadata documents.
#[derive(Debug, Clone)]
pub struct MetadataDocumentSettings {
    /// Where documents may be fetched from, and how long and large one may be (the
    /// hosts allowed are those whose documents may be on a private address).
    pub fetch: OutboundSettings,
    /// The longest a document is kept, whatever its `Cache-Control` says.
    pub max_age: Duration,
}

impl Default for MetadataDocumentSettings {
    fn default() -> Self {
        Self {
            fetch: OutboundSettings {
                timeout: Duration::from_secs(5),
                max_bytes: 5 * 1024,
                user_agent: "agentprocess (client metadata)".to_owned(),
                ..OutboundSettings::default()
            },
            max_age: Duration::from_secs(3600),
        }
    }
}

/// A client as its metadata document describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// `client_id`: the document's URL.
    pub client_id: String,
    /// `client_name`.
    pub name: Option<String>,
    /// `redirect_uris`.
    pub redirect_uris: Vec<String>,
}

/// The fields of a document the server reads; the rest are ignored.
#[derive(Debug, Deserialize)]
struct Fields {
    client_id: Option<String>,
    client_name: Option<String>,
    redirect_uris: Option<Vec<String>>,
    application_type: Option<String>,
    token_endpoint_auth_method: Option<String>,
    client_secret: Option<serde_json::Value>,
}

/// How many documents one process keeps.
const KEPT: usize = 1000;
/// How long a document with no max-age is kept.
const DEFAULT_AGE: Duration = Duration::from_secs(300);

/// Fetches and keeps metadata documents.
#[derive(Clone)]
pub struct MetadataDocuments {
    outbound: Outbound,
    settings: MetadataDocumentSettings,
    kept: Arc<Mutex<HashMap<String, (Instant, Document)>>>,
}

impl std::fmt::Debug for MetadataDocuments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataDocuments")
            .field("allow_hosts", &self.settings.fetch.allow_hosts)
            .finish_non_exhaustive()
    }
}

impl MetadataDocuments {
    /// A fetcher with these settings.
    pub fn new(settings: MetadataDocumentSettings) -> Result<Self, String> {
        // Only the hosts named may be private: never every address.
        let outbound = Outbound::new(OutboundSettings {
            allow_private: false,
            ..settings.fetch.clone()
        })?;
        Ok(Self {
            outbound,
            settings,
            kept: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// The document at `client_id`, from the cache or fetched; why not, in words for
    /// the client's developer.
    pub async fn fetch(&self, client_id: &str) -> Result<Document, String> {
        if let Ok(kept) = self.kept.lock()
            && let Some((until, document)) = kept.get(client_id)
            && *until > Instant::now()
        {
            return Ok(document.clone());
        }
        let url = url_of(client_id)?;
        let fetched = self
            .outbound
            .send(
                self.outbound
                    .request(reqwest::Method::GET, url)
                    .header(reqwest::header::ACCEPT, "application/json"),
            )
            .await
            .map_err(|error| match error {
                OutboundError::Refused(_) => format!("the client_id {client_id} names a non-public address"),
                OutboundError::TooLarge(max) => {
                    format!("the client metadata document at {client_id} is larger than {max} bytes")
                }
                OutboundError::Unreachable(reason) => {
                    format!("the client metadata document at {client_id} could not be fetched: {reason}")
                }
            })?;
        let status = fetched.status;
        if status.is_redirection() {
            return Err(format!(
                "the client metadata document at {client_id} redirects (HTTP {}); redirects are not followed: serve it at its client_id",
                status.as_u16()
            ));
        }
        if status != reqwest::StatusCode::OK {
            return Err(format!(
                "the client metadata document at {client_id} answered HTTP {}",
                status.as_u16()
            ));
        }
        let age = max_age(&fetched.headers).map_or(DEFAULT_AGE, |age| age.min(self.settings.max_age));
        let body = fetched.body;
        let document = parse(client_id, &body)?;
        if !age.is_zero()
            && let Ok(mut kept) = self.kept.lock()
        {
            if kept.len() >= KEPT {
                kept.clear();
            }
            kept.insert(client_id.to_owned(), (Instant::now() + age, document.clone()));
        }
        Ok(document)
    }
}

/// Whether `client_id` is a metadata document URL (rather than a registered id).
pub fn is_document_url(client_id: &str) -> bool {
    client_id.starts_with("https://")
}

/// The URL of a `client_id` as the metadata document draft allows it: https, with a
/// path, no fragment, no credentials, no dot segments.
fn url_of(client_id: &str) -> Result<Url, String> {
    let url = Url::parse(client_id).map_err(|error| format!("the client_id {client_id:?} is not a URL ({error})"))?;
    let mut issues = Vec::new();
    if url.scheme() != "https" {
        issues.push("it must use https");
    }
    if url.path() == "/" || url.path().is_empty() {
        issues.push("it must have a path");
    }
    if url.fragment().is_some() {
        issues.push("it must not have a fragment");
    }
    if !url.username().is_empty() || url.password().is_some() {
        issues.push("it must not carry credentials");
    }
    let raw_path = client_id.split_once("://").map_or("", |(_, rest)| rest);
    if raw_path
        .split(['/', '?', '#'])
        .any(|segment| segment == "." || segment == "..")
    {
        issues.push("it must not have . or .. segments");
    }
    if issues.is_empty() {
        Ok(url)
    } else {
        Err(format!(
            "the client_id {client_id:?} is not a metadata document URL: {}",
            issues.join("; ")
        ))
    }
}

/// `max-age` of `Cache-Control`; zero for `no-store` or `no-cache`.
fn max_age(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::CACHE_CONTROL)?.to_str().ok()?;
    let mut found = None;
    for directive in value.split(',').map(str::trim) {
        if directive.eq_ignore_ascii_case("no-store") || directive.eq_ignore_ascii_case("no-cache") {
            return Some(Duration::ZERO);
        }
        if let Some(seconds) = directive.strip_prefix("max-age=") {
            found = seconds.trim_matches('"').parse().ok().map(Duration::from_secs);
        }
    }
    found
}

fn parse(client_id: &str, body: &[u8]) -> Result<Document, String> {
    let fields: Fields = serde_json::from_slice(body).map_err(|error| {
        format!("the client metadata document at {client_id} is not a JSON object of client metadata ({error})")
    })?;
    let mut issues = Vec::new();
    if fields.client_id.as_deref() != Some(client_id) {
        issues.push(format!(
            "client_id: {:?} differs from the document's URL {client_id:?}",
            fields.client_id.as_deref().unwrap_or("")
        ));
    }
    if fields.client_secret.is_some() {
        issues.push("client_secret: a metadata document must not hold a secret".to_owned());
    }
    match fields.token_endpoint_auth_method.as_deref() {
        None | Some("none") => {}
        Some(other) => issues.push(format!(
            "token_endpoint_auth_method: {other:?} is not served for metadata document clients; use none (PKCE protects the code)"
        )),
    }
    let redirect_uris = fields.redirect_uris.unwrap_or_default();
    match redirects::application_type(fields.application_type.as_deref(), &redirect_uris) {
        Ok(kind) => issues.extend(redirects::issues(&redirect_uris, kind)),
        Err(issue) => issues.push(issue),
    }
    if !issues.is_empty() {
        return Err(format!(
            "the client metadata document at {client_id} is refused: {}",
            issues.join("; ")
        ));
    }
    Ok(Document {
        client_id: client_id.to_owned(),
        name: fields.client_name.filter(|name| !name.trim().is_empty()),
        redirect_uris,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_id_url_needs_https_a_path_and_no_tricks() {
        assert!(url_of("https://app.example.com/oauth/client.json").is_ok());
        assert!(url_of("http://app.example.com/client.json").is_err());
        assert!(url_of("https://app.example.com/").is_err());
        assert!(url_of("https://app.example.com/a#b").is_err());
        assert!(url_of("https://user:pw@app.example.com/a").is_err());
        assert!(url_of("https://app.example.com/a/../b").is_err());
    }

    #[test]
    fn a_document_must_name_itself_and_hold_no_secret() {
        let id = "https://app.example.com/client.json";
        let good = serde_json::json!({"client_id": id, "client_name": "App", "redirect_uris": ["http://127.0.0.1/cb"]});
        let document = parse(id, good.to_string().as_bytes()).expect("valid");
        assert_eq!(document.name.as_deref(), Some("App"));
        let bad = serde_json::json!({
            "client_id": "https://other.example/client.json", "client_secret": "x",
            "token_endpoint_auth_method": "client_secret_basic", "redirect_uris": []});
        let refused = parse(id, bad.to_string().as_bytes()).expect_err("refused");
        for expected in [
            "client_id",
            "client_secret",
            "token_endpoint_auth_method",
            "redirect_uris",
        ] {
            assert!(refused.contains(expected), "{refused}");
        }
    }

    #[test]
    fn max_age_is_read_and_no_store_keeps_nothing() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::CACHE_CONTROL,
            "public, max-age=120".parse().expect("header"),
        );
        assert_eq!(max_age(&headers), Some(Duration::from_secs(120)));
        headers.insert(reqwest::header::CACHE_CONTROL, "no-store".parse().expect("header"));
        assert_eq!(max_age(&headers), Some(Duration::ZERO));
    }
}
