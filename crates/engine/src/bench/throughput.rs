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
use serde::{Deserialize, Serialize};

use super::count_error;
use super::loops::{self, Budget, Sent};
use super::session::{self, Session, Shape};
use crate::dynamic::IdlOp;
use crate::error::{check, fail, Error, JobError, Result};
use crate::options::{OnError, PlacementOpts, Sizes, Sockets};
use crate::rawtcp::StreamWrites;
use crate::results::{param, Case, CaseParams, CpuFigures, Overhead, Results};
use crate::run_context::RunContext;
use crate::runs::{set_data_segments, total_data_segments};
use crate::sysinfo::CpuTime;
use crate::target::TargetOpts;
use crate::units::format_size;

/// A `bench throughput` job (`Default`: the command line's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ThroughputJob {
    pub target: TargetOpts,
    /// Element types (bench.idl's), each a point of every mode and size.
    #[serde(with = "super::elems")]
    pub types: Vec<Elem>,
    /// Payload bytes per call.
    pub sizes: Sizes,
    /// Return styles: oneway, twoway (void), echo.
    #[serde(with = "super::modes")]
    pub modes: Vec<CallMode>,
    /// Payload bytes to send per point in each run (at least).
    #[serde(with = "crate::units::size")]
    pub total: u64,
    /// Minimum duration of each point in each run.
    #[serde(with = "crate::units::duration")]
    pub min_duration: Duration,
    /// Maximum duration of each point, whatever was sent.
    #[serde(with = "crate::units::duration")]
    pub max_duration: Duration,
    /// Each point of a run is measured as this many slices (each with its
    /// share of `total`, `min_duration` and `max_duration`), taken in turn
    /// with the other points of the same mode and size and with their
    /// raw baselines; 1 measures each point in one go.
    pub slices: u32,
    /// Marshal each request once and resend it with only the request id
    /// patched (request reuse).
    pub reuse_request: bool,
    /// Build requests from run-time TypeCodes (Values) instead of compiled
    /// serde types (the DII analogue).
    pub dynamic: bool,
    /// Buffer oneways (SYNC_NONE with a byte limit, TAO's buffering
    /// constraint): each write takes queued oneways of at least this many
    /// bytes, and every slice's `get_stats()` flushes the rest. `None`:
    /// each oneway is written when made, as ORBs do by default.
    #[serde(
        with = "crate::units::opt_size",
        skip_serializing_if = "Option::is_none"
    )]
    pub oneway_buffer: Option<u64>,
    /// Write each oneway when made, with Nagle on while only oneways go
    /// out, so the kernel joins them into full segments; the slice's
    /// `get_stats()` turns it off first ([`ClientConfig::coalesce_oneways`]).
    ///
    /// [`ClientConfig::coalesce_oneways`]: iiop_transport::client::ClientConfig::coalesce_oneways
    pub coalesce_oneways: bool,
    /// Measure marshal / transport / demarshal time per call.
    pub breakdown: bool,
    /// Also measure raw TCP at the same sizes in this run (ratios).
    pub baseline: bool,
    /// Raw-TCP server (`HOST:PORT`) for `baseline` with a remote target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_target: Option<String>,
    /// Stop at the first failed call, or count failures and go on.
    pub on_error: OnError,
    pub socket: Sockets,
    pub placement: PlacementOpts,
    /// Send this operation of an IDL file instead of bench.idl's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idl: Option<IdlOp>,
}

impl ThroughputJob {
    /// Whether oneways are coalesced: asked for, with TCP_NODELAY on
    /// (off, Nagle is on throughout and there is nothing to switch).
    pub fn coalesces(&self) -> bool {
        self.coalesce_oneways && self.socket.nodelay
    }

    /// Each point's budget in one run.
    pub fn budget(&self) -> Budget {
        Budget {
            total: self.total,
            min_duration: self.min_duration,
            max_duration: self.max_duration,
        }
    }

