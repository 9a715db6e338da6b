//! The frame every GIOP benchmark runs in: placement, target, runtime,
//! results skeleton, and the raw-TCP baseline measured in the same run.

use std::time::Duration;

use iiop_bench_idl::client::BenchClient;
use iiop_transport::client::ClientConfig;
use serde::Serialize;

use crate::error::{Error, JobError, Result};
use crate::gate::Gate;
use crate::noise::{NoiseMeter, Observed, ThreadWatch, WatchMark};
use crate::options::{PlacementOpts, Sockets};
use crate::placement::Cpus;
use crate::progress::Progress;
use crate::rawtcp::{RawClient, RawRun, RawServer};
use crate::results::{param, Baseline, Case, ObservedPlacement, Quality, Results};
use crate::run_context::RunContext;
use crate::target::{self, Resolved, TargetOpts, Waiting};

/// What the frame of a GIOP benchmark needs from its job: its kind, the
/// option groups the frame applies, and the job's own checks.
pub trait BenchJob: Serialize {
    /// The results' `kind` (`throughput`, `latency` …).
    const KIND: &'static str;
    /// The target, or the embedded server's options.
    fn target(&self) -> &TargetOpts;
    fn socket(&self) -> &Sockets;
    fn placement(&self) -> &PlacementOpts;
    /// Everything about the job that can be checked before it starts.
    fn validate(&self) -> Result<(), JobError>;
}

/// `impl BenchJob for $job` with the results' kind `$kind`, for a job
/// whose `target`, `socket` and `placement` fields hold those options. Its
/// check is `validate_fields()` then the target's, or `$validate`.
macro_rules! bench_job {
    ($job:ty, $kind:literal) => {
        $crate::bench::session::bench_job!($job, $kind, |j: &$job| {
            j.validate_fields()?;
            j.target.validate(false)
        });
    };
    ($job:ty, $kind:literal, $validate:expr) => {
        impl $crate::bench::session::BenchJob for $job {
            const KIND: &'static str = $kind;

            fn target(&self) -> &$crate::target::TargetOpts {
                &self.target
            }

            fn socket(&self) -> &$crate::options::Sockets {
                &self.socket
            }

            fn placement(&self) -> &$crate::options::PlacementOpts {
                &self.placement
            }

            fn validate(&self) -> std::result::Result<(), $crate::error::JobError> {
                ($validate)(self)
            }
        }
    };
}

pub(crate) use bench_job;

/// The job as the results record it: its serde form, tagged with its
/// kind as [`Job`](crate::job::Job) tags it.
pub fn job_record<J: Serialize>(kind: &str, job: &J) -> Option<serde_json::Value> {
    let mut v = serde_json::to_value(job).ok()?;
    let m = v.as_object_mut()?;
    let mut tagged = serde_json::Map::new();
    tagged.insert("bench".into(), kind.into());
    tagged.append(m);
    Some(serde_json::Value::Object(tagged))
}

/// The results of a job refused before anything started: a skeleton of
/// its kind whose outcome names the problem, and the error.
pub fn refused<J: Serialize>(
    kind: &str,
    job: &J,
    ctx: &RunContext,
    e: Error,
) -> (Results, Option<Error>) {
    let mut r = Results::new(kind, ctx.command.clone());
    r.job = job_record(kind, job);
    r.outcome.failure = Some(e.to_string());
    (r, Some(e))
}

