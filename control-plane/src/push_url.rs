//! The rules a push handler URL must pass, each failure a 400 that names its rule:
//!
//! 1. `scheme`: http or https.
//! 2. `credentials`: no user name or password in the URL.
//! 3. `fragment`: no `#fragment`; and `domain name`: the host is a name, never an IP literal
//!    (`docs/push-delivery.md`: "a domain name"); a prefix on an IP address could authorise
//!    nothing, so it is refused too.
//! 4. `authorised`: under one of the callback URL prefixes an operator authorised for the member
//!    (same scheme, host and port; the path at or below the prefix's path, on a segment boundary).
//! 5. `address`: neither the literal host nor any address its name resolves to is private,
//!    loopback, link-local… (`aqs_core::push::forbidden_address`), unless
//!    `AQS_PUSH_ALLOW_PRIVATE_NETWORKS` is on. The data plane checks again at connect time.
//!
//! Prefixes themselves pass rules 1–3 (and have no query) and are stored normalised.

use crate::text::refuse_control;
use aqs_core::push::forbidden_address;
use aqs_core::{ApiError, ApiResult};
use std::net::IpAddr;
use std::time::Duration;
use url::{Host, Url};

pub const URL_MAX_CHARS: usize = 2048;
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Parses and checks rules 1–3; `field` names the request field in errors.
pub fn parse(field: &str, text: &str) -> ApiResult<Url> {
    // The URL parser would quietly drop a tab or newline; refuse them, as in every other field.
    refuse_control(field, text)?;
    let text = text.trim();
    if text.is_empty() || text.chars().count() > URL_MAX_CHARS {
        return Err(ApiError::field(field, format!("give an http or https URL of at most {URL_MAX_CHARS} characters")));
    }
    let url = Url::parse(text).map_err(|err| ApiError::field(field, format!("not a valid URL ({err})")))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(ApiError::field(field, format!("the scheme must be http or https, not {}", url.scheme())));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ApiError::field(field, "credentials (user:password@) are not allowed in the URL"));
    }
    if url.fragment().is_some() {
        return Err(ApiError::field(field, "a #fragment is not allowed in the URL"));
    }
    match url.host() {
        None => return Err(ApiError::field(field, "the URL needs a host")),
        Some(Host::Ipv4(_) | Host::Ipv6(_)) => {
            return Err(ApiError::field(
                field,
                format!("the host must be a domain name, not an IP address ({})", url.host_str().unwrap_or_default()),
            ));
        }
        Some(Host::Domain(_)) => {}
    }
    Ok(url)
}

/// A callback URL prefix as an operator gives it: rules 1–3 and no query; normalised.
pub fn parse_prefix(text: &str) -> ApiResult<String> {
    let url = parse("prefix", text)?;
    if url.query().is_some() {
        return Err(ApiError::field("prefix", "a ?query is not allowed in a callback URL prefix"));
    }
    Ok(url.to_string())
}

/// Rule 4: whether `url` lies under `prefix` (a normalised prefix).
pub fn is_under(url: &Url, prefix: &str) -> bool {
    let Ok(prefix) = Url::parse(prefix) else { return false };
    if url.scheme() != prefix.scheme()
        || url.host() != prefix.host()
        || url.port_or_known_default() != prefix.port_or_known_default()
    {
        return false;
    }
    let (path, base) = (url.path(), prefix.path());
    base.ends_with('/') && path.starts_with(base)
        || path == base
        || path.strip_prefix(base).is_some_and(|rest| rest.starts_with('/'))
}

pub fn check_authorised(url: &Url, prefixes: &[String]) -> ApiResult<()> {
    if prefixes.iter().any(|p| is_under(url, p)) {
        return Ok(());
    }
    let hint = if prefixes.is_empty() {
        "no callback URL is authorised for your account yet; ask an operator to authorise one".to_owned()
    } else {
        format!("authorised prefixes: {}", prefixes.join(", "))
    };
    Err(ApiError::field("handler_url", format!("not among the callback URLs authorised for your account ({hint})")))
}

