//! `iiopbench bench latency`: request/reply latency (seed 003's ping-pong,
//! E3.1; seed 002's null-method round trips, E2.1).
//!
//! Closed loop: `--connections C` × `--in-flight K` tasks, each issuing its
//! next call when the previous one returns. Open loop (`--rate R`): calls
//! are scheduled at fixed intended times and each latency is measured from
//! its intended send time, so a stalled server shows up as latency instead
//! of silently lowering the offered load (coordinated omission, as wrk2 and
//! oha correct for). Histograms are HDR, merged losslessly across tasks.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use iiop_bench_idl::bench::elements::{CallMode, Elem};
use iiop_bench_idl::bench::types::{Outgoing, Payload};
use iiop_bench_idl::client::{BenchClient, BenchError};
use serde::{Deserialize, Serialize};

use super::closed::ServiceKind;
use super::loops::{self, Invoke, Loop, Tally};
use super::session::{self, Session, Shape};
use crate::dynamic::IdlOp;
use crate::error::{check, ensure, fail, Error, JobError, Result};
use crate::metrics::Live;
use crate::options::{OnError, PlacementOpts, Sizes, Sockets};
use crate::progress::CaseProgress;
use crate::results::{param, Case, CaseParams, Fit, Results};
use crate::run_context::RunContext;
use crate::sysinfo::CpuTime;
use crate::target::TargetOpts;
use crate::units::format_size;

/// Which bench.idl operation a latency job calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LatencyOp {
    /// `ping()`: no arguments, empty reply.
    #[default]
    Ping,
    /// `echo_T(s)`: the payload there and back.
    Echo,
    /// `send_T(s)`: the payload there, an empty reply back.
    Send,
    /// `call_back(cb, n)` with `cb` our Callback object on the calling
    /// connection: the server calls `cb->notify(n)` back over it before
    /// it answers (bidirectional GIOP: needs `target.bidir`).
    #[serde(rename = "call_back")]
    CallBack,
}

impl LatencyOp {
    /// `ping`, `echo`, `send`, `call_back`.
    pub fn name(self) -> &'static str {
        match self {
            LatencyOp::Ping => "ping",
            LatencyOp::Echo => "echo",
            LatencyOp::Send => "send",
            LatencyOp::CallBack => "call_back",
        }
    }
}

/// A `bench latency` job (`Default`: the command line's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LatencyJob {
    pub target: TargetOpts,
    /// The bench.idl operation (ignored with `idl`).
    pub op: LatencyOp,
    /// Element types for echo/send.
    #[serde(with = "super::elems")]
    pub types: Vec<Elem>,
    /// Payload bytes per call for echo/send.
    pub sizes: Sizes,
    /// Measured calls per point.
    pub count: u64,
    /// Measure for this long per point instead of `count` calls.
    #[serde(
        with = "crate::units::opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub duration: Option<Duration>,
    /// A point that has not made its `count` calls by this time ends with
    /// what it measured (marked, and warned about), and the run goes on.
    #[serde(
        with = "crate::units::opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_duration: Option<Duration>,
    /// Unmeasured calls first (per point).
    pub warmup: u64,
    /// Connections (closed loop: each with `in_flight` callers).
    pub connections: usize,
    /// Calls in flight per connection (closed loop).
    pub in_flight: usize,
    /// Open loop at this many calls per second (latency from the intended
    /// send time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Open loop: at most this many calls outstanding; a call due beyond
    /// them is counted as an `overload` error instead of sent.
    pub max_outstanding: usize,
    /// Call `work` with this service time instead of `op` (0: `op`): a
    /// server that holds each call this long keeps calls in flight.
    #[serde(with = "crate::units::duration")]
    pub service: Duration,
    /// How the server spends `service`.
    pub service_kind: ServiceKind,
    /// Also measure raw-TCP ping-pong at the same sizes (ratios).
    pub baseline: bool,
    /// Raw-TCP server (`HOST:PORT`) for `baseline` with a remote target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_target: Option<String>,
    /// With `baseline`, one connection and one call at a time in a closed
    /// loop: each point is measured as this many slices, taken in turn
    /// with its raw baselines (see [`sliced_point`]); 1 measures the
    /// points first and the baselines after them, as other shapes are.
    pub slices: u32,
    /// Stop at the first failed call, or count failures and go on.
    pub on_error: OnError,
    pub socket: Sockets,
    pub placement: PlacementOpts,
    /// Call this operation of an IDL file instead of bench.idl's `op`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idl: Option<IdlOp>,
}