/// Everything a benchmark needs once set up.
#[derive(Debug)]
pub struct Session {
    pub cpus: Cpus,
    pub resolved: Resolved,
    pub cfg: ClientConfig,
    pub socket: Sockets,
    /// The embedded server's phase totals under `--breakdown` (E0.5).
    pub phases: Option<std::sync::Arc<iiop_transport::ServerPhases>>,
    /// How connections wait for replies (`--wait-strategy`).
    pub waiting: Waiting,
    /// The forwards the first connection followed to reach the object.
    pub forwards: std::sync::Mutex<Vec<String>>,
    /// Where the threads of client and server run, and who serves.
    pub watching: Watching,
    /// `tls_vs_plain`: the cases now run against the plain twin of the
    /// embedded server ([`Resolved::plain`](crate::target::Resolved)).
    pub on_plain: std::sync::atomic::AtomicBool,
    /// Who hears when each case starts and ends.
    pub progress: Progress,
    /// An agent run's start gate ([`RunContext::gate`]): cases start at
    /// their agent-wide slots, and the target's counters are shared.
    pub gate: Option<Gate>,
    /// Where live metrics go ([`RunContext::metrics`]), if anywhere.
    pub metrics: Option<std::sync::Arc<crate::metrics::Registry>>,
    /// The results' `kind` (`latency`, `closed` …): the live metrics'
    /// `bench` label.
    pub kind: String,
}

/// What a run watches besides its own figures: where every thread runs
/// (sampled from /proc), and which local processes serve the target.
#[derive(Debug)]
pub struct Watching {
    pub threads: ThreadWatch,
    /// Local processes serving a target this run did not start (a vendor
    /// server on this machine, found by its listening port): their CPU
    /// time is the server's, not background noise.
    pub server_pids: Vec<u32>,
}

/// How often the sampler of [`Watching`] reads where every thread runs.
///
/// Each sample stops the thread it preempts for as long as the sample
/// takes, and on a machine with no CPU to spare that thread is a measured
/// one. Every 20 ms, that showed in the tail the run reports: ping p99.9,
/// client and server on CPUs apart, 118 µs against 86 µs with no sampling
/// (medians of 5 runs of 150 000 calls each, alternated); every 100 ms,
/// 89 µs, as without. Migrations between samples are counted anyway (the
/// kernel's count, read at each case's start and end), and a case shorter
/// than the period still gets those two samples.
pub const WATCH_PERIOD: Duration = Duration::from_millis(100);

impl Watching {
    /// Start before the client is pinned. `external`: the host and port
    /// of a server this run did not start. `cpus`: where client and server
    /// run; the sampler runs on the process's other CPUs when there are
    /// any ([`spare_cpus`]), else where the process may.
    pub fn start(external: Option<(&str, u16)>, cpus: &Cpus) -> Watching {
        let server_pids = match external {
            Some((host, port)) if is_loopback(host) => crate::procnet::listening_pids(port),
            _ => Vec::new(),
        };
        Watching {
            threads: ThreadWatch::start_on(&server_pids, WATCH_PERIOD, Some(&spare_cpus(cpus))),
            server_pids,
        }
    }

    /// Watch the machine while one case runs.
    pub fn case(&self) -> CaseWatch<'_> {
        CaseWatch {
            mark: self.threads.mark(),
            threads: &self.threads,
            meter: NoiseMeter::start(&self.server_pids),
        }
    }
}

/// The CPUs this process may use ([`Cpus::all`]: a `taskset` around the
/// run is kept) that neither the pinned client nor the server uses. Empty
/// when the client is not pinned (it may run on any of them) or none is
/// left.
fn spare_cpus(cpus: &Cpus) -> Vec<usize> {
    let Some(client) = &cpus.client else {
        return Vec::new();
    };
    let server = cpus.server.as_deref().unwrap_or_default();
    cpus.all
        .iter()
        .copied()
        .filter(|c| !client.contains(c) && !server.contains(c))
        .collect()
}

/// The machine's noise and the threads' moves while one case runs.
#[derive(Debug)]
pub struct CaseWatch<'a> {
    meter: NoiseMeter,
    threads: &'a ThreadWatch,
    mark: WatchMark,
}

impl CaseWatch<'_> {
    /// Record what was seen into the case: `noise`, and `moved` when a
    /// thread changed CPUs.
    pub fn finish(self, c: &mut Case) {
        c.noise = Some(self.meter.finish());
        c.moved = self.threads.since(&self.mark).moved;
    }
}

