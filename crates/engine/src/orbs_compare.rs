//! The cross-ORB comparison (`iiopbench orbs compare`): client against
//! client, server against server, and both against raw TCP, measured side
//! by side in one run into one results file (kind `orbs`, its ratios in
//! [`Comparison`]).
//!
//! Every server that is here (ours, started as a process of its own, and
//! the vendors' through `scripts/orbs/<orb>/start`) runs on the server
//! CPUs; while one is measured the others are paused (SIGSTOP), so nothing
//! else runs there. Every client (ours, in this process; the omniORB C++
//! client through `scripts/orbs/omniorb/client`) runs on the client CPUs.
//! For each point (mode, type, size) there are `reps` rounds, and more (up
//! to `max_reps`) while some pair's rounds spread more than
//! `spread_limit`; in each round every (client, server) pair runs once, a
//! server's runs together and omniORB's server in the middle, so that the
//! two runs a ratio divides ran close in time, in an order that rotates
//! between rounds so that the machine's drift favours none of them.
//! Figures are the receiving server's payload Mbit/s (bench.idl's
//! `get_stats`), medians of the rounds; ratios are medians of the
//! per-round paired ratios, with their range.
//!
//! The sections, as the report shows them ([`SECTIONS`]): 1. client vs
//! client (ours / the omniORB client, on each server); 2. server vs server
//! (each / omniORB's, under each client); 3. ours → ours / omniORB →
//! omniORB; 4. the physical limit (the fastest one-write-per-call oneway
//! pair between raw-TCP streams: raw, ORB, raw, ORB, raw); 5. latency p50
//! (ours → ours against raw TCP waiting the same way, and our client
//! against omniORB's on omniORB's server); 6. buffered oneways (our client
//! with `oneway_buffer`); 7. coalesced oneways (our client with
//! `coalesce_oneways`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use iiop_bench_idl::bench::elements::{CallMode, Elem};
use serde::{Deserialize, Serialize};

use crate::bench::latency::{LatencyJob, LatencyOp};
use crate::bench::tcp_baseline::{TcpJob, TcpPattern};
use crate::bench::throughput::ThroughputJob;
use crate::error::{bail, check, ensure, fail, Error, JobError, Result};
use crate::interop::matrix::{start_ready, tail, Child};
use crate::job::Job;
use crate::noise::NoiseMeter;
use crate::options::{CpuList, PlacementOpts, Sizes};
use crate::programs::ServerProcess;
use crate::rawtcp::StreamWrites;
use crate::results::{
    param, Case, CaseParams, Comparison, Interval, Placement, Ratio, Results, RunFigures,
};
use crate::run_context::RunContext;
use crate::target::TargetOpts;
use crate::units::format_size;

/// The kind its results carry.
pub const KIND: &str = "orbs";

/// The report's sections: id (a [`Ratio`]'s `section`), title, and what
/// its ratios divide.
pub const SECTIONS: [(&str, &str, &str); 7] = [
    (
        "client",
        "1. Client against client",
        "our client / the omniORB C++ client, on the same server",
    ),
    (
        "server",
        "2. Server against server",
        "each server / omniORB's, under the same client",
    ),
    (
        "both",
        "3. Both ours against both omniORB",
        "ours → ours / omniORB → omniORB; both clients write each call when it is made",
    ),
    (
        "limit",
        "4. The physical limit",
        "the fastest one-write-per-call oneway pair / raw TCP streams run either side of it \
         (raw, ORB, raw, ORB, raw); and / raw TCP written a frame per write with Nagle off",
    ),
    (
        "latency",
        "5. Latency (p50)",
        "ours → ours / raw TCP round trips waiting the same way (the run's sliced ratio); \
         our client / the omniORB client on omniORB's server (lower is better)",
    ),
    (
        "buffered",
        "6. Buffered oneways",
        "our client queuing oneways into writes of `oneway_buffer` bytes (SYNC_NONE with a byte \
         limit) / the omniORB client's per-call oneways, on each server",
    ),
    (
        "coalesced",
        "7. Coalesced oneways",
        "our client writing each oneway when made with Nagle on between them / the omniORB \
         client, on each server",
    ),
];

/// Servers not being measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IdleServers {
    /// Stopped (SIGSTOP) while another is measured: nothing else runs on
    /// the server CPUs (an idle JVM's JIT and GC threads did).
    #[default]
    Pause,
    /// Left running throughout.
    Run,
}

/// How our server runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OurServer {
    /// `threads-spin` when the server CPUs are apart from the client's
    /// (a server that sleeps between segments makes its client pay a
    /// wake-up for each), else `reactor`.
    #[default]
    Auto,
    /// The default reactor.
    Reactor,
    /// A thread per connection that, after each message, polls up to
    /// 1 ms for the next bytes before it blocks.
    ThreadsSpin,
}

/// A cross-ORB comparison (`Default`: the full run; [`quick`](Self::quick)
/// the short one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OrbsCompareJob {
    /// Servers to measure, where installed: `ours` and vendor ORBs
    /// (`orbs list`); omniORB's client is always one of the clients.
    pub servers: Vec<String>,
    #[serde(with = "crate::bench::elems")]
    pub types: Vec<Elem>,
    pub sizes: Sizes,
    /// `oneway` and/or `twoway`.
    #[serde(with = "crate::bench::modes")]
    pub modes: Vec<CallMode>,
    /// Rounds per point.
    pub reps: u32,
    /// Rounds at most for a point whose pairs' rounds disagree.
    pub max_reps: u32,
    /// A pair's (max − min) / median of its rounds above which a point
    /// gets more rounds.
    pub spread_limit: f64,
    /// Payload bytes per run (at least).
    #[serde(with = "crate::units::size")]
    pub total: u64,
    /// Each run lasts at least this long.
    #[serde(with = "crate::units::duration")]
    pub min_duration: Duration,
    /// Where every server runs (default: the second CPU this process may
    /// use, else the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<CpuList>,
    /// Where every client runs (default: the first CPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cpus: Option<CpuList>,
    pub idle_servers: IdleServers,
    /// Section 6's buffering client's byte limit; `None` leaves section 6
    /// out.
    #[serde(
        with = "crate::units::opt_size",
        skip_serializing_if = "Option::is_none"
    )]
    pub oneway_buffer: Option<u64>,
    /// Section 7: our client with `coalesce_oneways` on every server's
    /// oneway points too.
    pub coalesced: bool,
    pub our_server: OurServer,
    /// Calls per latency run (section 5).
    pub latency_count: u64,
    /// How long a server may take to say `ready`.
    #[serde(with = "crate::units::duration")]
    pub start_timeout: Duration,
}

