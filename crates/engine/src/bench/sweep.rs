//! `iiopbench bench sweep`: the load at which a server gives out. The
//! offered load rises step by step — open loop at increasing rates
//! (coordinated-omission corrected), closed loop at increasing client
//! counts, or more and more connections held open with pings through
//! them — until a stop rule trips (p99 above a bound, errors, or the
//! achieved rate below a share of the offered one). Every step is one
//! point of the latency bench's loops ([`loops::point`]), on connections
//! opened once and kept from step to step.
//!
//! Per step the results hold the offered and achieved calls/s, the
//! latency histogram, errors, the client's CPU, and where the server is
//! local its CPU and resident memory (and the memory each connection
//! opened for the step added); the **knee** — the highest load whose
//! step tripped no rule — is the headline. An optional first pass
//! measures the generator's own ceiling against a server that does no
//! work, and every step above half of it is marked.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use iiop_bench_idl::bench::elements::{CallMode, Elem};
use iiop_bench_idl::bench::types::{Outgoing, Payload};
use iiop_bench_idl::client::BenchClient;
use iiop_transport::hosted::ServerModel;
use serde::{Deserialize, Serialize};

use super::closed::ServiceKind;
use super::latency::{Call, Caller, LatencyOp};
use super::loops::{self, Loop};
use super::session::{self, Session, Shape};
use crate::error::{bail, check, ensure, Error, JobError, Result};
use crate::options::{OnError, PlacementOpts, Sizes, Sockets};
use crate::results::{param, CaseParams, Results};
use crate::run_context::RunContext;
use crate::sysinfo::CpuTime;
use crate::target::TargetOpts;
use crate::units::{format_size, micros, num};

/// What rises from step to step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SweepMode {
    /// Open loop: calls/s offered at fixed intended times.
    #[default]
    Open,
    /// Closed loop: clients, each on its own connection with one call in
    /// flight.
    Clients,
    /// Connections held open, `rate` calls/s spread over them.
    Connections,
}

impl SweepMode {
    /// `open`, `clients`, `connections`.
    pub fn name(self) -> &'static str {
        match self {
            SweepMode::Open => "open",
            SweepMode::Clients => "clients",
            SweepMode::Connections => "connections",
        }
    }

    /// The unit of a step's load, as a table shows it.
    pub fn unit(self) -> &'static str {
        match self {
            SweepMode::Open => "calls/s",
            SweepMode::Clients => "clients",
            SweepMode::Connections => "conns",
        }
    }
}

/// The loads of a sweep's steps, in increasing order: a comma list
/// (`1000,2000,5000`) or a geometric series `start:factor:max`
/// (`1000:2:64000`: 1000, 2000, 4000 … up to 64000).
#[derive(Debug, Clone, PartialEq)]
pub struct Steps(pub Vec<f64>);

/// At most this many steps (a series with a factor near 1 is a mistake).
pub const MAX_STEPS: usize = 200;

impl std::str::FromStr for Steps {
    type Err = String;

    fn from_str(s: &str) -> Result<Steps, String> {
        let n = |t: &str| {
            let t = t.trim().replace('_', "");
            let (t, mul) = match t.strip_suffix(['k', 'K']) {
                Some(t) => (t.to_string(), 1e3),
                None => (t, 1.0),
            };
            t.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .map(|v| v * mul)
                .ok_or_else(|| format!("{s:?}: {t:?} is not a positive number"))
        };
        let parts: Vec<&str> = s.split(':').collect();
        let v = match parts.as_slice() {
            [one] => one
                .split(',')
                .map(n)
                .collect::<Result<Vec<f64>, String>>()?,
            [start, factor, max] => {
                let (start, factor, max) = (n(start)?, n(factor)?, n(max)?);
                if factor <= 1.0 {
                    return Err(format!(
                        "{s:?}: the factor of start:factor:max must be above 1"
                    ));
                }
                let mut v = Vec::new();
                let mut x = start;
                // (A hair of slack: 1000·2^6 lands on 64000 exactly, but
                // 100·1.1^k may not land on its max.)
                while x <= max * (1.0 + 1e-9) && v.len() <= MAX_STEPS {
                    v.push(x);
                    x *= factor;
                }
                v
            }
            _ => return Err(format!("{s:?}: a comma list, or start:factor:max")),
        };
        let steps = Steps(v);
        steps.check().map_err(|e| format!("{s:?}: {e}"))?;
        Ok(steps)
    }
}

impl Steps {
    fn check(&self) -> Result<(), String> {
        if self.0.is_empty() {
            return Err("no steps".into());
        }
        if self.0.len() > MAX_STEPS {
            return Err(format!("more than {MAX_STEPS} steps"));
        }
        if self.0.windows(2).any(|w| w[1] <= w[0]) {
            return Err("the loads must increase from step to step".into());
        }
        Ok(())
    }
}

impl Serialize for Steps {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Steps {
    /// A list of numbers, or one string as users type it.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Steps, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            List(Vec<f64>),
            Text(String),
        }
        match Form::deserialize(d)? {
            Form::List(v) => {
                let s = Steps(v);
                s.check().map_err(serde::de::Error::custom)?;
                Ok(s)
            }
            Form::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// A `bench sweep` job (`Default`: the command line's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SweepJob {
    pub target: TargetOpts,
    /// The bench.idl operation.
    pub op: LatencyOp,
    /// Call `work` with this service time instead of `op` (0: `op`): a
    /// server whose capacity is known (spin: one thread serves 1/S calls/s).
    #[serde(with = "crate::units::duration")]
    pub service: Duration,
    /// How the server spends `service`.
    pub service_kind: ServiceKind,
    /// Element type for echo/send (one).
    #[serde(with = "super::elems")]
    pub types: Vec<Elem>,
    /// Payload bytes per call for echo/send (one size).
    pub sizes: Sizes,
    /// What rises from step to step.
    pub mode: SweepMode,
    /// The loads: calls/s (open), clients, or connections.
    pub steps: Steps,
    /// How long each step measures.
    #[serde(with = "crate::units::duration")]
    pub step_duration: Duration,
    /// Unmeasured calls before each step.
    pub warmup: u64,
    /// Open mode: the connections its calls are spread over.
    pub spread: usize,
    /// Connections mode: calls/s through the held connections.
    pub rate: f64,
    /// Stop after the first step whose p99 exceeds this.
    #[serde(
        with = "crate::units::opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub p99_bound: Option<Duration>,
    /// Stop after the first step whose achieved rate is below this share
    /// of the offered one (open and connections modes).
    pub min_achieved: f64,
    /// First measure the generator's ceiling against a server that does
    /// no work ([`ceiling_job`]).
    pub ceiling: bool,
    /// Measure each step again over raw TCP ([`crate::rawloop`]): the same
    /// loop, connections and rate through the same runtime, against a raw
    /// server placed where the sweep's server runs, right after the step.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub baseline: bool,
    /// Sweep each of these servers in one run, one after the other in
    /// rotating order for `rounds` rounds (see [`super::sweep_servers`]):
    /// `ours` (or `ours:reactor`, `ours:threads`), `omniorb`, `jacorb`,
    /// `tao`. Empty: the one target.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<String>,
    /// With `servers`: how many times each server is swept.
    pub rounds: u32,
    /// Run every step whatever its figures: in an agent run every agent
    /// runs every step at the same instants, and the stop rules and the
    /// knee are applied to the merged steps ([`merge_steps`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub every_step: bool,
    pub socket: Sockets,
    pub placement: PlacementOpts,
}

impl Default for SweepJob {
    fn default() -> Self {
        SweepJob {
            target: TargetOpts::default(),
            op: LatencyOp::Ping,
            service: Duration::ZERO,
            service_kind: ServiceKind::Spin,
            types: vec![Elem::Octet],
            sizes: Sizes(vec![0]),
            mode: SweepMode::Open,
            steps: Steps(vec![
                1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 32000.0, 64000.0, 128000.0,
            ]),
            step_duration: Duration::from_secs(2),
            warmup: 200,
            spread: 1,
            rate: 1000.0,
            p99_bound: None,
            min_achieved: 0.95,
            ceiling: false,
            baseline: false,
            servers: Vec::new(),
            rounds: 1,
            every_step: false,
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
        }
    }
}

/// One server a multi-server sweep measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SweepServer {
    /// Our server, embedded, in this model.
    Ours(ServerModel),
    /// A vendor ORB's bench server (`scripts/orbs/<name>/`).
    Orb(String),
}

