//! A short MONITOR pass that tells which commands clients sent and which scripts ran: MONITOR
//! prints script commands with the source `lua`. Only used on a small calibration workload, since
//! MONITOR slows Redis down; the timed runs read commandstats.

use anyhow::Context;
use std::collections::{BTreeSet, HashMap};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

/// Calls per command base name, split by who sent them.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Origins {
    pub top_level: HashMap<String, u64>,
    pub from_scripts: HashMap<String, u64>,
}

impl Origins {
    /// Share of each command's calls that came from clients.
    pub fn top_level_share(&self) -> HashMap<String, f64> {
        let names: BTreeSet<&String> = self.top_level.keys().chain(self.from_scripts.keys()).collect();
        names
            .into_iter()
            .map(|name| {
                let top = *self.top_level.get(name).unwrap_or(&0) as f64;
                let inner = *self.from_scripts.get(name).unwrap_or(&0) as f64;
                (name.clone(), top / (top + inner).max(1.0))
            })
            .collect()
    }

    /// Client requests seen in total, excluding the probe's own commands.
    pub fn total_top_level(&self) -> u64 {
        self.top_level.iter().filter(|(n, _)| n.as_str() != "monitor" && n.as_str() != "info").map(|(_, c)| c).sum()
    }

    fn record(&mut self, line: &str) {
        if let Some((from_script, name)) = parse_line(line) {
            let map = if from_script { &mut self.from_scripts } else { &mut self.top_level };
            *map.entry(name).or_default() += 1;
        }
    }
}

/// `+1700000000.123456 [0 127.0.0.1:5555] "evalsha" ...` → (false, "evalsha");
/// `+1700000000.123456 [0 lua] "XADD" ...` → (true, "xadd").
fn parse_line(line: &str) -> Option<(bool, String)> {
    let open = line.find('[')?;
    let close = open + line[open..].find(']')?;
    let source = line[open + 1..close].split_whitespace().nth(1)?;
    let rest = line[close + 1..].trim_start().strip_prefix('"')?;
    let name = &rest[..rest.find('"')?];
    Some((source == "lua", name.to_ascii_lowercase()))
}

/// A running MONITOR; `finish` stops it and returns what it saw.
pub struct Monitor {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<anyhow::Result<Origins>>,
}

impl Monitor {
    /// `addr` is `host:port` of the Redis server.
    pub async fn start(addr: &str) -> anyhow::Result<Self> {
        let mut stream = TcpStream::connect(addr).await.context("MONITOR: cannot connect to Redis")?;
        stream.write_all(b"MONITOR\r\n").await?;
        let mut reader = BufReader::new(stream);
        let mut ok = String::new();
        reader.read_line(&mut ok).await?;
        anyhow::ensure!(ok.starts_with("+OK"), "MONITOR refused: {ok}");
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut origins = Origins::default();
            let mut line = String::new();
            loop {
                line.clear();
                tokio::select! {
                    _ = &mut stopped => return Ok(origins),
                    read = reader.read_line(&mut line) => {
                        if read? == 0 { return Ok(origins); }
                        origins.record(&line);
                    }
                }
            }
        });
        Ok(Self { stop, task })
    }

    pub async fn finish(self) -> anyhow::Result<Origins> {
        // The task may already have ended on a closed socket; its result says so.
        self.stop.send(()).ok();
        self.task.await.context("MONITOR task panicked")?
    }
}

/// `host:port` of a `redis://host:port[/db]` URL.
pub fn redis_addr(url: &str) -> anyhow::Result<String> {
    let rest = url.strip_prefix("redis://").context("only redis:// URLs are supported")?;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let hostport = rest.split('/').next().unwrap_or(rest);
    Ok(if hostport.contains(':') { hostport.to_owned() } else { format!("{hostport}:6379") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_client_and_script_commands() {
        let mut o = Origins::default();
        o.record("+1700000000.123456 [0 127.0.0.1:5555] \"evalsha\" \"abc\" \"12\"\r\n");
        o.record("+1700000000.123457 [0 lua] \"XADD\" \"aqs:{q:1}:s\" \"*\"\r\n");
        o.record("+1700000000.123458 [0 lua] \"hget\" \"k\" \"f\"\r\n");
        o.record("+1700000000.123459 [0 127.0.0.1:5556] \"hget\" \"k\" \"f\"\r\n");
        o.record("garbage\r\n");
        assert_eq!(o.total_top_level(), 2);
        let share = o.top_level_share();
        assert_eq!(share["evalsha"], 1.0);
        assert_eq!(share["xadd"], 0.0);
        assert_eq!(share["hget"], 0.5);
    }

    #[test]
    fn redis_addresses() {
        assert_eq!(redis_addr("redis://127.0.0.1:6390").unwrap(), "127.0.0.1:6390");
        assert_eq!(redis_addr("redis://:pw@10.0.0.1:7000/2").unwrap(), "10.0.0.1:7000");
        assert_eq!(redis_addr("redis://localhost").unwrap(), "localhost:6379");
    }
}
