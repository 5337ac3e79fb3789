//! A DNS server the test controls: Debian's `pebble-challtestsrv` with only its DNS and management
//! listeners, on free ports, for the TXT records that prove a domain. It stops when dropped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct TestDns {
    /// The DNS port on 127.0.0.1 (what a test's `dns_servers` setting names).
    pub port: u16,
    management: u16,
    child: Child,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl TestDns {
    pub async fn start() -> Self {
        let (port, management) = (free_port(), free_port());
        let child = Command::new("pebble-challtestsrv")
            .args(["-defaultIPv4", "", "-defaultIPv6", "", "-http01", "", "-https01", "", "-tlsalpn01", ""])
            .args(["-dns01", &format!("127.0.0.1:{port}"), "-management", &format!("127.0.0.1:{management}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("pebble-challtestsrv must be installed (infra/test installs the pebble package)");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", management)).is_err() {
            assert!(Instant::now() < deadline, "pebble-challtestsrv did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Self { port, management, child }
    }

    /// `127.0.0.1:<port>`, as the `dns_servers` setting takes it.
    pub fn server(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Answers `value` for TXT queries of `host`.
    pub async fn set_txt(&self, host: &str, value: &str) {
        self.manage("set-txt", serde_json::json!({"host": format!("{host}."), "value": value})).await;
    }

    /// Stops answering TXT queries of `host`.
    pub async fn clear_txt(&self, host: &str) {
        self.manage("clear-txt", serde_json::json!({"host": format!("{host}.")})).await;
    }

    async fn manage(&self, path: &str, body: serde_json::Value) {
        let url = format!("http://127.0.0.1:{}/{path}", self.management);
        let response = reqwest::Client::new().post(url).body(body.to_string()).send().await.unwrap();
        assert!(response.status().is_success(), "challtestsrv {path}: {}", response.status());
    }
}

impl Drop for TestDns {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
