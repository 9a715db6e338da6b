//! `bench latency --idl FILE --op Interface::op` and `bench throughput
//! --idl …`: any operation of any server measured with the benchmarks'
//! machinery (session, placement, HDR histograms, open/closed loop,
//! results). The arguments (from `--args` JSON and `--gen`) are
//! marshalled ONCE per connection into a [`Prepared`] request that is
//! resent with only its request id patched; replies are only checked for
//! NO_EXCEPTION unless `--check-reply` asks to decode them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use iiop_bench_idl::client::{BenchClient, BenchError};
use iiop_cdr::Writer;
use iiop_giop::ResponseMode;
use iiop_transport::client::Prepared;

use super::gen::GenSpec;
use super::{IdlOpts, OpSig};
use crate::bench::latency::{self, Invoke, LatencyOpts};
use crate::bench::session::{self, Session};
use crate::bench::throughput::{self, send_loop, Sent, ThroughputOpts};
use crate::bench::OnError;
use crate::context::param;
use crate::results::{Case, CaseParams, CpuFigures, Results};
use crate::sysinfo::CpuTime;

/// The operation with its arguments, ready to marshal.
#[derive(Debug)]
pub struct IdlCall {
    pub interface: String,
    pub sig: OpSig,
    pub args: Vec<iiop_cdr::Value>,
    /// Bytes of the marshalled arguments (8-aligned start).
    pub body_bytes: u64,
    pub check_reply: bool,
}

impl IdlCall {
    /// Load the IDL, find `op`, build its arguments.
    pub fn new(o: &IdlOpts, op: &str) -> anyhow::Result<IdlCall> {
        let file = o
            .idl
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("--idl FILE is needed"))?;
        let spec = super::load_spec(file, &o.include)?;
        let found = super::find_op(&spec, op)?;
        let args_json = o.args.as_deref().map(super::read_json_arg).transpose()?;
        let gen = GenSpec::parse(&o.gen)?;
        let args = super::arguments(&found.sig, args_json.as_ref(), &spec, Some(&gen))?;
        let mut buf = BytesMut::new();
        super::marshal(
            &found.sig,
            &args,
            &mut Writer::new(&mut buf, iiop_cdr::ByteOrder::NATIVE),
        )?;
        Ok(IdlCall {
            interface: found.interface,
            sig: found.sig,
            args,
            body_bytes: buf.len() as u64,
            check_reply: o.check_reply,
        })
    }

    /// `Interface::op`.
    pub fn label(&self) -> String {
        format!("{}::{}", self.interface, self.sig.name)
    }

    fn response(&self) -> ResponseMode {
        if self.sig.oneway {
            ResponseMode::Oneway
        } else {
            ResponseMode::Twoway
        }
    }

    /// The request, marshalled once for connection `c`.
    pub async fn prepare(&self, c: &BenchClient) -> anyhow::Result<Prepared> {
        c.prepare(&self.sig.name, self.response(), |w| {
            super::marshal(&self.sig, &self.args, w)
        })
        .await
        .map_err(|e| anyhow::anyhow!("preparing {}: {e}", self.label()))
    }
}

/// One call of a prepared request; with `check`, the reply is decoded.
async fn call(c: &BenchClient, p: &Prepared, check: Option<&OpSig>) -> Result<(), BenchError> {
    let op = check.map_or("", |sig| sig.name.as_str());
    c.send_prepared_decoded(p, op, |r| match check {
        None => Ok(()),
        Some(sig) => {
            if !sig.returns_void() {
                iiop_cdr::Value::decode(&sig.result, r)?;
            }
            for p in sig.outputs() {
                iiop_cdr::Value::decode(&p.tc, r)?;
            }
            r.expect_body_end()
        }
    })
    .await
    .map(drop)
}

/// Per-connection state shared by its callers.
#[derive(Clone)]
struct Caller {
    c: BenchClient,
    p: Arc<Prepared>,
    check: Option<Arc<OpSig>>,
}

impl Invoke for Caller {
    async fn invoke(&self) -> Result<(), BenchError> {
        call(&self.c, &self.p, self.check.as_deref()).await
    }

    fn close(&self) {
        self.c.close();
    }
}

/// `bench latency --idl`: the operation `op` instead of bench.idl's.
pub fn latency(o: &LatencyOpts, idl: &IdlOpts, op: &str) -> (Results, Option<anyhow::Error>) {
    session::run(
        "latency",
        &o.target,
        &o.socket,
        &o.placement,
        latency::single_caller(o),
        |r| {
            latency::loop_params(o, r);
            let p = &mut r.params;
            param(p, "idl", idl.idl.as_ref().map(|f| f.display().to_string()));
            param(p, "gen", &idl.gen);
            param(p, "check_reply", idl.check_reply);
        },
        async |s: &Session, r: &mut Results| latency_measure(o, idl, op, s, r).await,
    )
}

async fn connect_callers(s: &Session, n: usize, ic: &IdlCall) -> anyhow::Result<Vec<Caller>> {
    let check = ic.check_reply.then(|| Arc::new(ic.sig.clone()));
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let c = s
            .connect()
            .await
            .map_err(|e| anyhow::anyhow!("connecting to the target: {e}"))?;
        let p = Arc::new(ic.prepare(&c).await?);
        out.push(Caller {
            c,
            p,
            check: check.clone(),
        });
    }
    Ok(out)
}

