//! The results file: a documented, versioned JSON schema
//! (`docs/results-schema.md`) that every bench command writes, and the
//! exporters over it (JSON, CSV). Exporters are pure functions from
//! results to bytes; files are written atomically (temporary file, then
//! rename) so a kill never leaves half a file behind.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::hist::LatencySummary;
use crate::sysinfo::HostInfo;
use crate::threshold::{Figures, Threshold, ThresholdOutcome};

/// Bumped whenever a field changes meaning or disappears. Adding optional
/// fields does not bump it.
/// 2: cases may aggregate `--runs` (figures are means over runs, with
/// `runs` and `intervals`), `placement` says how it was chosen and what
/// was observed, `quality` carries the noise verdict. Version 1 files
/// still read: every new field is optional.
/// 3: a results file may be the merge of N agents that ran at once
/// (`iiopbench agents`): top-level `agents`, per-case `agents`; such a
/// case's counts are sums over agents, its `seconds` the longest agent's
/// window and its rates sums of the agents' rates. Version 1 and 2 files
/// still read.
/// 4: top-level `job`, the typed job that produced the file; an agent
/// run's `agents.spec` (its bench command line) gives way to it. Files of
/// versions 1 to 3 still read.
/// 5: `bench throughput --baseline`'s `baseline` is raw TCP written and
/// waited for as our client and server do; the fastest raw stream or round
/// trip, its `baseline` until 4, is a case's `limit`. Files of versions 1
/// to 4 still read.
/// 6: top-level `comparison`, the ratios of a cross-ORB comparison
/// (`orbs compare`, kind `orbs`): each a median of per-round paired ratios
/// with its range, by section; that run's cases are its (client, server)
/// pairs and raw-TCP runs, one `runs` entry per round. Files of versions
/// 1 to 5 still read.
pub const SCHEMA_VERSION: u32 = 6;

/// One results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub schema_version: u32,
    pub tool: Tool,
    /// Which command produced it: `throughput`, `latency`, `connect`, `tcp`…
    pub kind: String,
    /// The command line that asked for the run, as its caller gave it
    /// ([`RunContext::command`](crate::run_context::RunContext::command)).
    pub command: Vec<String>,
    /// UTC start time, RFC 3339.
    pub started_at: String,
    pub host: HostInfo,
    pub target: TargetInfo,
    pub placement: Placement,
    /// Parameters common to every case (per-case ones are in `cases[].params`).
    pub params: BTreeMap<String, serde_json::Value>,
    pub cases: Vec<Case>,
    /// How far the numbers can be trusted: noise measured during each run
    /// and the warnings printed under the table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<Quality>,
    /// Least-squares fits over size sweeps: latency = a + b·bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fits: Vec<Fit>,
    /// A distributed run (`iiopbench agents`): who ran, clocks, the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<AgentsInfo>,
    /// The job that produced these results, in its serde form
    /// ([`Job`](crate::job::Job)): run it again to repeat them (schema 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<serde_json::Value>,
    /// The gates the run was checked against (`--threshold`), in the
    /// order given, and how each came out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdOutcome>,
    /// A cross-ORB comparison's ratios (schema 6, kind `orbs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    pub outcome: Outcome,
}

/// What a cross-ORB comparison found (`orbs compare`, schema 6): every
/// ratio it divides, by section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The servers measured, in the order of the rounds' rotation.
    pub servers: Vec<String>,
    /// The clients measured (`ours`, `omniorb`, `ours-buffered`,
    /// `ours-coalesced`).
    pub clients: Vec<String>,
    /// Servers asked for but not here, each `name: why`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// How the run was taken, one sentence each (placement, pausing,
    /// rounds, our server's model), as the report quotes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub method: Vec<String>,
    pub ratios: Vec<Ratio>,
}

