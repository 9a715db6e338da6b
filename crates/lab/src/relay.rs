//! The delay relay, for kernels without `sch_netem`: a TUN device in a
//! link's middle namespace receives, through a policy route, every packet
//! that enters from one end; a thread reads each packet, holds it for the
//! configured delay (± jitter, never reordering), and writes it back into
//! the same TUN device, from where the kernel forwards it to the other end.
//! One device and one thread per direction; the delay can be changed while
//! it runs, and the thread stops when the [`Relay`] is dropped.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::Rng;

use crate::error::{LabError, Result};
use crate::netns::in_netns;

/// `_IOW('T', 202, int)`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// Packets held at most; more are dropped and counted (a 300 ms delay at
/// 100 Mbit/s holds about 2 500 full-size packets).
pub const QUEUE_LIMIT: usize = 65_536;

/// Largest packet read from the device (MTU is at most 9000).
const BUF_LEN: usize = 9216;

/// SCHED_FIFO priority of relay threads (1 is the lowest real-time one).
const RT_PRIORITY: libc::c_int = 10;

/// Puts the calling thread in the SCHED_FIFO class at `priority`, for a
/// thread that blocks between packets and must wake on time when every
/// CPU is busy. Failure (no privilege) leaves normal priority.
pub(crate) fn realtime(priority: libc::c_int) {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sets this thread's (tid 0 = caller) policy from a valid param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
}

/// How long the thread sleeps at most before checking the stop flag.
const IDLE_WAKE: Duration = Duration::from_millis(20);

#[repr(C)]
struct IfReq {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Opens a new TUN device `name` (no packet-info header) in namespace `ns`,
/// non-blocking. The device lives as long as the returned descriptor.
pub fn open_tun(ns: &File, name: &str) -> Result<OwnedFd> {
    if name.is_empty() || name.len() > 15 {
        return Err(LabError::Spec(format!(
            "tun name `{name}` must be 1-15 bytes"
        )));
    }
    let name = name.to_string();
    in_netns(ns, move || -> io::Result<OwnedFd> {
        // SAFETY: open(2) on a NUL-terminated literal path.
        let fd = unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just returned by open and is owned by nobody else.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut req = IfReq {
            name: [0; 16],
            flags: IFF_TUN | IFF_NO_PI,
            _pad: [0; 22],
        };
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: TUNSETIFF reads and writes a struct ifreq, which IfReq
        // matches in size (40 bytes) and layout of the fields used.
        if unsafe { libc::ioctl(owned.as_raw_fd(), TUNSETIFF, &mut req) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(owned)
    })?
    .map_err(|e| LabError::io("opening /dev/net/tun and TUNSETIFF", e))
}

/// Counters of one relay direction.
#[derive(Debug, Default)]
pub struct RelayStats {
    /// Packets written back (delivered onwards).
    pub forwarded: AtomicU64,
    /// Packets dropped because the hold queue was full.
    pub overflow: AtomicU64,
    /// Write errors (e.g. the device went away).
    pub write_errors: AtomicU64,
}

/// A snapshot of [`RelayStats`], for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RelayCounters {
    /// Packets delivered onwards since the relay started.
    pub forwarded: u64,
    /// Packets dropped because the hold queue was full.
    pub overflow: u64,
    /// Packets lost to write errors.
    pub write_errors: u64,
}

impl RelayStats {
    /// Current values.
    pub fn snapshot(&self) -> RelayCounters {
        RelayCounters {
            forwarded: self.forwarded.load(Ordering::Relaxed),
            overflow: self.overflow.load(Ordering::Relaxed),
            write_errors: self.write_errors.load(Ordering::Relaxed),
        }
    }
}

/// One running relay direction. Dropping it stops and joins the thread,
/// which closes the TUN device.
#[derive(Debug)]
pub struct Relay {
    delay_ns: Arc<AtomicU64>,
    jitter_ns: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    stats: Arc<RelayStats>,
    thread: Option<JoinHandle<()>>,
}

impl Relay {
    /// Starts relaying on `tun` with the given delay and jitter.
    pub fn start(tun: OwnedFd, label: &str, delay: Duration, jitter: Duration) -> Result<Relay> {
        let delay_ns = Arc::new(AtomicU64::new(delay.as_nanos() as u64));
        let jitter_ns = Arc::new(AtomicU64::new(jitter.as_nanos() as u64));
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(RelayStats::default());
        let state = (
            delay_ns.clone(),
            jitter_ns.clone(),
            stop.clone(),
            stats.clone(),
        );
        let thread = std::thread::Builder::new()
            .name(format!("lab-relay-{label}"))
            .spawn(move || {
                let (d, j, s, st) = state;
                run(tun, &d, &j, &s, &st);
            })
            .map_err(|e| LabError::io("spawning relay thread", e))?;
        Ok(Relay {
            delay_ns,
            jitter_ns,
            stop,
            stats,
            thread: Some(thread),
        })
    }

