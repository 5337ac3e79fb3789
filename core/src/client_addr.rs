//! `ClientAddr`: the address a request came from, as far as we can know it: what log-in throttling
//! counts, what a session and a consumer are shown with. Shared by the control plane and the data
//! plane.
//!
//! The HTTP servers put the TCP peer in the request (`ConnectInfo<SocketAddr>`). A peer on a
//! loopback or private address is taken to be a proxy or load balancer in front of us: its
//! `X-Forwarded-For` is believed, and the last address in it (the one that proxy itself appended,
//! which the client cannot choose) is the client. A peer on a public address is the client,
//! whatever it sends. IPv6 clients are counted by their /64: one host usually holds a whole /64,
//! so counting single addresses would let it rotate through them.

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};

/// A client address (IPv6 cut to its /64), or `None` when the request did not come over a socket
/// this process accepted (a router called in-process).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub Option<IpAddr>);

impl ClientAddr {
    /// The key this address is counted under.
    pub fn key(&self) -> String {
        match self.0 {
            None => "unknown".into(),
            Some(IpAddr::V4(v4)) => v4.to_string(),
            Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
                Some(v4) => v4.to_string(),
                None => {
                    let s = v6.segments();
                    format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
                }
            },
        }
    }

    /// The address for people to read (the whole IPv6 address, an IPv4-mapped one as IPv4), or
    /// `None` when unknown.
    pub fn shown(&self) -> Option<String> {
        self.0.map(|ip| ip.to_canonical().to_string())
    }

    fn of(peer: Option<SocketAddr>, forwarded_for: Option<&str>) -> Self {
        let Some(peer) = peer else { return Self(None) };
        let peer = peer.ip().to_canonical();
        if !is_proxy(peer) {
            return Self(Some(peer));
        }
        let forwarded = forwarded_for
            .and_then(|list| list.rsplit(',').next())
            .and_then(|last| last.trim().parse::<IpAddr>().ok())
            .map(|ip| ip.to_canonical());
        Self(Some(forwarded.unwrap_or(peer)))
    }
}

/// A peer we take to be our own proxy: loopback, RFC 1918, or IPv6 unique-local.
fn is_proxy(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_private(),
        IpAddr::V6(v6) => v6.is_loopback() || (v6.segments()[0] & 0xfe00) == 0xfc00,
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|info| info.0);
        let forwarded = parts.headers.get_all("x-forwarded-for").iter().next_back().and_then(|v| v.to_str().ok());
        Ok(Self::of(peer, forwarded))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> Option<SocketAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn a_public_peer_is_the_client_whatever_it_forwards() {
        assert_eq!(ClientAddr::of(addr("203.0.113.9:5000"), Some("198.51.100.1")).key(), "203.0.113.9");
    }

    #[test]
    fn behind_our_proxy_the_last_forwarded_address_is_the_client() {
        let behind = ClientAddr::of(addr("10.0.0.2:5000"), Some("6.6.6.6, 198.51.100.7"));
        assert_eq!(behind.key(), "198.51.100.7");
        assert_eq!(ClientAddr::of(addr("127.0.0.1:1"), None).key(), "127.0.0.1");
        assert_eq!(ClientAddr::of(addr("127.0.0.1:1"), Some("garbage")).key(), "127.0.0.1");
        assert_eq!(ClientAddr::of(None, Some("198.51.100.7")).key(), "unknown");
    }

    #[test]
    fn ipv6_clients_count_by_their_64() {
        let a = ClientAddr::of(addr("[2001:db8:1:2:aaaa::1]:1"), None);
        let b = ClientAddr::of(addr("[2001:db8:1:2:bbbb::9]:1"), None);
        assert_eq!(a.key(), b.key());
        assert_eq!(a.key(), "2001:db8:1:2::/64");
        assert_eq!(ClientAddr::of(addr("[::ffff:203.0.113.9]:1"), None).key(), "203.0.113.9");
    }
}
