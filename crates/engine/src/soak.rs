//! `iiopbench soak`: a bounded endurance run. Many connections send mixed
//! traffic (ping, echo of several types and sizes, oneways, get_stats) to
//! the embedded reference server (or `--target`) for `--duration` (at most
//! one hour), then report errors (expected 0), the server's resident
//! memory at start and end, and ping latency p50/p99 per interval (drift).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iiop_bench_idl::bench::elements::{CallMode, Elem};
use iiop_bench_idl::bench::types::Payload;
use iiop_bench_idl::client::BenchClient;

use serde::{Deserialize, Serialize};

use crate::bench::error_kind;
use crate::bench::session::{self, Session};
use crate::error::{check, fail, Error, JobError, Result};
use crate::hist::Latency;
use crate::options::{PlacementOpts, Sockets};
use crate::results::{param, Case, CaseParams, Results};
use crate::run_context::RunContext;
use crate::target::TargetOpts;

/// Longest soak accepted: a soak is a bounded test, not a service.
pub const MAX_DURATION: Duration = Duration::from_secs(3600);

/// A `soak` job. It has no `Default`: how long it runs is the caller's
/// to choose ([`SoakJob::new`]); the other fields default as the command
/// line's do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoakJob {
    #[serde(default)]
    pub target: TargetOpts,
    /// How long to run (at most 1h), e.g. `10m`.
    #[serde(with = "crate::units::duration")]
    pub duration: Duration,
    /// Connections, each one caller sending mixed traffic.
    #[serde(default = "default_connections")]
    pub connections: usize,
    /// Length of a latency interval (one row of the drift table).
    #[serde(with = "crate::units::duration", default = "default_interval")]
    pub interval: Duration,
    /// With a target: the server's process id, to read its resident memory
    /// from /proc (the embedded server's is this process's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_pid: Option<u32>,
    #[serde(default)]
    pub socket: Sockets,
    #[serde(default)]
    pub placement: PlacementOpts,
}

fn default_connections() -> usize {
    32
}

fn default_interval() -> Duration {
    Duration::from_secs(60)
}

impl SoakJob {
    /// A soak of `duration` with the command line's other defaults.
    pub fn new(duration: Duration) -> SoakJob {
        SoakJob {
            target: TargetOpts::default(),
            duration,
            connections: default_connections(),
            interval: default_interval(),
            server_pid: None,
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
        }
    }

    /// [`validate`](BenchJob::validate) without reading the target's file.
    pub fn validate_fields(&self) -> Result<(), JobError> {
        check(
            !self.duration.is_zero() && self.duration <= MAX_DURATION,
            || {
                format!(
                    "`duration` must be more than 0 and at most 1h (got {:?})",
                    self.duration
                )
            },
        )?;
        check((1..=1024).contains(&self.connections), || {
            "`connections` must be 1..=1024".into()
        })?;
        check(!self.interval.is_zero(), || {
            "`interval` must be more than 0".into()
        })?;
        self.socket.validate()?;
        self.placement.validate()
    }
}

session::bench_job!(SoakJob, "soak");