/// One ratio of a comparison: `num` over `den` on one case.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// `client`, `server`, `both`, `limit`, `latency`, `buffered` or
    /// `coalesced` (the report's sections 1–7).
    pub section: String,
    /// The point: `oneway octet 1KiB on omniORB's server`.
    pub case: String,
    /// What was divided, and by what: `iiopbench client`, `omniORB client`.
    pub num: String,
    pub den: String,
    /// The medians of their rounds, in `unit` (`Mbit/s`, `µs`).
    pub num_value: f64,
    pub den_value: f64,
    pub unit: String,
    /// The per-round ratios: median (the figure), range and count.
    pub ratio: Interval,
    /// Lower is better (latency), rather than higher (throughput).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lower_is_better: bool,
}

impl Results {
    /// Check these results against `gates` (`--threshold`), recording
    /// the outcomes in [`thresholds`](Results::thresholds); returns them.
    pub fn check(&mut self, gates: &[Threshold]) -> Vec<ThresholdOutcome> {
        let figures: Vec<Figures> = self.cases.iter().map(Case::figures).collect();
        // A load sweep's knee: the achieved rate at its knee step.
        let knee = self
            .params
            .get("knee")
            .and_then(|k| k.get("achieved_per_s"))
            .and_then(|v| v.as_f64());
        let out = crate::threshold::evaluate_run(gates, &figures, knee);
        self.thresholds = out.clone();
        out
    }

    /// A results skeleton for `kind` with no cases yet: this program, this
    /// host, the start time now, and `command`, the command line that
    /// asked for the run (empty when there was none).
    pub fn new(kind: &str, command: Vec<String>) -> Results {
        Results {
            schema_version: SCHEMA_VERSION,
            tool: Tool::current(),
            kind: kind.to_string(),
            command,
            started_at: now_rfc3339(),
            host: HostInfo::current(),
            target: TargetInfo::default(),
            placement: Placement::default(),
            params: BTreeMap::new(),
            cases: Vec::new(),
            fits: Vec::new(),
            quality: None,
            agents: None,
            job: None,
            thresholds: Vec::new(),
            comparison: None,
            outcome: Outcome {
                complete: false,
                failure: None,
            },
        }
    }
}

/// Insert a parameter into a params map (`Results::params`, a case's
/// `params.extra` or `extra`).
pub fn param(map: &mut BTreeMap<String, serde_json::Value>, k: &str, v: impl Serialize) {
    map.insert(
        k.to_string(),
        serde_json::to_value(v).expect("plain values serialize"),
    );
}

/// How a run of N agents went (schema 3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentsInfo {
    /// Agents asked for.
    pub requested: u32,
    /// Agents whose results are merged in.
    pub ran: u32,
    /// True when any agent did not run: the figures are those of `ran`
    /// agents only.
    pub partial: bool,
    /// The first case's start on the coordinator's clock, RFC 3339 with
    /// milliseconds, and as Unix ns.
    pub start_at: String,
    pub start_at_unix_ns: i64,
    /// Every agent measured each case for this long.
    pub duration_s: f64,
    /// Case k of every agent started at `start_at + k·case_period_s`.
    pub case_period_s: f64,
    /// Schema 3: the bench command every agent ran (after `iiopbench`).
    /// Absent from schema 4, whose top-level `job` is what every agent ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spec: Vec<String>,
    /// One per agent id, in id order.
    pub agents: Vec<AgentEntry>,
}

/// One agent of a distributed run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentEntry {
    pub id: u32,
    /// Its host name (Kubernetes: `pod@node`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `ran`, `failed` (admitted, no results), `missing` (never
    /// registered), `rejected` (clock too far off, version mismatch).
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its clock minus the coordinator's (ms), measured over
    /// `clock_samples` exchanges, exact within ± `clock_rtt_ms` / 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_offset_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_rtt_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_samples: Option<usize>,
    /// Per case, how late it started after its slot (ms).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub start_late_ms: Vec<f64>,
    /// Its own results' `started_at` (its clock) and outcome line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostInfo>,
}

/// One agent's share of a merged case.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentCase {
    pub agent: u32,
    pub calls: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub calls_per_sec: f64,
    pub throughput_mbps: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<LatencySummary>,
    /// The agent's own histogram (HdrHistogram V2, base64, ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, u64>,
    /// The agent's own `extra` figures of the case (the merged case's
    /// combine them by their rule).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// What measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
    pub git_commit: String,
}