impl Default for LatencyJob {
    fn default() -> Self {
        LatencyJob {
            target: TargetOpts::default(),
            op: LatencyOp::Ping,
            types: vec![Elem::Octet],
            sizes: Sizes(vec![0]),
            count: 10_000,
            duration: None,
            max_duration: None,
            warmup: 1_000,
            connections: 1,
            in_flight: 1,
            rate: None,
            max_outstanding: loops::DEFAULT_MAX_OUTSTANDING,
            service: Duration::ZERO,
            service_kind: ServiceKind::Sleep,
            baseline: false,
            baseline_target: None,
            slices: 16,
            on_error: OnError::Stop,
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
            idl: None,
        }
    }
}

impl LatencyJob {
    /// How each point is measured.
    pub fn point_loop(&self) -> Loop {
        Loop {
            count: self.count,
            duration: self.duration,
            max_duration: self.max_duration,
            warmup: self.warmup,
            connections: self.connections,
            in_flight: self.in_flight,
            rate: self.rate,
            max_outstanding: self.max_outstanding,
            on_error: self.on_error,
        }
    }

    /// Everything that can be checked before the job starts: counts and
    /// durations, options the operation ignores, the target.
    pub fn validate(&self) -> Result<(), JobError> {
        self.validate_fields()?;
        self.target.validate(self.point_loop().single_caller())
    }

    /// [`validate`](Self::validate) without reading the target's file.
    pub fn validate_fields(&self) -> Result<(), JobError> {
        let d = LatencyJob::default();
        check(self.connections >= 1 && self.in_flight >= 1, || {
            "`connections` and `in_flight` must be at least 1".into()
        })?;
        if let Some(rate) = self.rate {
            check(rate > 0.0 && rate.is_finite(), || {
                "`rate` must be positive".into()
            })?;
            check(self.in_flight == 1, || {
                "`in_flight` is the closed loop's; with `rate` (the open loop) calls are in flight as the rate makes them".into()
            })?;
        }
        check(self.max_outstanding >= 1, || {
            "`max_outstanding` must be at least 1".into()
        })?;
        check(
            self.max_outstanding == d.max_outstanding || self.rate.is_some(),
            || "`max_outstanding` caps the open loop's calls, which needs `rate`".into(),
        )?;
        check(
            self.service_kind == d.service_kind || !self.service.is_zero(),
            || "`service_kind` is how the server spends `service`, which is 0".into(),
        )?;
        check(
            self.service.is_zero() || (self.op == d.op && self.idl.is_none() && !self.baseline),
            || {
                "`service` calls bench.idl's `work` instead of `op` (or `idl`), without `baseline`: give one or the other".into()
            },
        )?;
        match self.duration {
            Some(t) => check(!t.is_zero(), || "`duration` must be more than 0".into())?,
            None => check(self.count >= 1, || "`count` must be at least 1".into())?,
        }
        check(self.slices >= 1, || "`slices` must be at least 1".into())?;
        if let Some(cap) = self.max_duration {
            check(!cap.is_zero(), || {
                "`max_duration` must be more than 0".into()
            })?;
        }
        check(self.baseline_target.is_none() || self.baseline, || {
            "`baseline_target` is the server of `baseline`, which is off".into()
        })?;
        self.sizes.validate("sizes")?;
        match (&self.idl, self.op) {
            (Some(idl), _) => {
                check(
                    self.op == d.op && self.types == d.types && self.sizes == d.sizes,
                    || {
                        "`op`, `types` and `sizes` choose bench.idl's calls: with `idl` the operation is `idl.op` and its arguments `idl.args` and `idl.gen`".into()
                    },
                )?;
                idl.validate()?;
            }
            (None, LatencyOp::Ping) => {
                check(self.types == d.types && self.sizes == d.sizes, || {
                    "`types` and `sizes` are the payload of echo and send: ping sends none".into()
                })?
            }
            (None, LatencyOp::CallBack) => check_call_back(self, &self.target)?,
            (None, _) => check(!self.types.is_empty(), || "`types` is empty".into())?,
        }
        self.socket.validate()?;
        self.placement.validate()
    }
}