impl FromStr for SweepServer {
    type Err = String;

    fn from_str(s: &str) -> Result<SweepServer, String> {
        match s {
            "ours" | "ours:reactor" => Ok(SweepServer::Ours(ServerModel::Reactor)),
            "ours:threads" => Ok(SweepServer::Ours(ServerModel::Threads)),
            _ if crate::orbs::ORBS.iter().any(|(n, _)| *n == s) => {
                Ok(SweepServer::Orb(s.to_string()))
            }
            _ => {
                let orbs: Vec<&str> = crate::orbs::ORBS.iter().map(|(n, _)| *n).collect();
                Err(format!(
                    "unknown server {s:?} (ours, ours:reactor, ours:threads, {})",
                    orbs.join(", ")
                ))
            }
        }
    }
}

impl fmt::Display for SweepServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepServer::Ours(m) => write!(f, "ours:{}", m.name()),
            SweepServer::Orb(n) => f.write_str(n),
        }
    }
}

impl SweepJob {
    /// [`validate`](session::BenchJob::validate) without reading the
    /// target's file.
    pub fn validate_fields(&self) -> Result<(), JobError> {
        let d = SweepJob::default();
        self.steps
            .check()
            .map_err(|e| JobError::new(format!("`steps`: {e}")))?;
        if self.mode != SweepMode::Open {
            check(self.steps.0.iter().all(|v| v.fract() == 0.0), || {
                format!("`steps` of a {} sweep are whole numbers", self.mode.name())
            })?;
        }
        check(!self.step_duration.is_zero(), || {
            "`step_duration` must be more than 0".into()
        })?;
        check(self.spread >= 1, || "`spread` must be at least 1".into())?;
        check(self.rate > 0.0 && self.rate.is_finite(), || {
            "`rate` must be positive".into()
        })?;
        check(
            self.spread == d.spread || self.mode == SweepMode::Open,
            || "`spread` is the open sweep's: its calls spread over that many connections".into(),
        )?;
        check(
            self.rate == d.rate || self.mode == SweepMode::Connections,
            || "`rate` is the connections sweep's: the calls/s through the held connections".into(),
        )?;
        check(self.min_achieved > 0.0 && self.min_achieved <= 1.0, || {
            "`min_achieved` is a share of the offered rate, above 0 and at most 1".into()
        })?;
        check(self.p99_bound.is_none_or(|b| !b.is_zero()), || {
            "`p99_bound` must be more than 0".into()
        })?;
        check(self.placement.runs.is_none_or(|r| r == 1), || {
            "`runs`: a sweep runs once; its steps are its repetitions".into()
        })?;
        check(self.rounds >= 1, || "`rounds` must be at least 1".into())?;
        check(self.rounds == 1 || !self.servers.is_empty(), || {
            "`rounds` repeats the sweep of each of `servers`, which is empty".into()
        })?;
        for s in &self.servers {
            s.parse::<SweepServer>()
                .map_err(|e| JobError::new(format!("`servers`: {e}")))?;
        }
        check(
            self.servers.is_empty() || self.target.target.is_none(),
            || "`servers` starts each server it sweeps: no `target` with it".into(),
        )?;
        check(self.servers.is_empty() || !self.every_step, || {
            "`servers` starts each server it sweeps: not in an agent run, whose agents share one target".into()
        })?;
        check(
            self.service_kind == d.service_kind || !self.service.is_zero(),
            || "`service_kind` is how the server spends `service`, which is 0".into(),
        )?;
        check(self.service.is_zero() || self.op == d.op, || {
            "`service` calls `work` instead of `op`: give one or the other".into()
        })?;
        match self.op {
            LatencyOp::Ping => check(self.types == d.types && self.sizes == d.sizes, || {
                "`types` and `sizes` are the payload of echo and send: ping sends none".into()
            })?,
            LatencyOp::CallBack => check(self.target.bidir, || {
                "`op` call_back needs `bidir`: without a BI_DIR_IIOP offer the server cannot call back and answers NO_PERMISSION".into()
            })?,
            _ => {
                check(self.types.len() == 1, || {
                    "`types`: a sweep calls with one element type".into()
                })?;
                check(self.sizes.0.len() == 1, || {
                    "`sizes`: a sweep calls with one payload size".into()
                })?
            }
        }
        self.socket.validate()?;
        self.placement.validate()
    }

    /// Payload bytes per call.
    pub fn size(&self) -> u64 {
        self.sizes.0.first().copied().unwrap_or(0)
    }

    /// The stop rule of its steps.
    pub fn rule(&self) -> StopRule {
        StopRule {
            p99_bound_us: self.p99_bound.map(|b| b.as_secs_f64() * 1e6),
            min_achieved: self.min_achieved,
        }
    }

    /// The calls/s offered at a step of load `load` (`None`: a closed
    /// loop offers as fast as replies come).
    pub fn offered(&self, load: f64) -> Option<f64> {
        match self.mode {
            SweepMode::Open => Some(load),
            SweepMode::Clients => None,
            SweepMode::Connections => Some(self.rate),
        }
    }

    /// How each step is measured: `load` of the mode, for the step.
    fn step_loop(&self, load: f64) -> Loop {
        let (connections, rate) = match self.mode {
            SweepMode::Open => (self.spread, Some(load)),
            SweepMode::Clients => (load as usize, None),
            SweepMode::Connections => (load as usize, Some(self.rate)),
        };
        Loop {
            count: 0,
            duration: Some(self.step_duration),
            max_duration: None,
            warmup: self.warmup,
            connections,
            in_flight: 1,
            rate,
            max_outstanding: loops::DEFAULT_MAX_OUTSTANDING,
            // A step counts its failures; the stop rule ends the sweep.
            on_error: OnError::Continue,
        }
    }

    /// Connections the sweep holds at its largest step.
    fn max_connections(&self) -> usize {
        match self.mode {
            SweepMode::Open => self.spread,
            _ => self.steps.0.last().copied().unwrap_or(1.0) as usize,
        }
    }
}

