//! Where a request comes from. Behind a reverse proxy (an ingress, a load balancer)
//! every connection's peer is the proxy, so limits per address would count all its
//! clients as one. The operator names the proxies it trusts (`--trusted-proxies`);
//! for a connection from one of them the client is read from `X-Forwarded-For`, to
//! which each proxy appends the address it saw.
//!
//! The rule: walk the hops from the right (the nearest first), passing over trusted
//! ones; the first hop that is not trusted is the client. Every hop walked over was
//! written by a trusted proxy, so whatever a client puts further left is never read.
//! When every hop is trusted, the leftmost is the client (a call from inside). A hop
//! that is not an address ends the walk at the last trusted address seen: the request
//! is counted as that proxy's, never as an address the client could have written.
//! Without trusted proxies the header is not read at all.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use http::HeaderMap;
use ipnet::IpNet;

/// The header each proxy appends the address it saw to.
const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// The networks whose connections' `X-Forwarded-For` is believed; none by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Whether no proxy is trusted (the header is then never read).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` is in a trusted network. An IPv4 address a dual-stack listener
    /// saw as `::ffff:a.b.c.d` is judged as the IPv4 address it is.
    pub fn trusts(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|network| network.contains(&ip))
    }

    /// The client a request on a connection from `peer` comes from; see the module.
    pub fn client_address(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let mut client = peer.to_canonical();
        if !self.trusts(client) {
            return client;
        }
        // Several header lines read as one list, in their order: the last line's last
        // hop is the nearest.
        for line in headers.get_all(X_FORWARDED_FOR).iter().rev() {
            let Ok(text) = line.to_str() else {
                return client;
            };
            for entry in text.rsplit(',') {
                let Some(hop) = hop(entry) else {
                    return client;
                };
                if !self.trusts(hop) {
                    return hop;
                }
                client = hop;
            }
        }
        client
    }
}

/// One hop of `X-Forwarded-For` as proxies write it: an address, or an address with a
/// port (`192.0.2.1:4711`, `[2001:db8::1]:4711`), or an IPv6 address in brackets.
fn hop(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    let ip = entry
        .parse::<IpAddr>()
        .ok()
        .or_else(|| entry.parse::<SocketAddr>().ok().map(|address| address.ip()))
        .or_else(|| {
            entry
                .strip_prefix('[')?
                .strip_suffix(']')?
                .parse::<std::net::Ipv6Addr>()
                .ok()
                .map(IpAddr::V6)
        })?;
    Some(ip.to_canonical())
}

/// One network of the list: `address/prefix`, or an address alone (itself only).
fn network(entry: &str) -> Option<IpNet> {
    if entry.contains('/') {
        entry.parse::<IpNet>().ok().map(|network| network.trunc())
    } else {
        entry.parse::<IpAddr>().ok().map(IpNet::from)
    }
}

impl FromStr for TrustedProxies {
    type Err = String;

    /// A comma-separated list of networks (`10.0.0.0/8, fd00::/8, 192.0.2.7`); empty
    /// entries are passed over. Every entry that is not a network is named at once.
    fn from_str(text: &str) -> Result<Self, String> {
        let mut networks = Vec::new();
        let mut wrong = Vec::new();
        for entry in text.split(',').map(str::trim).filter(|entry| !entry.is_empty()) {
            match network(entry) {
                Some(network) => networks.push(network),
                None => wrong.push(format!("{entry:?}")),
            }
        }
        if wrong.is_empty() {
            return Ok(Self(networks));
        }
        let are = if wrong.len() == 1 {
            "is not a network"
        } else {
            "are not networks"
        };
        Err(format!(
            "{} {are}: write each as an address and its prefix length (10.0.0.0/8, fd00::/8) or an address \
             alone",
            wrong.join(", ")
        ))
    }
}

impl std::fmt::Display for TrustedProxies {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let listed: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        formatter.write_str(&listed.join(","))
    }
}

/// The address a request comes from, worked out once where the request arrives (the
/// connection's peer, or the hop trusted proxies vouch for) and left on the request
/// for whatever counts or records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientIp(pub IpAddr);

#[cfg(test)]
mod tests {
    use super::*;

