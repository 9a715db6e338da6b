//! `iiopbench bench throughput`: CORBA-TTCP (seed 000, E0; seed 004, E4.1).
//! Typed sequences of a given per-call size are sent until both a total
//! volume and a minimum duration are reached; oneway runs end with
//! `get_stats()`, which (on the same connection, after every oneway) tells
//! how many payload bytes the server decoded — receiver-side throughput.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use iiop_bench_idl::bench::elements::{CallMode, Elem};
use iiop_bench_idl::bench::types::{seq_typecode, Outgoing, Payload};
use iiop_bench_idl::client::{BenchClient, BenchError};
use iiop_cdr::{Reader, TypeCode, Value, Writer};
use iiop_giop::ResponseMode;
use iiop_transport::client::Prepared;

use super::session::{self, Session, Shape};
use super::{count_error, error_kind, OnError};
use crate::context::param;
use crate::hist::Latency;
use crate::options::{PlacementOpts, Sizes, Sockets};
use crate::progress::Progress;
use crate::results::{Case, CaseParams, CpuFigures, Overhead, Results};
use crate::runs::{set_data_segments, total_data_segments};
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
    /// Each point of a run is measured as this many slices (each with its
    /// share of `total`, `min_duration` and `max_duration`), taken in turn
    /// with the other points of the same mode and size and with their
    /// raw baselines; 1 measures each point in one go.
    pub slices: u32,
    /// Marshal each request once and resend it with only the request id
    /// patched (seed 000's request reuse, E0.4).
    pub reuse_request: bool,
    /// Build requests from run-time TypeCodes (Values) instead of compiled
    /// serde types (the DII analogue, E0.3).
    pub dynamic: bool,
    /// Buffer oneways (SYNC_NONE with a byte limit, TAO's buffering
    /// constraint): each write takes queued oneways of at least this many
    /// bytes, and every slice's `get_stats()` flushes the rest. `None`:
    /// each oneway is written when made, as ORBs do by default.
    pub oneway_buffer: Option<usize>,
    /// Write each oneway when made, with Nagle on while only oneways go
    /// out, so the kernel joins them into full segments; the slice's
    /// `get_stats()` turns it off first ([`ClientConfig::coalesce_oneways`]).
    ///
    /// [`ClientConfig::coalesce_oneways`]: iiop_giop::conn::client::ClientConfig::coalesce_oneways
    pub coalesce_oneways: bool,
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

impl ThroughputOpts {
    /// Whether oneways are coalesced: asked for, with TCP_NODELAY on
    /// (off, Nagle is on throughout and there is nothing to switch).
    pub fn coalesces(&self) -> bool {
        self.coalesce_oneways && self.socket.nodelay
    }
}

