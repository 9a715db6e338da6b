//! The workload engine behind `bench closed`, `params`, `dispatch`,
//! `packing` and `balance` (seed 001, E1): a closed system of C client
//! tasks, each looping {invoke; think Z}, measured in batches.
//!
//! Per cycle the engine records the response time R (call start → reply)
//! and the delay Z actually spent before the next call (the think time
//! plus the client's own loop overhead), so the interactive response-time
//! law / Little's law `C = X·(R+Z)` is checked on what really happened.
//! Time is cut into batches; the batches give 95 % confidence intervals
//! of R, X and Z (ratio estimators over batch sums, so each interval is
//! centred on the overall mean), and `--until-ci` stops when the interval of
//! mean R is narrow enough (or a time cap is hit, which is said).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

use iiop_bench_idl::client::BenchError;
use serde_json::json;

use serde::{Deserialize, Serialize};

use super::stats::{ratio_ci95, Ci, Dist, Rng};
use super::{count_error, error_kind};
use crate::error::{check, Error, JobError};
use crate::hist::Latency;
use crate::results::{param, Case, CaseParams};

/// A call a client makes once per cycle; gets the client's seeded RNG.
pub type CallFn = Box<dyn FnMut(&mut Rng) -> Pin<Box<dyn Future<Output = Result<(), BenchError>>>>>;

/// One client of the closed system.
pub struct ClientSpec {
    /// Mean think time after each reply.
    pub think: Duration,
    pub think_dist: Dist,
    /// Class label (e.g. `busy`), for per-class figures.
    pub class: String,
    pub call: CallFn,
}

impl std::fmt::Debug for ClientSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSpec")
            .field("think", &self.think)
            .field("think_dist", &self.think_dist)
            .field("class", &self.class)
            .finish_non_exhaustive()
    }
}

/// When to stop measuring.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// After this long.
    Duration(Duration),
    /// When the 95 % CI half-width of mean R is within `relative` of the
    /// mean (with at least `min_batches`), or after `cap`.
    UntilCi {
        relative: f64,
        cap: Duration,
        min_batches: usize,
    },
}

/// How the engine runs.
#[derive(Debug, Clone)]
pub struct EngineSpec {
    pub stop: Stop,
    /// Batch length for batch means.
    pub batch: Duration,
    /// Unrecorded time first.
    pub warmup: Duration,
    pub seed: u64,
    /// End the run at the first failed call.
    pub stop_on_error: bool,
    /// An agent run's start gate ([`RunContext::gate`](crate::run_context::RunContext::gate)).
    pub gate: Option<crate::gate::Gate>,
}

/// What ended a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Duration,
    CiReached,
    TimeCap,
    Error,
    Interrupted,
}

impl StopReason {
    /// Stable name for the JSON.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Duration => "duration",
            StopReason::CiReached => "ci-reached",
            StopReason::TimeCap => "time-cap",
            StopReason::Error => "error",
            StopReason::Interrupted => "interrupted",
        }
    }
}

/// Sums over one batch (or one client).
#[derive(Debug, Clone, Copy, Default)]
pub struct Sums {
    pub calls: u64,
    pub r_ns: u128,
    pub z_ns: u128,
}

/// One client's figures.
#[derive(Debug, Clone, Default)]
pub struct ClientResult {
    pub class: String,
    pub sums: Sums,
}

/// What a run measured.
#[derive(Debug, Default)]
pub struct EngineResult {
    pub lat: Latency,
    pub clients: Vec<ClientResult>,
    /// Closed batches: (sums, seconds).
    pub batches: Vec<(Sums, f64)>,
    /// Measured window (after warm-up, until the stop decision).
    pub seconds: f64,
    pub stop: Option<StopReason>,
    pub errors: BTreeMap<String, u64>,
    pub first_error: Option<String>,
}

#[derive(Default)]
struct Shared {
    lat: Latency,
    batch: Sums,
    errors: BTreeMap<String, u64>,
    first_error: Option<String>,
}

