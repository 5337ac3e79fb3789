//! A server the bench starts and must not leave behind: spawned as the leader of its own process
//! group (so whatever it forks, such as RabbitMQ's `erl_child_setup`, goes with it), with its
//! output in a log file, and stopped with SIGTERM to the leader (a clean shutdown: RabbitMQ's
//! start script passes it on to its Erlang node) and, once the leader has exited or the grace
//! period is over, SIGKILL to the whole group for anything left. Dropping it stops it too, so a failed scenario or a
//! panic cannot leave a broker running.

use anyhow::Context;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Owned {
    name: &'static str,
    child: Option<Child>,
}

impl Owned {
    /// Spawns `command` in a new process group, its stdout and stderr appended to `log`.
    pub fn spawn(name: &'static str, mut command: Command, log: &Path) -> anyhow::Result<Self> {
        let out = std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
        let err = out.try_clone()?;
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start {name} ({command:?})"))?;
        register(child.id(), true);
        Ok(Self { name, child: Some(child) })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Fails if the process has already exited (it could not start).
    pub fn ensure_running(&mut self) -> anyhow::Result<()> {
        if let Some(child) = &mut self.child
            && let Some(status) = child.try_wait()?
        {
            anyhow::bail!("{} exited at start-up ({status})", self.name);
        }
        Ok(())
    }

    /// Stops the whole process group and reaps the leader; waits at most `grace` for a clean
    /// exit before killing.
    pub fn stop(&mut self, grace: Duration) {
        let Some(mut child) = self.child.take() else { return };
        let group = child.id();
        signal(&group.to_string(), "TERM");
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // Also what the leader left in its group (helpers outlive it if they ignore SIGTERM).
        signal(&format!("-{group}"), "KILL");
        if child.wait().is_err() {
            eprintln!("  - warning: could not reap {}", self.name);
        }
        register(group, false);
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(2));
    }
}

/// Adds or removes the file naming process group `group` in `$AQS_BENCH_PEER_GROUPS`.
fn register(group: u32, running: bool) {
    let Some(dir) = std::env::var_os("AQS_BENCH_PEER_GROUPS") else { return };
    let path = Path::new(&dir).join(group.to_string());
    let done = if running { std::fs::write(&path, "") } else { std::fs::remove_file(&path) };
    if let Err(err) = done {
        eprintln!("  - warning: {}: {err}", path.display());
    }
}

/// `kill -SIGNAL -- PID`; a negative pid is a process group. Through kill(1): the workspace
/// forbids unsafe code, and this runs a few times per run. Its failure (ESRCH: already gone, the
/// expected outcome of the final SIGKILL) is not an error here.
pub fn signal(pid: &str, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), "--", pid])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if status.is_err() {
        eprintln!("  - warning: cannot run kill(1) to signal {pid}");
    }
}

/// A TCP port on 127.0.0.1 that nobody listens on now, below the ephemeral range as
/// `infra/lib.sh`'s `free_port` picks them.
pub fn free_port() -> anyhow::Result<u16> {
    for _ in 0..200 {
        let port = 15000 + (rand_u32() % 17000) as u16;
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
            && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
        {
            return Ok(port);
        }
    }
    anyhow::bail!("no free port found")
}

fn rand_u32() -> u32 {
    uuid::Uuid::new_v4().as_u128() as u32
}

/// Waits until something accepts TCP connections on 127.0.0.1:`port`, or fails after `timeout`
/// or as soon as `server` exits.
pub async fn wait_for_port(server: &mut Owned, port: u16, timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Ok(());
        }
        server.ensure_running()?;
        anyhow::ensure!(Instant::now() < deadline, "{} did not listen on port {port} within {timeout:?}", server.name);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A temporary folder removed on drop (kept when `AQS_BENCH_KEEP` is set, to read the logs).
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    pub fn new(prefix: &str) -> anyhow::Result<Self> {
        let base = std::env::var_os("TMPDIR").map(std::path::PathBuf::from).unwrap_or_else(|| "/tmp".into());
        let dir = base.join(format!("{prefix}.{}", &uuid::Uuid::new_v4().simple().to_string()[..12]));
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Self(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("AQS_BENCH_KEEP").is_none() {
            std::fs::remove_dir_all(&self.0).ok();
        }
    }
}
