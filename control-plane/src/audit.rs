//! The audit log: one event per state-changing request of `/api/v1`, the console and the
//! operators' routes, written with [`record`] on the change's own transaction, so that a change
//! and its event commit together or not at all (`docs/teams.md`); a change made only in Redis
//! records with [`record_after_redis`] once it succeeded. Kept 400 days.
//!
//! `query`: reading pages of events (the team's and the operators' routes) and the retention
//! sweep.

mod query;

pub use query::{
    ActorFilter, Event, EventActor, EventTarget, Filter, Page, RawFilter, any_page, sweep_expired, sweep_when_due,
    team_page,
};

use crate::state::ControlPlane;
use crate::teams::{Actor, Caller, RequestOrigin, TeamId};
use aqs_core::ApiResult;
use sqlx::PgConnection;
use uuid::Uuid;

/// How long events are kept.
pub const KEPT_DAYS: i64 = 400;

/// What an event is about: a kind (`queue`, `token`, `host`, `member`…) and its id.
#[derive(Clone, Debug)]
pub struct Target {
    pub kind: &'static str,
    pub id: Option<String>,
}

impl Target {
    pub fn new(kind: &'static str, id: impl ToString) -> Self {
        Self { kind, id: Some(id.to_string()) }
    }

    pub fn team(team: TeamId) -> Self {
        Self::new("team", team)
    }
}

/// Who did it, as stored: `member`, `key`, `operator` or `anonymous` (a failed log-in), with an id
/// and an email when there is one.
#[derive(Clone, Debug)]
pub struct AuditActor {
    pub kind: &'static str,
    pub id: Option<Uuid>,
    pub email: Option<String>,
}

impl AuditActor {
    pub fn of(actor: &Actor) -> Self {
        match actor {
            Actor::Member { id, email } => Self { kind: "member", id: Some(id.as_uuid()), email: Some(email.clone()) },
            Actor::Key { id, .. } => Self { kind: "key", id: Some(*id), email: None },
        }
    }

    pub fn operator(id: Uuid, email: &str) -> Self {
        Self { kind: "operator", id: Some(id), email: Some(email.to_owned()) }
    }
}

/// Records `action` on `target` by `caller`, in `caller`'s team, on `conn` (the change's
/// transaction).
pub async fn record(conn: &mut PgConnection, caller: &Caller, action: &str, target: Target) -> ApiResult<()> {
    record_as(conn, Some(caller.team), &AuditActor::of(&caller.actor), &caller.origin, action, target).await
}

/// [`record`] for a change that lives only in Redis (a dead-letter replay or purge, a purge of
/// waiting messages, one message deleted), called right after that change succeeded. Redis and
/// PostgreSQL share no transaction, so the event cannot commit with the change: writing it after
/// means a refused or failed change writes none. An event that then cannot be written fails the
/// request, though the change stays made.
pub async fn record_after_redis(cp: &ControlPlane, caller: &Caller, action: &str, target: Target) -> ApiResult<()> {
    let mut conn = cp.db().acquire().await?;
    record(&mut conn, caller, action, target).await
}

/// [`record`] for an actor that is not a team's caller: an operator, a log-in.
pub async fn record_as(
    conn: &mut PgConnection,
    team: Option<TeamId>,
    actor: &AuditActor,
    origin: &RequestOrigin,
    action: &str,
    target: Target,
) -> ApiResult<()> {
    sqlx::query(
        "INSERT INTO audit_events (id, team_id, actor_kind, actor_id, actor_email, action, target_kind, target_id,
                                   ip, user_agent, request_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(Uuid::now_v7())
    .bind(team.map(TeamId::as_uuid))
    .bind(actor.kind)
    .bind(actor.id)
    .bind(actor.email.as_deref())
    .bind(action)
    .bind(target.kind)
    .bind(target.id)
    .bind(origin.ip.as_deref())
    .bind(origin.user_agent.as_deref())
    .bind(origin.request_id.as_deref().map(|id| id.chars().take(128).collect::<String>()))
    .execute(conn)
    .await?;
    Ok(())
}
