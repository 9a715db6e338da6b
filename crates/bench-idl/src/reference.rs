//! Our reference server for bench.idl: a [`Handler`] for the GIOP
//! transport, with two skeletons that behave identically —
//! [`Skeleton::Typed`] decodes arguments into serde types,
//! [`Skeleton::Dynamic`] decodes them as [`Value`]s driven by run-time
//! TypeCodes (seed 000's DSI) — and [`start`], which binds, builds the IORs
//! and corbaloc URLs, and serves on a runtime of its own.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use iiop_cdr::{CharCodeSet, Reader, TypeCode, Value, Writer};
use iiop_giop::exception::{Completion, MINOR_MARSHAL_BAD_BODY};
use iiop_giop::ior::{tls_only_profile, CodeSetsSource, IiopProfile, Ior, IorBuilder};
use iiop_giop::SystemException;
use iiop_transport::server::{
    arguments_end_body, handle_builtin, AsyncReply, CallBack, ConnectionSummary, Dispatch, Handler,
    LocateOutcome, NoCallBack, Outcome, RequestContext,
};

use crate::bench::counters::Counters;
use crate::bench::elements::{CallMode, Elem};
use crate::bench::ops::{Object, Op, SINGLES};
use crate::bench::types::{seq_typecode, Cd, Payload, StatsWire};
use crate::bench::work::{self, Dist, Kind};

mod anys;
mod values;

/// Which skeleton decodes arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skeleton {
    /// serde types compiled from bench.idl (the static skeleton).
    Typed,
    /// Values decoded from TypeCodes at run time (the DSI analogue).
    Dynamic,
}

impl Skeleton {
    /// `typed` / `dynamic`.
    pub fn name(self) -> &'static str {
        match self {
            Skeleton::Typed => "typed",
            Skeleton::Dynamic => "dynamic",
        }
    }
}

/// How a server in forwarding mode answers requests and LocateRequests on
/// the short object keys (`Bench`, `Dispatch50`, `Single0` …), the way
/// TAO's IORTable and Yoko's BootManager do: with a forward to the long,
/// POA-style key ([`Object::long_key`]), which it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forwarding {
    /// LOCATION_FORWARD_PERM / OBJECT_FORWARD_PERM (GIOP 1.2; plain
    /// forwards to 1.0/1.1 peers) instead of LOCATION_FORWARD /
    /// OBJECT_FORWARD.
    pub permanent: bool,
    /// Forward to this `host:port` (another server of ours) instead of our
    /// own address.
    pub to: Option<(String, u16)>,
}

/// bench.idl's objects served over GIOP.
#[derive(Debug)]
pub struct BenchHandler {
    counters: Arc<Counters>,
    skeleton: Skeleton,
    /// Forwarding mode: short keys are answered with a forward.
    forwarding: Option<Forwarding>,
    /// Where we listen, for the IORs `get_single` returns.
    addr: OnceLock<(String, u16)>,
    /// Where the IORs we hand out carry TAG_CODE_SETS (in the IIOP
    /// profile, or in a TAG_MULTIPLE_COMPONENTS profile as Combat does:
    /// clients must find them in either place).
    code_sets_in: CodeSetsSource,
    /// TLS only: `Some(client_certificates)`.
    tls: Option<bool>,
    /// Per-connection counters of the connections that ended (the most
    /// recent [`MAX_CONNECTION_RECORDS`]), printed at shutdown.
    closed: std::sync::Mutex<std::collections::VecDeque<ConnectionSummary>>,
}

/// How many ended connections' counters are kept.
pub const MAX_CONNECTION_RECORDS: usize = 10_000;

fn marshal_error() -> Dispatch {
    Dispatch::Done(Outcome::System(SystemException::marshal(
        MINOR_MARSHAL_BAD_BODY,
        Completion::No,
    )))
}