session::bench_job!(LatencyJob, "latency", LatencyJob::validate);

/// `call_back` needs callbacks offered (`bidir`): without them the
/// server answers NO_PERMISSION to every call. It sends no payload.
pub(crate) fn check_call_back(j: &LatencyJob, t: &TargetOpts) -> Result<(), JobError> {
    let d = LatencyJob::default();
    check(t.bidir, || {
        "`op` call_back needs `bidir`: without a BI_DIR_IIOP offer the server cannot call back and answers NO_PERMISSION".into()
    })?;
    check(j.types == d.types && j.sizes == d.sizes, || {
        "`types` and `sizes` are the payload of echo and send: call_back sends none".into()
    })
}

/// What one caller sends (here and in a sweep's steps).
#[derive(Debug, Clone)]
pub(crate) enum Call {
    Ping,
    Payload(CallMode, Arc<Outgoing>),
    /// `work(us)`, fixed, spent as the kind says (a sweep's `service`).
    Work(f64, iiop_bench_idl::bench::work::Kind),
    /// `call_back(cb, n)`: the server's `notify` over our connection
    /// (bidirectional GIOP).
    Bidir,
}

/// The `n` every benchmarked `call_back` passes.
const CALL_BACK_N: i32 = 41;

async fn call(c: &BenchClient, what: &Call) -> Result<(), BenchError> {
    match what {
        Call::Ping => c.ping().await,
        Call::Bidir => c.call_back(CALL_BACK_N).await.map(drop),
        Call::Work(us, kind) => c
            .work(*us, iiop_bench_idl::bench::work::Dist::Fixed, *kind)
            .await
            .map(drop),
        Call::Payload(mode, o) => match c.outgoing(*mode, o).await? {
            Some(back) if &back != o.payload() => Err(BenchError::Reference(format!(
                "echo_{} returned a different value",
                o.payload().elem()
            ))),
            _ => Ok(()),
        },
    }
}

/// A connection and what to send on it.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) c: BenchClient,
    pub(crate) what: Call,
}

impl Invoke for Caller {
    async fn invoke(&self) -> Result<(), BenchError> {
        call(&self.c, &self.what).await
    }

    fn close(&self) {
        self.c.close();
    }
}

/// Run a latency job (its `idl` operation when it has one).
pub fn run(o: &LatencyJob, ctx: &RunContext) -> (Results, Option<Error>) {
    if let Some(idl) = &o.idl {
        return crate::dynamic::bench::latency(o, idl, o.point_loop(), ctx);
    }
    let lo = o.point_loop();
    // Many connections: our embedded server serves them all, and the
    // open-file limit is raised for them (both ends, when it is ours).
    let mut job = o.clone();
    let embedded = o.target.target.is_none();
    let default_most = iiop_transport::server::ServerConfig::default().max_connections;
    if embedded && o.connections > default_most && o.target.server_max_connections.is_none() {
        job.target.server_max_connections = Some(o.connections);
    }
    let o = &job;
    let per_connection = if embedded { 2 } else { 1 };
    let fds = crate::sysinfo::raise_nofile(o.connections * per_connection + 64);
    session::run(
        o,
        Shape {
            single_caller: lo.single_caller(),
            ..Shape::default()
        },
        ctx,
        |r| {
            lo.record(&mut r.params, o.socket.nodelay);
            if fds.capped || fds.soft != fds.before {
                param(&mut r.params, "nofile", fds);
            }
            if !o.service.is_zero() {
                param(&mut r.params, "service_s", o.service.as_secs_f64());
                param(&mut r.params, "service_kind", o.service_kind.name());
            }
        },
        async |s: &Session, r: &mut Results| measure(o, s, r).await,
    )
}