impl Tool {
    /// This binary.
    pub fn current() -> Self {
        Tool {
            name: "iiopbench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_commit: env!("IIOPBENCH_GIT_COMMIT").into(),
        }
    }
}

/// What was measured against.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// `embedded` (our server started by this run), `ior`, `corbaloc`,
    /// `corbaname`, `raw-tcp`.
    pub kind: String,
    /// The reference as given (IOR strings shortened).
    pub reference: String,
    pub host: String,
    pub port: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orb_type: Option<String>,
    pub giop_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_sets: Option<String>,
    /// For the embedded server: how it is isolated from the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
    /// For our server: `typed` or `dynamic` skeleton.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skeleton: Option<String>,
    /// For our embedded server: `reactor` (tokio tasks) or `threads`
    /// (thread per connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_model: Option<String>,
    /// For our embedded server with `--server-spin-limit`: how long each
    /// connection's thread polls for the next request after every message
    /// before it blocks in recv (µs). Absent: it sleeps between requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_spin_limit_us: Option<f64>,
    /// The forwards the client followed from the reference to the object
    /// (LOCATION_FORWARD / OBJECT_FORWARD hops, in order), e.g.
    /// `LOCATION_FORWARD from 127.0.0.1:2809 key "Bench" to 127.0.0.1:2809 key 0x14…`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forwards: Vec<String>,
}

/// Where client and server ran (CPU lists as given to the kernel).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    pub client_cpus: Vec<usize>,
    /// Known when we started the server (embedded) or were told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<Vec<usize>>,
    /// `same-cpu`, `cross-cpu`, `overlapping` or `unknown`.
    pub relation: String,
    /// Who chose it: `auto` (this run, as no placement option was given),
    /// `pin same`, `pin cross`, `cpus` (lists given), `none` (the kernel).
    /// Empty in files older than schema 2.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub chosen: String,
    /// The CPUs each busy thread was seen running on over the whole run
    /// (sampled from /proc): `client`, `server` (an embedded or started
    /// server's threads) and per thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<ObservedPlacement>,
}

/// Placement as observed rather than as requested.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservedPlacement {
    pub client_cpus: Vec<usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_cpus: Vec<usize>,
    /// `"name (tid)"` → CPUs seen.
    pub threads: BTreeMap<String, Vec<usize>>,
}

impl Placement {
    /// One short line naming the placement, to compare runs by:
    /// `cross-cpu client 0 server 1`.
    pub fn key(&self) -> String {
        format!(
            "{} client {} server {}",
            self.relation,
            crate::sysinfo::format_cpu_list(&self.client_cpus),
            self.server_cpus
                .as_deref()
                .map(crate::sysinfo::format_cpu_list)
                .unwrap_or_else(|| "?".into())
        )
    }
}

/// Noise and spread: what the run saw of the machine, and the verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Quality {
    /// One line each, as printed under the table; empty when clean.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The machine during each whole run (`--runs`), in order.
    #[serde(default)]
    pub runs: Vec<crate::noise::Noise>,
}

/// One case's figures from one of its `--runs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunFigures {
    pub calls: u64,
    pub seconds: f64,
    pub throughput_mbps: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_throughput_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<LatencySummary>,
    /// This run's ratio to the raw-TCP baseline of the same run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_ratio: Option<f64>,
    /// This run's ratio to the raw TLS-over-TCP baseline of the same run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_baseline_ratio: Option<f64>,
    /// This run's ratio to the physical limit of the same run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<crate::noise::Noise>,
}

