//! Push delivery, the parts every role shares: the limits of a push target, the addresses a
//! handler may never live on (checked by the control plane at registration and by the data plane at
//! connect time), the signing-secret format, and the delivery record the data plane logs and the
//! control plane shows.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const MESSAGES_PER_RUN_MIN: u32 = 1;
pub const MESSAGES_PER_RUN_MAX: u32 = 100;
pub const MESSAGES_PER_RUN_DEFAULT: u32 = 10;
pub const WAIT_MAX_SECS: u32 = 60;
pub const WAIT_DEFAULT_SECS: u32 = 5;
/// The wait for a handler's answer: the queue's visibility timeout clamped to 30 s … 15 min.
pub const TIMEOUT_MIN_SECS: u32 = 30;
pub const TIMEOUT_MAX_SECS: u32 = 900;
pub const CONCURRENCY_MIN: u32 = 1;
pub const CONCURRENCY_MAX: u32 = 100;
pub const CONCURRENCY_DEFAULT: u32 = 10;
/// A numeric `Retry-After` is honoured up to this many seconds (12 h, the longest nack delay).
pub const RETRY_AFTER_MAX_SECS: u64 = 12 * 3600;
/// After a rotation the replaced secret keeps signing this long.
pub const SECRET_OVERLAP_MS: u64 = 24 * 3600 * 1000;
/// How many delivery outcomes a queue keeps.
pub const LOG_LEN: usize = 20;
/// How much of a handler's answer a dead letter keeps as its reason.
pub const REASON_BODY_BYTES: usize = 1024;
pub const SECRET_PREFIX: &str = "whsec_";

/// Why `ip` may not be a handler's address, or `None` when it may.
pub fn forbidden_address(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_unspecified() || a == 0 {
        Some("an unspecified (0.0.0.0/8) address")
    } else if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private-network address")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a carrier-grade NAT (100.64.0.0/10) address")
    } else if ip.is_broadcast() {
        Some("the broadcast address")
    } else if ip.is_multicast() || a >= 240 {
        Some("a multicast or reserved address")
    } else {
        None
    }
}

/// IPv6 addresses that carry an IPv4 address are judged by the IPv4 address they carry (a
/// connection to one may reach it: through the kernel's IPv4-compatible handling, a 6to4 or NAT64
/// gateway, a Teredo relay), then the IPv6 ranges of their own.
fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4).map(|_| "an IPv4-mapped IPv6 address of a forbidden IPv4 address");
    }
    let seg = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if ip.is_unspecified() {
        Some("the unspecified IPv6 address")
    } else if ip.is_loopback() {
        Some("the IPv6 loopback address")
    } else if seg[..6] == [0, 0, 0, 0, 0, 0] || seg[..6] == [0, 0, 0, 0, 0xffff, 0] {
        // IPv4-compatible (`::a.b.c.d`, deprecated but still routed by some stacks) and
        // IPv4-translated (`::ffff:0:a.b.c.d`): the IPv4 address is the low 32 bits.
        forbidden_v4(embedded(seg[6], seg[7])).map(|_| "an IPv4-compatible IPv6 address of a forbidden IPv4 address")
    } else if seg[0] == 0x2002 {
        // 6to4: the IPv4 address follows the 2002::/16 prefix.
        forbidden_v4(embedded(seg[1], seg[2])).map(|_| "a 6to4 address of a forbidden IPv4 address")
    } else if seg[..2] == [0x2001, 0] {
        // Teredo: the server's IPv4 address in bits 32-63, the client's (inverted) in the last 32.
        let server = embedded(seg[2], seg[3]);
        let client = embedded(!seg[6], !seg[7]);
        forbidden_v4(server).or(forbidden_v4(client)).map(|_| "a Teredo address of a forbidden IPv4 address")
    } else if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // NAT64: the IPv4 address is in the low 32 bits.
        forbidden_v4(embedded(seg[6], seg[7])).map(|_| "a NAT64 address of a forbidden IPv4 address")
    } else if seg[..3] == [0x64, 0xff9b, 1] {
        // Local-use NAT64 (64:ff9b:1::/48): a network's own translator, to its own IPv4 space.
        Some("a local-use NAT64 address")
    } else if seg[0] & 0xfe00 == 0xfc00 {
        Some("an IPv6 unique local address")
    } else if seg[0] & 0xffc0 == 0xfe80 {
        Some("an IPv6 link-local address")
    } else if seg[0] & 0xffc0 == 0xfec0 {
        Some("an IPv6 site-local address")
    } else if ip.is_multicast() {
        Some("an IPv6 multicast address")
    } else {
        None
    }
}

