//! Reading the audit log: one page of events, newest first, for a team (`GET /api/v1/audit`) or
//! across teams (operators, `GET /api/v1/admin/audit`), filtered by action and actor, and the
//! retention sweep that deletes what is older than [`super::KEPT_DAYS`].
//!
//! Pages are ordered by `(at, id)` descending and continue from an event id (`before`): ids are
//! UUID v7, unique, so a page boundary never skips or repeats an event, even when several events
//! share one `at` (a transaction's events do).

use crate::teams::TeamId;
use crate::timefmt;
use aqs_core::{ApiError, ApiResult};
use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;
use std::sync::atomic::{AtomicI64, Ordering};
use uuid::Uuid;

/// Events per page unless `limit` says otherwise.
pub const DEFAULT_LIMIT: u32 = 50;
/// The most events one page may hold.
pub const MAX_LIMIT: u32 = 200;
/// The most events one retention pass deletes, so a pass stays short.
pub const SWEEP_BATCH: i64 = 1000;
/// How often a replica looks for expired events when the last pass found fewer than a batch.
const SWEEP_EVERY_SECS: i64 = 600;

/// One event as the API shows it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Event {
    pub id: Uuid,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub at: DateTime<Utc>,
    /// The team the event belongs to; null for a failed log-in with an unknown email.
    pub team: Option<Uuid>,
    pub actor: EventActor,
    /// Such as `queue.created`, `token.revoked`, `session.login`.
    pub action: String,
    pub target: EventTarget,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    /// The request's `x-request-id`, when it sent one.
    pub request_id: Option<String>,
}

/// Who acted.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct EventActor {
    /// `member`, `key`, `operator` or `anonymous` (a failed log-in with an unknown email).
    pub kind: String,
    pub id: Option<Uuid>,
    /// A member's or operator's email as it was (none for keys, anonymous log-ins and erased
    /// members).
    pub email: Option<String>,
}

/// What the event is about.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct EventTarget {
    /// `queue`, `token`, `push`, `domain`, `host`, `callback_url`, `billing`, `session`…
    pub kind: String,
    pub id: Option<String>,
}

/// One page: its events, newest first, and the `before` that reads the next page (null on the
/// last one).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Page {
    pub events: Vec<Event>,
    pub next_before: Option<Uuid>,
}

/// The query parameters as given (each checked by [`Filter::parse`], a 400 naming the one that
/// is wrong).
#[derive(Clone, Debug, Default)]
pub struct RawFilter {
    pub team: Option<String>,
    pub action: Option<String>,
    pub actor: Option<String>,
    pub before: Option<String>,
    pub limit: Option<String>,
}

/// Who the `actor` filter names: an id (member, key or operator) or an email.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActorFilter {
    Id(Uuid),
    Email(String),
}

/// A checked filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub team: Option<Uuid>,
    pub action: Option<String>,
    pub actor: Option<ActorFilter>,
    pub before: Option<Uuid>,
    pub limit: u32,
}

impl Filter {
    /// Checks each parameter; blank ones count as absent.
    pub fn parse(raw: RawFilter) -> ApiResult<Self> {
        let given = |value: Option<String>| value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let team = given(raw.team)
            .map(|team| Uuid::try_parse(&team).map_err(|_| ApiError::field("team", "give a team id (a UUID)")))
            .transpose()?;
        let action = given(raw.action)
            .map(|action| {
                let (kind, verb) = action.split_once('.').unwrap_or(("", ""));
                let word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c == '_');
                if action.len() <= 64 && word(kind) && word(verb) {
                    Ok(action)
                } else {
                    Err(ApiError::field("action", "give an action such as queue.created"))
                }
            })
            .transpose()?;
        let actor = given(raw.actor)
            .map(|actor| match Uuid::try_parse(&actor) {
                Ok(id) => Ok(ActorFilter::Id(id)),
                Err(_)
                    if actor.contains('@') && actor.chars().count() <= 254 && !actor.chars().any(char::is_control) =>
                {
                    Ok(ActorFilter::Email(actor.to_lowercase()))
                }
                Err(_) => Err(ApiError::field("actor", "give an actor's id (a UUID) or email")),
            })
            .transpose()?;
        let before = given(raw.before)
            .map(|before| {
                Uuid::try_parse(&before)
                    .map_err(|_| ApiError::field("before", "give the id of an event, such as a page's next_before"))
            })
            .transpose()?;
        let limit = match given(raw.limit) {
            None => DEFAULT_LIMIT,
            Some(limit) => limit
                .parse::<u32>()
                .ok()
                .filter(|limit| (1..=MAX_LIMIT).contains(limit))
                .ok_or_else(|| ApiError::field("limit", format!("give a number from 1 to {MAX_LIMIT}")))?,
        };
        Ok(Self { team, action, actor, before, limit })
    }
}

#[derive(sqlx::FromRow)]
struct Row {
    id: Uuid,
    at: DateTime<Utc>,
    team_id: Option<Uuid>,
    actor_kind: String,
    actor_id: Option<Uuid>,
    actor_email: Option<String>,
    action: String,
    target_kind: String,
    target_id: Option<String>,
    ip: Option<String>,
    user_agent: Option<String>,
    request_id: Option<String>,
}

impl From<Row> for Event {
    fn from(row: Row) -> Self {
        Self {
            id: row.id,
            at: row.at,
            team: row.team_id,
            actor: EventActor { kind: row.actor_kind, id: row.actor_id, email: row.actor_email },
            action: row.action,
            target: EventTarget { kind: row.target_kind, id: row.target_id },
            ip: row.ip,
            user_agent: row.user_agent,
            request_id: row.request_id,
        }
    }
}

