//! Behind trusted proxies: the client a request comes from is the `X-Forwarded-For`
//! hop they vouch for, so clients behind one ingress are counted apart; a connection
//! from anywhere else is counted by its own address, whatever it forwards.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::json;

use crate::harness::{TestApp, on_both};

/// The ingress's network, as the operator names it.
const PROXIES: &str = "10.0.0.0/8, fd00::/8";
/// How many clients one address may register per hour (the server's default).
const REGISTRATIONS: usize = 20;

/// A client registration arriving on a connection from `peer`, with these
/// `X-Forwarded-For` hops. The body is not valid metadata: the per-address limit is
/// counted first, so 400 says counted and let through, 429 refused by the limit.
async fn register(app: &TestApp, peer: &str, forwarded_for: Option<&str>) -> StatusCode {
    let mut request = Request::post("/oauth/register")
        .header(header::HOST, "localhost")
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(hops) = forwarded_for {
        request = request.header("x-forwarded-for", hops);
    }
    let mut request = request.body(Body::from("{}")).expect("request");
    request
        .extensions_mut()
        .insert(ConnectInfo(peer.parse::<SocketAddr>().expect("peer")));
    let (status, answer) = app.send(request).await;
    assert!(
        matches!(status, StatusCode::BAD_REQUEST | StatusCode::TOO_MANY_REQUESTS),
        "{status} {answer}"
    );
    status
}

/// Registers `REGISTRATIONS` times as `forwarded_for` through `peer`: all let through.
async fn use_up(app: &TestApp, peer: &str, forwarded_for: Option<&str>) {
    for _ in 0..REGISTRATIONS {
        assert_eq!(register(app, peer, forwarded_for).await, StatusCode::BAD_REQUEST);
    }
}

on_both!(
    clients_behind_a_trusted_proxy_are_counted_by_their_forwarded_address,
    behind_a_trusted_proxy
);
async fn behind_a_trusted_proxy(app: TestApp) -> TestApp {
    let app = app.behind_proxies(PROXIES);
    let ingress = "10.1.1.1:40000";
    use_up(&app, ingress, Some("198.51.100.1")).await;
    assert_eq!(
        register(&app, ingress, Some("198.51.100.1")).await,
        StatusCode::TOO_MANY_REQUESTS,
        "the first client has used its share"
    );
    // A second client behind the same ingress has its own.
    assert_eq!(
        register(&app, ingress, Some("198.51.100.2")).await,
        StatusCode::BAD_REQUEST
    );
    // The first client writing another address on the left of the header gains
    // nothing: the ingress appended the address it really came from.
    assert_eq!(
        register(&app, ingress, Some("203.0.113.77, 198.51.100.1")).await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // Through a second trusted hop (over IPv6) the same client is still itself.
    assert_eq!(
        register(&app, "[fd00::5]:40000", Some("198.51.100.1, 10.2.2.2")).await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // A hop that is no address counts the request as the proxy's own, never as an
    // address the client chose.
    use_up(&app, ingress, Some("198.51.100.9, garbage")).await;
    assert_eq!(
        register(&app, ingress, Some("198.51.100.10, garbage")).await,
        StatusCode::TOO_MANY_REQUESTS,
        "counted as the ingress"
    );
    assert_eq!(register(&app, ingress, None).await, StatusCode::TOO_MANY_REQUESTS);
    app
}

on_both!(
    a_client_forwarding_through_an_untrusted_peer_is_counted_by_the_peer,
    untrusted_peer
);
async fn untrusted_peer(app: TestApp) -> TestApp {
    let app = app.behind_proxies(PROXIES);
    let stranger = "203.0.113.9:50000";
    for n in 0..REGISTRATIONS {
        let spoofed = format!("198.51.100.{n}");
        assert_eq!(register(&app, stranger, Some(&spoofed)).await, StatusCode::BAD_REQUEST);
    }
    // A new address in the header every time did not make a new client.
    assert_eq!(
        register(&app, stranger, Some("198.51.100.200")).await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // Nor does naming a trusted proxy's address as the last hop.
    assert_eq!(
        register(&app, stranger, Some("198.51.100.201, 10.1.1.1")).await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // Without trusted proxies the header is not read at all.
    let app = app.behind_proxies("");
    use_up(&app, "10.1.1.1:40000", Some("198.51.100.1")).await;
    assert_eq!(
        register(&app, "10.1.1.1:40000", Some("198.51.100.2")).await,
        StatusCode::TOO_MANY_REQUESTS
    );
    app
}

on_both!(the_audit_log_records_the_forwarded_client, audit_from);
async fn audit_from(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", agentprocess_auth::Role::Admin, &[])
        .await
        .behind_proxies(PROXIES);
    let admin = app.api_token("ann", "admin").await;
    for (peer, forwarded_for, group) in [
        ("10.1.1.1:40000", "203.0.113.5, 198.51.100.1", "finance"),
        ("203.0.113.9:50000", "198.51.100.1", "legal"),
    ] {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri("/api/v1/groups")
            .header(header::HOST, "localhost")
            .header(header::AUTHORIZATION, format!("Bearer {admin}"))
            .header(header::CONTENT_TYPE, "application/json")
            .header("x-forwarded-for", forwarded_for)
            .body(Body::from(json!({ "id": group }).to_string()))
            .expect("request");
        request
            .extensions_mut()
            .insert(ConnectInfo(peer.parse::<SocketAddr>().expect("peer")));
        let (status, answer) = app.send(request).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    let (_, log) = app.rest(&admin, Method::GET, "/audit?kind=group.created", None).await;
    let from: Vec<(&str, &str)> = log["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|entry| {
            (
                entry["target"].as_str().unwrap_or_default(),
                entry["address"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert!(from.contains(&("finance", "198.51.100.1")), "{log}");
    assert!(from.contains(&("legal", "203.0.113.9")), "{log}");
    app
}