impl Default for OrbsCompareJob {
    fn default() -> Self {
        OrbsCompareJob {
            servers: ["ours", "omniorb", "jacorb", "tao"]
                .map(String::from)
                .to_vec(),
            types: vec![
                Elem::Octet,
                Elem::Double,
                Elem::Long,
                Elem::PerfStruct,
                Elem::Char,
            ],
            sizes: Sizes(vec![1 << 10, 8 << 10, 64 << 10, 128 << 10]),
            modes: vec![CallMode::Oneway, CallMode::Twoway],
            reps: 3,
            max_reps: 6,
            spread_limit: 0.3,
            total: 64 << 20,
            min_duration: Duration::from_secs(1),
            server_cpus: None,
            client_cpus: None,
            idle_servers: IdleServers::Pause,
            oneway_buffer: Some(64 << 10),
            coalesced: true,
            our_server: OurServer::Auto,
            latency_count: 5000,
            start_timeout: Duration::from_secs(90),
        }
    }
}

impl OrbsCompareJob {
    /// The short run (`--quick`): octet and char at 1 KiB and 64 KiB, two
    /// rounds (three where they disagree), 8 MiB and 0.2 s per run.
    pub fn quick() -> Self {
        OrbsCompareJob {
            types: vec![Elem::Octet, Elem::Char],
            sizes: Sizes(vec![1 << 10, 64 << 10]),
            reps: 2,
            max_reps: 3,
            total: 8 << 20,
            min_duration: Duration::from_millis(200),
            latency_count: 2000,
            ..OrbsCompareJob::default()
        }
    }

    /// Everything that can be checked before anything starts.
    pub fn validate(&self) -> Result<(), JobError> {
        check(!self.servers.is_empty(), || "`servers` is empty".into())?;
        for s in &self.servers {
            check(
                s == OURS || crate::orbs::ORBS.iter().any(|(n, _)| n == s),
                || {
                    format!(
                        "`servers`: unknown server {s:?}; known: ours, {}",
                        crate::orbs::ORBS.map(|o| o.0).join(", ")
                    )
                },
            )?;
        }
        check(!self.types.is_empty(), || "`types` is empty".into())?;
        check(!self.sizes.0.is_empty(), || "`sizes` is empty".into())?;
        check(self.sizes.0.iter().all(|&s| s > 0), || {
            "`sizes` must be more than 0 bytes".into()
        })?;
        check(!self.modes.is_empty(), || "`modes` is empty".into())?;
        check(
            self.modes
                .iter()
                .all(|m| matches!(m, CallMode::Oneway | CallMode::Twoway)),
            || "`modes`: the comparison measures oneway and twoway".into(),
        )?;
        check(self.reps >= 1, || "`reps` must be at least 1".into())?;
        check(self.max_reps >= self.reps, || {
            "`max_reps` is less than `reps`".into()
        })?;
        check(self.spread_limit > 0.0, || {
            "`spread_limit` must be more than 0".into()
        })?;
        check(self.total > 0, || "`total` must be more than 0".into())?;
        check(self.latency_count >= 1, || {
            "`latency_count` must be at least 1".into()
        })?;
        check(self.oneway_buffer != Some(0), || {
            "`oneway_buffer` must be more than 0 (leave it out for no section 6)".into()
        })?;
        Ok(())
    }
}

/// Our ORB's name among servers and clients.
pub const OURS: &str = "ours";
const OMNIORB: &str = "omniorb";
const BUFFERED: &str = "ours-buffered";
const COALESCED: &str = "ours-coalesced";

/// A server or client as the report names it.
pub fn display_name(n: &str) -> &str {
    match n {
        OURS => "iiopbench",
        OMNIORB => "omniORB",
        "jacorb" => "JacORB",
        "tao" => "TAO",
        "omniorbpy" => "omniORBpy",
        BUFFERED => "iiopbench --oneway-buffer",
        COALESCED => "iiopbench --coalesce-oneways",
        other => other,
    }
}

/// `items` rotated left by `rep` places.
fn rotated<T: Clone>(rep: usize, items: &[T]) -> Vec<T> {
    if items.is_empty() {
        return Vec::new();
    }
    let k = rep % items.len();
    items[k..].iter().chain(&items[..k]).cloned().collect()
}

/// The (client, server) runs of round `rep` of one point. A ratio
/// divides two runs, and a VM changes speed for seconds at a time, so the
/// runs a ratio divides go as close together as they can: a server's runs
/// together (the client ratios), omniORB's server in the middle (every
/// server ratio at most two servers away). Rounds rotate the other
/// servers and the clients, so that no run always goes first.
pub fn round_order(rep: usize, servers: &[String], clients: &[String]) -> Vec<(String, String)> {
    let others: Vec<String> = servers.iter().filter(|s| *s != OMNIORB).cloned().collect();
    let mut order = rotated(rep, &others);
    if servers.iter().any(|s| s == OMNIORB) {
        order.insert(order.len() / 2, OMNIORB.to_string());
    }
    order
        .into_iter()
        .flat_map(|s| {
            rotated(rep, clients)
                .into_iter()
                .map(move |c| (c, s.clone()))
        })
        .collect()
}

/// (max − min) / median of a pair's rounds; `None` for none or a zero
/// median.
pub fn spread(xs: &[f64]) -> Option<f64> {
    let m = crate::bench::stats::median(xs)?;
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    (m != 0.0).then(|| (max - min) / m)
}

/// The per-round ratios x/y (rounds where y is 0 left out), as an
/// interval: its median is the figure, min and max its range.
pub fn paired(xs: &[f64], ys: &[f64]) -> Option<Interval> {
    let rs: Vec<f64> = xs
        .iter()
        .zip(ys)
        .filter(|(_, y)| **y != 0.0)
        .map(|(x, y)| x / y)
        .collect();
    (!rs.is_empty()).then(|| Interval::of(&rs))
}

fn median(xs: &[f64]) -> f64 {
    crate::bench::stats::median(xs).unwrap_or(0.0)
}

/// One run of a pair.
#[derive(Debug, Clone, Default)]
struct Sample {
    /// The receiving server's payload Mbit/s.
    mbps: f64,
    calls: u64,
    bytes: u64,
    seconds: f64,
    /// The server's CPU seconds per second of the run.
    server_cpu: Option<f64>,
    /// Oneway calls per TCP data segment.
    per_segment: Option<f64>,
    /// Raw TCP written in the same batches, beside it (`baseline`): its
    /// Mbit/s and the run's sliced ratio.
    raw: Option<(f64, f64)>,
}

/// The servers of a run, by name.
struct Servers {
    running: BTreeMap<String, (Child, PathBuf)>,
    idle: IdleServers,
}

impl Servers {
    /// Before a run against `keep`: with [`IdleServers::Pause`] every
    /// other server stopped and `keep` continued.
    fn only(&self, keep: &str) {
        if self.idle != IdleServers::Pause {
            return;
        }
        for (name, (child, _)) in &self.running {
            if name != keep {
                child.pause();
            }
        }
        if let Some((c, _)) = self.running.get(keep) {
            c.resume();
        }
    }

    fn ior(&self, name: &str) -> &Path {
        &self.running[name].1
    }
}