session::bench_job!(SweepJob, "sweep");

/// The figures of one step the stop rule and the knee look at.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepLoad {
    /// The step's load in its mode's unit (calls/s, clients, connections).
    pub load: f64,
    /// Calls/s offered (`None`: closed loop).
    pub offered: Option<f64>,
    /// Calls/s completed.
    pub achieved: f64,
    /// p99 latency, µs (`None`: no call completed).
    pub p99_us: Option<f64>,
    /// Failed calls.
    pub errors: u64,
}

/// When a sweep stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StopRule {
    /// Stop after a step whose p99 is above this (µs).
    pub p99_bound_us: Option<f64>,
    /// Stop after a step that achieved less than this share of its
    /// offered rate.
    pub min_achieved: f64,
}

/// Why a step ended the sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// Calls failed.
    Errors(u64),
    /// No call completed.
    NoCalls,
    /// p99 above the bound.
    P99 { p99_us: f64, bound_us: f64 },
    /// Achieved below the share of offered.
    Achieved { achieved: f64, offered: f64 },
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Stop::Errors(n) => write!(f, "{n} failed calls"),
            Stop::NoCalls => write!(f, "no call completed"),
            Stop::P99 { p99_us, bound_us } => {
                write!(
                    f,
                    "p99 {} above the bound {}",
                    micros(p99_us),
                    micros(bound_us)
                )
            }
            Stop::Achieved { achieved, offered } => write!(
                f,
                "achieved {} calls/s, {:.0} % of the {} offered",
                num(achieved),
                100.0 * achieved / offered.max(1e-9),
                num(offered)
            ),
        }
    }
}

/// The rule `step` trips, if any: errors first, then no calls, p99
/// above the bound, achieved below its share of offered.
pub fn stop_reason(step: &StepLoad, rule: &StopRule) -> Option<Stop> {
    if step.errors > 0 {
        return Some(Stop::Errors(step.errors));
    }
    let Some(p99) = step.p99_us else {
        return Some(Stop::NoCalls);
    };
    if let Some(bound) = rule.p99_bound_us.filter(|&b| p99 > b) {
        return Some(Stop::P99 {
            p99_us: p99,
            bound_us: bound,
        });
    }
    match step.offered {
        Some(offered) if step.achieved < rule.min_achieved * offered => Some(Stop::Achieved {
            achieved: step.achieved,
            offered,
        }),
        _ => None,
    }
}

/// The knee: the index of the highest-load step that tripped no rule
/// (its p99 within the bound, no errors, its offered rate achieved);
/// `None` when every step tripped one.
pub fn knee(steps: &[StepLoad], rule: &StopRule) -> Option<usize> {
    steps
        .iter()
        .enumerate()
        .filter(|(_, s)| stop_reason(s, rule).is_none())
        .max_by(|a, b| a.1.load.total_cmp(&b.1.load))
        .map(|(i, _)| i)
}

/// Whether a step at `achieved` calls/s is above half the generator's
/// `ceiling`: its figures may be the generator's, not the server's.
pub fn near_ceiling(achieved: f64, ceiling: Option<f64>) -> bool {
    ceiling.is_some_and(|c| achieved > c / 2.0)
}

/// Run a sweep.
pub fn run(o: &SweepJob, ctx: &RunContext) -> (Results, Option<Error>) {
    if let Err(e) = session::BenchJob::validate(o) {
        return session::refused("sweep", o, ctx, e.into());
    }
    if !o.servers.is_empty() {
        let e = crate::error::fail!(
            Job,
            "a sweep of several servers runs as a job, one sweep per server"
        );
        return session::refused("sweep", o, ctx, e);
    }
    let ceiling = o.ceiling.then(|| ceiling(o, ctx));
    run_with_ceiling(o, ctx, ceiling)
}

/// How far the ceiling pass goes past the sweep's own steps: at most this
/// many more steps.
const CEILING_EXTRA_STEPS: usize = 8;
/// The most clients a clients sweep's ceiling pass adds steps up to.
const CEILING_MOST_CLIENTS: f64 = 4096.0;

/// The generator's ceiling: the most calls/s this client completed in the
/// same sweep against a server that does no work, and that pass's steps.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    /// Calls/s: the highest any of the pass's steps achieved.
    pub per_s: f64,
    /// Each step of the pass: `load`, `offered_per_s`, `achieved_per_s`,
    /// `p99_us`, `stopped_by` where it tripped a rule.
    pub steps: Vec<serde_json::Value>,
    /// How the pass ran, in a line.
    pub how: String,
}

/// The sweep that measures `o`'s generator: the same operation, payload,
/// step duration, socket options and placement, against our embedded
/// server in its reactor model answering at once (a `work` sweep calls
/// ping: no service time), with no p99 bound, and continued past the
/// sweep's top step until the generator gives out (errors, or below 95 %
/// of an offered rate):
/// - open: the rates go on doubling (up to [`CEILING_EXTRA_STEPS`] more)
///   and the pass stops at the first the client cannot keep;
/// - clients: the client count goes on doubling while descriptors allow
///   (a closed loop's calls/s stop rising once client or server is busy);
/// - connections: an open loop through as many of the top step's
///   connections as descriptors allow, its rate doubling from the sweep's
///   until the client cannot keep it.
///
/// `fds_soft`: the open-file limit the pass may use (our embedded server
/// holds the other end of every connection: two descriptors each).
pub fn ceiling_job(o: &SweepJob, fds_soft: u64) -> SweepJob {
    let mut j = o.clone();
    j.target = crate::target::TargetOpts {
        giop: o.target.giop,
        order: o.target.order,
        timeout: o.target.timeout,
        fragment_size: o.target.fragment_size,
        waiting: o.target.waiting,
        tls: crate::target::TlsOpts {
            tls: o.target.tls.tls,
            ..Default::default()
        },
        bidir: o.target.bidir,
        ..Default::default()
    };
    j.service = Duration::ZERO;
    j.service_kind = SweepJob::default().service_kind;
    j.p99_bound = None;
    // "Gives out": falls below the default share of its rate, whatever
    // share the sweep itself accepts.
    j.min_achieved = SweepJob::default().min_achieved;
    j.ceiling = false;
    j.baseline = false;
    j.servers.clear();
    j.rounds = 1;
    j.every_step = false;
    let fits = (fds_soft.saturating_sub(64) / 2).max(1) as f64;
    let top = o.steps.0.last().copied().unwrap_or(1.0);
    let doubling = |from: f64, upto: f64| -> Vec<f64> {
        (1..=CEILING_EXTRA_STEPS as i32)
            .map(|k| from * 2f64.powi(k))
            .take_while(|&v| v <= upto)
            .collect()
    };
    match o.mode {
        SweepMode::Open => j.steps.0.extend(doubling(top, f64::MAX)),
        SweepMode::Clients => j
            .steps
            .0
            .extend(doubling(top, CEILING_MOST_CLIENTS.min(fits))),
        SweepMode::Connections => {
            j.mode = SweepMode::Open;
            j.spread = top.min(fits) as usize;
            let mut steps = vec![o.rate];
            steps.extend(doubling(o.rate, f64::MAX));
            j.steps = Steps(steps);
            j.rate = SweepJob::default().rate;
        }
    }
    j
}