    /// The oneway buffer as the client takes it.
    fn buffer(&self) -> Option<usize> {
        self.oneway_buffer
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// Everything that can be checked before the job starts.
    pub fn validate(&self) -> Result<(), JobError> {
        self.validate_fields()?;
        self.target.validate(!self.breakdown)
    }

    /// [`validate`](Self::validate) without reading the target's file.
    pub fn validate_fields(&self) -> Result<(), JobError> {
        let d = ThroughputJob::default();
        self.sizes.validate("sizes")?;
        check(!self.max_duration.is_zero(), || {
            "`max_duration` must be more than 0".into()
        })?;
        check(self.min_duration <= self.max_duration, || {
            "`min_duration` is longer than `max_duration`".into()
        })?;
        check(self.total > 0 || !self.min_duration.is_zero(), || {
            "`total` and `min_duration` are both 0: nothing to send".into()
        })?;
        check(self.slices >= 1, || "`slices` must be at least 1".into())?;
        check(self.oneway_buffer != Some(0), || {
            "`oneway_buffer` must be more than 0 bytes (leave it out to write each oneway when made)".into()
        })?;
        check(self.baseline_target.is_none() || self.baseline, || {
            "`baseline_target` is the server of `baseline`, which is off".into()
        })?;
        match &self.idl {
            Some(idl) => {
                check(self.types == d.types && self.modes == d.modes, || {
                    "`types` and `modes` choose bench.idl's calls: with `idl` the operation is `idl.op`, oneway or twoway as the IDL declares it".into()
                })?;
                check(
                    !self.reuse_request && !self.dynamic && !self.breakdown,
                    || {
                        "`reuse_request`, `dynamic` and `breakdown` are paths of bench.idl's calls: with `idl` every request is prepared once and resent".into()
                    },
                )?;
                idl.validate()?;
            }
            None => {
                check(!self.types.is_empty(), || "`types` is empty".into())?;
                check(!self.modes.is_empty(), || "`modes` is empty".into())?;
                let oneways = self.modes.contains(&CallMode::Oneway);
                check(
                    oneways || (self.oneway_buffer.is_none() && !self.coalesce_oneways),
                    || {
                        "`oneway_buffer` and `coalesce_oneways` apply to oneways, and `modes` has none".into()
                    },
                )?;
                check(!(self.reuse_request && self.dynamic), || {
                    "`reuse_request` and `dynamic` are two ways of making a request: choose one"
                        .into()
                })?;
                check(
                    !self.breakdown || !(self.reuse_request || self.dynamic),
                    || {
                        "`breakdown` times the typed path: not with `reuse_request` or `dynamic`"
                            .into()
                    },
                )?;
            }
        }
        self.socket.validate()?;
        self.placement.validate()
    }
}

session::bench_job!(ThroughputJob, "throughput", ThroughputJob::validate);

/// How the run's oneways went out, among its `params` (bench.idl's and
/// an IDL's): buffered, coalesced, or neither.
fn oneway_params(p: &mut BTreeMap<String, serde_json::Value>, o: &ThroughputJob) {
    if let Some(n) = o.buffer() {
        param(p, "oneway_buffer", n);
    }
    if o.coalesces() {
        param(p, "coalesce_oneways", true);
    }
}

impl Default for ThroughputJob {
    fn default() -> Self {
        ThroughputJob {
            target: TargetOpts::default(),
            types: vec![Elem::Octet, Elem::Double, Elem::PerfStruct],
            sizes: Sizes(vec![1 << 10, 64 << 10]),
            modes: vec![CallMode::Oneway, CallMode::Twoway],
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
            idl: None,
        }
    }
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
    o: &ThroughputJob,
) -> Result<Sender> {
    let p = Payload::for_size(elem, size);
    if o.reuse_request {
        let resp = match mode {
            CallMode::Oneway => ResponseMode::Oneway,
            _ => ResponseMode::Twoway,
        };
        let prep = c
            .prepare(elem.op_name(mode), resp, |w| p.encode(w))
            .await
            .map_err(|e| fail!(Target, "preparing request: {e}"))?;
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

/// The run's shape: single-caller unless `breakdown` (the phase timers
/// live in the runtime's connection): a throughput run is one connection
/// making one call at a time.
fn single_caller(o: &ThroughputJob) -> Shape {
    Shape {
        single_caller: !o.breakdown,
        phase_timing: false,
        oneway_buffer: o.buffer(),
        coalesce_oneways: o.coalesces(),
    }
}

/// Run a throughput job (its `idl` operation when it has one).
pub fn run(o: &ThroughputJob, ctx: &RunContext) -> (Results, Option<Error>) {
    if let Some(idl) = &o.idl {
        let fill = |r: &mut Results| {
            let p = &mut r.params;
            o.budget().record(p);
            param(p, "nodelay", o.socket.nodelay);
            // How oneways went out (the shape applies them here too).
            oneway_params(p, o);
        };
        return crate::dynamic::bench::throughput(
            o,
            idl,
            o.budget(),
            o.on_error,
            single_caller(o),
            ctx,
            fill,
        );
    }
    // An agent's cases start at their gate's slots, one slot a case: its
    // points go in one piece.
    let slices = if ctx.gate.is_some() {
        1
    } else {
        o.slices.max(1)
    };
    session::run(
        o,
        Shape {
            phase_timing: o.breakdown,
            ..single_caller(o)
        },
        ctx,
        |r| {
            let p = &mut r.params;
            o.budget().record(p);
            param(p, "slices", slices);
            param(p, "reuse_request", o.reuse_request);
            param(p, "dynamic", o.dynamic);
            oneway_params(p, o);
            param(p, "nodelay", o.socket.nodelay);
            param(p, "sndbuf", o.socket.sndbuf);
            param(p, "rcvbuf", o.socket.rcvbuf);
            param(p, "order", format!("{:?}", o.target.order.byte_order()));
        },
        async |s: &Session, r: &mut Results| measure(o, slices, s, r).await,
    )
}

async fn measure(o: &ThroughputJob, slices: u32, s: &Session, r: &mut Results) -> Result<()> {
    let (types, modes) = (&o.types, &o.modes);
    let c = s
        .connect()
        .await
        .map_err(|e| fail!(Target, "connecting to the target: {e}"))?;
    let cs = c.options().char_set;
    let progress = &s.progress;
    // With a baseline, each raw-TCP point runs right before the cases it
    // is the baseline of (same mode and size), so a slow moment of a
    // shared machine moves both sides of a ratio; the table keeps the
    // usual order (mode, type, size), the raw points last.
    // Two raw points: the baseline, raw TCP written and waited for the
    // way our client and server do it (its ratio is GIOP's own cost),
    // and the limit, the fastest way this machine moves the bytes.
    // Over TLS, a raw TLS-over-TCP point follows them.
    if o.baseline {
        session::record_baseline_wait(s, r, o.baseline_target.as_deref(), true);
        if o.baseline_target.is_none() {
            let wait = session::raw_server_wait(s, false).name();
            param(&mut r.params, "limit_server_wait", wait);
        }
        if o.modes.contains(&CallMode::Oneway) {
            param(
                &mut r.params,
                "baseline_stream_writes",
                like_writes(o).name(),
            );
        }
    }
    let (_srv, mut raw_client) = match o.baseline {
        true => {
            let (srv, addr) = session::baseline_server(s, o.baseline_target.as_deref(), true)?;
            let rc = session::raw_client(addr, s)?.writing(like_writes(o));
            (srv, Some(rc))
        }
        false => (None, None),
    };
    let (_limit_srv, mut limit_client) = match o.baseline {
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
    // Each slice carries its share of the point's budget.
    // Slice k of a point sends until the point's bytes reach
    // (k+1)/slices of the total and lasts its share of the durations, so a
    // point bound by its total sends what it would in one go.
    let slice_budget = |k: u32, sent: u64| {
        let target = (u128::from(o.total) * u128::from(k + 1)).div_ceil(u128::from(slices));
        let total = (target as u64).saturating_sub(sent);
        // A slice with nothing left to send and no time to fill is
        // skipped (a call would be sent all the same).
        (total > 0 || !o.min_duration.is_zero()).then_some(Budget {
            total,
            min_duration: o.min_duration / slices,
            max_duration: o.max_duration / slices,
        })
    };
    let mut measured: Vec<(usize, Case)> = Vec::new();
    let mut raw_cases: Vec<Case> = Vec::new();
    let slot = |mode: usize, elem: usize, size: usize| {
        (mode * types.len() + elem) * o.sizes.0.len() + size
    };
    // The points of one mode and size: their raw baselines, then the types.
    #[derive(Clone, Copy)]
    enum Point {
        Raw,
        Limit,
        RawTls,
        Type(usize),
    }
    let mut group: Vec<Point> = Vec::new();
    if raw_client.is_some() {
        group.push(Point::Raw);
    }
    if limit_client.is_some() {
        group.push(Point::Limit);
    }
    if tls_client.is_some() {
        group.push(Point::RawTls);
    }
    group.extend((0..types.len()).map(Point::Type));
    let mut res = Ok(());
    'all: for (mi, &mode) in modes.iter().enumerate() {
        for (si, &size) in o.sizes.0.iter().enumerate() {
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
                        res = Err(Error::interrupted("interrupted"));
                        break;
                    }
                    let sent = acc[gi].iter().map(|c| c.bytes).sum();
                    let Some(b) = slice_budget(k, sent) else {
                        continue;
                    };
                    let out = match group[gi] {
                        Point::Raw => match &mut raw_client {
                            Some(rc) => raw_point(o, b, s, rc, mode, size, false).map(Some),
                            None => Ok(None),
                        },
                        Point::Limit => match &mut limit_client {
                            Some(rc) => raw_point(o, b, s, rc, mode, size, true).map(Some),
                            None => Ok(None),
                        },
                        Point::RawTls => match &mut tls_client {
                            Some(rc) => raw_point(o, b, s, rc, mode, size, false).map(Some),
                            None => Ok(None),
                        },
                        Point::Type(ei) => {
                            let elem = types[ei];
                            let label = format!("{} {elem} {}", mode.name(), format_size(size));
                            let before = r.cases.len();
                            let out = point(o, b, s, &c, elem, mode, size, cs, &label, r).await;
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
            let limit_slices = slice_mbps(|p| matches!(p, Point::Limit));
            let tls_slices = slice_mbps(|p| matches!(p, Point::RawTls));
            let (mut tcp_base, mut limit_base, mut tls_base) = (None, None, None);
            let mut typed = Vec::new();
            for (gi, slices) in acc.into_iter().enumerate() {
                let ratio = |base: &Option<Vec<f64>>| {
                    base.as_ref().and_then(|b| session::slice_ratio(&slices, b))
                };
                let to = [ratio(&tcp_slices), ratio(&limit_slices), ratio(&tls_slices)];
                let Some(case) = join_slices(slices)? else {
                    continue;
                };
                match group[gi] {
                    Point::Raw => {
                        tcp_base = Some(case.throughput_mbps);
                        raw_cases.push(case);
                    }
                    Point::Limit => {
                        limit_base = Some(case.throughput_mbps);
                        raw_cases.push(case);
                    }
                    Point::RawTls => {
                        tls_base = Some(case.throughput_mbps);
                        raw_cases.push(case);
                    }
                    Point::Type(ei) => typed.push((slot(mi, ei, si), case, to)),
                }
            }
            for (slot, mut case, [to_tcp, to_limit, to_tls]) in typed {
                if let (Some(v), Some(q)) = (tcp_base, to_tcp) {
                    session::throughput_baseline(&mut case, v, q);
                }
                if let (Some(v), Some(q)) = (limit_base, to_limit) {
                    session::throughput_limit(&mut case, v, q);
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
fn join_slices(slices: Vec<Case>) -> Result<Option<Case>> {
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
    o: &ThroughputJob,
    b: Budget,
    s: &Session,
    c: &BenchClient,
    elem: Elem,
    mode: CallMode,
    size: u64,
    cs: iiop_cdr::CharCodeSet,
    label: &str,
    r: &mut Results,
) -> Result<()> {
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
    let shared = s.gate.is_some();
    if !shared {
        c.reset()
            .await
            .map_err(|e| fail!(Target, "reset() before {label}: {e}"))?;
    }
    let mut breakdown = Breakdown::default();
    c.reset_phase_totals();
    if let Some(sp) = &s.phases {
        sp.reset();
    }
    crate::gate::case_start(s.gate.as_ref()).await;
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
    } = loops::send_loop(
        b,
        o.on_error,
        label,
        per_call,
        mode != CallMode::Oneway,
        async || {
            if o.breakdown {
                breakdown.call(c, &out, elem, mode).await
            } else {
                call_once(c, &snd, elem, mode).await
            }
        },
    )
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

/// How the baseline's raw stream writes its frames: as our client writes
/// its oneways. Each in a segment of its own (TCP_NODELAY) by default;
/// left to Nagle to join when ours are (`coalesce_oneways`, or TCP_NODELAY
/// off). With `oneway_buffer` the raw stream writes as many frames at a
/// time as ours do, with TCP_NODELAY as ours.
fn like_writes(o: &ThroughputJob) -> StreamWrites {
    if o.coalesces() || !o.socket.nodelay {
        StreamWrites::Joined
    } else {
        StreamWrites::Separate
    }
}

/// The raw-TCP (or, with a TLS client, raw TLS-over-TCP) point that is
/// a baseline of `mode` at `size`: a stream for oneways, a ping-pong
/// for twoways (an empty ack) and echoes. `limit`: the fastest way (the
/// frames joined by the kernel, a server that polls), named `… limit`;
/// else written and waited for as the client passes it.
#[allow(clippy::too_many_arguments)]
fn raw_point(
    o: &ThroughputJob,
    b: Budget,
    s: &Session,
    rc: &mut crate::rawtcp::RawClient,
    mode: CallMode,
    size: u64,
    limit: bool,
) -> Result<Case> {
    let watch = s.watch_case();
    let (pattern, run) = match mode {
        CallMode::Oneway => (
            "stream",
            session::raw_stream(
                rc,
                size,
                o.buffer(),
                b.total,
                b.min_duration,
                b.max_duration,
            )?,
        ),
        CallMode::Twoway => (
            "pingpong-ack",
            session::raw_pingpong(rc, size, false, b.min_duration)?,
        ),
        CallMode::Echo => (
            "pingpong-echo",
            session::raw_pingpong(rc, size, true, b.min_duration)?,
        ),
    };
    let mut c = if mode == CallMode::Oneway {
        crate::bench::tcp_baseline::stream_case(&run, size)
    } else {
        crate::bench::tcp_baseline::pingpong_case(&run, size)
    };
    let wire = if rc.is_tls() { "tls-tcp" } else { "tcp" };
    let role = if limit { " limit" } else { "" };
    c.name = format!("{wire} {pattern}{role} {}", format_size(size));
    c.params.mode = format!("{wire}-{pattern}");
    if limit {
        param(&mut c.params.extra, "limit", true);
    }
    if mode == CallMode::Oneway {
        param(&mut c.params.extra, "stream_writes", rc.writes().name());
    }
    // (Its frames written as the buffered oneways beside it are.)
    note_buffer(&mut c, o, mode);
    watch.finish(&mut c);
    Ok(c)
}

/// A buffered oneway case (and its raw stream) records the buffer: it is
/// another case than an unbuffered one, and merge and compare keep them
/// apart.
fn note_buffer(c: &mut Case, o: &ThroughputJob, mode: CallMode) {
    if mode == CallMode::Oneway {
        oneway_params(&mut c.params.extra, o);
    }
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
