//! The raw-TCP baseline as a job of its own (`bench tcp`, E4.3), and the
//! cases the other benchmarks make of the same baseline measured in
//! their run. The raw client and server are [`crate::rawtcp`]'s.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use iiop_bench_idl::client::Wait;
use serde::{Deserialize, Serialize};

use super::session::{job_record, refused, Watching};
use crate::error::{check, ensure, fail, Error, JobError, Result};
use crate::options::{PlacementOpts, Sizes, Sockets};
use crate::placement::Cpus;
use crate::rawtcp::{RawClient, RawRun, RawServer, SocketOpts, StreamWrites};
use crate::results::{param, Case, CaseParams, Results, TargetInfo};
use crate::run_context::RunContext;
use crate::target::{WaitOpts, WaitStrategy, Waiting};
use crate::units::format_size;

/// Which raw-TCP pattern to run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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

/// A `bench tcp` job (`Default`: the command line's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpJob {
    /// A raw-TCP server (`iiopbench serve --raw-tcp`) as `HOST:PORT`; an
    /// embedded one when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_target: Option<String>,
    /// Which pattern to run.
    pub pattern: TcpPattern,
    /// Payload bytes per message.
    pub sizes: Sizes,
    /// Stream: bytes to send per point (at least).
    #[serde(with = "crate::units::size")]
    pub total: u64,
    /// Stream and ack: minimum duration per point.
    #[serde(with = "crate::units::duration")]
    pub min_duration: Duration,
    /// Stream: how the frames go out.
    pub writes: StreamWrites,
    /// Ping-pong and ack: round trips per point (ack: at least).
    pub count: u64,
    /// Ping-pong: unrecorded round trips first.
    pub warmup: u64,
    /// How the client waits for replies and for room to send (`reactor`
    /// does not apply).
    pub waiting: WaitOpts,
    pub socket: Sockets,
    pub placement: PlacementOpts,
}

impl Default for TcpJob {
    fn default() -> Self {
        TcpJob {
            baseline_target: None,
            pattern: TcpPattern::Both,
            sizes: crate::units::parse_sizes("1KiB..128KiB")
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
        }
    }
}

impl TcpJob {
    /// Everything that can be checked before the job starts.
    pub fn validate(&self) -> Result<(), JobError> {
        self.sizes.validate("sizes")?;
        let d = TcpJob::default();
        let stream = matches!(self.pattern, TcpPattern::Stream | TcpPattern::Both);
        let round_trips = self.pattern != TcpPattern::Stream;
        if stream {
            check(self.total > 0 || !self.min_duration.is_zero(), || {
                "`total` and `min_duration` are both 0: nothing to stream".into()
            })?;
        } else {
            check(self.writes == d.writes, || {
                "`writes` is how a stream's frames leave: `pattern` has no stream".into()
            })?;
        }
        if round_trips {
            check(self.count >= 1, || "`count` must be at least 1".into())?;
        }
        check(self.waiting.wait_strategy != WaitStrategy::Reactor, || {
            "bench tcp's client blocks in recv: `wait_strategy` read, spin or auto".into()
        })?;
        if let Some(t) = &self.baseline_target {
            check(
                t.rsplit_once(':')
                    .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok()),
                || format!("`baseline_target` {t:?}: expected HOST:PORT"),
            )?;
        }
        self.socket.validate()?;
        self.placement.validate()
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

fn resolve(target: &str) -> Result<SocketAddr> {
    target
        .to_socket_addrs()
        .map_err(|e| fail!(Target, "cannot resolve raw-tcp target {target}: {e}"))?
        .next()
        .ok_or_else(|| fail!(Target, "raw-tcp target {target} resolves to nothing"))
}

/// Run a raw-TCP baseline job; always returns the results (possibly
/// partial) and the error that stopped it, if any.
pub fn run(o: &TcpJob, ctx: &RunContext) -> (Results, Option<Error>) {
    if let Err(e) = o.validate() {
        let (mut r, e) = refused("tcp", o, ctx, e.into());
        fill_params(&mut r, o);
        return (r, e);
    }
    let cpus = match Cpus::resolve(&o.placement, o.baseline_target.is_none()) {
        Ok(c) => c,
        Err(e) => {
            let mut r = Results::new("tcp", ctx.command.clone());
            r.job = job_record("tcp", o);
            fill_params(&mut r, o);
            r.outcome.failure = Some(e.to_string());
            return (r, Some(e));
        }
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
    let mut r = Results::new("tcp", ctx.command.clone());
    r.job = job_record("tcp", o);
    r.target = target;
    r.placement = cpus.record(embedded.is_some());
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
        crate::bench::session::repeat(runs, &ctx.progress, &mut r, &watching, tid, |rr| {
            measure(o, ctx, addr, sock, waiting.spin, &mut rr.cases, &watching)
        })
    })()
    .err();
    r.outcome.complete = err.is_none();
    r.outcome.failure = err.as_ref().map(|e| e.to_string());
    drop(embedded);
    (r, err)
}

/// The raw client blocks in recv, spinning first or not: one caller, one
/// frame at a time.
fn waiting(o: &TcpJob, relation: &str) -> Result<Waiting> {
    let w = o.waiting.resolve(true, relation)?;
    debug_assert!(w.wait != Wait::Reactor, "refused by validate");
    Ok(w)
}

fn fill_params(r: &mut Results, o: &TcpJob) {
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
    o: &TcpJob,
    ctx: &RunContext,
    addr: SocketAddr,
    sock: SocketOpts,
    spin: Option<Duration>,
    cases: &mut Vec<Case>,
    watching: &Watching,
) -> Result<()> {
    let max = o.min_duration.max(Duration::from_secs(1)) * 30;
    let progress = &ctx.progress;
    for &size in &o.sizes.0 {
        ensure!(!crate::interrupt::requested(), Interrupted, "interrupted");
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
        ensure!(!crate::interrupt::requested(), Interrupted, "interrupted");
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