/// A team's events (`filter.team` is ignored: the caller's team is the only one).
pub async fn team_page(db: &PgPool, team: TeamId, filter: &Filter) -> ApiResult<Page> {
    page(db, Some(team.as_uuid()), filter).await
}

/// Every team's events, or `filter.team`'s (operators).
pub async fn any_page(db: &PgPool, filter: &Filter) -> ApiResult<Page> {
    page(db, filter.team, filter).await
}

/// A `before` that names no event (it was never one, or it aged out) reads an empty page.
async fn page(db: &PgPool, team: Option<Uuid>, filter: &Filter) -> ApiResult<Page> {
    let (actor_id, actor_email) = match &filter.actor {
        Some(ActorFilter::Id(id)) => (Some(*id), None),
        Some(ActorFilter::Email(email)) => (None, Some(email.as_str())),
        None => (None, None),
    };
    let mut rows = sqlx::query_as::<_, Row>(
        "SELECT id, at, team_id, actor_kind, actor_id, actor_email, action, target_kind, target_id, ip, user_agent,
                request_id
         FROM audit_events
         WHERE ($1::uuid IS NULL OR team_id = $1)
           AND ($2::text IS NULL OR action = $2)
           AND ($3::uuid IS NULL OR actor_id = $3)
           AND ($4::text IS NULL OR lower(actor_email) = $4)
           AND ($5::uuid IS NULL OR (at, id) < (SELECT at, id FROM audit_events WHERE id = $5))
         ORDER BY at DESC, id DESC
         LIMIT $6",
    )
    .bind(team)
    .bind(filter.action.as_deref())
    .bind(actor_id)
    .bind(actor_email)
    .bind(filter.before)
    .bind(i64::from(filter.limit) + 1)
    .fetch_all(db)
    .await?;
    let more = rows.len() > filter.limit as usize;
    rows.truncate(filter.limit as usize);
    let events: Vec<Event> = rows.into_iter().map(Event::from).collect();
    let next_before = if more { events.last().map(|event| event.id) } else { None };
    Ok(Page { events, next_before })
}

/// Deletes up to [`SWEEP_BATCH`] events older than [`super::KEPT_DAYS`]; rows another replica's
/// pass holds are skipped. Answers how many went.
pub async fn sweep_expired(db: &PgPool) -> ApiResult<u64> {
    let deleted = sqlx::query(
        "DELETE FROM audit_events WHERE id IN (
             SELECT id FROM audit_events WHERE at < now() - make_interval(days => $1) LIMIT $2 FOR UPDATE SKIP LOCKED)",
    )
    .bind(super::KEPT_DAYS as i32)
    .bind(SWEEP_BATCH)
    .execute(db)
    .await?
    .rows_affected();
    Ok(deleted)
}

/// Unix seconds of this process's next retention pass.
static NEXT_SWEEP: AtomicI64 = AtomicI64::new(0);

/// [`sweep_expired`] when this process's pass is due: every [`SWEEP_EVERY_SECS`], or at once
/// again while passes find full batches. Called from a loop every control replica runs (the host
/// reconciler's rounds); a failure is logged and retried at the next pass.
pub async fn sweep_when_due(db: &PgPool) {
    let now = Utc::now().timestamp();
    if now < NEXT_SWEEP.load(Ordering::Relaxed) {
        return;
    }
    NEXT_SWEEP.store(now + SWEEP_EVERY_SECS, Ordering::Relaxed);
    match sweep_expired(db).await {
        Ok(deleted) if deleted >= SWEEP_BATCH as u64 => NEXT_SWEEP.store(now, Ordering::Relaxed),
        Ok(deleted) if deleted > 0 => tracing::info!(deleted, "audit events past their retention deleted"),
        Ok(_) => {}
        Err(err) => tracing::warn!(error = %err, "audit retention pass failed; retried later"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(pairs: &[(&str, &str)]) -> RawFilter {
        let mut raw = RawFilter::default();
        for (key, value) in pairs {
            let value = Some(value.to_string());
            match *key {
                "team" => raw.team = value,
                "action" => raw.action = value,
                "actor" => raw.actor = value,
                "before" => raw.before = value,
                "limit" => raw.limit = value,
                _ => unreachable!(),
            }
        }
        raw
    }

    fn field_of(pairs: &[(&str, &str)]) -> String {
        Filter::parse(raw(pairs)).unwrap_err().to_string()
    }

    #[test]
    fn filters_are_checked_and_name_the_bad_parameter() {
        let filter = Filter::parse(raw(&[])).unwrap();
        assert_eq!((filter.limit, filter.action, filter.actor, filter.before), (50, None, None, None));
        let filter =
            Filter::parse(raw(&[("action", "queue.created"), ("actor", " Ada@Example.com "), ("limit", "200")]))
                .unwrap();
        assert_eq!(filter.action.as_deref(), Some("queue.created"));
        assert_eq!(filter.actor, Some(ActorFilter::Email("ada@example.com".into())));
        assert_eq!(filter.limit, 200);
        for (pairs, field) in [
            (&[("limit", "0")][..], "limit"),
            (&[("limit", "201")], "limit"),
            (&[("limit", "ten")], "limit"),
            (&[("before", "yesterday")], "before"),
            (&[("action", "queue")], "action"),
            (&[("action", "Queue.Created")], "action"),
            (&[("actor", "ada")], "actor"),
            (&[("team", "mine")], "team"),
        ] {
            assert!(field_of(pairs).starts_with(field), "{pairs:?}: {}", field_of(pairs));
        }
    }
}