/// Mean and 95 % confidence interval (Student's t) of one figure across
/// runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub mean: f64,
    /// The middle run (mean of the two middle ones for an even count).
    #[serde(default)]
    pub median: f64,
    /// Half-width of the 95 % interval; 0 with one run.
    pub ci95: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Interval {
    /// Over `xs` (none: all zero).
    pub fn of(xs: &[f64]) -> Interval {
        let n = xs.len();
        if n == 0 {
            return Interval::default();
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        // The same Student's t interval as the workloads' batch means.
        let ci95 = crate::bench::stats::ci95(xs).map_or(0.0, |c| c.half_width);
        Interval {
            mean,
            median: crate::bench::stats::median(xs).unwrap_or(mean),
            ci95,
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            n,
        }
    }

    /// The half-width as a fraction of the mean.
    pub fn relative(&self) -> f64 {
        if self.mean.abs() < 1e-12 {
            0.0
        } else {
            self.ci95 / self.mean.abs()
        }
    }

    /// Whether the intervals overlap.
    pub fn overlaps(&self, o: &Interval) -> bool {
        (self.mean - o.mean).abs() <= self.ci95 + o.ci95
    }
}

impl Placement {
    /// Classify a client/server placement.
    pub fn new(client_cpus: Vec<usize>, server_cpus: Option<Vec<usize>>) -> Self {
        let relation = match &server_cpus {
            None => "unknown",
            Some(s) if *s == client_cpus && s.len() == 1 => "same-cpu",
            Some(s) if s.iter().all(|c| !client_cpus.contains(c)) => "cross-cpu",
            Some(_) => "overlapping",
        }
        .to_string();
        Placement {
            client_cpus,
            server_cpus,
            relation,
            chosen: String::new(),
            observed: None,
        }
    }
}

/// How the run ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Every planned case ran to the end.
    pub complete: bool,
    /// One line naming what stopped the run, when it did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// One measured point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Case {
    /// Short human label, e.g. `oneway double 64KiB`.
    pub name: String,
    pub params: CaseParams,
    pub calls: u64,
    /// Payload bytes sent by the client.
    pub bytes: u64,
    pub seconds: f64,
    pub calls_per_sec: f64,
    /// Payload Mbit/s at the sender (10^6 bits).
    pub throughput_mbps: f64,
    /// Payload Mbit/s as counted by the server, when it reports counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_throughput_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<LatencySummary>,
    /// HdrHistogram V2 compressed, base64 (nanoseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<String>,
    /// Error counts by kind (e.g. the exception's repository id).
    pub errors: BTreeMap<String, u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuFigures>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<Overhead>,
    /// Seconds spent per phase (marshal, write, wait, read, demarshal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<BTreeMap<String, f64>>,
    /// This case's figure divided by the raw-TCP baseline's, same run:
    /// raw TCP written and waited for as our client and server do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
    /// This case's figure divided by the physical limit's, same run: the
    /// fastest raw stream (frames joined by the kernel) or round trip (a
    /// server that polls) of its mode and size (`bench throughput`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<Baseline>,
    /// A case over TLS: its figure divided by the raw TLS-over-TCP
    /// baseline's (the same frames through rustls), same run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_baseline: Option<Baseline>,
    /// `--tls-vs-plain`, a case over TLS: its figure divided by the same
    /// case's over plain TCP, same runs (metric `throughput`, `p50` or
    /// `calls_per_sec`; `baseline_value` is the plain figure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_plain: Option<Baseline>,
    /// Experiment-specific figures (e.g. `littles_law`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
    /// With `--runs` > 1: each run's figures, in the order they ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunFigures>,
    /// With `--runs` > 1: mean ± 95 % interval across runs, keyed by
    /// figure: `throughput_mbps`, `receiver_throughput_mbps`,
    /// `calls_per_sec`, `p50`, `p90`, `p99`, `p999`, `vs_tcp`,
    /// `vs_limit`, `vs_tls_tcp`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub intervals: BTreeMap<String, Interval>,
    /// The machine while this case ran (all its runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<crate::noise::Noise>,
    /// Threads that moved between CPUs while this case ran: its histogram
    /// may mix two placements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<String>,
    /// A merged agent run: each agent's share, in agent id order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentCase>,
}

impl Case {
    /// What `--threshold` gates read of this case.
    pub fn figures(&self) -> Figures<'_> {
        Figures {
            case: &self.name,
            latency_us: self.latency_us.as_ref(),
            calls_per_sec: self.calls_per_sec,
            errors: self.errors.values().sum(),
        }
    }
}

