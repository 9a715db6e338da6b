//! A typed client for bench.idl over one GIOP connection: the calls the
//! benchmarks, the conformance suite and the tests make, each one request
//! written straight into the connection's buffer.
//!
//! The connection waits for replies in one of two ways ([`Wait`]): on the
//! tokio runtime ([`Connection`], many calls in flight), or by blocking the
//! calling thread in `recv` ([`BlockingConnection`], one call at a time,
//! one system call less per reply). The methods are `async` either way; on
//! a blocking connection they complete without yielding, which is what a
//! caller that owns its thread (one closed-loop caller) wants.

use std::sync::{Arc, Mutex, MutexGuard};

use iiop_cdr::{CdrError, Options, Reader, TypeCode, Value, Writer};
use iiop_giop::ior::{IiopProfile, Ior};
use iiop_giop::message::{Body, LocateReply, Reply};
use iiop_giop::transport::client::{reply_result, ClientConfig, ClientError, Connection};
use iiop_giop::transport::{BlockingConnection, PhaseTotals, Prepared};
use iiop_giop::{ResponseMode, TargetAddress, Version};

use crate::bench::elements::{CallMode, Elem};
use crate::bench::types::{seq_typecode, Outgoing, Payload, StatsWire};
use crate::bench::work::{Dist, Kind};

/// Why a bench call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BenchError {
    /// The call itself failed (connection, exception, timeout…).
    #[error(transparent)]
    Call(#[from] ClientError),
    /// The reply did not decode as bench.idl says it should.
    #[error("reply to {op} does not decode: {source}")]
    Decode { op: String, source: CdrError },
    /// The target's reference is unusable.
    #[error("{0}")]
    Reference(String),
}

/// How a [`BenchClient`] waits for replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// On the tokio runtime: any number of calls in flight.
    Reactor,
    /// The calling thread blocks in `recv` (wait-on-read): one call at a
    /// time; a caller that shares the thread with other tasks stalls them.
    Read,
}

#[derive(Debug, Clone)]
enum Link {
    Reactor(Connection),
    Read(Arc<Mutex<BlockingConnection>>),
}

