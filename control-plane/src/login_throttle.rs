//! Log-in throttling: failed log-ins are counted per account and per client address, the API's
//! and the console's alike, and past a bound the next attempts answer `429 rate_limited` with
//! `Retry-After` before any password is checked (so the right password too, until the window
//! passes, and a throttled attempt costs no hashing).
//!
//! Three counts, each "failures in the last 15 minutes":
//! - per (account, address): 5. The brute-force bound: one address guessing one account.
//! - per address, whatever the account: 50. One address trying many accounts (credential
//!   stuffing) without tripping any one account's count.
//! - per account, whatever the address: 50, but enforced only against addresses that themselves
//!   failed on this account in the window. Many addresses guessing one account are held to it,
//!   while the owner, logging in from an address that has not failed, is never locked out by
//!   someone else's failures: throttling never becomes a way to deny an account to its owner.
//!
//! The counts live in Redis, not PostgreSQL: every replica sees the same counts, each is a sorted
//! set of failure times that expires on its own 15 minutes after its last failure (no table to
//! sweep), is capped at the bound (an attack cannot grow it), and is disposable: a Redis that
//! loses them forgets at most 15 minutes of failures. Accounts are keyed by a hash of the
//! normalised email, so unknown emails are throttled exactly as members are (the answers do not
//! tell them apart) and no email is written to Redis.
//!
//! A check and the failure it may record are two steps, so attempts racing one another can pass a
//! bound by the few that were checking at once; the hashing bound (`hash_pool`) caps how many.

use crate::client_addr::ClientAddr;
use aqs_core::keys::Keys;
use aqs_core::redis_conn::RedisConn;
use aqs_core::{ApiError, ApiResult};
use redis::Script;
use sha2::{Digest, Sha256};
use std::sync::LazyLock;
use std::time::Duration;

/// The window failures are counted over.
pub const WINDOW: Duration = Duration::from_secs(15 * 60);
/// Failures one address may make on one account in [`WINDOW`].
pub const PER_ACCOUNT_AND_ADDRESS: u64 = 5;
/// Failures one address may make over all accounts in [`WINDOW`].
pub const PER_ADDRESS: u64 = 50;
/// Failures one account may take from all addresses in [`WINDOW`] (enforced on addresses that
/// failed on it).
pub const PER_ACCOUNT: u64 = 50;

static CHECK: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/login_failures_check.lua")));
static RECORD: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/login_failures_record.lua")));

/// One log-in attempt's three counts.
pub struct LoginAttempt {
    pair: String,
    address: String,
    account: String,
}

impl LoginAttempt {
    /// `email` as typed: it is normalised (trimmed, lowercased) as log-in does.
    pub fn new(keys: &Keys, email: &str, client: ClientAddr) -> Self {
        let digest = Sha256::digest(email.trim().to_lowercase().as_bytes());
        let account = hex::encode(&digest[..16]);
        let address = client.key();
        let ns = keys.namespace();
        Self {
            pair: format!("{ns}:login:fail:pair:{account}:{address}"),
            address: format!("{ns}:login:fail:addr:{address}"),
            account: format!("{ns}:login:fail:acct:{account}"),
        }
    }

    /// `429 rate_limited` with `Retry-After` when this attempt is over a bound; the longest wait
    /// when it is over several.
    pub async fn check(&self, mut conn: RedisConn) -> ApiResult<()> {
        let (pair_failures, pair_wait) = count(&mut conn, &self.pair, PER_ACCOUNT_AND_ADDRESS).await?;
        let mut worst = (pair_wait, PER_ACCOUNT_AND_ADDRESS);
        let (_, address_wait) = count(&mut conn, &self.address, PER_ADDRESS).await?;
        if address_wait > worst.0 {
            worst = (address_wait, PER_ADDRESS);
        }
        if pair_failures > 0 {
            let (_, account_wait) = count(&mut conn, &self.account, PER_ACCOUNT).await?;
            if account_wait > worst.0 {
                worst = (account_wait, PER_ACCOUNT);
            }
        }
        match worst {
            (0, _) => Ok(()),
            (wait_ms, limit) => Err(throttled(wait_ms, limit)),
        }
    }

    /// Counts a failed attempt in all three.
    pub async fn failed(&self, mut conn: RedisConn) -> ApiResult<()> {
        record(&mut conn, &self.pair, PER_ACCOUNT_AND_ADDRESS).await?;
        record(&mut conn, &self.address, PER_ADDRESS).await?;
        record(&mut conn, &self.account, PER_ACCOUNT).await?;
        Ok(())
    }

    /// A successful log-in clears this address's failures on this account (a mistyped password
    /// earlier is forgotten); the address's and the account's counts stay.
    pub async fn succeeded(&self, mut conn: RedisConn) -> ApiResult<()> {
        redis::cmd("DEL").arg(&self.pair).query_async::<i64>(&mut conn).await?;
        Ok(())
    }
}

fn window_ms() -> u64 {
    WINDOW.as_millis() as u64
}

/// Failures in the window, and the ms until under `limit` (0 when under it already).
async fn count(conn: &mut RedisConn, key: &str, limit: u64) -> ApiResult<(u64, u64)> {
    let (failures, wait_ms): (u64, u64) = CHECK.key(key).arg(window_ms()).arg(limit).invoke_async(conn).await?;
    Ok((failures, wait_ms))
}

async fn record(conn: &mut RedisConn, key: &str, cap: u64) -> ApiResult<()> {
    RECORD.key(key).arg(window_ms()).arg(cap).invoke_async::<u64>(conn).await?;
    Ok(())
}

/// A wait as a person reads it: "40 seconds", "15 minutes" (rounded up).
pub fn wait_in_words(secs: u64) -> String {
    let plural = |n: u64, unit: &str| format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
    if secs < 60 { plural(secs, "second") } else { plural(secs.div_ceil(60), "minute") }
}

/// The 429 a person can act on: when to try again, in words as well as in `Retry-After`.
fn throttled(wait_ms: u64, limit: u64) -> ApiError {
    let secs = wait_ms.div_ceil(1000).max(1);
    ApiError::RateLimited {
        message: format!("too many failed log-ins; try again in {}", wait_in_words(secs)),
        retry_after_secs: secs,
        limit,
        window_secs: WINDOW.as_secs(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_says_when_to_try_again() {
        assert_eq!(throttled(899_001, 5).to_string(), "too many failed log-ins; try again in 15 minutes");
        assert_eq!(throttled(61_000, 5).to_string(), "too many failed log-ins; try again in 2 minutes");
        assert_eq!(throttled(1, 5).to_string(), "too many failed log-ins; try again in 1 second");
    }

    #[test]
    fn accounts_are_keyed_by_the_normalised_email_never_the_email() {
        let keys = Keys::new("ns");
        let client = ClientAddr(Some("203.0.113.9".parse().unwrap()));
        let a = LoginAttempt::new(&keys, " Ada@Example.com", client);
        let b = LoginAttempt::new(&keys, "ada@example.com", client);
        assert_eq!((a.pair.as_str(), a.account.as_str()), (b.pair.as_str(), b.account.as_str()));
        assert!(!a.pair.contains("ada") && a.address == "ns:login:fail:addr:203.0.113.9");
    }
}
