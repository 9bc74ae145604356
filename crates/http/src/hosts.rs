//! The allowed-hosts check, on every route: a request whose `Host` is not one of the
//! server's names is refused before anything reads it, so a DNS name an attacker
//! points at the server (DNS rebinding) reaches no page, form or API. The health
//! probes are exempt: an orchestrator calls them by the pod's address.

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Paths any `Host` may reach.
const PROBES: [&str; 2] = ["/healthz", "/readyz"];

/// Whether the request's authority (`Host`, or HTTP/2's `:authority`) is allowed:
/// the host as listed (any port), or `host:port` exactly, compared as the MCP
/// transport compares them. An empty list allows every host.
pub(crate) fn allowed(headers: &HeaderMap, uri: &Uri, allowed_hosts: &[String]) -> bool {
    if allowed_hosts.is_empty() {
        return true;
    }
    let authority = match headers.get(header::HOST) {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|text| axum::http::uri::Authority::try_from(text).ok()),
        None => uri.authority().cloned(),
    };
    let Some(authority) = authority else {
        return false;
    };
    let host = normalized(authority.host());
    let port = authority.port_u16();
    allowed_hosts.iter().any(|listed| {
        let listed = listed.trim();
        match axum::http::uri::Authority::try_from(listed) {
            Ok(known) => normalized(known.host()) == host && known.port_u16().is_none_or(|known| Some(known) == port),
            Err(_) => normalized(listed) == host,
        }
    })
}

fn normalized(host: &str) -> String {
    host.trim_matches(['[', ']']).to_ascii_lowercase()
}

/// The layer.
pub(crate) async fn check(allowed_hosts: std::sync::Arc<[String]>, request: Request, next: Next) -> Response {
    if PROBES.contains(&request.uri().path()) || allowed(request.headers(), request.uri(), &allowed_hosts) {
        return next.run(request).await;
    }
    tracing::warn!("refused a request for a host this server is not");
    (StatusCode::FORBIDDEN, "Forbidden: Host header is not allowed").into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_host(host: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, host.parse().expect("header"));
        headers
    }

    #[test]
    fn hosts_are_compared_by_name_and_port_when_listed_with_one() {
        let listed = [
            "ap.example.com".to_owned(),
            "127.0.0.1:8080".to_owned(),
            "::1".to_owned(),
        ];
        let uri = Uri::from_static("/inbox");
        for host in ["ap.example.com", "AP.example.com:443", "127.0.0.1:8080", "[::1]:9"] {
            assert!(allowed(&with_host(host), &uri, &listed), "{host}");
        }
        for host in [
            "evil.example",
            "127.0.0.1:8081",
            "127.0.0.1",
            "ap.example.com.evil.example",
            "bad host",
        ] {
            assert!(!allowed(&with_host(host), &uri, &listed), "{host}");
        }
        assert!(!allowed(&HeaderMap::new(), &uri, &listed), "no host at all");
        assert!(allowed(&with_host("anything"), &uri, &[]), "an empty list allows all");
    }
}