async fn latency_measure(
    o: &LatencyOpts,
    idl: &IdlOpts,
    op: &str,
    s: &Session,
    r: &mut Results,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        o.connections >= 1 && o.in_flight >= 1,
        "--connections and --in-flight must be at least 1"
    );
    if let Some(rate) = o.rate {
        anyhow::ensure!(rate > 0.0 && rate.is_finite(), "--rate must be positive");
    }
    let ic = IdlCall::new(idl, op)?;
    let callers = connect_callers(s, o.connections, &ic).await?;
    let label = format!("idl {} {}B", ic.label(), ic.body_bytes);
    let params = CaseParams {
        ty: ic.label(),
        size: ic.body_bytes,
        mode: if ic.sig.oneway { "idl-oneway" } else { "idl" }.into(),
        extra: BTreeMap::new(),
    };
    let pb = o.progress.case(&label);
    let (mut case, first_error) =
        latency::point(o, &callers, &label, pb, params, ic.body_bytes).await?;
    param(
        &mut case.extra,
        "request_message_bytes",
        callers[0].p.message().len(),
    );
    r.cases.push(case);
    if let (OnError::Stop, Some(e)) = (o.on_error, first_error) {
        anyhow::bail!("{label}: {e}");
    }
    Ok(())
}

/// `bench throughput --idl`: the operation sent back to back (oneway or
/// twoway as the IDL declares it) until `--total` bytes of arguments and
/// `--min-duration` are reached. A oneway run ends with `_non_existent`
/// on the same connection, whose reply means the server has read every
/// oneway before it (receiver-side time).
pub fn throughput(o: &ThroughputOpts, idl: &IdlOpts, op: &str) -> (Results, Option<anyhow::Error>) {
    session::run(
        "throughput",
        &o.target,
        &o.socket,
        &o.placement,
        throughput::single_caller(o),
        |r| {
            let p = &mut r.params;
            param(p, "total", o.total);
            param(p, "min_duration_s", o.min_duration.as_secs_f64());
            param(p, "max_duration_s", o.max_duration.as_secs_f64());
            param(p, "nodelay", o.socket.nodelay);
            // How oneways went out (the shape above applies them here too).
            throughput::oneway_params(p, o);
            param(p, "idl", idl.idl.as_ref().map(|f| f.display().to_string()));
            param(p, "gen", &idl.gen);
            param(p, "check_reply", idl.check_reply);
        },
        async |s: &Session, r: &mut Results| throughput_measure(o, idl, op, s, r).await,
    )
}

async fn throughput_measure(
    o: &ThroughputOpts,
    idl: &IdlOpts,
    op: &str,
    s: &Session,
    r: &mut Results,
) -> anyhow::Result<()> {
    let ic = IdlCall::new(idl, op)?;
    let callers = connect_callers(s, 1, &ic).await?;
    let c = &callers[0];
    let mode = if ic.sig.oneway { "oneway" } else { "twoway" };
    let label = format!("{mode} {} {}B", ic.label(), ic.body_bytes);
    let pb = o.progress.case(&label);
    let ctrl_c = crate::bench::CloseOnInterrupt::closing(&c.c);
    crate::gate::case_start(o.target.gate.as_ref()).await;
    let cpu0 = CpuTime::thread_now();
    let start = Instant::now();
    let Sent {
        calls,
        bytes,
        errors,
        lat,
        failure,
    } = send_loop(o, &label, ic.body_bytes, !ic.sig.oneway, async || {
        c.invoke().await
    })
    .await;
    drop(ctrl_c);
    let send_secs = start.elapsed().as_secs_f64();
    let synced = if ic.sig.oneway && failure.is_none() {
        c.c.call("_non_existent", |_| Ok(())).await.is_ok()
    } else {
        false
    };
    let recv_secs = start.elapsed().as_secs_f64();
    let cpu = CpuTime::thread_now().since(cpu0);
    pb.done();
    let mut case = Case {
        name: label,
        params: CaseParams {
            ty: ic.label(),
            size: ic.body_bytes,
            mode: mode.into(),
            extra: BTreeMap::new(),
        },
        calls,
        bytes,
        seconds: send_secs,
        calls_per_sec: calls as f64 / send_secs.max(1e-9),
        throughput_mbps: bytes as f64 * 8.0 / send_secs.max(1e-9) / 1e6,
        errors,
        ..Default::default()
    };
    if synced {
        case.receiver_throughput_mbps = Some(bytes as f64 * 8.0 / recv_secs.max(1e-9) / 1e6);
        param(&mut case.extra, "receiver_seconds", recv_secs);
    }
    if !lat.is_empty() {
        case.latency_us = Some(lat.summary());
        case.histogram = Some(lat.to_base64());
    }
    let mib = bytes as f64 / (1u64 << 20) as f64;
    case.cpu = Some(CpuFigures {
        client_user_s: cpu.user,
        client_sys_s: cpu.sys,
        client_s_per_mib: if mib > 0.0 { cpu.total() / mib } else { 0.0 },
        server_s: None,
    });
    param(&mut case.params.extra, "path", "idl-prepared");
    r.cases.push(case);
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
