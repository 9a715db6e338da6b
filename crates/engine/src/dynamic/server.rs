//! A dynamic server for any IDL interface (DSI): [`IdlHandler`] decodes
//! each request's in/inout arguments with the TypeCodes of the
//! operation's parameters (from an `iiop_idl::Spec`), and answers with
//! out/inout/return values chosen by a [`Behaviour`] — echoed from the
//! inputs where the types match, zero/empty defaults otherwise, or fixed
//! values. `_is_a` answers for the interface and all its bases; unknown
//! operations get BAD_OPERATION. [`IdlServer::start`] runs it on threads
//! of its own like [`iiop_bench_idl::run::RunningServer`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use iiop_cdr::typecode::UnionMember;
use iiop_cdr::{Any, TCKind, TcDef, TypeCode, Value};
use iiop_giop::exception::{Completion, MINOR_MARSHAL_BAD_BODY};
use iiop_giop::ior::Ior;
use iiop_giop::SystemException;
use iiop_idl::{DefId, Direction, Spec};
use iiop_transport::server::{
    arguments_end_body, handle_builtin, Dispatch, Handler, LocateOutcome, Outcome, RequestContext,
    ServerConfig,
};

use iiop_bench_idl::bench::counters::Counters;
use iiop_bench_idl::reference::served_ior;
use iiop_transport::hosted::{ServerModel, ServerThread, Serving, TlsServer};
use iiop_transport::threads::Polling;

/// What the server answers.
#[derive(Debug, Clone, Default)]
pub enum Behaviour {
    /// Each out/inout/return value is the first input (in/inout) of an
    /// equivalent type — an inout its own input first — else the type's
    /// default value.
    #[default]
    Echo,
    /// Decode the inputs, answer default values.
    Sink,
    /// Per operation name, values for the return (`None` key) and for
    /// out/inout parameters by name; anything not given as for `Echo`.
    Fixed(HashMap<String, FixedReply>),
}

/// Fixed answers of one operation.
#[derive(Debug, Clone, Default)]
pub struct FixedReply {
    pub result: Option<Value>,
    pub params: HashMap<String, Value>,
    /// Raise this user exception (its TypeCode, from the raises list, and
    /// its members) instead of replying.
    pub raise: Option<(TypeCode, Value)>,
}

/// One parameter of an operation, with its TypeCode.
#[derive(Debug, Clone)]
pub struct ParamSig {
    pub name: String,
    pub dir: Direction,
    pub tc: TypeCode,
}

/// An operation with every type as a TypeCode.
#[derive(Debug, Clone)]
pub struct OpSig {
    pub name: String,
    pub oneway: bool,
    pub result: TypeCode,
    pub params: Vec<ParamSig>,
    /// TypeCodes of the exceptions it may raise.
    pub raises: Vec<TypeCode>,
}

