//! A private NATS server with JetStream for one run: Debian's `nats-server` on a free port of
//! 127.0.0.1 (the machine's own server on 4222 is never used) with its store in a temporary
//! folder, stopped after its scenarios.

use super::process::{Owned, TempDir, free_port, wait_for_port};
use std::process::Command;
use std::time::Duration;

pub struct NatsServer {
    pub port: u16,
    server: Owned,
    _dir: TempDir,
}

impl NatsServer {
    /// Starts the server and waits until it accepts connections.
    pub async fn start() -> anyhow::Result<Self> {
        let dir = TempDir::new("aqs-bench-nats")?;
        let port = free_port()?;
        let mut command = Command::new("nats-server");
        command.current_dir(dir.path()).args([
            "-js",
            "-a",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-sd",
            &dir.path().join("store").to_string_lossy(),
        ]);
        let mut server = Owned::spawn("nats-server", command, &dir.path().join("server.log"))
            .map_err(|e| e.context("install Debian's nats-server (infra/bench does)"))?;
        wait_for_port(&mut server, port, Duration::from_secs(20)).await?;
        Ok(Self { port, server, _dir: dir })
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> Option<u32> {
        self.server.pid()
    }

    pub fn stop(mut self) {
        self.server.stop(Duration::from_secs(10));
    }
}

/// `nats-server --version`, e.g. `v2.9.10`.
pub fn version() -> Option<String> {
    let out = Command::new("nats-server").arg("--version").output().ok()?;
    String::from_utf8(out.stdout).ok()?.split_whitespace().last().map(str::to_owned)
}