impl Session {
    /// A new connection to the target's main object; one that waits on
    /// read gives up its call on Ctrl-C.
    ///
    /// The object's location is resolved before the connection is handed
    /// out (following any LOCATION_FORWARD, as TAO's IORTable and Yoko's
    /// BootManager send for short keys), so no measured call pays for a
    /// forward and no oneway is lost to one; the hops are recorded in the
    /// results' target.
    pub async fn connect(&self) -> Result<BenchClient, iiop_bench_idl::client::BenchError> {
        let c = self.open().await?;
        {
            // Ctrl-C ends a resolution the server never answers.
            let _closing = super::CloseOnInterrupt::closing(&c);
            c.resolve().await?;
        }
        self.note_forwards(&c);
        Ok(c)
    }

    /// A fresh connection to the target with nothing sent on it yet (the
    /// object's location unresolved): for timing the first request of a
    /// connection. Call [`note_forwards`](Self::note_forwards) once a
    /// request has been answered.
    pub async fn open(&self) -> Result<BenchClient, iiop_bench_idl::client::BenchError> {
        let c = BenchClient::connect_with(self.ior(), &self.cfg, self.waiting.wait).await?;
        c.set_abort(crate::interrupt::requested);
        Ok(c)
    }

    /// Records the forwards `c` followed, for the results' target (the
    /// first connection that followed any).
    pub fn note_forwards(&self, c: &BenchClient) {
        let hops = c.forwards();
        if !hops.is_empty() {
            let mut f = self.forwards.lock().unwrap_or_else(|e| e.into_inner());
            if f.is_empty() {
                *f = hops.iter().map(|h| h.to_string()).collect();
            }
        }
    }

    /// The object the cases call: the target's, or under
    /// `--tls-vs-plain` in a plain half its plain twin's.
    pub fn ior(&self) -> &iiop_giop::ior::Ior {
        match &self.resolved.plain {
            Some((ior, _)) if self.on_plain.load(std::sync::atomic::Ordering::Relaxed) => ior,
            _ => &self.resolved.ior,
        }
    }

    /// Whether the server runs inside this process.
    pub fn embedded(&self) -> bool {
        self.resolved.embedded.is_some()
    }

    /// Watch the machine while one case runs.
    pub fn watch_case(&self) -> CaseWatch<'_> {
        self.watching.case()
    }

    /// The live metrics handle of the case named `case` (its name in the
    /// results), when the run exports live metrics; else a handle that
    /// records nothing. The exporter's threads are kept off the CPUs
    /// client and server use where the process has one to spare, as the
    /// thread sampler is.
    pub fn live(&self, case: &str) -> crate::metrics::Live {
        let Some(reg) = &self.metrics else {
            return crate::metrics::Live::off();
        };
        reg.place_exporter(&spare_cpus(&self.cpus));
        let info = &self.resolved.info;
        let target = match self.embedded() {
            true => "embedded".to_string(),
            false if info.port == 0 => info.reference.clone(),
            false => format!("{}:{}", info.host, info.port),
        };
        reg.case(crate::metrics::CaseLabels {
            bench: self.kind.clone(),
            case: case.to_string(),
            target,
        })
    }
}

/// How many runs a command makes without `--runs`: the benchmarks whose
/// cases are short repeat three times; the studies of seed 001, which
/// have their own stopping rules, once.
pub fn default_runs(kind: &str) -> u32 {
    match kind {
        "throughput" | "latency" | "tcp" => 7,
        _ => 1,
    }
}

/// The thread's kernel id, as /proc/self/task names it.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Observed placement from what the watch saw: the client's thread by its
/// id, every other busy thread (an embedded server's, a local vendor
/// server's) as the server's.
pub fn observed_placement(o: &Observed, client_tid: i32) -> ObservedPlacement {
    let me = format!("({client_tid})");
    let mut p = ObservedPlacement {
        threads: o.threads.clone(),
        ..Default::default()
    };
    for (name, cpus) in &o.threads {
        let side = if name.ends_with(&me) {
            &mut p.client_cpus
        } else {
            &mut p.server_cpus
        };
        side.extend(cpus);
    }
    for v in [&mut p.client_cpus, &mut p.server_cpus] {
        v.sort_unstable();
        v.dedup();
    }
    p
}