/// How the run's oneways went out, among its `params` (`bench throughput`
/// and its `--idl` path): buffered, coalesced, or neither.
pub(crate) fn oneway_params(p: &mut BTreeMap<String, serde_json::Value>, o: &ThroughputOpts) {
    if let Some(n) = o.oneway_buffer {
        param(p, "oneway_buffer", n);
    }
    if o.coalesces() {
        param(p, "coalesce_oneways", true);
    }
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
            slices: 16,
            reuse_request: false,
            dynamic: false,
            oneway_buffer: None,
            coalesce_oneways: false,
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
        oneway_buffer: o.oneway_buffer,
        coalesce_oneways: o.coalesces(),
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
            param(
                p,
                "slices",
                if o.target.gate.is_some() {
                    1
                } else {
                    o.slices.max(1)
                },
            );
            param(p, "reuse_request", o.reuse_request);
            param(p, "dynamic", o.dynamic);
            oneway_params(p, o);
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
    if o.baseline {
        // The fastest way this machine moves the bytes: whether its server
        // polled says what a server that sleeps between requests is up
        // against in the twoways' ratios.
        session::record_baseline_wait(s, r, o.baseline_target.as_deref(), false);
    }
    let (_srv, mut raw_client) = match o.baseline {
        true => {
            let (srv, addr) = session::baseline_server(s, o.baseline_target.as_deref(), false)?;
            (srv, Some(session::raw_client(addr, s)?))
        }
        false => (None, None),
    };
    let (_tls_srv, mut tls_client) = match o.baseline {
        true => session::tls_baseline(s, o.baseline_target.as_deref())?.unzip(),
        false => (None, None),
    };
    // An agent's cases start at their gate's slots, one slot a case: its
    // points go in one piece.
    let slices = match o.target.gate {
        Some(_) => 1,
        None => o.slices.max(1),
    };
    // Each slice carries its share of the point's budget.
    // Slice k of a point sends until the point's bytes reach
    // (k+1)/slices of the total and lasts its share of the durations, so a
    // point bound by its total sends what it would in one go.
    let slice_opts = |k: u32, sent: u64| {
        let target = (u128::from(o.total) * u128::from(k + 1)).div_ceil(u128::from(slices));
        let budget = (target as u64).saturating_sub(sent);
        let so = ThroughputOpts {
            total: budget,
            min_duration: o.min_duration / slices,
            max_duration: o.max_duration / slices,
            ..o.clone()
        };
        // A slice with nothing left to send and no time to fill is
        // skipped (a call would be sent all the same).
        (budget > 0 || !o.min_duration.is_zero()).then_some(so)
    };
    let mut measured: Vec<(usize, Case)> = Vec::new();
    let mut raw_cases: Vec<Case> = Vec::new();
    let slot =
        |mode: usize, elem: usize, size: usize| (mode * types.len() + elem) * o.size.0.len() + size;
    // The points of one mode and size: their raw baselines, then the types.
    #[derive(Clone, Copy)]
    enum Point {
        Raw,
        RawTls,
        Type(usize),
    }
    let mut group: Vec<Point> = Vec::new();
    if raw_client.is_some() {
        group.push(Point::Raw);
    }
    if tls_client.is_some() {
        group.push(Point::RawTls);
    }
    group.extend((0..types.len()).map(Point::Type));
    let mut res = Ok(());
    'all: for (mi, &mode) in modes.iter().enumerate() {
        for (si, &size) in o.size.0.iter().enumerate() {
            let names: Vec<&str> = types.iter().map(|e| e.token()).collect();
            let label = format!("{} {} {}", mode.name(), names.join(","), format_size(size));
            let pb = progress.case(&label);
            // Every point of the group is measured in `slices` slices taken
            // in turn, every other round in reverse order (ABBA): a change
            // of the machine's speed during the group (the VM's CPUs
            // moving on the host can halve loopback throughput for a
            // second) lands on the raw baseline and on every type alike,
            // so their ratios hold.
            let mut acc: Vec<Vec<Case>> = vec![Vec::new(); group.len()];
            for k in 0..slices {
                let order: Vec<usize> = if k % 2 == 0 {
                    (0..group.len()).collect()
                } else {
                    (0..group.len()).rev().collect()
                };
                for gi in order {
                    if crate::interrupt::requested() {
                        res = Err(anyhow::anyhow!("interrupted"));
                        break;
                    }
                    let sent = acc[gi].iter().map(|c| c.bytes).sum();
                    let Some(so) = slice_opts(k, sent) else {
                        continue;
                    };
                    let out = match group[gi] {
                        Point::Raw => match &mut raw_client {
                            Some(rc) => raw_point(&so, s, rc, mode, size).map(Some),
                            None => Ok(None),
                        },
                        Point::RawTls => match &mut tls_client {
                            Some(rc) => raw_point(&so, s, rc, mode, size).map(Some),
                            None => Ok(None),
                        },
                        Point::Type(ei) => {
                            let elem = types[ei];
                            let label = format!("{} {elem} {}", mode.name(), format_size(size));
                            let before = r.cases.len();
                            let out = point(&so, s, &c, elem, mode, size, cs, &label, r).await;
                            acc[gi].extend(r.cases.drain(before..));
                            out.map(|()| None)
                        }
                    };
                    match out {
                        Ok(Some(case)) => acc[gi].push(case),
                        Ok(None) => {}
                        Err(e) => res = Err(e),
                    }
                    if res.is_err() {
                        break;
                    }
                }
                if res.is_err() {
                    break;
                }
            }
            pb.done();
            // What was measured is kept, also of a group cut short. A
            // type's ratio to a baseline is the median over the rounds of
            // its slice's figure over the baseline slice's of the same
            // round: a burst of the host's steal that hits one slice does
            // not move it, as it would move a ratio of sums.
            let slice_mbps = |want: fn(&Point) -> bool| {
                group.iter().position(want).map(|i| {
                    acc[i]
                        .iter()
                        .map(|c| c.throughput_mbps)
                        .collect::<Vec<f64>>()
                })
            };
            let tcp_slices = slice_mbps(|p| matches!(p, Point::Raw));
            let tls_slices = slice_mbps(|p| matches!(p, Point::RawTls));
            let mut tcp_base = None;
            let mut tls_base = None;
            let mut typed = Vec::new();
            for (gi, slices) in acc.into_iter().enumerate() {
                let ratio = |base: &Option<Vec<f64>>| {
                    base.as_ref().and_then(|b| session::slice_ratio(&slices, b))
                };
                let (to_tcp, to_tls) = (ratio(&tcp_slices), ratio(&tls_slices));
                let Some(case) = join_slices(slices)? else {
                    continue;
                };
                match group[gi] {
                    Point::Raw => {
                        tcp_base = Some(case.throughput_mbps);
                        raw_cases.push(case);
                    }
                    Point::RawTls => {
                        tls_base = Some(case.throughput_mbps);
                        raw_cases.push(case);
                    }
                    Point::Type(ei) => typed.push((slot(mi, ei, si), case, to_tcp, to_tls)),
                }
            }
            for (slot, mut case, to_tcp, to_tls) in typed {
                if let (Some(v), Some(q)) = (tcp_base, to_tcp) {
                    session::throughput_baseline(&mut case, v, q);
                }
                if let (Some(v), Some(q)) = (tls_base, to_tls) {
                    session::tls_throughput_baseline(&mut case, v, q);
                }
                measured.push((slot, case));
            }
            if res.is_err() {
                break 'all;
            }
        }
    }
    measured.sort_by_key(|(k, _)| *k);
    r.cases.extend(measured.into_iter().map(|(_, c)| c));
    r.cases.extend(raw_cases);
    res
}

