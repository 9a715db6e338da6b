//! How noisy the machine was while a case ran, and on which CPUs the
//! measuring threads ran.
//!
//! A percentile measured while another process burnt a CPU, while the
//! hypervisor stole time, or half on one CPU and half on another, is not
//! the number it claims to be, and nothing in the histogram shows it. So
//! every case is bracketed by a [`NoiseMeter`] (two snapshots of
//! /proc/stat and of our own CPU time: how much of the machine somebody
//! else used, see [`Noise`]), and a [`ThreadWatch`] samples where each of
//! our threads, and those of the servers we started, runs, so that the
//! results name every thread that moved.
//!
//! Everything here reads /proc (and /sys for frequencies). A file that
//! cannot be read gives zeros or "not seen", never an error: noise is a
//! remark on a result, not a reason to lose it.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write as _;
use std::fs::File;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// More than a quarter of a CPU used by others makes a case noisy: on a
/// two-CPU machine that is an eighth of it, enough to delay a wake-up.
pub const BACKGROUND_LIMIT_CPUS: f64 = 0.25;

/// More than 5 % of the CPU time taken by the hypervisor makes a case noisy.
pub const STEAL_LIMIT: f64 = 0.05;

/// How far two snapshots can be off, in CPU-seconds: /proc/stat charges
/// whole 10 ms ticks to whatever a CPU is doing when its tick fires, and
/// /proc/PID/stat truncates user and system time to ticks, so each of the
/// two snapshots can be a tick or two off either way. A verdict on a short
/// case allows for this instead of calling rounding "background load".
const TICK_SLACK_S: f64 = 0.04;

/// The same for the steal fraction (a tick per CPU, over all the ticks of
/// all CPUs): about one tick of one CPU per snapshot.
const STEAL_SLACK_S: f64 = 0.02;

/// What the machine did while a case ran, as rates over its wall time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// The interval measured, seconds.
    pub wall_s: f64,
    /// CPUs' worth of time used by processes other than ours (user+nice+system of the whole machine minus ours, divided by wall time; never negative)
    pub background_cpus: f64,
    /// Fraction of the machine's CPU time stolen by the hypervisor (steal / all ticks), 0..1
    pub steal_fraction: f64,
    /// CPUs' worth of time used by our own process (and extra pids)
    pub own_cpus: f64,
    /// min and max MHz seen across CPUs at start and end, when the kernel shows frequencies
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freq_mhz: Option<(f64, f64)>,
    /// frequency of some CPU changed by more than 10 % between start and end
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub freq_changed: bool,
}

impl Noise {
    /// Several measurements as one (the runs of a case, the cases of a
    /// run): rates averaged weighted by wall time, so a long quiet case
    /// is not drowned by a short noisy one nor the reverse; frequencies
    /// as the widest range, changed if any changed.
    pub fn merge(items: &[Noise]) -> Noise {
        let wall: f64 = items.iter().map(|n| n.wall_s).sum();
        let avg = |f: fn(&Noise) -> f64| {
            if wall > 0.0 {
                items.iter().map(|n| f(n) * n.wall_s).sum::<f64>() / wall
            } else if items.is_empty() {
                0.0
            } else {
                items.iter().map(f).sum::<f64>() / items.len() as f64
            }
        };
        Noise {
            wall_s: wall,
            background_cpus: avg(|n| n.background_cpus),
            steal_fraction: avg(|n| n.steal_fraction),
            own_cpus: avg(|n| n.own_cpus),
            freq_mhz: items
                .iter()
                .filter_map(|n| n.freq_mhz)
                .reduce(|(lo, hi), (l, h)| (lo.min(l), hi.max(h))),
            freq_changed: items.iter().any(|n| n.freq_changed),
        }
    }

    /// Why the numbers measured under this noise are suspect, in short
    /// phrases for a warning line; empty when the machine was quiet.
    /// Rates are judged with the tick rounding of a short case allowed
    /// for (see `TICK_SLACK_S`), so a 100 ms case is not flagged for the
    /// rounding of two 10 ms ticks.
    pub fn problems(&self) -> Vec<String> {
        let slack = |s: f64| {
            if self.wall_s > 0.0 {
                s / self.wall_s
            } else {
                f64::INFINITY
            }
        };
        let mut out = Vec::new();
        if self.background_cpus > BACKGROUND_LIMIT_CPUS + slack(TICK_SLACK_S) {
            out.push(format!("background load {:.2} CPUs", self.background_cpus));
        }
        if self.steal_fraction > STEAL_LIMIT + slack(STEAL_SLACK_S) {
            out.push(format!("steal {:.1} %", self.steal_fraction * 100.0));
        }
        if self.freq_changed {
            out.push(match self.freq_mhz {
                Some((lo, hi)) => format!("CPU frequency changed ({lo:.0}–{hi:.0} MHz)"),
                None => "CPU frequency changed".into(),
            });
        }
        out
    }
}

/// Measures [`Noise`] between [`NoiseMeter::start`] and
/// [`NoiseMeter::finish`].
#[derive(Debug, Clone)]
pub struct NoiseMeter {
    extra: Vec<u32>,
    start: Snapshot,
}

impl NoiseMeter {
    /// Snapshot now. `extra_pids` are processes we started ourselves (a
    /// vendor ORB server): their CPU time is ours, not background. Give
    /// the process that does the work: a wrapper's children are not
    /// followed (the ORB start scripts `exec` their server).
    pub fn start(extra_pids: &[u32]) -> NoiseMeter {
        let me = std::process::id();
        let mut extra: Vec<u32> = Vec::with_capacity(extra_pids.len());
        for &p in extra_pids {
            if p != me && !extra.contains(&p) {
                extra.push(p);
            }
        }
        let start = Snapshot::take(&extra);
        NoiseMeter { extra, start }
    }

    /// Snapshot again and compare with the start. Can be called more than
    /// once: each call measures from the start to now.
    pub fn finish(&self) -> Noise {
        noise_between(&self.start, &Snapshot::take(&self.extra))
    }
}

/// The aggregate `cpu` line of /proc/stat, in USER_HZ ticks. `user` and
/// `nice` already include guest time, so guest fields are not read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct CpuTicks {
    user: u64,
    nice: u64,
    system: u64,
    idle: u64,
    iowait: u64,
    irq: u64,
    softirq: u64,
    steal: u64,
}

