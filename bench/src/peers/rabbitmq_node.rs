//! A private RabbitMQ node for one run: Debian's `rabbitmq-server` started from its own script
//! (`/usr/lib/rabbitmq/bin/rabbitmq-server`, not the service wrapper) with its own node name,
//! AMQP and distribution ports, epmd port, data, log and config folders, `HOME` and Erlang
//! cookie, all under a temporary folder, and no plugins. The machine's own RabbitMQ (5672) and
//! epmd (4369) are never used: every port here is picked free, and the environment file of the
//! system install is replaced by an empty one.

use super::process::{Owned, TempDir, free_port, wait_for_port};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

const SERVER: &str = "/usr/lib/rabbitmq/bin/rabbitmq-server";

pub struct RabbitmqNode {
    pub amqp_port: u16,
    /// The node's Erlang VM (its RSS is the memory figure), once it has booted.
    pub beam_pid: u32,
    node: Owned,
    epmd: Owned,
    dir: TempDir,
}

impl RabbitmqNode {
    /// Starts the node and waits until it accepts AMQP connections.
    pub async fn start() -> anyhow::Result<Self> {
        anyhow::ensure!(
            std::path::Path::new(SERVER).exists(),
            "{SERVER} not found: install Debian's rabbitmq-server (infra/bench does)"
        );
        let dir = TempDir::new("aqs-bench-rabbitmq")?;
        let d = dir.path().to_owned();
        let (amqp_port, dist_port, epmd_port) = (free_port()?, free_port()?, free_port()?);
        for sub in ["mnesia", "log", "home"] {
            std::fs::create_dir_all(d.join(sub))?;
        }
        std::fs::write(d.join("rabbitmq-env.conf"), "")?;
        std::fs::write(d.join("enabled_plugins"), "[].\n")?;
        std::fs::write(
            d.join("rabbitmq.conf"),
            format!("listeners.tcp.1 = 127.0.0.1:{amqp_port}\nlog.file.level = warning\nlog.console = false\n"),
        )?;

        // Our own epmd, so the node registers nowhere near the system one; erl finds it on the port.
        let mut epmd = Command::new("epmd");
        epmd.args(["-port", &epmd_port.to_string(), "-address", "127.0.0.1"]);
        let mut epmd = Owned::spawn("epmd", epmd, &d.join("log/epmd.log"))?;
        wait_for_port(&mut epmd, epmd_port, Duration::from_secs(10)).await?;

        let node_name = format!("aqsbench{amqp_port}@localhost");
        let mut command = Command::new(SERVER);
        command
            .current_dir(&d)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", d.join("home"))
            .env("LANG", "C.UTF-8")
            .env("RABBITMQ_CONF_ENV_FILE", d.join("rabbitmq-env.conf"))
            .env("RABBITMQ_CONFIG_FILE", d.join("rabbitmq.conf"))
            .env("RABBITMQ_ADVANCED_CONFIG_FILE", d.join("advanced.config"))
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", d.join("enabled_plugins"))
            .env("RABBITMQ_MNESIA_BASE", d.join("mnesia"))
            .env("RABBITMQ_LOG_BASE", d.join("log"))
            .env("RABBITMQ_PID_FILE", d.join("beam.pid"))
            .env("RABBITMQ_NODENAME", &node_name)
            .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
            .env("RABBITMQ_NODE_PORT", amqp_port.to_string())
            .env("RABBITMQ_DIST_PORT", dist_port.to_string())
            .env("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", "-kernel inet_dist_use_interface {127,0,0,1}")
            .env("ERL_EPMD_PORT", epmd_port.to_string())
            .env("ERL_EPMD_ADDRESS", "127.0.0.1")
            // A node stopped by signal must not leave a crash dump behind.
            .env("ERL_CRASH_DUMP_SECONDS", "0");
        let mut node = Owned::spawn("rabbitmq-server", command, &d.join("log/server.out"))?;
        let started = wait_for_port(&mut node, amqp_port, Duration::from_secs(90)).await;
        if let Err(err) = started {
            return Err(err.context(log_tail(&d.join("log/server.out"))));
        }
        let beam_pid = read_pid(&d.join("beam.pid"), Duration::from_secs(10)).await?;
        Ok(Self { amqp_port, beam_pid, node, epmd, dir })
    }

    pub fn uri(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/%2f", self.amqp_port)
    }

    pub fn folder(&self) -> PathBuf {
        self.dir.path().to_owned()
    }

    /// Stops the node (a clean shutdown, killed after 30 s) and its epmd.
    pub fn stop(mut self) {
        self.node.stop(Duration::from_secs(30));
        self.epmd.stop(Duration::from_secs(2));
    }
}

/// The node writes its OS pid once it has booted.
async fn read_pid(path: &std::path::Path, timeout: Duration) -> anyhow::Result<u32> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(pid) = std::fs::read_to_string(path).ok().and_then(|s| s.trim().parse().ok()) {
            return Ok(pid);
        }
        anyhow::ensure!(Instant::now() < deadline, "RabbitMQ wrote no pid file at {}", path.display());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn log_tail(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    format!("rabbitmq-server output:\n{}", lines[lines.len().saturating_sub(15)..].join("\n"))
}

/// The version of the installed server, from its application folder's name.
pub fn version() -> Option<String> {
    std::fs::read_dir("/usr/lib/rabbitmq/lib")
        .ok()?
        .find_map(|e| e.ok()?.file_name().to_str()?.strip_prefix("rabbitmq_server-").map(str::to_owned))
}