/// The generator's ceiling ([`ceiling_job`]'s pass), or why it could not
/// be read.
pub(crate) fn ceiling(o: &SweepJob, ctx: &RunContext) -> std::result::Result<Ceiling, String> {
    let most = o.max_connections().max(o.spread) as u64;
    let fds = crate::sysinfo::raise_nofile((most * 2 + 64) as usize);
    let j = ceiling_job(o, fds.soft);
    let how = match o.mode {
        SweepMode::Connections => format!(
            "an open loop through {} connections at doubling rates",
            j.spread
        ),
        m => format!("the same {} sweep, continued past its top step", m.name()),
    };
    let (r, e) = run_with_ceiling(&j, ctx, None);
    let steps: Vec<serde_json::Value> = r
        .cases
        .iter()
        .map(|c| {
            let x = |k: &str| c.extra.get(k).cloned().unwrap_or(serde_json::Value::Null);
            serde_json::json!({
                "load": x("load"),
                "offered_per_s": x("offered_per_s"),
                "achieved_per_s": c.calls_per_sec,
                "p99_us": c.latency_us.map(|l| l.p99),
                "stopped_by": x("stopped_by"),
            })
        })
        .collect();
    let best = r.cases.iter().map(|c| c.calls_per_sec).reduce(f64::max);
    match (best, e) {
        (Some(per_s), _) if per_s > 0.0 => Ok(Ceiling {
            per_s,
            steps,
            how: format!("{how}, against our embedded server (reactor), no p99 bound"),
        }),
        (_, Some(e)) => Err(e.to_string()),
        _ => Err("no call of the ceiling pass completed".into()),
    }
}

/// Run a sweep whose generator's ceiling was read before (`None`: not
/// asked for): a sweep of several servers reads it once and marks every
/// server's steps against it.
pub(crate) fn run_with_ceiling(
    o: &SweepJob,
    ctx: &RunContext,
    ceiling: Option<std::result::Result<Ceiling, String>>,
) -> (Results, Option<Error>) {
    // Our embedded server serves every connection of the largest step
    // (an open sweep's: those it spreads its calls over).
    let holds = o.mode != SweepMode::Open || o.spread > 1;
    let mut job = o.clone();
    if o.target.target.is_none() && holds {
        let most = o.max_connections().max(1024);
        job.target.server_max_connections = Some(most);
    }
    let o = &job;
    let fds = holds
        .then(|| crate::sysinfo::raise_nofile(o.max_connections() * per_connection_fds(o) + 64));
    session::run(
        o,
        Shape::default(),
        ctx,
        |r| {
            let p = &mut r.params;
            param(p, "mode", o.mode.name());
            param(p, "op", o.op.name());
            if !o.service.is_zero() {
                param(p, "service_s", o.service.as_secs_f64());
                param(p, "service_kind", o.service_kind.name());
            }
            param(p, "step_duration_s", o.step_duration.as_secs_f64());
            param(p, "warmup", o.warmup);
            param(p, "steps", &o.steps.0);
            param(p, "p99_bound_us", o.rule().p99_bound_us);
            param(p, "min_achieved", o.min_achieved);
            match o.mode {
                SweepMode::Open => param(p, "spread", o.spread),
                SweepMode::Connections => param(p, "rate", o.rate),
                SweepMode::Clients => {}
            }
            match &ceiling {
                Some(Ok(c)) => {
                    param(p, "ceiling_per_s", c.per_s);
                    param(p, "ceiling_steps", &c.steps);
                    param(p, "ceiling_how", &c.how);
                }
                Some(Err(e)) => param(p, "ceiling_failure", e),
                None => {}
            }
            if let Some(f) = &fds {
                param(p, "nofile", f);
            }
        },
        async |s: &Session, r: &mut Results| {
            let ceiling = ceiling
                .as_ref()
                .and_then(|c| c.as_ref().ok().map(|c| c.per_s));
            measure(o, s, r, ceiling, fds.as_ref()).await
        },
    )
}

/// File descriptors each connection takes in this process: two when our
/// embedded server holds the other end.
fn per_connection_fds(o: &SweepJob) -> usize {
    if o.target.target.is_none() {
        2
    } else {
        1
    }
}

/// Where the server's CPU and memory are read from.
enum ServerProbe {
    /// Our server in this process: CPU is the process's less the client
    /// thread's; memory is the process's (client and server).
    Embedded,
    /// Local processes serving the target.
    Pids(Vec<u32>),
    /// A server elsewhere: nothing to read.
    Remote,
}

impl ServerProbe {
    fn of(s: &Session) -> ServerProbe {
        match (s.embedded(), s.watching.server_pids.as_slice()) {
            (true, _) => ServerProbe::Embedded,
            (false, []) => ServerProbe::Remote,
            (false, pids) => ServerProbe::Pids(pids.to_vec()),
        }
    }

    /// What the server CPU figure is.
    fn cpu_source(&self) -> &'static str {
        match self {
            ServerProbe::Embedded => "process-less-client-thread",
            ServerProbe::Pids(_) => "server-process",
            ServerProbe::Remote => "none",
        }
    }

    /// What the resident memory figure is.
    fn rss_source(&self) -> &'static str {
        match self {
            ServerProbe::Embedded => "process-client-and-server",
            ServerProbe::Pids(_) => "server-process",
            ServerProbe::Remote => "none",
        }
    }

    /// The server's CPU seconds so far (embedded: the process's, from
    /// which the client thread's is taken per step).
    fn cpu(&self) -> Option<f64> {
        match self {
            ServerProbe::Embedded => Some(CpuTime::now().total()),
            ServerProbe::Pids(p) => p.iter().map(|&p| crate::noise::proc_cpu_s(p)).sum(),
            ServerProbe::Remote => None,
        }
    }

    /// Resident bytes now.
    fn rss(&self) -> Option<u64> {
        match self {
            ServerProbe::Embedded => crate::sysinfo::proc_rss(std::process::id()),
            ServerProbe::Pids(p) => p.iter().map(|&p| crate::sysinfo::proc_rss(p)).sum(),
            ServerProbe::Remote => None,
        }
    }
}

