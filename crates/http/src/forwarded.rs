//! The client's address, worked out once per request, before any route: the
//! connection's peer, or behind a trusted proxy the `X-Forwarded-For` hop it vouches
//! for (`agentprocess_auth::forwarded`). Everything that counts or records where a
//! request came from (the per-address limits, the audit log's `from`) reads the
//! [`ClientIp`] left on the request, never the connection or the header itself.

use std::net::SocketAddr;
use std::sync::Arc;

use agentprocess_auth::forwarded::{ClientIp, TrustedProxies};
use axum::extract::{ConnectInfo, Request};
use axum::middleware::Next;
use axum::response::Response;

/// Leaves the client's [`ClientIp`] on `request`. A request with no connection (one
/// driven in process) has none.
pub(crate) async fn client_ip(trusted: Arc<TrustedProxies>, mut request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(address)| address.ip());
    if let Some(peer) = peer {
        let client = trusted.client_address(peer, request.headers());
        request.extensions_mut().insert(ClientIp(client));
    }
    next.run(request).await
}
