//! `iiopbench bench throughput`: CORBA-TTCP (seed 000, E0; seed 004, E4.1).
//! Typed sequences of a given per-call size are sent until both a total
//! volume and a minimum duration are reached; oneway runs end with
//! `get_stats()`, which (on the same connection, after every oneway) tells
//! how many payload bytes the server decoded — receiver-side throughput.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use iiop_cdr::{Reader, TypeCode, Value, Writer};
use iiop_giop::transport::client::Prepared;
use iiop_giop::ResponseMode;
use iiop_servers::bench::elements::{CallMode, Elem};
use iiop_servers::bench::types::{seq_typecode, Outgoing, Payload};
use iiop_servers::client::{BenchClient, BenchError};

use super::session::{self, Session, Shape};
use super::{count_error, error_kind, OnError};
use crate::context::param;
use crate::hist::Latency;
use crate::options::{PlacementOpts, Sizes, Sockets};
use crate::progress::Progress;
use crate::results::{Case, CaseParams, CpuFigures, Overhead, Results};
use crate::sysinfo::CpuTime;
use crate::target::TargetOpts;
use crate::units::format_size;

/// `bench throughput` options (`Default`: the command line's defaults).
#[derive(Debug, Clone)]
pub struct ThroughputOpts {
    pub target: TargetOpts,
    /// Element types (bench.idl tokens), comma-separated, or `all`.
    pub types: String,
    /// Payload bytes per call.
    pub size: Sizes,
    /// Return styles, comma-separated: oneway, twoway (void), echo.
    pub mode: String,
    /// Payload bytes to send per point in each run (at least).
    pub total: u64,
    /// Minimum duration of each point in each run.
    pub min_duration: Duration,
    /// Maximum duration of each point, whatever was sent.
    pub max_duration: Duration,
    /// Marshal each request once and resend it with only the request id
    /// patched (seed 000's request reuse, E0.4).
    pub reuse_request: bool,
    /// Build requests from run-time TypeCodes (Values) instead of compiled
    /// serde types (the DII analogue, E0.3).
    pub dynamic: bool,
    /// Measure marshal / transport / demarshal time per call (E0.5).
    pub breakdown: bool,
    /// Also measure raw TCP at the same sizes in this run (ratios).
    pub baseline: bool,
    /// Raw-TCP server for `baseline` with a remote target.
    pub baseline_target: Option<String>,
    /// Stop at the first failed call, or count failures and go on.
    pub on_error: OnError,
    pub socket: Sockets,
    pub placement: PlacementOpts,
    /// Who hears about each case.
    pub progress: Progress,
    /// Call an operation of an IDL file instead of bench.idl's.
    pub idl: crate::dynamic::IdlOpts,
    /// With `idl`: the operation, `Module::Interface::op`.
    pub op: Option<String>,
}

impl Default for ThroughputOpts {
    fn default() -> Self {
        ThroughputOpts {
            target: TargetOpts::default(),
            types: "octet,double,perfstruct".into(),
            size: Sizes(vec![1 << 10, 64 << 10]),
            mode: "oneway,twoway".into(),
            total: 16 << 20,
            min_duration: Duration::from_millis(200),
            max_duration: Duration::from_secs(60),
            reuse_request: false,
            dynamic: false,
            breakdown: false,
            baseline: false,
            baseline_target: None,
            on_error: OnError::Stop,
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
            progress: Progress::none(),
            idl: Default::default(),
            op: None,
        }
    }
}

/// Parse a comma list of element tokens (`all` for every type).
pub fn parse_types(s: &str) -> anyhow::Result<Vec<Elem>> {
    if s.trim() == "all" {
        return Ok(Elem::ALL.to_vec());
    }
    s.split(',')
        .map(|t| t.trim().parse::<Elem>().map_err(anyhow::Error::from))
        .collect()
}

/// Parse a comma list of modes.
pub fn parse_modes(s: &str) -> anyhow::Result<Vec<CallMode>> {
    s.split(',')
        .map(|t| t.trim().parse::<CallMode>().map_err(|e| anyhow::anyhow!(e)))
        .collect()
}

/// How one call is made.
enum Sender {
    /// Numeric sequences spliced from shared memory, like octets.
    Typed(Outgoing),
    Dynamic(TypeCode, Value),
    Prepared(Prepared, Payload),
}

