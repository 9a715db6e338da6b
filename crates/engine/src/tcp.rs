//! `iiopbench bench tcp`: the raw-TCP baseline (E4.3), and the helper that
//! other commands use to measure the same baseline in their own run.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use crate::bench::session::Watching;
use crate::context::{new_results, param};
use crate::options::{PlacementOpts, Sizes, Sockets};
use crate::placement::Cpus;
use crate::progress::Progress;
use crate::rawtcp::{RawClient, RawRun, RawServer, SocketOpts, StreamWrites};
use crate::results::{Case, CaseParams, Results, TargetInfo};
use crate::target::{WaitOpts, Waiting};
use crate::units::format_size;
use iiop_bench_idl::client::Wait;

/// Which raw-TCP pattern to run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TcpPattern {
    /// One-way stream of frames, confirmed by the server's byte count.
    Stream,
    /// Request/reply of the same size (echo).
    Pingpong,
    /// Request of the size, an empty reply (a header): a twoway call's
    /// round trip, whose rate is the most a client that waits for each
    /// reply can move.
    Ack,
    /// Stream and ping-pong.
    #[default]
    Both,
}

/// `bench tcp` options (`Default`: the command line's defaults).
#[derive(Debug, Clone)]
pub struct TcpOpts {
    /// A raw-TCP server (`iiopbench serve --raw-tcp`) as HOST:PORT; an
    /// embedded one when `None`.
    pub baseline_target: Option<String>,
    /// Which pattern to run.
    pub pattern: TcpPattern,
    /// Payload bytes per message.
    pub size: Sizes,
    /// Stream: bytes to send per point (at least).
    pub total: u64,
    /// Stream and ack: minimum duration per point.
    pub min_duration: Duration,
    /// Stream: how the frames go out.
    pub writes: StreamWrites,
    /// Ping-pong and ack: round trips per point (ack: at least).
    pub count: u64,
    /// Ping-pong: unrecorded round trips first.
    pub warmup: u64,
    /// How the client waits for replies and for room to send (`Reactor`
    /// does not apply).
    pub waiting: WaitOpts,
    pub socket: Sockets,
    pub placement: PlacementOpts,
    /// Who hears about each case.
    pub progress: Progress,
}

impl Default for TcpOpts {
    fn default() -> Self {
        TcpOpts {
            baseline_target: None,
            pattern: TcpPattern::Both,
            size: crate::units::parse_sizes("1KiB..128KiB")
                .map(Sizes)
                .expect("a valid sweep"),
            total: 64 << 20,
            min_duration: Duration::from_secs(1),
            writes: StreamWrites::default(),
            count: 10_000,
            warmup: 1_000,
            waiting: WaitOpts::default(),
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
            progress: Progress::none(),
        }
    }
}

/// Stream-mode case from a raw run.
pub fn stream_case(run: &RawRun, size: u64) -> Case {
    let mut c = base_case(run, size, "stream");
    c.receiver_throughput_mbps = run.server_bytes.map(|b| mbps(b, run.seconds));
    crate::runs::set_data_segments(&mut c, run.data_segments);
    c
}

/// Ping-pong (echo) case from a raw run.
pub fn pingpong_case(run: &RawRun, size: u64) -> Case {
    round_trip_case(run, size, "pingpong")
}

/// Ping-pong case of `mode` (`pingpong`: echoes, `pingpong-ack`: empty
/// replies) from a raw run.
pub fn round_trip_case(run: &RawRun, size: u64, mode: &str) -> Case {
    let mut c = base_case(run, size, mode);
    c.latency_us = Some(run.latency.summary());
    c.histogram = Some(run.latency.to_base64());
    c
}

fn base_case(run: &RawRun, size: u64, mode: &str) -> Case {
    Case {
        name: format!("tcp {mode} {}", format_size(size)),
        params: CaseParams {
            ty: "octet".into(),
            size,
            mode: mode.into(),
            extra: Default::default(),
        },
        calls: run.calls,
        bytes: run.bytes,
        seconds: run.seconds,
        calls_per_sec: run.calls as f64 / run.seconds.max(1e-9),
        throughput_mbps: mbps(run.bytes, run.seconds),
        ..Default::default()
    }
}

/// Payload megabits per second.
pub fn mbps(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 * 8.0 / seconds.max(1e-9) / 1e6
}

fn resolve(target: &str) -> anyhow::Result<SocketAddr> {
    target
        .to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("cannot resolve raw-tcp target {target}: {e}"))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("raw-tcp target {target} resolves to nothing"))
}