    /// Changes delay and jitter for packets read from now on.
    pub fn set(&self, delay: Duration, jitter: Duration) {
        self.delay_ns
            .store(delay.as_nanos() as u64, Ordering::Relaxed);
        self.jitter_ns
            .store(jitter.as_nanos() as u64, Ordering::Relaxed);
    }

    /// The counters.
    pub fn stats(&self) -> &RelayStats {
        &self.stats
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Departure time of a packet read at `now`: `now + delay ± jitter`, but
/// never before the previous packet's (`last`), so order is kept.
pub fn departure(
    now: Instant,
    last: Option<Instant>,
    delay_ns: u64,
    jitter_ns: u64,
    draw: i64,
) -> Instant {
    let mut ns = delay_ns as i64;
    if jitter_ns > 0 {
        ns += draw.clamp(-(jitter_ns as i64), jitter_ns as i64);
    }
    let due = now + Duration::from_nanos(ns.max(0) as u64);
    match last {
        Some(l) if l > due => l,
        _ => due,
    }
}

fn run(
    tun: OwnedFd,
    delay_ns: &AtomicU64,
    jitter_ns: &AtomicU64,
    stop: &AtomicBool,
    stats: &RelayStats,
) {
    // Sleep precision: the default 50 us timer slack would add to every delay.
    // SAFETY: prctl(PR_SET_TIMERSLACK) only changes this thread's slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    // Wake on time even when the machine is busy: a low real-time priority
    // (the thread blocks in ppoll between packets, and the kernel's RT
    // throttling keeps 5 % for others). Without it, a load of 4 on 2 cores
    // added up to 8 ms to single packets.
    realtime(RT_PRIORITY);
    let fd = tun.as_raw_fd();
    let mut rng = rand::thread_rng();
    let mut queue: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut last_due: Option<Instant> = None;
    let mut buf = vec![0u8; BUF_LEN];
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        while queue.front().is_some_and(|(due, _)| *due <= now) {
            let (_, pkt) = queue.pop_front().expect("front exists");
            // SAFETY: writing pkt.len() initialised bytes from a live Vec.
            let n = unsafe { libc::write(fd, pkt.as_ptr().cast(), pkt.len()) };
            if n < 0 {
                stats.write_errors.fetch_add(1, Ordering::Relaxed);
            } else {
                stats.forwarded.fetch_add(1, Ordering::Relaxed);
            }
        }
        let wait = queue
            .front()
            .map(|(due, _)| due.saturating_duration_since(now))
            .unwrap_or(IDLE_WAKE)
            .min(IDLE_WAKE);
        let ts = libc::timespec {
            tv_sec: wait.as_secs() as libc::time_t,
            tv_nsec: wait.subsec_nanos() as libc::c_long,
        };
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask.
        let r = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
        if r <= 0 || pfd.revents & libc::POLLIN == 0 {
            continue;
        }
        loop {
            // SAFETY: reading at most buf.len() bytes into buf.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            let now = Instant::now();
            let d = delay_ns.load(Ordering::Relaxed);
            let j = jitter_ns.load(Ordering::Relaxed);
            let draw = if j > 0 {
                rng.gen_range(-(j as i64)..=(j as i64))
            } else {
                0
            };
            if queue.len() >= QUEUE_LIMIT {
                stats.overflow.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let due = departure(now, last_due, d, j, draw);
            last_due = Some(due);
            queue.push_back((due, buf[..n as usize].to_vec()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn departure_adds_delay_and_clamps_jitter() {
        let t0 = Instant::now();
        let ms = 1_000_000;
        assert_eq!(
            departure(t0, None, 20 * ms, 0, 999),
            t0 + Duration::from_millis(20)
        );
        assert_eq!(
            departure(t0, None, 20 * ms, 5 * ms, -3 * ms as i64),
            t0 + Duration::from_millis(17)
        );
        // A draw beyond the jitter is clamped to it.
        assert_eq!(
            departure(t0, None, 20 * ms, 5 * ms, 100 * ms as i64),
            t0 + Duration::from_millis(25)
        );
    }

    #[test]
    fn departure_never_reorders() {
        let t0 = Instant::now();
        let ms = 1_000_000;
        let first = departure(t0, None, 20 * ms, 5 * ms, 5 * ms as i64);
        let second = departure(
            t0 + Duration::from_millis(1),
            Some(first),
            20 * ms,
            5 * ms,
            -5 * ms as i64,
        );
        assert_eq!(first, t0 + Duration::from_millis(25));
        assert_eq!(second, first);
    }
}