/// The payload as the chosen path needs it.
async fn sender(
    c: &BenchClient,
    elem: Elem,
    mode: CallMode,
    size: u64,
    o: &ThroughputOpts,
) -> anyhow::Result<Sender> {
    let p = Payload::for_size(elem, size);
    if o.reuse_request {
        let resp = match mode {
            CallMode::Oneway => ResponseMode::Oneway,
            _ => ResponseMode::Twoway,
        };
        let prep = c
            .prepare(elem.op_name(mode), resp, |w| p.encode(w))
            .await
            .map_err(|e| anyhow::anyhow!("preparing request: {e}"))?;
        return Ok(Sender::Prepared(prep, p));
    }
    if o.dynamic {
        let tc = seq_typecode(elem);
        let mut buf = BytesMut::new();
        p.encode(&mut Writer::new(&mut buf, iiop_cdr::ByteOrder::NATIVE))?;
        let v = Value::decode(&tc, &mut Reader::new(&buf, iiop_cdr::ByteOrder::NATIVE))?;
        return Ok(Sender::Dynamic(tc, v));
    }
    Ok(Sender::Typed(Outgoing::new(p)))
}

/// One call; checks an echo's result against what was sent.
async fn call_once(
    c: &BenchClient,
    s: &Sender,
    elem: Elem,
    mode: CallMode,
) -> Result<(), BenchError> {
    let mismatch = || BenchError::Reference(format!("echo_{elem} returned a different value"));
    match s {
        Sender::Typed(o) => match c.outgoing(mode, o).await? {
            Some(back) if &back != o.payload() => Err(mismatch()),
            _ => Ok(()),
        },
        Sender::Dynamic(tc, v) => match c.payload_dynamic(mode, elem, tc, v).await? {
            Some(back) if &back != v => Err(mismatch()),
            _ => Ok(()),
        },
        Sender::Prepared(prep, p) => {
            let echo = mode == CallMode::Echo;
            let back = c
                .send_prepared_decoded(prep, elem.op_name(mode), |r| {
                    echo.then(|| Payload::decode(elem, r)).transpose()
                })
                .await?;
            match back.flatten() {
                Some(back) if &back != p => Err(mismatch()),
                _ => Ok(()),
            }
        }
    }
}

/// Protocol bytes per call beyond the payload (E3.4): the request message
/// as built for this case, and one real reply.
async fn overhead(
    c: &BenchClient,
    elem: Elem,
    mode: CallMode,
    p: &Payload,
    payload_bytes: u64,
) -> Option<Overhead> {
    let resp = if mode == CallMode::Oneway {
        ResponseMode::Oneway
    } else {
        ResponseMode::Twoway
    };
    let prep = c
        .prepare(elem.op_name(mode), resp, |w| p.encode(w))
        .await
        .ok()?;
    let request = prep.message().len() as f64 - payload_bytes as f64;
    let reply = match mode {
        CallMode::Oneway => 0.0,
        _ => {
            let r = c.send_prepared(&prep).await.ok()??;
            let total = (r.body.offset + r.body.bytes.len()) as f64;
            if mode == CallMode::Echo {
                total - payload_bytes as f64
            } else {
                total
            }
        }
    };
    Some(Overhead {
        request_bytes: request,
        reply_bytes: reply,
    })
}

/// The run's shape: single-caller unless `--breakdown` (the phase timers
/// live in the runtime's connection): a throughput run is one connection
/// making one call at a time.
pub(crate) fn single_caller(o: &ThroughputOpts) -> Shape {
    Shape {
        single_caller: !o.breakdown,
        phase_timing: false,
    }
}

/// Run `bench throughput`.
pub fn run(o: &ThroughputOpts) -> (Results, Option<anyhow::Error>) {
    if let Some(r) = crate::dynamic::throughput_branch(o) {
        return r;
    }
    session::run(
        "throughput",
        &o.target,
        &o.socket,
        &o.placement,
        Shape {
            phase_timing: o.breakdown,
            ..single_caller(o)
        },
        |r| {
            let p = &mut r.params;
            param(p, "total", o.total);
            param(p, "min_duration_s", o.min_duration.as_secs_f64());
            param(p, "max_duration_s", o.max_duration.as_secs_f64());
            param(p, "reuse_request", o.reuse_request);
            param(p, "dynamic", o.dynamic);
            param(p, "nodelay", o.socket.nodelay);
            param(p, "sndbuf", o.socket.sndbuf);
            param(p, "rcvbuf", o.socket.rcvbuf);
            param(p, "order", format!("{:?}", o.target.order));
        },
        async |s: &Session, r: &mut Results| measure(o, s, r).await,
    )
}

