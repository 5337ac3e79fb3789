//! When each token was last used: written to Redis (`tokens_used`, read by the control plane when
//! it lists tokens) at most once a minute per token by each process, off the request path. The
//! rate limits themselves are kept in Redis for the whole deployment (`engine/src/rate.rs`).
//!
//! Only valid tokens are stamped (a bad one is a 401 before). The map holds at most [`CAPACITY`]
//! tokens: when full, the stamps older than a minute go (they are due again anyway), and if it is
//! still full every stamp goes (each token then writes once more, a minute early at most).

use std::collections::HashMap;
use std::sync::Mutex;
use uuid::Uuid;

/// How often a token's last use is written to Redis.
const RECORD_EVERY_MS: u64 = 60_000;
/// The most tokens stamped.
pub const CAPACITY: usize = 100_000;

pub struct LastUse {
    /// token id → when its use was last written (ms).
    written: Mutex<HashMap<Uuid, u64>>,
    capacity: usize,
}

impl Default for LastUse {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

impl LastUse {
    fn with_capacity(capacity: usize) -> Self {
        Self { written: Mutex::new(HashMap::new()), capacity }
    }

    /// How many tokens are stamped.
    pub fn len(&self) -> usize {
        self.written.lock().expect("last-use lock").len()
    }

    /// Whether `token`'s use at `now_ms` is due to be written; if so, it counts as written.
    pub fn due(&self, token: Uuid, now_ms: u64) -> bool {
        let mut written = self.written.lock().expect("last-use lock");
        if let Some(at) = written.get_mut(&token) {
            if now_ms.saturating_sub(*at) < RECORD_EVERY_MS {
                return false;
            }
            *at = now_ms;
            return true;
        }
        if written.len() >= self.capacity {
            written.retain(|_, at| now_ms.saturating_sub(*at) < RECORD_EVERY_MS);
            if written.len() >= self.capacity {
                written.clear();
            }
            let keep = 2 * written.len().max(64);
            written.shrink_to(keep);
        }
        written.insert(token, now_ms);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_use_is_written_once_a_minute() {
        let last_use = LastUse::default();
        let token = Uuid::new_v4();
        assert!(last_use.due(token, 1_000_000));
        assert!(!last_use.due(token, 1_030_000));
        assert!(last_use.due(token, 1_060_000));
        assert!(last_use.due(Uuid::new_v4(), 1_060_000), "tokens are stamped apart");
    }

    #[test]
    fn the_stamps_stay_within_their_bound() {
        let last_use = LastUse::with_capacity(100);
        let old = Uuid::new_v4();
        last_use.due(old, 1);
        for i in 0..1_000 {
            last_use.due(Uuid::new_v4(), 1 + i);
            assert!(last_use.len() <= 100);
        }
        assert!(last_use.due(old, 1_001), "a stamp dropped to make room is due again");
        let stale = LastUse::with_capacity(10);
        for _ in 0..10 {
            stale.due(Uuid::new_v4(), 1);
        }
        stale.due(Uuid::new_v4(), 1 + RECORD_EVERY_MS);
        assert_eq!(stale.len(), 1, "stamps older than a minute go first");
    }
}