/// Run `runs` times, interleaving the cases, and fold the runs into one
/// results value: noise per run, observed placement, warnings. Stops at
/// the first failed run, keeping what it measured.
pub fn repeat(
    runs: u32,
    progress: &crate::progress::Progress,
    results: &mut Results,
    watching: &Watching,
    client_tid: i32,
    mut one: impl FnMut(&mut Results) -> Result<()>,
) -> Result<()> {
    param(&mut results.params, "runs", runs);
    let start = watching.threads.mark();
    let mut per_run = Vec::new();
    let mut noise = Vec::new();
    let mut res = Ok(());
    for k in 1..=runs {
        progress.stage(crate::progress::Stage::Run, k as usize, runs as usize);
        let mut rr = results.clone();
        rr.cases.clear();
        rr.fits.clear();
        let meter = NoiseMeter::start(&watching.server_pids);
        res = one(&mut rr);
        noise.push(meter.finish());
        results.params = rr.params;
        results.fits = rr.fits;
        results.target = rr.target;
        per_run.push(rr.cases);
        if res.is_err() || crate::interrupt::requested() {
            break;
        }
    }
    results.cases = crate::runs::aggregate(per_run);
    results.placement.observed = Some(observed_placement(
        &watching.threads.since(&start),
        client_tid,
    ));
    results.quality = Some(Quality {
        warnings: Vec::new(),
        runs: noise,
    });
    let w = crate::runs::warnings(results);
    if let Some(q) = &mut results.quality {
        q.warnings = w;
    }
    res
}

/// What a benchmark's own logic (not its user) decides about its run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    /// One caller making one call at a time (what
    /// [`WaitStrategy::Read`](crate::target::WaitStrategy::Read) needs).
    pub single_caller: bool,
    /// Time the phases of every call (E0.5, `--breakdown`): the client
    /// times its calls, and an embedded server adds its phases to
    /// [`Session::phases`].
    pub phase_timing: bool,
    /// Buffer oneways up to this many bytes per write (`--oneway-buffer`,
    /// [`ClientConfig::oneway_buffer`]); `None` writes each when made.
    pub oneway_buffer: Option<usize>,
    /// Nagle on while only oneways go out (`--coalesce-oneways`,
    /// [`ClientConfig::coalesce_oneways`]).
    pub coalesce_oneways: bool,
}

/// Run `body` as the benchmark of `job`: check the job, resolve
/// placement and target, pin the client, run on a current-thread
/// runtime. Returns the results (possibly partial; the job recorded in
/// them) and the error that ended the run.
pub fn run<J, F>(
    job: &J,
    shape: Shape,
    ctx: &RunContext,
    fill_params: impl FnOnce(&mut Results),
    body: F,
) -> (Results, Option<Error>)
where
    J: BenchJob,
    F: AsyncFnMut(&Session, &mut Results) -> Result<()>,
{
    if let Err(e) = job.validate() {
        return refused(J::KIND, job, ctx, e.into());
    }
    let mut results = Results::new(J::KIND, ctx.command.clone());
    results.job = job_record(J::KIND, job);
    fill_params(&mut results);
    let runs = job
        .placement()
        .runs
        .unwrap_or_else(|| default_runs(J::KIND));
    let err = setup_and_run(job, shape, ctx, runs, &mut results, body).err();
    results.outcome.complete = err.is_none();
    results.outcome.failure = err.as_ref().map(|e| e.to_string());
    (results, err)
}

