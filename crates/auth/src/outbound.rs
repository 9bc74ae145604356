//! Every request the server sends on a tenant's behalf (OpenID discovery and each
//! endpoint the provider's metadata names, its keys, the token exchange, client
//! metadata documents, webhooks) goes through [`Outbound`]. A tenant chooses those
//! URLs, so by default they may only reach public addresses: a name is resolved to its
//! public addresses alone, a URL whose host is an address literal is refused before
//! any connection, and every connection made is checked once more by the address it
//! reached, so no way round the resolver (a literal, a proxy) reaches the server's own
//! network. No redirect is followed, and each answer is capped in time and size.
//! Operators who need internal endpoints allow them: all of them (development and
//! tests), or named hosts.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::client::legacy::connect::{Connection, HttpInfo};
use reqwest::Url;

/// Whether `ip` is an address on the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        // Shared address space (carrier-grade NAT), 100.64.0.0/10.
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments, 192.0.0.0/24; the 6to4 relay anycast, 192.88.99.0/24.
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 88 && c == 99)
        // Benchmarking, 198.18.0.0/15; reserved, 240.0.0.0/4.
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    let [first, second, ..] = segments;
    let embedded = |high: u16, low: u16| Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    // Forms that carry an IPv4 address are judged by it: IPv4-mapped ::ffff:a.b.c.d,
    // and the well-known NAT64 prefix 64:ff9b::/96 (on an IPv6-only network with DNS64
    // every IPv4 host is reached through it).
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(embedded(segments[6], segments[7]));
    }
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // IPv4-compatible ::a.b.c.d (deprecated), which some stacks still route as IPv4.
        || segments[..6] == [0; 6]
        // NAT64 for local use, 64:ff9b:1::/48.
        || (first == 0x64 && second == 0xff9b)
        // Discard-only, 100::/64.
        || (first == 0x100 && segments[1..4] == [0; 3])
        // 6to4, 2002::/16 (deprecated; it tunnels to the IPv4 address it carries) and
        // Teredo, 2001::/32; documentation 2001:db8::/32; benchmarking 2001:2::/48.
        || first == 0x2002
        || (first == 0x2001 && (second == 0 || second == 0x0db8 || (second == 2 && segments[2] == 0)))
        // Unique local fc00::/7, link-local fe80::/10, site-local fec0::/10 (deprecated).
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0)
}

/// The address literal a URL's host is, if it is one.
pub fn literal_ip(url: &Url) -> Option<IpAddr> {
    match url.host()? {
        url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
        url::Host::Domain(_) => None,
    }
}

/// Resolves names as the system does, keeping only public addresses.
pub struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            // One answer for a name that does not resolve and one that resolves only
            // inside: which internal names exist is not for a sign-up form to learn.
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map(Iterator::collect)
                .unwrap_or_default();
            let public: Vec<SocketAddr> = found.into_iter().filter(|address| is_public(address.ip())).collect();
            if public.is_empty() {
                return Err(format!("{host} resolves to no public address").into());
            }
            let addresses: reqwest::dns::Addrs = Box::new(public.into_iter());
            Ok(addresses)
        })
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The last check, on every connection made: the address it reached must be public.
/// It holds whatever chose that address (a literal the caller did not check, a proxy).
#[derive(Debug, Clone, Copy)]
struct PublicPeers;

impl<S> tower::Layer<S> for PublicPeers {
    type Service = PublicPeer<S>;

    fn layer(&self, inner: S) -> PublicPeer<S> {
        PublicPeer(inner)
    }
}

#[derive(Debug, Clone)]
struct PublicPeer<S>(S);