/// Run the closed system. Must be called inside a `LocalSet`.
pub async fn run(spec: EngineSpec, clients: Vec<ClientSpec>) -> EngineResult {
    let n = clients.len();
    let shared = Rc::new(RefCell::new(Shared::default()));
    let stop = Rc::new(Cell::new(false));
    // In an agent run, clients record only once the start gate opens.
    let recording = Rc::new(Cell::new(spec.warmup.is_zero() && spec.gate.is_none()));
    let failed = Rc::new(Cell::new(false));
    // Ctrl-C: calls in flight (and think times) end at once instead of at
    // their timeout.
    let cancel = Rc::new(tokio::sync::Notify::new());
    let mut tasks = Vec::with_capacity(n);
    for (i, mut c) in clients.into_iter().enumerate() {
        let (shared, stop, recording, failed, cancel) = (
            shared.clone(),
            stop.clone(),
            recording.clone(),
            failed.clone(),
            cancel.clone(),
        );
        let stop_on_error = spec.stop_on_error;
        let seed = spec.seed;
        tasks.push(tokio::task::spawn_local(async move {
            let mut rng = Rng::new(seed, i as u64 + 1);
            let mut mine = ClientResult {
                class: c.class.clone(),
                sums: Sums::default(),
            };
            let mut last_reply: Option<Instant> = None;
            while !stop.get() {
                let t0 = Instant::now();
                let fut = (c.call)(&mut rng);
                let res = tokio::select! {
                    biased;
                    r = fut => r,
                    _ = cancel.notified() => break,
                };
                let t1 = Instant::now();
                let on = recording.get() && !stop.get();
                match res {
                    Ok(()) => {
                        if on {
                            let r = (t1 - t0).as_nanos();
                            let z = last_reply.map(|l| (t0 - l).as_nanos()).unwrap_or(0);
                            mine.sums.calls += 1;
                            mine.sums.r_ns += r;
                            mine.sums.z_ns += z;
                            let mut s = shared.borrow_mut();
                            s.lat.record_ns(r as u64);
                            s.batch.calls += 1;
                            s.batch.r_ns += r;
                            s.batch.z_ns += z;
                        }
                    }
                    Err(e) => {
                        let mut s = shared.borrow_mut();
                        count_error(&mut s.errors, error_kind(&e));
                        if s.first_error.is_none() {
                            s.first_error = Some(format!("client {i}: {e}"));
                        }
                        if stop_on_error {
                            failed.set(true);
                            stop.set(true);
                            break;
                        }
                    }
                }
                // Z of the next cycle counts from here only if we record
                // now (the first recorded cycle has no Z before it).
                last_reply = on.then_some(t1);
                if !c.think.is_zero() && !stop.get() {
                    let secs = rng.draw(c.think.as_secs_f64(), c.think_dist);
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs_f64(secs.min(3600.0))) => {}
                        _ = cancel.notified() => break,
                    }
                }
            }
            mine
        }));
    }
    // The controller: warm-up, then batches until the stop rule fires.
    if !spec.warmup.is_zero() {
        sleep_or_stop(spec.warmup, &stop).await;
    }
    // In an agent run, every agent starts measuring at the same instant.
    crate::gate::case_start(spec.gate.as_ref()).await;
    if !recording.get() {
        shared.borrow_mut().batch = Sums::default();
        recording.set(true);
    }
    let start = Instant::now();
    let mut out = EngineResult::default();
    let mut batch_start = start;
    let reason = loop {
        let elapsed = start.elapsed();
        let mut len = spec.batch;
        let cap = match spec.stop {
            Stop::Duration(d) => d,
            Stop::UntilCi { cap, .. } => cap,
        };
        if elapsed + len > cap {
            len = cap.saturating_sub(elapsed);
        }
        sleep_or_stop(len, &stop).await;
        let now = Instant::now();
        let secs = (now - batch_start).as_secs_f64();
        let b = std::mem::take(&mut shared.borrow_mut().batch);
        batch_start = now;
        if failed.get() {
            break StopReason::Error;
        }
        if crate::interrupt::requested() {
            break StopReason::Interrupted;
        }
        if secs > 0.0 {
            out.batches.push((b, secs));
        }
        if let Stop::UntilCi {
            relative,
            min_batches,
            ..
        } = spec.stop
        {
            if out.batches.len() >= min_batches.max(2) {
                if let Some(ci) = r_ci(&out.batches) {
                    if ci.relative <= relative {
                        break StopReason::CiReached;
                    }
                }
            }
        }
        if start.elapsed() >= cap {
            break match spec.stop {
                Stop::Duration(_) => StopReason::Duration,
                Stop::UntilCi { .. } => StopReason::TimeCap,
            };
        }
    };
    out.seconds = start.elapsed().as_secs_f64();
    stop.set(true);
    if reason == StopReason::Interrupted {
        cancel.notify_waiters();
    }
    for t in tasks {
        if let Ok(c) = t.await {
            out.clients.push(c);
        }
    }
    let s = std::mem::take(&mut *shared.borrow_mut());
    out.lat = s.lat;
    out.errors = s.errors;
    out.first_error = s.first_error;
    out.stop = Some(reason);
    out
}