    fn trusted(list: &str) -> TrustedProxies {
        list.parse().expect("networks")
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    /// The client of a request from `peer` with these `X-Forwarded-For` lines.
    fn client(proxies: &TrustedProxies, peer: &str, lines: &[&str]) -> IpAddr {
        let mut headers = HeaderMap::new();
        for line in lines {
            headers.append(X_FORWARDED_FOR, line.parse().expect("a header value"));
        }
        proxies.client_address(ip(peer), &headers)
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let proxies = trusted("10.0.0.0/8");
        assert_eq!(client(&proxies, "203.0.113.9", &["198.51.100.1"]), ip("203.0.113.9"));
        // Without trusted proxies the header is never read.
        assert_eq!(
            client(&TrustedProxies::default(), "10.1.1.1", &["198.51.100.1"]),
            ip("10.1.1.1")
        );
    }

    #[test]
    fn behind_trusted_proxies_the_rightmost_untrusted_hop_is_the_client() {
        let proxies = trusted("10.0.0.0/8, 192.168.1.5");
        // The ingress (10.1.1.1) appended the client it saw.
        assert_eq!(client(&proxies, "10.1.1.1", &["198.51.100.7"]), ip("198.51.100.7"));
        // A client spoofing hops on the left: the ingress appended its real address.
        assert_eq!(
            client(&proxies, "10.1.1.1", &["1.2.3.4, 10.9.9.9, 198.51.100.7"]),
            ip("198.51.100.7")
        );
        // Two trusted proxies in a row, one named by address alone, and the header
        // split over lines.
        assert_eq!(
            client(
                &proxies,
                "10.1.1.1",
                &["6.6.6.6, 198.51.100.7", "192.168.1.5, 10.2.2.2"]
            ),
            ip("198.51.100.7")
        );
        // No header: the proxy itself.
        assert_eq!(client(&proxies, "10.1.1.1", &[]), ip("10.1.1.1"));
        // Every hop trusted: the leftmost, a call from inside.
        assert_eq!(client(&proxies, "10.1.1.1", &["10.3.3.3, 10.2.2.2"]), ip("10.3.3.3"));
    }

    #[test]
    fn a_hop_that_is_no_address_stops_at_the_last_trusted_one() {
        let proxies = trusted("10.0.0.0/8");
        for (lines, expected) in [
            (&["1.2.3.4, unknown"][..], "10.1.1.1"),
            (&["1.2.3.4, 10.2.2.2, unknown, 10.3.3.3"][..], "10.3.3.3"),
            (&["1.2.3.4, , 10.3.3.3"][..], "10.3.3.3"),
            (&["1.2.3.4", ""][..], "10.1.1.1"),
            (&["1.2.3.4, 198.51.100.7/24"][..], "10.1.1.1"),
            (&["1.2.3.4, 198.51.100.7:99999"][..], "10.1.1.1"),
        ] {
            assert_eq!(client(&proxies, "10.1.1.1", lines), ip(expected), "{lines:?}");
        }
        // A value that is not text at all.
        let mut headers = HeaderMap::new();
        headers.append(
            X_FORWARDED_FOR,
            http::HeaderValue::from_bytes(b"1.2.3.4, \xff").expect("bytes"),
        );
        assert_eq!(proxies.client_address(ip("10.1.1.1"), &headers), ip("10.1.1.1"));
    }

    #[test]
    fn ports_brackets_and_ipv6_are_read() {
        let proxies = trusted("10.0.0.0/8, fd00::/8");
        assert_eq!(client(&proxies, "10.1.1.1", &["198.51.100.7:4711"]), ip("198.51.100.7"));
        assert_eq!(client(&proxies, "fd00::1", &["[2001:db8::7]:4711"]), ip("2001:db8::7"));
        assert_eq!(client(&proxies, "fd00::1", &["[2001:db8::7]"]), ip("2001:db8::7"));
        assert_eq!(
            client(&proxies, "fd00::1", &["2001:db8::bad, 2001:db8::7, fd12::3"]),
            ip("2001:db8::7")
        );
        // A dual-stack listener sees an IPv4 proxy as ::ffff:10.1.1.1: still trusted,
        // and an IPv4-mapped hop is the IPv4 client.
        assert_eq!(
            client(&proxies, "::ffff:10.1.1.1", &["::ffff:198.51.100.7"]),
            ip("198.51.100.7")
        );
        assert_eq!(client(&proxies, "::ffff:203.0.113.9", &["1.2.3.4"]), ip("203.0.113.9"));
    }

    #[test]
    fn the_list_is_parsed_once_and_every_wrong_entry_named() {
        assert_eq!(trusted("").to_string(), "");
        assert!(trusted(" , ").is_empty());
        assert_eq!(
            trusted("10.1.2.3/8, 2001:db8::/32, 192.0.2.7").to_string(),
            "10.0.0.0/8,2001:db8::/32,192.0.2.7/32"
        );
        let refused = "10.0.0.0/33, 10.0.0.0/8, proxy.internal, fd00::/129"
            .parse::<TrustedProxies>()
            .expect_err("refused");
        assert!(
            refused.starts_with(r#""10.0.0.0/33", "proxy.internal", "fd00::/129" are not networks"#),
            "{refused}"
        );
        let refused = "10.0.0.0/8/8".parse::<TrustedProxies>().expect_err("refused");
        assert!(refused.starts_with(r#""10.0.0.0/8/8" is not a network"#), "{refused}");
    }
}
