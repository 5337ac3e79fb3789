//! The console's view of a queue's messages in every state (`browse.lua`): pages through the whole
//! queue (stream order, then delayed messages by due time) and one message whole, by where it is.

use super::Engine;
use crate::error::StorageResult;
use aqs_core::ids::QueueId;

/// Where a message is, as `browse.lua` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageState {
    /// Available to a consume; `at` is since when.
    Ready,
    /// Under a live lease; `at` is its deadline.
    InFlight,
    /// Released by a nack with a delay; `at` is when it is due again.
    Retry,
    /// Published with a delay; `at` is when it is due.
    Delayed,
    /// In the dead-letter queue; `at` is since when.
    Dead,
}

impl MessageState {
    fn parse(word: &str) -> Option<Self> {
        Some(match word {
            "ready" => Self::Ready,
            "in_flight" => Self::InFlight,
            "retry" => Self::Retry,
            "delayed" => Self::Delayed,
            "dead" => Self::Dead,
            _ => return None,
        })
    }
}

/// Where to find one message again: a stream entry, a delayed message or a dead letter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MessageRef {
    Stream(String),
    Delayed(String),
    Dead(String),
}

/// A message as the console shows it.
#[derive(Clone, Debug)]
pub struct BrowsedMessage {
    pub state: MessageState,
    pub at_ms: u64,
    /// The stream entry, for a ready, in-flight or retrying message.
    pub stream_id: Option<String>,
    pub id: String,
    /// The body exactly as stored; on a page, its first bytes only.
    pub body: Vec<u8>,
    pub body_bytes: u64,
    pub content_type: String,
    /// The attributes object as stored (JSON), or empty for none.
    pub attributes: String,
    pub group_id: Option<String>,
    pub published_at_ms: u64,
    /// Deliveries so far.
    pub attempts: u32,
    /// Why it was dead-lettered ("" unless dead).
    pub reason: String,
    pub idempotency_key: Option<String>,
}

impl BrowsedMessage {
    /// How to ask for this message again.
    pub fn reference(&self) -> MessageRef {
        match (&self.stream_id, self.state) {
            (Some(sid), _) => MessageRef::Stream(sid.clone()),
            (None, MessageState::Dead) => MessageRef::Dead(self.id.clone()),
            (None, _) => MessageRef::Delayed(self.id.clone()),
        }
    }
}

/// One page and where the next one starts (`None`: this was the last).
#[derive(Clone, Debug)]
pub struct MessagePage {
    pub messages: Vec<BrowsedMessage>,
    pub next: Option<String>,
}

