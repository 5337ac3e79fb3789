//! Resident memory of a process, from `/proc/<pid>/status` (Linux).

use anyhow::Context;

/// `VmRSS` of `pid`, in bytes.
pub fn rss_bytes(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).with_context(|| format!("no process {pid}"))?;
    parse_kib(&status, "VmRSS:").map(|kib| kib * 1024).context("no VmRSS in /proc/<pid>/status")
}

/// `Name:   1234 kB` → 1234.
fn parse_kib(status: &str, name: &str) -> Option<u64> {
    status.lines().find_map(|l| l.strip_prefix(name))?.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_vm_rss() {
        let status = "Name:\taqs\nVmHWM:\t  90000 kB\nVmRSS:\t   81234 kB\nThreads:\t3\n";
        assert_eq!(parse_kib(status, "VmRSS:"), Some(81234));
        assert!(rss_bytes(std::process::id()).unwrap() > 0);
    }
}
