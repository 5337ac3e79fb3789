//! Waking long polls. A publish script PUBLISHes to the queue's wake channel; each process holds
//! one subscriber connection with a single PSUBSCRIBE on the pattern of every queue's channel and
//! turns each message into wake-ups on that queue's in-process `Notify`: as many `notify_one` as
//! messages the publish stored (the message's payload), never more than the queue has waiters, so
//! one message wakes one waiter, not all of them (each woken waiter runs the consume script).
//!
//! The engine that published wakes its own process's waiters as soon as its script returns
//! (`Engine::publish` calls `published` after the write, whoever asked for the publish: the API,
//! the console's form, anything else), without waiting for its PUBLISH to come back through Redis:
//! one Redis hop and one task hand-off less on the way to its long polls. A publish's payload names
//! its replica (`n:replica`), and that replica's subscriber skips it. Nothing is missed by
//! skipping: a waiter registers before its consume attempt, so either the attempt ran after the
//! publish and found the message, or the waiter was registered when the publish returned and
//! `published` woke it. A caller never wakes anyone itself: a publish that skipped the engine's
//! waking would be skipped by this process's subscriber too, and its long polls would sleep on to
//! their deadline. Other wake-ups (nack,
//! sweep, replay) carry only `n` and reach every replica, their sender's included.
//!
//! No wake-up is lost: a waiter enables its `Notified` before each consume attempt, so a publish
//! landing during the attempt is kept for it (or stored as a permit while no waiter is enabled); a
//! waiter that was notified but leaves without consuming (timed out, answered, or its client went
//! away) passes the wake-up on: tokio forwards a dropped `Notified`'s `notify_one` to the next
//! waiter, and `longpoll` re-issues one if it is dropped between the wake-up and its attempt.
//!
//! Why one pattern subscription rather than SSUBSCRIBE per queue: the number of subscriptions stays
//! one however many queues and waiters a process has, a new waiter costs no round trip, and a
//! reconnect re-subscribes with one command. The price is that in a Redis Cluster classic pub/sub
//! is broadcast to every node; sharded channels per queue are the change to make when that shows.
//!
//! While the subscriber is disconnected, wake-ups are missed: on every (re)subscribe every waiter
//! is woken to look again, and waiters also wake at their deadline or the next lease/delay due.

use crate::Engine;
use aqs_core::ids::QueueId;
use aqs_core::keys::queue_of_wake_channel;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Default)]
pub struct Waiters {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    queues: Mutex<HashMap<QueueId, (Arc<Notify>, usize)>>,
    listening: AtomicBool,
}

/// A registered waiter; deregisters on drop.
pub struct Waiter {
    pub notify: Arc<Notify>,
    queue: QueueId,
    registry: Waiters,
}

impl Waiters {
    pub fn register(&self, queue: QueueId) -> Waiter {
        let mut queues = self.inner.queues.lock().expect("waiters lock");
        let entry = queues.entry(queue).or_insert_with(|| (Arc::new(Notify::new()), 0));
        entry.1 += 1;
        Waiter { notify: entry.0.clone(), queue, registry: self.clone() }
    }

    /// Wakes up to `ready` waiters of `queue` (all of them for `None`: the count is unknown).
    pub fn wake(&self, queue: QueueId, ready: Option<usize>) {
        if let Some((notify, waiting)) = self.inner.queues.lock().expect("waiters lock").get(&queue) {
            match ready {
                Some(ready) => (0..ready.min(*waiting)).for_each(|_| notify.notify_one()),
                None => notify.notify_waiters(),
            }
        }
    }

    /// Wakes up to `stored` waiters of `queue` for a publish of this replica that stored (or, its
    /// reply lost, may have stored) that many messages; its PUBLISH, named for this replica, does
    /// not wake them again.
    pub fn published(&self, queue: QueueId, stored: usize) {
        self.wake(queue, Some(stored));
    }

    fn wake_all(&self) {
        for (notify, _) in self.inner.queues.lock().expect("waiters lock").values() {
            notify.notify_waiters();
        }
    }

    pub fn is_listening(&self) -> bool {
        self.inner.listening.load(Ordering::Acquire)
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let mut queues = self.registry.inner.queues.lock().expect("waiters lock");
        if let Some(entry) = queues.get_mut(&self.queue) {
            entry.1 -= 1;
            if entry.1 == 0 {
                queues.remove(&self.queue);
            }
        }
    }
}

/// The subscriber task: connects, PSUBSCRIBEs, dispatches; on any failure waits and reconnects.
pub(crate) fn spawn_subscriber(engine: &Engine, shutdown: CancellationToken) -> JoinHandle<()> {
    let waiters = engine.waiters().clone();
    let me: Arc<str> = engine.replica().into();
    let redis = engine.conn();
    let pattern = engine.keys().wake_pattern();
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(100);
        loop {
            match listen(&redis.subscriber(), &pattern, &me, &waiters, &shutdown, &mut backoff).await {
                Ok(()) => return,
                // Warned once per outage (a successful subscribe resets the backoff), not per retry.
                Err(err) if waiters.is_listening() || backoff == Duration::from_millis(100) => {
                    tracing::warn!(error = %err, "wake-up subscriber disconnected; reconnecting")
                }
                Err(err) => tracing::debug!(error = %err, "wake-up subscriber still disconnected"),
            }
            waiters.inner.listening.store(false, Ordering::Release);
            waiters.wake_all();
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    })
}

/// Listens until shutdown (`Ok`) or until the connection fails (`Err`).
async fn listen(
    client: &redis::Client,
    pattern: &str,
    me: &str,
    waiters: &Waiters,
    shutdown: &CancellationToken,
    backoff: &mut Duration,
) -> anyhow::Result<()> {
    let mut pubsub = tokio::time::timeout(Duration::from_secs(2), client.get_async_pubsub()).await??;
    pubsub.psubscribe(pattern).await?;
    waiters.inner.listening.store(true, Ordering::Release);
    *backoff = Duration::from_millis(100);
    // Anything published before this subscription was missed: let every waiter look again.
    waiters.wake_all();
    tracing::info!(pattern, "wake-up subscriber listening");
    let mut messages = pubsub.on_message();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            message = messages.next() => match message {
                Some(message) => {
                    if let Some(queue) = queue_of_wake_channel(message.get_channel_name()) {
                        let (ready, sender) = parse_wake(message.get_payload_bytes());
                        if sender != Some(me) {
                            waiters.wake(queue, ready);
                        }
                    }
                }
                None => anyhow::bail!("the subscription stream ended"),
            },
        }
    }
}

/// A wake-up's payload, `n` or `n:replica`: how many messages may be ready (`None` when it does not
/// say) and the publishing replica, if named.
fn parse_wake(payload: &[u8]) -> (Option<usize>, Option<&str>) {
    let Ok(payload) = std::str::from_utf8(payload) else { return (None, None) };
    let (count, sender) = match payload.split_once(':') {
        Some((count, sender)) => (count, Some(sender)),
        None => (payload, None),
    };
    (count.parse().ok(), sender)
}

#[cfg(test)]
mod tests {
    use super::parse_wake;

    #[test]
    fn a_wake_up_names_its_count_and_its_sender_when_a_publish_sent_it() {
        assert_eq!(parse_wake(b"3"), (Some(3), None));
        assert_eq!(parse_wake(b"1:01JREPLICA"), (Some(1), Some("01JREPLICA")));
        assert_eq!(parse_wake(b"x:01JREPLICA"), (None, Some("01JREPLICA")));
        assert_eq!(parse_wake(b""), (None, None));
        assert_eq!(parse_wake(&[0xff, b'1']), (None, None));
    }
}
