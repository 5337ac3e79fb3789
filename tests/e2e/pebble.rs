//! A local ACME server and DNS for custom-host tests: Debian's `pebble` (issuing real
//! certificates after real HTTP-01 validation against our plain listener) and
//! `pebble-challtestsrv` (the DNS server pebble and the reconciler both ask; a test sets its
//! records through the management API). Every port is free-picked, so tests run in parallel, each
//! with its own pair. Debian ships no certificate for pebble's own HTTPS listener: one is made here
//! under a throw-away CA, which the server trusts through `AQS_ACME_CA_FILE`.

use crate::harness::free_port;
use serde_json::json;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Dns {
    pub dns_port: u16,
    management: u16,
    child: Child,
    http: reqwest::Client,
}

impl Dns {
    pub async fn start() -> Self {
        let dns_port = free_port();
        let management = free_port();
        let child = Command::new("pebble-challtestsrv")
            .args(["-defaultIPv4", "", "-defaultIPv6", "", "-http01", "", "-https01", "", "-tlsalpn01", ""])
            .args(["-dns01", &format!("127.0.0.1:{dns_port}"), "-management", &format!("127.0.0.1:{management}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("pebble-challtestsrv must be installed (infra/test installs the pebble package)");
        let dns = Self { dns_port, management, child, http: reqwest::Client::new() };
        dns.wait_until_up().await;
        dns
    }

    async fn wait_until_up(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.http.get(format!("http://127.0.0.1:{}/", self.management)).send().await.is_err() {
            assert!(Instant::now() < deadline, "pebble-challtestsrv did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn server(&self) -> String {
        format!("127.0.0.1:{}", self.dns_port)
    }

    async fn call(&self, path: &str, body: serde_json::Value) {
        let response =
            self.http.post(format!("http://127.0.0.1:{}/{path}", self.management)).json(&body).send().await.unwrap();
        assert!(response.status().is_success(), "challtestsrv {path}: {}", response.status());
    }

    pub async fn set_cname(&self, host: &str, target: &str) {
        self.call("set-cname", json!({"host": format!("{host}."), "target": format!("{target}.")})).await;
    }

    pub async fn clear_cname(&self, host: &str) {
        self.call("clear-cname", json!({"host": format!("{host}.")})).await;
    }

    pub async fn add_a(&self, host: &str, ip: &str) {
        self.call("add-a", json!({"host": format!("{host}."), "addresses": [ip]})).await;
    }

    pub async fn clear_a(&self, host: &str) {
        self.call("clear-a", json!({"host": format!("{host}.")})).await;
    }

    /// Adds a value to the TXT record of `host` (the values already there stay).
    pub async fn set_txt(&self, host: &str, value: &str) {
        self.call("set-txt", json!({"host": format!("{host}."), "value": value})).await;
    }

    /// Removes every value of the TXT record of `host`.
    pub async fn clear_txt(&self, host: &str) {
        self.call("clear-txt", json!({"host": format!("{host}.")})).await;
    }
}

impl Drop for Dns {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The throw-away CA and the certificate of pebble's HTTPS listeners.
pub struct PebbleTls {
    dir: PathBuf,
}

impl PebbleTls {
    pub fn make() -> Self {
        let dir = std::env::temp_dir().join(format!("aqs-pebble-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name.push(rcgen::DnType::CommonName, "AQS test CA for pebble");
        let issuer = rcgen::CertifiedIssuer::self_signed(ca, ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        std::fs::write(dir.join("ca.pem"), issuer.as_ref().pem()).unwrap();
        std::fs::write(dir.join("cert.pem"), leaf.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
        Self { dir }
    }

    pub fn ca_file(&self) -> String {
        self.dir.join("ca.pem").display().to_string()
    }

    pub fn ca_pem(&self) -> Vec<u8> {
        std::fs::read(self.dir.join("ca.pem")).unwrap()
    }
}

impl Drop for PebbleTls {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A pebble ACME server validating HTTP-01 on `http_port` (our plain listener).
pub struct Pebble {
    pub port: u16,
    management: u16,
    child: Option<Child>,
    config: PathBuf,
    /// Pebble's log, of every start: a test counts the accounts it registered there.
    log: PathBuf,
    env_dns: String,
}

impl Pebble {
    /// The settings for `port`, without starting it (a test of an ACME outage starts it later).
    pub fn configure(tls: &PebbleTls, http_port: u16, dns: &Dns) -> Self {
        let port = free_port();
        let management = free_port();
        let config = tls.dir.join(format!("pebble-{port}.json"));
        let body = json!({"pebble": {
            "listenAddress": format!("127.0.0.1:{port}"),
            "managementListenAddress": format!("127.0.0.1:{management}"),
            "certificate": tls.dir.join("cert.pem"),
            "privateKey": tls.dir.join("key.pem"),
            "httpPort": http_port,
            "tlsPort": free_port(),
            "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
        }});
        std::fs::write(&config, body.to_string()).unwrap();
        let log = tls.dir.join(format!("pebble-{port}.log"));
        Self { port, management, child: None, config, log, env_dns: dns.server() }
    }

    pub fn directory_url(&self) -> String {
        format!("https://127.0.0.1:{}/dir", self.port)
    }

    pub async fn start(&mut self, tls: &PebbleTls) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log).unwrap();
        let child = Command::new("pebble")
            .arg("-config")
            .arg(&self.config)
            .args(["-dnsserver", &self.env_dns])
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("pebble must be installed (infra/test installs the pebble package)");
        self.child = Some(child);
        let http = self.client(tls);
        let deadline = Instant::now() + Duration::from_secs(15);
        while http.get(self.directory_url()).send().await.is_err() {
            assert!(Instant::now() < deadline, "pebble did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// How many accounts were registered with pebble so far (it logs a count after each one).
    pub fn registrations(&self) -> usize {
        std::fs::read_to_string(&self.log).unwrap_or_default().matches("accounts in memory").count()
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn client(&self, tls: &PebbleTls) -> reqwest::Client {
        reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(&tls.ca_pem()).unwrap())
            .build()
            .unwrap()
    }

    /// The root that issued every certificate of this run (pebble makes a new one per start).
    pub async fn issuing_root(&self, tls: &PebbleTls) -> reqwest::Certificate {
        let pem = self
            .client(tls)
            .get(format!("https://127.0.0.1:{}/roots/0", self.management))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        reqwest::Certificate::from_pem(&pem).unwrap()
    }
}

impl Drop for Pebble {
    fn drop(&mut self) {
        self.stop();
    }
}
