//! `DataPlane`: the shared state of every handler and background task.

use crate::cache::{AuthCache, CacheSizes};
use crate::last_use::LastUse;
use crate::push::deliver::PushClient;
use aqs_core::config::Config;
use aqs_core::keys::Keys;
use aqs_core::receipt::ReceiptCodec;
use aqs_engine::Engine;
use std::sync::{Arc, OnceLock};
use tokio_util::sync::CancellationToken;

/// The shared state behind one `Arc`: axum clones the state for every request, and one reference
/// count is cheaper than cloning each part (two of them are `String`s).
#[derive(Clone)]
pub struct DataPlane(Arc<Shared>);

impl std::ops::Deref for DataPlane {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

pub struct Shared {
    pub engine: Engine,
    pub(crate) receipts: ReceiptCodec,
    pub(crate) auth: Arc<AuthCache>,
    /// When each token's last use was written (`last_use.rs`).
    pub(crate) last_use: Arc<LastUse>,
    /// Who consumes each queue lately (`consumers.rs`).
    pub(crate) consumers: Arc<crate::consumers::Consumers>,
    /// The process's shutdown signal, once `spawn_background` has it: long polls answer at once
    /// when it fires instead of holding graceful shutdown for up to 20 s.
    pub(crate) shutdown: Arc<OnceLock<CancellationToken>>,
    /// The push dispatchers' HTTP client (SSRF guard on unless `push_allow_private_networks`).
    pub(crate) push: Arc<PushClient>,
    /// The custom hosts served by this replica (`hosts::table`), and the key that opens their
    /// certificates' keys.
    pub(crate) hosts: Arc<crate::hosts::table::HostTable>,
    pub(crate) cert_cipher: Option<aqs_core::cert_key::CertKeyCipher>,
}

/// What the console needs of a data plane: its engine.
impl From<DataPlane> for Engine {
    fn from(data: DataPlane) -> Self {
        data.engine.clone()
    }
}

impl DataPlane {
    /// The data plane over `engine`, the process's one engine (`aqs serve` loads its scripts when
    /// it runs the data role). Touches no store.
    pub fn new(config: &Config, engine: Engine) -> Self {
        let keys = Keys::new(&config.redis_namespace);
        Self(Arc::new(Shared {
            engine,
            receipts: ReceiptCodec::new(config.receipt_secret.expose().as_bytes()),
            auth: Arc::new(AuthCache::new(keys)),
            last_use: Arc::new(LastUse::default()),
            consumers: Arc::new(crate::consumers::Consumers::default()),
            shutdown: Arc::new(OnceLock::new()),
            push: Arc::new(PushClient::new(config.push_allow_private_networks)),
            hosts: Arc::new(crate::hosts::table::HostTable::default()),
            cert_cipher: config.cert_encryption_key.clone(),
        }))
    }

    /// How many entries the in-process caches and the last-use stamps hold: each has a bound
    /// (`CACHE_CAPACITY`, `LAST_USE_CAPACITY`) that hostile traffic cannot push it past.
    pub fn cache_sizes(&self) -> CacheSizes {
        CacheSizes { last_use: self.last_use.len(), ..self.auth.sizes() }
    }

    /// Writes this process's consumer tallies now (tests; the background task does it every
    /// few seconds).
    pub async fn flush_consumers(&self) {
        crate::consumers::flush(self).await;
    }

    /// True once the wake-up subscriber is listening (tests wait for it).
    pub fn is_listening(&self) -> bool {
        self.engine.waiters().is_listening()
    }
}
