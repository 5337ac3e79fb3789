//! Slices of a token's message budget that this replica holds, so that a busy token's requests
//! do not each pay for the budget in Redis.
//!
//! The budget itself lives in Redis (`rate.rs`, `scripts/rate.lua`) and every admitted request is
//! taken from it. A charged script may claim several requests at once; the replica keeps the ones
//! it did not use yet as a slice and admits the token's next requests from it with no charge in
//! Redis at all. A slice is spent within [`LIFETIME_MS`] or its rest is dropped (the budget was
//! already taken for it: a dropped rest makes the limit stricter, never looser). Over any window,
//! the deployment then admits at most what the budget allows over that window plus
//! [`LIFETIME_MS`] (requests claimed just before the window and spent in it): for 1,000 requests a
//! second, 20 more at most.
//!
//! A claim starts at one request, so a token that sends one request now and then is charged
//! exactly as without slices. It doubles, up to [`MAX_CLAIM`], each time a slice is used up before
//! it expires, and halves each time one expires first. Only the message class (1,000 a second)
//! has slices; the budgets counted per minute stay exact.

use super::rate::Class;
use aqs_core::ids::QueueId;
use std::collections::HashMap;
use std::sync::Mutex;
use uuid::Uuid;

/// How long a slice may be spent after it was claimed.
pub const LIFETIME_MS: u64 = 20;
/// The most requests one claim asks for.
pub const MAX_CLAIM: u32 = 32;
/// The most tokens with a slice; past it, the expired entries go (their claim sizes with them).
const CAPACITY: usize = 100_000;

/// What this replica holds of one token's budget.
#[derive(Clone, Copy, Debug)]
struct Slice {
    /// Requests claimed and not yet admitted.
    left: u32,
    /// Until when (ms) they may be admitted.
    until_ms: u64,
    /// The next claim's size.
    claim: u32,
}

/// How a request is to be admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// From a slice this replica holds: run the request's scripts uncharged.
    Held,
    /// Charge the budget in Redis, claiming this many requests (the request itself and the rest
    /// for the slice).
    Claim(u32),
}

type Owner = (QueueId, Uuid, Class);

#[derive(Default)]
pub struct Slices {
    held: Mutex<HashMap<Owner, Slice>>,
}

impl Slices {
    /// Admits a request of `token` at `now_ms` from its slice, or says how much to claim.
    pub fn admit(&self, queue: QueueId, token: Uuid, class: Class, now_ms: u64) -> Admission {
        if class != Class::Messages {
            return Admission::Claim(1);
        }
        let mut held = self.held.lock().expect("slices lock");
        let Some(slice) = held.get_mut(&(queue, token, class)) else {
            return Admission::Claim(1);
        };
        if slice.left > 0 && now_ms < slice.until_ms {
            slice.left -= 1;
            return Admission::Held;
        }
        // Here the slice is used up or expired: used up in time, the token is busy here.
        slice.claim = if now_ms < slice.until_ms { (slice.claim * 2).min(MAX_CLAIM) } else { (slice.claim / 2).max(1) };
        slice.left = 0;
        Admission::Claim(slice.claim)
    }

    /// Records that a claim made at `now_ms` was granted `granted` requests, one of which is the
    /// claiming request's own.
    pub fn granted(&self, queue: QueueId, token: Uuid, class: Class, now_ms: u64, granted: u32) {
        if class != Class::Messages {
            return;
        }
        let mut held = self.held.lock().expect("slices lock");
        if held.len() >= CAPACITY {
            held.retain(|_, slice| slice.until_ms > now_ms);
        }
        let slice = held.entry((queue, token, class)).or_insert(Slice { left: 0, until_ms: 0, claim: 1 });
        slice.left = granted.saturating_sub(1);
        slice.until_ms = now_ms + LIFETIME_MS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q: QueueId = QueueId(Uuid::nil());

    fn token() -> Uuid {
        Uuid::new_v4()
    }

    /// Admits requests of `t` at `now_ms` until one must be charged, granting each claim in full.
    /// Answers the claim size and how many were admitted from the slice before it.
    fn run_until_claim(slices: &Slices, t: Uuid, now_ms: u64) -> (u32, u32) {
        let mut held = 0;
        loop {
            match slices.admit(Q, t, Class::Messages, now_ms) {
                Admission::Held => held += 1,
                Admission::Claim(n) => return (n, held),
            }
        }
    }

    #[test]
    fn a_quiet_token_claims_one_request_at_a_time() {
        let (slices, t) = (Slices::default(), token());
        for i in 0..5 {
            let now = i * 1_000;
            assert_eq!(slices.admit(Q, t, Class::Messages, now), Admission::Claim(1));
            slices.granted(Q, t, Class::Messages, now, 1);
        }
    }

    #[test]
    fn a_busy_token_claims_more_each_time_its_slice_is_used_up_up_to_the_cap() {
        let (slices, t) = (Slices::default(), token());
        let mut claims = Vec::new();
        let (mut claim, _) = run_until_claim(&slices, t, 0);
        for _ in 0..8 {
            claims.push(claim);
            slices.granted(Q, t, Class::Messages, 0, claim);
            let (next, held) = run_until_claim(&slices, t, 1);
            assert_eq!(held, claim - 1, "every request claimed is admitted once");
            claim = next;
        }
        assert_eq!(claims, [1, 2, 4, 8, 16, 32, 32, 32]);
    }

    #[test]
    fn a_slice_expires_and_the_next_claim_halves() {
        let (slices, t) = (Slices::default(), token());
        slices.granted(Q, t, Class::Messages, 0, 1);
        assert_eq!(slices.admit(Q, t, Class::Messages, 1), Admission::Claim(2));
        slices.granted(Q, t, Class::Messages, 1, 2);
        assert_eq!(slices.admit(Q, t, Class::Messages, 1 + LIFETIME_MS), Admission::Claim(1), "expired unused");
    }

    #[test]
    fn a_partial_grant_holds_only_what_was_granted() {
        let (slices, t) = (Slices::default(), token());
        slices.granted(Q, t, Class::Messages, 0, 1);
        assert_eq!(slices.admit(Q, t, Class::Messages, 0), Admission::Claim(2));
        slices.granted(Q, t, Class::Messages, 0, 1);
        assert!(matches!(slices.admit(Q, t, Class::Messages, 0), Admission::Claim(_)));
    }

    #[test]
    fn per_minute_budgets_and_other_tokens_and_queues_have_no_slice() {
        let (slices, t) = (Slices::default(), token());
        slices.granted(Q, t, Class::Messages, 0, 1);
        let _ = slices.admit(Q, t, Class::Messages, 0);
        slices.granted(Q, t, Class::Messages, 0, 2);
        for class in [Class::Reads, Class::Actions] {
            slices.granted(Q, t, class, 0, 5);
            assert_eq!(slices.admit(Q, t, class, 0), Admission::Claim(1));
        }
        assert_eq!(slices.admit(Q, token(), Class::Messages, 0), Admission::Claim(1));
        assert_eq!(slices.admit(QueueId::new(), t, Class::Messages, 0), Admission::Claim(1));
        assert_eq!(slices.admit(Q, t, Class::Messages, 0), Admission::Held);
    }
}