async fn measure(o: &LatencyJob, s: &Session, r: &mut Results) -> Result<()> {
    let lo = o.point_loop();
    let mut conns = Vec::with_capacity(o.connections);
    for _ in 0..o.connections {
        conns.push(
            s.connect()
                .await
                .map_err(|e| fail!(Target, "connecting to the target: {e}"))?,
        );
    }
    let cs = conns[0].options().char_set;
    let points: Vec<(Option<Elem>, u64)> = match o.op {
        LatencyOp::Ping | LatencyOp::CallBack => vec![(None, 0)],
        _ => o
            .types
            .iter()
            .flat_map(|&e| o.sizes.0.iter().map(move |&s| (Some(e), s)))
            .collect(),
    };
    let progress = &s.progress;
    let mut fits: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    if o.baseline {
        // The raw round trip waits as the server it is set beside does.
        session::record_baseline_wait(s, r, o.baseline_target.as_deref(), true);
    }
    // Baselines measured alongside each point, sliced; else after them.
    let mut sliced = match sliced(o, s) {
        true => Some(Baselines::start(o, s)?),
        false => None,
    };
    for (elem, size) in points {
        ensure!(!crate::interrupt::requested(), Interrupted, "interrupted");
        let (what, per_call, label, ty) = match (o.op, elem) {
            _ if !o.service.is_zero() => (
                Call::Work(o.service.as_secs_f64() * 1e6, o.service_kind.wire()),
                0,
                format!(
                    "work {} {}",
                    crate::units::micros(o.service.as_secs_f64() * 1e6),
                    o.service_kind.name()
                ),
                "void".to_string(),
            ),
            (LatencyOp::CallBack, _) => {
                (Call::Bidir, 0, "call_back".to_string(), "void".to_string())
            }
            (LatencyOp::Ping, _) | (_, None) => {
                (Call::Ping, 0, "ping".to_string(), "void".to_string())
            }
            (op, Some(e)) => {
                let mode = if op == LatencyOp::Echo {
                    CallMode::Echo
                } else {
                    CallMode::Twoway
                };
                let p = Payload::for_size(e, size);
                let b = p.counted_bytes(cs);
                let name = op.name();
                (
                    Call::Payload(mode, Arc::new(Outgoing::new(p))),
                    b,
                    format!("{name} {e} {}", format_size(size)),
                    e.token().to_string(),
                )
            }
        };
        let callers: Vec<Caller> = conns
            .iter()
            .map(|c| Caller {
                c: c.clone(),
                what: what.clone(),
            })
            .collect();
        let mode = match o.service.is_zero() {
            true => o.op.name(),
            false => "work",
        };
        let params = CaseParams {
            ty,
            size,
            mode: mode.into(),
            extra: BTreeMap::new(),
        };
        let watch = s.watch_case();
        let live = s.live(&label);
        let own = (!s.embedded()).then(loops::OwnMemory::start).flatten();
        let (mut case, first_error) = match &mut sliced {
            Some(b) => {
                let raw_size = if matches!(o.op, LatencyOp::Ping | LatencyOp::CallBack) {
                    1
                } else {
                    size
                };
                let pb = progress.case(&label);
                let point = (params, per_call, &live);
                sliced_point(o, &callers, &label, pb, point, b, raw_size)
                    .await
                    .map_err(|e| call_back_hint(o.op, e))?
            }
            None => {
                let pb = progress.case(&label);
                let gate = s.gate.as_ref();
                loops::point(&lo, gate, &callers, &label, pb, params, per_call, &live)
                    .await
                    .map_err(|e| call_back_hint(o.op, e))?
            }
        };
        watch.finish(&mut case);
        if let Some(m) = own {
            m.finish(&mut case);
        }
        if let Some(b) = &mut sliced {
            b.watched(&case);
        }
        if let (Some(l), Some(e)) = (&case.latency_us, elem) {
            fits.entry(format!("{mode} {e}"))
                .or_default()
                .push((per_call as f64, l.mean));
        }
        r.cases.push(case);
        if let (OnError::Stop, Some(e)) = (o.on_error, first_error) {
            return Err(call_back_hint(o.op, fail!(Target, "{label}: {e}")));
        }
    }
    for (label, pts) in fits {
        if let Some(f) = Fit::from_points(&label, &pts) {
            r.fits.push(f);
        }
    }
    match sliced {
        Some(b) => r.cases.extend(b.cases),
        // Many callers (connections, calls in flight, a rate) beside raw
        // TCP driven by the same loop, where the raw side runs here in
        // plain TCP; one caller beside the raw ping-pong.
        None if o.baseline && loops_baseline(o, s) => loop_baseline(o, s, r, lo).await?,
        None if o.baseline => baseline(o, s, r)?,
        None => {}
    }
    Ok(())
}