/// Resident set size of process `pid` (this process when `None`), KiB.
pub fn rss_kib(pid: Option<u32>) -> Option<u64> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/status"),
        None => "/proc/self/status".to_string(),
    };
    let s = std::fs::read_to_string(path).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The mix every caller cycles through (`ping` every other call, so its
/// latency series is dense enough for per-interval percentiles).
fn mix() -> Vec<Step> {
    let mut v = Vec::new();
    let echoes = [
        (Elem::Long, 1000),
        (Elem::Double, 16),
        (Elem::String, 100),
        (Elem::Octet, 16384),
        (Elem::Variant, 50),
        (Elem::PerfStruct, 200),
        (Elem::Octet, 0),
    ];
    for (e, n) in echoes {
        v.push(Step::Ping);
        v.push(Step::Echo(Arc::new(Payload::generate(e, n, false))));
    }
    v.push(Step::Ping);
    v.push(Step::Oneway(Arc::new(Payload::generate(
        Elem::Octet,
        512,
        false,
    ))));
    v.push(Step::Ping);
    v.push(Step::Oneway(Arc::new(Payload::generate(
        Elem::Double,
        64,
        false,
    ))));
    v.push(Step::Ping);
    v.push(Step::Stats);
    v
}

#[derive(Debug, Clone)]
enum Step {
    Ping,
    Echo(Arc<Payload>),
    Oneway(Arc<Payload>),
    Stats,
}

/// What all callers measured.
#[derive(Debug, Default)]
struct Tally {
    /// Ping latency per interval.
    ping: Vec<Latency>,
    pings: u64,
    echoes: u64,
    oneways: u64,
    stats_calls: u64,
    errors: BTreeMap<String, u64>,
    first_error: Option<String>,
}

impl Tally {
    fn error(&mut self, kind: String, what: String) {
        *self.errors.entry(kind).or_insert(0) += 1;
        if self.first_error.is_none() {
            self.first_error = Some(what);
        }
    }
}

/// Run the soak; the results and the error that makes the run fail (any
/// error counted), if any.
pub fn run(o: &SoakJob, ctx: &RunContext) -> (Results, Option<Error>) {
    session::run(
        o,
        Default::default(),
        ctx,
        |r| {
            param(&mut r.params, "duration_s", o.duration.as_secs_f64());
            param(&mut r.params, "connections", o.connections);
            param(&mut r.params, "interval_s", o.interval.as_secs_f64());
        },
        async |s: &Session, r: &mut Results| soak(o, s, r).await,
    )
}

async fn soak(o: &SoakJob, s: &Session, r: &mut Results) -> Result<()> {
    let pid = if s.embedded() { None } else { o.server_pid };
    let rss_known = s.embedded() || o.server_pid.is_some();
    let control = s
        .connect()
        .await
        .map_err(|e| fail!(Target, "soak: connecting: {e}"))?;
    control
        .reset()
        .await
        .map_err(|e| fail!(Target, "soak: reset: {e}"))?;
    let rss_start = rss_known.then(|| rss_kib(pid)).flatten();
    let start = Instant::now();
    let deadline = start + o.duration;
    let slots = o.duration.as_nanos().div_ceil(o.interval.as_nanos()) as usize;
    let tally = Arc::new(Mutex::new(Tally {
        ping: vec![Latency::new(); slots.max(1)],
        ..Tally::default()
    }));
    let mut workers = tokio::task::JoinSet::new();
    for i in 0..o.connections {
        let client = match s.connect().await {
            Ok(c) => c,
            Err(e) => {
                tally
                    .lock()
                    .expect("tally lock")
                    .error(error_kind(&e), format!("connection {i}: connect: {e}"));
                continue;
            }
        };
        workers.spawn(caller(
            i,
            client,
            mix(),
            start,
            deadline,
            o.interval,
            tally.clone(),
        ));
    }
    let quiet = !s.progress.listening();
    let mut shown = 0usize;
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::from_std(start + o.interval),
        o.interval,
    );
    loop {
        tokio::select! {
            r = workers.join_next() => if r.is_none() { break },
            _ = tick.tick(), if !quiet => {
                let t = tally.lock().expect("tally lock");
                if let Some(h) = t.ping.get(shown) {
                    let l = h.summary();
                    s.progress.note(&format!(
                        "soak: interval {} pings={} p50={:.1}us p99={:.1}us errors={} rss={}",
                        shown + 1,
                        h.len(),
                        l.p50,
                        l.p99,
                        t.errors.values().sum::<u64>(),
                        rss_known
                            .then(|| rss_kib(pid))
                            .flatten()
                            .map_or("n/a".into(), |k| format!("{k}KiB")),
                    ));
                }
                shown += 1;
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let rss_end = rss_known.then(|| rss_kib(pid)).flatten();
    let mut t = std::mem::take(&mut *tally.lock().expect("tally lock"));
    // The server's counters must match what was sent: every caller ended
    // with a ping, so its oneways were processed before this get_stats.
    match control.stats().await {
        Ok(st) => {
            let twoways = t.pings + t.echoes;
            if st.calls != twoways {
                t.error(
                    "call-count-mismatch".into(),
                    format!(
                        "server counted {} twoway calls, we made {twoways}",
                        st.calls
                    ),
                );
            }
            if st.oneways != t.oneways {
                t.error(
                    "oneway-count-mismatch".into(),
                    format!(
                        "server counted {} oneways, we sent {}",
                        st.oneways, t.oneways
                    ),
                );
            }
        }
        Err(e) => t.error(error_kind(&e), format!("final get_stats: {e}")),
    }
    for (i, h) in t.ping.iter().enumerate() {
        let secs = o
            .interval
            .as_secs_f64()
            .min(elapsed - i as f64 * o.interval.as_secs_f64());
        let mut c = Case {
            name: format!("ping interval {}", i + 1),
            params: CaseParams {
                ty: "none".into(),
                size: 0,
                mode: "ping".into(),
                extra: BTreeMap::new(),
            },
            calls: h.len(),
            seconds: secs.max(0.0),
            calls_per_sec: h.len() as f64 / secs.max(1e-9),
            latency_us: (!h.is_empty()).then(|| h.summary()),
            ..Case::default()
        };
        param(&mut c.params.extra, "interval", i + 1);
        r.cases.push(c);
    }
    let mut all = Latency::new();
    for h in &t.ping {
        all.merge(h);
    }
    let first = t
        .ping
        .first()
        .filter(|h| !h.is_empty())
        .map(|h| h.summary());
    let last = t
        .ping
        .iter()
        .rev()
        .find(|h| !h.is_empty())
        .map(|h| h.summary());
    let total_calls = t.pings + t.echoes + t.oneways + t.stats_calls;
    let mut total = Case {
        name: "soak total".into(),
        params: CaseParams {
            ty: "mixed".into(),
            size: 0,
            mode: "mixed".into(),
            extra: BTreeMap::new(),
        },
        calls: total_calls,
        seconds: elapsed,
        calls_per_sec: total_calls as f64 / elapsed.max(1e-9),
        latency_us: (!all.is_empty()).then(|| all.summary()),
        errors: t.errors.clone(),
        ..Case::default()
    };
    let x = &mut total.extra;
    param(x, "pings", t.pings);
    param(x, "echoes", t.echoes);
    param(x, "oneways", t.oneways);
    param(x, "get_stats", t.stats_calls);
    param(x, "server_rss_start_kib", rss_start);
    param(x, "server_rss_end_kib", rss_end);
    if let (Some(f), Some(l)) = (first, last) {
        param(x, "p50_drift_ratio", l.p50 / f.p50.max(1e-9));
        param(x, "p99_drift_ratio", l.p99 / f.p99.max(1e-9));
    }
    r.cases.push(total);
    let n: u64 = t.errors.values().sum();
    match t.first_error {
        Some(first) => Err(fail!(Target, "soak: {n} errors; first: {first}")),
        None => Ok(()),
    }
}

/// One connection's loop: the mix, round and round, until the deadline;
/// then a final ping so its oneways are processed before the check.
async fn caller(
    id: usize,
    client: BenchClient,
    mix: Vec<Step>,
    start: Instant,
    deadline: Instant,
    interval: Duration,
    tally: Arc<Mutex<Tally>>,
) {
    let mut k = id; // callers start at different points of the mix
    let mut fails_in_row = 0u32;
    while Instant::now() < deadline && !crate::interrupt::requested() {
        let step = &mix[k % mix.len()];
        k += 1;
        let t0 = Instant::now();
        let res = match step {
            Step::Ping => client.ping().await.map(|_| None),
            Step::Echo(p) => client.payload(CallMode::Echo, p).await.map(|got| {
                (got.as_ref() != Some(&**p))
                    .then(|| format!("echo_{} returned other data", p.elem()))
            }),
            Step::Oneway(p) => client.payload(CallMode::Oneway, p).await.map(|_| None),
            Step::Stats => client.stats().await.map(|_| None),
        };
        let ns = t0.elapsed().as_nanos() as u64;
        let mut t = tally.lock().expect("tally lock");
        match res {
            Ok(mismatch) => {
                fails_in_row = 0;
                match step {
                    Step::Ping => {
                        let slot = ((t0 - start).as_nanos() / interval.as_nanos()) as usize;
                        let last = t.ping.len() - 1;
                        t.ping[slot.min(last)].record_ns(ns);
                        t.pings += 1;
                    }
                    Step::Echo(_) => t.echoes += 1,
                    Step::Oneway(_) => t.oneways += 1,
                    Step::Stats => t.stats_calls += 1,
                }
                if let Some(m) = mismatch {
                    t.error("echo-mismatch".into(), format!("connection {id}: {m}"));
                }
            }
            Err(e) => {
                t.error(error_kind(&e), format!("connection {id}: {e}"));
                drop(t);
                fails_in_row += 1;
                if fails_in_row >= 3 {
                    return;
                }
                // A dead connection ends this caller (its error is counted).
                if client.is_closed() {
                    return;
                }
            }
        }
    }
    if let Err(e) = client.ping().await {
        tally
            .lock()
            .expect("tally lock")
            .error(error_kind(&e), format!("connection {id}: final ping: {e}"));
    } else {
        tally.lock().expect("tally lock").pings += 1;
    }
}