/// Per-case parameters; `type`, `size` and `mode` always present.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseParams {
    #[serde(rename = "type")]
    pub ty: String,
    pub size: u64,
    pub mode: String,
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// CPU cost of a case.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuFigures {
    pub client_user_s: f64,
    pub client_sys_s: f64,
    /// Client CPU seconds per MiB of payload.
    pub client_s_per_mib: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_s: Option<f64>,
}

/// Protocol bytes beyond the payload, per call (E3.4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    pub request_bytes: f64,
    pub reply_bytes: f64,
}

/// Ratio to the raw-TCP baseline measured in the same run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// Which figure: `throughput` or `p50`.
    pub metric: String,
    pub baseline_value: f64,
    /// case / baseline for throughput; case / baseline for latency.
    pub ratio: f64,
}

/// latency_us(mean) = a + b·bytes over a size sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    pub label: String,
    /// Intercept, µs.
    pub a_us: f64,
    /// Slope, µs per byte.
    pub b_us_per_byte: f64,
    /// 1/b in MB/s (10^6 bytes per second); infinite slope-free fits omit it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inv_b_mbytes_per_s: Option<f64>,
    pub r2: f64,
    pub points: usize,
}

/// Least squares y = a + b·x. None with fewer than two distinct x.
pub fn fit_line(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    let a = my - b * mx;
    let ss_tot: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
    let ss_res: f64 = points.iter().map(|p| (p.1 - a - b * p.0).powi(2)).sum();
    let r2 = if ss_tot == 0.0 {
        1.0
    } else {
        1.0 - ss_res / ss_tot
    };
    Some((a, b, r2))
}

impl Fit {
    /// Fit mean latency (µs) against bytes.
    pub fn from_points(label: &str, points: &[(f64, f64)]) -> Option<Fit> {
        let (a, b, r2) = fit_line(points)?;
        Some(Fit {
            label: label.to_string(),
            a_us: a,
            b_us_per_byte: b,
            inv_b_mbytes_per_s: (b > 0.0).then(|| 1.0 / b),
            r2,
            points: points.len(),
        })
    }
}

/// RFC 3339 UTC timestamp of now, without a date-time dependency.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// RFC 3339 UTC timestamp with milliseconds of `unix_ns`.
pub fn rfc3339_ms(unix_ns: i64) -> String {
    let ms = unix_ns.div_euclid(1_000_000);
    let (secs, milli) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d)
}

/// JSON text of the results.
pub fn to_json(r: &Results) -> String {
    serde_json::to_string_pretty(r).expect("results serialize") + "\n"
}