/// A `call_back` that timed out, said with its likely cause: the server
/// did not read `notify`'s reply because the thread that reads our
/// connection waits in `call_back` (omniORB's thread-per-connection
/// server with one thread per connection does). Other errors as they are.
fn call_back_hint(op: LatencyOp, e: Error) -> Error {
    match e {
        Error::Target(m) if op == LatencyOp::CallBack && m.contains("timed out") => {
            Error::Target(format!(
                "{m} (the server did not answer call_back: one that reads a connection with a \
                 single thread cannot read notify's reply while call_back waits; omniORB needs \
                 -ORBmaxServerThreadPerConnection 2)"
            ))
        }
        e => e,
    }
}

/// Whether the baseline is measured slice by slice alongside each point:
/// one connection making one call at a time in a closed loop, with no
/// agents' start gate (its slots are one per case).
fn sliced(o: &LatencyJob, s: &Session) -> bool {
    o.baseline && o.slices > 1 && o.point_loop().single_caller() && s.gate.is_none()
}

/// The raw clients of a sliced `--baseline` (raw TCP, and raw
/// TLS-over-TCP over TLS) and the raw cases measured so far.
struct Baselines {
    _servers: Vec<crate::rawtcp::RawServer>,
    clients: Vec<crate::rawtcp::RawClient>,
    cases: Vec<Case>,
}

impl Baselines {
    fn start(o: &LatencyJob, s: &Session) -> Result<Baselines> {
        let (srv, addr) = session::baseline_server(s, o.baseline_target.as_deref(), true)?;
        let rc = session::raw_client(addr, s)?;
        let (tls_srv, tls_client) = session::tls_baseline(s, o.baseline_target.as_deref())?.unzip();
        Ok(Baselines {
            _servers: srv.into_iter().chain(tls_srv).collect(),
            clients: std::iter::once(rc).chain(tls_client).collect(),
            cases: Vec::new(),
        })
    }

    /// The raw cases of the point just measured ran while `c` did: they
    /// carry its noise and moved threads.
    fn watched(&mut self, c: &Case) {
        let n = self.clients.len();
        let from = self.cases.len().saturating_sub(n);
        for raw in &mut self.cases[from..] {
            raw.noise = c.noise.clone();
            raw.moved = c.moved.clone();
        }
    }
}