/// A fresh signing secret: `whsec_` and 32 random bytes in base64 (the Standard Webhooks form).
pub fn generate_secret() -> String {
    format!("{SECRET_PREFIX}{}", STANDARD.encode(rand::random::<[u8; 32]>()))
}

/// The HMAC key of a `whsec_…` secret: the base64-decoded part after the prefix.
pub fn signing_key(secret: &str) -> Option<Vec<u8>> {
    STANDARD.decode(secret.strip_prefix(SECRET_PREFIX)?).ok()
}

/// What became of one push request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryOutcome {
    /// 2xx: the message (or the whole batch) was acknowledged.
    Acked,
    /// Returned to the queue for another attempt.
    Retried,
    /// Dead-lettered: a non-retryable answer, or the last attempt failed.
    DeadLettered,
    /// Batch mode: 2xx, with some messages returned for another attempt.
    PartiallyRetried,
    /// The lease ran out before the answer came; another delivery may already be under way.
    LeaseLost,
}

/// One line of a queue's push log (`NS:{q:ID}:push:log`), version 1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryRecord {
    pub v: u8,
    /// When the request was sent (ms since the epoch).
    pub at_ms: u64,
    /// The message id, or in batch mode the batch id (`webhook-id`).
    pub message_id: String,
    /// How many messages the request carried (1 in message mode).
    pub messages: u32,
    /// The handler's status, or `None` when there was no answer (timeout, connection refused).
    pub status: Option<u16>,
    pub latency_ms: u64,
    pub outcome: DeliveryOutcome,
    /// For humans: why (the error, or the start of the handler's answer).
    pub detail: String,
    /// The handler URL the request went to, so failures of an old URL are told from the new one's
    /// ("" in lines written before it was recorded).
    #[serde(default)]
    pub handler_url: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_addresses() {
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::127.0.0.1",
            "64:ff9b:1::a00:1",
            "::127.0.0.1",
            "::10.0.0.1",
            "::169.254.169.254",
            "::ffff:0:127.0.0.1",
            "2002:7f00:1::1",
            "2002:a00:1::",
            "2002:a9fe:a9fe::1",
            // Teredo, client 127.0.0.1 (inverted: 80ff:fffe), public server.
            "2001:0:808:808:0:0:80ff:fffe",
            // Teredo, server 10.0.0.1.
            "2001:0:a00:1::f7f7:f7f7",
            "fec0::1",
        ] {
            assert!(forbidden_address(bad.parse().unwrap()).is_some(), "{bad}");
        }
        for good in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "100.128.0.1",
            "::8.8.8.8",
            "2002:808:808::1",
            "64:ff9b::8.8.8.8",
            // Teredo, server 8.8.8.8, client 8.8.4.4 (inverted: f7f7:fbfb).
            "2001:0:808:808::f7f7:fbfb",
        ] {
            assert_eq!(forbidden_address(good.parse().unwrap()), None, "{good}");
        }
    }

    #[test]
    fn secrets_decode_to_their_key() {
        let secret = generate_secret();
        assert!(secret.starts_with("whsec_"));
        assert_eq!(signing_key(&secret).unwrap().len(), 32);
        assert_eq!(signing_key("nope"), None);
    }
}