impl<S, R> tower::Service<R> for PublicPeer<S>
where
    S: tower::Service<R>,
    S::Response: Connection + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, context: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.0.poll_ready(context).map_err(Into::into)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let connecting = self.0.call(request);
        Box::pin(async move {
            let connection = connecting.await.map_err(Into::into)?;
            let mut extras = http::Extensions::new();
            connection.connected().get_extras(&mut extras);
            match extras.get::<HttpInfo>().map(|info| info.remote_addr().ip()) {
                Some(ip) if is_public(ip) => Ok(connection),
                Some(ip) => Err(format!("{ip} is not a public address").into()),
                // Unknown is refused: this check exists for the cases nobody foresaw.
                None => Err("the address reached is not known".into()),
            }
        })
    }
}

/// What [`Outbound`] may reach and how long and large an answer may be.
#[derive(Debug, Clone)]
pub struct OutboundSettings {
    /// Let any address be reached: loopback, private, link-local. For development
    /// and tests only.
    pub allow_private: bool,
    /// Hosts (`host` or `host:port`) that may be on a private address while the rest
    /// may not (an identity provider inside the operator's network).
    pub allow_hosts: Vec<String>,
    /// PEM bundles of root certificates trusted beside the public ones (a private CA).
    pub extra_roots_pem: Vec<Vec<u8>>,
    /// How long one request may take, answer included.
    pub timeout: Duration,
    /// How long connecting may take (within `timeout`); `None`: only `timeout`
    /// bounds it.
    pub connect_timeout: Option<Duration>,
    /// The largest answer read, in bytes.
    pub max_bytes: usize,
    /// The `User-Agent` sent.
    pub user_agent: String,
}

impl Default for OutboundSettings {
    fn default() -> Self {
        Self {
            allow_private: false,
            allow_hosts: Vec::new(),
            extra_roots_pem: Vec::new(),
            timeout: Duration::from_secs(10),
            connect_timeout: None,
            max_bytes: 1024 * 1024,
            user_agent: concat!("agentprocess/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

/// An answer, read whole (within the cap).
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Its HTTP status.
    pub status: reqwest::StatusCode,
    /// Its headers.
    pub headers: reqwest::header::HeaderMap,
    /// Its body.
    pub body: Vec<u8>,
}

/// Why a request got no answer, in words for the tenant who chose the URL: never the
/// URL's credentials, never an answer's body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutboundError {
    /// The URL may not be requested at all.
    #[error("{0}")]
    Refused(String),
    /// No answer came (including a connection refused by the address check).
    #[error("{0}")]
    Unreachable(String),
    /// The answer is larger than the cap.
    #[error("the answer is larger than {0} bytes")]
    TooLarge(usize),
}

/// The one HTTP client for requests sent on a tenant's behalf; see the module.
#[derive(Clone)]
pub struct Outbound {
    guarded: reqwest::Client,
    open: reqwest::Client,
    settings: Arc<OutboundSettings>,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound")
            .field("allow_private", &self.settings.allow_private)
            .field("allow_hosts", &self.settings.allow_hosts)
            .finish_non_exhaustive()
    }
}

impl Outbound {
    /// A client with these settings.
    pub fn new(settings: OutboundSettings) -> Result<Self, String> {
        let builder = |guarded: bool| {
            let mut builder = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(settings.timeout)
                .user_agent(settings.user_agent.clone());
            if let Some(connect_timeout) = settings.connect_timeout {
                builder = builder.connect_timeout(connect_timeout);
            }
            if guarded {
                // A proxy would be the address reached, hiding the one asked for.
                builder = builder
                    .no_proxy()
                    .dns_resolver(Arc::new(PublicOnly))
                    .connector_layer(PublicPeers);
            }
            for pem in &settings.extra_roots_pem {
                for certificate in reqwest::Certificate::from_pem_bundle(pem).into_iter().flatten() {
                    builder = builder.add_root_certificate(certificate);
                }
            }
            builder.build().map_err(|error| chain(&error))
        };
        Ok(Self {
            guarded: builder(true)?,
            open: builder(false)?,
            settings: Arc::new(settings),
        })
    }