/// One point with a baseline on one connection, closed loop: after the
/// warm-ups, `slices` rounds, each a slice of the point's calls (its
/// share of `count`, or of `duration`) and a slice of the same number
/// of raw round trips of `raw_size` per raw client, every other round in
/// reverse order. The case's ratio to a baseline is the median over the
/// rounds of the slice's p50 over the raw slice's: a change of the
/// machine's speed during the point moves both sides of each ratio.
async fn sliced_point<I: Invoke>(
    o: &LatencyJob,
    callers: &[I],
    label: &str,
    pb: CaseProgress,
    (params, per_call, live): (CaseParams, u64, &Live),
    b: &mut Baselines,
    raw_size: u64,
) -> Result<(Case, Option<String>)> {
    let lo = o.point_loop();
    let _ctrl_c = loops::close_on_interrupt(callers);
    live.bytes_per_call(per_call);
    let echo = o.op == LatencyOp::Echo;
    let pb = loops::warm_up(&lo, callers, label, pb).await?;
    if o.warmup > 0 {
        for rc in b.clients.iter_mut() {
            rc.pingpong(raw_size as usize, echo, o.warmup.min(1000), 0, None)?;
        }
    }
    let slices = o.slices.max(1);
    let mut tally = Tally::default();
    let (mut secs, mut cpu) = (0.0, CpuTime::default());
    let mut giop_p50: Vec<f64> = Vec::new();
    // Per raw client: each slice's p50, and all its slices as one run.
    let mut raw_p50: Vec<Vec<f64>> = vec![Vec::new(); b.clients.len()];
    let mut raw: Vec<crate::rawtcp::RawRun> = vec![Default::default(); b.clients.len()];
    let sides = 1 + b.clients.len();
    for k in 0..slices {
        // This round's share of the count (the count split exactly), or
        // of the duration.
        let share = o.count * u64::from(k + 1) / u64::from(slices)
            - o.count * u64::from(k) / u64::from(slices);
        let dur = o.duration.map(|d| d / slices);
        if dur.is_none() && share == 0 {
            // Fewer calls than slices: this round has none.
            continue;
        }
        let order: Vec<usize> = match k % 2 {
            0 => (0..sides).collect(),
            _ => (0..sides).rev().collect(),
        };
        for side in order {
            if crate::interrupt::requested() {
                break;
            }
            if side == 0 {
                let so = Loop {
                    count: share,
                    duration: dur,
                    // The cap shared out as the calls are.
                    max_duration: lo.max_duration.map(|d| d / slices),
                    ..lo
                };
                let cpu0 = CpuTime::thread_now();
                let start = Instant::now();
                let t = loops::closed_loop(&so, callers, live).await;
                secs += start.elapsed().as_secs_f64();
                cpu = cpu.plus(CpuTime::thread_now().since(cpu0));
                if !t.lat.is_empty() {
                    giop_p50.push(t.lat.summary().p50);
                }
                let failed = o.on_error == OnError::Stop && t.first_error.is_some();
                tally.merge(t);
                if failed {
                    break;
                }
            } else {
                let count = if dur.is_some() { u64::MAX } else { share };
                let run = b.clients[side - 1].pingpong(raw_size as usize, echo, 0, count, dur)?;
                raw_p50[side - 1].push(run.latency.summary().p50);
                raw[side - 1].absorb(&run);
            }
        }
        if crate::interrupt::requested()
            || (o.on_error == OnError::Stop && tally.first_error.is_some())
        {
            break;
        }
    }
    pb.done();
    let (mut case, first_error) = loops::tally_case(&lo, label, params, per_call, tally, secs, cpu);
    for ((rc, run), p50s) in b.clients.iter().zip(raw).zip(raw_p50) {
        let ratio = super::stats::median_ratio(&giop_p50, &p50s);
        let mut c = raw_case(&run, raw_size, echo, rc.is_tls());
        if let (Some(l), Some(q)) = (c.latency_us, ratio) {
            let base = crate::results::Baseline {
                metric: "p50".into(),
                baseline_value: l.p50,
                ratio: q,
            };
            if rc.is_tls() {
                case.tls_baseline = Some(base);
            } else {
                case.baseline = Some(base);
            }
        }
        param(&mut c.params.extra, "slices", slices);
        b.cases.push(c);
    }
    param(&mut case.params.extra, "slices", slices);
    Ok((case, first_error))
}

