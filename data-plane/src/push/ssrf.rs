//! The connect-time half of the SSRF guard (the control plane checks at registration). Handlers may
//! not live on private, loopback, link-local… addresses (`aqs_core::push::forbidden_address`).
//! Checking the name once at registration is not enough: DNS can answer differently later (DNS
//! rebinding), so every connection (`connect`) resolves the name again through [`resolve`], which
//! drops every forbidden address and refuses a name that has no other; an IP literal goes through
//! [`guard`] alone. Redirects are never followed (see `deliver`), so a handler cannot bounce a
//! request elsewhere either.
//!
//! `AQS_PUSH_ALLOW_PRIVATE_NETWORKS=true` turns the guard off, for local development and tests.

use aqs_core::push::forbidden_address;
use std::error::Error as StdError;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use url::{Host, Url};

/// A connection the guard refused: the host, the address and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    pub host: String,
    pub ip: IpAddr,
    pub reason: &'static str,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "refused to connect: {} is {} ({}); handlers must be on public addresses",
            self.host, self.reason, self.ip
        )
    }
}

impl StdError for Refused {}

/// Why a handler's host gave no address to connect to.
#[derive(Debug)]
pub enum Unresolved {
    Refused(Refused),
    Failed(std::io::Error),
}

/// Resolves `host` with the system resolver and keeps only the addresses a handler may use.
pub async fn resolve(host: &str, port: u16, allow_private: bool) -> Result<Vec<SocketAddr>, Unresolved> {
    let found: Vec<SocketAddr> = tokio::net::lookup_host((host, port)).await.map_err(Unresolved::Failed)?.collect();
    guard(host, found, allow_private)
}

/// Keeps the addresses of `host` a handler may use; refuses a host that has no other.
pub fn guard(host: &str, found: Vec<SocketAddr>, allow_private: bool) -> Result<Vec<SocketAddr>, Unresolved> {
    let (allowed, refused) = partition(found, allow_private);
    match refused {
        Some((ip, reason)) if allowed.is_empty() => {
            Err(Unresolved::Refused(Refused { host: host.to_owned(), ip, reason }))
        }
        _ => Ok(allowed),
    }
}

/// The address `url`'s host names when it is an IP literal, which no resolver sees.
pub fn literal_ip(url: &Url) -> Option<IpAddr> {
    match url.host()? {
        Host::Ipv4(v4) => Some(v4.into()),
        Host::Ipv6(v6) => Some(v6.into()),
        Host::Domain(_) => None,
    }
}

/// The addresses that may be used, and the first refused one with its reason.
fn partition(found: Vec<SocketAddr>, allow_private: bool) -> (Vec<SocketAddr>, Option<(IpAddr, &'static str)>) {
    if allow_private {
        return (found, None);
    }
    let mut refused = None;
    let allowed = found
        .into_iter()
        .filter(|addr| match forbidden_address(addr.ip()) {
            None => true,
            Some(reason) => {
                refused.get_or_insert((addr.ip(), reason));
                false
            }
        })
        .collect();
    (allowed, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host and address an IP-literal URL names.
    fn literal(url: &str) -> (String, SocketAddr) {
        let url = Url::parse(url).unwrap();
        let ip = literal_ip(&url).unwrap_or_else(|| panic!("{url} is not an IP literal"));
        (url.host_str().unwrap().to_owned(), SocketAddr::new(ip, 80))
    }

    #[test]
    fn literals_are_checked() {
        for bad in [
            "http://127.0.0.1/",
            "http://10.0.0.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://169.254.169.254/",
            // IPv6 forms that embed a forbidden IPv4 address: judged by the address they embed.
            "http://[::127.0.0.1]/",
            "http://[2002:7f00:1::1]/",
            "http://[64:ff9b::7f00:1]/",
            "http://[2001:0:808:808::80ff:fffe]/",
        ] {
            let (host, address) = literal(bad);
            assert!(matches!(guard(&host, vec![address], false), Err(Unresolved::Refused(_))), "{bad}");
            assert!(guard(&host, vec![address], true).is_ok(), "{bad}");
        }
        let (host, address) = literal("http://93.184.216.34/");
        assert_eq!(guard(&host, vec![address], false).unwrap(), vec![address]);
        assert_eq!(literal_ip(&Url::parse("http://example.com/").unwrap()), None);
    }

    #[tokio::test]
    async fn localhost_is_refused_at_resolution() {
        match resolve("localhost", 80, false).await {
            Err(Unresolved::Refused(refused)) => assert_eq!(refused.host, "localhost"),
            other => panic!("localhost: {other:?}"),
        }
        assert!(!resolve("localhost", 80, true).await.unwrap().is_empty());
    }
}
