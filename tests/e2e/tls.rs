//! TLS to the stores: a Redis that speaks only TLS (`--tls-port`, `rediss://`) and a PostgreSQL
//! that takes only TLS connections (`ssl = on`, `hostssl` alone in pg_hba.conf), both with
//! certificates of a test CA. The service runs through both with `AQS_REDIS_CA_FILE` and
//! `sslmode=verify-full&sslrootcert=`, and refuses either server when given another CA.

use crate::harness::{Server, Tenant, free_port};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A test CA, a server certificate it signed for `localhost` and 127.0.0.1, and another CA.
struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn make() -> Self {
        let dir = std::env::temp_dir().join(format!("aqs-tls-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca = |name: &str| {
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            params.distinguished_name.push(rcgen::DnType::CommonName, name);
            rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap()
        };
        let issuer = ca("AQS test CA for the stores");
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        std::fs::write(dir.join("ca.pem"), issuer.as_ref().pem()).unwrap();
        std::fs::write(dir.join("wrong-ca.pem"), ca("Some other CA").as_ref().pem()).unwrap();
        std::fs::write(dir.join("server.crt"), leaf.pem()).unwrap();
        std::fs::write(dir.join("server.key"), key.serialize_pem()).unwrap();
        Self { dir }
    }

    fn file(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

/// A Redis listening only on a TLS port.
struct TlsRedis {
    port: u16,
    child: std::process::Child,
    dir: PathBuf,
}

impl TlsRedis {
    fn start(pki: &Pki) -> Self {
        let port = free_port();
        let dir = pki.dir.join("redis");
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new("redis-server")
            .args(["--port", "0", "--tls-port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--tls-cert-file", &pki.file("server.crt"), "--tls-key-file", &pki.file("server.key")])
            .args(["--tls-ca-cert-file", &pki.file("ca.pem"), "--tls-auth-clients", "no"])
            .args(["--appendonly", "yes", "--maxmemory-policy", "noeviction", "--save", ""])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server");
        let redis = Self { port, child, dir };
        wait_for_port(port);
        redis
    }

    fn url(&self) -> String {
        format!("rediss://localhost:{}", self.port)
    }
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A private PostgreSQL that accepts TCP connections over TLS only.
struct TlsPostgres {
    port: u16,
    data: PathBuf,
}

/// PostgreSQL's programs, newest version installed.
fn pg_bin(program: &str) -> PathBuf {
    let mut versions: Vec<PathBuf> =
        std::fs::read_dir("/usr/lib/postgresql").expect("PostgreSQL is installed").map(|e| e.unwrap().path()).collect();
    versions.sort_by_key(|path| path.file_name().and_then(|n| n.to_str()?.parse::<u32>().ok()));
    versions.last().unwrap().join("bin").join(program)
}

/// Runs `program` as the postgres user when this is root (PostgreSQL refuses to run as root).
fn as_postgres(program: &Path) -> Command {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if root {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

impl TlsPostgres {
    fn start(pki: &Pki) -> Self {
        let dir = pki.dir.join("postgres");
        std::fs::create_dir_all(&dir).unwrap();
        // The postgres user must reach its folder; the key must be its own and private.
        Command::new("chmod").args(["755", &pki.dir.display().to_string()]).status().unwrap();
        Command::new("chown").arg("postgres").arg(&dir).status().ok();
        let data = dir.join("data");
        let initdb = as_postgres(&pg_bin("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "--no-sync"])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(initdb.success(), "initdb failed");
        for file in ["server.crt", "server.key"] {
            std::fs::copy(pki.dir.join(file), data.join(file)).unwrap();
            Command::new("chown").arg("postgres").arg(data.join(file)).status().ok();
            Command::new("chmod").arg("600").arg(data.join(file)).status().unwrap();
        }
        std::fs::write(data.join("pg_hba.conf"), "local all all trust\nhostssl all all 127.0.0.1/32 trust\n").unwrap();
        let port = free_port();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c ssl=on -c ssl_cert_file=server.crt \
             -c ssl_key_file=server.key -c fsync=off",
            dir.display()
        );
        let started = as_postgres(&pg_bin("pg_ctl"))
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(dir.join("log"))
            .args(["-w", "-o", &options, "start"])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(started.success(), "PostgreSQL with ssl=on did not start; see {}", dir.join("log").display());
        Self { port, data }
    }

    fn url(&self, ca: &str) -> String {
        format!("postgres://postgres@localhost:{}/postgres?sslmode=verify-full&sslrootcert={ca}", self.port)
    }
}

impl Drop for TlsPostgres {
    fn drop(&mut self) {
        as_postgres(&pg_bin("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .status()
            .ok();
    }
}

/// `aqs <args>` with these settings only; its exit status and everything it printed.
fn aqs(args: &[&str], envs: &[(&str, String)]) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_aqs"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("AQS_")) {
        cmd.env_remove(key);
    }
    cmd.args(args).env("AQS_HTTP_ADDR", format!("127.0.0.1:{}", free_port())).env("AQS_LOG", "warn");
    cmd.env("AQS_SESSION_SECRET", "tls-session-secret-0123456789abcdefghij");
    cmd.env("AQS_RECEIPT_SECRET", "tls-receipt-secret-0123456789abcdefghij");
    cmd.envs(envs.iter().map(|(k, v)| (*k, v.as_str())));
    let output = cmd.stdin(Stdio::null()).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_runs_over_tls_to_both_stores_and_refuses_a_server_of_another_ca() {
    let pki = Pki::make();
    let redis = TlsRedis::start(&pki);
    let postgres = TlsPostgres::start(&pki);
    let (ca, wrong) = (pki.file("ca.pem"), pki.file("wrong-ca.pem"));

    // Through both: migrations, sign-up, a queue, a message published and received.
    let server = Server::start_with_env(
        &postgres.url(&ca),
        &redis.url(),
        &aqs_testkit::namespace(),
        &[("AQS_REDIS_CA_FILE", &ca)],
    )
    .await;
    let ready: serde_json::Value =
        reqwest::get(format!("{}/readyz", server.base())).await.unwrap().json().await.unwrap();
    assert_eq!(ready["ok"], true, "{ready}");
    let tenant = Tenant::sign_up(&server, json!({"name": "over-tls"})).await;
    let (status, _) = tenant.publish("\"through TLS\"").await;
    assert_eq!(status, 201);
    let received = tenant.consume(1, 5, 30).await;
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].1, "\"through TLS\"");
    drop(server);

    // Redis's certificate under another CA: refused at start-up, saying why.
    let (started, output) = aqs(
        &["serve"],
        &[("AQS_ROLES", "data".into()), ("AQS_REDIS_URL", redis.url()), ("AQS_REDIS_CA_FILE", wrong.clone())],
    );
    assert!(!started, "a Redis whose certificate the CA did not sign must be refused");
    assert!(output.to_lowercase().contains("certificate"), "{output}");

    // PostgreSQL's certificate under another CA: refused.
    let (migrated, output) = aqs(&["migrate"], &[("AQS_DATABASE_URL", postgres.url(&wrong))]);
    assert!(!migrated, "a PostgreSQL whose certificate the CA did not sign must be refused");
    assert!(output.to_lowercase().contains("certificate"), "{output}");

    // And without TLS the PostgreSQL here takes no connection at all: the first run used TLS.
    let plain = format!("postgres://postgres@localhost:{}/postgres?sslmode=disable", postgres.port);
    let (migrated, output) = aqs(&["migrate"], &[("AQS_DATABASE_URL", plain)]);
    assert!(!migrated && output.contains("no encryption"), "{output}");
}