/// One look at the machine: what [`noise_between`] compares.
#[derive(Debug, Clone)]
struct Snapshot {
    at: Instant,
    /// USER_HZ: the unit of every tick count below.
    hz: f64,
    machine: Option<CpuTicks>,
    /// This process's utime+stime.
    own: Option<u64>,
    /// Per extra pid: (starttime, utime+stime), None when gone. The start
    /// time tells a reused pid from the process we meant.
    extra: Vec<Option<(u64, u64)>>,
    /// (CPU, kHz) for every CPU that shows a frequency.
    freq_khz: Vec<(usize, u64)>,
}

impl Snapshot {
    fn take(extra: &[u32]) -> Snapshot {
        let at = Instant::now();
        let machine = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|t| parse_proc_stat(&t));
        let mut buf = Vec::with_capacity(1024);
        let mut path = String::new();
        let mut proc_ticks = |pid: Option<u32>| {
            path.clear();
            match pid {
                Some(p) => write!(path, "/proc/{p}/stat").ok()?,
                None => path.push_str("/proc/self/stat"),
            }
            read_into(&path, &mut buf).ok()?;
            parse_task_stat(&buf).map(|s| (s.start, s.ticks))
        };
        let own = proc_ticks(None).map(|(_, t)| t);
        let extra = extra.iter().map(|&p| proc_ticks(Some(p))).collect();
        Snapshot {
            at,
            hz: clock_ticks_per_s(),
            machine,
            own,
            extra,
            freq_khz: read_freqs(),
        }
    }
}

/// USER_HZ, the unit of /proc/stat and /proc/PID/stat times (100 on
/// every Linux we run on; asked anyway).
fn clock_ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The noise between two snapshots. Counters are compared with
/// saturating subtraction (iowait is known to go backwards), and every
/// rate is 0 rather than NaN when no time passed.
fn noise_between(a: &Snapshot, b: &Snapshot) -> Noise {
    let wall = b.at.saturating_duration_since(a.at).as_secs_f64();
    let cpus = |ticks: u64| {
        if wall > 0.0 && a.hz > 0.0 {
            ticks as f64 / a.hz / wall
        } else {
            0.0
        }
    };
    let grew = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (Some(x), Some(y)) => y.saturating_sub(x),
        _ => 0,
    };
    let mut ours = grew(a.own, b.own);
    for (x, y) in a.extra.iter().zip(&b.extra) {
        // Gone, or its pid now names another process: no growth.
        if let (Some((s0, t0)), Some((s1, t1))) = (x, y) {
            if s0 == s1 {
                ours += t1.saturating_sub(*t0);
            }
        }
    }
    let (busy, steal, total) = match (a.machine, b.machine) {
        (Some(x), Some(y)) => {
            let d = |f: fn(&CpuTicks) -> u64| f(&y).saturating_sub(f(&x));
            let busy = d(|c| c.user) + d(|c| c.nice) + d(|c| c.system);
            let steal = d(|c| c.steal);
            let rest = d(|c| c.idle) + d(|c| c.iowait) + d(|c| c.irq) + d(|c| c.softirq);
            (busy, steal, busy + steal + rest)
        }
        _ => (0, 0, 0),
    };
    let (freq_mhz, freq_changed) = freq_summary(&a.freq_khz, &b.freq_khz);
    Noise {
        wall_s: wall,
        background_cpus: cpus(busy.saturating_sub(ours)),
        steal_fraction: if total > 0 {
            (steal as f64 / total as f64).clamp(0.0, 1.0)
        } else {
            0.0
        },
        own_cpus: cpus(ours),
        freq_mhz,
        freq_changed,
    }
}

/// The range of frequencies seen at either end, and whether one CPU's
/// moved by more than 10 % of its starting value.
fn freq_summary(a: &[(usize, u64)], b: &[(usize, u64)]) -> (Option<(f64, f64)>, bool) {
    let range = a.iter().chain(b).map(|&(_, khz)| khz as f64 / 1000.0).fold(
        None,
        |r: Option<(f64, f64)>, f| match r {
            None => Some((f, f)),
            Some((lo, hi)) => Some((lo.min(f), hi.max(f))),
        },
    );
    let changed = a.iter().any(|&(cpu, f0)| {
        b.iter()
            .find(|&&(c, _)| c == cpu)
            .is_some_and(|&(_, f1)| f1.abs_diff(f0) as f64 > 0.1 * f0 as f64)
    });
    (range, changed)
}

/// The `cpu` line of /proc/stat; fields an old kernel lacks are 0.
fn parse_proc_stat(text: &str) -> Option<CpuTicks> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let mut v = [0u64; 8];
    for (slot, f) in v.iter_mut().zip(line.split_ascii_whitespace().skip(1)) {
        *slot = f.parse().ok()?;
    }
    let [user, nice, system, idle, iowait, irq, softirq, steal] = v;
    Some(CpuTicks {
        user,
        nice,
        system,
        idle,
        iowait,
        irq,
        softirq,
        steal,
    })
}

/// The fields of /proc/PID/stat (or /proc/PID/task/TID/stat) used here.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TaskStat<'a> {
    /// `comm`, raw: any bytes but NUL, including spaces and ')'.
    comm: &'a [u8],
    /// Field 3: R, S, D…
    state: u8,
    /// Fields 14 + 15, utime + stime, in ticks.
    ticks: u64,
    /// Field 22, start time in ticks since boot: with the id, names one
    /// task even when the id is reused.
    start: u64,
    /// Field 39, the CPU it last ran on.
    cpu: usize,
}

/// Parse a stat line. The comm is whatever lies between the first '('
/// and the *last* ')': a thread may call itself "a) R (b" and must not
/// shift the fields after it.
fn parse_task_stat(buf: &[u8]) -> Option<TaskStat<'_>> {
    let open = buf.iter().position(|&b| b == b'(')?;
    let close = buf.iter().rposition(|&b| b == b')')?;
    if close < open {
        return None;
    }
    let rest = std::str::from_utf8(&buf[close + 1..]).ok()?;
    let (mut state, mut utime, mut stime, mut start, mut cpu) = (None, None, None, None, None);
    // Field numbers as in proc(5): the first after the comm is 3.
    for (n, f) in (3..=39).zip(rest.split_ascii_whitespace()) {
        match n {
            3 => state = f.bytes().next(),
            14 => utime = f.parse::<u64>().ok(),
            15 => stime = f.parse::<u64>().ok(),
            22 => start = f.parse::<u64>().ok(),
            39 => cpu = f.parse::<usize>().ok(),
            _ => {}
        }
    }
    Some(TaskStat {
        comm: &buf[open + 1..close],
        state: state?,
        ticks: utime? + stime?,
        start: start?,
        cpu: cpu?,
    })
}

