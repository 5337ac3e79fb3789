//! Fields of `/proc/<pid>/status` (Linux): a process's resident memory, whether it still runs,
//! any other line's first word.

use anyhow::Context;

/// `VmRSS` of `pid`, in bytes.
pub fn rss_bytes(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).with_context(|| format!("no process {pid}"))?;
    parse_kib(&status, "VmRSS:").map(|kib| kib * 1024).context("no VmRSS in /proc/<pid>/status")
}

/// Whether `pid` has exited: gone, or a zombie its parent has yet to reap.
pub fn has_exited(pid: u32) -> bool {
    matches!(status_word(pid, "State:").as_deref(), None | Some("Z" | "X"))
}

/// The first word of `pid`'s status line `name` (`"State:"` → `"S"`); `None` without that
/// process or line.
pub fn status_word(pid: u32, name: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    first_word(&status, name).map(str::to_owned)
}

/// `Name:   1234 kB` → 1234.
fn parse_kib(status: &str, name: &str) -> Option<u64> {
    first_word(status, name)?.parse().ok()
}

fn first_word<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status.lines().find_map(|l| l.strip_prefix(name))?.split_whitespace().next()
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

    #[test]
    fn a_running_process_has_not_exited_and_a_reaped_one_has() {
        assert!(!has_exited(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(has_exited(pid));
    }
}
