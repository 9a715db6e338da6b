//! The server-side counters of bench.idl (`reset()`, `get_stats()`):
//! lock-free, shared by every connection.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// A snapshot, in bench.idl's `Stats` order.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    pub calls: u64,
    pub oneways: u64,
    pub bytes: u64,
    pub cpu_seconds: f64,
    pub last_mark: u64,
    pub mark_disorder: u64,
}

/// The live counters.
#[derive(Debug, Default)]
pub struct Counters {
    calls: AtomicU64,
    oneways: AtomicU64,
    bytes: AtomicU64,
    last_mark: AtomicU64,
    mark_disorder: AtomicU64,
    /// Process CPU seconds at the last reset.
    cpu_base: Mutex<f64>,
}

impl Counters {
    /// Zeroed counters, CPU measured from now.
    pub fn new() -> Self {
        let c = Counters::default();
        *c.cpu_base.lock().expect("not poisoned") = process_cpu_seconds();
        c
    }

    /// One invocation; `oneway` chooses the counter.
    #[inline]
    pub fn call(&self, oneway: bool) {
        if oneway {
            self.oneways.fetch_add(1, Ordering::Relaxed);
        } else {
            self.calls.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Payload bytes decoded.
    #[inline]
    pub fn bytes(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// `mark(n)`: n must follow the previous mark by one.
    pub fn mark(&self, n: u64) {
        let prev = self.last_mark.swap(n, Ordering::AcqRel);
        if n != prev.wrapping_add(1) {
            self.mark_disorder.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `reset()`.
    pub fn reset(&self) {
        for c in [
            &self.calls,
            &self.oneways,
            &self.bytes,
            &self.last_mark,
            &self.mark_disorder,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        *self.cpu_base.lock().expect("not poisoned") = process_cpu_seconds();
    }

    /// `get_stats()`.
    pub fn snapshot(&self) -> Stats {
        Stats {
            calls: self.calls.load(Ordering::Relaxed),
            oneways: self.oneways.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            cpu_seconds: (process_cpu_seconds() - *self.cpu_base.lock().expect("not poisoned"))
                .max(0.0),
            last_mark: self.last_mark.load(Ordering::Relaxed),
            mark_disorder: self.mark_disorder.load(Ordering::Relaxed),
        }
    }
}

pub use iiop_transport::hosted::SERVER_THREAD_PREFIX;

/// CPU seconds of the server: the sum over this process's threads named
/// [`SERVER_THREAD_PREFIX`] (so a server embedded in a benchmark process
/// does not count the client's CPU), or the whole process when no thread
/// has that name. /proc counts in clock ticks (10 ms here).
pub fn process_cpu_seconds() -> f64 {
    threads_cpu_seconds(SERVER_THREAD_PREFIX).unwrap_or_else(whole_process_cpu_seconds)
}

/// CPU seconds (user + system) of the threads of this process whose name
/// starts with `prefix`; `None` when there is none.
pub fn threads_cpu_seconds(prefix: &str) -> Option<f64> {
    // SAFETY: sysconf has no preconditions.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let mut total = 0.0;
    let mut found = false;
    for t in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let dir = t.path();
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        if !comm.trim_end().starts_with(prefix) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        // Fields after the parenthesised name: state is field 3, utime 14, stime 15.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if let (Some(u), Some(s)) = (f.get(11), f.get(12)) {
            total += (u.parse::<f64>().unwrap_or(0.0) + s.parse::<f64>().unwrap_or(0.0)) / tick;
            found = true;
        }
    }
    found.then_some(total)
}

/// User + system CPU seconds of the whole process.
pub fn whole_process_cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into a zeroed struct we own.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_marks() {
        let c = Counters::new();
        c.call(false);
        c.call(true);
        c.call(true);
        c.bytes(100);
        for n in [1, 2, 3, 5, 6] {
            c.mark(n);
        }
        let s = c.snapshot();
        assert_eq!(
            (s.calls, s.oneways, s.bytes, s.last_mark, s.mark_disorder),
            (1, 2, 100, 6, 1)
        );
        c.reset();
        let s = c.snapshot();
        assert_eq!(
            (s.calls, s.oneways, s.bytes, s.last_mark, s.mark_disorder),
            (0, 0, 0, 0, 0)
        );
        c.mark(1);
        assert_eq!(c.snapshot().mark_disorder, 0);
    }

    #[test]
    fn thread_cpu_is_attributed_by_name() {
        // Spin until this thread itself has used 60 ms of CPU (not wall
        // time: on a loaded machine the two differ), bounded by 20 s.
        fn own_cpu() -> f64 {
            // SAFETY: getrusage writes into a zeroed struct we own.
            let ru = unsafe {
                let mut ru: libc::rusage = std::mem::zeroed();
                libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
                ru
            };
            let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            tv(ru.ru_utime) + tv(ru.ru_stime)
        }
        let h = std::thread::Builder::new()
            .name(format!("{SERVER_THREAD_PREFIX}-t"))
            .spawn(|| {
                let t = std::time::Instant::now();
                while own_cpu() < 0.06 && t.elapsed() < std::time::Duration::from_secs(20) {
                    std::hint::spin_loop();
                }
                (own_cpu(), threads_cpu_seconds(SERVER_THREAD_PREFIX))
            })
            .unwrap();
        let (own, seen) = h.join().unwrap();
        let seen = seen.expect("our named thread is visible");
        // /proc counts whole 10 ms ticks.
        assert!(seen >= own - 0.02 && own >= 0.06, "own {own}, /proc {seen}");
        assert_eq!(threads_cpu_seconds("no-such-thread-name"), None);
    }
}