/// `se.nr_migrations` from the text of /proc/…/sched.
fn parse_migrations(buf: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(buf).ok()?;
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("se.nr_migrations"))?;
    line.split_once(':')?.1.trim().parse().ok()
}

/// Read a whole (small) file into `buf`, reusing its allocation.
fn read_into(path: &str, buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.clear();
    File::open(path)?.read_to_end(buf)?;
    Ok(())
}

/// Current frequency of every CPU that shows one, in kHz, by CPU number.
/// Virtual machines usually show none.
fn read_freqs() -> Vec<(usize, u64)> {
    let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(cpu) = name
            .to_str()
            .and_then(|n| n.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let khz = std::fs::read_to_string(e.path().join("cpufreq/scaling_cur_freq"))
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok());
        if let Some(khz) = khz.filter(|&k| k > 0) {
            out.push((cpu, khz));
        }
    }
    out.sort_unstable();
    out
}

/// What a [`ThreadWatch`] saw between a [`WatchMark`] and now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Observed {
    /// per thread: "name (tid)" -> sorted CPUs it was seen on
    pub threads: BTreeMap<String, Vec<usize>>,
    /// threads that migrated between CPUs in the interval (nr_migrations grew, or seen on 2+ CPUs)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<String>,
}

impl Observed {
    /// The CPUs of the threads whose name starts with `name_prefix`
    /// (thread names are at most 15 bytes: the kernel cuts them).
    pub fn cpus_of(&self, name_prefix: &str) -> Vec<usize> {
        union(
            self.threads
                .iter()
                .filter(|(k, _)| k.starts_with(name_prefix))
                .flat_map(|(_, v)| v),
        )
    }

    /// Every CPU any thread was seen on.
    pub fn all_cpus(&self) -> Vec<usize> {
        union(self.threads.values().flatten())
    }
}