/// Arguments that do not decode: BAD_PARAM minor 23 (the OMG's) for wide
/// characters on a connection that negotiated no wchar code set (what
/// omniORB raises, and a client hit by the code-set negotiation race
/// meets), MARSHAL otherwise.
fn decode_error(e: &iiop_cdr::CdrError) -> Dispatch {
    match e {
        iiop_cdr::CdrError::WcharNotNegotiated { .. } => {
            Dispatch::Done(Outcome::System(SystemException::bad_param(
                iiop_giop::exception::MINOR_BAD_PARAM_WCHAR_NOT_NEGOTIATED,
                Completion::No,
            )))
        }
        _ => marshal_error(),
    }
}

fn typecodes() -> &'static [TypeCode] {
    static TCS: OnceLock<Vec<TypeCode>> = OnceLock::new();
    TCS.get_or_init(|| Elem::ALL.iter().map(|&e| seq_typecode(e)).collect())
}

fn typecode(elem: Elem) -> &'static TypeCode {
    &typecodes()[elem as usize]
}

/// Payload bytes of a dynamically decoded sequence, by bench.idl's rules,
/// read straight from the decoded representation (no element copies: this
/// runs on every call of the dynamic skeleton).
pub fn value_bytes(elem: Elem, v: &Value, char_set: CharCodeSet) -> u64 {
    let slen = |s: &str| match char_set {
        CharCodeSet::Latin1 => s.chars().count() as u64,
        CharCodeSet::Utf8 => s.len() as u64,
    };
    let string = |v: &Value| match v {
        Value::String(s) => 4 + slen(s) + 1,
        _ => 0,
    };
    if let Some(stride) = elem.fixed_stride() {
        return v.len().unwrap_or(0) as u64 * stride;
    }
    match (elem, v) {
        (Elem::String, Value::Seq(xs)) => xs.iter().map(string).sum(),
        (Elem::WString, Value::Seq(xs)) => xs
            .iter()
            .map(|x| match x {
                Value::WString(s) => 4 + 2 * s.encode_utf16().count() as u64,
                _ => 0,
            })
            .sum(),
        // MyStruct { boolean b; string s; long l; } decodes by column.
        (Elem::MyStruct, Value::StructSeq(cols)) => match cols.get(1) {
            Some(Value::Seq(ss)) => ss.iter().map(|s| 1 + string(s) + 4).sum(),
            _ => 0,
        },
        (Elem::Variant, Value::Seq(xs)) => xs
            .iter()
            .map(|x| match x {
                Value::Union { value, .. } => {
                    4 + match value.as_ref() {
                        Value::Long(_) => 4,
                        Value::Double(_) => 8,
                        s @ Value::String(_) => string(s),
                        _ => 1,
                    }
                }
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

impl BenchHandler {
    /// A handler with fresh counters.
    pub fn new(skeleton: Skeleton) -> Self {
        BenchHandler {
            counters: Arc::new(Counters::new()),
            skeleton,
            forwarding: None,
            addr: OnceLock::new(),
            code_sets_in: CodeSetsSource::IiopProfile,
            tls: None,
            closed: Default::default(),
        }
    }

    /// Serving TLS only (`Some(client_certificates)`): every IOR handed
    /// out says so as omniORB's do — plain port 0, the TLS port in
    /// TAG_SSL_SEC_TRANS — which omniORB's and JacORB's clients follow.
    pub fn with_tls(mut self, tls: Option<bool>) -> Self {
        self.tls = tls;
        self
    }

    /// Whether it serves TLS (`Some(client_certificates)`).
    pub fn tls(&self) -> Option<bool> {
        self.tls
    }

    /// An IOR of ours: one IIOP 1.2 profile at `host:port`, or for a TLS
    /// server at port 0 with the TLS port in TAG_SSL_SEC_TRANS.
    fn ior_at(&self, type_id: &str, host: &str, port: u16, key: Vec<u8>) -> Ior {
        let b = Ior::builder(type_id).code_sets_in(self.code_sets_in);
        served_ior(b, host, port, key, self.tls)
    }

    /// Put TAG_CODE_SETS of every IOR handed out in `at`.
    pub fn with_code_sets_in(mut self, at: CodeSetsSource) -> Self {
        self.code_sets_in = at;
        self
    }

    /// The same handler in forwarding mode: requests on short keys are
    /// answered with a forward (a oneway to a short key is lost, as with
    /// TAO), and the references it hands out carry the long keys.
    pub fn with_forwarding(mut self, forwarding: Option<Forwarding>) -> Self {
        self.forwarding = forwarding;
        self
    }

    /// Forwarding mode, if on.
    pub fn forwarding(&self) -> Option<&Forwarding> {
        self.forwarding.as_ref()
    }

    /// Where a request on `key` is forwarded, in forwarding mode: the IOR
    /// of the same object under its long key, and whether permanently.
    fn forward_for(&self, key: &[u8]) -> Option<(Ior, bool)> {
        let f = self.forwarding.as_ref()?;
        if !Object::is_short_key(key) {
            return None;
        }
        let obj = Object::from_key(key)?;
        let (h, p) = match &f.to {
            Some((h, p)) => (h.clone(), *p),
            None => self.addr.get()?.clone(),
        };
        // A forward elsewhere (`--forward-to`) is plain, as given.
        let ior = match &f.to {
            Some(_) => Ior::builder(obj.repo_id())
                .iiop(&h, p, obj.long_key(), &[])
                .build(),
            None => self.ior_at(obj.repo_id(), &h, p, obj.long_key()),
        };
        Some((ior, f.permanent))
    }

    /// The shared counters (printed at shutdown).
    pub fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// Counters of the connections that have ended, oldest first.
    pub fn connections(&self) -> Vec<ConnectionSummary> {
        self.closed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// Which skeleton decodes arguments.
    pub fn skeleton(&self) -> Skeleton {
        self.skeleton
    }

    /// Tell the handler where it listens (needed by `get_single`).
    pub fn set_address(&self, host: &str, port: u16) {
        let _ = self.addr.set((host.to_string(), port));
    }

    /// The IOR of `obj` at our address (under its long key in forwarding
    /// mode, as TAO's IORs carry POA keys).
    pub fn ior_of(&self, obj: Object) -> Option<Ior> {
        let (h, p) = self.addr.get()?;
        let key = if self.forwarding.is_some() {
            obj.long_key()
        } else {
            obj.key()
        };
        Some(self.ior_at(obj.repo_id(), h, *p, key))
    }

    fn payload(
        &self,
        ctx: &RequestContext<'_>,
        elem: Elem,
        mode: CallMode,
        body: &mut Reader<'_>,
        reply: &mut Writer<'_>,
    ) -> Dispatch {
        let cs = ctx.options.char_set;
        match self.skeleton {
            Skeleton::Typed => {
                let p = match Payload::decode(elem, body) {
                    Ok(p) => p,
                    Err(e) => return decode_error(&e),
                };
                if !arguments_end_body(body) {
                    return marshal_error();
                }
                self.counters.bytes(p.counted_bytes(cs));
                if mode == CallMode::Echo && p.encode(reply).is_err() {
                    return marshal_error();
                }
            }
            Skeleton::Dynamic => {
                let tc = typecode(elem);
                let v = match Value::decode(tc, body) {
                    Ok(v) => v,
                    Err(e) => return decode_error(&e),
                };
                if !arguments_end_body(body) {
                    return marshal_error();
                }
                self.counters.bytes(value_bytes(elem, &v, cs));
                if mode == CallMode::Echo && v.encode(tc, reply).is_err() {
                    return marshal_error();
                }
            }
        }
        Dispatch::Done(Outcome::Reply)
    }

    fn pass(&self, ctx: &RequestContext<'_>, op: Op, body: &mut Reader<'_>) -> Dispatch {
        let cs = ctx.options.char_set;
        let mut total = 0u64;
        let decoded: Result<(), iiop_cdr::CdrError> = (|| {
            match op {
                Op::PassCd => {
                    let v: Vec<Cd> = iiop_cdr::from_reader(body)?;
                    total += v.len() as u64 * 16;
                }
                Op::PassBoth | Op::PassChars => {
                    let c = Payload::decode(Elem::Char, body)?;
                    total += c.counted_bytes(cs);
                    if op == Op::PassBoth {
                        total += Payload::decode(Elem::Double, body)?.counted_bytes(cs);
                    }
                }
                _ => total += Payload::decode(Elem::Double, body)?.counted_bytes(cs),
            }
            Ok(())
        })();
        if decoded.is_err() || !arguments_end_body(body) {
            return marshal_error();
        }
        self.counters.bytes(total);
        Dispatch::Done(Outcome::Reply)
    }

    fn work(
        &self,
        body: &mut Reader<'_>,
        reply: &mut Writer<'_>,
        ctx: &RequestContext<'_>,
    ) -> Dispatch {
        let args = (|| {
            Ok::<_, iiop_cdr::CdrError>((body.read_f64()?, body.read_u32()?, body.read_u32()?))
        })();
        let Ok((us, dist, kind)) = args else {
            return marshal_error();
        };
        if !arguments_end_body(body) {
            return marshal_error();
        }
        let (Some(dist), Some(kind)) = (Dist::from_index(dist), Kind::from_index(kind)) else {
            return Dispatch::Done(Outcome::System(SystemException::bad_param(
                iiop_giop::exception::omg_minor(25),
                Completion::No,
            )));
        };
        let d = work::plan(us, dist);
        match kind {
            Kind::Spin => {
                let t = Instant::now();
                work::spin(d);
                reply.write_f64(t.elapsed().as_secs_f64() * 1e6);
                Dispatch::Done(Outcome::Reply)
            }
            Kind::Sleep => {
                let order = ctx.reply_order;
                Dispatch::Async(Box::pin(async move {
                    let t = Instant::now();
                    tokio::time::sleep(d).await;
                    let mut buf = bytes::BytesMut::with_capacity(8);
                    Writer::new(&mut buf, order).write_f64(t.elapsed().as_secs_f64() * 1e6);
                    AsyncReply {
                        outcome: Outcome::Reply,
                        body: buf.freeze(),
                    }
                }))
            }
        }
    }
}

impl Handler for BenchHandler {
    fn handle(
        &self,
        ctx: &RequestContext<'_>,
        body: &mut Reader<'_>,
        reply: &mut Writer<'_>,
    ) -> Dispatch {
        if let Some((ior, permanent)) = self.forward_for(ctx.object_key) {
            return Dispatch::Done(if permanent {
                Outcome::ForwardPerm(ior)
            } else {
                Outcome::Forward(ior)
            });
        }
        let Some(obj) = Object::from_key(ctx.object_key) else {
            return Dispatch::Done(Outcome::System(SystemException::unknown_object()));
        };
        let Some(op) = obj.op(ctx.operation) else {
            return Dispatch::Done(Outcome::System(SystemException::unknown_operation()));
        };
        match op {
            Op::IsA | Op::NonExistent => {
                return handle_builtin(ctx, body, reply, &[obj.repo_id()])
                    .unwrap_or_else(marshal_error)
            }
            Op::Interface => {
                return Dispatch::Done(Outcome::System(SystemException::no_implement(
                    iiop_giop::exception::omg_minor(3),
                    Completion::No,
                )))
            }
            Op::RepositoryId if !arguments_end_body(body) => return marshal_error(),
            Op::RepositoryId => {
                return match reply.write_string(obj.repo_id()) {
                    Ok(()) => Dispatch::Done(Outcome::Reply),
                    Err(_) => marshal_error(),
                }
            }
            _ => {}
        }
        if obj == Object::Perf && !matches!(op, Op::GetStats | Op::Reset) {
            self.counters.call(op.is_oneway());
        }
        // Operations without arguments: the body must hold nothing but
        // padding (those with arguments check after decoding them).
        if matches!(op, Op::Ping | Op::Noop(_) | Op::Reset | Op::GetStats)
            && !arguments_end_body(body)
        {
            return marshal_error();
        }
        match op {
            Op::Ping | Op::Noop(_) => Dispatch::Done(Outcome::Reply),
            Op::Reset => {
                self.counters.reset();
                Dispatch::Done(Outcome::Reply)
            }
            Op::GetStats => {
                let s = self.counters.snapshot();
                let w = StatsWire {
                    calls: s.calls,
                    oneways: s.oneways,
                    bytes: s.bytes,
                    cpu_seconds: s.cpu_seconds,
                    last_mark: s.last_mark,
                    mark_disorder: s.mark_disorder,
                };
                match iiop_cdr::to_writer(reply, &w) {
                    Ok(()) => Dispatch::Done(Outcome::Reply),
                    Err(_) => marshal_error(),
                }
            }
            Op::Mark => match body.read_u64() {
                Ok(_) if !arguments_end_body(body) => marshal_error(),
                Ok(n) => {
                    self.counters.mark(n);
                    Dispatch::Done(Outcome::Reply)
                }
                Err(_) => marshal_error(),
            },
            Op::Work => self.work(body, reply, ctx),
            Op::GetSingle => {
                let Ok(i) = body.read_u32() else {
                    return marshal_error();
                };
                if !arguments_end_body(body) {
                    return marshal_error();
                }
                if i >= SINGLES {
                    return Dispatch::Done(Outcome::System(SystemException::bad_param(
                        iiop_giop::exception::omg_minor(1),
                        Completion::No,
                    )));
                }
                match self.ior_of(Object::Single(i)).map(|ior| ior.encode(reply)) {
                    Some(Ok(())) => Dispatch::Done(Outcome::Reply),
                    _ => Dispatch::Done(Outcome::System(SystemException::internal(
                        iiop_giop::exception::VMCID_IIOPBENCH | 4,
                        Completion::No,
                    ))),
                }
            }
            Op::PassCd | Op::PassBoth | Op::PassChars | Op::PassDoubles => self.pass(ctx, op, body),
            Op::EchoNode | Op::EchoNodes | Op::EchoBox | Op::SameNode => {
                let done = match self.skeleton {
                    Skeleton::Typed => values::typed(op, body, reply),
                    Skeleton::Dynamic => values::dynamic(op, body, reply),
                };
                match done {
                    Ok(()) => Dispatch::Done(Outcome::Reply),
                    Err(_) => marshal_error(),
                }
            }
            Op::RaiseUser | Op::EchoAny => {
                match anys::dispatch(self.skeleton == Skeleton::Typed, op, body, reply) {
                    Ok(outcome) => Dispatch::Done(outcome),
                    Err(_) => marshal_error(),
                }
            }
            Op::Payload(elem, mode) => self.payload(ctx, elem, mode, body, reply),
            Op::CallBack => call_back(ctx, body),
            Op::IsA | Op::NonExistent | Op::Interface | Op::RepositoryId => {
                unreachable!("handled above")
            }
        }
    }

    fn connection_closed(&self, summary: &ConnectionSummary) {
        let mut c = self.closed.lock().unwrap_or_else(|e| e.into_inner());
        if c.len() == MAX_CONNECTION_RECORDS {
            c.pop_front();
        }
        c.push_back(summary.clone());
    }

    fn locate(&self, object_key: &[u8]) -> LocateOutcome {
        if let Some((ior, permanent)) = self.forward_for(object_key) {
            return if permanent {
                LocateOutcome::ForwardPerm(ior)
            } else {
                LocateOutcome::Forward(ior)
            };
        }
        if Object::from_key(object_key).is_some() {
            LocateOutcome::Here
        } else {
            LocateOutcome::Unknown
        }
    }
}

/// `call_back(in Callback cb, in long n)`: call `cb->notify(n)` over the
/// client's own connection and answer with its result. The connection
/// decides whether that is allowed (a BI_DIR_IIOP offer listing cb's
/// address, GIOP 1.2: [`CallBack`]); when it is not, NO_PERMISSION
/// (COMPLETED_NO): this server opens no connection back to a client. An
/// exception from `notify` is passed on.
fn call_back(ctx: &RequestContext<'_>, body: &mut Reader<'_>) -> Dispatch {
    let Ok(target) = Ior::decode(body) else {
        return marshal_error();
    };
    let Ok(n) = body.read_i32() else {
        return marshal_error();
    };
    if !arguments_end_body(body) {
        return marshal_error();
    }
    let order = ctx.reply_order;
    let mut args = bytes::BytesMut::new();
    Writer::new(&mut args, order).write_i32(n);
    let system = |e: SystemException| AsyncReply {
        outcome: Outcome::System(e),
        body: bytes::Bytes::new(),
    };
    Dispatch::CallBack(CallBack {
        target,
        operation: "notify".into(),
        args: args.freeze(),
        order,
        then: Box::new(move |r: Result<iiop_giop::message::Reply, NoCallBack>| {
            let reply = match r {
                Ok(reply) => reply,
                Err(_) => {
                    return system(SystemException::no_permission(
                        iiop_giop::exception::MINOR_NO_PERMISSION_NOT_BIDIR,
                        Completion::No,
                    ))
                }
            };
            match iiop_giop::conn::client::reply_result(reply) {
                Ok(b) => match b.reader(iiop_cdr::Options::default()).read_i32() {
                    Ok(v) => {
                        let mut out = bytes::BytesMut::new();
                        Writer::new(&mut out, order).write_i32(v);
                        AsyncReply {
                            outcome: Outcome::Reply,
                            body: out.freeze(),
                        }
                    }
                    Err(_) => system(SystemException::marshal(
                        MINOR_MARSHAL_BAD_BODY,
                        Completion::Yes,
                    )),
                },
                Err(iiop_giop::conn::client::ClientError::System(e)) => system(e),
                Err(_) => system(SystemException::unknown(0, Completion::Maybe)),
            }
        }),
    })
}

/// The references a running server hands out.
#[derive(Debug, Clone)]
pub struct References {
    pub addr: SocketAddr,
    /// IOR of the main object (`Bench`).
    pub ior: Ior,
    /// `(key, corbaloc URL)` for Bench, Dispatch50, Dispatch500, Single0.
    pub corbalocs: Vec<(String, String)>,
}

impl References {
    /// Build for a server at `host:port`.
    pub fn new(handler: &BenchHandler, addr: SocketAddr) -> References {
        let host = addr.ip().to_string();
        handler.set_address(&host, addr.port());
        let ior = handler.ior_of(Object::Perf).expect("address set");
        let corbalocs = [
            Object::Perf,
            Object::Dispatch50,
            Object::Dispatch500,
            Object::Single(0),
        ]
        .iter()
        .map(|o| {
            let key = String::from_utf8(o.key()).expect("ASCII keys");
            let scheme = if handler.tls().is_some() {
                "ssliop"
            } else {
                "iiop"
            };
            let url = format!(
                "corbaloc:{scheme}:1.2@{}/{key}",
                fmt_host_port(&host, addr.port())
            );
            (key, url)
        })
        .collect();
        References {
            addr,
            ior,
            corbalocs,
        }
    }
}

fn fmt_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// An IOR from `b` for an object served at `host:port`: one IIOP 1.2
/// profile, or for a TLS-only server (`tls`: whether clients must present
/// certificates) one at port 0 with the TLS port in TAG_SSL_SEC_TRANS, as
/// omniORB's TLS-only servers publish. Our reference server's and the
/// IDL-driven server's IORs are made here.
pub fn served_ior(b: IorBuilder, host: &str, port: u16, key: Vec<u8>, tls: Option<bool>) -> Ior {
    match tls {
        None => b.iiop(host, port, key, &[]).build(),
        Some(certs) => b
            .profile(&tls_only_profile(IiopProfile::new(host, port, key), certs))
            .build(),
    }
}
