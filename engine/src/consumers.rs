//! Who consumes a queue lately, for the console's Consumers tab: each data-plane process tallies
//! its consume and ack requests in memory (`data-plane/src/consumers.rs`) and writes its tallies
//! here every few seconds, one field per process and consumer of the queue's `consumers` hash,
//! each write renewing the hash's expiry. No script runs: the hot path's Lua never sees this.
//!
//! A field's value is text (the engine has no JSON): the token id, the client address, the last
//! request (ms), the minutes as `minute:requests:messages:acked` separated by commas, and the user
//! agent last, so that it may hold any character but a newline.

use super::Engine;
use crate::error::StorageResult;
use aqs_core::ids::QueueId;
use std::time::Duration;
use uuid::Uuid;

/// One minute of one consumer's traffic (`minute` = Unix ms / 60,000).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MinuteTally {
    pub minute: u64,
    /// Consume requests.
    pub requests: u64,
    /// Messages those requests received.
    pub messages: u64,
    /// Receipts its ack requests acknowledged.
    pub acked: u64,
}

/// One consumer (a token, from one address, with one user agent) as one process saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerTally {
    pub token_id: Uuid,
    pub address: String,
    pub user_agent: String,
    pub last_seen_ms: u64,
    /// The recent minutes, oldest first.
    pub minutes: Vec<MinuteTally>,
}

impl ConsumerTally {
    fn encode(&self) -> String {
        let minutes: Vec<String> =
            self.minutes.iter().map(|m| format!("{}:{}:{}:{}", m.minute, m.requests, m.messages, m.acked)).collect();
        let agent: String = self.user_agent.chars().filter(|c| *c != '\n' && *c != '\r').collect();
        format!("{}\n{}\n{}\n{}\n{agent}", self.token_id, self.address, self.last_seen_ms, minutes.join(","))
    }

    fn decode(text: &str) -> Option<Self> {
        let mut lines = text.splitn(5, '\n');
        let token_id = Uuid::try_parse(lines.next()?).ok()?;
        let address = lines.next()?.to_owned();
        let last_seen_ms = lines.next()?.parse().ok()?;
        let minutes = lines
            .next()?
            .split(',')
            .filter(|m| !m.is_empty())
            .map(|m| {
                let mut n = m.split(':').map(|v| v.parse::<u64>().ok());
                Some(MinuteTally { minute: n.next()??, requests: n.next()??, messages: n.next()??, acked: n.next()?? })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Self { token_id, address, user_agent: lines.next().unwrap_or("").to_owned(), last_seen_ms, minutes })
    }
}

/// How long the hash outlives its last write: a consumer idle this long is no longer listed.
pub const CONSUMERS_TTL: Duration = Duration::from_secs(15 * 60);

impl Engine {
    /// Writes this process's tallies of `queue` (`key` → tally; the engine prefixes each key with
    /// the replica id) and removes the fields of `gone` (keys this process no longer tallies), then
    /// renews the hash's expiry.
    pub async fn write_consumer_tallies(
        &self,
        queue: QueueId,
        tallies: &[(String, ConsumerTally)],
        gone: &[String],
    ) -> StorageResult<()> {
        let key = self.keys.queue(queue).consumers();
        let field = |k: &str| format!("{}|{k}", self.replica());
        let mut pipe = redis::pipe();
        if !tallies.is_empty() {
            let mut hset = redis::cmd("HSET");
            hset.arg(&key);
            for (k, tally) in tallies {
                hset.arg(field(k)).arg(tally.encode());
            }
            pipe.add_command(hset).ignore();
        }
        if !gone.is_empty() {
            let mut hdel = redis::cmd("HDEL");
            hdel.arg(&key);
            for k in gone {
                hdel.arg(field(k));
            }
            pipe.add_command(hdel).ignore();
        }
        pipe.cmd("PEXPIRE").arg(&key).arg(CONSUMERS_TTL.as_millis() as u64).ignore();
        let mut conn = self.conn.clone();
        pipe.query_async::<()>(&mut conn).await?;
        Ok(())
    }

    /// Every process's tallies of `queue` (one per process and consumer; the caller merges them).
    pub async fn consumer_tallies(&self, queue: QueueId) -> StorageResult<Vec<ConsumerTally>> {
        let key = self.keys.queue(queue).consumers();
        let mut conn = self.conn.clone();
        let raw: Vec<(String, String)> = redis::cmd("HGETALL").arg(key).query_async(&mut conn).await?;
        Ok(raw.iter().filter_map(|(_, value)| ConsumerTally::decode(value)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_reads_back_as_written_even_with_odd_user_agents() {
        let tally = ConsumerTally {
            token_id: Uuid::new_v4(),
            address: "203.0.113.9".into(),
            user_agent: "curl/8.5.0 (x, y:z)\nnext".into(),
            last_seen_ms: 1_700_000_000_000,
            minutes: vec![MinuteTally { minute: 28_333_333, requests: 3, messages: 10, acked: 9 }],
        };
        let back = ConsumerTally::decode(&tally.encode()).unwrap();
        assert_eq!(back.user_agent, "curl/8.5.0 (x, y:z)next");
        assert_eq!(ConsumerTally { user_agent: tally.user_agent.replace('\n', ""), ..tally }, back);
        assert_eq!(ConsumerTally::decode("garbage"), None);
    }
}
