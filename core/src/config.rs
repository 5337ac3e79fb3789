//! Configuration, layered: defaults in the binary, then an optional TOML file (`AQS_CONFIG`), then
//! `AQS_…` environment variables. Validated at start-up with an error that names the bad setting;
//! secrets are `Secret`s and never print.

use crate::cert_key::CertKeyCipher;
use crate::config_values as parse;
pub use crate::config_values::{Role, Roles};
use crate::secret::Secret;
use anyhow::bail;
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// Unknown keys are refused: a TOML file's misspelt key names itself at start-up instead of being
/// ignored (unknown `AQS_…` variables only warn: environments carry others' variables too).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Address the HTTP listener binds (`AQS_HTTP_ADDR`).
    pub http_addr: SocketAddr,
    /// The address users reach this service at, shown in the console and in curl lines
    /// (`AQS_PUBLIC_URL`); defaults to `http://<http_addr>`.
    pub public_url: String,
    /// Comma-separated roles to run (`AQS_ROLES`): data, control, console.
    pub roles: Roles,
    /// PostgreSQL URL (`AQS_DATABASE_URL`); needed by the control and console roles.
    pub database_url: Secret,
    /// Redis URL, or comma-separated cluster seed URLs (`AQS_REDIS_URL`).
    #[serde(deserialize_with = "parse::secrets")]
    pub redis_url: Vec<Secret>,
    /// `host:port,...` of Redis Sentinels (`AQS_REDIS_SENTINELS`); with them `redis_url` is unused
    /// and the primary is the one the Sentinels name `redis_sentinel_master`.
    #[serde(deserialize_with = "parse::list")]
    pub redis_sentinels: Vec<String>,
    /// The name the Sentinels know the primary by (`AQS_REDIS_SENTINEL_MASTER`).
    pub redis_sentinel_master: String,
    /// PEM roots to trust for `rediss://` (`AQS_REDIS_CA_FILE`); empty: the system's roots.
    pub redis_ca_file: String,
    /// How many replicas of a queue's primary must have a write before its 2xx
    /// (`AQS_REDIS_REPLICA_ACKS`, Redis `WAIT`); 0: none are waited for.
    pub redis_replica_acks: u32,
    /// How long a write waits for those replicas before its `503 replication_timeout`
    /// (`AQS_REDIS_REPLICA_ACK_TIMEOUT_MS`).
    pub redis_replica_ack_timeout_ms: u64,
    /// On SIGTERM, how long `/readyz` answers 503 before the listeners close
    /// (`AQS_SHUTDOWN_DRAIN_SECONDS`), so that a load balancer stops sending first.
    pub shutdown_drain_seconds: u64,
    /// Prefix of every Redis key (`AQS_REDIS_NAMESPACE`), so environments can share a Redis.
    pub redis_namespace: String,
    /// Signs console and API session JWTs (`AQS_SESSION_SECRET`, at least 32 characters).
    pub session_secret: Secret,
    /// Signs receipts (`AQS_RECEIPT_SECRET`, at least 32 characters). Every data-plane replica
    /// must share it.
    pub receipt_secret: Secret,
    /// Emails granted the operator role at sign-up (`AQS_OPERATOR_EMAILS`, comma-separated).
    #[serde(deserialize_with = "parse::emails")]
    pub operator_emails: Vec<String>,
    /// Lets push handlers live on private, loopback and link-local addresses
    /// (`AQS_PUSH_ALLOW_PRIVATE_NETWORKS`); for local development and tests only.
    pub push_allow_private_networks: bool,
    /// tracing filter (`AQS_LOG`), e.g. `info` or `aqs=debug`.
    pub log: String,
    /// Custom hosts: the hostname members point their CNAME records at (`AQS_EDGE_HOSTNAME`).
    pub edge_hostname: String,
    /// The ACME directory that issues custom hosts' certificates (`AQS_ACME_DIRECTORY_URL`);
    /// empty: no certificates are ordered (hosts wait with a reason saying so).
    pub acme_directory_url: String,
    /// The contact of the ACME account (`AQS_ACME_CONTACT_EMAIL`), optional.
    pub acme_contact_email: String,
    /// A PEM file of roots to trust for the ACME server instead of the system's
    /// (`AQS_ACME_CA_FILE`), for a test ACME server such as pebble.
    pub acme_ca_file: String,
    /// DNS servers for the CNAME and TXT checks, `ip:port,...` (`AQS_DNS_SERVERS`); empty: the
    /// system resolver.
    #[serde(deserialize_with = "parse::addresses")]
    pub dns_servers: Vec<SocketAddr>,
    /// Address of the optional TLS listener serving custom hosts (`AQS_HTTPS_ADDR`); empty: none.
    #[serde(deserialize_with = "parse::optional_address")]
    pub https_addr: Option<SocketAddr>,
    /// Base64 of 32 bytes: the AES-256-GCM key that encrypts certificate keys at rest
    /// (`AQS_CERT_ENCRYPTION_KEY`); unset: none.
    #[serde(deserialize_with = "parse::cipher")]
    pub cert_encryption_key: Option<CertKeyCipher>,
    /// A certificate is renewed once this fraction of its lifetime remains
    /// (`AQS_CERT_RENEW_FRACTION`, default a third; 1 renews at every check, for tests).
    pub cert_renew_fraction: f64,
    /// How often an active host's DNS is checked again (`AQS_HOST_RECHECK_SECONDS`).
    pub host_recheck_seconds: u64,
    /// How often a verified domain's TXT record is checked again (`AQS_DOMAIN_RECHECK_SECONDS`):
    /// a domain whose proof is gone stops being verified.
    pub domain_recheck_seconds: u64,
    /// Stripe secret API key (`AQS_STRIPE_SECRET_KEY`). Unset: billing is off and payload add-ons
    /// are granted without charge.
    #[serde(default)]
    pub stripe_secret_key: Secret,
    /// Signs Stripe's webhook deliveries (`AQS_STRIPE_WEBHOOK_SECRET`, `whsec_…`).
    #[serde(default)]
    pub stripe_webhook_secret: Secret,
    /// Stripe's API origin (`AQS_STRIPE_API_BASE`); empty means `https://api.stripe.com`.
    #[serde(default)]
    pub stripe_api_base: String,
    /// Price ids of the monthly payload add-ons (`AQS_STRIPE_PRICE_PAYLOAD_10MIB`, `…_50MIB`).
    #[serde(default)]
    pub stripe_price_payload_10mib: String,
    #[serde(default)]
    pub stripe_price_payload_50mib: String,
    /// Address of the Prometheus scrape listener (`AQS_METRICS_ADDR`, `GET /metrics`); empty: none,
    /// and nothing is measured.
    #[serde(default, deserialize_with = "parse::optional_address")]
    pub metrics_addr: Option<SocketAddr>,
    /// What loading found worth a warning (unknown `AQS_…` variables), logged once tracing is up.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