/// Everything a run measures with.
struct Bench<'a> {
    job: &'a OrbsCompareJob,
    client_cpus: Vec<usize>,
    server_cpus: Vec<usize>,
    dir: PathBuf,
}

impl Bench<'_> {
    fn placement(&self) -> PlacementOpts {
        PlacementOpts {
            client_cpus: CpuList::new(self.client_cpus.clone()).ok(),
            server_cpus: CpuList::new(self.server_cpus.clone()).ok(),
            runs: Some(1),
            ..PlacementOpts::default()
        }
    }

    /// One in-process job of ours, its results; an error if it failed.
    fn ours(&self, job: Job) -> Result<Results> {
        let (r, err) = job.run(&RunContext::default());
        if let Some(e) = err {
            return Err(e);
        }
        Ok(r)
    }

    /// One run of `client` against the server whose IOR is in `ior`.
    fn throughput(
        &self,
        client: &str,
        ior: &Path,
        mode: CallMode,
        ty: Elem,
        size: u64,
        beside_raw: bool,
    ) -> Result<Sample> {
        if client == OMNIORB {
            return self.omniorb_throughput(ior, mode, ty, size);
        }
        let j = ThroughputJob {
            target: TargetOpts {
                target: Some(ior.display().to_string()),
                ..TargetOpts::default()
            },
            types: vec![ty],
            sizes: Sizes(vec![size]),
            modes: vec![mode],
            total: self.job.total,
            min_duration: self.job.min_duration,
            // One get_stats() at the end, as the vendor client makes it;
            // beside raw TCP, slices taken in turn with it.
            slices: if beside_raw { 16 } else { 1 },
            oneway_buffer: (client == BUFFERED)
                .then_some(self.job.oneway_buffer)
                .flatten(),
            coalesce_oneways: client == COALESCED,
            baseline: beside_raw,
            placement: self.placement(),
            ..ThroughputJob::default()
        };
        let r = self.ours(Job::Throughput(j))?;
        let c = r.cases.first().ok_or_else(|| {
            fail!(
                Local,
                "our client measured nothing against {}",
                ior.display()
            )
        })?;
        let errors: u64 = c.errors.values().sum();
        ensure!(
            errors == 0,
            Target,
            "our client counted {errors} errors against {}",
            ior.display()
        );
        let secs = c
            .extra
            .get("receiver_seconds")
            .and_then(|v| v.as_f64())
            .unwrap_or(c.seconds);
        Ok(Sample {
            mbps: c.receiver_throughput_mbps.unwrap_or(c.throughput_mbps),
            calls: c.calls,
            bytes: c.bytes,
            seconds: c.seconds,
            server_cpu: c
                .cpu
                .and_then(|x| x.server_s)
                .filter(|_| secs > 0.0)
                .map(|s| s / secs),
            per_segment: c
                .extra
                .get("calls_per_segment")
                .and_then(|v| v.as_f64())
                .filter(|_| mode == CallMode::Oneway && !beside_raw),
            raw: c
                .baseline
                .as_ref()
                .filter(|_| beside_raw)
                .map(|b| (b.baseline_value, b.ratio)),
        })
    }

    /// The omniORB client, pinned, bounded in time; the last JSON line it
    /// prints.
    fn omniorb(&self, args: &[String], limit: Duration) -> Result<serde_json::Value> {
        let script = crate::orbs::script(OMNIORB, "client")?;
        let mut cmd = Command::new(&script);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(self.dir.join("omniorb-client.log"))?);
        crate::placement::pin_command(&mut cmd, &self.client_cpus)?;
        let mut child = Child::spawn(cmd, "the omniORB client")?;
        let mut out = child
            .take_stdout()
            .ok_or_else(|| fail!(Orb, "the omniORB client: no stdout"))?;
        // Its output is one short line: read it on a thread so the wait
        // below stays bounded.
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut out, &mut s);
            s
        });
        let status = child.wait_for(limit);
        if status.is_none() {
            child.stop();
            bail!(
                Orb,
                "the omniORB client did not finish within {limit:?} ({})",
                args.join(" ")
            );
        }
        let text = reader.join().unwrap_or_default();
        let status = status.expect("checked");
        ensure!(
            status.success(),
            Orb,
            "the omniORB client failed ({status}): {}",
            tail(&self.dir.join("omniorb-client.log"), 3)
        );
        text.lines()
            .rev()
            .map(str::trim)
            .find(|l| l.starts_with('{'))
            .and_then(|l| serde_json::from_str(l).ok())
            .ok_or_else(|| fail!(Orb, "the omniORB client printed no JSON line"))
    }

    fn run_limit(&self) -> Duration {
        Duration::from_secs(120) + self.job.min_duration * 4
    }

    fn omniorb_throughput(
        &self,
        ior: &Path,
        mode: CallMode,
        ty: Elem,
        size: u64,
    ) -> Result<Sample> {
        let op = if mode == CallMode::Oneway {
            "oneway"
        } else {
            "send"
        };
        let args: Vec<String> = [
            "--target",
            &ior.display().to_string(),
            "--mode",
            "throughput",
            "--op",
            op,
            "--type",
            ty.token(),
            "--size",
            &size.to_string(),
            "--total",
            &self.job.total.to_string(),
            "--min-duration",
            &format!("{}", self.job.min_duration.as_secs_f64()),
        ]
        .map(String::from)
        .to_vec();
        let before = crate::procnet::data_segments_sent();
        let o = self.omniorb(&args, self.run_limit())?;
        let after = crate::procnet::data_segments_sent();
        let f = |k: &str| o.get(k).and_then(|v| v.as_f64());
        let mbps = f("receiver_mbps")
            .or(f("mbps"))
            .ok_or_else(|| fail!(Orb, "the omniORB client's JSON has no mbps: {o}"))?;
        let calls = f("calls").unwrap_or(0.0) as u64;
        let secs = f("receiver_seconds").or(f("seconds")).unwrap_or(0.0);
        Ok(Sample {
            mbps,
            calls,
            bytes: f("bytes").unwrap_or(0.0) as u64,
            seconds: f("seconds").unwrap_or(0.0),
            server_cpu: f("server_cpu_seconds")
                .filter(|_| secs > 0.0)
                .map(|c| c / secs),
            per_segment: match (before, after) {
                (Some(b), Some(a)) if mode == CallMode::Oneway && a > b => {
                    Some(calls as f64 / (a - b) as f64)
                }
                _ => None,
            },
            raw: None,
        })
    }

    /// Ping p50 (µs) of the omniORB client against `ior`.
    fn omniorb_ping(&self, ior: &Path) -> Result<f64> {
        let n = self.job.latency_count;
        let args: Vec<String> = [
            "--target",
            &ior.display().to_string(),
            "--mode",
            "latency",
            "--op",
            "ping",
            "--count",
            &n.to_string(),
            "--warmup",
            &(n / 10).to_string(),
        ]
        .map(String::from)
        .to_vec();
        let o = self.omniorb(&args, self.run_limit())?;
        o.pointer("/latency_us/p50")
            .and_then(|v| v.as_f64())
            .ok_or_else(|| fail!(Orb, "the omniORB client's JSON has no latency_us.p50: {o}"))
    }

    fn latency_job(&self, op: LatencyOp, size: Option<u64>) -> LatencyJob {
        LatencyJob {
            op,
            types: vec![Elem::Octet],
            sizes: Sizes(vec![size.unwrap_or(0)]),
            count: self.job.latency_count,
            warmup: self.job.latency_count / 10,
            placement: self.placement(),
            ..LatencyJob::default()
        }
    }

    /// One raw-TCP case of `pattern` at `size`: Mbit/s, and p50 µs.
    fn raw(&self, pattern: TcpPattern, writes: StreamWrites, size: u64) -> Result<Case> {
        let j = TcpJob {
            pattern,
            sizes: Sizes(vec![size]),
            total: self.job.total,
            min_duration: self.job.min_duration,
            writes,
            count: self.job.latency_count * 2,
            warmup: self.job.latency_count / 5,
            placement: self.placement(),
            ..TcpJob::default()
        };
        let r = self.ours(Job::Tcp(j))?;
        r.cases
            .into_iter()
            .next()
            .ok_or_else(|| fail!(Local, "raw TCP measured nothing"))
    }
}

