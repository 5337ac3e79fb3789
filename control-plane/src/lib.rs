//! The AQS control plane: the `/api/v1` management API (`docs/management-api.md`) and the service
//! functions behind it: members and sessions, queues, tokens, push targets, domains and custom
//! hosts, billing, and the operators' routes.
//!
//! PostgreSQL is the source of truth, and this crate is its only writer. After every committed
//! change the control plane writes the projection the data plane reads into Redis (queue settings,
//! slug → queue, token hash → queue and scopes, push targets, custom hosts), and
//! [`ControlPlane::resync_projection`] rewrites all of it at start-up (`docs/architecture.md`).
//!
//! The layers:
//! - a service layer of plain async functions ([`auth`], [`account`], [`queues`], [`tokens`],
//!   [`push`], [`domains`], [`hosts`], [`billing`]) that take the authenticated [`MemberId`] first,
//!   so a tenant's data cannot be reached without it, and the operators' ([`admin`], and the admin
//!   functions of hosts and billing) that take an [`AuthOperator`]; the console calls these
//!   directly, not over HTTP;
//! - `routes`: thin HTTP handlers over the service layer, mounted by [`router`], from which the
//!   OpenAPI document is generated ([`openapi_document`]);
//! - [`projection`]: every Redis write, in the order that keeps the data plane from seeing a
//!   half-made or half-deleted queue;
//! - background loops: the billing outbox ([`spawn_background`]), the custom-host reconciler
//!   ([`ControlPlane::spawn_host_reconciler`]) and the database watch that re-syncs the projection
//!   once PostgreSQL answers ([`ControlPlane::watch_database`]), each started by `aqs serve`.

pub mod account;
pub mod admin;
pub mod audit;
pub mod auth;
pub mod billing;
pub use aqs_core::client_addr;
mod database;
mod domain_proof;
pub mod domains;
pub mod hash_pool;
pub mod hosts;
pub mod keys;
pub mod login_throttle;
pub mod members;
mod password;
pub mod projection;
pub mod push;
mod push_url;
pub mod queue_settings;
pub mod queues;
mod redis_scan;
mod resync;
mod routes;
mod session;
pub mod sessions;
pub mod teams;
/// Queue slugs live in core (the data plane parses them too); kept at this path for the console.
pub use aqs_core::slug;
mod state;
mod text;
mod timefmt;
pub mod tokens;

pub use auth::{AuthMember, AuthOperator, Credentials, PasswordChange, SignedIn};
pub use database::{PROBE_EVERY, Waiting, database_unavailable};
pub use keys::{CreatedKey, ManagementKey, NewKey};
pub use members::{Member, MemberId, Role, grant_operator};
pub use queues::{NewQueue, Queue, QueueChanges};
pub use routes::{document as openapi_document, router, served_paths};
pub use sessions::Session;
pub use state::ControlPlane;
pub use teams::{
    Caller, CreatedInvite, Invite, InvitePreview, NewInvite, RequestOrigin, TeamId, TeamMember, TeamRole, TeamSummary,
};
pub use tokens::{CreatedToken, NewToken, Token};

/// Starts the control plane's background loops (the billing outbox) until `cancel`.
pub fn spawn_background(
    cp: &ControlPlane,
    cancel: tokio_util::sync::CancellationToken,
) -> Vec<tokio::task::JoinHandle<()>> {
    vec![tokio::spawn(billing::outbox::run(cp.clone(), cancel))]
}

/// Applies the PostgreSQL migrations in `migrations/` (embedded at compile time).
pub async fn migrate(db: &sqlx::PgPool) -> anyhow::Result<()> {
    sqlx::migrate!("../migrations").run(db).await?;
    Ok(())
}