/// One connection to one bench.idl object.
#[derive(Debug, Clone)]
pub struct BenchClient {
    link: Link,
    opts: Options,
    target: TargetAddress,
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
        let p: IiopProfile = ior
            .iiop_profile()
            .ok_or_else(|| BenchError::Reference("the reference has no IIOP profile".into()))?;
        let version = cfg.version.unwrap_or(Version {
            major: 1,
            minor: p.version.minor.min(2),
        });
        let cs = p.code_sets();
        let link = match wait {
            Wait::Reactor => Link::Reactor(
                Connection::connect(&p.host, p.port, version, cfg, cs.as_ref()).await?,
            ),
            Wait::Read => Link::Read(Arc::new(Mutex::new(BlockingConnection::connect(
                &p.host,
                p.port,
                version,
                cfg,
                cs.as_ref(),
            )?))),
        };
        let opts = match &link {
            Link::Reactor(c) => c.options(),
            Link::Read(b) => lock(b).options(),
        };
        Ok(BenchClient {
            link,
            opts,
            target: TargetAddress::Key(p.object_key.clone()),
        })
    }

    /// Have a [`Wait::Read`] connection fail its call (and close) when
    /// `abort` returns true while it waits; no effect on the runtime's.
    pub fn set_abort(&self, abort: fn() -> bool) {
        if let Link::Read(b) = &self.link {
            lock(b).set_abort(abort);
        }
    }

    /// The same connection, addressing another object key.
    pub fn with_key(&self, key: &[u8]) -> BenchClient {
        BenchClient {
            link: self.link.clone(),
            opts: self.opts,
            target: TargetAddress::Key(bytes::Bytes::copy_from_slice(key)),
        }
    }

    /// The CDR options (negotiated code sets) of the connection.
    pub fn options(&self) -> Options {
        self.opts
    }

    /// The target address used for every request.
    pub fn target(&self) -> &TargetAddress {
        &self.target
    }

    /// Whether the connection has failed or was closed.
    pub fn is_closed(&self) -> bool {
        match &self.link {
            Link::Reactor(c) => c.is_closed(),
            Link::Read(b) => lock(b).is_closed(),
        }
    }

    /// Close the connection.
    pub fn close(&self) {
        match &self.link {
            Link::Reactor(c) => c.close(),
            Link::Read(b) => lock(b).close(),
        }
    }

    /// The connection's phase totals (E0.5; only a runtime connection with
    /// phase timing on counts them).
    pub fn phase_totals(&self) -> PhaseTotals {
        match &self.link {
            Link::Reactor(c) => c.phase_totals(),
            Link::Read(_) => PhaseTotals::default(),
        }
    }

    /// Zero the phase totals.
    pub fn reset_phase_totals(&self) {
        if let Link::Reactor(c) = &self.link {
            c.reset_phase_totals();
        }
    }

    /// A request to the target with any operation, body and response mode:
    /// the raw reply (for checks that look at it whole).
    pub async fn request<F>(
        &self,
        op: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<Option<Reply>, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        match &self.link {
            Link::Reactor(c) => c.request(&self.target, op, response, body).await,
            Link::Read(b) => lock(b).request(&self.target, op, response, body),
        }
    }

    /// A LocateRequest for the target.
    pub async fn locate(&self) -> Result<LocateReply, ClientError> {
        match &self.link {
            Link::Reactor(c) => c.locate(&self.target).await,
            Link::Read(b) => lock(b).locate(&self.target),
        }
    }

    /// Build a request to the target once, for [`send_prepared`](Self::send_prepared).
    pub fn prepare<F>(
        &self,
        op: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<Prepared, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        match &self.link {
            Link::Reactor(c) => c.prepare(&self.target, op, response, body),
            Link::Read(b) => lock(b).prepare(&self.target, op, response, body),
        }
    }

    /// Send a prepared request again (a new request id, nothing
    /// re-marshalled).
    pub async fn send_prepared(&self, p: &Prepared) -> Result<Option<Reply>, ClientError> {
        match &self.link {
            Link::Reactor(c) => c.send_prepared(p).await,
            Link::Read(b) => lock(b).send_prepared(p),
        }
    }

    /// A twoway call: the NO_EXCEPTION body, or the exception as an error.
    pub async fn call<F>(&self, op: &str, body: F) -> Result<Body, BenchError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let reply = self
            .request(op, ResponseMode::Twoway, body)
            .await?
            .ok_or(ClientError::LocallyClosed)?;
        Ok(reply_result(reply)?)
    }

    /// A oneway call (returns once queued).
    pub async fn oneway<F>(&self, op: &str, body: F) -> Result<(), BenchError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        self.request(op, ResponseMode::Oneway, body).await?;
        Ok(())
    }

    fn decode<T>(
        &self,
        op: &str,
        body: &Body,
        f: impl FnOnce(&mut Reader<'_>) -> Result<T, CdrError>,
    ) -> Result<T, BenchError> {
        f(&mut body.reader(self.opts)).map_err(|source| BenchError::Decode {
            op: op.to_string(),
            source,
        })
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
        let b = self.call("get_stats", |_| Ok(())).await?;
        #[allow(clippy::redundant_closure)] // the closure is needed for the higher-ranked lifetime
        self.decode("get_stats", &b, |r| iiop_cdr::from_reader(r))
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
        let b = self
            .call("work", |w| {
                w.write_f64(us);
                w.write_u32(dist as u32);
                w.write_u32(kind as u32);
                Ok(())
            })
            .await?;
        self.decode("work", &b, |r| r.read_f64())
    }

    /// `get_single(i)`.
    pub async fn get_single(&self, i: u32) -> Result<Ior, BenchError> {
        let b = self
            .call("get_single", |w| {
                w.write_u32(i);
                Ok(())
            })
            .await?;
        Ior::decode(&mut b.reader(self.opts))
            .map_err(|e| BenchError::Reference(format!("get_single reply: {e}")))
    }

    /// `_is_a(id)`.
    pub async fn is_a(&self, id: &str) -> Result<bool, BenchError> {
        let b = self.call("_is_a", |w| w.write_string(id)).await?;
        self.decode("_is_a", &b, |r| r.read_bool())
    }

    /// `_non_existent()`.
    pub async fn non_existent(&self) -> Result<bool, BenchError> {
        let b = self.call("_non_existent", |_| Ok(())).await?;
        self.decode("_non_existent", &b, |r| r.read_bool())
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
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let op = elem.op_name(mode);
        match mode {
            CallMode::Oneway => self.oneway(op, encode).await.map(|_| None),
            CallMode::Twoway => self.call(op, encode).await.map(|_| None),
            CallMode::Echo => {
                let b = self.call(op, encode).await?;
                self.decode(op, &b, |r| Payload::decode(elem, r)).map(Some)
            }
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
            CallMode::Echo => {
                let b = self.call(op, |w| v.encode(tc, w)).await?;
                self.decode(op, &b, |r| Value::decode(tc, r)).map(Some)
            }
        }
    }

    /// The dynamic TypeCode of a payload type (for [`payload_dynamic`](Self::payload_dynamic)).
    pub fn typecode(elem: Elem) -> TypeCode {
        seq_typecode(elem)
    }
}

/// The blocking connection (a poisoned lock only means a caller panicked
/// mid-call; the connection state is still consistent).
fn lock(b: &Mutex<BlockingConnection>) -> MutexGuard<'_, BlockingConnection> {
    b.lock().unwrap_or_else(|e| e.into_inner())
}