async fn sleep_or_stop(d: Duration, stop: &Cell<bool>) {
    let end = tokio::time::Instant::now() + d;
    while tokio::time::Instant::now() < end && !stop.get() && !crate::interrupt::requested() {
        let step = (end - tokio::time::Instant::now()).min(Duration::from_millis(20));
        tokio::time::sleep(step).await;
    }
}

/// 95 % CI of mean R (µs): total response time over calls, per batch.
fn r_ci(batches: &[(Sums, f64)]) -> Option<Ci> {
    let pairs: Vec<(f64, f64)> = batches
        .iter()
        .map(|(s, _)| (s.r_ns as f64 / 1e3, s.calls as f64))
        .collect();
    ratio_ci95(&pairs)
}

impl EngineResult {
    /// Completed calls in the measured window.
    pub fn calls(&self) -> u64 {
        self.clients.iter().map(|c| c.sums.calls).sum()
    }

    /// System throughput X (calls/s).
    pub fn x(&self) -> f64 {
        self.calls() as f64 / self.seconds.max(1e-9)
    }

    /// Mean R (µs).
    pub fn r_mean_us(&self) -> f64 {
        let c = self.calls();
        let r: u128 = self.clients.iter().map(|c| c.sums.r_ns).sum();
        if c == 0 {
            0.0
        } else {
            r as f64 / c as f64 / 1e3
        }
    }

    /// Mean Z actually spent between a reply and the next call (µs).
    pub fn z_mean_us(&self) -> f64 {
        let c = self.calls();
        let z: u128 = self.clients.iter().map(|c| c.sums.z_ns).sum();
        if c == 0 {
            0.0
        } else {
            z as f64 / c as f64 / 1e3
        }
    }

    /// 95 % CI of mean R (µs) over the batches (ratio estimator).
    pub fn r_ci(&self) -> Option<Ci> {
        r_ci(&self.batches)
    }

    /// 95 % CI of X (calls/s): calls over seconds, per batch.
    pub fn x_ci(&self) -> Option<Ci> {
        let pairs: Vec<(f64, f64)> = self
            .batches
            .iter()
            .map(|(s, secs)| (s.calls as f64, *secs))
            .collect();
        ratio_ci95(&pairs)
    }

    /// 95 % CI of mean Z (µs): total delay over calls, per batch.
    pub fn z_ci(&self) -> Option<Ci> {
        let pairs: Vec<(f64, f64)> = self
            .batches
            .iter()
            .map(|(s, _)| (s.z_ns as f64 / 1e3, s.calls as f64))
            .collect();
        ratio_ci95(&pairs)
    }

    /// Throughput of the clients of `class`.
    pub fn class_x(&self, class: &str) -> f64 {
        let c: u64 = self
            .clients
            .iter()
            .filter(|c| c.class == class)
            .map(|c| c.sums.calls)
            .sum();
        c as f64 / self.seconds.max(1e-9)
    }

    /// Little's law: `(C, X·(R+Z), relative error)`.
    pub fn littles_law(&self) -> (f64, f64, f64) {
        let c = self.clients.len() as f64;
        let n = self.x() * (self.r_mean_us() + self.z_mean_us()) / 1e6;
        (c, n, if c > 0.0 { (c - n).abs() / c } else { 0.0 })
    }

