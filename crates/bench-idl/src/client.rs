//! A typed client for bench.idl: its operations (`ping`, `send_T`,
//! `echo_T`, `get_stats`, …) as methods, each one request written straight
//! into the connection's buffer, and replies decoded as bench.idl says.
//!
//! Everything below the operations is the transport's
//! [`Stub`](iiop_transport::stub::Stub): the connection and how it waits
//! ([`Wait`]: on the tokio runtime, many calls in flight; or by blocking
//! the calling thread in `recv`, one call at a time, one system call less
//! per reply), and the routing, which the protocol core decides
//! (forwards and their [`Hop`]s, retries, probes, locates). The methods
//! are `async` either way; on a blocking connection they complete without
//! yielding, which is what a caller that owns its thread (one closed-loop
//! caller) wants.

use std::sync::Arc;

use iiop_cdr::{CdrError, Options, Reader, TypeCode, Value, Writer};
use iiop_giop::ior::Ior;
use iiop_giop::message::{Body, LocateReply, Reply};
use iiop_giop::{ResponseMode, TargetAddress};
use iiop_transport::client::{reply_result_from, ClientConfig, ClientError};
use iiop_transport::stub::{Bound, Stub};
use iiop_transport::{PhaseTotals, Prepared};

pub use iiop_giop::conn::route::{key_text, Hop};
pub use iiop_transport::stub::Wait;

use crate::bench::elements::{CallMode, Elem};
use crate::bench::ops::CALLBACK_ID;
use crate::bench::types::{seq_typecode, Outgoing, Payload, StatsWire};
use crate::bench::work::{Dist, Kind};
use crate::callback::CALLBACK_KEY;

/// Why a bench call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BenchError {
    /// The call itself failed (connection, exception, timeout…).
    #[error(transparent)]
    Call(#[from] ClientError),
    /// The reply did not decode as bench.idl says it should.
    #[error("reply to {op} from {peer} does not decode: {source}")]
    Decode {
        op: String,
        peer: String,
        source: CdrError,
    },
    /// The target's reference is unusable.
    #[error("{0}")]
    Reference(String),
}

/// A reply's NO_EXCEPTION body from `at`, or its exception naming the
/// peer.
fn result_at(at: &Bound, reply: Reply) -> Result<Body, ClientError> {
    reply_result_from(at.addr(), reply)
}