async fn measure(o: &ThroughputOpts, s: &Session, r: &mut Results) -> anyhow::Result<()> {
    let types = parse_types(&o.types)?;
    let modes = parse_modes(&o.mode)?;
    let c = s
        .connect()
        .await
        .map_err(|e| anyhow::anyhow!("connecting to the target: {e}"))?;
    let cs = c.options().char_set;
    let progress = &o.progress;
    // With --baseline, each raw-TCP point runs right before the cases it
    // is the baseline of (same mode and size), so a slow moment of a
    // shared machine moves both sides of a ratio; the table keeps the
    // usual order (mode, type, size), the raw points last.
    // Over TLS, a raw TLS-over-TCP point follows each raw-TCP one.
    let (_srv, mut raw_client) = match o.baseline {
        true => {
            let (srv, addr) = session::baseline_server(s, o.baseline_target.as_deref())?;
            (srv, Some(session::raw_client(addr, s)?))
        }
        false => (None, None),
    };
    let (_tls_srv, mut tls_client) = match o.baseline {
        true => session::tls_baseline(s, o.baseline_target.as_deref())?.unzip(),
        false => (None, None),
    };
    let mut measured: Vec<(usize, Case)> = Vec::new();
    let mut raw_cases: Vec<Case> = Vec::new();
    let mut raw: BTreeMap<(String, u64), f64> = BTreeMap::new();
    let mut raw_tls: BTreeMap<(String, u64), f64> = BTreeMap::new();
    let slot =
        |mode: usize, elem: usize, size: usize| (mode * types.len() + elem) * o.size.0.len() + size;
    let mut res = Ok(());
    'all: for (mi, &mode) in modes.iter().enumerate() {
        for (si, &size) in o.size.0.iter().enumerate() {
            if let Some(rc) = &mut raw_client {
                let c = raw_point(o, s, rc, mode, size)?;
                raw.insert((mode.name().to_string(), size), c.throughput_mbps);
                raw_cases.push(c);
            }
            if let Some(rc) = &mut tls_client {
                let c = raw_point(o, s, rc, mode, size)?;
                raw_tls.insert((mode.name().to_string(), size), c.throughput_mbps);
                raw_cases.push(c);
            }
            for (ei, &elem) in types.iter().enumerate() {
                if crate::interrupt::requested() {
                    res = Err(anyhow::anyhow!("interrupted"));
                    break 'all;
                }
                let label = format!("{} {elem} {}", mode.name(), format_size(size));
                let pb = progress.case(&label);
                let before = r.cases.len();
                let out = point(o, s, &c, elem, mode, size, cs, &label, r).await;
                pb.done();
                let slot = slot(mi, ei, si);
                measured.extend(r.cases.drain(before..).map(|c| (slot, c)));
                if out.is_err() {
                    res = out;
                    break 'all;
                }
            }
        }
    }
    measured.sort_by_key(|(k, _)| *k);
    r.cases.extend(measured.into_iter().map(|(_, c)| c));
    r.cases.extend(raw_cases);
    for c in r.cases.iter_mut() {
        let key = (c.params.mode.clone(), c.params.size);
        if let Some(&v) = raw.get(&key) {
            session::throughput_baseline(c, v);
        }
        if let Some(&v) = raw_tls.get(&key) {
            session::tls_throughput_baseline(c, v);
        }
    }
    res
}

