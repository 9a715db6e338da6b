//! A client's stub for one object: where its calls go now (the routing
//! core's [`Route`], remembered across calls: after a forward, later calls
//! go straight to where it pointed), the connection that carries them
//! (its own, waiting either way: [`Wait`]), and the calls, each driven by
//! the core's [`Call`] through the one loop in [`link`](crate::link).
//!
//! Nothing is decided here that the core decides: forwards, the retry
//! after CloseConnection, the addressing disposition, the probe before a
//! oneway, the LocateRequest first for wide characters, and whether the
//! connection in hand can carry a forward's destination
//! ([`Destination::carried_by`](iiop_giop::conn::route::Destination::carried_by)).
//! What the stub keeps is bookkeeping: the route and connection its
//! clones share ([`Bound`]), replaced as the core's calls move.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iiop_cdr::{CdrError, Options, Writer};
use iiop_giop::conn::client::{ClientError, ConnConfig, Prepared};
use iiop_giop::conn::route::{Answer, Call, Hop, Kind, Next, Progress, Route};
use iiop_giop::ior::Ior;
use iiop_giop::message::{LocateReply, Reply, ResponseMode, TargetAddress};

use crate::config::ClientConfig;
use crate::connection::PhaseTotals;
pub use crate::link::Wait;
use crate::link::{drive, Carriers, Link, Op};

/// Where a stub's calls go now: the route, the connection that carries
/// it, and whether a reply has come from there.
#[derive(Debug)]
pub struct Bound {
    route: Route,
    link: Link,
    /// A reply came from this destination: a oneway needs no probe.
    confirmed: AtomicBool,
}

impl Bound {
    fn new(route: Route, link: Link, confirmed: bool) -> Bound {
        Bound {
            route,
            link,
            confirmed: AtomicBool::new(confirmed),
        }
    }

    /// The route.
    pub fn route(&self) -> &Route {
        &self.route
    }

    /// The connection.
    pub fn link(&self) -> &Link {
        &self.link
    }

    /// `host:port` of the peer.
    pub fn addr(&self) -> &str {
        self.link.addr()
    }

    /// The CDR options (negotiated code sets) replies from here read with.
    pub fn options(&self) -> Options {
        self.link.options()
    }

    /// The target address requests here carry.
    pub fn target(&self) -> &TargetAddress {
        &self.route.destination().key
    }

    #[inline]
    fn confirmed(&self) -> bool {
        self.confirmed.load(Ordering::Relaxed)
    }

    /// Written only when it changes: clones calling at once share it.
    #[inline]
    fn confirm(&self) {
        if !self.confirmed() {
            self.confirmed.store(true, Ordering::Relaxed);
        }
    }
}

/// What the clones of one stub share.
#[derive(Debug)]
struct Shared {
    cfg: ClientConfig,
    /// What the core reads of `cfg`.
    conn: ConnConfig,
    wait: Wait,
    abort: Mutex<Option<fn() -> bool>>,
    bound: Mutex<Arc<Bound>>,
}

/// One object's calls, on a connection of its own (clones share it),
/// following the routing core.
#[derive(Debug, Clone)]
pub struct Stub {
    shared: Arc<Shared>,
}

impl Stub {
    /// Calls to `ior`, on a new connection that waits as `wait` says
    /// (GIOP version, TLS and code sets as the core decides for it).
    pub async fn connect(ior: &Ior, cfg: &ClientConfig, wait: Wait) -> Result<Stub, ClientError> {
        let conn = cfg.conn();
        let route = Route::new(ior.clone(), &conn)?;
        let link = Link::open(route.destination(), cfg, wait, None).await?;
        Ok(Stub {
            shared: Arc::new(Shared {
                cfg: cfg.clone(),
                conn,
                wait,
                abort: Mutex::new(None),
                bound: Mutex::new(Arc::new(Bound::new(route, link, false))),
            }),
        })
    }