fn setup_and_run<J, F>(
    job: &J,
    shape: Shape,
    ctx: &RunContext,
    runs: u32,
    results: &mut Results,
    mut body: F,
) -> Result<()>
where
    J: BenchJob,
    F: AsyncFnMut(&Session, &mut Results) -> Result<()>,
{
    let (t, socket) = (job.target(), job.socket());
    let cpus = Cpus::resolve(job.placement(), t.target.is_none())?;
    // Without a target the server is embedded, placed as the options say.
    results.placement = cpus.record(t.target.is_none());
    let waiting = t
        .waiting
        .resolve(shape.single_caller, &results.placement.relation)?;
    waiting.record(&mut results.params);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // The embedded server starts (on its own threads and CPUs) before the
    // client thread is pinned.
    let phases: Option<std::sync::Arc<iiop_transport::ServerPhases>> =
        shape.phase_timing.then(Default::default);
    // Built once (the TLS files read once): resolving and every
    // connection of the run share it.
    let mut cfg = target::client_config(t, socket)?;
    let resolved = rt.block_on(target::resolve(t, &cfg, socket, &cpus, phases.clone()))?;
    if let Some(c) = &resolved.tls_client {
        // (The embedded server's IOR offers TLS.)
        cfg.tls = iiop_transport::TlsMode::Offered(c.clone());
    }
    results.target = resolved.info.clone();
    // Whether the connections to the target go over TLS: the cases are
    // then IIOP over TLS, and a baseline measures raw TLS-over-TCP too.
    if target::over_tls(&resolved.ior, &cfg) {
        param(&mut results.params, "tls", true);
    }
    if resolved.resolve_seconds > 0.0 {
        param(
            &mut results.params,
            "resolve_seconds",
            resolved.resolve_seconds,
        );
    }
    let watching = Watching::start(
        resolved
            .embedded
            .is_none()
            .then_some((resolved.info.host.as_str(), resolved.info.port)),
        &cpus,
    );
    let _pinned = cpus.pin_client()?;
    let client_tid = gettid();
    let session = Session {
        cfg: ClientConfig {
            spin: waiting.spin,
            phase_timing: shape.phase_timing,
            oneway_buffer: shape.oneway_buffer,
            coalesce_oneways: shape.coalesce_oneways,
            ..cfg
        },
        cpus,
        phases: phases.filter(|_| resolved.embedded.is_some()),
        waiting,
        resolved,
        socket: *socket,
        forwards: Default::default(),
        watching,
        on_plain: Default::default(),
        progress: ctx.progress.clone(),
        gate: ctx.gate.clone(),
        metrics: ctx.metrics.clone(),
        kind: results.kind.clone(),
    };
    let vs_plain = session.resolved.plain.is_some();
    if vs_plain {
        param(&mut results.params, "tls_vs_plain", true);
    }
    let mut run_no = 0u32;
    let progress = session.progress.clone();
    let r = repeat(
        runs,
        &progress,
        results,
        &session.watching,
        client_tid,
        |rr| {
            if !vs_plain {
                return rt.block_on(body(&session, rr));
            }
            // Both halves of every run; which goes first alternates, so a
            // machine that slows down or speeds up over the runs does not
            // favour one.
            run_no += 1;
            let mut halves = [true, false];
            if run_no.is_multiple_of(2) {
                halves.reverse();
            }
            let mut cases = Vec::new();
            for plain in halves {
                session
                    .on_plain
                    .store(plain, std::sync::atomic::Ordering::Relaxed);
                let mut half = rr.clone();
                half.cases.clear();
                half.fits.clear();
                let res = rt.block_on(body(&session, &mut half));
                rr.params = half.params;
                rr.fits.extend(half.fits.into_iter().map(|mut f| {
                    f.label = crate::tls_vs_plain::label(&f.label, plain);
                    f
                }));
                cases.push((plain, half.cases));
                res?;
            }
            rr.cases = crate::tls_vs_plain::merge_halves(cases);
            Ok(())
        },
    );
    if vs_plain {
        crate::tls_vs_plain::attach_ratios(results);
    }
    results.target.forwards =
        std::mem::take(&mut *session.forwards.lock().unwrap_or_else(|e| e.into_inner()));
    // Stop the embedded server (graceful) before returning.
    drop(session);
    // A run cut short by Ctrl-C is not complete, even when the loop that
    // saw it ended cleanly; and what a call it cut short said is not the
    // reason.
    crate::error::ensure!(
        !crate::interrupt::requested(),
        Interrupted,
        "interrupted: the results hold what was measured until then"
    );
    r
}