#[derive(Serialize)]
struct Defaults {
    http_addr: &'static str,
    public_url: &'static str,
    roles: &'static str,
    database_url: &'static str,
    redis_url: &'static str,
    redis_sentinels: &'static str,
    redis_sentinel_master: &'static str,
    redis_ca_file: &'static str,
    redis_replica_acks: u32,
    redis_replica_ack_timeout_ms: u64,
    shutdown_drain_seconds: u64,
    redis_namespace: &'static str,
    session_secret: &'static str,
    receipt_secret: &'static str,
    operator_emails: &'static str,
    push_allow_private_networks: bool,
    log: &'static str,
    edge_hostname: &'static str,
    acme_directory_url: &'static str,
    acme_contact_email: &'static str,
    acme_ca_file: &'static str,
    dns_servers: &'static str,
    https_addr: &'static str,
    cert_encryption_key: &'static str,
    cert_renew_fraction: f64,
    host_recheck_seconds: u64,
    domain_recheck_seconds: u64,
}

const DEFAULTS: Defaults = Defaults {
    http_addr: "127.0.0.1:8080",
    public_url: "",
    roles: "data,control,console",
    database_url: "",
    redis_url: "",
    redis_sentinels: "",
    redis_sentinel_master: "aqs",
    redis_ca_file: "",
    redis_replica_acks: 0,
    redis_replica_ack_timeout_ms: 1000,
    shutdown_drain_seconds: 5,
    redis_namespace: "aqs",
    session_secret: "",
    receipt_secret: "",
    operator_emails: "",
    push_allow_private_networks: false,
    log: "info",
    edge_hostname: "edge.aqs.localhost",
    acme_directory_url: "",
    acme_contact_email: "",
    acme_ca_file: "",
    dns_servers: "",
    https_addr: "",
    cert_encryption_key: "",
    cert_renew_fraction: 1.0 / 3.0,
    host_recheck_seconds: 3600,
    domain_recheck_seconds: 3600,
};

