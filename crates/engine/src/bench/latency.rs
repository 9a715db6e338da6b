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
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iiop_bench_idl::bench::elements::{CallMode, Elem};
use iiop_bench_idl::bench::types::{Outgoing, Payload};
use iiop_bench_idl::client::{BenchClient, BenchError};

use super::session::{self, Session, Shape};
use super::throughput::parse_types;
use super::{count_error, error_kind, OnError};
use crate::context::param;
use crate::hist::Latency;
use crate::options::{PlacementOpts, Sizes, Sockets};
use crate::progress::{CaseProgress, Progress};
use crate::results::{Case, CaseParams, CpuFigures, Fit, Results};
use crate::sysinfo::CpuTime;
use crate::target::TargetOpts;
use crate::units::format_size;

/// Which operation a latency run calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatOp {
    /// `ping()`: no arguments, empty reply.
    Ping,
    /// `echo_T(s)`: the payload there and back.
    Echo,
    /// `send_T(s)`: the payload there, an empty reply back.
    Send,
    /// An operation of the `--idl` file, `Module::Interface::op`.
    Idl(&'static str),
}

/// `bench latency` options (`Default`: the command line's defaults).
#[derive(Debug, Clone)]
pub struct LatencyOpts {
    pub target: TargetOpts,
    /// The operation.
    pub op: LatOp,
    /// Element types for echo/send (bench.idl tokens), comma-separated.
    pub types: String,
    /// Payload bytes per call for echo/send.
    pub size: Sizes,
    /// Measured calls per point.
    pub count: u64,
    /// Measure for this long per point instead of `count` calls.
    pub duration: Option<Duration>,
    /// Unmeasured calls first (per point).
    pub warmup: u64,
    /// Connections (closed loop: each with `in_flight` callers).
    pub connections: usize,
    /// Calls in flight per connection (closed loop).
    pub in_flight: usize,
    /// Open loop at this many calls per second (latency from the intended
    /// send time).
    pub rate: Option<f64>,
    /// Also measure raw-TCP ping-pong at the same sizes (ratios).
    pub baseline: bool,
    /// Raw-TCP server for `baseline` with a remote target.
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
    /// Who hears about each case.
    pub progress: Progress,
    /// Call an operation of an IDL file (`op` is then [`LatOp::Idl`]).
    pub idl: crate::dynamic::IdlOpts,
}

impl Default for LatencyOpts {
    fn default() -> Self {
        LatencyOpts {
            target: TargetOpts::default(),
            op: LatOp::Ping,
            types: "octet".into(),
            size: Sizes(vec![0]),
            count: 10_000,
            duration: None,
            warmup: 1_000,
            connections: 1,
            in_flight: 1,
            rate: None,
            baseline: false,
            baseline_target: None,
            slices: 16,
            on_error: OnError::Stop,
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
            progress: Progress::none(),
            idl: Default::default(),
        }
    }
}

/// What one caller sends.
#[derive(Debug, Clone)]
enum Call {
    Ping,
    Payload(CallMode, Arc<Outgoing>),
}

async fn call(c: &BenchClient, what: &Call) -> Result<(), BenchError> {
    match what {
        Call::Ping => c.ping().await,
        Call::Payload(mode, o) => match c.outgoing(*mode, o).await? {
            Some(back) if &back != o.payload() => Err(BenchError::Reference(format!(
                "echo_{} returned a different value",
                o.payload().elem()
            ))),
            _ => Ok(()),
        },
    }
}

/// What the callers of one point measured together.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) lat: Latency,
    pub(crate) calls: u64,
    pub(crate) errors: BTreeMap<String, u64>,
    pub(crate) first_error: Option<String>,
}

/// One caller of a latency run: something that makes one call. The loops
/// below drive any of them (bench.idl calls here, IDL-driven ones in
/// `dynamic::bench`).
/// Callers run as runtime tasks (not `LocalSet` ones): a reply wakes the
/// caller straight from the connection's reader task, without the extra
/// driver poll a `block_on` future or a `LocalSet` costs per wake-up.
pub(crate) trait Invoke: Clone + Send + Sync + 'static {
    fn invoke(&self) -> impl std::future::Future<Output = Result<(), BenchError>> + Send;
    /// Close the caller's connection (Ctrl-C: calls in flight end now).
    fn close(&self);
}