/// CSV: one row per case, the stable scalar fields.
pub fn to_csv(r: &Results) -> String {
    let mut out = String::from(
        "name,type,size,mode,calls,bytes,seconds,calls_per_sec,throughput_mbps,receiver_throughput_mbps,\
         lat_min_us,lat_mean_us,lat_p50_us,lat_p90_us,lat_p99_us,lat_p999_us,lat_max_us,errors\n",
    );
    for c in &r.cases {
        let l = c.latency_us.unwrap_or_default();
        let opt = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_default();
        let errors: u64 = c.errors.values().sum();
        out.push_str(&format!(
            "{},{},{},{},{},{},{:.6},{:.1},{:.3},{},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{}\n",
            csv_field(&c.name),
            csv_field(&c.params.ty),
            c.params.size,
            csv_field(&c.params.mode),
            c.calls,
            c.bytes,
            c.seconds,
            c.calls_per_sec,
            c.throughput_mbps,
            opt(c.receiver_throughput_mbps),
            l.min,
            l.mean,
            l.p50,
            l.p90,
            l.p99,
            l.p999,
            l.max,
            errors
        ));
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Write `contents` to `path` atomically (`-` is stdout).
pub fn write_atomic(path: &Path, contents: &str) -> crate::error::Result<()> {
    if path.as_os_str() == "-" {
        std::io::stdout().write_all(contents.as_bytes())?;
        return Ok(());
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(d) = dir {
        std::fs::create_dir_all(d)?;
    }
    let name = path
        .file_name()
        .ok_or_else(|| crate::error::fail!(Local, "{} is not a file path", path.display()))?;
    let tmp = path.with_file_name(format!(
        ".{}.tmp.{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let res = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(contents.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res.map_err(|e| crate::error::fail!(Local, "writing {}: {e}", path.display()))
}

/// Read a results file, checking the schema version.
pub fn read(path: &Path) -> crate::error::Result<Results> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| crate::error::fail!(Local, "reading {}: {e}", path.display()))?;
    let r: Results = serde_json::from_str(&text).map_err(|e| {
        crate::error::fail!(
            Local,
            "{} is not an iiopbench results file: {e}",
            path.display()
        )
    })?;
    crate::error::ensure!(
        r.schema_version <= SCHEMA_VERSION,
        Local,
        "{} has schema version {}, newer than this iiopbench ({SCHEMA_VERSION})",
        path.display(),
        r.schema_version
    );
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Results {
        let mut errors = BTreeMap::new();
        errors.insert("IDL:omg.org/CORBA/TRANSIENT:1.0".to_string(), 2);
        Results {
            schema_version: SCHEMA_VERSION,
            tool: Tool::current(),
            kind: "throughput".into(),
            command: vec!["iiopbench".into(), "bench".into()],
            started_at: now_rfc3339(),
            host: HostInfo::default(),
            target: TargetInfo {
                kind: "embedded".into(),
                ..Default::default()
            },
            placement: Placement::new(vec![0], Some(vec![1])),
            params: BTreeMap::new(),
            cases: vec![Case {
                name: "oneway, long".into(),
                params: CaseParams {
                    ty: "long".into(),
                    size: 1024,
                    mode: "oneway".into(),
                    extra: BTreeMap::new(),
                },
                calls: 10,
                bytes: 10240,
                seconds: 0.5,
                errors,
                ..Default::default()
            }],
            fits: vec![],
            quality: None,
            agents: None,
            job: None,
            thresholds: Vec::new(),
            comparison: None,
            outcome: Outcome {
                complete: true,
                failure: None,
            },
        }
    }

    #[test]
    fn stable_field_names() {
        let v: serde_json::Value = serde_json::from_str(&to_json(&sample())).unwrap();
        for k in [
            "schema_version",
            "tool",
            "target",
            "cases",
            "host",
            "placement",
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        let c = &v["cases"][0];
        assert_eq!(c["params"]["type"], "long");
        assert_eq!(c["params"]["size"], 1024);
        assert_eq!(c["params"]["mode"], "oneway");
        for k in ["calls", "bytes", "seconds", "throughput_mbps", "errors"] {
            assert!(c.get(k).is_some(), "missing {k}");
        }
        assert_eq!(v["placement"]["relation"], "cross-cpu");
    }

    #[test]
    fn json_round_trip_and_csv_quoting() {
        let r = sample();
        let back: Results = serde_json::from_str(&to_json(&r)).unwrap();
        assert_eq!(back, r);
        let csv = to_csv(&r);
        assert_eq!(csv.lines().count(), 2);
        assert!(csv
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("\"oneway, long\",long,1024,oneway,10,10240,"));
    }

    #[test]
    fn fit_recovers_a_line() {
        let pts: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64 * 100.0, 20.0 + 0.5 * i as f64 * 100.0))
            .collect();
        let f = Fit::from_points("x", &pts).unwrap();
        assert!((f.a_us - 20.0).abs() < 1e-9 && (f.b_us_per_byte - 0.5).abs() < 1e-12);
        assert!((f.r2 - 1.0).abs() < 1e-12);
        assert!(fit_line(&[(1.0, 2.0), (1.0, 3.0)]).is_none());
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_413), (2025, 11, 21));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(
            rfc3339_ms(1_763_683_200_123_456_789),
            "2025-11-21T00:00:00.123Z"
        );
    }

    #[test]
    fn atomic_write_replaces_whole_file() {
        let dir = std::env::temp_dir().join(format!("iiopbench-test-{}", std::process::id()));
        let p = dir.join("r.json");
        write_atomic(&p, "first").unwrap();
        write_atomic(&p, "second").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "second");
        let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(leftovers.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