/// Decode a reply body from `at` with its options; an error names the
/// operation and the peer.
fn decode_at<T>(
    at: &Bound,
    op: &str,
    body: &Body,
    f: impl FnOnce(&mut Reader<'_>) -> Result<T, CdrError>,
) -> Result<T, BenchError> {
    f(&mut body.reader(at.options())).map_err(|source| BenchError::Decode {
        op: op.to_string(),
        peer: at.addr().to_string(),
        source,
    })
}

/// bench.idl's operations on one object, over a [`Stub`] (clones share
/// its connection and where forwards led).
///
/// A reply with LOCATION_FORWARD(_PERM), or a LocateReply with
/// OBJECT_FORWARD(_PERM), moves the client to the forwarded reference (on
/// the same connection when the core's reuse rule accepts it, else on a
/// new one that waits the same way) and the request goes again there, up
/// to [`ClientConfig::max_forwards`] hops per call; later calls go
/// straight to where the last forward pointed ([`forwards`](Self::forwards)
/// tells the chain). A server that closed the connection with
/// CloseConnection before answering gets the request once more on a new
/// connection, and a GIOP 1.2 server asking for another addressing
/// disposition gets it in that one. A oneway cannot be forwarded (no reply
/// comes back), so the first oneway to a destination no reply has
/// confirmed goes after a `_non_existent`.
#[derive(Debug, Clone)]
pub struct BenchClient {
    stub: Stub,
}

impl BenchClient {
    /// Connect to the first IIOP profile of `ior`, waiting on the runtime.
    /// GIOP version: the config's, else the profile's; code sets
    /// negotiated from the IOR.
    pub async fn connect(ior: &Ior, cfg: &ClientConfig) -> Result<BenchClient, BenchError> {
        Self::connect_with(ior, cfg, Wait::Reactor).await
    }

    /// [`connect`](Self::connect) with a choice of [`Wait`] (see
    /// [`set_abort`](Self::set_abort) for interrupting a [`Wait::Read`]
    /// call).
    pub async fn connect_with(
        ior: &Ior,
        cfg: &ClientConfig,
        wait: Wait,
    ) -> Result<BenchClient, BenchError> {
        match Stub::connect(ior, cfg, wait).await {
            Ok(stub) => Ok(BenchClient { stub }),
            Err(ClientError::NoProfile) => Err(BenchError::Reference(
                "the reference has no IIOP profile".into(),
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// The stub underneath: the connection, the route.
    pub fn stub(&self) -> &Stub {
        &self.stub
    }

    /// Have a [`Wait::Read`] connection fail its call (and close) when
    /// `abort` returns true while it waits; no effect on the runtime's.
    /// Connections opened later to follow a forward get it too.
    pub fn set_abort(&self, abort: fn() -> bool) {
        self.stub.set_abort(abort);
    }

    /// The same connection (where the client's requests go now),
    /// addressing another object key.
    pub fn with_key(&self, key: &[u8]) -> BenchClient {
        BenchClient {
            stub: self.stub.with_key(key),
        }
    }

    /// The CDR options (negotiated code sets) of the connection.
    pub fn options(&self) -> Options {
        self.stub.options()
    }

    /// The target address used for requests now (after any forward).
    pub fn target(&self) -> TargetAddress {
        self.stub.target()
    }

    /// The peer's address (`host:port`) where requests go now.
    pub fn peer(&self) -> String {
        self.stub.peer()
    }

    /// The reference the last forward named, where requests go now
    /// (`None` when no forward was followed).
    pub fn forwarded_to(&self) -> Option<Ior> {
        self.stub.forwarded_to()
    }

    /// The forwards followed so far, in order (empty when none).
    pub fn forwards(&self) -> Vec<Hop> {
        self.stub.forwards()
    }

    /// Whether the connection has failed or was closed.
    pub fn is_closed(&self) -> bool {
        self.stub.is_closed()
    }

    /// TCP segments with data our connection has sent so far (see
    /// [`BlockingConnection::data_segments_out`](iiop_transport::BlockingConnection::data_segments_out));
    /// `None` on the runtime's connection, whose socket its task owns.
    pub fn data_segments_out(&self) -> Option<u32> {
        self.stub.data_segments_out()
    }

    /// Messages our connection has written headers-first so far (see
    /// [`BlockingConnection::head_first_writes`](iiop_transport::BlockingConnection::head_first_writes));
    /// `None` on the runtime's connection.
    pub fn head_first_writes(&self) -> Option<u64> {
        self.stub.head_first_writes()
    }

    /// Close the connection.
    pub fn close(&self) {
        self.stub.close()
    }

    /// The connection's phase totals (E0.5; only a runtime connection with
    /// phase timing on counts them).
    pub fn phase_totals(&self) -> PhaseTotals {
        self.stub.phase_totals()
    }

    /// Zero the phase totals.
    pub fn reset_phase_totals(&self) {
        self.stub.reset_phase_totals()
    }

    /// Make sure the object's location is confirmed, following forwards: a
    /// `_non_existent` call unless a reply already came from where the
    /// client's requests go. A server that answers it with an exception is
    /// still where the object is.
    pub async fn resolve(&self) -> Result<(), BenchError> {
        Ok(self.stub.resolve().await?)
    }

    /// A request to the target with any operation, body and response mode:
    /// the raw reply (for checks that look at it whole). Forwards are
    /// followed (`body` runs once per attempt); a oneway first resolves an
    /// unconfirmed location.
    pub async fn request<F>(
        &self,
        op: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<Option<Reply>, BenchError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        Ok(self.stub.request(op, response, body).await?.1)
    }

    /// A LocateRequest for the target, following OBJECT_FORWARD(_PERM):
    /// the final reply ([`forwards`](Self::forwards) tells the chain).
    pub async fn locate(&self) -> Result<LocateReply, BenchError> {
        Ok(self.stub.locate().await?)
    }

    /// Build a request to the target once, for
    /// [`send_prepared`](Self::send_prepared), after resolving the
    /// target's location (a prepared request cannot be re-addressed).
    pub async fn prepare<F>(
        &self,
        op: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<Prepared, BenchError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        Ok(self.stub.prepare(op, response, body).await?)
    }

    /// Send a prepared request again (a new request id, nothing
    /// re-marshalled). A forward in reply cannot be followed with the same
    /// bytes: the client moves to the new location (prepare again) and the
    /// call fails, naming the hop.
    pub async fn send_prepared(&self, p: &Prepared) -> Result<Option<Reply>, BenchError> {
        Ok(self.stub.send_prepared(p).await?.1)
    }

    /// [`send_prepared`](Self::send_prepared), then the NO_EXCEPTION body
    /// decoded by `f` (`None` for a oneway); an exception or an
    /// undecodable body is an error naming `op` and the peer.
    pub async fn send_prepared_decoded<T>(
        &self,
        p: &Prepared,
        op: &str,
        f: impl FnOnce(&mut Reader<'_>) -> Result<T, CdrError>,
    ) -> Result<Option<T>, BenchError> {
        let (at, reply) = self.stub.send_prepared(p).await?;
        let Some(reply) = reply else {
            return Ok(None);
        };
        let body = result_at(&at, reply)?;
        decode_at(&at, op, &body, f).map(Some)
    }

    /// A reply's NO_EXCEPTION body, or its exception as an error naming
    /// the peer.
    pub fn reply_result(&self, reply: Reply) -> Result<Body, ClientError> {
        result_at(&self.stub.bound(), reply)
    }

    /// A twoway call: the NO_EXCEPTION body, or the exception as an error.
    pub async fn call<F>(&self, op: &str, body: F) -> Result<Body, BenchError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        self.call_at(op, body).await.map(|(_, b)| b)
    }

    /// [`call`](Self::call), then the body decoded by `f` with the options
    /// of the connection that answered; an error names `op` and the peer.
    pub async fn call_decoded<F, T>(
        &self,
        op: &str,
        body: F,
        f: impl FnOnce(&mut Reader<'_>) -> Result<T, CdrError>,
    ) -> Result<T, BenchError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let (at, b) = self.call_at(op, body).await?;
        decode_at(&at, op, &b, f)
    }

    async fn call_at<F>(&self, op: &str, body: F) -> Result<(Arc<Bound>, Body), BenchError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let (at, reply) = self.stub.request(op, ResponseMode::Twoway, body).await?;
        let reply = reply.ok_or(ClientError::LocallyClosed)?;
        let b = result_at(&at, reply)?;
        Ok((at, b))
    }

    /// A oneway call (returns once queued): written at once where
    /// [`oneway_now`](Self::oneway_now) can, else through the full path.
    pub async fn oneway<F>(&self, op: &str, body: F) -> Result<(), BenchError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        if let Some(r) = self.oneway_now(op, &body) {
            return r;
        }
        self.request(op, ResponseMode::Oneway, body).await?;
        Ok(())
    }

    /// [`oneway`](Self::oneway) written on the calling thread, without the
    /// async layers, where it can be: a client that waits by blocking
    /// reads (`read` or `spin`), to a target a reply has already
    /// confirmed ([`Stub::oneway_now`]). In a stream of small oneways
    /// those layers were a fifth of the client's own CPU per call, and a
    /// sender that spends more per call falls behind the server, which
    /// then sleeps and has to be woken by every call (`iiopbench orbs compare`, section 2).
    ///
    /// `None` where the fast path does not apply, or where the connection
    /// failed in a way the full path retries on a new one: the full path
    /// then sees the same failure without writing anything, reconnects
    /// and sends again, exactly as had it made the first attempt itself.
    pub fn oneway_now<F>(&self, op: &str, body: F) -> Option<Result<(), BenchError>>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        self.stub
            .oneway_now(op, body)
            .map(|r| r.map_err(BenchError::from))
    }

    /// Decode a reply body with the connection's options; an error names
    /// the operation and the peer.
    pub fn decode<T>(
        &self,
        op: &str,
        body: &Body,
        f: impl FnOnce(&mut Reader<'_>) -> Result<T, CdrError>,
    ) -> Result<T, BenchError> {
        decode_at(&self.stub.bound(), op, body, f)
    }

    /// How long the TLS handshake of the current connection took, after
    /// its TCP connect (`None`: plain TCP).
    pub fn tls_handshake(&self) -> Option<std::time::Duration> {
        self.stub.tls_handshake()
    }

    /// `ping()`.
    pub async fn ping(&self) -> Result<(), BenchError> {
        self.call("ping", |_| Ok(())).await.map(drop)
    }

    /// `reset()`.
    pub async fn reset(&self) -> Result<(), BenchError> {
        self.call("reset", |_| Ok(())).await.map(drop)
    }

    /// `get_stats()`.
    pub async fn stats(&self) -> Result<StatsWire, BenchError> {
        #[allow(clippy::redundant_closure)] // the closure is needed for the higher-ranked lifetime
        self.call_decoded("get_stats", |_| Ok(()), |r| iiop_cdr::from_reader(r))
            .await
    }

    /// `oneway mark(n)`.
    pub async fn mark(&self, n: u64) -> Result<(), BenchError> {
        self.oneway("mark", |w| {
            w.write_u64(n);
            Ok(())
        })
        .await
    }

    /// `work(us, dist, kind)`: microseconds the server spent.
    pub async fn work(&self, us: f64, dist: Dist, kind: Kind) -> Result<f64, BenchError> {
        let args = |w: &mut Writer<'_>| {
            w.write_f64(us);
            w.write_u32(dist as u32);
            w.write_u32(kind as u32);
            Ok(())
        };
        self.call_decoded("work", args, |r| r.read_f64()).await
    }

    /// `call_back(cb, n)` with `cb` our [`CallbackServant`] on this
    /// connection (offered for callbacks: [`ClientConfig::callbacks`]):
    /// the server calls `cb->notify(n)` back over it before it answers.
    /// Fails unless the result is `n + 1`, what our servant answers. The
    /// reference names the connection the call starts on (a forward to
    /// the same server stays on it).
    ///
    /// [`CallbackServant`]: crate::callback::CallbackServant
    pub async fn call_back(&self, n: i32) -> Result<i32, BenchError> {
        let bound = self.stub.bound();
        let cb = bound
            .link()
            .setup()
            .callback_reference(CALLBACK_ID, CALLBACK_KEY)
            .ok_or_else(|| {
                BenchError::Reference(format!(
                    "call_back needs a connection offered for callbacks (bidirectional GIOP 1.2); the one to {} is not",
                    bound.addr()
                ))
            })?;
        let args = |w: &mut Writer<'_>| {
            cb.encode(w)?;
            w.write_i32(n);
            Ok(())
        };
        let v = self
            .call_decoded("call_back", args, |r| r.read_i32())
            .await?;
        if v != n.wrapping_add(1) {
            return Err(BenchError::Reference(format!(
                "call_back({n}) returned {v}, not {} (what our Callback's notify answers)",
                n.wrapping_add(1)
            )));
        }
        Ok(v)
    }

    /// `get_single(i)`.
    pub async fn get_single(&self, i: u32) -> Result<Ior, BenchError> {
        let args = |w: &mut Writer<'_>| {
            w.write_u32(i);
            Ok(())
        };
        let (at, b) = self.call_at("get_single", args).await?;
        Ior::decode(&mut b.reader(at.options()))
            .map_err(|e| BenchError::Reference(format!("get_single reply from {}: {e}", at.addr())))
    }

    /// `_is_a(id)`.
    pub async fn is_a(&self, id: &str) -> Result<bool, BenchError> {
        self.call_decoded("_is_a", |w| w.write_string(id), |r| r.read_bool())
            .await
    }

    /// `_non_existent()`.
    pub async fn non_existent(&self) -> Result<bool, BenchError> {
        self.call_decoded("_non_existent", |_| Ok(()), |r| r.read_bool())
            .await
    }

    /// A payload operation (static path): `send_oneway_T`, `send_T` or
    /// `echo_T`; the echo's decoded result.
    pub async fn payload(
        &self,
        mode: CallMode,
        p: &Payload,
    ) -> Result<Option<Payload>, BenchError> {
        self.payload_with(mode, p.elem(), |w| p.encode(w)).await
    }

    /// [`payload`](Self::payload) for a payload prepared for repeated
    /// sends (numeric sequences spliced instead of copied).
    pub async fn outgoing(
        &self,
        mode: CallMode,
        o: &Outgoing,
    ) -> Result<Option<Payload>, BenchError> {
        self.payload_with(mode, o.payload().elem(), |w| o.encode(w))
            .await
    }

    async fn payload_with<F>(
        &self,
        mode: CallMode,
        elem: Elem,
        encode: F,
    ) -> Result<Option<Payload>, BenchError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let op = elem.op_name(mode);
        match mode {
            CallMode::Oneway => self.oneway(op, encode).await.map(|_| None),
            CallMode::Twoway => self.call(op, encode).await.map(|_| None),
            CallMode::Echo => self
                .call_decoded(op, encode, |r| Payload::decode(elem, r))
                .await
                .map(Some),
        }
    }

    /// A payload operation built from a run-time TypeCode (the DII path).
    pub async fn payload_dynamic(
        &self,
        mode: CallMode,
        elem: Elem,
        tc: &TypeCode,
        v: &Value,
    ) -> Result<Option<Value>, BenchError> {
        let op = elem.op_name(mode);
        match mode {
            CallMode::Oneway => self.oneway(op, |w| v.encode(tc, w)).await.map(|_| None),
            CallMode::Twoway => self.call(op, |w| v.encode(tc, w)).await.map(|_| None),
            CallMode::Echo => self
                .call_decoded(op, |w| v.encode(tc, w), |r| Value::decode(tc, r))
                .await
                .map(Some),
        }
    }

    /// The dynamic TypeCode of a payload type (for [`payload_dynamic`](Self::payload_dynamic)).
    pub fn typecode(elem: Elem) -> TypeCode {
        seq_typecode(elem)
    }
}