/// Whether `host` names this machine's loopback.
pub fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The raw-TCP server a baseline runs against: a local one pinned like an
/// embedded server (loopback targets only: a remote target needs
/// `iiopbench serve --raw-tcp` there and `--baseline-target`).
pub fn baseline_server(
    s: &Session,
    remote: Option<&str>,
    wait_as_server: bool,
) -> crate::error::Result<(Option<RawServer>, std::net::SocketAddr)> {
    if let Some(r) = remote {
        let addr = std::net::ToSocketAddrs::to_socket_addrs(r)?
            .next()
            .ok_or_else(|| {
                crate::error::fail!(Target, "`baseline_target` {r} resolves to nothing")
            })?;
        return Ok((None, addr));
    }
    let host = &s.resolved.info.host;
    let loopback = s.embedded() || is_loopback(host);
    crate::error::ensure!(
        loopback,
        Job,
        "`baseline` needs a raw-TCP server next to the target: run `iiopbench serve --raw-tcp HOST:PORT` on {host} and give its HOST:PORT as `baseline_target`"
    );
    let srv = RawServer::start_waiting(
        "127.0.0.1:0",
        s.socket.raw(),
        Some(s.cpus.server_or_all()),
        raw_server_wait(s, wait_as_server),
    )?;
    let addr = srv.addr();
    Ok((Some(srv), addr))
}

/// The raw-TCP server of a baseline driven by the benchmark's own loop
/// ([`crate::rawloop`]): one thread on the server's CPUs, beside a server
/// on this machine (elsewhere there is nothing to set it beside).
pub fn loop_baseline_server(s: &Session) -> crate::error::Result<crate::rawloop::RawReactor> {
    let host = &s.resolved.info.host;
    crate::error::ensure!(
        s.embedded() || is_loopback(host),
        Job,
        "`baseline` with several callers runs a raw-TCP server beside the server, which is on {host}: \
         measure a server on this machine (one caller of bench latency or throughput takes \
         `baseline_target`: a raw-TCP server run there with `iiopbench serve --raw-tcp HOST:PORT`)"
    );
    crate::rawloop::RawReactor::start(Some(s.cpus.server_or_all()), s.socket.raw())
        .map_err(|e| crate::error::fail!(Local, "starting the raw-TCP server: {e}"))
}

/// How the local raw-TCP server of `s`'s baseline waits: as the embedded
/// server's model does when `wait_as_server` (latency: the raw round trip
/// that waits the same way; polling as long as the embedded server does
/// with `--server-spin-limit`), else in recv, polling before every read
/// when it has a CPU of its own (throughput: the fastest way this machine
/// moves the bytes, for streams and round trips alike).
pub fn raw_server_wait(s: &Session, wait_as_server: bool) -> crate::rawtcp::ServerWait {
    let info = &s.resolved.info;
    let reactor = s.embedded() && info.server_model.as_deref() == Some("reactor");
    // Set for our embedded server only.
    let polls = info
        .server_spin_limit_us
        .map(|us| Duration::from_secs_f64(us / 1e6));
    match (wait_as_server, reactor) {
        (true, true) => crate::rawtcp::ServerWait::Epoll,
        (true, false) => crate::rawtcp::ServerWait::Recv(polls),
        (false, _) => {
            crate::rawtcp::ServerWait::Recv(s.cpus.apart().then_some(crate::rawtcp::SERVER_SPIN))
        }
    }
}

