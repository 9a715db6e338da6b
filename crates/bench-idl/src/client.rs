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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use iiop_cdr::{CdrError, Options, Reader, TypeCode, Value, Writer};
use iiop_giop::conn::client::{Again, Follow, Step};
use iiop_giop::conn::endpoint::endpoint_for;
use iiop_giop::context::CodeSetComponentInfo;
use iiop_giop::ior::{IiopProfile, Ior};
use iiop_giop::message::{Body, LocateReply, LocateStatus, Reply};
use iiop_giop::{ResponseMode, TargetAddress, Version};
use iiop_transport::client::{reply_result_from, ClientConfig, ClientError, Connection};
use iiop_transport::{BlockingConnection, PhaseTotals, Prepared};

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

impl Link {
    async fn connect(
        p: &IiopProfile,
        code_sets: Option<&CodeSetComponentInfo>,
        cfg: &ClientConfig,
        wait: Wait,
        abort: Option<fn() -> bool>,
    ) -> Result<(Link, Options), ClientError> {
        let version = cfg.version.unwrap_or(Version {
            major: 1,
            minor: p.version.minor.min(2),
        });
        let ep = endpoint_for(p, cfg.tls.wanted())?;
        Ok(match wait {
            Wait::Reactor => {
                let c = Connection::connect_to(&ep, version, cfg, code_sets).await?;
                let opts = c.options();
                (Link::Reactor(c), opts)
            }
            Wait::Read => {
                let mut b = BlockingConnection::connect_to(&ep, version, cfg, code_sets)?;
                if let Some(a) = abort {
                    b.set_abort(a);
                }
                let opts = b.options();
                (Link::Read(Arc::new(Mutex::new(b))), opts)
            }
        })
    }

    fn addr(&self) -> String {
        match self {
            Link::Reactor(c) => c.addr().to_string(),
            Link::Read(b) => lock(b).addr().to_string(),
        }
    }

    fn tls_handshake(&self) -> Option<std::time::Duration> {
        match self {
            Link::Reactor(c) => c.tls_handshake(),
            Link::Read(b) => lock(b).tls_handshake(),
        }
    }
}

/// One forward a client followed: who answered with what, and where to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    /// `LOCATION_FORWARD`, `LOCATION_FORWARD_PERM`, `OBJECT_FORWARD` or
    /// `OBJECT_FORWARD_PERM`.
    pub status: &'static str,
    /// `host:port` that answered, and the object key it was asked for.
    pub from: String,
    /// `host:port` and object key of the forwarded reference.
    pub to: String,
}

impl std::fmt::Display for Hop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} from {} to {}", self.status, self.from, self.to)
    }
}

/// `host:port key` with the key as text where it is printable, else hex.
fn location(addr: &str, target: &TargetAddress) -> String {
    match target {
        TargetAddress::Key(k) => format!("{addr} key {}", key_text(k)),
        _ => format!("{addr} (profile/reference address)"),
    }
}

/// An object key for messages: text where printable, else hex.
pub fn key_text(k: &[u8]) -> String {
    if !k.is_empty() && k.iter().all(|b| (0x20..0x7f).contains(b)) {
        format!("{:?}", String::from_utf8_lossy(k))
    } else {
        let hex: String = k.iter().map(|b| format!("{b:02x}")).collect();
        format!("0x{hex}")
    }
}

/// Where a client's requests go now: a connection, the target address on
/// it, and how it got there.
#[derive(Debug)]
struct Route {
    link: Link,
    /// `host:port` of `link` as the reference named it.
    endpoint: (String, u16),
    /// The peer's address for messages.
    addr: String,
    target: TargetAddress,
    opts: Options,
    /// Set once a reply other than a forward came back on this route: the
    /// object is here, so oneways to it are not lost.
    confirmed: AtomicBool,
    /// The forwards followed from the reference the client was made with.
    chain: Vec<Hop>,
    /// The reference the last forward named (`None`: not forwarded).
    forwarded_to: Option<Ior>,
    /// The reference this route reaches (by its first IIOP profile): what
    /// a call's [`Follow`] starts from, and what a reconnection dials.
    reference: Ior,
}

