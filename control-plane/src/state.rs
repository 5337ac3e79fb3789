//! `ControlPlane`: the shared state of every control-plane route and service function, the stores
//! and the few configuration values the control plane needs.

use crate::billing::Billing;
use crate::database::DatabaseState;
use crate::session::SessionKeys;
use aqs_core::config::Config;
use aqs_core::keys::Keys;
use aqs_core::redis_conn::RedisConn;
use aqs_engine::Engine;
use sqlx::PgPool;
use std::sync::Arc;

/// Cheap to clone: everything lives behind one `Arc`.
#[derive(Clone)]
pub struct ControlPlane {
    inner: Arc<Inner>,
}

struct Inner {
    db: PgPool,
    redis: RedisConn,
    keys: Keys,
    /// The one owner of the queues' storage: the control plane asks it, never reads its keys.
    engine: Engine,
    public_url: String,
    operator_emails: Vec<String>,
    sessions: SessionKeys,
    push_allow_private_networks: bool,
    database: DatabaseState,
    hosts: crate::hosts::HostsContext,
    /// `None` when billing is off (no `AQS_STRIPE_SECRET_KEY`).
    billing: Option<Billing>,
    /// The bound on password hashes at once (log-in, sign-up, password change).
    hashing: crate::hash_pool::HashPool,
}

impl ControlPlane {
    /// The control plane over `db` and `engine`, the process's one engine (its connection is the
    /// control plane's Redis too).
    pub async fn new(config: &Config, db: PgPool, engine: Engine) -> anyhow::Result<Self> {
        if config.session_secret.expose().len() < 32 {
            anyhow::bail!("AQS_SESSION_SECRET must be at least 32 characters");
        }
        Ok(Self {
            inner: Arc::new(Inner {
                db,
                redis: engine.conn(),
                engine,
                keys: Keys::new(&config.redis_namespace),
                public_url: config.public_url.trim_end_matches('/').to_owned(),
                operator_emails: config.operator_emails.clone(),
                sessions: SessionKeys::new(config.session_secret.expose().as_bytes()),
                push_allow_private_networks: config.push_allow_private_networks,
                database: DatabaseState::default(),
                hosts: crate::hosts::HostsContext::new(config)?,
                billing: Billing::from_config(config),
                hashing: crate::hash_pool::HashPool::sized_from_cores(),
            }),
        })
    }

    pub fn db(&self) -> &PgPool {
        &self.inner.db
    }

    /// A handle on the shared multiplexed connection (cloning it is cheap).
    pub fn redis(&self) -> RedisConn {
        self.inner.redis.clone()
    }

    pub fn keys(&self) -> &Keys {
        &self.inner.keys
    }

    /// The message engine, for what the control plane needs of a queue's storage.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The address users reach the service at, without a trailing slash.
    pub fn public_url(&self) -> &str {
        &self.inner.public_url
    }

    pub(crate) fn is_operator_email(&self, email: &str) -> bool {
        self.inner.operator_emails.iter().any(|e| e == email)
    }

    /// `AQS_PUSH_ALLOW_PRIVATE_NETWORKS`: handler URLs on private addresses pass registration.
    pub(crate) fn push_allow_private_networks(&self) -> bool {
        self.inner.push_allow_private_networks
    }

    /// Custom hosts: the DNS resolver, the ACME client and the reconciler's settings.
    pub fn hosts(&self) -> &crate::hosts::HostsContext {
        &self.inner.hosts
    }

    /// Starts this replica's custom-host reconciler (DNS checks, certificate orders and renewals);
    /// it ends when `shutdown` is cancelled.
    pub fn spawn_host_reconciler(&self, shutdown: tokio_util::sync::CancellationToken) -> tokio::task::JoinHandle<()> {
        crate::hosts::reconciler::spawn(self.clone(), shutdown)
    }

    /// Stripe, when billing is on.
    pub fn billing(&self) -> Option<&Billing> {
        self.inner.billing.as_ref()
    }

    /// The password-hashing slots; its [`stats`](crate::hash_pool::HashPool::stats) are what a
    /// burst of log-ins did.
    pub fn hashing(&self) -> &crate::hash_pool::HashPool {
        &self.inner.hashing
    }

    pub(crate) fn sessions(&self) -> &SessionKeys {
        &self.inner.sessions
    }

    pub(crate) fn database_state(&self) -> &DatabaseState {
        &self.inner.database
    }
}