/// The slices of one point as one case, as if measured in one go: counts,
/// bytes, seconds, errors, histograms, CPU and phases add up; the
/// receiver's figure is the server's bytes over the receiver's seconds of
/// all slices. `None` for no slices.
fn join_slices(slices: Vec<Case>) -> anyhow::Result<Option<Case>> {
    let segs = total_data_segments(&slices);
    let mut it = slices.into_iter();
    let Some(mut a) = it.next() else {
        return Ok(None);
    };
    let mut noises: Vec<crate::noise::Noise> = a.noise.iter().cloned().collect();
    for b in it {
        crate::merge::fold_case(&mut a, &b, crate::merge::Overlap::Sequential)?;
        for key in [
            "server_bytes",
            "receiver_seconds",
            "lost_bytes",
            "head_first_calls",
        ] {
            let sum = |c: &Case| c.extra.get(key).and_then(|v| v.as_f64());
            match (sum(&a), sum(&b)) {
                (Some(x), Some(y)) => {
                    let v = if key == "receiver_seconds" {
                        serde_json::json!(x + y)
                    } else {
                        serde_json::json!((x + y).round() as i64)
                    };
                    a.extra.insert(key.to_string(), v);
                }
                (None, Some(y)) if key == "lost_bytes" => {
                    a.extra.insert(key.to_string(), serde_json::json!(y as i64));
                }
                _ => {}
            }
        }
        noises.extend(b.noise.iter().cloned());
        for m in b.moved {
            if !a.moved.contains(&m) {
                a.moved.push(m);
            }
        }
    }
    set_data_segments(&mut a, segs);
    // A raw stream's seconds are the receiver's already.
    if let (Some(bytes), Some(secs)) = (
        a.extra.get("server_bytes").and_then(|v| v.as_f64()),
        a.extra.get("receiver_seconds").and_then(|v| v.as_f64()),
    ) {
        a.receiver_throughput_mbps = Some(bytes * 8.0 / secs.max(1e-9) / 1e6);
    }
    if !noises.is_empty() {
        a.noise = Some(crate::noise::Noise::merge(&noises));
    }
    Ok(Some(a))
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
    let segs0 = c.data_segments_out();
    let split0 = c.head_first_writes();
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
    // Before get_stats(), whose request is not one of the case's calls.
    let segs = segs0
        .zip(c.data_segments_out())
        .map(|(a, b)| u64::from(b.wrapping_sub(a)));
    let split = split0.zip(c.head_first_writes()).map(|(a, b)| b - a);
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
    set_data_segments(&mut case, segs);
    if let Some(n) = split {
        param(&mut case.extra, "head_first_calls", n);
    }
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
    note_buffer(&mut case, o, mode);
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
            session::raw_stream(
                rc,
                size,
                o.oneway_buffer,
                o.total,
                o.min_duration,
                o.max_duration,
            )?,
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
    // (Its frames written as the buffered oneways beside it are.)
    note_buffer(&mut c, o, mode);
    watch.finish(&mut c);
    Ok(c)
}