async fn measure(
    o: &SweepJob,
    s: &Session,
    r: &mut Results,
    ceiling: Option<f64>,
    fds: Option<&crate::sysinfo::NoFile>,
) -> Result<()> {
    let probe = ServerProbe::of(s);
    param(&mut r.params, "server_cpu_source", probe.cpu_source());
    match probe {
        ServerProbe::Embedded if o.baseline => param(&mut r.params, "server_rss_source", "none"),
        _ => param(&mut r.params, "server_rss_source", probe.rss_source()),
    }
    // Resident memory and connections at the end of the step before.
    // (Our embedded server's memory is this process's: with a raw
    // baseline, it holds the raw connections too, and is left out.)
    let server_rss = || match probe {
        ServerProbe::Embedded if o.baseline => None,
        _ => probe.rss(),
    };
    let mut prev: (Option<u64>, usize) = (server_rss(), 0);
    // The generator's own, where the server is another process: what
    // holding the connections costs this side.
    // (With a raw baseline, this process also holds the raw connections
    // and the raw server: its memory is not the generator's alone.)
    let own_rss = || match probe {
        _ if o.baseline => None,
        ServerProbe::Embedded => None,
        _ => crate::sysinfo::proc_rss(std::process::id()),
    };
    let mut prev_own = own_rss();
    let mut conns: Vec<BenchClient> = Vec::new();
    let mut raw = match o.baseline {
        true => Some(RawSide::start(o, s)?),
        false => None,
    };
    let rule = o.rule();
    let mut loads: Vec<StepLoad> = Vec::new();
    let mut labels: Vec<String> = Vec::new();
    let mut stopped: Option<String> = None;
    for (i, &load) in o.steps.0.iter().enumerate() {
        ensure!(!crate::interrupt::requested(), Interrupted, "interrupted");
        let lo = o.step_loop(load);
        if let Some(f) =
            fds.filter(|f| lo.connections * per_connection_fds(o) + 64 > f.soft as usize)
        {
            stopped = Some(format!(
                "step {} not run: {} connections need more file descriptors than the limit {} allows",
                i + 1,
                lo.connections,
                f.soft
            ));
            break;
        }
        while conns.len() < lo.connections {
            match s.connect().await {
                Ok(c) => conns.push(c),
                Err(e) if conns.is_empty() => {
                    bail!(Target, "connecting to the target: {e}")
                }
                Err(e) => {
                    stopped = Some(format!(
                        "step {}: connection {} failed: {e}",
                        i + 1,
                        conns.len() + 1
                    ));
                    break;
                }
            }
        }
        if stopped.is_some() {
            break;
        }
        let cs = conns[0].options().char_set;
        let (what, per_call, ty) = match (o.op, o.types.first()) {
            _ if !o.service.is_zero() => (
                Call::Work(o.service.as_secs_f64() * 1e6, o.service_kind.wire()),
                0,
                "void".to_string(),
            ),
            (LatencyOp::CallBack, _) => (Call::Bidir, 0, "void".to_string()),
            (LatencyOp::Ping, _) | (_, None) => (Call::Ping, 0, "void".to_string()),
            (op, Some(&e)) => {
                let mode = if op == LatencyOp::Echo {
                    CallMode::Echo
                } else {
                    CallMode::Twoway
                };
                let p = Payload::for_size(e, o.size());
                let b = p.counted_bytes(cs);
                (
                    Call::Payload(mode, Arc::new(Outgoing::new(p))),
                    b,
                    e.token().to_string(),
                )
            }
        };
        let callers: Vec<Caller> = conns[..lo.connections]
            .iter()
            .map(|c| Caller {
                c: c.clone(),
                what: what.clone(),
            })
            .collect();
        let label = step_label(o, load);
        let params = CaseParams {
            ty,
            size: o.size(),
            mode: if o.service.is_zero() {
                o.op.name().into()
            } else {
                "work".into()
            },
            extra: BTreeMap::new(),
        };
        // The warm-up first, so that the server's CPU is the step's only.
        let pb = loops::warm_up(&lo, &callers, &label, s.progress.case(&label)).await?;
        let lo = Loop { warmup: 0, ..lo };
        let watch = s.watch_case();
        let (srv0, proc0) = (probe.cpu(), CpuTime::thread_now());
        let live = s.live(&label);
        let (mut case, _first_error) = loops::point(
            &lo,
            s.gate.as_ref(),
            &callers,
            &label,
            pb,
            params,
            per_call,
            &live,
        )
        .await?;
        watch.finish(&mut case);
        let client_cpu = CpuTime::thread_now().since(proc0).total();
        let server_cpu = match (&probe, srv0, probe.cpu()) {
            // The process's CPU less the client thread's over the step.
            (ServerProbe::Embedded, Some(a), Some(b)) => Some((b - a - client_cpu).max(0.0)),
            (_, Some(a), Some(b)) => Some((b - a).max(0.0)),
            _ => None,
        };
        if let (Some(cpu), Some(srv)) = (&mut case.cpu, server_cpu) {
            cpu.server_s = Some(srv);
        }
        // Raw TCP at the same step, right after it (with its own warm-up).
        if let Some(raw) = &mut raw {
            let lo = Loop {
                warmup: o.warmup,
                ..lo
            };
            raw.step(s, &lo, &label, &mut case).await?;
        }
        let step = StepLoad {
            load,
            offered: o.offered(load),
            achieved: case.calls_per_sec,
            p99_us: case.latency_us.map(|l| l.p99),
            errors: case.errors.values().sum(),
        };
        let e = &mut case.extra;
        param(e, "step", i + 1);
        param(e, "load", load);
        param(e, "offered_per_s", step.offered);
        param(e, "achieved_per_s", step.achieved);
        param(e, "connections", lo.connections);
        param(e, "client_cpu_util", client_cpu / case.seconds.max(1e-9));
        if let Some(srv) = server_cpu {
            param(e, "server_cpu_util", srv / case.seconds.max(1e-9));
        }
        let rss = server_rss();
        if let Some(rss) = rss {
            param(e, "server_rss_bytes", rss);
        }
        // What the connections added since the step before cost each
        // (the first step's: since before any was opened).
        // (The open sweep's connections are a fixed few: not its subject.)
        if let (Some(a), Some(b), false) = (prev.0, rss, o.mode == SweepMode::Open) {
            if lo.connections > prev.1 {
                let per = (b as f64 - a as f64) / (lo.connections - prev.1) as f64;
                param(e, "rss_per_connection_bytes", per.max(0.0));
            }
        }
        let own = own_rss();
        if let Some(b) = own {
            param(e, "client_rss_bytes", b);
            if let (Some(a), false) = (prev_own, o.mode == SweepMode::Open) {
                if lo.connections > prev.1 {
                    let per = (b as f64 - a as f64) / (lo.connections - prev.1) as f64;
                    param(e, "client_rss_per_connection_bytes", per.max(0.0));
                }
            }
        }
        prev_own = own;
        prev = (rss, lo.connections);
        if near_ceiling(step.achieved, ceiling) {
            param(e, "above_half_ceiling", true);
        }
        let stop = stop_reason(&step, &rule);
        if let Some(st) = &stop {
            param(e, "stopped_by", st.to_string());
        }
        r.cases.push(case);
        loads.push(step);
        labels.push(label.clone());
        // The rule's stop is named by `knee_params`.
        if stop.is_some() && !o.every_step {
            break;
        }
    }
    for c in &conns {
        c.close();
    }
    knee_params(&mut r.params, &loads, &labels, &rule, ceiling);
    if let Some(raw) = &raw {
        raw.record(&mut r.params, &r.cases);
    }
    // A step that could not run ended the sweep unless a rule did first.
    if let Some(why) = stopped.filter(|_| r.params["stopped_by"] == "the last step") {
        param(&mut r.params, "stopped_by", why);
    }
    Ok(())
}

/// A sweep's raw-TCP baseline ([`SweepJob::baseline`]): a raw server
/// where the sweep's server runs, and raw connections opened as the
/// sweep's own are, each step measured again through them.
struct RawSide {
    /// Held for the sweep: it stops when dropped.
    _server: crate::rawloop::RawReactor,
    callers: crate::rawloop::RawCallers,
    /// The frames, as the latency bench's baseline frames them.
    frames: super::latency::RawFrames,
    size: u64,
}