/// A raw ping-pong run as its case: `tcp ack 64KiB`, `tls-tcp echo 1KiB` ….
fn raw_case(run: &crate::rawtcp::RawRun, size: u64, echo: bool, tls: bool) -> Case {
    let mut c = crate::bench::tcp_baseline::pingpong_case(run, size);
    let wire = if tls { "tls-tcp" } else { "tcp" };
    let pattern = if echo { "echo" } else { "ack" };
    c.params.mode = format!("{wire}-pingpong-{pattern}");
    c.name = format!("{wire} {pattern} {}", format_size(size));
    c
}

/// The raw frames set beside an operation's calls (every raw baseline:
/// one caller's, many callers', a sweep's): the call's payload, echoed
/// for `echo` and acknowledged by a header for `send`; calls without one
/// (ping, call_back, `work`) beside a 1-byte frame acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawFrames {
    pub echo: bool,
    /// The frame carries the call's payload size (else 1 byte).
    pub sized: bool,
}

impl RawFrames {
    pub fn of(op: LatencyOp, service: Duration) -> RawFrames {
        let plain = service.is_zero();
        RawFrames {
            echo: plain && op == LatencyOp::Echo,
            sized: plain && matches!(op, LatencyOp::Echo | LatencyOp::Send),
        }
    }

    /// The frame's body size beside a call of `payload` bytes.
    pub fn size_for(self, payload: u64) -> u64 {
        if self.sized {
            payload
        } else {
            1
        }
    }

    /// The frame sizes beside calls of `sizes`, each once.
    pub fn sizes(self, sizes: &[u64]) -> Vec<u64> {
        let mut v: Vec<u64> = sizes.iter().map(|&z| self.size_for(z)).collect();
        v.dedup();
        v
    }

    pub fn pattern(self) -> &'static str {
        if self.echo {
            "echo"
        } else {
            "ack"
        }
    }
}

/// Each GIOP case's ratio to the raw case of its frame size (`raw`: p50
/// by TLS or not and size), the raw cases left as they are.
fn set_p50_ratios(r: &mut Results, frames: RawFrames, raw: &BTreeMap<(bool, u64), f64>) {
    for c in r
        .cases
        .iter_mut()
        .filter(|c| !c.params.mode.starts_with("tcp") && !c.params.mode.starts_with("tls-tcp"))
    {
        let key = frames.size_for(c.params.size);
        if let Some(&p50) = raw.get(&(false, key)) {
            session::latency_baseline(c, p50);
        }
        if let Some(&p50) = raw.get(&(true, key)) {
            session::tls_latency_baseline(c, p50);
        }
    }
}

fn baseline(o: &LatencyJob, s: &Session, r: &mut Results) -> Result<()> {
    let (_srv, addr) = session::baseline_server(s, o.baseline_target.as_deref(), true)?;
    let frames = RawFrames::of(o.op, o.service);
    let dur = o.duration.unwrap_or(Duration::from_secs(1));
    let rc = session::raw_client(addr, s)?;
    // Over TLS, raw TLS-over-TCP too, each size right after raw TCP's.
    let (_tls_srv, tls_client) = session::tls_baseline(s, o.baseline_target.as_deref())?.unzip();
    let mut clients: Vec<_> = std::iter::once(rc).chain(tls_client).collect();
    let mut raw = BTreeMap::new();
    for size in frames.sizes(&o.sizes.0) {
        for rc in clients.iter_mut() {
            let watch = s.watch_case();
            let run = session::raw_pingpong(rc, size, frames.echo, dur)?;
            let mut c = raw_case(&run, size, frames.echo, rc.is_tls());
            watch.finish(&mut c);
            if let Some(l) = &c.latency_us {
                raw.insert((rc.is_tls(), size), l.p50);
            }
            r.cases.push(c);
        }
    }
    set_p50_ratios(r, frames, &raw);
    Ok(())
}