/// `AQS_…` variables that belong to the clients (`AQS_URL`, `AQS_TOKEN…` of the SDK and the worker
/// runner), the scripts and the tests, not to the server: not warned about.
const IGNORED_PREFIXES: &[&str] = &[
    "url",
    "token",
    "queue",
    "test_",
    "state_dir",
    "bench_",
    "fuzz_",
    "pg_",
    "redis_appendfsync",
    "up_",
    "chrom",
    "settings",
];

impl Config {
    /// Loads defaults, then `AQS_CONFIG` (a TOML file) when set, then `AQS_…` variables.
    pub fn load() -> anyhow::Result<Self> {
        let mut figment = Figment::from(Serialized::defaults(DEFAULTS));
        if let Ok(path) = std::env::var("AQS_CONFIG") {
            if !std::path::Path::new(&path).exists() {
                bail!("AQS_CONFIG names {path}, which does not exist");
            }
            figment = figment.merge(Toml::file(path));
        }
        let mut warnings = Vec::new();
        for (name, _) in std::env::vars_os() {
            let Some(name) = name.to_str().and_then(|n| n.strip_prefix("AQS_")) else { continue };
            let key = name.to_lowercase();
            if key != "config"
                && !crate::settings::is_known(&key)
                && !IGNORED_PREFIXES.iter().any(|p| key.starts_with(p))
            {
                warnings
                    .push(format!("AQS_{name} is not a setting of aqs and is ignored (aqs serve --help lists them)"));
            }
        }
        figment =
            figment.merge(Env::prefixed("AQS_").filter(|key| crate::settings::is_known(&key.as_str().to_lowercase())));
        let mut config = Self::extract(figment)?;
        config.warnings = warnings;
        Ok(config)
    }

    /// Parses every setting into its type (`config_values.rs`), naming the one that is bad.
    fn extract(figment: Figment) -> anyhow::Result<Self> {
        let mut config: Config = figment.extract().map_err(|err| {
            let key = err.path.join(".");
            anyhow::anyhow!("invalid setting AQS_{}: {err}", key.to_uppercase())
        })?;
        if config.public_url.is_empty() {
            config.public_url = format!("http://{}", config.http_addr);
        }
        config.public_url = config.public_url.trim_end_matches('/').to_owned();
        Ok(config)
    }

    /// Checks what the chosen roles need, naming the first bad setting.
    pub fn validate(&self) -> anyhow::Result<()> {
        let roles = self.roles.as_slice();
        if self.redis_url.is_empty() && self.redis_sentinels.is_empty() {
            bail!("AQS_REDIS_URL is not set (nor AQS_REDIS_SENTINELS)");
        }
        if !self.redis_sentinels.is_empty() && self.redis_sentinel_master.trim().is_empty() {
            bail!("AQS_REDIS_SENTINEL_MASTER must not be empty with AQS_REDIS_SENTINELS");
        }
        if !self.redis_ca_file.is_empty() && !std::path::Path::new(&self.redis_ca_file).is_file() {
            bail!("AQS_REDIS_CA_FILE names {}, which is not a file", self.redis_ca_file);
        }
        if self.redis_replica_ack_timeout_ms == 0 {
            bail!("AQS_REDIS_REPLICA_ACK_TIMEOUT_MS must be at least 1");
        }
        if roles.iter().any(|r| matches!(r, Role::Control | Role::Console)) && self.database_url.is_empty() {
            bail!("AQS_DATABASE_URL is not set (the control and console roles need PostgreSQL)");
        }
        // Each secret is asked only of the roles that use it: sessions are signed by the control
        // plane and the console, receipts by the data plane.
        if roles.iter().any(|r| matches!(r, Role::Control | Role::Console)) && self.session_secret.expose().len() < 32 {
            bail!("AQS_SESSION_SECRET must be at least 32 characters");
        }
        if roles.contains(&Role::Data) && self.receipt_secret.expose().len() < 32 {
            bail!("AQS_RECEIPT_SECRET must be at least 32 characters");
        }
        if self.redis_namespace.is_empty() || self.redis_namespace.contains(['{', '}', ':', ' ']) {
            bail!("AQS_REDIS_NAMESPACE must be non-empty, without braces, colons or spaces");
        }
        if !(self.public_url.starts_with("http://") || self.public_url.starts_with("https://")) {
            bail!("AQS_PUBLIC_URL must start with http:// or https://");
        }
        self.validate_hosts()?;
        if !self.stripe_secret_key.is_empty() {
            for (name, value) in [
                ("AQS_STRIPE_WEBHOOK_SECRET", self.stripe_webhook_secret.expose()),
                ("AQS_STRIPE_PRICE_PAYLOAD_10MIB", &self.stripe_price_payload_10mib),
                ("AQS_STRIPE_PRICE_PAYLOAD_50MIB", &self.stripe_price_payload_50mib),
            ] {
                if value.is_empty() {
                    bail!("{name} is not set (AQS_STRIPE_SECRET_KEY turns billing on, which needs it)");
                }
            }
        }
        Ok(())
    }

