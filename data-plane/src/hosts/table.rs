//! `HostTable`: the custom hosts this replica serves, in process, so that routing by `Host` and
//! picking a certificate by SNI cost no Redis round trip. It is a snapshot of the projection's
//! `NS:hosts` hash, reloaded whole when the control plane announces a change on
//! `NS:hosts:changed`, and every few seconds in case an announcement was missed (the subscriber
//! was reconnecting). Certificates are parsed and their keys decrypted once per reload.

use crate::state::DataPlane;
use aqs_core::cert_key::CertKeyCipher;
use aqs_core::ids::QueueId;
use aqs_core::projection::HostRecord;
use aqs_core::time::now_ms;
use futures_util::StreamExt;
use rustls::sign::CertifiedKey;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How often the table is reloaded without an announcement.
const RELOAD_EVERY: Duration = Duration::from_secs(5);

/// One served host.
#[derive(Debug)]
pub struct ServedHost {
    pub queue: QueueId,
    pub not_after_ms: u64,
    /// `None` when the certificate or key could not be read (logged at reload): plain HTTP still
    /// routes, TLS handshakes for it fail.
    pub certified: Option<Arc<CertifiedKey>>,
}

impl ServedHost {
    /// A host is served until its certificate expires, whatever its DNS says meanwhile.
    pub fn is_serving(&self, now_ms: u64) -> bool {
        now_ms < self.not_after_ms
    }
}

#[derive(Debug, Default)]
pub struct HostTable {
    hosts: RwLock<Arc<HashMap<String, Arc<ServedHost>>>>,
}

impl HostTable {
    /// The host named `name` (normalised: lowercase, no port) while its certificate is valid.
    pub fn serving(&self, name: &str) -> Option<Arc<ServedHost>> {
        let hosts = self.hosts.read().expect("host table lock");
        if hosts.is_empty() {
            return None;
        }
        hosts.get(name).filter(|h| h.is_serving(now_ms())).cloned()
    }

    /// Whether `name` (normalised) is a projected custom host, its certificate expired or not: the
    /// plain listener serves such a name nothing but challenge answers and redirects.
    pub fn is_custom(&self, name: &str) -> bool {
        self.hosts.read().expect("host table lock").contains_key(name)
    }

    fn replace(&self, hosts: HashMap<String, Arc<ServedHost>>) {
        *self.hosts.write().expect("host table lock") = Arc::new(hosts);
    }

    /// Reads the whole projection and swaps it in.
    pub async fn reload(&self, state: &DataPlane) -> redis::RedisResult<usize> {
        let mut conn = state.engine.conn();
        let fields: HashMap<String, String> =
            redis::cmd("HGETALL").arg(state.engine.keys().hosts()).query_async(&mut conn).await?;
        let cipher = state.cert_cipher.as_ref();
        let hosts: HashMap<String, Arc<ServedHost>> = fields
            .into_iter()
            .filter_map(|(name, json)| {
                let Some(record) = HostRecord::from_json(&json) else {
                    tracing::warn!(host = %name, "unreadable custom host record; skipped");
                    return None;
                };
                let certified = certified_key(&record, cipher)
                    .inspect_err(|err| tracing::warn!(host = %name, error = %err, "cannot load the host's certificate"))
                    .ok()
                    .map(Arc::new);
                Some((name, Arc::new(ServedHost { queue: record.queue, not_after_ms: record.not_after_ms, certified })))
            })
            .collect();
        let count = hosts.len();
        self.replace(hosts);
        Ok(count)
    }
}

fn certified_key(record: &HostRecord, cipher: Option<&CertKeyCipher>) -> anyhow::Result<CertifiedKey> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let cipher = cipher.ok_or_else(|| anyhow::anyhow!("AQS_CERT_ENCRYPTION_KEY is not set"))?;
    let key_pem = cipher.decrypt(&record.key_encrypted)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem)?;
    let chain = CertificateDer::pem_slice_iter(record.cert_pem.as_bytes()).collect::<Result<Vec<_>, _>>()?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&key)?;
    Ok(CertifiedKey::new(chain, signer))
}

/// Keeps the table in step with the projection until `shutdown`.
pub fn spawn_sync(state: &DataPlane, shutdown: CancellationToken) -> JoinHandle<()> {
    let state = state.clone();
    tokio::spawn(async move {
        loop {
            if let Err(err) = follow(&state, &shutdown).await {
                tracing::debug!(error = %err, "custom host subscriber disconnected; reloading by timer");
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    })
}

/// Subscribes to the announcements, reloads on each one and on a timer.
async fn follow(state: &DataPlane, shutdown: &CancellationToken) -> anyhow::Result<()> {
    let reload = async || {
        if let Err(err) = state.hosts.reload(state).await {
            tracing::warn!(error = %err, "cannot reload the custom hosts");
        }
    };
    let subscribed = async {
        let client = state.engine.conn().subscriber();
        let mut pubsub = tokio::time::timeout(Duration::from_secs(2), client.get_async_pubsub()).await??;
        pubsub.subscribe(state.engine.keys().hosts_changed()).await?;
        anyhow::Ok(pubsub)
    }
    .await;
    // Whatever changed before the subscription is read now.
    reload().await;
    let mut pubsub = match subscribed {
        Ok(pubsub) => pubsub,
        Err(err) => {
            // Without announcements, the timer alone keeps the table fresh until we reconnect.
            tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                () = tokio::time::sleep(RELOAD_EVERY) => return Err(err),
            }
        }
    };
    let mut messages = pubsub.on_message();
    let mut timer = tokio::time::interval(RELOAD_EVERY);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            message = messages.next() => match message {
                Some(_) => reload().await,
                None => anyhow::bail!("the subscription stream ended"),
            },
            _ = timer.tick() => reload().await,
        }
    }
}
