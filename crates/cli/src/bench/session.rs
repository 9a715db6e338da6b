//! The frame every GIOP benchmark runs in: placement, target, runtime,
//! results skeleton, and the raw-TCP baseline measured in the same run.

use std::time::Duration;

use iiop_giop::transport::client::ClientConfig;
use iiop_servers::client::BenchClient;

use crate::opts::{OutputOpts, PlacementOpts, SocketArgs};
use crate::placement::Cpus;
use crate::rawtcp::{RawClient, RawRun, RawServer};
use crate::results::{Baseline, Case, Results, TargetInfo};
use crate::target::{self, Resolved, TargetOpts, Waiting};

/// Everything a benchmark needs once set up.
#[derive(Debug)]
pub struct Session {
    pub cpus: Cpus,
    pub resolved: Resolved,
    pub cfg: ClientConfig,
    pub socket: SocketArgs,
    /// The embedded server's phase totals under `--breakdown` (E0.5).
    pub phases: Option<std::sync::Arc<iiop_giop::transport::ServerPhases>>,
    /// How connections wait for replies (`--wait-strategy`).
    pub waiting: Waiting,
    /// The forwards the first connection followed to reach the object.
    pub forwards: std::sync::Mutex<Vec<String>>,
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
    pub async fn connect(&self) -> Result<BenchClient, iiop_servers::client::BenchError> {
        let c = BenchClient::connect_with(&self.resolved.ior, &self.cfg, self.waiting.wait).await?;
        c.set_abort(crate::interrupt::requested);
        {
            // Ctrl-C ends a resolution the server never answers.
            let _closing = super::CloseOnInterrupt::closing(&c);
            c.resolve().await?;
        }
        let hops = c.forwards();
        if !hops.is_empty() {
            let mut f = self.forwards.lock().unwrap_or_else(|e| e.into_inner());
            if f.is_empty() {
                *f = hops.iter().map(|h| h.to_string()).collect();
            }
        }
        Ok(c)
    }

    /// Whether the server runs inside this process.
    pub fn embedded(&self) -> bool {
        self.resolved.embedded.is_some()
    }
}

/// Run `body` as a benchmark: resolve placement and target, pin the
/// client, run on a current-thread runtime. Returns the results (possibly
/// partial) and the error that ended the run.
pub fn run<F>(
    kind: &str,
    t: &TargetOpts,
    socket: &SocketArgs,
    placement: &PlacementOpts,
    fill_params: impl FnOnce(&mut Results),
    body: F,
) -> (Results, Option<anyhow::Error>)
where
    F: AsyncFnOnce(&Session, &mut Results) -> anyhow::Result<()>,
{
    let mut results = crate::context::new_results(kind, TargetInfo::default(), Default::default());
    fill_params(&mut results);
    let err = setup_and_run(t, socket, placement, &mut results, body).err();
    results.outcome.complete = err.is_none();
    results.outcome.failure = err.as_ref().map(|e| format!("{e:#}"));
    (results, err)
}

fn setup_and_run<F>(
    t: &TargetOpts,
    socket: &SocketArgs,
    placement: &PlacementOpts,
    results: &mut Results,
    body: F,
) -> anyhow::Result<()>
where
    F: AsyncFnOnce(&Session, &mut Results) -> anyhow::Result<()>,
{
    let cpus = Cpus::resolve(placement)?;
    // Without --target the server is embedded, placed as the options say.
    results.placement = cpus.record(t.target.is_none());
    let waiting = t.wait(&results.placement.relation)?;
    waiting.record(&mut results.params);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // The embedded server starts (on its own threads and CPUs) before the
    // client thread is pinned.
    let resolved = rt.block_on(target::resolve(t, socket, &cpus))?;
    results.target = resolved.info.clone();
    if resolved.resolve_seconds > 0.0 {
        crate::context::param(
            &mut results.params,
            "resolve_seconds",
            resolved.resolve_seconds,
        );
    }
    cpus.pin_client()?;
    let session = Session {
        cfg: ClientConfig {
            spin: waiting.spin,
            ..target::client_config(t, socket)
        },
        cpus,
        phases: t.phases.clone().filter(|_| resolved.embedded.is_some()),
        waiting,
        resolved,
        socket: socket.clone(),
        forwards: Default::default(),
    };
    let r = rt.block_on(body(&session, results));
    results.target.forwards =
        std::mem::take(&mut *session.forwards.lock().unwrap_or_else(|e| e.into_inner()));
    // Stop the embedded server (graceful) before returning.
    drop(session);
    // A run cut short by Ctrl-C is not complete, even when the loop that
    // saw it ended cleanly; and what a call it cut short said is not the
    // reason.
    anyhow::ensure!(
        !crate::interrupt::requested(),
        "interrupted: the results hold what was measured until then"
    );
    r
}

