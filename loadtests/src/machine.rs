//! What processes on this machine used, read from Linux's `/proc`: CPU time and
//! resident memory. Used to set a server's and PostgreSQL's CPU per cycle beside the
//! rate, and to report a process's memory idle and at peak.

use std::path::Path;

/// Clock ticks per second of `/proc/<pid>/stat`'s times: `USER_HZ`, which the Linux
/// ABI fixes at 100 on every architecture this runs on.
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU seconds (user and system) a process has used, its threads included, plus what
/// its exited and reaped children used. `None` when the process is gone.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields follow the last ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // After the name: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    let ticks: f64 = fields
        .get(11..15)?
        .iter()
        .map(|field| field.parse::<f64>().unwrap_or(0.0))
        .sum();
    Some(ticks / TICKS_PER_SECOND)
}

/// Every process whose command is `name` (`postgres`: the postmaster and each
/// backend and helper of every cluster on the machine).
pub fn pids_named(name: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("comm"))
                .is_ok_and(|comm| comm.trim_end() == name)
        })
        .collect()
}

/// CPU seconds used so far by every process named `name`, summed. Backends that exit
/// are counted through their parent's reaped-children times.
pub fn cpu_seconds_named(name: &str) -> f64 {
    pids_named(name).into_iter().filter_map(cpu_seconds).sum()
}

/// A process's resident set now (`VmRSS`), in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|value| value.parse::<u64>().ok())
}

/// CPU used by a set of processes over a window: read at its start, then at its end.
#[derive(Debug, Clone)]
pub struct CpuWindow {
    /// Each source's reading at the start, in the order of `sources`.
    start: Vec<f64>,
    sources: Vec<CpuSource>,
}

/// Whose CPU a [`CpuWindow`] counts.
#[derive(Debug, Clone)]
pub enum CpuSource {
    /// One process, by pid.
    Pid(String, u32),
    /// Every process with this command name.
    Named(String, String),
    /// This process.
    Me(String),
}

impl CpuSource {
    fn label(&self) -> &str {
        match self {
            Self::Pid(label, _) | Self::Named(label, _) | Self::Me(label) => label,
        }
    }

    fn read(&self) -> f64 {
        match self {
            Self::Pid(_, pid) => cpu_seconds(*pid).unwrap_or(0.0),
            Self::Named(_, name) => cpu_seconds_named(name),
            Self::Me(_) => cpu_seconds(std::process::id()).unwrap_or(0.0),
        }
    }
}

impl CpuWindow {
    /// Starts the window now.
    pub fn start(sources: Vec<CpuSource>) -> Self {
        let start = sources.iter().map(CpuSource::read).collect();
        Self { start, sources }
    }

    /// CPU seconds each source used since the start, by label.
    pub fn used(&self) -> Vec<(String, f64)> {
        self.sources
            .iter()
            .zip(&self.start)
            .map(|(source, start)| (source.label().to_owned(), (source.read() - start).max(0.0)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_seen_using_cpu_and_memory() {
        let window = CpuWindow::start(vec![CpuSource::Me("me".to_owned())]);
        // Spins for 300 ms of this thread's time on a CPU, read from the scheduler's own
        // account (not the ticks under test), not of the wall clock: on a busy machine
        // 300 ms of wall clock may hold far less time on a CPU.
        let on_cpu = || -> u64 {
            let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("own schedstat");
            schedstat
                .split_whitespace()
                .next()
                .and_then(|ns| ns.parse().ok())
                .expect("ns on a CPU")
        };
        let begun = on_cpu();
        let mut spin = 0_u64;
        while on_cpu() - begun < 300_000_000 {
            spin = spin.wrapping_add(1);
        }
        assert!(spin > 0);
        let used = window.used();
        assert_eq!(used[0].0, "me");
        // 300 ms on a CPU shows as at least 0.1 s at 100 ticks a second.
        assert!(used[0].1 >= 0.1, "{used:?}");
        let rss = rss_kib(std::process::id()).expect("own /proc status");
        assert!(rss > 0, "{rss}");
        assert!(cpu_seconds(u32::MAX).is_none());
    }
}