fn union<'a>(cpus: impl Iterator<Item = &'a usize>) -> Vec<usize> {
    let mut v: Vec<usize> = cpus.copied().collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Watches on which CPU every thread of this process (and of the extra
/// pids) runs, from a sampler thread reading /proc every `period`.
///
/// Sampling alone cannot see a thread hop to another CPU and back
/// between two samples, so the kernel's own count of migrations
/// (`se.nr_migrations` of /proc/…/sched) is compared too, at the mark and
/// at [`ThreadWatch::since`]. Dropping the watch stops the sampler.
pub struct ThreadWatch {
    inner: Arc<Inner>,
    sampler: Option<JoinHandle<()>>,
}

/// A position in a [`ThreadWatch`]'s history, from [`ThreadWatch::mark`].
/// Marks are independent: a run can hold one while each of its cases
/// takes its own. The default mark is the watch's start.
#[derive(Debug, Clone, Default)]
pub struct WatchMark {
    epoch: u64,
    base: HashMap<TaskKey, Base>,
}

/// One thread, even across tid reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct TaskKey {
    pid: u32,
    tid: u32,
    start: u64,
}

/// A thread's counters at a mark.
#[derive(Debug, Clone, Copy)]
struct Base {
    ticks: u64,
    migrations: Option<u64>,
    /// The one CPU its affinity allowed, if only one.
    confined: Option<usize>,
}

struct Inner {
    stop: AtomicBool,
    state: Mutex<WatchState>,
}

/// What the samples have seen so far. Exited threads are kept (the last
/// `MAX_DEAD`) so that an interval still reports a thread that ran in it
/// and exited before its end.
struct WatchState {
    /// This process first, then the extra pids.
    pids: Vec<u32>,
    /// The sampler's own thread, never reported.
    skip_tid: u32,
    /// Samples taken so far; every sample has its own number.
    epoch: u64,
    /// Threads alive at the last sample, by (pid, tid).
    alive: HashMap<(u32, u32), TaskRec>,
    /// Threads that exited, oldest first.
    dead: VecDeque<TaskRec>,
    /// How many `TaskRec::stat` files are open.
    open: usize,
    // Buffers reused by every sample.
    path: String,
    buf: Vec<u8>,
    sched_buf: Vec<u8>,
    tids: Vec<u32>,
    gone: Vec<(u32, u32)>,
}

const MAX_DEAD: usize = 1024;

/// The sampler thread's name (15 bytes: the most a thread name keeps).
const SAMPLER_NAME: &str = "iiopbench-watch";

/// At most this many stat files stay open between samples: a pread of
/// an open file costs a third of open+read+close (about 3 µs against 9 µs
/// per thread on a VM), but a benchmark opening thousands of connections
/// must not run out of descriptors because of us. Threads beyond it are
/// read the slow way.
const MAX_OPEN: usize = 64;

#[derive(Debug)]
struct TaskRec {
    key: TaskKey,
    name: String,
    ticks: u64,
    cpu: usize,
    last_epoch: u64,
    /// nr_migrations and affinity when first seen: the baseline of a
    /// thread born after a mark (the count includes its first placement).
    first_migrations: Option<u64>,
    first_confined: Option<usize>,
    /// Per CPU, the last sample that saw the thread run there.
    seen: Vec<(usize, u64)>,
    /// Its stat file, kept open (see `MAX_OPEN`). It names the thread
    /// itself, not its id: once the thread is gone, reads fail even if
    /// the id is reused.
    stat: Option<File>,
}

impl WatchState {
    /// One pass over every thread.
    fn sample(&mut self) {
        self.epoch += 1;
        let epoch = self.epoch;
        for i in 0..self.pids.len() {
            let pid = self.pids[i];
            self.list_tids(pid);
            for j in 0..self.tids.len() {
                let tid = self.tids[j];
                if tid != self.skip_tid {
                    self.observe(pid, tid, epoch);
                }
            }
        }
        self.gone.clear();
        self.gone.extend(
            self.alive
                .iter()
                .filter(|(_, r)| r.last_epoch != epoch)
                .map(|(id, _)| *id),
        );
        for i in 0..self.gone.len() {
            if let Some(rec) = self.alive.remove(&self.gone[i]) {
                retire(&mut self.dead, &mut self.open, rec);
            }
        }
    }

    fn list_tids(&mut self, pid: u32) {
        self.tids.clear();
        self.path.clear();
        let _ = write!(self.path, "/proc/{pid}/task");
        let Ok(dir) = std::fs::read_dir(&self.path) else {
            return;
        };
        for e in dir.flatten() {
            if let Some(tid) = e.file_name().to_str().and_then(|n| n.parse().ok()) {
                self.tids.push(tid);
            }
        }
    }

    fn observe(&mut self, pid: u32, tid: u32, epoch: u64) {
        let id = (pid, tid);
        let kept = self
            .alive
            .get(&id)
            .and_then(|r| r.stat.as_ref())
            .map(|f| pread_into(f, &mut self.buf).is_ok());
        let mut opened = None;
        if kept != Some(true) {
            if kept == Some(false) {
                // The thread we held is gone; the id may name a new one.
                if let Some(r) = self.alive.get_mut(&id) {
                    r.stat = None;
                    self.open -= 1;
                }
            }
            self.path.clear();
            let _ = write!(self.path, "/proc/{pid}/task/{tid}/stat");
            let Ok(f) = File::open(&self.path) else {
                return; // exited meanwhile
            };
            if pread_into(&f, &mut self.buf).is_err() {
                return;
            }
            if self.open < MAX_OPEN {
                opened = Some(f);
            }
        }
        let Some(st) = parse_task_stat(&self.buf) else {
            return;
        };
        let name = String::from_utf8_lossy(st.comm);
        if let Some(rec) = self.alive.get_mut(&id).filter(|r| r.key.start == st.start) {
            // The CPU field is where the thread last ran, however long
            // ago: count it only when the thread ran since the last
            // sample, or was moved, or is running or queued there now.
            let ran = st.ticks > rec.ticks || st.cpu != rec.cpu || st.state == b'R';
            rec.ticks = st.ticks;
            rec.cpu = st.cpu;
            rec.last_epoch = epoch;
            if *rec.name != *name {
                rec.name = name.into_owned();
            }
            if ran {
                rec.saw(st.cpu, epoch);
            }
            if opened.is_some() && rec.stat.is_none() {
                rec.stat = opened;
                self.open += 1;
            }
            return;
        }
        // New since the last sample (perhaps under a reused id), so it
        // ran since then, and here.
        if let Some(old) = self.alive.remove(&id) {
            retire(&mut self.dead, &mut self.open, old);
        }
        if opened.is_some() {
            self.open += 1;
        }
        let mut rec = TaskRec {
            key: TaskKey {
                pid,
                tid,
                start: st.start,
            },
            name: name.into_owned(),
            ticks: st.ticks,
            cpu: st.cpu,
            last_epoch: epoch,
            first_migrations: read_migrations(&mut self.path, &mut self.sched_buf, pid, tid),
            first_confined: confined_to(tid),
            seen: Vec::new(),
            stat: opened,
        };
        rec.saw(st.cpu, epoch);
        self.alive.insert(id, rec);
    }
}

/// Move an exited thread's record to `dead`, closing its file and
/// forgetting the oldest beyond `MAX_DEAD`.
fn retire(dead: &mut VecDeque<TaskRec>, open: &mut usize, mut rec: TaskRec) {
    if rec.stat.take().is_some() {
        *open -= 1;
    }
    dead.push_back(rec);
    while dead.len() > MAX_DEAD {
        dead.pop_front();
    }
}

impl TaskRec {
    fn saw(&mut self, cpu: usize, epoch: u64) {
        match self.seen.iter_mut().find(|(c, _)| *c == cpu) {
            Some(s) => s.1 = epoch,
            None => self.seen.push((cpu, epoch)),
        }
    }
}

/// Read a /proc file from its start into `buf` with pread, so that an open
/// file can be read again and again. A proc file fills every read it can,
/// so a short read is the end. An empty file is an error: the task is gone.
fn pread_into(f: &File, buf: &mut Vec<u8>) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    buf.clear();
    loop {
        let at = buf.len();
        if buf.capacity() - at < 512 {
            buf.reserve(1024);
        }
        let want = buf.capacity() - at;
        buf.resize(at + want, 0);
        let n = match f.read_at(&mut buf[at..], at as u64) {
            Ok(n) => n,
            Err(e) => {
                buf.truncate(at);
                return Err(e);
            }
        };
        buf.truncate(at + n);
        if n < want {
            break;
        }
    }
    if buf.is_empty() {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

/// A thread's nr_migrations, when the kernel shows /proc/…/sched.
fn read_migrations(path: &mut String, buf: &mut Vec<u8>, pid: u32, tid: u32) -> Option<u64> {
    path.clear();
    write!(path, "/proc/{pid}/task/{tid}/sched").ok()?;
    read_into(path, buf).ok()?;
    parse_migrations(buf)
}

/// The CPU a thread's affinity confines it to, if it allows only one;
/// None when it allows more, or cannot be asked (it exited, or the
/// machine has more CPUs than a cpu_set_t holds).
fn confined_to(tid: u32) -> Option<usize> {
    let tid = libc::pid_t::try_from(tid).ok()?;
    // SAFETY: sched_getaffinity fills the cpu_set_t we own, whose size
    // we pass; CPU_COUNT and CPU_ISSET only read it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0
            || libc::CPU_COUNT(&set) != 1
        {
            return None;
        }
        (0..libc::CPU_SETSIZE as usize).find(|&c| libc::CPU_ISSET(c, &set))
    }
}

fn lock(m: &Mutex<WatchState>) -> MutexGuard<'_, WatchState> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ThreadWatch {
    /// Start sampling this process's threads and those of `extra_pids`
    /// every `period`. The sampler thread is named `iiopbench-watch` and
    /// never reports itself. Each sample stops whatever ran on the
    /// sampler's CPU for as long as the sample takes (tens of µs on a
    /// VM): see [`start_on`](Self::start_on) to keep it off the CPUs
    /// being measured.
    pub fn start(extra_pids: &[u32], period: Duration) -> ThreadWatch {
        Self::start_on(extra_pids, period, None)
    }

    /// [`start`](Self::start), the sampler thread pinned to `cpus` (when
    /// given and the kernel allows it; else it runs where this thread
    /// may).
    pub fn start_on(extra_pids: &[u32], period: Duration, cpus: Option<&[usize]>) -> ThreadWatch {
        let cpus = cpus.filter(|c| !c.is_empty()).map(<[usize]>::to_vec);
        let me = std::process::id();
        let mut pids = vec![me];
        for &p in extra_pids {
            if !pids.contains(&p) {
                pids.push(p);
            }
        }
        let inner = Arc::new(Inner {
            stop: AtomicBool::new(false),
            state: Mutex::new(WatchState {
                pids,
                skip_tid: 0,
                epoch: 0,
                alive: HashMap::new(),
                dead: VecDeque::new(),
                open: 0,
                path: String::with_capacity(64),
                buf: Vec::with_capacity(1024),
                sched_buf: Vec::with_capacity(4096),
                tids: Vec::new(),
                gone: Vec::new(),
            }),
        });
        let period = period.max(Duration::from_millis(1));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        let shared = Arc::clone(&inner);
        let sampler = std::thread::Builder::new()
            .name(SAMPLER_NAME.into())
            .spawn(move || {
                // SAFETY: gettid has no preconditions.
                let tid = unsafe { libc::gettid() };
                let tid = u32::try_from(tid).unwrap_or(0);
                if let Some(c) = &cpus {
                    // Not possible (a cpuset without them): where it was.
                    let _ = crate::sysinfo::pin_current_thread(c);
                }
                // Below the measured threads, so that a waking sampler
                // rarely preempts one; not the lowest (19), which a
                // saturated machine starves of samples for 100 ms and
                // more. Mark and since sample for themselves anyway. (On
                // Linux the nice value is per thread.)
                // SAFETY: setpriority has no memory preconditions.
                unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, 10) };
                lock(&shared.state).skip_tid = tid;
                drop(ready_tx);
                sample_until_stopped(&shared, period);
            })
            .ok();
        // Once the sampler has named itself, no sample can count it.
        let _ = ready_rx.recv();
        ThreadWatch { inner, sampler }
    }

    /// Where the watch is now, for a later [`ThreadWatch::since`]. Takes
    /// a sample of its own, so the interval starts exactly here.
    pub fn mark(&self) -> WatchMark {
        let mut guard = lock(&self.inner.state);
        let st = &mut *guard;
        st.sample();
        let mut base = HashMap::with_capacity(st.alive.len());
        for rec in st.alive.values() {
            let (pid, tid) = (rec.key.pid, rec.key.tid);
            let migrations = read_migrations(&mut st.path, &mut st.sched_buf, pid, tid);
            base.insert(
                rec.key,
                Base {
                    ticks: rec.ticks,
                    migrations,
                    confined: confined_to(tid),
                },
            );
        }
        WatchMark {
            epoch: st.epoch,
            base,
        }
    }

    /// The threads that used CPU from `mark` until now (a sample is taken
    /// first), with the CPUs each ran on, and those that moved: seen on
    /// two CPUs, or its migration count grew, unless its affinity confined
    /// it to the same single CPU at both ends (the count also grows at a
    /// thread's first placement, and when it is pinned).
    pub fn since(&self, mark: &WatchMark) -> Observed {
        let mut guard = lock(&self.inner.state);
        let st = &mut *guard;
        st.sample();
        let mut out = Observed::default();
        let mut cpus = Vec::new();
        let alive = st.alive.values().map(|r| (r, true));
        for (rec, is_alive) in alive.chain(st.dead.iter().map(|r| (r, false))) {
            if rec.last_epoch <= mark.epoch {
                continue; // gone before the mark
            }
            if rec.key.pid == st.pids[0] && rec.name == SAMPLER_NAME {
                continue; // another watch's sampler
            }
            let base = mark.base.get(&rec.key);
            if rec.ticks <= base.map_or(0, |b| b.ticks) {
                continue; // idle all along
            }
            cpus.clear();
            cpus.extend(
                rec.seen
                    .iter()
                    .filter(|(_, e)| *e > mark.epoch)
                    .map(|(c, _)| *c),
            );
            if cpus.is_empty() {
                cpus.push(rec.cpu);
            }
            cpus.sort_unstable();
            cpus.dedup();
            let (pid, tid) = (rec.key.pid, rec.key.tid);
            // An exited thread's count cannot be read any more: only what
            // the samples saw of it counts.
            let migrated = is_alive && {
                let before = base.map_or(rec.first_migrations, |b| b.migrations);
                let now = read_migrations(&mut st.path, &mut st.sched_buf, pid, tid);
                matches!((before, now), (Some(b), Some(n)) if n > b)
            };
            // Confined to the same single CPU at both ends: it ran nowhere
            // else (unless re-pinned there and back in between).
            let pinned = || {
                let before = base.map_or(rec.first_confined, |b| b.confined);
                before.is_some() && before == confined_to(tid)
            };
            let label = format!("{} ({tid})", rec.name);
            if cpus.len() > 1 || (migrated && !pinned()) {
                out.moved.push(label.clone());
            }
            out.threads.insert(label, cpus.clone());
        }
        out.moved.sort();
        out
    }
}