/// A connection and what to send on it.
#[derive(Debug, Clone)]
struct Caller {
    c: BenchClient,
    what: Call,
}

impl Invoke for Caller {
    async fn invoke(&self) -> Result<(), BenchError> {
        call(&self.c, &self.what).await
    }

    fn close(&self) {
        self.c.close();
    }
}

impl Tally {
    pub(crate) fn merge(&mut self, o: Tally) {
        self.lat.merge(&o.lat);
        self.calls += o.calls;
        for (k, v) in o.errors {
            *self.errors.entry(k).or_insert(0) += v;
        }
        if self.first_error.is_none() {
            self.first_error = o.first_error;
        }
    }

    pub(crate) fn fail(&mut self, e: &BenchError) {
        count_error(&mut self.errors, error_kind(e));
        if self.first_error.is_none() {
            self.first_error = Some(e.to_string());
        }
    }
}

/// Run `bench latency`.
pub fn run(o: &LatencyOpts) -> (Results, Option<anyhow::Error>) {
    if let Some(r) = crate::dynamic::latency_branch(o) {
        return r;
    }
    session::run(
        "latency",
        &o.target,
        &o.socket,
        &o.placement,
        single_caller(o),
        |r| loop_params(o, r),
        async |s: &Session, r: &mut Results| measure(o, s, r).await,
    )
}

/// The run's shape: single-caller when one connection makes one call at
/// a time in a closed loop (`--wait-strategy auto` then waits on read,
/// spinning first when client and server have CPUs apart).
pub(crate) fn single_caller(o: &LatencyOpts) -> Shape {
    Shape {
        single_caller: o.connections == 1 && o.in_flight == 1 && o.rate.is_none(),
        phase_timing: false,
        oneway_buffer: None,
        coalesce_oneways: false,
    }
}

/// The run parameters every latency run records (bench.idl and `--idl`).
pub(crate) fn loop_params(o: &LatencyOpts, r: &mut Results) {
    let p = &mut r.params;
    param(p, "count", o.count);
    param(p, "duration_s", o.duration.map(|d| d.as_secs_f64()));
    param(p, "warmup", o.warmup);
    param(p, "connections", o.connections);
    param(p, "in_flight", o.in_flight);
    param(p, "rate", o.rate);
    param(p, "nodelay", o.socket.nodelay);
    param(p, "loop", if o.rate.is_some() { "open" } else { "closed" });
}