/// What a publisher knows of a message, to find it by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKey<'a> {
    /// The id the publish answered with.
    Id(&'a str),
    /// The idempotency key it was published with.
    IdempotencyKey(&'a str),
}

/// Stream entries read by one `find` call: a small bite, so Redis is never held long.
const FIND_CHUNK: u32 = 200;
/// Stream entries searched at most for one message id (a message id is not indexed in the stream).
pub const FIND_MAX_SCANNED: u32 = 100_000;

/// Longest cursor accepted: `d`, a due time, `:` and a message id.
const CURSOR_MAX: usize = 64;

impl Engine {
    /// Up to `limit` messages after `cursor` (`None`: from the start), each with the first
    /// `preview` bytes of its body. `None` when the queue does not exist; a malformed cursor reads
    /// from the start of the delayed messages, never an error (it comes from a URL).
    pub async fn browse(
        &self,
        queue: QueueId,
        cursor: Option<&str>,
        limit: u32,
        preview: usize,
        now_ms: u64,
    ) -> StorageResult<Option<MessagePage>> {
        let cursor = cursor.filter(|c| valid_cursor(c)).unwrap_or("");
        let mut inv = self.invocation(&self.scripts.browse, queue);
        inv.arg(now_ms).arg("page").arg(limit.max(1)).arg(preview).arg(cursor);
        self.browse_reply(&inv).await.map(|page| page.map(|(messages, next)| MessagePage { messages, next }))
    }

    /// One message whole, found by `reference`; `Ok(None)` when it (or the queue) is not there.
    pub async fn message(
        &self,
        queue: QueueId,
        reference: &MessageRef,
        now_ms: u64,
    ) -> StorageResult<Option<BrowsedMessage>> {
        let (where_, id) = match reference {
            MessageRef::Stream(sid) => ("s", sid),
            MessageRef::Delayed(id) => ("d", id),
            MessageRef::Dead(id) => ("x", id),
        };
        let mut inv = self.invocation(&self.scripts.browse, queue);
        inv.arg(now_ms).arg("one").arg(where_).arg(id.as_str());
        Ok(self.browse_reply(&inv).await?.and_then(|(mut messages, _)| messages.pop()))
    }

    /// One message whole, found by its id or its idempotency key wherever it is (delayed, dead, or
    /// in the stream, searched newest first, at most [`FIND_MAX_SCANNED`] entries); `Ok(None)` when it
    /// (or the queue) is not there.
    pub async fn find_message(
        &self,
        queue: QueueId,
        key: MessageKey<'_>,
        now_ms: u64,
    ) -> StorageResult<Option<BrowsedMessage>> {
        let (kind, value) = match key {
            MessageKey::Id(id) => ("m", id),
            MessageKey::IdempotencyKey(key) => ("k", key),
        };
        let mut after = String::new();
        for _ in 0..FIND_MAX_SCANNED / FIND_CHUNK {
            let mut inv = self.invocation(&self.scripts.browse, queue);
            inv.arg(now_ms).arg("find").arg(kind).arg(value).arg(after.as_str()).arg(FIND_CHUNK);
            let Some((mut messages, next)) = self.browse_reply(&inv).await? else {
                return Ok(None);
            };
            if let Some(found) = messages.pop() {
                return Ok(Some(found));
            }
            match next {
                Some(next) => after = next,
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    async fn browse_reply(
        &self,
        inv: &super::Invocation<'_>,
    ) -> StorageResult<Option<(Vec<BrowsedMessage>, Option<String>)>> {
        let Some(mut reply) = self.run_found(inv, "browse.lua").await? else {
            return Ok(None);
        };
        let next = reply.opt_text()?;
        let mut out = Vec::with_capacity(reply.remaining() / 13);
        while reply.remaining() > 0 {
            let state = reply.text()?;
            out.push(BrowsedMessage {
                state: MessageState::parse(&state)
                    .ok_or_else(|| anyhow::anyhow!("browse.lua returned the state {state:?}"))?,
                at_ms: reply.uint()?,
                stream_id: reply.opt_text()?,
                id: reply.text()?,
                body: reply.bytes()?,
                body_bytes: reply.uint()?,
                content_type: reply.text()?,
                attributes: reply.text()?,
                group_id: reply.opt_text()?,
                published_at_ms: reply.uint()?,
                attempts: reply.uint()? as u32,
                reason: reply.text()?,
                idempotency_key: reply.opt_text()?,
            });
        }
        Ok(Some((out, next)))
    }
}

/// `s<ms>-<seq>` or `d<ms>:<message id>`, as `browse.lua` hands them out.
fn valid_cursor(cursor: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if cursor.len() > CURSOR_MAX {
        return false;
    }
    if let Some(sid) = cursor.strip_prefix('s') {
        return sid.split_once('-').is_some_and(|(ms, seq)| digits(ms) && digits(seq));
    }
    if let Some(rest) = cursor.strip_prefix('d') {
        return rest
            .split_once(':')
            .is_some_and(|(due, id)| digits(due) && !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit()));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_are_what_the_script_hands_out() {
        assert!(valid_cursor("s1730000000000-0"));
        assert!(valid_cursor("d1730000000000:0123456789abcdef0123456789abcdef"));
        for bad in ["", "s", "s12", "s12-", "x12-0", "d12", "d12:", "d12:xyz", "s1-2-3"] {
            assert!(!valid_cursor(bad), "{bad}");
        }
    }
}
