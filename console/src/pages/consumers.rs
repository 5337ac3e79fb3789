//! The Consumers tab: who receives this queue's messages, so "why is nothing consumed?" has an
//! answer. Each consumer (a token, from one client address, with one user agent) with its last
//! request and its consume requests, messages received and acknowledged over the last minutes, as
//! the data-plane processes tallied them (`data-plane/src/consumers.rs`, written every few
//! seconds). Above them, the leases held now: the queue's in-flight count, which is exact; per
//! consumer only "received − acknowledged" can be told, an estimate the page names as such (a nack,
//! an expired lease or an ack from another client are not tied to the consumer that received).

use super::load_queue;
use crate::error::PageResult;
use crate::extract::{CurrentMember, PagePath};
use crate::format;
use crate::layout::Chrome;
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::slug::Slug;
use aqs_control_plane::tokens;
use aqs_core::time::now_ms;
use aqs_engine::ConsumerTally;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use std::collections::HashMap;

/// The minutes the request and message counts cover.
pub(crate) const RECENT_MINUTES: u64 = 5;
/// The minutes "received − acknowledged" covers (what the data plane keeps).
const UNACKED_MINUTES: u64 = 10;

pub(crate) struct Row {
    token: String,
    /// The token was revoked (or is unknown).
    revoked: bool,
    address: String,
    device: String,
    user_agent: String,
    last_seen: format::Instant,
    requests: u64,
    messages: u64,
    acked: u64,
    /// Received minus acknowledged over [`UNACKED_MINUTES`], floored at 0.
    unacked: u64,
}

#[derive(Template, WebTemplate)]
#[template(path = "consumers.html")]
pub(crate) struct ConsumersPage {
    chrome: Chrome,
    nav: QueueNav,
    rows: Vec<Row>,
    in_flight: String,
    ready: String,
    push_on: bool,
    recent_minutes: u64,
    unacked_minutes: u64,
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
) -> PageResult<ConsumersPage> {
    let queue = load_queue(&state, &member, &slug).await?;
    let now = now_ms();
    let stats = state.engine().stats(queue.id, now).await?;
    let tallies = state.engine().consumer_tallies(queue.id).await?;
    let names: HashMap<uuid::Uuid, (String, bool)> = tokens::list(state.control(), member.team, &slug)
        .await?
        .into_iter()
        .map(|t| (t.id, (t.name, t.revoked_at.is_some())))
        .collect();
    let push_on = super::push::target(&state, &member, &slug).await?.is_some();
    let rows = merge(tallies, now)
        .into_iter()
        .map(|t| {
            let (token, revoked) = names.get(&t.token_id).cloned().unwrap_or_else(|| ("unknown token".into(), true));
            row(t, token, revoked, now)
        })
        .collect();
    Ok(ConsumersPage {
        chrome: member.chrome(format!("Consumers · {}", queue.name)),
        nav: QueueNav::new(&queue, Tab::Consumers),
        rows,
        in_flight: format::count(stats.as_ref().map_or(0, |s| s.in_flight)),
        ready: format::count(stats.as_ref().map_or(0, |s| s.ready)),
        push_on,
        recent_minutes: RECENT_MINUTES,
        unacked_minutes: UNACKED_MINUTES,
    })
}

/// One tally per consumer: the processes' tallies of the same consumer added up minute by minute,
/// the latest request kept; consumers not seen within the window left out; latest first.
fn merge(tallies: Vec<ConsumerTally>, now: u64) -> Vec<ConsumerTally> {
    let mut merged: HashMap<(uuid::Uuid, String, String), ConsumerTally> = HashMap::new();
    for tally in tallies {
        if now.saturating_sub(tally.last_seen_ms) > UNACKED_MINUTES * 60_000 {
            continue;
        }
        let key = (tally.token_id, tally.address.clone(), tally.user_agent.clone());
        match merged.get_mut(&key) {
            None => {
                merged.insert(key, tally);
            }
            Some(into) => {
                into.last_seen_ms = into.last_seen_ms.max(tally.last_seen_ms);
                for minute in tally.minutes {
                    match into.minutes.iter_mut().find(|m| m.minute == minute.minute) {
                        Some(m) => {
                            m.requests += minute.requests;
                            m.messages += minute.messages;
                            m.acked += minute.acked;
                        }
                        None => into.minutes.push(minute),
                    }
                }
            }
        }
    }
    let mut out: Vec<ConsumerTally> = merged.into_values().collect();
    out.sort_by(|a, b| b.last_seen_ms.cmp(&a.last_seen_ms).then_with(|| a.address.cmp(&b.address)));
    out
}

fn row(t: ConsumerTally, token: String, revoked: bool, now: u64) -> Row {
    let this_minute = now / 60_000;
    let within = |minutes: u64| move |m: &&aqs_engine::MinuteTally| m.minute + minutes > this_minute;
    let recent: Vec<_> = t.minutes.iter().filter(within(RECENT_MINUTES)).collect();
    let window: Vec<_> = t.minutes.iter().filter(within(UNACKED_MINUTES)).collect();
    let received: u64 = window.iter().map(|m| m.messages).sum();
    let acked: u64 = window.iter().map(|m| m.acked).sum();
    Row {
        token,
        revoked,
        address: if t.address.is_empty() { "unknown".into() } else { t.address },
        device: crate::device::describe(Some(&t.user_agent)),
        user_agent: t.user_agent,
        last_seen: format::instant(t.last_seen_ms),
        requests: recent.iter().map(|m| m.requests).sum(),
        messages: recent.iter().map(|m| m.messages).sum(),
        acked: recent.iter().map(|m| m.acked).sum(),
        unacked: received.saturating_sub(acked),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqs_engine::MinuteTally;

    #[test]
    fn processes_tallies_of_one_consumer_add_up() {
        let now = 1_700_000_000_000;
        let minute = now / 60_000;
        let token = uuid::Uuid::new_v4();
        let tally = |requests, last_seen_ms| ConsumerTally {
            token_id: token,
            address: "203.0.113.9".into(),
            user_agent: "curl/8".into(),
            last_seen_ms,
            minutes: vec![MinuteTally { minute, requests, messages: 2 * requests, acked: requests }],
        };
        let stale = ConsumerTally { token_id: uuid::Uuid::new_v4(), ..tally(1, now - 3_600_000) };
        let merged = merge(vec![tally(1, now - 5_000), tally(2, now - 1_000), stale], now);
        assert_eq!(merged.len(), 1, "one consumer, the stale one left out");
        let row = row(merged[0].clone(), "worker".into(), false, now);
        assert_eq!((row.requests, row.messages, row.acked, row.unacked), (3, 6, 3, 3));
        assert_eq!(row.last_seen.machine, format::instant(now - 1_000).machine);
    }
}