/// Run `bench tcp`; always returns the results (possibly partial) and the
/// error that stopped it, if any.
pub fn run(o: &TcpOpts) -> (Results, Option<anyhow::Error>) {
    let cpus = match Cpus::resolve(&o.placement, o.baseline_target.is_none()) {
        Ok(c) => c,
        Err(e) => return (empty(o), Some(e)),
    };
    let sock = o.socket.raw();
    let mut embedded = None;
    let addr = match &o.baseline_target {
        Some(t) => resolve(t),
        None => RawServer::start(
            "127.0.0.1:0",
            sock,
            Some(cpus.server_or_all()),
            cpus.apart().then_some(crate::rawtcp::SERVER_SPIN),
        )
        .map(|s| {
            let a = s.addr();
            embedded = Some(s);
            a
        }),
    };
    let target = TargetInfo {
        kind: if embedded.is_some() {
            "embedded-raw-tcp"
        } else {
            "raw-tcp"
        }
        .into(),
        reference: o
            .baseline_target
            .clone()
            .unwrap_or_else(|| "embedded".into()),
        host: addr
            .as_ref()
            .map(|a| a.ip().to_string())
            .unwrap_or_default(),
        port: addr.as_ref().map(|a| a.port()).unwrap_or(0),
        isolation: embedded
            .as_ref()
            .map(|_| "in-process raw-TCP server on its own threads (blocking sockets)".to_string()),
        ..Default::default()
    };
    let mut r = new_results("tcp", target, cpus.record(embedded.is_some()));
    fill_params(&mut r, o);
    let err = (|| {
        let waiting = waiting(o, &r.placement.relation)?;
        waiting.record(&mut r.params);
        let addr = addr?;
        let host = addr.ip().to_string();
        let watching = Watching::start(
            embedded.is_none().then_some((host.as_str(), addr.port())),
            &cpus,
        );
        let _pinned = cpus.pin_client()?;
        let tid = crate::bench::session::gettid();
        let runs = o
            .placement
            .runs
            .unwrap_or_else(|| crate::bench::session::default_runs("tcp"));
        crate::bench::session::repeat(runs, &mut r, &watching, tid, |rr| {
            measure(o, addr, sock, waiting.spin, &mut rr.cases, &watching)
        })
    })()
    .err();
    r.outcome.complete = err.is_none();
    r.outcome.failure = err.as_ref().map(|e| format!("{e:#}"));
    drop(embedded);
    (r, err)
}

/// The raw client blocks in recv, spinning first or not: one caller, one
/// frame at a time.
fn waiting(o: &TcpOpts, relation: &str) -> anyhow::Result<Waiting> {
    let w = o.waiting.resolve(true, relation)?;
    anyhow::ensure!(
        w.wait != Wait::Reactor,
        "bench tcp's client blocks in recv: --wait-strategy read, spin or auto"
    );
    Ok(w)
}

fn empty(o: &TcpOpts) -> Results {
    let mut r = new_results("tcp", TargetInfo::default(), Default::default());
    fill_params(&mut r, o);
    r
}

fn fill_params(r: &mut Results, o: &TcpOpts) {
    param(&mut r.params, "nodelay", o.socket.nodelay);
    param(&mut r.params, "sndbuf", o.socket.sndbuf);
    param(&mut r.params, "rcvbuf", o.socket.rcvbuf);
    param(&mut r.params, "total", o.total);
    param(&mut r.params, "stream_writes", o.writes.name());
    param(
        &mut r.params,
        "min_duration_s",
        o.min_duration.as_secs_f64(),
    );
    param(&mut r.params, "count", o.count);
    param(&mut r.params, "warmup", o.warmup);
}

fn measure(
    o: &TcpOpts,
    addr: SocketAddr,
    sock: SocketOpts,
    spin: Option<Duration>,
    cases: &mut Vec<Case>,
    watching: &Watching,
) -> anyhow::Result<()> {
    let max = o.min_duration.max(Duration::from_secs(1)) * 30;
    let progress = &o.progress;
    for &size in &o.size.0 {
        anyhow::ensure!(!crate::interrupt::requested(), "interrupted");
        if matches!(o.pattern, TcpPattern::Stream | TcpPattern::Both) && size > 0 {
            let p = progress.case(&format!("tcp stream {}", format_size(size)));
            let w = watching.case();
            let mut c = RawClient::connect(addr, sock, Duration::from_secs(10))?
                .spinning(spin)
                .writing(o.writes);
            let run = c.stream(size as usize, o.total, o.min_duration, max)?;
            let mut case = stream_case(&run, size);
            w.finish(&mut case);
            cases.push(case);
            p.done();
        }
        anyhow::ensure!(!crate::interrupt::requested(), "interrupted");
        let round_trip = match o.pattern {
            TcpPattern::Pingpong | TcpPattern::Both => Some((true, "pingpong")),
            TcpPattern::Ack => Some((false, "pingpong-ack")),
            TcpPattern::Stream => None,
        };
        if let Some((echo, mode)) = round_trip {
            let p = progress.case(&format!("tcp {mode} {}", format_size(size)));
            let w = watching.case();
            let mut c = RawClient::connect(addr, sock, Duration::from_secs(10))?.spinning(spin);
            // Acks measure a rate, as a stream does: at least the count and
            // at least the minimum duration.
            let min = if echo { Duration::ZERO } else { o.min_duration };
            let run = c.pingpong_for(size as usize, echo, o.warmup, o.count, min, Some(max))?;
            let mut case = round_trip_case(&run, size, mode);
            w.finish(&mut case);
            cases.push(case);
            p.done();
        }
    }
    Ok(())
}