/// The sampler's loop; parks between samples so that a drop wakes it at
/// once.
fn sample_until_stopped(inner: &Inner, period: Duration) {
    while !inner.stop.load(Ordering::Acquire) {
        lock(&inner.state).sample();
        let until = Instant::now() + period;
        loop {
            if inner.stop.load(Ordering::Acquire) {
                return;
            }
            let now = Instant::now();
            if now >= until {
                break;
            }
            std::thread::park_timeout(until - now);
        }
    }
}

impl Drop for ThreadWatch {
    fn drop(&mut self) {
        self.inner.stop.store(true, Ordering::Release);
        if let Some(h) = self.sampler.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

impl std::fmt::Debug for ThreadWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = lock(&self.inner.state);
        f.debug_struct("ThreadWatch")
            .field("pids", &st.pids)
            .field("samples", &st.epoch)
            .field("sampling", &self.sampler.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The live tests measure CPU time and placement: run them one at a
    /// time, so that one's spinning does not starve another's.
    static LIVE: Mutex<()> = Mutex::new(());

    fn live() -> MutexGuard<'static, ()> {
        LIVE.lock().unwrap_or_else(|e| e.into_inner())
    }

    const PROC_STAT: &str = "cpu  643768 137273 172204 903632 6417 0 17268 742 0 0\n\
        cpu0 311835 67946 91251 460984 1378 0 10994 357 0 0\n\
        cpu1 331933 69326 80952 442647 5038 0 6274 385 0 0\n\
        intr 11337553 0 0 0\n\
        ctxt 123\n";

    #[test]
    fn parses_proc_stat() {
        let c = parse_proc_stat(PROC_STAT).unwrap();
        assert_eq!(
            c,
            CpuTicks {
                user: 643768,
                nice: 137273,
                system: 172204,
                idle: 903632,
                iowait: 6417,
                irq: 0,
                softirq: 17268,
                steal: 742,
            }
        );
        // An old kernel without steal: missing fields are 0.
        let old = parse_proc_stat("cpu  1 2 3 4 5 6 7\n").unwrap();
        assert_eq!((old.softirq, old.steal), (7, 0));
        assert_eq!(parse_proc_stat("cpu0 1 2 3\n"), None);
        assert_eq!(parse_proc_stat("cpu  1 x 3\n"), None);
    }

    #[test]
    fn parses_task_stat_with_odd_comm() {
        let line = b"19284 (we) ird (x) 1) S 19274 19274 18948 0 -1 4194304 102 0 0 0 \
            7 3 0 0 20 0 1 0 949841 3133440 384 18446744073709551615 94536017768448 \
            94536017788329 140721967093216 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 \
            94536017804336 94536017805952 94536482566144 140721967094458 \
            140721967094478 140721967094478 140721967095787 0\n";
        let s = parse_task_stat(line).unwrap();
        assert_eq!(
            s,
            TaskStat {
                comm: b"we) ird (x) 1",
                state: b'S',
                ticks: 10,
                start: 949841,
                cpu: 3,
            }
        );
        assert_eq!(parse_task_stat(b"1 (short) R 1 2 3"), None);
        assert_eq!(parse_task_stat(b"garbage"), None);
        // Our own thread, as the kernel writes it (/proc/self/stat would
        // show the state of the main thread, asleep in the test harness).
        let mut buf = Vec::new();
        read_into("/proc/thread-self/stat", &mut buf).unwrap();
        let me = parse_task_stat(&buf).unwrap();
        assert_eq!(me.state, b'R');
        assert!(me.start > 0);
    }

    #[test]
    fn parses_sched() {
        let text = b"cat (19285, #threads: 1)\n\
            -------------------------------------------------------------------\n\
            se.exec_start                                :       9494909.244476\n\
            se.nr_migrations                             :                    4\n\
            nr_switches                                  :                    1\n";
        assert_eq!(parse_migrations(text), Some(4));
        assert_eq!(parse_migrations(b"nr_switches : 1\n"), None);
    }

    fn snap(at: Instant, machine: CpuTicks, own: u64, extra: Vec<Option<(u64, u64)>>) -> Snapshot {
        Snapshot {
            at,
            hz: 100.0,
            machine: Some(machine),
            own: Some(own),
            extra,
            freq_khz: Vec::new(),
        }
    }

    #[test]
    fn noise_from_counters() {
        let t0 = Instant::now();
        let c0 = parse_proc_stat(PROC_STAT).unwrap();
        // Two seconds on two CPUs: 400 ticks. 200 busy, 20 stolen.
        let c1 = CpuTicks {
            user: c0.user + 150,
            nice: c0.nice + 10,
            system: c0.system + 40,
            idle: c0.idle + 170,
            iowait: c0.iowait.saturating_sub(5), // goes backwards: ignored
            irq: c0.irq + 5,
            softirq: c0.softirq + 5,
            steal: c0.steal + 20,
        };
        let mut a = snap(
            t0,
            c0,
            1000,
            vec![Some((7, 50)), Some((8, 10)), Some((9, 10)), None],
        );
        let mut b = snap(
            t0 + Duration::from_secs(2),
            c1,
            1080, // 80 ticks ours
            // +20 from a server; one exited; one pid now names another
            // process; one appeared: none of these three counts.
            vec![Some((7, 70)), None, Some((99, 500)), Some((5, 300))],
        );
        a.freq_khz = vec![(0, 1_200_000), (1, 3_000_000)];
        b.freq_khz = vec![(0, 1_250_000), (1, 2_000_000)];
        let n = noise_between(&a, &b);
        assert_eq!(n.wall_s, 2.0);
        assert!((n.own_cpus - 0.5).abs() < 1e-9, "{n:?}");
        assert!((n.background_cpus - 0.5).abs() < 1e-9, "{n:?}");
        assert!((n.steal_fraction - 0.05).abs() < 1e-9, "{n:?}");
        assert_eq!(n.freq_mhz, Some((1200.0, 3000.0)));
        assert!(n.freq_changed);

        // Ours above the machine's busy (tick rounding): clamped at 0.
        b.own = Some(1300);
        let n = noise_between(&a, &b);
        assert_eq!(n.background_cpus, 0.0);
        assert!(n.own_cpus > 1.0);

        // No time at all: zeros, not NaN.
        b.at = a.at;
        let n = noise_between(&a, &b);
        assert_eq!((n.wall_s, n.background_cpus, n.own_cpus), (0.0, 0.0, 0.0));
        let n = noise_between(&a, &a);
        assert_eq!(n.steal_fraction, 0.0);
        assert!(!n.freq_changed);

        // No /proc/stat: nothing to say about the machine.
        let mut c = snap(t0 + Duration::from_secs(1), c1, 1050, Vec::new());
        c.machine = None;
        let n = noise_between(&a, &c);
        assert_eq!((n.background_cpus, n.steal_fraction), (0.0, 0.0));
        assert!((n.own_cpus - 0.5).abs() < 1e-9);
    }

    #[test]
    fn frequency_change_is_per_cpu_and_relative() {
        let a = [(0, 2_000_000), (1, 1_000_000)];
        assert_eq!(
            freq_summary(&a, &[(0, 2_150_000), (1, 1_090_000)]),
            (Some((1000.0, 2150.0)), false)
        );
        assert!(freq_summary(&a, &[(0, 2_000_000), (1, 1_200_000)]).1);
        // A CPU seen at one end only changes nothing.
        assert!(!freq_summary(&a, &[(2, 500_000)]).1);
        assert_eq!(freq_summary(&[], &[]), (None, false));
    }

    #[test]
    fn merge_weights_by_wall_time() {
        let quiet = Noise {
            wall_s: 3.0,
            background_cpus: 0.0,
            steal_fraction: 0.0,
            own_cpus: 1.0,
            freq_mhz: Some((1000.0, 2000.0)),
            freq_changed: false,
        };
        let noisy = Noise {
            wall_s: 1.0,
            background_cpus: 2.0,
            steal_fraction: 0.4,
            own_cpus: 2.0,
            freq_mhz: Some((800.0, 1500.0)),
            freq_changed: true,
        };
        let m = Noise::merge(&[quiet.clone(), noisy]);
        assert_eq!(m.wall_s, 4.0);
        assert!((m.background_cpus - 0.5).abs() < 1e-9);
        assert!((m.steal_fraction - 0.1).abs() < 1e-9);
        assert!((m.own_cpus - 1.25).abs() < 1e-9);
        assert_eq!(m.freq_mhz, Some((800.0, 2000.0)));
        assert!(m.freq_changed);
        assert_eq!(Noise::merge(std::slice::from_ref(&quiet)), quiet);
        assert_eq!(Noise::merge(&[]), Noise::default());
        // No wall time anywhere: a plain mean, still no NaN.
        let z = Noise {
            wall_s: 0.0,
            own_cpus: 1.0,
            ..Noise::default()
        };
        assert_eq!(Noise::merge(&[z.clone(), Noise::default()]).own_cpus, 0.5);
    }

    #[test]
    fn problems_name_what_is_wrong() {
        let clean = Noise {
            wall_s: 10.0,
            background_cpus: 0.2,
            steal_fraction: 0.01,
            own_cpus: 1.0,
            freq_mhz: Some((2400.0, 2400.0)),
            freq_changed: false,
        };
        assert!(clean.problems().is_empty());
        assert!(Noise::default().problems().is_empty());
        let dirty = Noise {
            background_cpus: 0.93,
            steal_fraction: 0.071,
            freq_mhz: Some((1200.0, 3000.0)),
            freq_changed: true,
            ..clean.clone()
        };
        assert_eq!(
            dirty.problems(),
            [
                "background load 0.93 CPUs",
                "steal 7.1 %",
                "CPU frequency changed (1200–3000 MHz)"
            ]
        );
        // 0.3 CPUs over 100 ms is three ticks: rounding, not load.
        let short = Noise {
            wall_s: 0.1,
            background_cpus: 0.3,
            steal_fraction: 0.1,
            ..clean
        };
        assert!(short.problems().is_empty(), "{:?}", short.problems());
    }

    #[test]
    fn serde_leaves_out_what_is_absent() {
        let n = Noise {
            wall_s: 1.5,
            background_cpus: 0.1,
            ..Noise::default()
        };
        let j = serde_json::to_value(&n).unwrap();
        assert_eq!(
            j,
            serde_json::json!({"wall_s": 1.5, "background_cpus": 0.1, "steal_fraction": 0.0, "own_cpus": 0.0})
        );
        assert_eq!(serde_json::from_value::<Noise>(j).unwrap(), n);
        let f = Noise {
            freq_mhz: Some((800.0, 3000.0)),
            freq_changed: true,
            ..n
        };
        let back: Noise = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
        assert_eq!(back, f);

        let o = Observed {
            threads: [("a (1)".to_string(), vec![0])].into(),
            moved: Vec::new(),
        };
        let j = serde_json::to_string(&o).unwrap();
        assert_eq!(j, r#"{"threads":{"a (1)":[0]}}"#);
        assert_eq!(serde_json::from_str::<Observed>(&j).unwrap(), o);
    }

    #[test]
    fn observed_unions() {
        let o = Observed {
            threads: [
                ("tokio-rt (10)".to_string(), vec![1]),
                ("tokio-rt (11)".to_string(), vec![0, 1]),
                ("client (12)".to_string(), vec![3]),
            ]
            .into(),
            moved: vec!["tokio-rt (11)".into()],
        };
        assert_eq!(o.cpus_of("tokio"), [0, 1]);
        assert_eq!(o.cpus_of("client"), [3]);
        assert!(o.cpus_of("server").is_empty());
        assert_eq!(o.all_cpus(), [0, 1, 3]);
    }

    fn my_tid() -> u32 {
        // SAFETY: gettid has no preconditions.
        u32::try_from(unsafe { libc::gettid() }).unwrap()
    }

    /// The CPUs the calling thread may use.
    fn my_cpus() -> Vec<usize> {
        // SAFETY: sched_getaffinity fills the cpu_set_t we own; CPU_ISSET
        // reads it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
                0
            );
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect()
        }
    }

