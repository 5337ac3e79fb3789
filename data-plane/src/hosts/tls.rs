//! The TLS side of custom hosts: a rustls server configuration whose certificate resolver picks
//! the certificate by SNI from the in-process `HostTable`, so a new or renewed certificate is
//! served on the next handshake, without a restart, on every replica. A name with no served
//! host gets no certificate (the handshake fails), as does a host whose certificate expired.

use super::table::HostTable;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::sync::Arc;

#[derive(Debug)]
struct SniResolver {
    hosts: Arc<HostTable>,
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let name = hello.server_name()?.trim_end_matches('.').to_ascii_lowercase();
        self.hosts.serving(&name)?.certified.clone()
    }
}

/// The server configuration of the TLS listener (`AQS_HTTPS_ADDR`): ring, TLS 1.2 and 1.3,
/// HTTP/1.1.
pub fn server_config(state: &crate::DataPlane) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(SniResolver { hosts: state.hosts.clone() }));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