impl RawSide {
    fn start(o: &SweepJob, s: &Session) -> Result<RawSide> {
        let server = session::loop_baseline_server(s)?;
        let frames = super::latency::RawFrames::of(o.op, o.service);
        let size = frames.size_for(o.size());
        let callers = crate::rawloop::RawCallers::new(
            server.addr(),
            s.socket.raw(),
            size as usize,
            frames.echo,
        );
        Ok(RawSide {
            _server: server,
            callers,
            frames,
            size,
        })
    }

    /// Measure step `lo` (labelled `label`) over raw TCP, and put its
    /// figures and ours over them in the step's `case`.
    async fn step(
        &mut self,
        s: &Session,
        lo: &Loop,
        label: &str,
        case: &mut crate::results::Case,
    ) -> Result<()> {
        let callers = self
            .callers
            .first(lo.connections)
            .await
            .map_err(|e| crate::error::fail!(Local, "{label}: {e}"))?;
        let rlabel = format!("{label} (raw TCP)");
        let (raw, _) = loops::point(
            lo,
            None,
            callers,
            &rlabel,
            s.progress.case(&rlabel),
            CaseParams::default(),
            0,
            &crate::metrics::Live::off(),
        )
        .await?;
        let e = &mut case.extra;
        param(e, "tcp_achieved_per_s", raw.calls_per_sec);
        if let Some(l) = raw.latency_us {
            param(e, "tcp_p50_us", l.p50);
            param(e, "tcp_p99_us", l.p99);
            param(e, "tcp_p999_us", l.p999);
            param(e, "tcp_max_us", l.max);
            if let Some(ours) = case.latency_us {
                param(e, "vs_tcp_p99", ours.p99 / l.p99.max(1e-9));
            }
        }
        param(e, "tcp_errors", raw.errors.values().sum::<u64>());
        param(
            e,
            "vs_tcp_achieved",
            case.calls_per_sec / raw.calls_per_sec.max(1e-9),
        );
        Ok(())
    }

    /// What the raw steps were, for the results' `params`, and raw TCP's
    /// figures at the knee's step beside the knee's.
    fn record(&self, p: &mut BTreeMap<String, serde_json::Value>, cases: &[crate::results::Case]) {
        let at_knee = p
            .get("knee")
            .and_then(|k| k.get("step"))
            .and_then(|v| v.as_u64())
            .and_then(|i| cases.get(i as usize - 1));
        if let (Some(c), Some(serde_json::Value::Object(k))) = (at_knee, p.get_mut("knee")) {
            for f in [
                "tcp_achieved_per_s",
                "tcp_p99_us",
                "vs_tcp_achieved",
                "vs_tcp_p99",
            ] {
                if let Some(v) = c.extra.get(f) {
                    k.insert(f.into(), v.clone());
                }
            }
        }
        let what = self.frames.pattern();
        param(
            p,
            "baseline",
            format!(
                "raw TCP, {what} of {} byte frames: the same loop, connections and rate through the same runtime; \
                 the raw server one tokio thread where the sweep's server runs",
                self.size
            ),
        );
    }
}

/// The run's `knee` and `stopped_by` from its steps: the knee among the
/// steps up to the first that tripped a rule, `stopped_by` that step (or
/// "the last step").
fn knee_params(
    p: &mut BTreeMap<String, serde_json::Value>,
    loads: &[StepLoad],
    labels: &[String],
    rule: &StopRule,
    ceiling: Option<f64>,
) {
    let tripped = loads
        .iter()
        .enumerate()
        .find_map(|(i, s)| stop_reason(s, rule).map(|st| (i, st)));
    let upto = tripped.map_or(loads.len(), |(i, _)| i + 1);
    match knee(&loads[..upto], rule) {
        Some(k) => {
            let st = &loads[k];
            param(
                p,
                "knee",
                serde_json::json!({
                    "step": k + 1,
                    "load": st.load,
                    "offered_per_s": st.offered,
                    "achieved_per_s": st.achieved,
                    "p99_us": st.p99_us,
                    "above_half_ceiling": near_ceiling(st.achieved, ceiling),
                }),
            );
        }
        None => param(p, "knee", serde_json::Value::Null),
    }
    param(
        p,
        "stopped_by",
        match tripped {
            Some((i, st)) => format!("step {} ({}): {st}", i + 1, labels[i]),
            None => "the last step".into(),
        },
    );
}

/// The merged steps of an agent run, in which every agent ran every step
/// at the same instants ([`SweepJob::every_step`]). `merged` is the
/// agents' results merged case by case (`agents::merge`, whose per-field
/// rules already sum the generators' connections, CPU, memory and calls
/// in flight and keep the highest server figures); `agents` is each
/// agent's own. What only a sweep knows is done here, per step: the
/// agents' loads and offered calls/s summed (each agent offered the
/// step's load), achieved the merged calls/s, the server's memory per
/// connection spread over every agent's added connections; then the stop
/// rules and the knee, on the merged steps.
pub fn merge_steps(merged: &mut Results, agents: &[&Results], o: &SweepJob) {
    let rule = o.rule();
    let (mut loads, mut labels) = (Vec::new(), Vec::new());
    // Each agent's connections at the end of the step before.
    let mut prev_conns = vec![0.0; agents.len()];
    for c in &mut merged.cases {
        let server_per_connection = server_rss_per_connection(agents, &c.name, &mut prev_conns);
        let shares: Vec<&crate::results::Case> = agents
            .iter()
            .filter_map(|r| r.cases.iter().find(|a| a.name == c.name))
            .collect();
        let figures = |k: &str| -> Vec<f64> {
            shares
                .iter()
                .filter_map(|a| a.extra.get(k).and_then(|v| v.as_f64()))
                .collect()
        };
        let sum = |k: &str| {
            Some(figures(k))
                .filter(|v| !v.is_empty())
                .map(|v| v.iter().sum())
        };
        let step = StepLoad {
            load: sum("load").unwrap_or(0.0),
            offered: sum("offered_per_s"),
            achieved: c.calls_per_sec,
            p99_us: c.latency_us.map(|l| l.p99),
            errors: c.errors.values().sum(),
        };
        let e = &mut c.extra;
        if let Some(first) = shares.first() {
            param(e, "step", first.extra.get("step"));
            param(e, "load_per_agent", first.extra.get("load"));
        }
        param(e, "load", step.load);
        param(e, "offered_per_s", step.offered);
        param(e, "achieved_per_s", step.achieved);
        match server_per_connection {
            Some(v) => param(e, "rss_per_connection_bytes", v),
            None => {
                e.remove("rss_per_connection_bytes");
            }
        }
        match stop_reason(&step, &rule) {
            Some(st) => param(e, "stopped_by", st.to_string()),
            None => {
                e.remove("stopped_by");
            }
        }
        loads.push(step);
        labels.push(c.name.clone());
    }
    knee_params(&mut merged.params, &loads, &labels, &rule, None);
}