    /// Whether `url` may be on a private address (everything may, or its host is allowed).
    pub fn may_be_private(&self, url: &Url) -> bool {
        if self.settings.allow_private {
            return true;
        }
        let host = url.host_str().unwrap_or_default();
        let with_port = url.port_or_known_default().map(|port| format!("{host}:{port}"));
        self.settings
            .allow_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host) || with_port.as_deref() == Some(allowed.as_str()))
    }

    /// Why `url` may not be requested, if it may not: a literal non-public address
    /// that is not allowed. A name is judged when it is resolved.
    pub fn refusal(&self, url: &Url) -> Option<String> {
        if self.may_be_private(url) {
            return None;
        }
        literal_ip(url)
            .filter(|ip| !is_public(*ip))
            .map(|ip| format!("{ip} is not a public address"))
    }

    /// A request to `url`, to finish with headers and a body and pass to [`Self::send`].
    pub fn request(&self, method: reqwest::Method, url: Url) -> reqwest::RequestBuilder {
        self.guarded.request(method, url)
    }

    /// Sends `request` and reads its answer, at most the cap. A redirect is an answer
    /// like any other, not followed.
    pub async fn send(&self, request: reqwest::RequestBuilder) -> Result<Fetched, OutboundError> {
        let mut response = self.execute(request).await?;
        let max = self.settings.max_bytes;
        if response.content_length().is_some_and(|length| length > max as u64) {
            return Err(OutboundError::TooLarge(max));
        }
        let status = response.status();
        let headers = std::mem::take(response.headers_mut());
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) => break,
                // An answer that is not a success is judged by its status; a body cut
                // short (a server that closes without ending TLS) loses only itself.
                Err(_) if !status.is_success() => break,
                Err(error) => return Err(unreachable(error)),
            }
            if body.len() > max {
                return Err(OutboundError::TooLarge(max));
            }
        }
        Ok(Fetched { status, headers, body })
    }

    /// Sends `request` and answers with its status alone; the body is not read.
    pub async fn send_for_status(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::StatusCode, OutboundError> {
        Ok(self.execute(request).await?.status())
    }

    async fn execute(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response, OutboundError> {
        let request = request
            .build()
            .map_err(|error| OutboundError::Refused(chain(&error.without_url())))?;
        if let Some(refused) = self.refusal(request.url()) {
            return Err(OutboundError::Refused(refused));
        }
        let client = if self.may_be_private(request.url()) {
            &self.open
        } else {
            &self.guarded
        };
        client.execute(request).await.map_err(unreachable)
    }

    /// Sends a request built by the OpenID client, for it.
    pub async fn send_http(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, OutboundError> {
        let (parts, body) = request.into_parts();
        let url = Url::parse(&parts.uri.to_string()).map_err(|error| OutboundError::Refused(error.to_string()))?;
        let mut builder = self.request(parts.method, url).body(body);
        for (name, value) in &parts.headers {
            builder = builder.header(name, value);
        }
        let fetched = self.send(builder).await?;
        let mut response = http::Response::new(fetched.body);
        *response.status_mut() = fetched.status;
        *response.headers_mut() = fetched.headers;
        Ok(response)
    }
}

fn unreachable(error: reqwest::Error) -> OutboundError {
    OutboundError::Unreachable(if error.is_timeout() {
        "it took too long".to_owned()
    } else {
        chain(&error.without_url())
    })
}

/// An error with its causes, for a message or a log line.
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_not_public() {
        for internal in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "192.0.0.8",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "::ffff:10.0.0.1",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "::8.8.8.8",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::808:808",
            "2002:7f00:1::1",
            "2002:808:808::1",
            "2001:0:4136:e378::1",
            "2001:db8::1",
            "100::1",
        ] {
            assert!(!is_public(internal.parse().expect("ip")), "{internal}");
        }
        for public in [
            "93.184.215.14",
            "8.8.8.8",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
            "64:ff9b::808:808",
            "2a00:1450:4001::1",
        ] {
            assert!(is_public(public.parse().expect("ip")), "{public}");
        }
    }

    #[test]
    fn literal_hosts_are_checked_and_names_left_to_the_resolver() {
        let guarded = outbound(OutboundSettings::default());
        let refusal = |url: &str| guarded.refusal(&Url::parse(url).expect("url"));
        assert!(refusal("http://127.0.0.1:8080/hook").is_some());
        assert!(refusal("http://[::1]/hook").is_some());
        assert!(refusal("http://[::ffff:127.0.0.1]/hook").is_some());
        assert!(refusal("https://169.254.169.254/latest").is_some());
        // Spellings of 127.0.0.1 that URL parsing turns into the address.
        assert!(refusal("http://2130706433/").is_some());
        assert!(refusal("http://0x7f.1/").is_some());
        assert_eq!(refusal("https://8.8.8.8/hook"), None);
        assert_eq!(refusal("https://hooks.example.com/hook"), None);
    }

    fn outbound(settings: OutboundSettings) -> Outbound {
        Outbound::new(OutboundSettings {
            timeout: Duration::from_secs(5),
            ..settings
        })
        .expect("client")
    }

    /// A listener on loopback that counts the connections it accepts.
    async fn listener() -> (SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&accepted);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    use tokio::io::{AsyncReadExt, AsyncWriteExt};
                    let mut buffer = [0_u8; 4096];
                    let _ = stream.read(&mut buffer).await;
                    let body = "x".repeat(2000);
                    let answer = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}", body.len());
                    let _ = stream.write_all(answer.as_bytes()).await;
                });
            }
        });
        (address, accepted)
    }

    #[tokio::test]
    async fn private_addresses_are_refused_by_literal_by_name_and_at_connect() {
        let (address, accepted) = listener().await;
        let port = address.port();
        let guarded = outbound(OutboundSettings::default());
        for url in [
            format!("http://127.0.0.1:{port}/"),
            format!("http://[::ffff:127.0.0.1]:{port}/"),
            format!("http://localhost:{port}/"),
        ] {
            let refused = guarded
                .send(guarded.request(reqwest::Method::GET, Url::parse(&url).expect("url")))
                .await
                .expect_err(&url);
            assert!(refused.to_string().contains("public address"), "{url}: {refused}");
        }
        // The connector's own check, reached when nothing before it looked.
        let connected = guarded
            .guarded
            .get(format!("http://127.0.0.1:{port}/"))
            .send()
            .await
            .expect_err("connector");
        assert!(
            chain(&connected).contains("127.0.0.1 is not a public address"),
            "{connected}"
        );
        // The connection was made, then dropped before a byte was sent; the listener
        // may take a moment to accept it.
        for _ in 0..100 {
            if accepted.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            accepted.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "one connection, refused"
        );
    }

    #[tokio::test]
    async fn allowed_hosts_reach_private_addresses_and_answers_are_capped() {
        let (address, _) = listener().await;
        let allowed = outbound(OutboundSettings {
            allow_hosts: vec![format!("localhost:{}", address.port())],
            ..OutboundSettings::default()
        });
        let at = |host: &str| Url::parse(&format!("http://{host}:{}/", address.port())).expect("url");
        let fetched = allowed
            .send(allowed.request(reqwest::Method::GET, at("localhost")))
            .await
            .expect("allowed host");
        assert_eq!(fetched.body.len(), 2000);
        assert!(
            allowed
                .send(allowed.request(reqwest::Method::GET, at("127.0.0.1")))
                .await
                .is_err(),
            "only the host named is allowed"
        );
        let small = outbound(OutboundSettings {
            allow_private: true,
            max_bytes: 1000,
            ..OutboundSettings::default()
        });
        assert_eq!(
            small
                .send(small.request(reqwest::Method::GET, at("127.0.0.1")))
                .await
                .expect_err("cap"),
            OutboundError::TooLarge(1000)
        );
    }
}