/// Whether `o`'s baseline is raw TCP driven by its own loop
/// ([`loop_baseline`]): a point of many callers, in plain TCP, with the
/// raw server here.
fn loops_baseline(o: &LatencyJob, s: &Session) -> bool {
    !o.point_loop().single_caller()
        && o.baseline_target.is_none()
        && !crate::target::over_tls(s.ior(), &s.cfg)
}

/// The raw-TCP baseline of a point with many callers: the same loop
/// (connections, calls in flight, rate, duration, warm-up) driving raw
/// frames through the same runtime ([`crate::rawloop`]) against a raw
/// server of one tokio thread on the server's CPUs, each size after the
/// points; each GIOP case's `vs tcp` is its p50 over that of the raw case
/// of its size.
async fn loop_baseline(o: &LatencyJob, s: &Session, r: &mut Results, lo: Loop) -> Result<()> {
    let srv = session::loop_baseline_server(s)?;
    param(&mut r.params, "baseline_server_wait", "reactor");
    let frames = RawFrames::of(o.op, o.service);
    let mut raw = BTreeMap::new();
    for size in frames.sizes(&o.sizes.0) {
        let mut callers =
            crate::rawloop::RawCallers::new(srv.addr(), s.socket.raw(), size as usize, frames.echo);
        let label = format!("tcp {} {}", frames.pattern(), format_size(size));
        let callers = callers
            .first(lo.connections)
            .await
            .map_err(|e| fail!(Local, "{label}: {e}"))?;
        let watch = s.watch_case();
        let params = CaseParams {
            ty: "octet".into(),
            size,
            mode: format!("tcp-loop-{}", frames.pattern()),
            extra: BTreeMap::new(),
        };
        let (mut c, _) = loops::point(
            &lo,
            None,
            callers,
            &label,
            s.progress.case(&label),
            params,
            size,
            &crate::metrics::Live::off(),
        )
        .await?;
        watch.finish(&mut c);
        if let Some(l) = &c.latency_us {
            raw.insert((false, size), l.p50);
        }
        r.cases.push(c);
    }
    set_p50_ratios(r, frames, &raw);
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::job::Job;

    /// A suite's or an agent's job carries `bidir` (in `target`) and
    /// `op: call_back`; without `bidir`, call_back is refused before
    /// anything runs, naming the field.
    #[test]
    fn a_call_back_job_carries_bidir_and_needs_it() {
        let job: Job = serde_json::from_str(
            r#"{"bench": "latency", "op": "call_back", "target": {"bidir": true}, "count": 10}"#,
        )
        .unwrap();
        let Job::Latency(l) = &job else {
            panic!("a latency job")
        };
        assert_eq!((l.op, l.target.bidir), (super::LatencyOp::CallBack, true));
        job.validate_fields().unwrap();
        // Round trip: the field survives, and a job without it has none.
        let back = serde_json::to_value(&job).unwrap();
        assert_eq!(back["op"], "call_back");
        assert_eq!(back["target"]["bidir"], true);
        let plain = serde_json::to_value(Job::Latency(Default::default())).unwrap();
        assert!(plain["target"].get("bidir").is_none(), "{plain}");
        let job: Job = serde_json::from_str(r#"{"bench": "latency", "op": "call_back"}"#).unwrap();
        let e = job.validate_fields().unwrap_err().to_string();
        assert!(e.contains("`op` call_back needs `bidir`"), "{e}");
        let job: Job = serde_json::from_str(
            r#"{"bench": "latency", "op": "call_back", "target": {"bidir": true, "giop": "1.1"}}"#,
        )
        .unwrap();
        let e = job.validate().unwrap_err().to_string();
        assert!(
            e.contains("`bidir` (bidirectional GIOP) needs GIOP 1.2"),
            "{e}"
        );
    }
}