/// The raw-TCP server a baseline runs against: a local one pinned like an
/// embedded server (loopback targets only: a remote target needs
/// `iiopbench serve --raw-tcp` there and `--baseline-target`).
pub fn baseline_server(
    s: &Session,
    remote: Option<&str>,
) -> anyhow::Result<(Option<RawServer>, std::net::SocketAddr)> {
    if let Some(r) = remote {
        let addr = std::net::ToSocketAddrs::to_socket_addrs(r)?
            .next()
            .ok_or_else(|| anyhow::anyhow!("--baseline-target {r} resolves to nothing"))?;
        return Ok((None, addr));
    }
    let host = &s.resolved.info.host;
    let loopback = s.embedded()
        || host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    anyhow::ensure!(
        loopback,
        "--baseline needs a raw-TCP server next to the target: run `iiopbench serve --raw-tcp HOST:PORT` on {host} and pass --baseline-target HOST:PORT"
    );
    let srv = RawServer::start("127.0.0.1:0", s.socket.raw(), Some(s.cpus.server_or_all()))?;
    let addr = srv.addr();
    Ok((Some(srv), addr))
}

/// Raw-TCP stream of `size`-byte frames, the baseline of oneway throughput.
pub fn raw_stream(
    addr: std::net::SocketAddr,
    s: &Session,
    size: u64,
    total: u64,
    min: Duration,
    max: Duration,
) -> anyhow::Result<RawRun> {
    let mut c =
        RawClient::connect(addr, s.socket.raw(), Duration::from_secs(10))?.spinning(s.waiting.spin);
    c.stream(size as usize, total, min, max)
}

/// Raw-TCP ping-pong (`echo`: the frame comes back; else an empty ack),
/// the baseline of twoway calls.
pub fn raw_pingpong(
    addr: std::net::SocketAddr,
    s: &Session,
    size: u64,
    echo: bool,
    duration: Duration,
) -> anyhow::Result<RawRun> {
    let mut c =
        RawClient::connect(addr, s.socket.raw(), Duration::from_secs(10))?.spinning(s.waiting.spin);
    c.pingpong(size as usize, echo, 200, u64::MAX, Some(duration))
}

/// Attach a throughput ratio to a case.
pub fn throughput_baseline(c: &mut Case, raw_mbps: f64) {
    c.baseline = Some(Baseline {
        metric: "throughput".into(),
        baseline_value: raw_mbps,
        ratio: c.throughput_mbps / raw_mbps.max(1e-9),
    });
}

/// Attach a p50 latency ratio to a case.
pub fn latency_baseline(c: &mut Case, raw_p50_us: f64) {
    if let Some(l) = &c.latency_us {
        c.baseline = Some(Baseline {
            metric: "p50".into(),
            baseline_value: raw_p50_us,
            ratio: l.p50 / raw_p50_us.max(1e-9),
        });
    }
}

/// Emit the results and turn the run's error into the command's outcome.
pub fn finish(r: &Results, o: &OutputOpts, err: Option<anyhow::Error>) -> anyhow::Result<()> {
    let written = crate::output::emit(r, o);
    match (err, written) {
        (Some(e), _) => Err(e),
        (None, w) => w,
    }
}