/// A buffered oneway case (and its raw stream) records the buffer: it is
/// another case than an unbuffered one, and merge and compare keep them
/// apart.
fn note_buffer(c: &mut Case, o: &ThroughputOpts, mode: CallMode) {
    if mode == CallMode::Oneway {
        oneway_params(&mut c.params.extra, o);
    }
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
        t: iiop_transport::PhaseTotals,
        server: Option<&iiop_transport::ServerPhases>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::noise::Noise;

    fn slice(calls: u64, seconds: f64, server_bytes: u64, receiver_seconds: f64) -> Case {
        let bytes = calls * 1024;
        Case {
            name: "oneway octet 1KiB".into(),
            calls,
            bytes,
            seconds,
            throughput_mbps: bytes as f64 * 8.0 / seconds / 1e6,
            receiver_throughput_mbps: Some(server_bytes as f64 * 8.0 / receiver_seconds / 1e6),
            extra: BTreeMap::from([
                ("server_bytes".to_string(), serde_json::json!(server_bytes)),
                (
                    "receiver_seconds".to_string(),
                    serde_json::json!(receiver_seconds),
                ),
            ]),
            noise: Some(Noise {
                wall_s: seconds,
                steal_fraction: if calls > 1500 { 0.3 } else { 0.0 },
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn slices_join_into_the_case_measured_in_one_go() {
        let a = slice(1000, 0.010, 1000 * 1024, 0.0125);
        let b = slice(3000, 0.030, 3000 * 1024, 0.0375);
        let j = join_slices(vec![a, b]).unwrap().unwrap();
        assert_eq!((j.calls, j.bytes), (4000, 4000 * 1024));
        assert!((j.seconds - 0.040).abs() < 1e-12);
        assert_eq!(j.extra["server_bytes"], 4000 * 1024);
        assert!((j.extra["receiver_seconds"].as_f64().unwrap() - 0.05).abs() < 1e-12);
        // The server's bytes over the receiver's seconds of both slices.
        let want = 4000.0 * 1024.0 * 8.0 / 0.05 / 1e6;
        assert!((j.receiver_throughput_mbps.unwrap() - want).abs() < 1e-9);
        assert!((j.throughput_mbps - 4000.0 * 1024.0 * 8.0 / 0.04 / 1e6).abs() < 1e-9);
        // The machine over both: steal weighted by each slice's wall time.
        let n = j.noise.unwrap();
        assert!((n.wall_s - 0.04).abs() < 1e-12);
        assert!((n.steal_fraction - 0.3 * 0.75).abs() < 1e-12);
        assert!(join_slices(Vec::new()).unwrap().is_none());
    }
}
