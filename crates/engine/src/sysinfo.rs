//! What the machine is and where we run on it: CPU model, cores, kernel,
//! process CPU time (rusage), and CPU placement (affinity), which moves
//! loopback latency more than any ORB does and so goes into every result.

use serde::{Deserialize, Serialize};

/// The host a run happened on (`host` in the results schema).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub cpu_model: String,
    pub cores: usize,
    pub kernel: String,
    pub os: String,
}

impl HostInfo {
    /// Read from /proc and uname.
    pub fn current() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split(':').nth(1))
            })
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into())
        };
        HostInfo {
            hostname: read("/proc/sys/kernel/hostname"),
            cpu_model,
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            kernel: read("/proc/sys/kernel/osrelease"),
            os: std::env::consts::OS.to_string(),
        }
    }
}

/// The machine's online CPUs (`/sys/devices/system/cpu/online`), when
/// that can be read.
pub fn online_cpus() -> Option<Vec<usize>> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    s.trim()
        .parse::<crate::options::CpuList>()
        .ok()
        .map(|l| l.cpus().to_vec())
}

/// User and system CPU seconds of this process so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuTime {
    pub user: f64,
    pub sys: f64,
}

impl CpuTime {
    /// getrusage(RUSAGE_SELF).
    pub fn now() -> Self {
        // SAFETY: getrusage writes into the zeroed struct we own.
        let ru = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut ru);
            ru
        };
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        CpuTime {
            user: tv(ru.ru_utime),
            sys: tv(ru.ru_stime),
        }
    }

    /// getrusage(RUSAGE_THREAD): the calling thread only (the client's
    /// runtime thread, excluding an embedded server's threads).
    pub fn thread_now() -> Self {
        // SAFETY: getrusage writes into the zeroed struct we own.
        let ru = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
            ru
        };
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        CpuTime {
            user: tv(ru.ru_utime),
            sys: tv(ru.ru_stime),
        }
    }

    /// CPU used between `earlier` and `self`.
    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user: (self.user - earlier.user).max(0.0),
            sys: (self.sys - earlier.sys).max(0.0),
        }
    }

    /// Both intervals' CPU together.
    pub fn plus(self, other: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user + other.user,
            sys: self.sys + other.sys,
        }
    }

    /// user + sys.
    pub fn total(self) -> f64 {
        self.user + self.sys
    }
}

/// Resident memory of process `pid`, bytes (VmRSS of /proc/PID/status).
pub fn proc_rss(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_vm_rss(&text)
}

fn parse_vm_rss(text: &str) -> Option<u64> {
    parse_kib(text, "VmRSS:")
}

/// The `NAME: N kB` line of a /proc status file, in bytes.
fn parse_kib(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// This process's peak resident memory since it started or since the
/// last [`reset_own_peak_rss`], bytes (VmHWM).
pub fn own_peak_rss() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_kib(&text, "VmHWM:")
}

/// Start this process's peak resident memory afresh from what is resident
/// now (`5` to /proc/self/clear_refs); false where the kernel refuses.
pub fn reset_own_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// This process's open-file limit, raised for a run that needs `needed`
/// descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoFile {
    /// The soft limit before.
    pub before: u64,
    /// The soft limit now.
    pub soft: u64,
    /// The hard limit (the most the soft one may be raised to).
    pub hard: u64,
    /// Descriptors the run needs.
    pub needed: u64,
    /// The limit is below what the run needs.
    pub capped: bool,
}

/// Raise this process's RLIMIT_NOFILE soft limit to its hard limit when
/// it is below `needed`, and say where it stands. A process that may raise
/// the hard limit too (CAP_SYS_RESOURCE) raises it to `needed` first, up to
/// the kernel's most (`fs.nr_open`); any other keeps the hard limit it has.
pub fn raise_nofile(needed: usize) -> NoFile {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct we own.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
    }
    let before = r.rlim_cur;
    let kernel_most = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(r.rlim_max);
    let want = (needed as u64).min(kernel_most);
    if want > r.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: want,
            rlim_max: want,
        };
        // SAFETY: as above; refused (EPERM) without the capability.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            r = raised;
        }
    }
    if r.rlim_cur < needed as u64 && r.rlim_cur < r.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: r.rlim_max,
            rlim_max: r.rlim_max,
        };
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            r = raised;
        }
    }
    NoFile {
        before,
        soft: r.rlim_cur,
        hard: r.rlim_max,
        needed: needed as u64,
        capped: r.rlim_cur < needed as u64,
    }
}

pub use iiop_transport::affinity::{current_affinity, pin_current_thread};

pub use crate::options::format_cpu_list;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_memory_is_read_from_proc() {
        assert_eq!(
            parse_vm_rss("Name:\tx\nVmPeak:\t 9 kB\nVmRSS:\t  1234 kB\n"),
            Some(1234 * 1024)
        );
        assert_eq!(parse_vm_rss("Name:\tx\n"), None);
        // This process is readable.
        assert!(proc_rss(std::process::id()).unwrap() > 0);
    }

    #[test]
    fn the_open_file_limit_is_raised_only_when_needed() {
        let n = raise_nofile(8);
        assert!(!n.capped && n.soft >= 8 && n.hard >= n.soft, "{n:?}");
        let huge = raise_nofile(usize::MAX / 2);
        assert_eq!(huge.soft, huge.hard, "{huge:?}");
        assert_eq!(huge.capped, huge.hard < (usize::MAX / 2) as u64, "{huge:?}");
    }

    #[test]
    fn cpu_lists() {
        let parse = |s: &str| {
            s.parse::<crate::options::CpuList>()
                .map(|l| l.cpus().to_vec())
        };
        assert_eq!(parse("0").unwrap(), vec![0]);
        assert_eq!(parse("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert_eq!(parse("1,0,1").unwrap(), vec![0, 1]);
        assert!(parse("2-1").is_err());
        assert!(parse("").is_err());
        assert_eq!(format_cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
    }

    #[test]
    fn host_and_cpu_are_read() {
        let h = HostInfo::current();
        assert!(h.cores >= 1);
        assert_ne!(h.kernel, "unknown");
        let t0 = CpuTime::now();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(CpuTime::now().since(t0).total() >= 0.0);
        assert!(!current_affinity().is_empty());
    }
}
