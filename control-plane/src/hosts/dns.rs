//! DNS checks through a real resolver (hickory): the CNAME of a custom host and the TXT record
//! that proves a domain. Pointed at `AQS_DNS_SERVERS` when set, else the system's resolver.
//! Answers are cached a few seconds at most, so a record the member just created is seen on the
//! next check.

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::{RData, RecordType};
use std::net::SocketAddr;
use std::time::Duration;

/// What the CNAME check found for a hostname.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CnameCheck {
    /// A CNAME to the edge hostname.
    PointsAtEdge,
    /// A CNAME to somewhere else.
    WrongTarget(String),
    /// No CNAME, but A/AAAA records: most likely a proxied record.
    AddressesInstead,
    /// Nothing yet.
    Missing,
    /// The resolver itself failed (timeout, refused): says nothing about the record.
    LookupFailed(String),
}

pub struct Dns {
    resolver: TokioResolver,
}

impl Dns {
    pub fn new(servers: &[SocketAddr]) -> anyhow::Result<Self> {
        let mut builder = if servers.is_empty() {
            TokioResolver::builder_tokio().unwrap_or_else(|err| {
                // Not fatal to the control plane: every check then fails with a reason saying so.
                tracing::warn!(error = %err, "cannot read the system's DNS settings; set AQS_DNS_SERVERS");
                TokioResolver::builder_with_config(
                    ResolverConfig::from_name_servers(Vec::new()),
                    TokioRuntimeProvider::default(),
                )
            })
        } else {
            let name_servers = servers
                .iter()
                .map(|server| {
                    let mut ns = NameServerConfig::udp_and_tcp(server.ip());
                    for connection in &mut ns.connections {
                        connection.port = server.port();
                    }
                    ns
                })
                .collect();
            TokioResolver::builder_with_config(
                ResolverConfig::from_name_servers(name_servers),
                TokioRuntimeProvider::default(),
            )
        };
        let options = builder.options_mut();
        options.positive_max_ttl = Some(Duration::from_secs(5));
        options.negative_max_ttl = Some(Duration::from_secs(2));
        options.timeout = Duration::from_secs(3);
        options.attempts = 2;
        Ok(Self { resolver: builder.build()? })
    }

    /// Whether `hostname` has a CNAME to `edge` (names compared without case or trailing dot).
    pub async fn check_cname(&self, hostname: &str, edge: &str) -> CnameCheck {
        let fqdn = format!("{hostname}.");
        match self.resolver.lookup(fqdn.as_str(), RecordType::CNAME).await {
            Ok(lookup) => {
                let targets: Vec<String> = lookup
                    .answers()
                    .iter()
                    .filter(|r| r.name.to_ascii().trim_end_matches('.').eq_ignore_ascii_case(hostname))
                    .filter_map(|r| match &r.data {
                        RData::CNAME(cname) => Some(cname.0.to_ascii().trim_end_matches('.').to_ascii_lowercase()),
                        _ => None,
                    })
                    .collect();
                match targets.first() {
                    Some(target) if target.eq_ignore_ascii_case(edge) => return CnameCheck::PointsAtEdge,
                    Some(target) => return CnameCheck::WrongTarget(target.clone()),
                    None => {}
                }
            }
            Err(err) if err.is_no_records_found() || err.is_nx_domain() => {}
            Err(err) => return CnameCheck::LookupFailed(err.to_string()),
        }
        for record_type in [RecordType::A, RecordType::AAAA] {
            match self.resolver.lookup(fqdn.as_str(), record_type).await {
                Ok(lookup) if lookup.answers().iter().any(|r| r.record_type() == record_type) => {
                    return CnameCheck::AddressesInstead;
                }
                Ok(_) => {}
                Err(err) if err.is_no_records_found() || err.is_nx_domain() => {}
                Err(err) => return CnameCheck::LookupFailed(err.to_string()),
            }
        }
        CnameCheck::Missing
    }

    /// The TXT values at `name`; empty when there are none. `Err` when the resolver failed.
    pub async fn txt_values(&self, name: &str) -> Result<Vec<String>, String> {
        match self.resolver.lookup(format!("{name}.").as_str(), RecordType::TXT).await {
            Ok(lookup) => Ok(lookup
                .answers()
                .iter()
                .filter_map(|r| match &r.data {
                    RData::TXT(txt) => {
                        Some(txt.txt_data.iter().map(|part| String::from_utf8_lossy(part).into_owned()).collect())
                    }
                    _ => None,
                })
                .collect()),
            Err(err) if err.is_no_records_found() || err.is_nx_domain() => Ok(Vec::new()),
            Err(err) => Err(err.to_string()),
        }
    }
}