/// Record in `r.params.baseline_server_wait` how the local raw-TCP server
/// of the baseline waits ([`raw_server_wait`]); nothing with a remote one
/// (`--baseline-target`), which waits as it was started.
pub fn record_baseline_wait(
    s: &Session,
    r: &mut Results,
    remote: Option<&str>,
    wait_as_server: bool,
) {
    if remote.is_none() {
        let wait = raw_server_wait(s, wait_as_server).name();
        param(&mut r.params, "baseline_server_wait", wait);
    }
}

/// The raw TLS-over-TCP baseline of a run over TLS: the raw-TCP frames
/// through rustls, served locally (pinned as [`baseline_server`]'s) with a
/// certificate made for the run, and a client of it with the settings of
/// the run's TLS client but that CA, waiting as the run's GIOP client. `None` when the run is not over TLS.
/// A remote target's TLS baseline would need a raw TLS server there: not
/// measured (`--baseline-target` gives raw TCP only).
pub fn tls_baseline(
    s: &Session,
    remote: Option<&str>,
) -> crate::error::Result<Option<(RawServer, RawClient)>> {
    if !crate::target::over_tls(s.ior(), &s.cfg) || remote.is_some() {
        return Ok(None);
    }
    let pki = iiop_transport::tls::EphemeralPki::new().map_err(Error::local)?;
    let srv = RawServer::start_tls(
        "127.0.0.1:0",
        s.socket.raw(),
        Some(s.cpus.server_or_all()),
        pki.server,
    )?;
    let c = RawClient::connect_tls(
        srv.addr(),
        s.socket.raw(),
        Duration::from_secs(10),
        pki.client,
    )?
    .spinning(s.waiting.spin);
    Ok(Some((srv, c)))
}

/// A raw-TCP client of the baseline server, waiting as the GIOP client
/// of this run does. One per run, like the GIOP connection, so both sides
/// of a ratio run on a warmed-up connection.
pub fn raw_client(addr: std::net::SocketAddr, s: &Session) -> crate::error::Result<RawClient> {
    Ok(RawClient::connect(addr, s.socket.raw(), Duration::from_secs(10))?.spinning(s.waiting.spin))
}

/// Raw-TCP stream of `size`-byte frames, the baseline of oneway throughput.
pub fn raw_stream(
    c: &mut RawClient,
    size: u64,
    batch: Option<usize>,
    total: u64,
    min: Duration,
    max: Duration,
) -> crate::error::Result<RawRun> {
    c.stream_batched(size as usize, batch, total, min, max)
}

/// Raw-TCP ping-pong (`echo`: the frame comes back; else an empty ack),
/// the baseline of twoway calls.
pub fn raw_pingpong(
    c: &mut RawClient,
    size: u64,
    echo: bool,
    duration: Duration,
) -> crate::error::Result<RawRun> {
    c.pingpong(size as usize, echo, 200, u64::MAX, Some(duration))
}

/// Attach a throughput ratio to a case: `ratio` (from
/// [`slice_ratio`]) to a raw baseline that moved `raw_mbps` over the run.
pub fn throughput_baseline(c: &mut Case, raw_mbps: f64, ratio: f64) {
    c.baseline = Some(Baseline {
        metric: "throughput".into(),
        baseline_value: raw_mbps,
        ratio,
    });
}

/// Attach a throughput ratio to the physical limit (the fastest raw
/// stream or round trip of the run), as [`throughput_baseline`].
pub fn throughput_limit(c: &mut Case, raw_mbps: f64, ratio: f64) {
    c.limit = Some(Baseline {
        metric: "throughput".into(),
        baseline_value: raw_mbps,
        ratio,
    });
}

/// A case's throughput as its receiver confirmed it, else the sender's.
/// The raw baseline's figure is what its server confirmed per second, so a
/// case's is taken the same way where the server reports counters (what
/// it decoded by the time `get_stats` answered): the sender's own figure
/// runs ahead of the receiver by up to a socket buffer's worth of bytes.
fn confirmed_mbps(c: &Case) -> f64 {
    c.receiver_throughput_mbps.unwrap_or(c.throughput_mbps)
}