/// The server's resident memory per connection of one merged step named
/// `name`: an agent on the server's host read the server's growth over the
/// connections it added itself, but every agent's added connections made
/// it, so its figure times its own added connections, over all the
/// agents' (the most of any agent that read one). `prev_conns` holds each
/// agent's connections at the end of the step before, and is moved on.
fn server_rss_per_connection(
    agents: &[&Results],
    name: &str,
    prev_conns: &mut [f64],
) -> Option<f64> {
    let (mut added_all, mut grew) = (0.0, None::<f64>);
    for (r, prev) in agents.iter().zip(prev_conns.iter_mut()) {
        let Some(a) = r.cases.iter().find(|a| a.name == name) else {
            continue;
        };
        let figure = |k: &str| a.extra.get(k).and_then(|v| v.as_f64());
        let conns = figure("connections").unwrap_or(*prev);
        let added = (conns - *prev).max(0.0);
        *prev = conns;
        added_all += added;
        if let Some(per) = figure("rss_per_connection_bytes") {
            grew = Some(grew.unwrap_or(0.0).max(per * added));
        }
    }
    grew.filter(|_| added_all > 0.0).map(|g| g / added_all)
}

/// A load as people read it: whole numbers without decimals (`500`,
/// `64000`), others with a few significant digits.
pub fn load_text(load: f64) -> String {
    if load.fract() == 0.0 {
        format!("{load:.0}")
    } else {
        num(load)
    }
}

