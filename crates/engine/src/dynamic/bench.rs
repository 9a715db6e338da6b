//! Latency and throughput jobs whose `idl` names an operation of any IDL
//! on any server: measured with the benchmarks' machinery (session,
//! placement, HDR histograms, open/closed loop, results). The arguments
//! (from `args` JSON and `gen`) are marshalled ONCE per connection into a
//! [`Prepared`] request that is resent with only its request id patched;
//! replies are only checked for NO_EXCEPTION unless `check_reply` asks to
//! decode them. The latency and throughput modules hand over their job
//! and the loop's numbers; this module knows neither job's type.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use iiop_bench_idl::client::{BenchClient, BenchError};
use iiop_cdr::Writer;
use iiop_giop::ResponseMode;
use iiop_transport::client::Prepared;

use super::{IdlOp, OpSig};
use crate::bench::loops::{self, Budget, Invoke, Loop, Sent};
use crate::bench::session::{self, BenchJob, Session, Shape};
use crate::error::{bail, fail, Error, Result};
use crate::options::OnError;
use crate::results::{param, Case, CaseParams, CpuFigures, Results};
use crate::run_context::RunContext;
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
    /// Load the IDL, find the operation, build its arguments.
    pub fn new(o: &IdlOp) -> Result<IdlCall> {
        let spec = super::load_spec(&o.idl, &o.include)?;
        let found = super::find_op(&spec, &o.op)?;
        let args_json = o.args.as_ref().map(|a| a.value()).transpose()?;
        o.gen.validate()?;
        let args = super::arguments(&found.sig, args_json.as_ref(), &spec, Some(&o.gen))?;
        let mut buf = BytesMut::new();
        super::marshal(
            &found.sig,
            &args,
            &mut Writer::new(&mut buf, iiop_cdr::ByteOrder::NATIVE),
        )
        .map_err(|e| Error::job(format!("`args`: {e}")))?;
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
    pub async fn prepare(&self, c: &BenchClient) -> Result<Prepared> {
        c.prepare(&self.sig.name, self.response(), |w| {
            super::marshal(&self.sig, &self.args, w)
        })
        .await
        .map_err(|e| fail!(Target, "preparing {}: {e}", self.label()))
    }
}

/// One call of a prepared request; with `check`, the reply is decoded.
async fn call(c: &BenchClient, p: &Prepared, check: Option<&OpSig>) -> Result<(), BenchError> {
    let op = check.map_or("", |sig| sig.name.as_str());
    c.send_prepared_decoded(p, op, |r| match check {
        None => Ok(()),
        Some(sig) => {
            let mut scope = iiop_cdr::value::ValueScope::default();
            if !sig.returns_void() {
                iiop_cdr::Value::decode_in(&sig.result, r, &mut scope)?;
            }
            for p in sig.outputs() {
                iiop_cdr::Value::decode_in(&p.tc, r, &mut scope)?;
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

/// The IDL's parameters in a run's params.
fn idl_params(p: &mut BTreeMap<String, serde_json::Value>, idl: &IdlOp) {
    param(p, "idl", idl.idl.display().to_string());
    param(p, "gen", idl.gen.to_string());
    param(p, "check_reply", idl.check_reply);
}

/// A latency job on the operation `idl`: `lo` says how each point is
/// measured; `job`'s frame (target, sockets, placement) is the session's.
pub fn latency<J: BenchJob>(
    job: &J,
    idl: &IdlOp,
    lo: Loop,
    ctx: &RunContext,
) -> (Results, Option<Error>) {
    session::run(
        job,
        Shape {
            single_caller: lo.single_caller(),
            ..Shape::default()
        },
        ctx,
        |r| {
            lo.record(&mut r.params, job.socket().nodelay);
            idl_params(&mut r.params, idl);
        },
        async |s: &Session, r: &mut Results| latency_measure(idl, &lo, s, r).await,
    )
}

async fn connect_callers(s: &Session, n: usize, ic: &IdlCall) -> Result<Vec<Caller>> {
    let check = ic.check_reply.then(|| Arc::new(ic.sig.clone()));
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let c = s
            .connect()
            .await
            .map_err(|e| fail!(Target, "connecting to the target: {e}"))?;
        let p = Arc::new(ic.prepare(&c).await?);
        out.push(Caller {
            c,
            p,
            check: check.clone(),
        });
    }
    Ok(out)
}

async fn latency_measure(idl: &IdlOp, lo: &Loop, s: &Session, r: &mut Results) -> Result<()> {
    let ic = IdlCall::new(idl)?;
    let callers = connect_callers(s, lo.connections, &ic).await?;
    let label = format!("idl {} {}B", ic.label(), ic.body_bytes);
    let params = CaseParams {
        ty: ic.label(),
        size: ic.body_bytes,
        mode: if ic.sig.oneway { "idl-oneway" } else { "idl" }.into(),
        extra: BTreeMap::new(),
    };
    let pb = s.progress.case(&label);
    let (mut case, first_error) = loops::point(
        lo,
        s.gate.as_ref(),
        &callers,
        &label,
        pb,
        params,
        ic.body_bytes,
    )
    .await?;
    param(
        &mut case.extra,
        "request_message_bytes",
        callers[0].p.message().len(),
    );
    r.cases.push(case);
    if let (OnError::Stop, Some(e)) = (lo.on_error, first_error) {
        bail!(Target, "{label}: {e}");
    }
    Ok(())
}

/// A throughput job on the operation `idl`: the operation sent back to
/// back (oneway or twoway as the IDL declares it) until `budget` is
/// spent; `fill_params` records the job's own parameters. A oneway run
/// ends with `_non_existent` on the same connection, whose reply means
/// the server has read every oneway before it (receiver-side time).
pub fn throughput<J: BenchJob>(
    job: &J,
    idl: &IdlOp,
    budget: Budget,
    on_error: OnError,
    shape: Shape,
    ctx: &RunContext,
    fill_params: impl FnOnce(&mut Results),
) -> (Results, Option<Error>) {
    session::run(
        job,
        shape,
        ctx,
        |r| {
            fill_params(r);
            idl_params(&mut r.params, idl);
        },
        async |s: &Session, r: &mut Results| throughput_measure(idl, budget, on_error, s, r).await,
    )
}

async fn throughput_measure(
    idl: &IdlOp,
    budget: Budget,
    on_error: OnError,
    s: &Session,
    r: &mut Results,
) -> Result<()> {
    let ic = IdlCall::new(idl)?;
    let callers = connect_callers(s, 1, &ic).await?;
    let c = &callers[0];
    let mode = if ic.sig.oneway { "oneway" } else { "twoway" };
    let label = format!("{mode} {} {}B", ic.label(), ic.body_bytes);
    let pb = s.progress.case(&label);
    let ctrl_c = crate::bench::CloseOnInterrupt::closing(&c.c);
    crate::gate::case_start(s.gate.as_ref()).await;
    let cpu0 = CpuTime::thread_now();
    let start = Instant::now();
    let Sent {
        calls,
        bytes,
        errors,
        lat,
        failure,
    } = loops::send_loop(
        budget,
        on_error,
        &label,
        ic.body_bytes,
        !ic.sig.oneway,
        async || c.invoke().await,
    )
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