async fn measure(o: &LatencyOpts, s: &Session, r: &mut Results) -> anyhow::Result<()> {
    anyhow::ensure!(
        o.connections >= 1 && o.in_flight >= 1,
        "--connections and --in-flight must be at least 1"
    );
    if let Some(rate) = o.rate {
        anyhow::ensure!(rate > 0.0 && rate.is_finite(), "--rate must be positive");
    }
    let mut conns = Vec::with_capacity(o.connections);
    for _ in 0..o.connections {
        conns.push(
            s.connect()
                .await
                .map_err(|e| anyhow::anyhow!("connecting to the target: {e}"))?,
        );
    }
    let cs = conns[0].options().char_set;
    let points: Vec<(Option<Elem>, u64)> = match o.op {
        LatOp::Ping => vec![(None, 0)],
        _ => parse_types(&o.types)?
            .into_iter()
            .flat_map(|e| o.size.0.iter().map(move |&s| (Some(e), s)))
            .collect(),
    };
    let progress = &o.progress;
    let mut fits: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    if o.baseline {
        // The raw round trip waits as the server it is set beside does.
        session::record_baseline_wait(s, r, o.baseline_target.as_deref(), true);
    }
    // Baselines measured alongside each point, sliced; else after them.
    let mut sliced = match sliced(o) {
        true => Some(Baselines::start(o, s)?),
        false => None,
    };
    for (elem, size) in points {
        anyhow::ensure!(!crate::interrupt::requested(), "interrupted");
        let (what, per_call, label, ty) = match (o.op, elem) {
            (LatOp::Ping, _) | (_, None) => (Call::Ping, 0, "ping".to_string(), "void".to_string()),
            (op, Some(e)) => {
                let mode = if op == LatOp::Echo {
                    CallMode::Echo
                } else {
                    CallMode::Twoway
                };
                let p = Payload::for_size(e, size);
                let b = p.counted_bytes(cs);
                let name = if op == LatOp::Echo { "echo" } else { "send" };
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
        let mode = match o.op {
            LatOp::Ping => "ping",
            LatOp::Echo => "echo",
            LatOp::Send => "send",
            LatOp::Idl(_) => "idl",
        };
        let params = CaseParams {
            ty,
            size,
            mode: mode.into(),
            extra: BTreeMap::new(),
        };
        let watch = s.watch_case();
        let (mut case, first_error) = match &mut sliced {
            Some(b) => {
                let raw_size = if o.op == LatOp::Ping { 1 } else { size };
                let pb = progress.case(&label);
                sliced_point(o, &callers, &label, pb, params, per_call, b, raw_size).await?
            }
            None => point(o, &callers, &label, progress.case(&label), params, per_call).await?,
        };
        watch.finish(&mut case);
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
            anyhow::bail!("{label}: {e}");
        }
    }
    for (label, pts) in fits {
        if let Some(f) = Fit::from_points(&label, &pts) {
            r.fits.push(f);
        }
    }
    match sliced {
        Some(b) => r.cases.extend(b.cases),
        None if o.baseline => baseline(o, s, r)?,
        None => {}
    }
    Ok(())
}

/// Whether `--baseline` is measured slice by slice alongside each point:
/// one connection making one call at a time in a closed loop, with no
/// agents' start gate (its slots are one per case).
fn sliced(o: &LatencyOpts) -> bool {
    o.baseline
        && o.slices > 1
        && o.connections == 1
        && o.in_flight == 1
        && o.rate.is_none()
        && o.target.gate.is_none()
}

/// The raw clients of a sliced `--baseline` (raw TCP, and raw
/// TLS-over-TCP over TLS) and the raw cases measured so far.
struct Baselines {
    _servers: Vec<crate::rawtcp::RawServer>,
    clients: Vec<crate::rawtcp::RawClient>,
    cases: Vec<Case>,
}

impl Baselines {
    fn start(o: &LatencyOpts, s: &Session) -> anyhow::Result<Baselines> {
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

/// One point with `--baseline` on one connection, closed loop: after the
/// warm-ups, `--slices` rounds, each a slice of the point's calls (its
/// share of `--count`, or of `--duration`) and a slice of the same number
/// of raw round trips of `raw_size` per raw client, every other round in
/// reverse order. The case's ratio to a baseline is the median over the
/// rounds of the slice's p50 over the raw slice's: a change of the
/// machine's speed during the point moves both sides of each ratio.
#[allow(clippy::too_many_arguments)]
async fn sliced_point<I: Invoke>(
    o: &LatencyOpts,
    callers: &[I],
    label: &str,
    pb: CaseProgress,
    params: CaseParams,
    per_call: u64,
    b: &mut Baselines,
    raw_size: u64,
) -> anyhow::Result<(Case, Option<String>)> {
    let _ctrl_c = close_on_interrupt(callers);
    let echo = o.op == LatOp::Echo;
    let pb = warm_up(o, callers, label, pb).await?;
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
                let so = LatencyOpts {
                    count: share,
                    duration: dur,
                    ..o.clone()
                };
                let cpu0 = CpuTime::thread_now();
                let start = Instant::now();
                let t = closed_loop(&so, callers).await;
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
    let (mut case, first_error) = tally_case(o, label, params, per_call, tally, secs, cpu);
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
    let mut c = crate::tcp::pingpong_case(run, size);
    let wire = if tls { "tls-tcp" } else { "tcp" };
    let pattern = if echo { "echo" } else { "ack" };
    c.params.mode = format!("{wire}-pingpong-{pattern}");
    c.name = format!("{wire} {pattern} {}", format_size(size));
    c
}

/// `--warmup` calls spread over the callers, not recorded; a failed one
/// ends the point's progress line `pb` and the point, else `pb` goes on.
async fn warm_up<I: Invoke>(
    o: &LatencyOpts,
    callers: &[I],
    label: &str,
    pb: CaseProgress,
) -> anyhow::Result<CaseProgress> {
    for i in 0..o.warmup {
        if let Err(e) = callers[i as usize % callers.len()].invoke().await {
            pb.done();
            anyhow::bail!("{label}: warm-up call failed: {e}");
        }
    }
    Ok(pb)
}

/// One point of a latency run (bench.idl calls and IDL-driven ones):
/// warm-up spread over the callers (not recorded), the closed or open
/// loop, and the case with its histogram, CPU and loop parameters. Also
/// the first failure, for `--on-error stop`.
pub(crate) async fn point<I: Invoke>(
    o: &LatencyOpts,
    callers: &[I],
    label: &str,
    pb: CaseProgress,
    params: CaseParams,
    per_call: u64,
) -> anyhow::Result<(Case, Option<String>)> {
    let _ctrl_c = close_on_interrupt(callers);
    let pb = warm_up(o, callers, label, pb).await?;
    // In an agent run, every agent starts this case at the same instant.
    crate::gate::case_start(o.target.gate.as_ref()).await;
    let cpu0 = CpuTime::thread_now();
    let start = Instant::now();
    let tally = match o.rate {
        None => closed_loop(o, callers).await,
        Some(rate) => open_loop(o, callers, rate).await,
    };
    let secs = start.elapsed().as_secs_f64();
    let cpu = CpuTime::thread_now().since(cpu0);
    pb.done();
    Ok(tally_case(o, label, params, per_call, tally, secs, cpu))
}

/// A point's case from what its callers measured over `secs` seconds of
/// the client thread's `cpu`, and its first error.
fn tally_case(
    o: &LatencyOpts,
    label: &str,
    params: CaseParams,
    per_call: u64,
    tally: Tally,
    secs: f64,
    cpu: CpuTime,
) -> (Case, Option<String>) {
    let bytes = tally.calls * per_call;
    let mut case = Case {
        name: label.to_string(),
        params,
        calls: tally.calls,
        bytes,
        seconds: secs,
        calls_per_sec: tally.calls as f64 / secs.max(1e-9),
        throughput_mbps: bytes as f64 * 8.0 / secs.max(1e-9) / 1e6,
        latency_us: (!tally.lat.is_empty()).then(|| tally.lat.summary()),
        histogram: (!tally.lat.is_empty()).then(|| tally.lat.to_base64()),
        errors: tally.errors,
        cpu: Some(CpuFigures {
            client_user_s: cpu.user,
            client_sys_s: cpu.sys,
            client_s_per_mib: if bytes > 0 {
                cpu.total() / (bytes as f64 / 1048576.0)
            } else {
                0.0
            },
            server_s: None,
        }),
        ..Default::default()
    };
    param(&mut case.params.extra, "connections", o.connections);
    param(&mut case.params.extra, "in_flight", o.in_flight);
    if let Some(rate) = o.rate {
        param(&mut case.params.extra, "rate", rate);
    }
    (case, tally.first_error)
}

/// Every caller issues its next call when the previous one returns,
/// `--in-flight` times over, until `--count` calls or `--duration`.
pub(crate) async fn closed_loop<I: Invoke>(o: &LatencyOpts, callers: &[I]) -> Tally {
    let issued = Arc::new(AtomicU64::new(0));
    let deadline = o.duration.map(|d| Instant::now() + d);
    let count = if o.duration.is_some() {
        u64::MAX
    } else {
        o.count
    };
    let stop_on_error = o.on_error == OnError::Stop;
    let mut tasks = Vec::new();
    for c in callers {
        for _ in 0..o.in_flight {
            let (c, issued) = (c.clone(), issued.clone());
            tasks.push(tokio::spawn(async move {
                let mut t = Tally::default();
                loop {
                    if issued.fetch_add(1, Ordering::Relaxed) >= count
                        || deadline.is_some_and(|d| Instant::now() >= d)
                        || crate::interrupt::requested()
                    {
                        break;
                    }
                    let t0 = Instant::now();
                    match c.invoke().await {
                        Ok(()) => {
                            t.lat.record_ns(t0.elapsed().as_nanos() as u64);
                            t.calls += 1;
                        }
                        // Cut short by Ctrl-C: not the server's failure.
                        Err(_) if crate::interrupt::requested() => break,
                        Err(e) => {
                            t.fail(&e);
                            if stop_on_error {
                                issued.store(u64::MAX / 2, Ordering::Relaxed);
                                break;
                            }
                        }
                    }
                }
                t
            }));
        }
    }
    let mut total = Tally::default();
    for t in tasks {
        if let Ok(t) = t.await {
            total.merge(t);
        }
    }
    total
}

/// Close every caller's connection on Ctrl-C, while the guard lives.
fn close_on_interrupt<I: Invoke>(callers: &[I]) -> super::CloseOnInterrupt {
    let callers = callers.to_vec();
    super::CloseOnInterrupt::new(move || callers.iter().for_each(Invoke::close))
}

/// Calls at fixed intended times; each latency counts from its intended
/// time. At most 10 000 calls are outstanding; beyond that, calls are
/// counted as `overload` errors rather than queued without bound.
pub(crate) async fn open_loop<I: Invoke>(o: &LatencyOpts, callers: &[I], rate: f64) -> Tally {
    const MAX_OUTSTANDING: usize = 10_000;
    let n = match o.duration {
        Some(d) => (d.as_secs_f64() * rate).ceil() as u64,
        None => o.count,
    };
    let interval = Duration::from_secs_f64(1.0 / rate);
    let start = tokio::time::Instant::now();
    let outstanding = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    let mut total = Tally::default();
    for i in 0..n {
        if crate::interrupt::requested() {
            break;
        }
        let intended = start + interval.mul_f64(i as f64);
        tokio::time::sleep_until(intended).await;
        if outstanding.load(Ordering::Relaxed) >= MAX_OUTSTANDING {
            count_error(&mut total.errors, "overload".into());
            continue;
        }
        outstanding.fetch_add(1, Ordering::Relaxed);
        let (c, out) = (
            callers[i as usize % callers.len()].clone(),
            outstanding.clone(),
        );
        let intended = intended.into_std();
        // Each call hands back its figure; one histogram records them all
        // (a histogram per call was 264 KiB allocated and zeroed inside the
        // timed interval, and held until the end).
        tasks.push(tokio::spawn(async move {
            let r = c.invoke().await;
            let ns = intended.elapsed().as_nanos() as u64;
            out.fetch_sub(1, Ordering::Relaxed);
            (ns, r)
        }));
    }
    for t in tasks {
        match t.await {
            Ok((ns, Ok(()))) => {
                total.lat.record_ns(ns);
                total.calls += 1;
            }
            Ok((_, Err(_))) if crate::interrupt::requested() => {}
            Ok((_, Err(e))) => total.fail(&e),
            Err(_) => {}
        }
    }
    total
}

fn baseline(o: &LatencyOpts, s: &Session, r: &mut Results) -> anyhow::Result<()> {
    let (_srv, addr) = session::baseline_server(s, o.baseline_target.as_deref(), true)?;
    let echo = o.op == LatOp::Echo;
    let sizes: Vec<u64> = if o.op == LatOp::Ping {
        vec![1]
    } else {
        o.size.0.clone()
    };
    let dur = o.duration.unwrap_or(Duration::from_secs(1));
    let rc = session::raw_client(addr, s)?;
    // Over TLS, raw TLS-over-TCP too, each size right after raw TCP's.
    let (_tls_srv, tls_client) = session::tls_baseline(s, o.baseline_target.as_deref())?.unzip();
    let mut clients: Vec<_> = std::iter::once(rc).chain(tls_client).collect();
    let mut raw = BTreeMap::new();
    for size in sizes {
        for rc in clients.iter_mut() {
            let watch = s.watch_case();
            let run = session::raw_pingpong(rc, size, echo, dur)?;
            let mut c = raw_case(&run, size, echo, rc.is_tls());
            watch.finish(&mut c);
            if let Some(l) = &c.latency_us {
                raw.insert((rc.is_tls(), size), l.p50);
            }
            r.cases.push(c);
        }
    }
    for c in r
        .cases
        .iter_mut()
        .filter(|c| !c.params.mode.starts_with("tcp") && !c.params.mode.starts_with("tls-tcp"))
    {
        let key = if c.params.mode == "ping" {
            1
        } else {
            c.params.size
        };
        if let Some(&p50) = raw.get(&(false, key)) {
            session::latency_baseline(c, p50);
        }
        if let Some(&p50) = raw.get(&(true, key)) {
            session::tls_latency_baseline(c, p50);
        }
    }
    Ok(())
}