    /// The results-schema case for this run: latency, throughput, and in
    /// `extra` Little's law, the CIs, per-client X and the stop reason.
    pub fn case(&self, name: &str, params: CaseParams) -> Case {
        let calls = self.calls();
        let (c, n, rel) = self.littles_law();
        let mut extra = BTreeMap::new();
        param(
            &mut extra,
            "littles_law",
            json!({
                "clients": c,
                "x_calls_per_sec": self.x(),
                "r_mean_us": self.r_mean_us(),
                "z_mean_us": self.z_mean_us(),
                "x_times_r_plus_z": n,
                "relative_error": rel,
            }),
        );
        param(&mut extra, "r_mean_us", self.r_mean_us());
        param(&mut extra, "r_ci95", self.r_ci());
        param(&mut extra, "x_ci95", self.x_ci());
        param(&mut extra, "z_ci95", self.z_ci());
        param(
            &mut extra,
            "per_client_calls_per_sec",
            self.clients
                .iter()
                .map(|c| c.sums.calls as f64 / self.seconds.max(1e-9))
                .collect::<Vec<_>>(),
        );
        param(&mut extra, "batches", self.batches.len());
        param(
            &mut extra,
            "stopped_by",
            self.stop.map(StopReason::name).unwrap_or("unknown"),
        );
        Case {
            name: name.to_string(),
            params,
            calls,
            bytes: 0,
            seconds: self.seconds,
            calls_per_sec: self.x(),
            latency_us: (!self.lat.is_empty()).then(|| self.lat.summary()),
            histogram: (!self.lat.is_empty()).then(|| self.lat.to_base64()),
            errors: self.errors.clone(),
            extra,
            ..Default::default()
        }
    }

    /// The error that should end the command, if the run failed.
    pub fn failure(&self, what: &str) -> Option<Error> {
        match self.stop {
            Some(StopReason::Error) => Some(Error::target(format!(
                "{what}: {}",
                self.first_error.as_deref().unwrap_or("a call failed")
            ))),
            Some(StopReason::Interrupted) => {
                Some(Error::interrupted(format!("{what}: interrupted")))
            }
            _ => None,
        }
    }
}

/// Parse `5%` into a relative half-width (0.05).
pub fn parse_relative(s: &str) -> Result<f64, JobError> {
    let v = crate::units::parse_percent(s).map_err(JobError::new)? / 100.0;
    if !(v > 0.0 && v < 1.0) {
        return Err(JobError::new(format!(
            "{s:?}: a relative half-width must be in (0 %, 100 %)"
        )));
    }
    Ok(v)
}

/// The run rule every workload job shares: how long each case runs or
/// the CI it runs to, its batches, warm-up and seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunRule {
    /// Measure each case for this long (ignored with `until_ci`).
    #[serde(with = "crate::units::duration")]
    pub duration: Duration,
    /// Run each case in batches until the 95 % CI of mean response time
    /// is within ±this fraction of the mean (0.05 for 5 %), or
    /// `max_duration`. Written `"5%"`.
    #[serde(with = "relative", skip_serializing_if = "Option::is_none")]
    pub until_ci: Option<f64>,
    /// Time cap per case with `until_ci`.
    #[serde(with = "crate::units::duration")]
    pub max_duration: Duration,
    /// Batch length for the batch means.
    #[serde(with = "crate::units::duration")]
    pub batch: Duration,
    /// Fewest batches before the CI rule may stop a run.
    pub min_batches: usize,
    /// Unrecorded time at the start of each case (connections warm).
    #[serde(with = "crate::units::duration")]
    pub warmup_duration: Duration,
    /// Seed of every random draw (think and service times).
    pub seed: u64,
}

/// The serde form of `until_ci`: `"5%"`, or a fraction (0.05).
mod relative {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(&format!("{}%", v * 100.0)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Fraction(f64),
            Text(String),
        }
        Option::<Form>::deserialize(d)?
            .map(|f| match f {
                Form::Fraction(x) if x > 0.0 && x < 1.0 => Ok(x),
                Form::Fraction(x) => Err(crate::error::JobError::new(format!(
                    "{x}: a relative half-width is a fraction in (0, 1), or a percentage (\"5%\")"
                ))),
                Form::Text(t) => super::parse_relative(&t),
            })
            .transpose()
            .map_err(serde::de::Error::custom)
    }
}

impl Default for RunRule {
    /// 2 s per case in 200 ms batches after 100 ms of warm-up, seed 1.
    fn default() -> Self {
        RunRule {
            duration: Duration::from_secs(2),
            until_ci: None,
            max_duration: Duration::from_secs(60),
            batch: Duration::from_millis(200),
            min_batches: 10,
            warmup_duration: Duration::from_millis(100),
            seed: 1,
        }
    }
}