impl Route {
    /// One request on this route to `target` (no forward followed).
    async fn exchange<G>(
        &self,
        target: &TargetAddress,
        op: &str,
        response: ResponseMode,
        body: &G,
    ) -> Result<Option<Reply>, ClientError>
    where
        G: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        match &self.link {
            Link::Reactor(c) => c.request(target, op, response, body).await,
            Link::Read(b) => lock(b).request(target, op, response, body),
        }
    }

    /// A reply's NO_EXCEPTION body, or its exception naming this peer.
    fn reply_result(&self, reply: Reply) -> Result<Body, ClientError> {
        reply_result_from(&self.addr, reply)
    }

    /// Decode a reply body from this peer with its options; an error
    /// names the operation and the peer.
    fn decode<T>(
        &self,
        op: &str,
        body: &Body,
        f: impl FnOnce(&mut Reader<'_>) -> Result<T, CdrError>,
    ) -> Result<T, BenchError> {
        f(&mut body.reader(self.opts)).map_err(|source| BenchError::Decode {
            op: op.to_string(),
            peer: self.addr.clone(),
            source,
        })
    }
}

/// What the clones of one client share.
#[derive(Debug)]
struct Shared {
    cfg: ClientConfig,
    wait: Wait,
    abort: Mutex<Option<fn() -> bool>>,
    route: Mutex<Arc<Route>>,
}