    pub fn runs(&self, role: Role) -> bool {
        self.roles.runs(role)
    }

    /// Redis URLs: one for a single server, several for a cluster.
    pub fn redis_urls(&self) -> Vec<String> {
        self.redis_url.iter().map(|url| url.expose().to_owned()).collect()
    }

    /// Checks the custom-host settings.
    fn validate_hosts(&self) -> anyhow::Result<()> {
        if self.cert_encryption_key.is_none() && (!self.acme_directory_url.is_empty() || self.https_addr.is_some()) {
            bail!("AQS_CERT_ENCRYPTION_KEY is not set (custom hosts need it; base64 of 32 random bytes)");
        }
        if !(self.cert_renew_fraction > 0.0 && self.cert_renew_fraction <= 1.0) {
            bail!("AQS_CERT_RENEW_FRACTION must be above 0 and at most 1");
        }
        if self.edge_hostname.is_empty() {
            bail!("AQS_EDGE_HOSTNAME must not be empty");
        }
        Ok(())
    }

    /// A complete configuration for tests: every role, the given stores, fixed secrets.
    pub fn for_tests(database_url: &str, redis_url: &str, namespace: &str) -> Self {
        Self {
            http_addr: "127.0.0.1:0".parse().expect("literal address"),
            public_url: "http://127.0.0.1".into(),
            roles: Roles::all(),
            database_url: Secret::new(database_url),
            redis_url: redis_url.split(',').filter(|url| !url.is_empty()).map(Secret::new).collect(),
            redis_sentinels: Vec::new(),
            redis_sentinel_master: DEFAULTS.redis_sentinel_master.into(),
            redis_ca_file: String::new(),
            redis_replica_acks: 0,
            redis_replica_ack_timeout_ms: DEFAULTS.redis_replica_ack_timeout_ms,
            // Tests stop servers at once; production drains for the load balancer.
            shutdown_drain_seconds: 0,
            redis_namespace: namespace.into(),
            session_secret: Secret::new("test-session-secret-0123456789abcdef"),
            receipt_secret: Secret::new("test-receipt-secret-0123456789abcdef"),
            operator_emails: Vec::new(),
            push_allow_private_networks: true,
            log: "info".into(),
            edge_hostname: DEFAULTS.edge_hostname.into(),
            acme_directory_url: String::new(),
            acme_contact_email: String::new(),
            acme_ca_file: String::new(),
            dns_servers: Vec::new(),
            https_addr: None,
            cert_encryption_key: None,
            cert_renew_fraction: DEFAULTS.cert_renew_fraction,
            host_recheck_seconds: DEFAULTS.host_recheck_seconds,
            domain_recheck_seconds: DEFAULTS.domain_recheck_seconds,
            stripe_secret_key: Secret::default(),
            stripe_webhook_secret: Secret::default(),
            stripe_api_base: String::new(),
            stripe_price_payload_10mib: String::new(),
            stripe_price_payload_50mib: String::new(),
            metrics_addr: None,
            warnings: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_setting() {
        let mut config = Config::for_tests("postgres://x", "redis://x", "t");
        assert!(config.validate().is_ok());
        config.session_secret = Secret::new("short");
        assert!(config.validate().unwrap_err().to_string().contains("AQS_SESSION_SECRET"));
        config = Config::for_tests("", "redis://x", "t");
        assert!(config.validate().unwrap_err().to_string().contains("AQS_DATABASE_URL"));
        config = Config::for_tests("postgres://x", "redis://x", "t");
        config.roles = Roles::parse("data").unwrap();
        config.database_url = Secret::new("");
        assert!(config.validate().is_ok(), "the data role alone needs no PostgreSQL");
        config = Config::for_tests("postgres://x", "redis://x", "t");
        config.stripe_secret_key = Secret::new("sk_test_x");
        assert!(config.validate().unwrap_err().to_string().contains("AQS_STRIPE_WEBHOOK_SECRET"));
    }

    #[test]
    fn each_role_is_asked_only_for_what_it_uses() {
        let only = |roles: &str| {
            let mut config = Config::for_tests("", "redis://x", "t");
            config.roles = Roles::parse(roles).unwrap();
            config.session_secret = Secret::new("");
            config.receipt_secret = Secret::new("");
            config
        };
        let err = |config: &Config| config.validate().unwrap_err().to_string();

        let mut data = only("data");
        assert!(err(&data).contains("AQS_RECEIPT_SECRET"), "{}", err(&data));
        data.receipt_secret = Secret::new("r".repeat(32));
        assert!(data.validate().is_ok(), "the data role needs neither PostgreSQL nor the session secret");

        for role in ["control", "console"] {
            let mut config = only(role);
            assert!(err(&config).contains("AQS_DATABASE_URL"), "{role}: {}", err(&config));
            config.database_url = Secret::new("postgres://x");
            assert!(err(&config).contains("AQS_SESSION_SECRET"), "{role}: {}", err(&config));
            config.session_secret = Secret::new("s".repeat(32));
            assert!(config.validate().is_ok(), "{role} needs no receipt secret");
        }

        let mut all = only("data,control,console");
        all.database_url = Secret::new("postgres://x");
        all.session_secret = Secret::new("s".repeat(32));
        assert!(err(&all).contains("AQS_RECEIPT_SECRET"), "{}", err(&all));
    }

    /// What `load` makes of these settings over the defaults (`AQS_…` variables, by field name).
    fn loaded(settings: &[(&str, &str)]) -> anyhow::Result<Config> {
        let mut figment = Figment::from(Serialized::defaults(DEFAULTS));
        for (name, value) in settings {
            figment = figment.merge((*name, *value));
        }
        Config::extract(figment)
    }

    #[test]
    fn settings_are_parsed_into_their_types_once_naming_a_bad_one() {
        let config = loaded(&[
            ("roles", "data, console"),
            ("redis_url", "redis://a:1, redis://b:2"),
            ("metrics_addr", "127.0.0.1:9464"),
            ("operator_emails", "Ops@Example.com"),
        ])
        .unwrap();
        assert!(config.runs(Role::Console) && !config.runs(Role::Control));
        assert_eq!(config.redis_urls(), ["redis://a:1", "redis://b:2"]);
        assert_eq!(config.metrics_addr, Some("127.0.0.1:9464".parse().unwrap()));
        assert_eq!(config.operator_emails, ["ops@example.com"]);
        let defaults = loaded(&[]).unwrap();
        assert_eq!((defaults.metrics_addr, defaults.https_addr), (None, None), "off unless an address is given");
        assert!(defaults.cert_encryption_key.is_none() && defaults.dns_servers.is_empty());
        for (name, value, setting) in [
            ("roles", "data,bogus", "AQS_ROLES"),
            ("roles", "", "AQS_ROLES"),
            ("metrics_addr", "9464", "AQS_METRICS_ADDR"),
            ("https_addr", "localhost", "AQS_HTTPS_ADDR"),
            ("dns_servers", "10.0.0.1", "AQS_DNS_SERVERS"),
            ("cert_encryption_key", "c2hvcnQ=", "AQS_CERT_ENCRYPTION_KEY"),
        ] {
            let err = loaded(&[(name, value)]).unwrap_err().to_string();
            assert!(err.contains(setting), "{name}={value}: {err}");
        }
    }

    /// The names serde knows `Config` by: its `deserialize_struct` call lists every field.
    fn config_fields() -> Vec<&'static str> {
        struct Fields(Vec<&'static str>);
        impl<'de> serde::Deserializer<'de> for &mut Fields {
            type Error = serde::de::value::Error;
            fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
                Err(serde::de::Error::custom("only structs"))
            }
            fn deserialize_struct<V: serde::de::Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, Self::Error> {
                self.0 = fields.to_vec();
                Err(serde::de::Error::custom("fields read"))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
                unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
            }
        }
        let mut fields = Fields(Vec::new());
        assert!(Config::deserialize(&mut fields).is_err());
        fields.0
    }

    #[test]
    fn every_setting_is_in_the_table_and_only_those() {
        let mut fields = config_fields();
        let mut table: Vec<&str> = crate::settings::SETTINGS.iter().map(|s| s.name).collect();
        fields.sort_unstable();
        table.sort_unstable();
        assert_eq!(fields, table, "core/src/settings.rs must list exactly the fields of Config");
        let help = crate::settings::help();
        assert!(help.contains("AQS_REDIS_REPLICA_ACK_TIMEOUT_MS") && help.contains("[default: 1000]"), "{help}");
    }

    #[test]
    fn debug_hides_secrets() {
        let config = Config::for_tests("postgres://user:pw@host/db", "redis://x", "t");
        assert!(!format!("{config:?}").contains("pw@host"));
    }
}