#[allow(clippy::too_many_arguments)]
async fn point(
    o: &ThroughputOpts,
    s: &Session,
    c: &BenchClient,
    elem: Elem,
    mode: CallMode,
    size: u64,
    cs: iiop_cdr::CharCodeSet,
    label: &str,
    r: &mut Results,
) -> anyhow::Result<()> {
    let _ctrl_c = super::CloseOnInterrupt::closing(c);
    let snd = sender(c, elem, mode, size, o).await?;
    let out = match &snd {
        Sender::Typed(o) => o.clone(),
        Sender::Prepared(_, p) => Outgoing::new(p.clone()),
        Sender::Dynamic(..) => Outgoing::new(Payload::for_size(elem, size)),
    };
    let payload = out.payload();
    let per_call = payload.counted_bytes(cs);
    let over = overhead(c, elem, mode, payload, per_call).await;
    // Other agents share the server's counters: leave them alone.
    let shared = o.target.gate.is_some();
    if !shared {
        c.reset()
            .await
            .map_err(|e| anyhow::anyhow!("reset() before {label}: {e}"))?;
    }
    let mut breakdown = Breakdown::default();
    c.reset_phase_totals();
    if let Some(sp) = &s.phases {
        sp.reset();
    }
    crate::gate::case_start(o.target.gate.as_ref()).await;
    let watch = s.watch_case();
    let cpu0 = CpuTime::thread_now();
    let start = Instant::now();
    let Sent {
        calls,
        bytes,
        errors,
        lat,
        failure,
    } = send_loop(o, label, per_call, mode != CallMode::Oneway, async || {
        if o.breakdown {
            breakdown.call(c, &out, elem, mode).await
        } else {
            call_once(c, &snd, elem, mode).await
        }
    })
    .await;
    let send_secs = start.elapsed().as_secs_f64();
    let client_cpu = CpuTime::thread_now().since(cpu0);
    // The client's phases before get_stats(); the server's after it (it
    // may still be decoding oneways until then).
    let phase_totals = c.phase_totals();
    // get_stats() follows every oneway on this connection: its reply means
    // the server has decoded them all.
    let stats = if failure.is_none() && !shared {
        c.stats().await.ok()
    } else {
        None
    };
    let recv_secs = start.elapsed().as_secs_f64();
    let mut case = Case {
        name: label.to_string(),
        params: CaseParams {
            ty: elem.token().into(),
            size,
            mode: mode.name().into(),
            extra: BTreeMap::new(),
        },
        calls,
        bytes,
        seconds: send_secs,
        calls_per_sec: calls as f64 / send_secs.max(1e-9),
        throughput_mbps: bytes as f64 * 8.0 / send_secs.max(1e-9) / 1e6,
        errors,
        overhead: over,
        ..Default::default()
    };
    param(&mut case.params.extra, "elements", payload.len());
    param(
        &mut case.params.extra,
        "path",
        if o.reuse_request {
            "reuse"
        } else if o.dynamic {
            "dynamic"
        } else {
            "typed"
        },
    );
    if !lat.is_empty() {
        case.latency_us = Some(lat.summary());
        case.histogram = Some(lat.to_base64());
    }
    if let Some(st) = &stats {
        case.receiver_throughput_mbps = Some(st.bytes as f64 * 8.0 / recv_secs.max(1e-9) / 1e6);
        param(&mut case.extra, "server_bytes", st.bytes);
        param(&mut case.extra, "receiver_seconds", recv_secs);
        if st.bytes != bytes {
            count_error(&mut case.errors, "payload-bytes-lost".into());
            param(
                &mut case.extra,
                "lost_bytes",
                bytes as i128 - st.bytes as i128,
            );
        }
        let expect_calls = if mode == CallMode::Oneway {
            (0, calls)
        } else {
            (calls, 0)
        };
        if (st.calls, st.oneways) != expect_calls {
            count_error(&mut case.errors, "call-count-mismatch".into());
        }
    }
    let mib = bytes as f64 / (1u64 << 20) as f64;
    case.cpu = Some(CpuFigures {
        client_user_s: client_cpu.user,
        client_sys_s: client_cpu.sys,
        client_s_per_mib: if mib > 0.0 {
            client_cpu.total() / mib
        } else {
            0.0
        },
        server_s: stats.map(|s| s.cpu_seconds),
    });
    if o.breakdown {
        case.breakdown = Some(breakdown.into_map(phase_totals, s.phases.as_deref()));
    }
    watch.finish(&mut case);
    r.cases.push(case);
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The raw-TCP (or, with a TLS client, raw TLS-over-TCP) point that is
/// the baseline of `mode` at `size`: a stream for oneways, a ping-pong
/// for twoways (an empty ack) and echoes.
fn raw_point(
    o: &ThroughputOpts,
    s: &Session,
    rc: &mut crate::rawtcp::RawClient,
    mode: CallMode,
    size: u64,
) -> anyhow::Result<Case> {
    let watch = s.watch_case();
    let (pattern, run) = match mode {
        CallMode::Oneway => (
            "stream",
            session::raw_stream(rc, size, o.total, o.min_duration, o.max_duration)?,
        ),
        CallMode::Twoway => (
            "pingpong-ack",
            session::raw_pingpong(rc, size, false, o.min_duration)?,
        ),
        CallMode::Echo => (
            "pingpong-echo",
            session::raw_pingpong(rc, size, true, o.min_duration)?,
        ),
    };
    let mut c = if mode == CallMode::Oneway {
        crate::tcp::stream_case(&run, size)
    } else {
        crate::tcp::pingpong_case(&run, size)
    };
    let wire = if rc.is_tls() { "tls-tcp" } else { "tcp" };
    c.name = format!("{wire} {pattern} {}", format_size(size));
    c.params.mode = format!("{wire}-{pattern}");
    watch.finish(&mut c);
    Ok(c)
}

/// What a throughput loop counted.
pub(crate) struct Sent {
    pub(crate) calls: u64,
    pub(crate) bytes: u64,
    pub(crate) errors: BTreeMap<String, u64>,
    /// Round trips (twoway calls only).
    pub(crate) lat: Latency,
    /// The failure that stopped the loop under `--on-error stop`.
    pub(crate) failure: Option<anyhow::Error>,
}

/// Make `once` calls back to back, each carrying `per_call` payload bytes,
/// until `--total` bytes are sent (at once if calls carry none) and
/// `--min-duration` has passed, or `--max-duration`, or Ctrl-C; the
/// bench.idl and the IDL-driven runs share it.
pub(crate) async fn send_loop(
    o: &ThroughputOpts,
    label: &str,
    per_call: u64,
    twoway: bool,
    mut once: impl AsyncFnMut() -> Result<(), BenchError>,
) -> Sent {
    let mut sent = Sent {
        calls: 0,
        bytes: 0,
        errors: BTreeMap::new(),
        lat: Latency::new(),
        failure: None,
    };
    // Small calls read the clock every 16th call only (as the omniORB
    // bench client does), and when the total is first reached.
    let every = if per_call < 4096 { 16 } else { 1 };
    let start = Instant::now();
    let mut n = 0u64;
    loop {
        n += 1;
        let t0 = twoway.then(Instant::now);
        let before = sent.bytes;
        match once().await {
            Ok(()) => {
                sent.calls += 1;
                sent.bytes += per_call;
                if let Some(t0) = t0 {
                    sent.lat.record_ns(t0.elapsed().as_nanos() as u64);
                }
            }
            // Cut short by Ctrl-C: not the server's failure.
            Err(_) if crate::interrupt::requested() => break,
            Err(e) => {
                count_error(&mut sent.errors, error_kind(&e));
                if o.on_error == OnError::Stop {
                    sent.failure = Some(anyhow::anyhow!(
                        "{label}: call {} failed: {e}",
                        sent.calls + 1
                    ));
                    break;
                }
            }
        }
        let reached = sent.bytes >= o.total && before < o.total;
        // (Counting attempts, not successes: failing calls still end it.)
        if !reached && !n.is_multiple_of(every) {
            continue;
        }
        let el = start.elapsed();
        if ((sent.bytes >= o.total || per_call == 0) && el >= o.min_duration)
            || el >= o.max_duration
            || crate::interrupt::requested()
        {
            break;
        }
    }
    sent
}

/// `--breakdown` (E0.5): the transport times each call's phases on the
/// normal path (no extra copy: `marshal` is the encoding into the output
/// buffer; see `PhaseTotals` for `write`, `wait`, `read`); this adds
/// decoding an echo's result to `demarshal`, and an embedded server's own
/// phases as `server_*`.
#[derive(Debug, Default)]
struct Breakdown {
    body_demarshal: Duration,
}

impl Breakdown {
    async fn call(
        &mut self,
        c: &BenchClient,
        o: &Outgoing,
        elem: Elem,
        mode: CallMode,
    ) -> Result<(), BenchError> {
        let op = elem.op_name(mode);
        let p = o.payload();
        match mode {
            CallMode::Oneway => c.oneway(op, |w| o.encode(w)).await,
            CallMode::Twoway => c.call(op, |w| o.encode(w)).await.map(drop),
            CallMode::Echo => {
                let body = c.call(op, |w| o.encode(w)).await?;
                let t = Instant::now();
                let back = c.decode(op, &body, |r| Payload::decode(elem, r))?;
                self.body_demarshal += t.elapsed();
                if &back != p {
                    return Err(BenchError::Reference(format!(
                        "echo_{elem} returned a different value"
                    )));
                }
                Ok(())
            }
        }
    }

    /// Seconds per phase over the point: the client's five, then the
    /// embedded server's (`server_requests` is a count).
    fn into_map(
        self,
        t: iiop_giop::transport::PhaseTotals,
        server: Option<&iiop_giop::transport::ServerPhases>,
    ) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::from([
            ("marshal".to_string(), t.marshal.as_secs_f64()),
            ("write".to_string(), t.write.as_secs_f64()),
            ("wait".to_string(), t.wait.as_secs_f64()),
            ("read".to_string(), t.read.as_secs_f64()),
            (
                "demarshal".to_string(),
                (t.demarshal + self.body_demarshal).as_secs_f64(),
            ),
        ]);
        if let Some(sp) = server {
            let (requests, phases) = sp.snapshot();
            m.insert("server_requests".into(), requests as f64);
            for (k, v) in phases {
                m.insert(format!("server_{k}"), v);
            }
        }
        m
    }
}