/// A step's label: `rate 4000/s`, `C=8`, `N=1000`, with the payload of
/// echo and send.
fn step_label(o: &SweepJob, load: f64) -> String {
    let what = match (o.op, o.types.first()) {
        _ if !o.service.is_zero() => format!(
            "work {} {}",
            micros(o.service.as_secs_f64() * 1e6),
            o.service_kind.name()
        ),
        (LatencyOp::CallBack, _) => "call_back".to_string(),
        (LatencyOp::Ping, _) | (_, None) => "ping".to_string(),
        (op, Some(e)) => format!("{} {e} {}", op.name(), format_size(o.size())),
    };
    match o.mode {
        SweepMode::Open => format!("{what} rate {}/s", load_text(load)),
        SweepMode::Clients => format!("{what} C={load}"),
        SweepMode::Connections => format!("{what} N={load}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sweep of one connections step as an agent ran it: its figures.
    fn agent_step(rss: u64, per_connection: f64, in_flight: u64) -> Results {
        let mut r = Results::new("sweep", Vec::new());
        let mut c = crate::results::Case {
            name: "N=100".into(),
            calls: 1000,
            seconds: 1.0,
            calls_per_sec: 1000.0,
            ..Default::default()
        };
        let e = &mut c.extra;
        param(e, "step", 1);
        param(e, "load", 100.0);
        param(e, "offered_per_s", 1000.0);
        param(e, "connections", 100);
        param(e, "client_rss_bytes", rss);
        param(e, "client_rss_per_connection_bytes", per_connection);
        param(e, "max_in_flight", in_flight);
        r.cases.push(c);
        r
    }

    /// The one connections step of agents `a` and `b`, merged as an agent
    /// run merges it (case by case, then the sweep's own figures): its
    /// extra.
    fn merged_step(a: &Results, b: &Results) -> BTreeMap<String, serde_json::Value> {
        use crate::agents::merge::{merge_agents, Ran};
        let ran = [
            Ran {
                id: 0,
                results: a.clone(),
            },
            Ran {
                id: 1,
                results: b.clone(),
            },
        ];
        let base = Results::new("agents", Vec::new());
        let mut merged = merge_agents(base, &ran, Default::default()).unwrap();
        let job = SweepJob {
            mode: SweepMode::Connections,
            steps: Steps(vec![100.0]),
            ..SweepJob::default()
        };
        merge_steps(&mut merged, &[a, b], &job);
        merged.cases.remove(0).extra
    }

    /// The merged step carries the generators' memory: summed over the
    /// agents, and per connection the most any one paid.
    #[test]
    fn merged_steps_carry_the_generators_memory() {
        let (a, b) = (
            agent_step(30 << 20, 9000.0, 100),
            agent_step(40 << 20, 12000.0, 98),
        );
        let e = merged_step(&a, &b);
        assert_eq!(e["client_rss_bytes"], serde_json::json!(70u64 << 20));
        assert_eq!(
            e["client_rss_per_connection_bytes"],
            serde_json::json!(12000.0)
        );
        assert_eq!(e["max_in_flight"], serde_json::json!(198));
        assert_eq!(e["connections"], serde_json::json!(200));
        // The sweep's own: loads and offered rates summed, the step kept.
        assert_eq!(e["load"], serde_json::json!(200.0));
        assert_eq!(e["load_per_agent"], serde_json::json!(100.0));
        assert_eq!(e["offered_per_s"], serde_json::json!(2000.0));
        assert_eq!(e["step"], serde_json::json!(1));
    }

    /// The server's memory per connection of a merged step: the growth
    /// the one agent on its host read, over every agent's connections.
    #[test]
    fn merged_steps_spread_the_servers_growth_over_every_agents_connections() {
        let mut a = agent_step(30 << 20, 9000.0, 100);
        param(&mut a.cases[0].extra, "rss_per_connection_bytes", 20000.0);
        let b = agent_step(40 << 20, 12000.0, 98);
        let e = merged_step(&a, &b);
        // 100 connections of each agent: the server grew by 100 × 20000.
        assert_eq!(e["rss_per_connection_bytes"], serde_json::json!(10000.0));
    }

    fn step(load: f64, offered: Option<f64>, achieved: f64, p99: f64, errors: u64) -> StepLoad {
        StepLoad {
            load,
            offered,
            achieved,
            p99_us: Some(p99),
            errors,
        }
    }

    const RULE: StopRule = StopRule {
        p99_bound_us: Some(1000.0),
        min_achieved: 0.95,
    };

    #[test]
    fn steps_are_read_as_lists_and_series() {
        let s = |t: &str| t.parse::<Steps>().map(|s| s.0);
        assert_eq!(s("1000,2000,5k").unwrap(), [1000.0, 2000.0, 5000.0]);
        assert_eq!(
            s("1000:2:16000").unwrap(),
            [1000.0, 2000.0, 4000.0, 8000.0, 16000.0]
        );
        assert_eq!(s("1:10:1000").unwrap(), [1.0, 10.0, 100.0, 1000.0]);
        assert!(s("1:1:10").unwrap_err().contains("above 1"));
        assert!(s("4,2").unwrap_err().contains("increase"));
        assert!(s("0,2").unwrap_err().contains("positive"));
        assert!(s("1:1.0001:1e9").unwrap_err().contains("more than"));
        assert!(s("a:b").is_err());
    }

    #[test]
    fn each_stop_rule_trips_on_its_own_and_only_past_its_limit() {
        // Within every rule: go on.
        assert_eq!(
            stop_reason(&step(1e3, Some(1e3), 990.0, 999.0, 0), &RULE),
            None
        );
        // Exactly at the bound is within it; just above is not.
        assert_eq!(
            stop_reason(&step(1e3, Some(1e3), 1e3, 1000.0, 0), &RULE),
            None
        );
        assert_eq!(
            stop_reason(&step(1e3, Some(1e3), 1e3, 1000.5, 0), &RULE),
            Some(Stop::P99 {
                p99_us: 1000.5,
                bound_us: 1000.0
            })
        );
        // 95 % of offered achieved is enough; 94.9 % is not.
        assert_eq!(
            stop_reason(&step(1e3, Some(1e3), 950.0, 10.0, 0), &RULE),
            None
        );
        assert_eq!(
            stop_reason(&step(1e3, Some(1e3), 949.0, 10.0, 0), &RULE),
            Some(Stop::Achieved {
                achieved: 949.0,
                offered: 1e3
            })
        );
        // A closed loop offers no rate: only p99 and errors stop it.
        assert_eq!(stop_reason(&step(8.0, None, 1.0, 10.0, 0), &RULE), None);
        // Errors come first, whatever else.
        assert_eq!(
            stop_reason(&step(1e3, Some(1e3), 1.0, 1e6, 3), &RULE),
            Some(Stop::Errors(3))
        );
        let mut none = step(1e3, Some(1e3), 0.0, 0.0, 0);
        none.p99_us = None;
        assert_eq!(stop_reason(&none, &RULE), Some(Stop::NoCalls));
        // Without a bound, any p99 passes.
        let free = StopRule {
            p99_bound_us: None,
            ..RULE
        };
        assert_eq!(stop_reason(&step(1e3, Some(1e3), 1e3, 1e9, 0), &free), None);
    }

    #[test]
    fn the_knee_is_the_highest_load_that_tripped_no_rule() {
        let steps = [
            step(1000.0, Some(1000.0), 1000.0, 100.0, 0),
            step(2000.0, Some(2000.0), 2000.0, 400.0, 0),
            step(4000.0, Some(4000.0), 3990.0, 900.0, 0),
            step(8000.0, Some(8000.0), 6000.0, 5000.0, 0),
        ];
        assert_eq!(knee(&steps, &RULE), Some(2));
        // A tighter bound moves it down; one no step meets leaves none.
        let tight = StopRule {
            p99_bound_us: Some(500.0),
            ..RULE
        };
        assert_eq!(knee(&steps, &tight), Some(1));
        let none = StopRule {
            p99_bound_us: Some(50.0),
            ..RULE
        };
        assert_eq!(knee(&steps, &none), None);
        // A step with errors is never the knee, even within the bound.
        let mut e = steps;
        e[2].errors = 1;
        assert_eq!(knee(&e, &RULE), Some(1));
        // Nor one that fell short of its offered rate.
        let mut short = steps;
        short[2].achieved = 3000.0;
        assert_eq!(knee(&short, &RULE), Some(1));
        assert_eq!(knee(&[], &RULE), None);
    }

    /// The ceiling pass is the same sweep against our embedded server,
    /// with no p99 bound and no service time, continued past its top step.
    #[test]
    fn the_ceiling_pass_is_the_same_sweep_against_a_server_that_does_no_work() {
        let o = SweepJob {
            target: crate::target::TargetOpts {
                target: Some("corbaloc:iiop:127.0.0.1:2809/Bench".into()),
                server_model: ServerModel::Threads,
                server_threads: Some(7),
                ..Default::default()
            },
            steps: Steps(vec![1000.0, 2000.0, 4000.0]),
            p99_bound: Some(Duration::from_millis(1)),
            service: Duration::from_micros(100),
            ceiling: true,
            ..SweepJob::default()
        };
        let j = ceiling_job(&o, 1024);
        assert_eq!(j.target.target, None);
        assert_eq!(j.target.server_model, ServerModel::Reactor);
        assert_eq!(j.target.server_threads, None);
        assert_eq!(
            (j.p99_bound, j.service, j.ceiling),
            (None, Duration::ZERO, false)
        );
        assert_eq!(
            (j.mode, j.min_achieved, j.step_duration),
            (o.mode, o.min_achieved, o.step_duration)
        );
        // The sweep's rates, then doubling: the pass stops where the
        // client cannot keep the rate.
        assert_eq!(&j.steps.0[..3], &o.steps.0[..]);
        assert_eq!(j.steps.0.len(), 3 + CEILING_EXTRA_STEPS);
        assert_eq!(j.steps.0[3], 8000.0);
        assert_eq!(*j.steps.0.last().unwrap(), 4000.0 * 256.0);
        // A clients sweep doubles its clients while the descriptors
        // (two per connection with the server in this process) allow.
        let c = SweepJob {
            mode: SweepMode::Clients,
            steps: Steps(vec![1.0, 10.0, 100.0]),
            ..SweepJob::default()
        };
        assert_eq!(
            ceiling_job(&c, 1024).steps.0,
            vec![1.0, 10.0, 100.0, 200.0, 400.0]
        );
        assert_eq!(
            ceiling_job(&c, 1 << 20).steps.0,
            vec![1.0, 10.0, 100.0, 200.0, 400.0, 800.0, 1600.0, 3200.0]
        );
        // A connections sweep's ceiling is an open loop through its top
        // step's connections (as many as fit), from its rate up.
        let n = SweepJob {
            mode: SweepMode::Connections,
            steps: Steps(vec![10.0, 1000.0, 10000.0]),
            rate: 2000.0,
            ..SweepJob::default()
        };
        let j = ceiling_job(&n, 20000);
        assert_eq!(
            (j.mode, j.spread, j.rate),
            (SweepMode::Open, 9968, SweepJob::default().rate)
        );
        assert_eq!(j.steps.0[..3], [2000.0, 4000.0, 8000.0]);
        assert_eq!(j.steps.0.len(), 1 + CEILING_EXTRA_STEPS);
        assert_eq!(ceiling_job(&n, 1 << 20).spread, 10000);
    }

    #[test]
    fn steps_above_half_the_ceiling_are_marked() {
        assert!(!near_ceiling(5000.0, Some(10000.0)));
        assert!(near_ceiling(5001.0, Some(10000.0)));
        assert!(!near_ceiling(1e9, None));
    }

    #[test]
    fn jobs_that_contradict_themselves_are_refused() {
        let refused = |f: &dyn Fn(&mut SweepJob)| {
            let mut j = SweepJob::default();
            f(&mut j);
            j.validate_fields().unwrap_err().to_string()
        };
        SweepJob::default().validate_fields().unwrap();
        assert!(refused(&|j| {
            j.mode = SweepMode::Clients;
            j.steps = Steps(vec![1.0, 2.5]);
        })
        .contains("whole numbers"));
        assert!(refused(&|j| j.rate = 5.0).contains("connections sweep"));
        assert!(refused(&|j| {
            j.mode = SweepMode::Clients;
            j.spread = 4;
            j.steps = Steps(vec![1.0, 2.0]);
        })
        .contains("open sweep"));
        assert!(refused(&|j| j.sizes = Sizes(vec![64])).contains("ping sends none"));
        assert!(refused(&|j| j.placement.runs = Some(3)).contains("runs once"));
        assert!(refused(&|j| j.min_achieved = 1.5).contains("share"));
        assert!(refused(&|j| j.service_kind = ServiceKind::Sleep).contains("which is 0"));
        assert!(refused(&|j| {
            j.service = Duration::from_millis(1);
            j.op = LatencyOp::Echo;
        })
        .contains("one or the other"));
    }
}