/// Rule 5: the host, and every address its name resolves to, must be public.
pub async fn check_address(url: &Url, allow_private: bool) -> ApiResult<()> {
    if allow_private {
        return Ok(());
    }
    let refuse = |ip: IpAddr, reason: &str| {
        ApiError::field(
            "handler_url",
            format!(
                "{} is {reason} ({ip}); private, loopback and link-local addresses are not allowed",
                url.host_str().unwrap_or_default()
            ),
        )
    };
    let addresses: Vec<IpAddr> = match url.host() {
        Some(Host::Ipv4(v4)) => vec![IpAddr::V4(v4)],
        Some(Host::Ipv6(v6)) => vec![IpAddr::V6(v6)],
        Some(Host::Domain(name)) => {
            let port = url.port_or_known_default().unwrap_or(443);
            let lookup = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((name, port))).await;
            match lookup {
                Ok(Ok(found)) => found.map(|addr| addr.ip()).collect(),
                _ => {
                    return Err(ApiError::field("handler_url", format!("the host name {name} does not resolve")));
                }
            }
        }
        None => return Err(ApiError::field("handler_url", "the URL needs a host")),
    };
    for ip in addresses {
        if let Some(reason) = forbidden_address(ip) {
            return Err(refuse(ip, reason));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(field: &str, text: &str) -> String {
        parse(field, text).unwrap_err().to_string()
    }

    #[test]
    fn syntax_rules_name_themselves() {
        assert!(err("handler_url", "ftp://app.example.com/").contains("scheme"));
        assert!(err("handler_url", "https://u:p@app.example.com/").contains("credentials"));
        assert!(err("handler_url", "https://u@app.example.com/").contains("credentials"));
        assert!(err("handler_url", "https://app.example.com/#x").contains("fragment"));
        assert!(err("handler_url", "not a url").contains("not a valid URL"));
        for literal in ["http://93.184.216.34/hook", "https://[2606:2800:220:1::]/", "http://127.0.0.1:9/"] {
            assert!(err("handler_url", literal).contains("must be a domain name"), "{literal}");
            assert!(err("prefix", literal).starts_with("prefix: the host must be a domain name"), "{literal}");
        }
        assert!(parse("handler_url", "https://app.example.com/q?x=1").is_ok());
        assert!(parse_prefix("https://app.example.com/q?x=1").unwrap_err().to_string().contains("query"));
        assert_eq!(parse_prefix("HTTPS://App.Example.com").unwrap(), "https://app.example.com/");
    }

    #[test]
    fn prefixes_match_on_host_port_and_path_segments() {
        let url = |t: &str| Url::parse(t).unwrap();
        let root = "https://app.example.com/";
        assert!(is_under(&url("https://app.example.com/queue/emails"), root));
        assert!(is_under(&url("https://app.example.com:443/x"), root));
        assert!(!is_under(&url("https://app.example.com.evil.net/x"), root));
        assert!(!is_under(&url("http://app.example.com/x"), root));
        assert!(!is_under(&url("https://app.example.com:8443/x"), root));
        let api = "https://app.example.com/api";
        assert!(is_under(&url("https://app.example.com/api"), api));
        assert!(is_under(&url("https://app.example.com/api/q"), api));
        assert!(!is_under(&url("https://app.example.com/api-evil"), api));
        assert!(is_under(&url("https://app.example.com/api/q"), "https://app.example.com/api/"));
    }

    #[tokio::test]
    async fn private_addresses_are_refused_unless_allowed() {
        for bad in [
            "http://127.0.0.1/",
            "http://10.0.0.8/",
            "http://169.254.169.254/latest",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::127.0.0.1]/",
            "http://[2002:7f00:1::1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://localhost/",
        ] {
            // IP literals stop at `parse` (rule 3); the address rule still covers them.
            let url = Url::parse(bad).unwrap();
            let err = check_address(&url, false).await.unwrap_err().to_string();
            assert!(err.contains("not allowed"), "{bad}: {err}");
            assert!(check_address(&url, true).await.is_ok());
        }
        let public = Url::parse("http://93.184.216.34/").unwrap();
        assert!(check_address(&public, false).await.is_ok());
    }
}