/// The results' case of one pair at one point.
fn pair_case(point: &str, p: &Point, client: &str, server: &str, xs: &[Sample]) -> Case {
    let mbps: Vec<f64> = xs.iter().map(|s| s.mbps).collect();
    let mut c = Case {
        name: format!(
            "{point} {} → {}",
            display_name(client),
            display_name(server)
        ),
        params: CaseParams {
            ty: p.ty.token().to_string(),
            size: p.size,
            mode: p.mode.name().to_string(),
            extra: BTreeMap::new(),
        },
        calls: xs.iter().map(|s| s.calls).sum(),
        bytes: xs.iter().map(|s| s.bytes).sum(),
        seconds: xs.iter().map(|s| s.seconds).sum(),
        throughput_mbps: median(&mbps),
        receiver_throughput_mbps: Some(median(&mbps)),
        runs: xs
            .iter()
            .map(|s| RunFigures {
                calls: s.calls,
                seconds: s.seconds,
                throughput_mbps: s.mbps,
                receiver_throughput_mbps: Some(s.mbps),
                ..RunFigures::default()
            })
            .collect(),
        ..Case::default()
    };
    let secs = c.seconds;
    if secs > 0.0 {
        c.calls_per_sec = c.calls as f64 / secs;
    }
    param(&mut c.params.extra, "client", client);
    param(&mut c.params.extra, "server", server);
    param(&mut c.params.extra, "section", "pairs");
    c.intervals
        .insert("receiver_throughput_mbps".into(), Interval::of(&mbps));
    if let Some(s) = spread(&mbps) {
        param(&mut c.extra, "spread", s);
    }
    let cpu: Vec<f64> = xs.iter().filter_map(|s| s.server_cpu).collect();
    if !cpu.is_empty() {
        param(&mut c.extra, "server_cpu", median(&cpu));
    }
    let segs: Vec<f64> = xs.iter().filter_map(|s| s.per_segment).collect();
    if !segs.is_empty() {
        param(&mut c.extra, "calls_per_segment", median(&segs));
    }
    c
}

/// A raw-TCP case built from its rounds (`name`, Mbit/s or µs each).
fn raw_case(name: &str, size: u64, mode: &str, xs: &[f64], unit_us: bool) -> Case {
    let mut c = Case {
        name: name.to_string(),
        params: CaseParams {
            ty: "octet".into(),
            size,
            mode: mode.into(),
            extra: BTreeMap::new(),
        },
        runs: xs
            .iter()
            .map(|&x| RunFigures {
                throughput_mbps: if unit_us { 0.0 } else { x },
                ..RunFigures::default()
            })
            .collect(),
        ..Case::default()
    };
    param(&mut c.params.extra, "section", "raw");
    let key = if unit_us { "p50" } else { "throughput_mbps" };
    if !unit_us {
        c.throughput_mbps = median(xs);
    }
    c.intervals.insert(key.into(), Interval::of(xs));
    c
}

/// One point of the tables.
#[derive(Debug, Clone, Copy)]
struct Point {
    mode: CallMode,
    ty: Elem,
    size: u64,
}

impl Point {
    fn label(&self) -> String {
        format!(
            "{} {} {}",
            self.mode.name(),
            self.ty.token(),
            format_size(self.size)
        )
    }
}

/// The ratios of one point from its rounds (`key(client, server)`).
fn point_ratios(
    label: &str,
    servers: &[String],
    samples: &BTreeMap<(String, String), Vec<Sample>>,
    buffered: bool,
    out: &mut Vec<Ratio>,
) {
    let mbps = |c: &str, s: &str| -> Option<Vec<f64>> {
        samples
            .get(&(c.to_string(), s.to_string()))
            .map(|v| v.iter().map(|x| x.mbps).collect())
    };
    let mut push =
        |section: &str, case: String, num: (String, Vec<f64>), den: (String, Vec<f64>)| {
            if let Some(ratio) = paired(&num.1, &den.1) {
                out.push(Ratio {
                    section: section.into(),
                    case,
                    num: num.0,
                    den: den.0,
                    num_value: median(&num.1),
                    den_value: median(&den.1),
                    unit: "Mbit/s".into(),
                    ratio,
                    lower_is_better: false,
                });
            }
        };
    let on = |s: &str| format!("{label} on {}'s server", display_name(s));
    for s in servers {
        if let (Some(u), Some(o)) = (mbps(OURS, s), mbps(OMNIORB, s)) {
            push(
                "client",
                on(s),
                ("iiopbench client".into(), u),
                ("omniORB client".into(), o),
            );
        }
    }
    for c in [OMNIORB, OURS] {
        let Some(base) = mbps(c, OMNIORB) else {
            continue;
        };
        for s in servers.iter().filter(|s| *s != OMNIORB) {
            if let Some(x) = mbps(c, s) {
                push(
                    "server",
                    format!("{label} under the {} client", display_name(c)),
                    (format!("{} server", display_name(s)), x),
                    ("omniORB server".into(), base.clone()),
                );
            }
        }
    }
    let both = mbps(OMNIORB, OMNIORB);
    if let (Some(u), Some(o)) = (mbps(OURS, OURS), &both) {
        push(
            "both",
            label.to_string(),
            ("iiopbench → iiopbench".into(), u),
            ("omniORB → omniORB".into(), o.clone()),
        );
    }
    for (client, section) in [(BUFFERED, "buffered"), (COALESCED, "coalesced")] {
        for s in servers {
            if let (Some(x), Some(o)) = (mbps(client, s), mbps(OMNIORB, s)) {
                push(
                    section,
                    on(s),
                    (format!("{} client", display_name(client)), x),
                    ("omniORB client".into(), o),
                );
            }
        }
        if let (Some(x), Some(o)) = (mbps(client, OURS), &both) {
            push(
                section,
                label.to_string(),
                (format!("{} → iiopbench", display_name(client)), x),
                ("omniORB → omniORB".into(), o.clone()),
            );
        }
    }
    if buffered {
        // Our buffering pair on our server against the raw stream
        // written in the same batches, slice by slice (not paired by
        // round: each run carries its own ratio).
        if let Some(xs) = samples.get(&(BUFFERED.to_string(), OURS.to_string())) {
            let raws: Vec<(f64, f64)> = xs.iter().filter_map(|s| s.raw).collect();
            if !raws.is_empty() {
                let ratios: Vec<f64> = raws.iter().map(|r| r.1).collect();
                let vals: Vec<f64> = raws.iter().map(|r| r.0).collect();
                out.push(Ratio {
                    section: "buffered".into(),
                    case: label.to_string(),
                    num: "iiopbench --oneway-buffer → iiopbench".into(),
                    den: "raw TCP, the same writes".into(),
                    num_value: median(&xs.iter().map(|s| s.mbps).collect::<Vec<_>>()),
                    den_value: median(&vals),
                    unit: "Mbit/s".into(),
                    ratio: Interval::of(&ratios),
                    lower_is_better: false,
                });
            }
        }
    }
}