    /// Confine the calling thread to `cpu`.
    fn pin(cpu: usize) {
        // SAFETY: CPU_SET writes into the cpu_set_t we own;
        // sched_setaffinity reads it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            assert_eq!(
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
                0
            );
        }
    }

    fn spin(d: Duration) {
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < d {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }

    fn key_of(o: &Observed, tid: u32) -> Option<(&String, &Vec<usize>)> {
        let suffix = format!("({tid})");
        o.threads.iter().find(|(k, _)| k.ends_with(&suffix))
    }

    #[test]
    fn pinned_busy_thread_is_seen_on_its_cpu_only() {
        let _live = live();
        let watch = ThreadWatch::start(&[], Duration::from_millis(20));
        let cpu = my_cpus()[0];
        let (tid, seen) = std::thread::Builder::new()
            .name("nz-pinned".into())
            .spawn(move || {
                pin(cpu);
                let mark = watch.mark();
                spin(Duration::from_millis(150));
                (my_tid(), watch.since(&mark))
            })
            .unwrap()
            .join()
            .unwrap();
        let (name, cpus) = key_of(&seen, tid).unwrap_or_else(|| panic!("{seen:?}"));
        assert_eq!(name, &format!("nz-pinned ({tid})"));
        assert_eq!(cpus, &[cpu], "{seen:?}");
        assert!(!seen.moved.contains(name), "{seen:?}");
        // The sampler and idle threads (this test's own, waiting in join)
        // are not reported.
        assert!(seen.cpus_of("iiopbench-watch").is_empty(), "{seen:?}");
        assert!(key_of(&seen, my_tid()).is_none(), "{seen:?}");
    }

    #[test]
    fn a_thread_moved_to_another_cpu_is_reported() {
        let _live = live();
        let cpus = my_cpus();
        assert!(cpus.len() >= 2, "this test needs two CPUs, has {cpus:?}");
        let (a, b) = (cpus[0], cpus[1]);
        let watch = ThreadWatch::start(&[], Duration::from_millis(20));
        let (tid, seen) = std::thread::Builder::new()
            .name("nz-mover".into())
            .spawn(move || {
                pin(a);
                let mark = watch.mark();
                spin(Duration::from_millis(70));
                pin(b);
                spin(Duration::from_millis(70));
                (my_tid(), watch.since(&mark))
            })
            .unwrap()
            .join()
            .unwrap();
        let label = format!("nz-mover ({tid})");
        // On a saturated machine the samples during the first half may
        // come too late; the kernel's migration count still tells.
        let cpus = seen
            .threads
            .get(&label)
            .unwrap_or_else(|| panic!("{seen:?}"));
        assert!(cpus.contains(&b), "{seen:?}");
        assert!(cpus.iter().all(|c| [a, b].contains(c)), "{seen:?}");
        assert!(seen.moved.contains(&label), "{seen:?}");
    }

    #[test]
    fn a_sampler_given_cpus_runs_there_and_one_without_where_its_creator_may() {
        let _g = live();
        let mine = crate::sysinfo::current_affinity();
        let last = *mine.last().expect("some CPU");
        let sampler = |w: &ThreadWatch| {
            let tid = lock(&w.inner.state).skip_tid;
            assert_ne!(tid, 0, "the sampler named itself before start returned");
            iiop_transport::affinity::affinity_of(tid as libc::pid_t)
        };
        let on = ThreadWatch::start_on(&[], Duration::from_millis(20), Some(&[last]));
        assert_eq!(sampler(&on), vec![last]);
        let free = ThreadWatch::start_on(&[], Duration::from_millis(20), None);
        assert_eq!(sampler(&free), mine);
        // An empty list is no placement either.
        let empty = ThreadWatch::start_on(&[], Duration::from_millis(20), Some(&[]));
        assert_eq!(sampler(&empty), mine);
    }

    #[test]
    fn threads_born_and_gone_inside_the_interval_count() {
        let _live = live();
        let watch = ThreadWatch::start(&[], Duration::from_millis(20));
        let (park_tx, park_rx) = std::sync::mpsc::channel::<()>();
        let idle = std::thread::Builder::new()
            .name("nz-idle".into())
            .spawn(move || {
                let _ = park_rx.recv();
            })
            .unwrap();
        let outer = watch.mark();
        let short_tid = std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("nz-short".into())
                .spawn_scoped(s, || {
                    spin(Duration::from_millis(80));
                    // However late the sampler runs on a busy machine, a
                    // sample sees this thread alive and busy.
                    let _ = watch.mark();
                    my_tid()
                })
                .unwrap()
                .join()
                .unwrap()
        });
        // A mark taken after the thread exited does not see it; the one
        // taken before still does.
        let inner = watch.mark();
        let after = watch.since(&inner);
        let seen = watch.since(&outer);
        drop(park_tx);
        idle.join().unwrap();
        let label = format!("nz-short ({short_tid})");
        assert!(seen.threads.contains_key(&label), "{seen:?}");
        assert!(!after.threads.contains_key(&label), "{after:?}");
        assert!(seen.cpus_of("nz-idle").is_empty(), "{seen:?}");
        assert!(seen.cpus_of("iiopbench-watch").is_empty(), "{seen:?}");
        drop(watch);
    }

    #[test]
    fn drop_stops_the_sampler_promptly() {
        let watch = ThreadWatch::start(&[], Duration::from_secs(3600));
        assert!(format!("{watch:?}").contains("ThreadWatch"));
        let t = Instant::now();
        drop(watch);
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    /// Kills and reaps the child however the test ends.
    struct Spinner(std::process::Child);

    impl Drop for Spinner {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn a_spinning_child_is_background_unless_it_is_ours() {
        let _live = live();
        let child = Spinner(
            std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .unwrap(),
        );
        let pid = child.0.id();
        let child_ticks = || {
            let mut buf = Vec::new();
            read_into(&format!("/proc/{pid}/stat"), &mut buf).unwrap();
            parse_task_stat(&buf).unwrap().ticks
        };
        // Both views of the same interval, so that whatever else the
        // machine does shows in both alike.
        let watch = ThreadWatch::start(&[pid], Duration::from_millis(20));
        let mark = watch.mark();
        let t0 = child_ticks();
        let not_ours = NoiseMeter::start(&[]);
        let ours = NoiseMeter::start(&[pid]);
        std::thread::sleep(Duration::from_millis(200));
        let without = not_ours.finish();
        let with = ours.finish();
        let t1 = child_ticks();
        let seen = watch.since(&mark);
        drop(child);

        assert!(without.wall_s >= 0.2, "{without:?}");
        assert!(without.background_cpus > 0.5, "{without:?}");
        // What the child had of a CPU: all of one on a quiet machine,
        // less when others compete.
        let child_cpus = (t1 - t0) as f64 / clock_ticks_per_s() / with.wall_s;
        // It ran (a tick or more: 1/20 of a CPU over 200 ms), however
        // much else competes; the rise below is what is checked.
        assert!(child_cpus >= 0.05, "{child_cpus}");
        let own_rise = with.own_cpus - without.own_cpus;
        assert!(
            (own_rise - child_cpus).abs() < 0.1,
            "{child_cpus} {with:?} vs {without:?}"
        );
        assert!(
            with.background_cpus < without.background_cpus - (child_cpus - 0.15),
            "{child_cpus} {with:?} vs {without:?}"
        );
        assert!((0.0..=1.0).contains(&with.steal_fraction));
        // The watch follows the extra pid's threads too.
        let sh = format!("sh ({pid})");
        assert!(
            seen.threads.get(&sh).is_some_and(|c| !c.is_empty()),
            "{seen:?}"
        );
        // Gone now: no growth, nothing negative.
        let after = ours.finish();
        assert!(after.own_cpus >= 0.0 && after.background_cpus >= 0.0);
    }
}
