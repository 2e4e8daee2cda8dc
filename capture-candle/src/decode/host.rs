//! The host's memory, for refusing CPU allocations that cannot succeed: candle (and a
//! `Vec`) abort the process when an allocation fails, and an allocation far past the machine
//! gets the process killed.

use candle_core::Device;

use crate::error::{Error, Result};

/// Refuses `bytes` of host memory for `what` on the CPU where this process cannot have them
/// in all: more than the machine's memory and swap, or its cgroup's limits (Linux;
/// elsewhere nothing is refused). Memory that other processes use is not counted, so a size
/// that passes can still fail later.
pub(crate) fn fits_host(what: &'static str, bytes: u64, device: &Device) -> Result<()> {
    if !device.is_cpu() {
        return Ok(());
    }
    fits(what, bytes, host_memory())
}

/// [`fits_host`] against a known `total`.
fn fits(what: &'static str, bytes: u64, total: Option<u64>) -> Result<()> {
    match total {
        Some(total) if bytes > total => Err(Error::HostMemory { what, bytes, total }),
        _ => Ok(()),
    }
}

/// The memory and swap this process can have, in bytes: `/proc/meminfo`'s, each capped by
/// the cgroup v2 limits of the process's cgroup where they are set. `None` where
/// `/proc/meminfo` cannot be read.
fn host_memory() -> Option<u64> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let (mem, swap) = meminfo(&read("/proc/meminfo")?)?;
    let dir = read("/proc/self/cgroup").and_then(|c| cgroup_v2_path(&c)).map(|p| format!("/sys/fs/cgroup{p}"));
    let limit = |file: &str| dir.as_ref().and_then(|d| read(&format!("{d}/{file}"))).and_then(|v| cgroup_limit(&v));
    let mem = limit("memory.max").map_or(mem, |l| l.min(mem));
    let swap = limit("memory.swap.max").map_or(swap, |l| l.min(swap));
    mem.checked_add(swap)
}

/// MemTotal and SwapTotal (0 where absent) of a `/proc/meminfo` text, in bytes.
fn meminfo(text: &str) -> Option<(u64, u64)> {
    let kib = |key: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        line[key.len()..].trim().trim_end_matches("kB").trim().parse::<u64>().ok()?.checked_mul(1024)
    };
    Some((kib("MemTotal:")?, kib("SwapTotal:").unwrap_or(0)))
}

/// The cgroup v2 path of a `/proc/self/cgroup` text (its `0::` line).
fn cgroup_v2_path(text: &str) -> Option<String> {
    text.lines().find_map(|l| l.strip_prefix("0::")).map(|p| p.trim().to_owned())
}

/// A cgroup v2 limit file's bytes; `None` for `max` (no limit) or anything unreadable.
fn cgroup_limit(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Refused only past the known total, never where it is unknown, never off the CPU;
    /// this machine's total reads as a plausible size.
    #[test]
    fn host_memory_is_refused_past_the_total() {
        assert!(fits("x", 100, Some(100)).is_ok());
        assert!(matches!(fits("x", 101, Some(100)), Err(Error::HostMemory { what: "x", bytes: 101, total: 100 })));
        assert!(fits("x", u64::MAX, None).is_ok());
        if let Some(total) = host_memory() {
            assert!(total >= 1 << 26, "{total} bytes");
            assert!(fits_host("x", u64::MAX, &Device::Cpu).is_err());
        }
    }

    /// `/proc/meminfo` in KiB, swap optional; cgroup v2's path and limits (`max` is none).
    #[test]
    fn meminfo_and_cgroup_files_are_read() {
        let info = "MemTotal:       24576000 kB\nMemFree:         1000 kB\nSwapTotal:       2048 kB\n";
        assert_eq!(meminfo(info), Some((24_576_000 * 1024, 2048 * 1024)));
        assert_eq!(meminfo("MemTotal: 1024 kB\n"), Some((1 << 20, 0)));
        assert_eq!(meminfo("SwapTotal: 1024 kB\n"), None);
        assert_eq!(cgroup_v2_path("12:cpu:/x\n0::/user.slice/ci.scope\n").as_deref(), Some("/user.slice/ci.scope"));
        assert_eq!(cgroup_v2_path("4:memory:/docker/ab\n"), None);
        assert_eq!(cgroup_limit("4294967296\n"), Some(1 << 32));
        assert_eq!(cgroup_limit("max\n"), None);
    }
}