impl RunRule {
    /// Its durations and counts make sense.
    pub fn validate(&self) -> Result<(), JobError> {
        check(!self.batch.is_zero(), || "`batch` must be positive".into())?;
        check(self.min_batches >= 1, || {
            "`min_batches` must be at least 1".into()
        })?;
        match self.until_ci {
            Some(x) => {
                check(x > 0.0 && x < 1.0, || {
                    "`until_ci` must be in (0 %, 100 %)".into()
                })?;
                check(!self.max_duration.is_zero(), || {
                    "`max_duration` must be more than 0".into()
                })
            }
            None => check(!self.duration.is_zero(), || {
                "`duration` must be more than 0".into()
            }),
        }
    }

    /// The engine spec this rule describes, with an agent run's start
    /// gate when there is one.
    pub fn spec(&self, gate: Option<&crate::gate::Gate>) -> EngineSpec {
        EngineSpec {
            stop: match self.until_ci {
                Some(relative) => Stop::UntilCi {
                    relative,
                    cap: self.max_duration,
                    min_batches: self.min_batches,
                },
                None => Stop::Duration(self.duration),
            },
            batch: self.batch,
            warmup: self.warmup_duration,
            seed: self.seed,
            stop_on_error: true,
            gate: gate.cloned(),
        }
    }

    /// Record these options in the results' params.
    pub fn record(&self, p: &mut BTreeMap<String, serde_json::Value>) {
        param(p, "duration_s", self.duration.as_secs_f64());
        param(p, "until_ci", self.until_ci);
        param(p, "max_duration_s", self.max_duration.as_secs_f64());
        param(p, "batch_s", self.batch.as_secs_f64());
        param(p, "min_batches", self.min_batches);
        param(p, "warmup_s", self.warmup_duration.as_secs_f64());
        param(p, "seed", self.seed);
    }
}

/// Case params with `extra` entries.
pub fn case_params(ty: &str, size: u64, mode: &str, extra: serde_json::Value) -> CaseParams {
    let extra = match extra {
        serde_json::Value::Object(m) => m.into_iter().collect(),
        _ => BTreeMap::new(),
    };
    CaseParams {
        ty: ty.into(),
        size,
        mode: mode.into(),
        extra,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clients whose "call" only records the draws it was given.
    fn run_recording(seed: u64) -> Vec<Vec<u64>> {
        let seen: Vec<Rc<RefCell<Vec<u64>>>> =
            (0..2).map(|_| Rc::new(RefCell::new(Vec::new()))).collect();
        let clients = seen
            .iter()
            .map(|s| {
                let s = s.clone();
                ClientSpec {
                    think: Duration::from_micros(200),
                    think_dist: Dist::Exp,
                    class: "client".into(),
                    call: Box::new(move |rng: &mut Rng| {
                        s.borrow_mut().push(rng.next_u64());
                        Box::pin(async { Ok(()) })
                    }),
                }
            })
            .collect();
        let spec = EngineSpec {
            stop: Stop::Duration(Duration::from_millis(60)),
            batch: Duration::from_millis(20),
            warmup: Duration::ZERO,
            seed,
            stop_on_error: true,
            gate: None,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let res = rt.block_on(tokio::task::LocalSet::new().run_until(run(spec, clients)));
        assert_eq!(res.stop, Some(StopReason::Duration));
        // Three 20 ms batches on an idle machine; a starved thread (a
        // loaded machine) may close fewer. What this test checks is the
        // draws, not the clock.
        assert!(
            (1..=3).contains(&res.batches.len()),
            "{:?}",
            res.batches.len()
        );
        assert_eq!(res.clients.len(), 2);
        seen.iter().map(|s| s.borrow()[..5].to_vec()).collect()
    }

    #[test]
    fn the_seed_repeats_every_clients_draws() {
        let a = run_recording(11);
        let b = run_recording(11);
        let c = run_recording(12);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a[0], a[1], "clients draw from separate streams");
    }

    #[test]
    fn relative_widths_parse() {
        assert_eq!(parse_relative("5%"), Ok(0.05));
        assert!(parse_relative("0.02").is_err(), "a bare fraction");
        assert!(parse_relative("0%").is_err());
        assert!(parse_relative("150%").is_err());
        assert!(parse_relative("x").is_err());
    }
}