    /// Where calls go now.
    #[inline]
    pub fn bound(&self) -> Arc<Bound> {
        self.shared
            .bound
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn abort(&self) -> Option<fn() -> bool> {
        *self.shared.abort.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How this stub waits.
    pub fn wait(&self) -> Wait {
        self.shared.wait
    }

    /// Have a [`Wait::Read`] connection fail its call (and close) when
    /// `abort` returns true while it waits; no effect on the runtime's.
    /// Connections opened later (to follow a forward) get it too.
    pub fn set_abort(&self, abort: fn() -> bool) {
        *self.shared.abort.lock().unwrap_or_else(|e| e.into_inner()) = Some(abort);
        self.bound().link.set_abort(abort);
    }

    /// The same connection (where calls go now), addressing another
    /// object key: a stub of its own, with no forwards followed yet.
    pub fn with_key(&self, key: &[u8]) -> Stub {
        let now = self.bound();
        let bound = Bound::new(now.route.with_key(key), now.link.clone(), false);
        Stub {
            shared: Arc::new(Shared {
                cfg: self.shared.cfg.clone(),
                conn: self.shared.conn,
                wait: self.shared.wait,
                abort: Mutex::new(self.abort()),
                bound: Mutex::new(Arc::new(bound)),
            }),
        }
    }

    /// The reference the last forward named, where calls go now (`None`
    /// when no forward was followed).
    pub fn forwarded_to(&self) -> Option<Ior> {
        self.bound().route.forwarded_to().cloned()
    }

    /// The forwards followed so far, in order (empty when none).
    pub fn forwards(&self) -> Vec<Hop> {
        self.bound().route.chain().to_vec()
    }

    /// Whether a reply has confirmed where calls go now.
    pub fn is_confirmed(&self) -> bool {
        self.bound().confirmed()
    }

    /// A request with any operation, body and response mode, as the core
    /// routes it (`body` runs once per attempt): the reply (`None` for a
    /// oneway) and where it came from.
    pub async fn request<F>(
        &self,
        op: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<(Arc<Bound>, Option<Reply>), ClientError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let op = Op::Request {
            operation: op,
            response,
            body: &body,
        };
        let (at, answer) = self.drive(op).await?;
        let reply = answer.into_reply(at.addr())?;
        Ok((at, reply))
    }

    /// A oneway written on the calling thread where it can be: a
    /// [`Wait::Read`] stub whose destination a reply has confirmed (the
    /// core then sends it as it is). `None` where the full path must take
    /// it (a probe first, no blocking connection, or an answer the core
    /// acts on, such as a connection the server closed): it then sees the
    /// same state without anything written, and goes on from there.
    pub fn oneway_now<F>(&self, op: &str, body: F) -> Option<Result<(), ClientError>>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        // A reactor stub's link is never a blocking one: no look at the
        // route (the full path takes its own).
        if self.shared.wait != Wait::Read {
            return None;
        }
        let at = self.bound();
        let kind = Kind::Request(ResponseMode::Oneway);
        let mut call = at.route.call(kind, at.confirmed(), &self.shared.conn);
        let sent = match call.next() {
            Ok(Next::Request(to)) => at.link.request_now(&to, op, ResponseMode::Oneway, &body)?,
            _ => return None,
        };
        match call.on_answer(sent.map(Answer::Reply), at.addr()) {
            Ok(Progress::Done(_)) => Some(Ok(())),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// A LocateRequest for the object, following OBJECT_FORWARD(_PERM):
    /// the final reply ([`forwards`](Self::forwards) tells the chain).
    pub async fn locate(&self) -> Result<LocateReply, ClientError> {
        let op = Op::<fn(&mut Writer<'_>) -> Result<(), CdrError>>::Locate;
        let (at, answer) = self.drive(op).await?;
        answer.into_locate(at.addr())
    }

    /// Make sure a reply has confirmed where calls go, following
    /// forwards: a `_non_existent` unless one already has. A server that
    /// answers it with an exception is still where the object is.
    pub async fn resolve(&self) -> Result<(), ClientError> {
        if self.bound().confirmed() {
            return Ok(());
        }
        let nothing = |_: &mut Writer<'_>| Ok(());
        self.request("_non_existent", ResponseMode::Twoway, nothing)
            .await
            .map(drop)
    }

    /// Build a request to the object once, for
    /// [`send_prepared`](Self::send_prepared), after resolving where it
    /// is (a prepared request cannot follow a forward).
    pub async fn prepare<F>(
        &self,
        op: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<Prepared, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        self.resolve().await?;
        let at = self.bound();
        at.link.prepare(at.target(), op, response, body)
    }

    /// Send a prepared request again (a new request id, nothing
    /// re-marshalled). A forward in reply cannot be followed with the same
    /// bytes: the stub moves to the new location (prepare again) and the
    /// call fails, naming the hop.
    pub async fn send_prepared(
        &self,
        p: &Prepared,
    ) -> Result<(Arc<Bound>, Option<Reply>), ClientError> {
        let (at, answer) = self
            .drive(Op::<fn(&mut Writer<'_>) -> Result<(), CdrError>>::Prepared(
                p,
            ))
            .await?;
        let reply = answer.into_reply(at.addr())?;
        Ok((at, reply))
    }

    /// One call of `op` from where calls go now: its answer and where it
    /// came from.
    async fn drive<F>(&self, op: Op<'_, F>) -> Result<(Arc<Bound>, Answer), ClientError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let start = self.bound();
        // The call lives in this block (dropped in place, not moved).
        let (r, moved, confirmed) = {
            let mut call = start
                .route
                .call(op.kind(), start.confirmed(), &self.shared.conn);
            let mut own = Own {
                stub: self,
                start: &start,
                moved: None,
            };
            let r = drive(&mut call, op, &mut own).await;
            (r, own.moved, call.confirmed())
        };
        let at = moved.unwrap_or(start);
        if confirmed {
            at.confirm();
        }
        Ok((at, r?))
    }

    /// The CDR options (negotiated code sets) of the connection.
    pub fn options(&self) -> Options {
        self.bound().options()
    }

    /// The target address used for requests now (after any forward).
    pub fn target(&self) -> TargetAddress {
        self.bound().target().clone()
    }

    /// The peer's address (`host:port`) where requests go now.
    pub fn peer(&self) -> String {
        self.bound().addr().to_string()
    }

    /// Whether the connection has failed or was closed.
    pub fn is_closed(&self) -> bool {
        self.bound().link.is_closed()
    }

    /// Close the connection.
    pub fn close(&self) {
        self.bound().link.close()
    }

    /// How long the TLS handshake of the current connection took, after
    /// its TCP connect (`None`: plain TCP).
    pub fn tls_handshake(&self) -> Option<Duration> {
        self.bound().link.tls_handshake()
    }

    /// TCP segments with data the connection has sent so far (see
    /// [`BlockingConnection::data_segments_out`](crate::BlockingConnection::data_segments_out));
    /// `None` on the runtime's connection, whose socket its task owns.
    pub fn data_segments_out(&self) -> Option<u32> {
        self.bound().link.data_segments_out()
    }

    /// Messages the connection has written headers-first so far (see
    /// [`BlockingConnection::head_first_writes`](crate::BlockingConnection::head_first_writes));
    /// `None` on the runtime's connection.
    pub fn head_first_writes(&self) -> Option<u64> {
        self.bound().link.head_first_writes()
    }

    /// The connection's phase totals (only a runtime connection with
    /// phase timing on counts them).
    pub fn phase_totals(&self) -> PhaseTotals {
        self.bound().link.phase_totals()
    }

    /// Zero the phase totals.
    pub fn reset_phase_totals(&self) {
        self.bound().link.reset_phase_totals()
    }
}

/// A call's connections: the stub's own, replaced as the call moves.
struct Own<'s> {
    stub: &'s Stub,
    /// Where the call started.
    start: &'s Arc<Bound>,
    /// Where it is now, once it moved.
    moved: Option<Arc<Bound>>,
}

impl Own<'_> {
    fn now(&self) -> &Arc<Bound> {
        self.moved.as_ref().unwrap_or(self.start)
    }
}

impl Carriers for Own<'_> {
    fn link(&self) -> &Link {
        &self.now().link
    }

    /// A forward: later calls start where it led (the route and hops
    /// from the start of the call), on the connection in hand when it
    /// carries the new destination, else a new one that waits the same
    /// way. A connection the server closed: a new one to the same
    /// destination, for later calls too unless a clone replaced it first.
    async fn relink(&mut self, call: &Call<'_>, why: &Progress) -> Result<(), ClientError> {
        let now = self.now().clone();
        let dest = call.destination();
        let (route, link) = match why {
            Progress::Forwarded(_) if now.link.carries(dest) => {
                (self.start.route.after(call), now.link.clone())
            }
            Progress::Forwarded(_) => {
                let cfg = &self.stub.shared.cfg;
                let link = Link::open(dest, cfg, self.stub.shared.wait, self.stub.abort()).await?;
                (self.start.route.after(call), link)
            }
            _ => {
                let cfg = &self.stub.shared.cfg;
                let link = Link::open(dest, cfg, self.stub.shared.wait, self.stub.abort()).await?;
                (now.route.clone(), link)
            }
        };
        let confirmed = matches!(why, Progress::Reconnect) && now.confirmed();
        let next = Arc::new(Bound::new(route, link, confirmed));
        {
            let mut bound = self
                .stub
                .shared
                .bound
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if matches!(why, Progress::Forwarded(_)) || Arc::ptr_eq(&bound, &now) {
                *bound = next.clone();
            }
        }
        self.moved = Some(next);
        Ok(())
    }
}