impl OpSig {
    /// The signature of `op`, types as TypeCodes.
    pub fn new(spec: &Spec, op: &iiop_idl::Operation) -> Result<OpSig, iiop_idl::Error> {
        Ok(OpSig {
            name: op.name.clone(),
            oneway: op.oneway,
            result: spec.to_typecode(&op.result)?,
            params: op
                .params
                .iter()
                .map(|p| {
                    Ok(ParamSig {
                        name: p.name.clone(),
                        dir: p.dir,
                        tc: spec.to_typecode(&p.ty)?,
                    })
                })
                .collect::<Result<_, iiop_idl::Error>>()?,
            raises: op
                .raises
                .iter()
                .map(|&e| spec.def_typecode(e))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Whether the result is `void`.
    pub fn returns_void(&self) -> bool {
        self.result.unalias().kind() == TCKind::tk_void
    }

    /// In and inout parameters, in order (what a request carries).
    pub fn inputs(&self) -> impl Iterator<Item = &ParamSig> {
        self.params.iter().filter(|p| p.dir != Direction::Out)
    }

    /// Out and inout parameters, in order (what a reply carries after the
    /// result).
    pub fn outputs(&self) -> impl Iterator<Item = &ParamSig> {
        self.params.iter().filter(|p| p.dir != Direction::In)
    }
}

/// The skeleton of one interface.
#[derive(Debug)]
pub struct IdlHandler {
    /// The interface's repository id, then its bases'.
    repo_ids: Vec<String>,
    ops: HashMap<String, OpSig>,
    behaviour: Behaviour,
    counters: Arc<Counters>,
}

impl IdlHandler {
    /// A skeleton for interface `iface` of `spec`.
    pub fn new(
        spec: &Spec,
        iface: DefId,
        behaviour: Behaviour,
    ) -> Result<IdlHandler, iiop_idl::Error> {
        let mut repo_ids = vec![spec.def(iface).repo_id.clone()];
        repo_ids.extend(
            spec.all_bases(iface)
                .iter()
                .map(|&b| spec.def(b).repo_id.clone()),
        );
        let mut ops = HashMap::new();
        for op in spec.operations(iface) {
            ops.insert(op.name.clone(), OpSig::new(spec, &op)?);
        }
        Ok(IdlHandler {
            repo_ids,
            ops,
            behaviour,
            counters: Arc::new(Counters::new()),
        })
    }

    /// The interface's repository id.
    pub fn repo_id(&self) -> &str {
        &self.repo_ids[0]
    }

    /// Calls and bytes served.
    pub fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// The operations served, by name.
    pub fn operations(&self) -> &HashMap<String, OpSig> {
        &self.ops
    }

    /// The reply values of `op` for these inputs: result (unless void),
    /// then each out/inout parameter.
    pub fn answer(&self, op: &OpSig, inputs: &[(usize, Value)]) -> Vec<Value> {
        let fixed = match &self.behaviour {
            Behaviour::Fixed(m) => m.get(&op.name),
            _ => None,
        };
        let echo = !matches!(self.behaviour, Behaviour::Sink);
        let pick = |tc: &TypeCode, own: Option<usize>| -> Value {
            if echo {
                if let Some(i) = own {
                    if let Some((_, v)) = inputs.iter().find(|(j, _)| *j == i) {
                        return v.clone();
                    }
                }
                if let Some((_, v)) = inputs.iter().find(|(j, _)| op.params[*j].tc.equivalent(tc)) {
                    return v.clone();
                }
            }
            default_value(tc)
        };
        let mut out = Vec::new();
        if !op.returns_void() {
            out.push(match fixed.and_then(|f| f.result.clone()) {
                Some(v) => v,
                None => pick(&op.result, None),
            });
        }
        for (i, p) in op.params.iter().enumerate() {
            if p.dir == Direction::In {
                continue;
            }
            out.push(match fixed.and_then(|f| f.params.get(&p.name).cloned()) {
                Some(v) => v,
                None => pick(&p.tc, (p.dir == Direction::InOut).then_some(i)),
            });
        }
        out
    }
}

fn marshal_error() -> Dispatch {
    Dispatch::Done(Outcome::System(SystemException::marshal(
        MINOR_MARSHAL_BAD_BODY,
        Completion::No,
    )))
}

impl Handler for IdlHandler {
    fn handle(
        &self,
        ctx: &RequestContext<'_>,
        body: &mut iiop_cdr::Reader<'_>,
        reply: &mut iiop_cdr::Writer<'_>,
    ) -> Dispatch {
        let ids: Vec<&str> = self.repo_ids.iter().map(String::as_str).collect();
        if let Some(d) = handle_builtin(ctx, body, reply, &ids) {
            return d;
        }
        let Some(op) = self.ops.get(ctx.operation) else {
            return Dispatch::Done(Outcome::System(SystemException::unknown_operation()));
        };
        let start = body.position();
        let mut inputs = Vec::new();
        // One valuetype scope per message: an argument may refer to a
        // value of an earlier one.
        let mut scope = iiop_cdr::value::ValueScope::default();
        for (i, p) in op.params.iter().enumerate() {
            if p.dir == Direction::Out {
                continue;
            }
            match Value::decode_in(&p.tc, body, &mut scope) {
                Ok(v) => inputs.push((i, v)),
                Err(_) => return marshal_error(),
            }
        }
        // Bytes after the last input beyond padding: a mis-encoded body,
        // refused like a short one (a oneway's is dropped, uncounted).
        if !arguments_end_body(body) {
            return marshal_error();
        }
        self.counters.call(!ctx.response_expected);
        self.counters.bytes((body.position() - start) as u64);
        if !ctx.response_expected {
            return Dispatch::Done(Outcome::Reply);
        }
        if let Behaviour::Fixed(m) = &self.behaviour {
            if let Some((tc, v)) = m.get(&op.name).and_then(|f| f.raise.as_ref()) {
                let id = tc.id().unwrap_or("");
                return match reply.write_string(id).and_then(|_| v.encode(tc, reply)) {
                    Ok(()) => Dispatch::Done(Outcome::UserException),
                    Err(_) => marshal_error(),
                };
            }
        }
        let values = self.answer(op, &inputs);
        let tcs = (!op.returns_void())
            .then_some(&op.result)
            .into_iter()
            .chain(op.outputs().map(|p| &p.tc));
        let mut scope = iiop_cdr::value::ValueScope::default();
        for (tc, v) in tcs.zip(&values) {
            if v.encode_in(tc, reply, &mut scope).is_err() {
                return Dispatch::Done(Outcome::System(SystemException::internal(
                    iiop_giop::exception::VMCID_IIOPBENCH | 5,
                    Completion::Yes,
                )));
            }
        }
        Dispatch::Done(Outcome::Reply)
    }

    fn locate(&self, _object_key: &[u8]) -> LocateOutcome {
        LocateOutcome::Here
    }
}

/// The zero/empty value of a type: 0, false, `'\0'`, `""`, empty
/// sequences, arrays of defaults, the first enumerator, structs of
/// defaults, a union's first member (or its default member), an `any`
/// holding nothing (tk_null), the nil reference, the null TypeCode.
pub fn default_value(tc: &TypeCode) -> Value {
    default_in(tc, &mut Vec::new())
}

fn default_in(tc: &TypeCode, enclosing: &mut Vec<TypeCode>) -> Value {
    use TCKind::*;
    let tc = match tc.def() {
        TcDef::Recursive { id } => match enclosing.iter().rev().find(|t| t.id() == Some(&**id)) {
            Some(t) => t.clone(),
            None => return Value::Null,
        },
        _ => tc.clone(),
    };
    match tc.def() {
        TcDef::Alias { content, .. } => default_in(content, enclosing),
        TcDef::Basic(k) => match k {
            tk_short => Value::Short(0),
            tk_long => Value::Long(0),
            tk_ushort => Value::UShort(0),
            tk_ulong => Value::ULong(0),
            tk_longlong => Value::LongLong(0),
            tk_ulonglong => Value::ULongLong(0),
            tk_float => Value::Float(0.0),
            tk_double => Value::Double(0.0),
            tk_longdouble => Value::LongDouble([0; 16]),
            tk_boolean => Value::Boolean(false),
            tk_char => Value::Char('\0'),
            tk_wchar => Value::WChar('\0'),
            tk_octet => Value::Octet(0),
            tk_any => Value::Any(Box::new(Any {
                tc: TypeCode::null(),
                value: Value::Null,
            })),
            tk_TypeCode => Value::TypeCode(TypeCode::null()),
            tk_Principal => Value::Principal(Bytes::new()),
            tk_void => Value::Void,
            _ => Value::Null,
        },
        TcDef::String { .. } => Value::String(String::new()),
        TcDef::WString { .. } => Value::WString(String::new()),
        TcDef::Fixed { scale, .. } => Value::Fixed(if *scale > 0 {
            format!("0.{}", "0".repeat(*scale as usize))
        } else {
            "0".into()
        }),
        TcDef::Interface { .. } => Value::ObjRef(Box::new(Ior::nil())),
        TcDef::Enum { .. } => Value::Enum(0),
        TcDef::Struct { members, .. } => {
            enclosing.push(tc.clone());
            let v = Value::Struct(
                members
                    .iter()
                    .map(|m| default_in(&m.tc, enclosing))
                    .collect(),
            );
            enclosing.pop();
            v
        }
        TcDef::Union {
            discriminator,
            default_index,
            members,
            ..
        } => {
            let (disc, m) = union_default(discriminator, *default_index, members);
            enclosing.push(tc.clone());
            let v = default_in(&members[m].tc, enclosing);
            enclosing.pop();
            Value::Union {
                disc,
                value: Box::new(v),
            }
        }
        TcDef::Sequence { element, .. } => empty_seq(element),
        TcDef::Array { element, length } => {
            let items: Vec<Value> = (0..*length)
                .map(|_| default_in(element, enclosing))
                .collect();
            Value::from_elements(element, items)
        }
        TcDef::ValueBox { .. } | TcDef::Value { .. } | TcDef::Recursive { .. } => Value::Null,
    }
}

/// The first non-default member and its first label, or the default
/// member with a discriminator no label uses.
fn union_default(disc_tc: &TypeCode, default_index: i32, members: &[UnionMember]) -> (i64, usize) {
    if let Some((i, m)) = members
        .iter()
        .enumerate()
        .find(|(i, _)| *i as i32 != default_index)
    {
        return (m.label, i);
    }
    let limit: i64 = match disc_tc.unalias().def() {
        TcDef::Enum { members: e, .. } => e.len() as i64,
        TcDef::Basic(TCKind::tk_boolean) => 2,
        _ => 1 << 16,
    };
    let d = (0..limit)
        .find(|v| {
            !members
                .iter()
                .enumerate()
                .any(|(i, m)| i as i32 != default_index && m.label == *v)
        })
        .unwrap_or(0);
    (d, default_index.max(0) as usize)
}

fn empty_seq(element: &TypeCode) -> Value {
    Value::from_elements(element, Vec::new())
}

/// How to run an [`IdlServer`].
#[derive(Debug, Clone)]
pub struct IdlServerOptions {
    /// `host:port` to bind.
    pub listen: String,
    /// Runtime threads (at least 1).
    pub threads: usize,
    /// Pin the server threads to these CPUs.
    pub cpus: Option<Vec<usize>>,
    pub config: ServerConfig,
    /// Serve TLS only (the IOR then says so, as our reference server's
    /// does: TAG_SSL_SEC_TRANS with the port, the profile's port 0).
    pub tls: Option<TlsServer>,
    /// Task per connection on the runtime, or thread per connection.
    pub model: ServerModel,
    /// [`ServerOptions::polling`](crate::run::ServerOptions::polling).
    pub polling: Polling,
}

impl Default for IdlServerOptions {
    /// One runtime thread on 127.0.0.1, a free port, the reactor.
    fn default() -> Self {
        IdlServerOptions {
            listen: "127.0.0.1:0".into(),
            threads: 1,
            cpus: None,
            config: ServerConfig::default(),
            tls: None,
            model: ServerModel::default(),
            polling: Polling::default(),
        }
    }
}

/// An [`IdlHandler`] serving on threads of its own until stopped/dropped.
#[derive(Debug)]
pub struct IdlServer {
    ior: Ior,
    handler: Arc<IdlHandler>,
    server: ServerThread,
}

impl IdlServer {
    /// Bind and serve `handler`; the object key is `key`.
    pub fn start(
        handler: IdlHandler,
        key: &[u8],
        opts: IdlServerOptions,
    ) -> std::io::Result<IdlServer> {
        let handler = Arc::new(handler);
        let certificates = opts.tls.as_ref().map(|t| t.client_certificates);
        let server = ServerThread::spawn_model(
            handler.clone(),
            &opts.listen,
            opts.threads,
            opts.cpus,
            opts.config,
            Serving {
                model: opts.model,
                polling: opts.polling,
                tls: opts.tls.map(|t| t.config),
            },
        )?;
        let addr = server.addr();
        let ior = served_ior(
            Ior::builder(handler.repo_id()),
            &addr.ip().to_string(),
            addr.port(),
            key.to_vec(),
            certificates,
        );
        Ok(IdlServer {
            ior,
            handler,
            server,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// The served object's IOR.
    pub fn ior(&self) -> &Ior {
        &self.ior
    }

    /// The handler (counters).
    pub fn handler(&self) -> &Arc<IdlHandler> {
        &self.handler
    }

    /// Stop accepting, let in-flight requests finish, join the threads.
    pub fn stop(mut self) -> std::io::Result<()> {
        self.server.stop()
    }
}
