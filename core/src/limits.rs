//! The product's limits and defaults, as `docs/limits.md` states them. Every
//! check in every role reads them from here.

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * KIB;
pub const GIB: u64 = 1024 * MIB;

pub const QUEUES_PER_MEMBER: i64 = 10;

pub const VISIBILITY_DEFAULT_SECS: u32 = 30;
pub const VISIBILITY_MIN_SECS: u32 = 1;
pub const VISIBILITY_MAX_SECS: u32 = 12 * 3600;

pub const MAX_ATTEMPTS_DEFAULT: u32 = 5;
pub const MAX_ATTEMPTS_MIN: u32 = 1;
pub const MAX_ATTEMPTS_MAX: u32 = 100;

/// Message body sizes a queue can be set to: 1 MiB included, 10 and 50 MiB as paid add-ons.
pub const PAYLOAD_SIZES: [u64; 3] = [MIB, 10 * MIB, 50 * MIB];
pub const PAYLOAD_SIZE_DEFAULT: u64 = MIB;

pub const STORAGE_DEFAULT: u64 = GIB;
/// The smallest storage limit a member may set: one full-size 1 MiB message must fit.
pub const STORAGE_MIN: u64 = MIB;
/// The largest storage limit a member may set without an operator.
pub const STORAGE_MAX: u64 = 100 * GIB;

pub const ATTRIBUTES_MAX_BYTES: usize = 8 * KIB as usize;
pub const DELAY_MAX_SECS: u64 = 7 * 24 * 3600;

pub const BATCH_PUBLISH_MAX: usize = 100;
/// A batch envelope may hold eight full-size messages plus 64 KiB, never more than 80 MiB.
pub fn batch_envelope_limit(payload_size: u64) -> u64 {
    (8 * payload_size + 64 * KIB).min(80 * MIB)
}

pub const CONSUME_MAX_MESSAGES: u32 = 100;
pub const LONG_POLL_MAX_SECS: u32 = 20;
pub const ACK_MAX_RECEIPTS: usize = 100;

/// Rate limits per token.
pub const PUBLISH_CONSUME_PER_SECOND: u32 = 1000;
pub const STATS_PER_MINUTE: u32 = 120;
pub const ADMIN_ACTIONS_PER_MINUTE: u32 = 6;

/// Idempotency keys are remembered while the message is stored and at least this long.
pub const IDEMPOTENCY_MIN_MS: u64 = 24 * 3600 * 1000;
pub const IDEMPOTENCY_KEY_MAX_LEN: usize = 256;
pub const GROUP_ID_MAX_LEN: usize = 256;
pub const CONTENT_TYPE_MAX_LEN: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_envelope_is_eight_messages_plus_64k_capped_at_80mib() {
        assert_eq!(batch_envelope_limit(MIB), 8 * MIB + 64 * KIB);
        assert_eq!(batch_envelope_limit(10 * MIB), 80 * MIB);
        assert_eq!(batch_envelope_limit(50 * MIB), 80 * MIB);
    }
}
