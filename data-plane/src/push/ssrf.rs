//! The connect-time half of the SSRF guard (the control plane checks at registration). Handlers may
//! not live on private, loopback, link-local… addresses (`aqs_core::push::forbidden_address`).
//! Checking the name once at registration is not enough: DNS can answer differently later (DNS
//! rebinding), so the HTTP client resolves through [`GuardedResolver`], which drops every forbidden
//! address and refuses a name that has no other. A URL whose host is an IP literal never reaches a
//! resolver, so [`check_literal`] covers it before each request. Redirects are never followed
//! (see `deliver`), so a handler cannot bounce a request elsewhere either.
//!
//! `AQS_PUSH_ALLOW_PRIVATE_NETWORKS=true` turns the guard off, for local development and tests.

use aqs_core::push::forbidden_address;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::error::Error as StdError;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use url::Host;

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

/// Resolves with the system resolver and keeps only the addresses a handler may use.
#[derive(Clone, Copy, Debug)]
pub struct GuardedResolver {
    pub allow_private: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let (allowed, refused) = partition(found, allow_private);
            if allowed.is_empty()
                && let Some((ip, reason)) = refused
            {
                return Err(Box::new(Refused { host, ip, reason }) as Box<dyn StdError + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
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

/// Refuses a URL whose host is a forbidden IP literal (no resolver sees those).
pub fn check_literal(url: &Url, allow_private: bool) -> Result<(), Refused> {
    if allow_private {
        return Ok(());
    }
    let ip = match url.host() {
        Some(Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(Host::Ipv6(v6)) => IpAddr::V6(v6),
        _ => return Ok(()),
    };
    match forbidden_address(ip) {
        Some(reason) => Err(Refused { host: url.host_str().unwrap_or_default().to_owned(), ip, reason }),
        None => Ok(()),
    }
}

/// The guard's refusal inside a client error, if that is what the error is.
pub fn refusal_in(err: &(dyn StdError + 'static)) -> Option<Refused> {
    let mut current = Some(err);
    while let Some(err) = current {
        if let Some(refused) = err.downcast_ref::<Refused>() {
            return Some(refused.clone());
        }
        current = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert!(check_literal(&Url::parse(bad).unwrap(), false).is_err(), "{bad}");
            assert!(check_literal(&Url::parse(bad).unwrap(), true).is_ok(), "{bad}");
        }
        assert!(check_literal(&Url::parse("http://93.184.216.34/").unwrap(), false).is_ok());
        assert!(check_literal(&Url::parse("http://example.com/").unwrap(), false).is_ok());
    }

    #[tokio::test]
    async fn localhost_is_refused_at_resolution() {
        let resolver = GuardedResolver { allow_private: false };
        let err = match resolver.resolve(Name::from_str("localhost").unwrap()).await {
            Ok(_) => panic!("localhost resolved"),
            Err(err) => err,
        };
        assert!(refusal_in(err.as_ref()).is_some(), "{err}");
        let open = GuardedResolver { allow_private: true };
        assert!(open.resolve(Name::from_str("localhost").unwrap()).await.is_ok());
    }

    use std::str::FromStr;
}
