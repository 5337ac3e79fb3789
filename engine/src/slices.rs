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
//! it expires, and halves each time one expires first. While a grown claim is on its way, the
//! token's other requests on this replica claim one each, so a burst of concurrent requests does
//! not grow the claim once per request. Only the message class (1,000 a second)
//! has slices; the budgets counted per minute stay exact.

use super::rate::{Charge, Class};
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
#[derive(Clone, Copy, Debug, Default)]
struct Slice {
    /// Requests claimed and not yet admitted.
    left: u32,
    /// Until when (ms) they may be admitted.
    until_ms: u64,
    /// The next claim's size.
    claim: u32,
    /// While a claim of that size is on its way (ms): the token's other requests meanwhile claim
    /// one each, as without slices, rather than each growing the claim again.
    sizing_until_ms: u64,
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
        if now_ms < slice.sizing_until_ms {
            return Admission::Claim(1);
        }
        // The slice is used up or expired: used up in time, the token is busy here.
        if now_ms < slice.until_ms {
            slice.claim = (slice.claim * 2).min(MAX_CLAIM);
        } else {
            slice.claim = (slice.claim / 2).max(1);
            slice.left = 0;
        }
        slice.sizing_until_ms = now_ms + LIFETIME_MS;
        Admission::Claim(slice.claim)
    }

    /// Records that `charge`'s claim was granted `granted` requests, one of which is the charged
    /// request's own.
    pub fn granted(&self, charge: &Charge, granted: u32) {
        if charge.class != Class::Messages {
            return;
        }
        let now_ms = charge.now_ms;
        let mut held = self.held.lock().expect("slices lock");
        if held.len() >= CAPACITY {
            held.retain(|_, slice| slice.until_ms > now_ms);
        }
        let slice =
            held.entry((charge.queue, charge.token, charge.class)).or_insert(Slice { claim: 1, ..Slice::default() });
        if now_ms >= slice.until_ms {
            slice.left = 0;
        }
        // Grants of claims that were on their way together add up.
        slice.left += granted.saturating_sub(1);
        slice.until_ms = slice.until_ms.max(now_ms + LIFETIME_MS);
        if charge.claim == slice.claim {
            slice.sizing_until_ms = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q: QueueId = QueueId(Uuid::nil());

    fn token() -> Uuid {
        Uuid::new_v4()
    }

    /// Records a grant of `granted` to a claim of `claim` by `t` at `now_ms`.
    fn grant(slices: &Slices, t: Uuid, class: Class, now_ms: u64, claim: u32, granted: u32) {
        slices.granted(&Charge { claim, ..Charge::new(Q, t, class, now_ms) }, granted);
    }

    /// Admits requests of `t` at `now_ms` until one must be charged. Answers the claim size and
    /// how many were admitted from the slice before it.
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
            grant(&slices, t, Class::Messages, now, 1, 1);
        }
    }

    #[test]
    fn a_busy_token_claims_more_each_time_its_slice_is_used_up_up_to_the_cap() {
        let (slices, t) = (Slices::default(), token());
        let mut claims = Vec::new();
        let (mut claim, _) = run_until_claim(&slices, t, 0);
        for _ in 0..8 {
            claims.push(claim);
            grant(&slices, t, Class::Messages, 0, claim, claim);
            let (next, held) = run_until_claim(&slices, t, 1);
            assert_eq!(held, claim - 1, "every request claimed is admitted once");
            claim = next;
        }
        assert_eq!(claims, [1, 2, 4, 8, 16, 32, 32, 32]);
    }

    #[test]
    fn requests_meanwhile_claim_one_each_and_their_grants_add_up() {
        let (slices, t) = (Slices::default(), token());
        grant(&slices, t, Class::Messages, 0, 1, 1);
        let claims: Vec<_> = (0..4).map(|_| slices.admit(Q, t, Class::Messages, 1)).collect();
        assert_eq!(claims, [Admission::Claim(2), Admission::Claim(1), Admission::Claim(1), Admission::Claim(1)]);
        grant(&slices, t, Class::Messages, 1, 1, 1);
        grant(&slices, t, Class::Messages, 1, 2, 2);
        assert_eq!(run_until_claim(&slices, t, 2), (4, 1), "the sized claim's grant ended its sizing");
        grant(&slices, t, Class::Messages, 1, 1, 1);
        grant(&slices, t, Class::Messages, 1, 1, 1);
        grant(&slices, t, Class::Messages, 2, 4, 3);
        assert_eq!(run_until_claim(&slices, t, 3), (8, 2), "a partial grant holds only what was granted");
    }

    #[test]
    fn a_slice_expires_and_the_next_claim_halves() {
        let (slices, t) = (Slices::default(), token());
        grant(&slices, t, Class::Messages, 0, 1, 1);
        assert_eq!(slices.admit(Q, t, Class::Messages, 1), Admission::Claim(2));
        grant(&slices, t, Class::Messages, 1, 2, 2);
        assert_eq!(slices.admit(Q, t, Class::Messages, 1 + LIFETIME_MS), Admission::Claim(1), "expired unused");
        grant(&slices, t, Class::Messages, 1 + LIFETIME_MS, 1, 1);
        assert_eq!(slices.admit(Q, t, Class::Messages, 2 + LIFETIME_MS), Admission::Claim(2), "its rest is gone");
    }

    #[test]
    fn a_claim_that_never_came_back_stops_holding_the_size_after_its_lifetime() {
        let (slices, t) = (Slices::default(), token());
        grant(&slices, t, Class::Messages, 0, 1, 1);
        assert_eq!(slices.admit(Q, t, Class::Messages, 1), Admission::Claim(2));
        assert_eq!(slices.admit(Q, t, Class::Messages, 2), Admission::Claim(1));
        assert_eq!(slices.admit(Q, t, Class::Messages, 1 + LIFETIME_MS), Admission::Claim(1), "halved");
    }

    #[test]
    fn per_minute_budgets_and_other_tokens_and_queues_have_no_slice() {
        let (slices, t) = (Slices::default(), token());
        grant(&slices, t, Class::Messages, 0, 1, 1);
        let _ = slices.admit(Q, t, Class::Messages, 0);
        grant(&slices, t, Class::Messages, 0, 2, 2);
        for class in [Class::Reads, Class::Actions] {
            grant(&slices, t, class, 0, 5, 5);
            assert_eq!(slices.admit(Q, t, class, 0), Admission::Claim(1));
        }
        assert_eq!(slices.admit(Q, token(), Class::Messages, 0), Admission::Claim(1));
        assert_eq!(slices.admit(QueueId::new(), t, Class::Messages, 0), Admission::Claim(1));
        assert_eq!(slices.admit(Q, t, Class::Messages, 0), Admission::Held);
    }
}
