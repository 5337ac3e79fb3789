//! Every setting `aqs` reads, named once: its default, which roles need it and what it means.
//! `aqs serve --help` prints this table, `Config::load` warns about `AQS_…` variables that are not
//! in it (a misspelt name would otherwise be ignored without a word), and a test holds the
//! packaged `/etc/aqs/aqs.toml` to it so the example file documents every setting.

/// One setting: `name` is the TOML key; the environment variable is `AQS_` + its upper case.
pub struct Setting {
    pub name: &'static str,
    /// As written in the TOML file or the environment; empty means unset.
    pub default: &'static str,
    /// Who must set it: empty when the default will do.
    pub required: &'static str,
    pub meaning: &'static str,
}

const fn setting(name: &'static str, default: &'static str, required: &'static str, meaning: &'static str) -> Setting {
    Setting { name, default, required, meaning }
}

pub const SETTINGS: &[Setting] = &[
    setting("http_addr", "127.0.0.1:8080", "", "the HTTP listener's address"),
    setting("public_url", "http://<http_addr>", "", "the address users reach, shown in the console and answers"),
    setting("roles", "data,control,console", "", "roles this process runs"),
    setting(
        "database_url",
        "",
        "control, console",
        "PostgreSQL URL (sslmode=require / verify-full with sslrootcert= for TLS)",
    ),
    setting(
        "redis_url",
        "",
        "unless redis_sentinels",
        "Redis URL (rediss:// for TLS); several comma-separated URLs are a Redis Cluster's seeds",
    ),
    setting(
        "redis_sentinels",
        "",
        "",
        "host:port,... of Redis Sentinels that name the primary; redis_url is then unused",
    ),
    setting("redis_sentinel_master", "aqs", "", "the primary's name at the Sentinels"),
    setting("redis_ca_file", "", "", "PEM roots for rediss:// (Redis, Sentinels, Cluster nodes); empty: the system's"),
    setting("redis_replica_acks", "0", "", "replicas of the queue's primary that must have a write before its 2xx"),
    setting(
        "redis_replica_ack_timeout_ms",
        "1000",
        "",
        "how long a write waits for them before 503 replication_timeout",
    ),
    setting("redis_namespace", "aqs", "", "prefix of every Redis key"),
    setting(
        "session_secret",
        "",
        "control, console",
        "signs sessions; at least 32 characters, shared by those replicas",
    ),
    setting("receipt_secret", "", "data", "signs receipts; at least 32 characters, shared by every data replica"),
    setting("operator_emails", "", "", "comma-separated emails granted the operator role at sign-up"),
    setting(
        "push_allow_private_networks",
        "false",
        "",
        "let push handlers live on private or loopback addresses (development only)",
    ),
    setting("log", "info", "", "log filter, e.g. info or aqs=debug,info"),
    setting("shutdown_drain_seconds", "5", "", "on SIGTERM, /readyz answers 503 this long before the listeners close"),
    setting("metrics_addr", "", "", "address of the Prometheus scrape listener (GET /metrics); empty: off"),
    setting("edge_hostname", "edge.aqs.localhost", "", "the name custom hosts point their CNAME at"),
    setting("https_addr", "", "", "the TLS listener serving custom hosts; empty: none"),
    setting("acme_directory_url", "", "", "the ACME directory that issues custom hosts' certificates; empty: none"),
    setting("acme_contact_email", "", "", "the ACME account's contact"),
    setting("acme_ca_file", "", "", "PEM roots to trust for the ACME server instead of the system's"),
    setting("dns_servers", "", "", "ip:port,... resolvers for the CNAME and TXT checks; empty: the system's"),
    setting(
        "cert_encryption_key",
        "",
        "with https_addr or acme_directory_url",
        "base64 of 32 bytes: encrypts certificate keys at rest",
    ),
    setting("cert_renew_fraction", "0.333", "", "renew a certificate once this fraction of its lifetime remains"),
    setting("host_recheck_seconds", "3600", "", "how often an active host's DNS is checked again"),
    setting("domain_recheck_seconds", "3600", "", "how often a verified domain's TXT record is checked again"),
    setting("stripe_secret_key", "", "", "Stripe secret key; unset, billing is off"),
    setting("stripe_webhook_secret", "", "with stripe_secret_key", "signing secret of the Stripe webhook endpoint"),
    setting("stripe_api_base", "https://api.stripe.com", "", "Stripe's API origin"),
    setting(
        "stripe_price_payload_10mib",
        "",
        "with stripe_secret_key",
        "price id of the monthly 10 MiB payload add-on",
    ),
    setting(
        "stripe_price_payload_50mib",
        "",
        "with stripe_secret_key",
        "price id of the monthly 50 MiB payload add-on",
    ),
];

/// Whether `name` (a TOML key: lower case, without `AQS_`) is a setting.
pub fn is_known(name: &str) -> bool {
    SETTINGS.iter().any(|s| s.name == name)
}

/// The table as `aqs serve --help` prints it.
pub fn help() -> String {
    let width = SETTINGS.iter().map(|s| s.name.len()).max().unwrap_or(0) + 4;
    let mut text = String::from(
        "Settings: defaults, then the TOML file AQS_CONFIG names (keys as below), then AQS_* variables.\n\n",
    );
    for s in SETTINGS {
        let env = format!("AQS_{}", s.name.to_uppercase());
        let mut line = format!("  {env:<width$} {}", s.meaning);
        if !s.default.is_empty() {
            line.push_str(&format!(" [default: {}]", s.default));
        }
        if !s.required.is_empty() {
            line.push_str(&format!(" [required: {}]", s.required));
        }
        text.push_str(&line);
        text.push('\n');
    }
    text.push_str(&format!("  {:<width$} path of the optional TOML settings file\n", "AQS_CONFIG"));
    text
}