/// One connection to one bench.idl object, following forwards.
///
/// What each answer means is the connection core's decision
/// ([`Follow`]); this client only moves where it says. A reply with
/// LOCATION_FORWARD(_PERM), or a LocateReply with OBJECT_FORWARD(_PERM),
/// moves the client to the forwarded reference — on the same connection
/// when it names the same endpoint, else on a new one that waits the same
/// way — and the request is sent again there, up to
/// [`ClientConfig::max_forwards`] hops per call; later calls go straight
/// to where the last forward pointed ([`forwards`](Self::forwards) tells
/// the chain). A server that closed the connection with CloseConnection
/// before answering gets the request once more on a new connection, and a
/// GIOP 1.2 server asking for another addressing disposition gets it in
/// that one. A oneway cannot be forwarded (no reply comes back), so the
/// first oneway on a client whose location is not yet confirmed by a reply
/// first resolves it with a `_non_existent` call.
#[derive(Debug, Clone)]
pub struct BenchClient {
    shared: Arc<Shared>,
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
        let route = Self::route_to(ior, cfg, wait, None, Vec::new(), None).await?;
        Ok(BenchClient {
            shared: Arc::new(Shared {
                cfg: cfg.clone(),
                wait,
                abort: Mutex::new(None),
                route: Mutex::new(Arc::new(route)),
            }),
        })
    }

    /// A route to the first IIOP profile of `ior`, reusing `reuse`'s
    /// connection when it is to the same endpoint.
    async fn route_to(
        ior: &Ior,
        cfg: &ClientConfig,
        wait: Wait,
        abort: Option<fn() -> bool>,
        chain: Vec<Hop>,
        reuse: Option<&Route>,
    ) -> Result<Route, BenchError> {
        let p: IiopProfile = ior.iiop_profile().ok_or_else(|| {
            BenchError::Reference(match reuse {
                Some(r) => format!("{} forwarded to a reference with no IIOP profile", r.addr),
                None => "the reference has no IIOP profile".into(),
            })
        })?;
        let endpoint = (p.host.clone(), p.port);
        // Code sets wherever the reference carries them (the IIOP profile,
        // or a TAG_MULTIPLE_COMPONENTS profile).
        let cs = ior.code_sets().map(|(cs, _)| cs);
        // The connection a forward came on serves the forwarded reference
        // too when it names the same endpoint, unless that reference
        // brings code sets the connection lacks: a connection opened for a
        // corbaloc (no code sets) cannot carry wchar data, the reference
        // TAO forwards its short keys to can, on a connection of its own.
        let reusable =
            |r: &&Route| r.endpoint == endpoint && (r.opts.wchar_set.is_some() || cs.is_none());
        let (link, opts, addr) = match reuse.filter(reusable) {
            Some(r) => (r.link.clone(), r.opts, r.addr.clone()),
            None => {
                let (link, opts) = Link::connect(&p, cs.as_ref(), cfg, wait, abort).await?;
                let addr = link.addr();
                (link, opts, addr)
            }
        };
        Ok(Route {
            link,
            endpoint,
            addr,
            target: TargetAddress::Key(p.object_key.clone()),
            opts,
            confirmed: AtomicBool::new(false),
            chain,
            forwarded_to: None,
            reference: ior.clone(),
        })
    }

    fn route(&self) -> Arc<Route> {
        self.shared
            .route
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Move to the reference `ior` that `from` forwarded to.
    async fn follow(
        &self,
        from: &Route,
        status: &'static str,
        ior: &Ior,
    ) -> Result<(), BenchError> {
        let abort = *self.shared.abort.lock().unwrap_or_else(|e| e.into_inner());
        let mut chain = from.chain.clone();
        let hop_from = location(&from.addr, &from.target);
        let next = Self::route_to(
            ior,
            &self.shared.cfg,
            self.shared.wait,
            abort,
            Vec::new(),
            Some(from),
        )
        .await?;
        chain.push(Hop {
            status,
            from: hop_from,
            to: location(&next.addr, &next.target),
        });
        let next = Route {
            chain,
            forwarded_to: Some(ior.clone()),
            ..next
        };
        *self.shared.route.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
        Ok(())
    }

    /// Go where the core's `why` says after an attempt on `from`:
    /// `target` is the call's [`Follow::target`].
    async fn again(&self, from: &Route, why: Again, target: &Ior) -> Result<(), BenchError> {
        match why {
            Again::Forward(status) => self.follow(from, status, target).await,
            Again::Retry => self.reconnect(from).await,
            // Same connection, another target address: `Follow::address`.
            Again::Readdress => Ok(()),
        }
    }

    /// A new connection for the route `from`, whose server closed the old
    /// one (unless another clone already replaced it).
    async fn reconnect(&self, from: &Route) -> Result<(), BenchError> {
        let abort = *self.shared.abort.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = Self::route_to(
            &from.reference,
            &self.shared.cfg,
            self.shared.wait,
            abort,
            Vec::new(),
            None,
        )
        .await?;
        let fresh = Route {
            target: from.target.clone(),
            chain: from.chain.clone(),
            forwarded_to: from.forwarded_to.clone(),
            ..fresh
        };
        let mut route = self.shared.route.lock().unwrap_or_else(|e| e.into_inner());
        if std::ptr::eq(Arc::as_ptr(&route), from) {
            *route = Arc::new(fresh);
        }
        Ok(())
    }

    /// Have a [`Wait::Read`] connection fail its call (and close) when
    /// `abort` returns true while it waits; no effect on the runtime's.
    /// Connections opened later to follow a forward get it too.
    pub fn set_abort(&self, abort: fn() -> bool) {
        *self.shared.abort.lock().unwrap_or_else(|e| e.into_inner()) = Some(abort);
        if let Link::Read(b) = &self.route().link {
            lock(b).set_abort(abort);
        }
    }

    /// The same connection (where the client's requests go now),
    /// addressing another object key.
    pub fn with_key(&self, key: &[u8]) -> BenchClient {
        let r = self.route();
        let abort = *self.shared.abort.lock().unwrap_or_else(|e| e.into_inner());
        BenchClient {
            shared: Arc::new(Shared {
                cfg: self.shared.cfg.clone(),
                wait: self.shared.wait,
                abort: Mutex::new(abort),
                route: Mutex::new(Arc::new(Route {
                    link: r.link.clone(),
                    endpoint: r.endpoint.clone(),
                    addr: r.addr.clone(),
                    target: TargetAddress::Key(bytes::Bytes::copy_from_slice(key)),
                    opts: r.opts,
                    confirmed: AtomicBool::new(false),
                    chain: Vec::new(),
                    forwarded_to: None,
                    reference: with_object_key(&r.reference, key),
                })),
            }),
        }
    }

    /// The CDR options (negotiated code sets) of the connection.
    pub fn options(&self) -> Options {
        self.route().opts
    }

    /// The target address used for requests now (after any forward).
    pub fn target(&self) -> TargetAddress {
        self.route().target.clone()
    }

    /// The peer's address (`host:port`) where requests go now.
    pub fn peer(&self) -> String {
        self.route().addr.clone()
    }

    /// The reference the last forward named, where requests go now
    /// (`None` when no forward was followed).
    pub fn forwarded_to(&self) -> Option<Ior> {
        self.route().forwarded_to.clone()
    }

    /// The forwards followed so far, in order (empty when none).
    pub fn forwards(&self) -> Vec<Hop> {
        self.route().chain.clone()
    }

    /// Whether the connection has failed or was closed.
    pub fn is_closed(&self) -> bool {
        match &self.route().link {
            Link::Reactor(c) => c.is_closed(),
            Link::Read(b) => lock(b).is_closed(),
        }
    }

    /// TCP segments with data our connection has sent so far (see
    /// [`BlockingConnection::data_segments_out`]); `None` on the runtime's
    /// connection, whose socket its task owns.
    pub fn data_segments_out(&self) -> Option<u32> {
        match &self.route().link {
            Link::Reactor(_) => None,
            Link::Read(b) => lock(b).data_segments_out(),
        }
    }

    /// Messages our connection has written headers-first so far (see
    /// [`BlockingConnection::head_first_writes`]); `None` on the runtime's
    /// connection.
    pub fn head_first_writes(&self) -> Option<u64> {
        match &self.route().link {
            Link::Reactor(_) => None,
            Link::Read(b) => Some(lock(b).head_first_writes()),
        }
    }

    /// Close the connection.
    pub fn close(&self) {
        match &self.route().link {
            Link::Reactor(c) => c.close(),
            Link::Read(b) => lock(b).close(),
        }
    }

    /// The connection's phase totals (E0.5; only a runtime connection with
    /// phase timing on counts them).
    pub fn phase_totals(&self) -> PhaseTotals {
        match &self.route().link {
            Link::Reactor(c) => c.phase_totals(),
            Link::Read(_) => PhaseTotals::default(),
        }
    }

    /// Zero the phase totals.
    pub fn reset_phase_totals(&self) {
        if let Link::Reactor(c) = &self.route().link {
            c.reset_phase_totals();
        }
    }

    /// Make sure the object's location is confirmed, following forwards: a
    /// `_non_existent` call unless a reply already came from where the
    /// client's requests go. A server that answers it with an exception is
    /// still where the object is.
    pub async fn resolve(&self) -> Result<(), BenchError> {
        if self.route().confirmed.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.send("_non_existent", ResponseMode::Twoway, |_| Ok(()))
            .await
            .map(drop)
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
        self.send(op, response, body).await.map(|(_, r)| r)
    }

    /// The request, following forwards; with the route the answer came
    /// from (one look at the shared route per attempt). A oneway cannot be
    /// forwarded (no reply comes back), so where no reply has confirmed the
    /// object's location yet a `_non_existent` goes first.
    async fn send<F>(
        &self,
        op: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<(Arc<Route>, Option<Reply>), BenchError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        // The call's rules start from where requests go now; `route` moves
        // when they say so.
        let start = self.route();
        let mut f = Follow::new(&start.reference, self.shared.cfg.max_forwards);
        let mut route = start.clone();
        loop {
            let target = f.address(&route.target)?;
            let probe =
                response != ResponseMode::Twoway && !route.confirmed.load(Ordering::Relaxed);
            let r = if probe {
                let nothing = |_: &mut Writer<'_>| Ok(());
                route
                    .exchange(&target, "_non_existent", ResponseMode::Twoway, &nothing)
                    .await
            } else {
                route.exchange(&target, op, response, &body).await
            };
            match f.on_reply(r, &route.addr)? {
                Step::Done(Some(reply)) => {
                    route.confirmed.store(true, Ordering::Relaxed);
                    if !probe {
                        return Ok((route, Some(reply)));
                    }
                }
                Step::Done(None) => return Ok((route, None)),
                Step::Again(why) => {
                    self.again(&route, why, f.target()).await?;
                    route = self.route();
                }
            }
        }
    }

    /// A LocateRequest for the target, following OBJECT_FORWARD(_PERM):
    /// the final reply ([`forwards`](Self::forwards) tells the chain).
    pub async fn locate(&self) -> Result<LocateReply, BenchError> {
        let start = self.route();
        let mut f = Follow::new(&start.reference, self.shared.cfg.max_forwards);
        let mut route = start.clone();
        loop {
            let l = match &route.link {
                Link::Reactor(c) => c.locate(&route.target).await,
                Link::Read(b) => lock(b).locate(&route.target),
            }?;
            let request_id = l.request_id;
            match f.on_locate(l, &route.addr)? {
                Step::Done((status, _)) => {
                    if status == LocateStatus::ObjectHere {
                        route.confirmed.store(true, Ordering::Relaxed);
                    }
                    return Ok(LocateReply { request_id, status });
                }
                Step::Again(why) => {
                    self.again(&route, why, f.target()).await?;
                    route = self.route();
                }
            }
        }
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
        self.resolve().await?;
        let route = self.route();
        Ok(match &route.link {
            Link::Reactor(c) => c.prepare(&route.target, op, response, body),
            Link::Read(b) => lock(b).prepare(&route.target, op, response, body),
        }?)
    }

    /// Send a prepared request again (a new request id, nothing
    /// re-marshalled). A forward in reply cannot be followed with the same
    /// bytes: the client moves to the new location (prepare again) and the
    /// call fails, naming the hop.
    pub async fn send_prepared(&self, p: &Prepared) -> Result<Option<Reply>, BenchError> {
        self.send_prepared_at(p).await.map(|(_, r)| r)
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
        let (route, reply) = self.send_prepared_at(p).await?;
        let Some(reply) = reply else {
            return Ok(None);
        };
        let body = route.reply_result(reply)?;
        route.decode(op, &body, f).map(Some)
    }

    async fn send_prepared_at(
        &self,
        p: &Prepared,
    ) -> Result<(Arc<Route>, Option<Reply>), BenchError> {
        let route = self.route();
        let r = match &route.link {
            Link::Reactor(c) => c.send_prepared(p).await,
            Link::Read(b) => lock(b).send_prepared(p),
        }?;
        let mut f = Follow::new(&route.reference, self.shared.cfg.max_forwards);
        match f.on_reply(Ok(r), &route.addr)? {
            Step::Done(reply) => Ok((route, reply)),
            Step::Again(why @ Again::Forward(_)) => {
                self.again(&route, why, f.target()).await?;
                let hop = self.forwards().last().map(|h| h.to_string());
                Err(BenchError::Reference(format!(
                    "a request prepared for reuse was forwarded ({}): prepare it again",
                    hop.unwrap_or_default()
                )))
            }
            // The bytes carry their target address: a prepared request
            // cannot be sent in another disposition.
            Step::Again(_) => Err(BenchError::Reference(format!(
                "{} asks for another addressing disposition, which a prepared request cannot use",
                route.addr
            ))),
        }
    }

    /// A reply's NO_EXCEPTION body, or its exception as an error naming
    /// the peer.
    pub fn reply_result(&self, reply: Reply) -> Result<Body, ClientError> {
        self.route().reply_result(reply)
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
        let (route, b) = self.call_at(op, body).await?;
        route.decode(op, &b, f)
    }

    async fn call_at<F>(&self, op: &str, body: F) -> Result<(Arc<Route>, Body), BenchError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let (route, reply) = self.send(op, ResponseMode::Twoway, body).await?;
        let reply = reply.ok_or(ClientError::LocallyClosed)?;
        let b = route.reply_result(reply)?;
        Ok((route, b))
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
    /// confirmed. In a stream of small oneways those layers were a fifth
    /// of the client's own CPU per call, and a sender that spends more per
    /// call falls behind the server, which then sleeps and has to be woken
    /// by every call (docs/performance.md).
    ///
    /// `None` where the fast path does not apply, or where the connection
    /// failed in a way the full path retries on a new one: the full path
    /// then sees the same failure without writing anything, reconnects
    /// and sends again, exactly as had it made the first attempt itself.
    pub fn oneway_now<F>(&self, op: &str, body: F) -> Option<Result<(), BenchError>>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        // A reactor client's link is never a blocking one: no look at the
        // route (the full path takes its own).
        if self.shared.wait != Wait::Read {
            return None;
        }
        let route = self.route();
        let Link::Read(b) = &route.link else {
            return None;
        };
        if !route.confirmed.load(Ordering::Relaxed) {
            return None;
        }
        // A fresh call's address is the route's own (`Follow::address`
        // with no disposition asked for).
        let sent = lock(b).request(&route.target, op, ResponseMode::Oneway, &body);
        match sent {
            Ok(_) => Some(Ok(())),
            Err(e) if e.is_retryable() => None,
            Err(e) => Some(Err(e.into())),
        }
    }

    /// Decode a reply body with the connection's options; an error names
    /// the operation and the peer.
    pub fn decode<T>(
        &self,
        op: &str,
        body: &Body,
        f: impl FnOnce(&mut Reader<'_>) -> Result<T, CdrError>,
    ) -> Result<T, BenchError> {
        self.route().decode(op, body, f)
    }

    /// How long the TLS handshake of the current connection took, after
    /// its TCP connect (`None`: plain TCP).
    pub fn tls_handshake(&self) -> Option<std::time::Duration> {
        self.route().link.tls_handshake()
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

    /// `get_single(i)`.
    pub async fn get_single(&self, i: u32) -> Result<Ior, BenchError> {
        let args = |w: &mut Writer<'_>| {
            w.write_u32(i);
            Ok(())
        };
        let (route, b) = self.call_at("get_single", args).await?;
        Ior::decode(&mut b.reader(route.opts)).map_err(|e| {
            BenchError::Reference(format!("get_single reply from {}: {e}", route.addr))
        })
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

/// The blocking connection (a poisoned lock only means a caller panicked
/// mid-call; the connection state is still consistent).
fn lock(b: &Mutex<BlockingConnection>) -> MutexGuard<'_, BlockingConnection> {
    b.lock().unwrap_or_else(|e| e.into_inner())
}

/// `ior` addressing object key `key` instead: its first IIOP profile with
/// the key replaced, every other profile as it was.
fn with_object_key(ior: &Ior, key: &[u8]) -> Ior {
    let mut out = ior.clone();
    if let Some(slot) = out
        .profiles
        .iter_mut()
        .find(|p| matches!(p.iiop(), Some(Ok(_))))
    {
        if let Some(Ok(mut p)) = slot.iiop() {
            p.object_key = bytes::Bytes::copy_from_slice(key);
            *slot = p.to_tagged();
        }
    }
    out
}