/// Run the comparison: its results (always, holding what was measured
/// even when the run failed) and the error that ended it, if any.
pub fn run(job: &OrbsCompareJob, ctx: &RunContext) -> (Results, Option<Error>) {
    let mut out = Results::new(KIND, ctx.command.clone());
    out.job = serde_json::to_value(job).ok();
    let err = match job.validate() {
        Err(e) => Some(Error::Job(e)),
        Ok(()) => run_checked(job, ctx, &mut out).err(),
    };
    out.outcome.complete = err.is_none();
    out.outcome.failure = err.as_ref().map(|e| e.to_string());
    (out, err)
}

fn run_checked(job: &OrbsCompareJob, ctx: &RunContext, out: &mut Results) -> Result<()> {
    let progress = &ctx.progress;
    let avail = crate::placement::process_cpus();
    let first = avail.first().copied().unwrap_or(0);
    let client_cpus = job
        .client_cpus
        .as_ref()
        .map_or(vec![first], |c| c.cpus().to_vec());
    let server_cpus = job
        .server_cpus
        .as_ref()
        .map_or(vec![avail.get(1).copied().unwrap_or(first)], |c| {
            c.cpus().to_vec()
        });
    out.placement = Placement::new(client_cpus.clone(), Some(server_cpus.clone()));
    out.placement.chosen = if job.client_cpus.is_some() || job.server_cpus.is_some() {
        "cpus"
    } else {
        "auto"
    }
    .into();
    let apart = server_cpus.iter().all(|c| !client_cpus.contains(c));
    let spin = match job.our_server {
        OurServer::Auto if apart => Some(Duration::from_millis(1)),
        OurServer::ThreadsSpin => Some(Duration::from_millis(1)),
        _ => None,
    };

    let omni = crate::orbs::status(OMNIORB);
    ensure!(
        omni.installed,
        Orb,
        "the comparison needs omniORB's client, and omniORB is not installed here ({}): \
         iiopbench orbs install omniorb && iiopbench orbs build omniorb",
        omni.detail
    );
    let mut servers = Vec::new();
    let mut left_out = Vec::new();
    for s in &job.servers {
        if s == OURS {
            servers.push(s.clone());
            continue;
        }
        let st = crate::orbs::status(s);
        if st.installed {
            servers.push(s.clone());
        } else {
            left_out.push(format!(
                "{}: not installed ({})",
                display_name(s),
                st.detail
            ));
        }
    }
    ensure!(
        !servers.is_empty(),
        Orb,
        "none of the servers asked for is here: {}",
        left_out.join("; ")
    );
    for l in &left_out {
        progress.note(&format!("left out: {l}"));
    }

    let dir = std::env::temp_dir().join(format!("iiopbench-orbs-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let bench = Bench {
        job,
        client_cpus: client_cpus.clone(),
        server_cpus: server_cpus.clone(),
        dir: dir.clone(),
    };
    let mut running = Servers {
        running: BTreeMap::new(),
        idle: job.idle_servers,
    };
    let mut cmp = Comparison {
        servers: servers.clone(),
        left_out,
        ..Comparison::default()
    };
    let res = (|| -> Result<()> {
        for s in &servers {
            let ior = dir.join(format!("{s}.ior"));
            let log = dir.join(format!("{s}-server.log"));
            let mut cmd = if s == OURS {
                let programs = ctx.programs.as_ref().ok_or_else(|| {
                    fail!(
                        Local,
                        "the comparison starts our server as a process, and this run has no \
                         programs to start it with"
                    )
                })?;
                let mut c = programs.server(&ServerProcess {
                    ior_file: Some(ior.clone()),
                    spin_limit: spin,
                    ..ServerProcess::on("127.0.0.1:0")
                });
                c.stdin(Stdio::null()).stdout(Stdio::piped());
                c
            } else {
                crate::orbs::start_command(s, &ior)?
            };
            cmd.stderr(std::fs::File::create(&log)?);
            crate::placement::pin_command(&mut cmd, &server_cpus)?;
            die_with_parent(&mut cmd);
            progress.note(&format!(
                "starting {}'s server on CPUs {}",
                display_name(s),
                crate::options::format_cpu_list(&server_cpus)
            ));
            let child = start_ready(
                cmd,
                &format!("{} server", display_name(s)),
                &ior,
                &log,
                job.start_timeout,
                progress,
            )?;
            running.running.insert(s.clone(), (child, ior));
        }
        let pids: Vec<u32> = running.running.values().map(|(c, _)| c.pid()).collect();
        let meter = NoiseMeter::start(&pids);
        measure(&bench, &running, &servers, &mut cmp, out, progress)?;
        let noise = meter.finish();
        let mut q = out.quality.take().unwrap_or_default();
        let problems = noise.problems();
        if !problems.is_empty() {
            q.warnings.insert(
                0,
                format!(
                    "busy machine during the comparison: {}; rerun before trusting a small difference",
                    problems.join(", ")
                ),
            );
        }
        q.runs.push(noise);
        out.quality = Some(q);
        Ok(())
    })();
    // Our own server and the vendors' stop here (the Child drop does too).
    for (_, (mut c, _)) in std::mem::take(&mut running.running) {
        c.stop();
    }
    let res = res.and_then(|()| {
        latency_vs_raw(&bench, &mut cmp, out, progress)?;
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&dir);
    cmp.clients = [OURS, OMNIORB]
        .into_iter()
        .chain(job.oneway_buffer.map(|_| BUFFERED))
        .chain(job.coalesced.then_some(COALESCED))
        .map(String::from)
        .collect();
    cmp.method = method(job, &bench, spin, &servers);
    out.target.kind = KIND.into();
    out.target.reference = servers.join(",");
    param(&mut out.params, "servers", &servers);
    param(&mut out.params, "reps", job.reps);
    param(&mut out.params, "max_reps", job.max_reps);
    param(&mut out.params, "spread_limit", job.spread_limit);
    param(&mut out.params, "total", job.total);
    param(
        &mut out.params,
        "min_duration_s",
        job.min_duration.as_secs_f64(),
    );
    param(
        &mut out.params,
        "our_server",
        if spin.is_some() {
            "threads-spin"
        } else {
            "reactor"
        },
    );
    out.comparison = Some(cmp);
    res
}

/// `cmd` killed when this process dies, however it dies: a server left
/// paused (SIGSTOP) by a killed comparison would hold its CPU's share of
/// nothing, and its port, for good.
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl(PR_SET_PDEATHSIG) is one system call that allocates
    // nothing, so it is safe between fork and exec; it survives the exec
    // (of a start script, and the script's exec of its server).
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// How the run was taken, one sentence each.
fn method(
    job: &OrbsCompareJob,
    b: &Bench,
    spin: Option<Duration>,
    servers: &[String],
) -> Vec<String> {
    let cpus = crate::options::format_cpu_list;
    vec![
        format!(
            "Every server on CPUs {}, every client on CPUs {}; servers: {}{}.",
            cpus(&b.server_cpus),
            cpus(&b.client_cpus),
            servers
                .iter()
                .map(|s| display_name(s))
                .collect::<Vec<_>>()
                .join(", "),
            if job.idle_servers == IdleServers::Pause {
                "; during each run every other server is paused (SIGSTOP)"
            } else {
                "; every server runs throughout"
            }
        ),
        format!(
            "{} rounds per point (up to {} where some pair's rounds spread more than {:.0} %), \
             each (client, server) pair once per round, a server's runs together and omniORB's \
             server in the middle, in rotating order; {} and at least {:?} per run.",
            job.reps,
            job.max_reps,
            job.spread_limit * 100.0,
            format_size(job.total),
            job.min_duration
        ),
        format!(
            "Our server: {}.",
            if spin.is_some() {
                "a thread per connection that polls up to 1 ms for the next bytes after each \
                 message before it blocks (the server CPUs are apart from the client's)"
            } else {
                "the default reactor"
            }
        ),
        "Mbit/s: payload bytes the receiving server counted (bench.idl get_stats) per second, \
         the median of the rounds; ratios: the median of the per-round paired ratios, \
         [min–max] over the rounds."
            .into(),
    ]
}

/// Sections 1–3, 6, 7 (the pairs' rounds), 4 (raw TCP beside the fastest
/// pair) and 5's omniORB part.
fn measure(
    b: &Bench,
    running: &Servers,
    servers: &[String],
    cmp: &mut Comparison,
    out: &mut Results,
    progress: &crate::progress::Progress,
) -> Result<()> {
    let job = b.job;
    // Pairs whose rounds still disagree after `max_reps`: (spread, name).
    let mut spread_out: Vec<(f64, String)> = Vec::new();
    let mut pairs = 0usize;
    // (mode, size) → the best oneway pair's (median, client, server, type).
    let mut best: BTreeMap<u64, (f64, String, String, Elem)> = BTreeMap::new();
    for &mode in &job.modes {
        let oneway = mode == CallMode::Oneway;
        let mut clients = vec![OURS.to_string(), OMNIORB.to_string()];
        if oneway && job.oneway_buffer.is_some() {
            clients.push(BUFFERED.into());
        }
        if oneway && job.coalesced {
            clients.push(COALESCED.into());
        }
        for &ty in &job.types {
            for &size in &job.sizes.0 {
                ensure!(!crate::interrupt::requested(), Interrupted, "interrupted");
                let p = Point { mode, ty, size };
                let label = p.label();
                let mut samples: BTreeMap<(String, String), Vec<Sample>> = BTreeMap::new();
                let mut rep = 0usize;
                loop {
                    let spread_out = samples.values().any(|v| {
                        spread(&v.iter().map(|s| s.mbps).collect::<Vec<_>>())
                            .is_some_and(|x| x > job.spread_limit)
                    });
                    if !(rep < job.reps as usize || (rep < job.max_reps as usize && spread_out)) {
                        break;
                    }
                    for (c, s) in round_order(rep, servers, &clients) {
                        running.only(&s);
                        let beside = c == BUFFERED && s == OURS;
                        let x = b.throughput(&c, running.ior(&s), mode, ty, size, beside)?;
                        samples.entry((c, s)).or_default().push(x);
                    }
                    rep += 1;
                }
                for ((c, s), xs) in &samples {
                    let case = pair_case(&label, &p, c, s, xs);
                    pairs += 1;
                    if let Some(sp) = spread(&xs.iter().map(|x| x.mbps).collect::<Vec<_>>()) {
                        if sp > job.spread_limit {
                            spread_out.push((sp, case.name.clone()));
                        }
                    }
                    if oneway && c != BUFFERED {
                        let m = case.throughput_mbps;
                        if best.get(&size).is_none_or(|b| m > b.0) {
                            best.insert(size, (m, c.clone(), s.clone(), ty));
                        }
                    }
                    out.cases.push(case);
                }
                let n = cmp.ratios.len();
                point_ratios(
                    &label,
                    servers,
                    &samples,
                    oneway && job.oneway_buffer.is_some(),
                    &mut cmp.ratios,
                );
                let line = cmp.ratios[n..]
                    .iter()
                    .filter(|r| r.section == "client")
                    .map(|r| {
                        format!(
                            "{} {:.2}x [{:.2}–{:.2}]",
                            r.case.rsplit(" on ").next().unwrap_or(""),
                            r.ratio.median,
                            r.ratio.min,
                            r.ratio.max
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                progress.note(&format!("{label}: our client / omniORB's: {line}"));
            }
        }
    }
    if servers.iter().any(|s| s == OMNIORB) {
        running.only(OMNIORB);
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        let order = [OURS, OMNIORB];
        for i in 0..(job.reps as usize * 2) {
            for c in rotated(i, &order) {
                if c == OMNIORB {
                    theirs.push(b.omniorb_ping(running.ior(OMNIORB))?);
                } else {
                    let mut j = b.latency_job(LatencyOp::Ping, None);
                    j.target.target = Some(running.ior(OMNIORB).display().to_string());
                    let r = b.ours(Job::Latency(j))?;
                    let p50 = r
                        .cases
                        .first()
                        .and_then(|c| c.latency_us)
                        .map(|l| l.p50)
                        .ok_or_else(|| fail!(Local, "our latency run measured nothing"))?;
                    ours.push(p50);
                }
            }
        }
        if let Some(ratio) = paired(&ours, &theirs) {
            cmp.ratios.push(Ratio {
                section: "latency".into(),
                case: "ping p50 on omniORB's server".into(),
                num: "iiopbench client".into(),
                den: "omniORB client".into(),
                num_value: median(&ours),
                den_value: median(&theirs),
                unit: "µs".into(),
                ratio,
                lower_is_better: true,
            });
        }
    }
    // Section 4: raw TCP and the fastest oneway pair at each size, raw,
    // ORB, raw, ORB, raw in each round; each ORB run against the mean of
    // the raw runs either side of it, so that both ran while the machine
    // ran at the same speed.
    for &size in &job.sizes.0 {
        let Some((_, c, s, ty)) = best.get(&size).cloned() else {
            continue;
        };
        running.only(&s);
        let (mut raws, mut orbs, mut ratios, mut seps, mut sep_ratios) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let stream = |w| -> Result<f64> {
            let c = b.raw(TcpPattern::Stream, w, size)?;
            Ok(c.receiver_throughput_mbps.unwrap_or(c.throughput_mbps))
        };
        for _ in 0..job.reps {
            ensure!(!crate::interrupt::requested(), Interrupted, "interrupted");
            let mut before = stream(StreamWrites::Joined)?;
            raws.push(before);
            let mut round = Vec::new();
            for _ in 0..2 {
                let o = b
                    .throughput(&c, running.ior(&s), CallMode::Oneway, ty, size, false)?
                    .mbps;
                let after = stream(StreamWrites::Joined)?;
                raws.push(after);
                ratios.push(o / ((before + after) / 2.0));
                orbs.push(o);
                round.push(o);
                before = after;
            }
            // A frame shorter than a segment written with Nagle off: the
            // most one write per oneway with TCP_NODELAY can move.
            if size < 65536 {
                let sep = stream(StreamWrites::Separate)?;
                seps.push(sep);
                if sep > 0.0 {
                    sep_ratios.push(median(&round) / sep);
                }
            }
        }
        let pair = format!("{} → {}", display_name(&c), display_name(&s));
        let label = format!("oneway {} {}", ty.token(), format_size(size));
        out.cases.push(raw_case(
            &format!("raw TCP stream {}", format_size(size)),
            size,
            "stream",
            &raws,
            false,
        ));
        cmp.ratios.push(Ratio {
            section: "limit".into(),
            case: label.clone(),
            num: pair.clone(),
            den: "raw TCP stream".into(),
            num_value: median(&orbs),
            den_value: median(&raws),
            unit: "Mbit/s".into(),
            ratio: Interval::of(&ratios),
            lower_is_better: false,
        });
        if !seps.is_empty() {
            out.cases.push(raw_case(
                &format!("raw TCP separate writes {}", format_size(size)),
                size,
                "stream",
                &seps,
                false,
            ));
            cmp.ratios.push(Ratio {
                section: "limit".into(),
                case: label,
                num: pair.clone(),
                den: "raw TCP, separate writes".into(),
                num_value: median(&orbs),
                den_value: median(&seps),
                unit: "Mbit/s".into(),
                ratio: Interval::of(&sep_ratios),
                lower_is_better: false,
            });
        }
        progress.note(&format!(
            "raw TCP {}: stream {:.0} Mbit/s; fastest oneway pair {pair} ({}) {:.2}x of it",
            format_size(size),
            median(&raws),
            ty.token(),
            median(&ratios)
        ));
    }
    if let Some(w) = spread_warning(&spread_out, pairs, job) {
        out.quality
            .get_or_insert_with(Default::default)
            .warnings
            .push(w);
    }
    Ok(())
}

/// One line for the pairs whose rounds still spread more than
/// `spread_limit` (each pair's spread is its case's `extra.spread`).
fn spread_warning(
    spread_out: &[(f64, String)],
    pairs: usize,
    job: &OrbsCompareJob,
) -> Option<String> {
    let (worst, name) = spread_out.iter().max_by(|a, b| a.0.total_cmp(&b.0))?;
    Some(format!(
        "rounds disagree: {} of {pairs} pairs spread more than {:.0} % over their rounds (up to {}), \
         the widest {name} ({:.0} %); their ratios' ranges say how far to trust them",
        spread_out.len(),
        job.spread_limit * 100.0,
        job.max_reps,
        worst * 100.0
    ))
}

/// Section 5's first part: ours → ours (our server embedded in this run)
/// against raw TCP round trips that wait the same way, with every other
/// server stopped.
fn latency_vs_raw(
    b: &Bench,
    cmp: &mut Comparison,
    out: &mut Results,
    progress: &crate::progress::Progress,
) -> Result<()> {
    for (name, op, size) in [
        ("ping", LatencyOp::Ping, None),
        ("echo 64KiB", LatencyOp::Echo, Some(64 << 10)),
    ] {
        let (mut ours, mut raw, mut sliced) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..b.job.reps {
            ensure!(!crate::interrupt::requested(), Interrupted, "interrupted");
            let mut j = b.latency_job(op, size);
            j.baseline = true;
            let r = b.ours(Job::Latency(j))?;
            let p50 = |i: usize| r.cases.get(i).and_then(|c| c.latency_us).map(|l| l.p50);
            let (Some(u), Some(t)) = (p50(0), p50(1)) else {
                bail!(Local, "`bench latency` with its baseline measured no pair");
            };
            ours.push(u);
            raw.push(t);
            if let Some(bl) = r.cases[0].baseline.as_ref() {
                sliced.push(bl.ratio);
            }
        }
        let ratio = if sliced.is_empty() {
            paired(&ours, &raw)
        } else {
            Some(Interval::of(&sliced))
        };
        if let Some(ratio) = ratio {
            progress.note(&format!(
                "{name} p50: iiopbench → iiopbench / raw TCP {:.2}x",
                ratio.median
            ));
            cmp.ratios.push(Ratio {
                section: "latency".into(),
                case: format!("{name} p50"),
                num: "iiopbench → iiopbench".into(),
                den: "raw TCP, same wait".into(),
                num_value: median(&ours),
                den_value: median(&raw),
                unit: "µs".into(),
                ratio,
                lower_is_better: true,
            });
        }
        let mut c = raw_case(
            &format!("latency {name} iiopbench → iiopbench"),
            size.unwrap_or(0),
            "latency",
            &ours,
            true,
        );
        param(&mut c.params.extra, "section", "latency");
        out.cases.push(c);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn rounds_keep_a_servers_runs_together_with_omniorb_in_the_middle() {
        let servers = names(&["ours", "omniorb", "jacorb", "tao"]);
        let clients = names(&["ours", "omniorb"]);
        let order = |rep| {
            round_order(rep, &servers, &clients)
                .into_iter()
                .map(|(c, s)| format!("{c}>{s}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            order(0),
            [
                "ours>ours",
                "omniorb>ours",
                "ours>omniorb",
                "omniorb>omniorb",
                "ours>jacorb",
                "omniorb>jacorb",
                "ours>tao",
                "omniorb>tao"
            ]
        );
        // The next round rotates the other servers and the clients;
        // omniORB's server stays in the middle.
        assert_eq!(
            order(1),
            [
                "omniorb>jacorb",
                "ours>jacorb",
                "omniorb>omniorb",
                "ours>omniorb",
                "omniorb>tao",
                "ours>tao",
                "omniorb>ours",
                "ours>ours"
            ]
        );
        // Every pair runs once in every round.
        for rep in 0..5 {
            let mut o = order(rep);
            o.sort();
            o.dedup();
            assert_eq!(o.len(), 8);
        }
        // Without omniORB's server the others rotate alone.
        assert_eq!(
            round_order(1, &names(&["ours", "tao"]), &names(&["ours"])),
            [
                ("ours".into(), "tao".into()),
                ("ours".into(), "ours".into())
            ]
        );
    }

    #[test]
    fn ratios_are_medians_of_paired_rounds_with_their_range() {
        let r = paired(&[200.0, 90.0, 330.0], &[100.0, 100.0, 300.0]).unwrap();
        assert_eq!((r.median, r.min, r.max, r.n), (1.1, 0.9, 2.0, 3));
        // A round whose denominator is 0 says nothing.
        assert_eq!(paired(&[1.0, 2.0], &[0.0, 1.0]).unwrap().n, 1);
        assert!(paired(&[], &[]).is_none());
        assert_eq!(spread(&[90.0, 100.0, 120.0]), Some(0.3));
        assert_eq!(spread(&[0.0, 0.0]), None);
    }

    #[test]
    fn every_pair_of_a_point_gives_its_sections_ratios() {
        let servers = names(&["ours", "omniorb"]);
        let s = |mbps: &[f64]| -> Vec<Sample> {
            mbps.iter()
                .map(|&m| Sample {
                    mbps: m,
                    ..Sample::default()
                })
                .collect()
        };
        let mut samples = BTreeMap::new();
        for (c, sv, v) in [
            (OURS, OURS, [400.0, 440.0]),
            (OMNIORB, OURS, [200.0, 200.0]),
            (OURS, OMNIORB, [300.0, 330.0]),
            (OMNIORB, OMNIORB, [100.0, 110.0]),
            (COALESCED, OURS, [800.0, 880.0]),
            (COALESCED, OMNIORB, [300.0, 300.0]),
        ] {
            samples.insert((c.to_string(), sv.to_string()), s(&v));
        }
        let mut out = Vec::new();
        point_ratios("oneway octet 1KiB", &servers, &samples, false, &mut out);
        let find = |section: &str, case: &str, num: &str| {
            out.iter()
                .find(|r| r.section == section && r.case == case && r.num.starts_with(num))
                .unwrap_or_else(|| panic!("{section} {case} {num}: {out:#?}"))
                .ratio
        };
        let on_ours = "oneway octet 1KiB on iiopbench's server";
        assert_eq!(find("client", on_ours, "iiopbench").median, 2.1);
        assert_eq!(
            find(
                "server",
                "oneway octet 1KiB under the omniORB client",
                "iiopbench"
            )
            .median,
            2.0 * (1.0 + 1.0 / 1.1) / 2.0
        );
        let both = find("both", "oneway octet 1KiB", "iiopbench → iiopbench");
        assert_eq!((both.min, both.max), (4.0, 4.0));
        assert_eq!(
            find("coalesced", "oneway octet 1KiB", "iiopbench --coalesce").median,
            8.0
        );
        assert!(!out.iter().any(|r| r.section == "buffered"));
        assert_eq!(out.iter().filter(|r| r.section == "client").count(), 2);
    }

    /// The state letter of /proc/PID/stat (`T`: stopped).
    fn state(pid: u32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.chars().next().unwrap()
    }

    /// Wait (bounded) until `pid`'s state is, or is not, `T`.
    fn settles(pid: u32, stopped: bool) -> bool {
        let end = std::time::Instant::now() + Duration::from_secs(5);
        while std::time::Instant::now() < end {
            if (state(pid) == 'T') == stopped {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn only_the_measured_server_runs() {
        let spawn = |what: &str| {
            let mut c = Command::new("sleep");
            c.arg("30");
            Child::spawn(c, what).unwrap()
        };
        let mut servers = Servers {
            running: BTreeMap::new(),
            idle: IdleServers::Pause,
        };
        for name in ["ours", "omniorb", "jacorb"] {
            servers
                .running
                .insert(name.into(), (spawn(name), PathBuf::from(name)));
        }
        let pid = |n: &str| servers.running[n].0.pid();
        servers.only("omniorb");
        assert!(settles(pid("ours"), true) && settles(pid("jacorb"), true));
        assert!(settles(pid("omniorb"), false));
        // The next server measured is continued, the last one paused.
        servers.only("ours");
        assert!(settles(pid("ours"), false) && settles(pid("omniorb"), true));
        // Left running: nobody is paused, nobody continued.
        servers.idle = IdleServers::Run;
        servers.only("jacorb");
        assert!(settles(pid("jacorb"), true));
        // A paused server is stopped all the same (continued, then
        // terminated).
        for (_, (mut c, _)) in std::mem::take(&mut servers.running) {
            assert!(c.stop().is_some(), "{} did not end", c.what());
        }
    }

    #[test]
    fn pairs_that_still_disagree_make_one_warning_line() {
        let job = OrbsCompareJob::quick();
        assert_eq!(spread_warning(&[], 12, &job), None);
        let w = spread_warning(&[(0.4, "a → b".into()), (1.5, "c → d".into())], 12, &job).unwrap();
        assert_eq!(
            w,
            "rounds disagree: 2 of 12 pairs spread more than 30 % over their rounds (up to 3), \
             the widest c → d (150 %); their ratios' ranges say how far to trust them"
        );
        assert!(!w.contains('\n'));
    }

    #[test]
    fn jobs_read_as_users_write_them_and_bad_ones_are_refused() {
        let j: OrbsCompareJob = serde_json::from_str(
            r#"{"servers": ["ours", "omniorb"], "types": "octet", "sizes": ["1KiB"],
                "total": "4MiB", "min_duration": "100ms", "client_cpus": "0",
                "idle_servers": "run", "our_server": "threads-spin"}"#,
        )
        .unwrap();
        assert_eq!(j.sizes.0, [1024]);
        assert_eq!(j.total, 4 << 20);
        assert_eq!(j.idle_servers, IdleServers::Run);
        j.validate().unwrap();
        OrbsCompareJob::quick().validate().unwrap();
        OrbsCompareJob::default().validate().unwrap();
        let refused = |f: &dyn Fn(&mut OrbsCompareJob)| {
            let mut j = OrbsCompareJob::quick();
            f(&mut j);
            j.validate().unwrap_err().to_string()
        };
        assert!(refused(&|j| j.servers = names(&["orbix"])).contains("orbix"));
        assert_eq!(
            refused(&|j| j.max_reps = 1),
            "`max_reps` is less than `reps`"
        );
        assert_eq!(
            refused(&|j| j.modes = vec![CallMode::Echo]),
            "`modes`: the comparison measures oneway and twoway"
        );
        assert!(serde_json::from_str::<OrbsCompareJob>(r#"{"repz": 3}"#).is_err());
    }
}