/// The ratio of a point measured in slices to its baseline measured in
/// slices alongside (slice k of each in the same round): the median of
/// the per-round ratios. `None` when no round has both.
pub fn slice_ratio(slices: &[Case], baseline_mbps: &[f64]) -> Option<f64> {
    let mbps: Vec<f64> = slices.iter().map(confirmed_mbps).collect();
    super::stats::median_ratio(&mbps, baseline_mbps)
}

/// Attach a p50 latency ratio to a case.
pub fn latency_baseline(c: &mut Case, raw_p50_us: f64) {
    c.baseline = p50_ratio(c, raw_p50_us);
}

/// Attach a throughput ratio to the raw TLS-over-TCP baseline (as
/// [`throughput_baseline`]).
pub fn tls_throughput_baseline(c: &mut Case, raw_mbps: f64, ratio: f64) {
    c.tls_baseline = Some(Baseline {
        metric: "throughput".into(),
        baseline_value: raw_mbps,
        ratio,
    });
}

/// Attach a p50 latency ratio to the raw TLS-over-TCP baseline.
pub fn tls_latency_baseline(c: &mut Case, raw_p50_us: f64) {
    c.tls_baseline = p50_ratio(c, raw_p50_us);
}

fn p50_ratio(c: &Case, raw_p50_us: f64) -> Option<Baseline> {
    c.latency_us.as_ref().map(|l| Baseline {
        metric: "p50".into(),
        baseline_value: raw_p50_us,
        ratio: l.p50 / raw_p50_us.max(1e-9),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sampler_gets_the_cpus_neither_side_uses() {
        let cpus = |client: &[usize], server: Option<&[usize]>, all: &[usize]| Cpus {
            client: (!client.is_empty()).then(|| client.to_vec()),
            server: server.map(<[usize]>::to_vec),
            all: all.to_vec(),
            ..Cpus::default()
        };
        let four = [0, 1, 2, 3];
        assert_eq!(spare_cpus(&cpus(&[0], Some(&[1]), &four)), vec![2, 3]);
        assert_eq!(spare_cpus(&cpus(&[0, 2], None, &four)), vec![1, 3]);
        // Two CPUs, one each: none to spare, the sampler stays put.
        assert!(spare_cpus(&cpus(&[0], Some(&[1]), &[0, 1])).is_empty());
        // Under `taskset -c 0` the process may use CPU 0 only: the
        // sampler is not moved out of it to another.
        assert!(spare_cpus(&cpus(&[0], None, &[0])).is_empty());
        // A client left to the kernel may run anywhere.
        assert!(spare_cpus(&cpus(&[], Some(&[1]), &four)).is_empty());
    }

    fn slice(sent: f64, confirmed: Option<f64>) -> Case {
        Case {
            throughput_mbps: sent,
            receiver_throughput_mbps: confirmed,
            ..Default::default()
        }
    }

    #[test]
    fn a_slice_ratio_is_the_median_of_the_rounds_confirmed_ratios() {
        // Confirmed figures where there are some (the sender's 900 of the
        // first round is not what the ratio uses), the sender's otherwise.
        let slices = [
            slice(900.0, Some(500.0)),
            slice(600.0, None),
            slice(100.0, Some(100.0)),
        ];
        // Rounds: 500/1000, 600/1000, 100/50 (a burst on the baseline).
        assert_eq!(slice_ratio(&slices, &[1000.0, 1000.0, 50.0]), Some(0.6));
        // An even count: the mean of the middle two; a round without a
        // baseline slice (the run cut short) is left out.
        assert_eq!(slice_ratio(&slices[..2], &[1000.0, 1000.0]), Some(0.55));
        assert_eq!(slice_ratio(&slices, &[1000.0]), Some(0.5));
        assert_eq!(slice_ratio(&slices, &[]), None);
        assert_eq!(slice_ratio(&slices, &[0.0, 0.0, 0.0]), None);
    }
}
