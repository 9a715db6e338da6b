//! One IIOP connection driven by tokio tasks: [`Connection`], a cloneable
//! handle with many requests in flight, one reader and one writer task,
//! requests matched to replies by request id (one oneshot per twoway).
//!
//! Order of use: build a [`ClientConfig`], [`Connection::connect`], then
//! [`Connection::request`] with a [`TargetAddress`](iiop_giop::message::TargetAddress).
//! Calls to an object by its reference, with forwards followed, go
//! through the pooled [`Client`](crate::Client) or a
//! [`Stub`](crate::stub::Stub) instead.
//!
//! The request path writes the GIOP message straight into the connection's
//! output buffer under a short lock (the body closure runs there too); the
//! writer task takes whatever accumulated and writes it with one vectored
//! call, so requests issued together leave in one segment. [`Prepared`]
//! holds a complete message so the same request can be sent again with
//! only its request id patched.
//!
//! Over TLS ([`iiop_giop::conn::endpoint`] decides) the stream is tokio-rustls'
//! over the TCP socket, split into a read half for the reader task and a
//! write half the writer task alone writes (no direct write from the
//! calling task: a TLS write needs the session's lock and a flush).
//!
//! This module is a driver: the connection's protocol decisions are made
//! by the pure core's parts ([`iiop_giop::conn::client`]), which the tasks hold
//! where they need them: the pending-request table under one lock, the
//! send queue under another, the received bytes in the reader task alone.
//! It calls them in the order the core sets (begin, queue or abandon;
//! answers through `next_waited`; at a deadline, the write rule, then the
//! late answers). A twoway call takes the same three lock acquisitions as
//! ever (register its waiter, queue its bytes, and the reader's to hand
//! the reply over).
//!
//! Zero-copy output: the output queue is a buffer plus a
//! [`Splices`](iiop_cdr::Splices) list ([`iiop_giop::conn::out`]).
//! Shared runs of at least [`ClientConfig::splice_cutoff`] bytes (an
//! [`Octets`](iiop_cdr::Octets) or [`CharSeq`](iiop_cdr::CharSeq) in a
//! request body, the body of a [`Prepared`] message) are not copied into
//! the buffer but queued by reference and handed to the kernel with
//! `writev`, between the buffer pieces around them (omniORB's
//! `directSendCutOff` idea). The bytes on the wire are the same; a message
//! that must be fragmented is flattened first.
//!
//! Callbacks ([`ClientConfig::callbacks`]): the core offers the
//! connection (BI_DIR_IIOP on every request) and lets the server's
//! Requests arrive on it; the reader task answers each with the servant
//! at once and the writer task sends the Reply, as it sends requests.

use std::io::IoSlice;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use iiop_cdr::{CdrError, Writer};
use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::futures::Notified;
use tokio::sync::{oneshot, watch, Notify};
use tokio_rustls::client::TlsStream;

use crate::config::{Callbacks, ClientConfig};
use crate::tls::{handshake_failure, server_name, Side};
use iiop_giop::codec::CodecConfig;
use iiop_giop::conn::client::{
    Arrival, ClientError, ClientSetup, Coalescing, Inbound, Incoming, Outgoing, Requests, SendQueue,
};
use iiop_giop::conn::deadline::Timer;
use iiop_giop::conn::endpoint::Endpoint;
use iiop_giop::conn::out::{Outbox, MAX_IOV};
use iiop_giop::conn::server::Handler;
use iiop_giop::context::CodeSetComponentInfo;
use iiop_giop::header::Version;

/// Output bytes queued (spliced runs included) beyond which new requests
/// wait for the writer.
const HIGH_WATER: usize = 8 << 20;

type Waiter = oneshot::Sender<Result<(Incoming, Option<ReadStamp>), ClientError>>;

/// Where a call's time went, summed over calls ([`ClientConfig::phase_timing`];
/// E0.5). Per call: `marshal` encodes the request into the output buffer;
/// `write` hands it to the kernel when the calling task writes it itself
/// (a request queued behind others has `write` 0 and its time counts as
/// `wait`); `wait` runs from then until the read that brings the reply's
/// first bytes starts (the server, the network, this thread's wake-up);
/// `read` is the time in those reads plus handing the reply to the caller;
/// `demarshal` frames the reply and decodes its GIOP headers (the body is
/// the caller's to decode and time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PhaseTotals {
    /// Twoway calls timed (all five phases).
    pub calls: u64,
    /// Oneway calls timed (`marshal` and `write` only).
    pub oneways: u64,
    pub marshal: Duration,
    pub write: Duration,
    pub wait: Duration,
    pub read: Duration,
    pub demarshal: Duration,
}

/// The reader's timestamps for one reply.
#[derive(Debug, Clone, Copy)]
struct ReadStamp {
    /// Start of the first read that brought bytes of this reply.
    first_read: Instant,
    /// Time spent in those reads.
    reading: Duration,
    /// The reply's headers decoded, handed to the caller.
    decoded: Instant,
    /// Time spent decoding the headers.
    decoding: Duration,
}

/// The reader task's running timestamps (phase timing only).
#[derive(Debug, Default)]
struct ReadClock {
    /// First read of the frame now being assembled.
    first_read: Option<Instant>,
    reading: Duration,
    last_read: Option<Instant>,
}

impl ReadClock {
    /// A read that brought bytes started at `t0` and ends now.
    fn read(&mut self, t0: Instant) {
        self.first_read.get_or_insert(t0);
        self.reading += t0.elapsed();
        self.last_read = Some(t0);
    }
}

/// Bytes waiting to be written (with whether the CodeSets context went
/// out), and whether the writer task is writing (then callers must not
/// write directly, or bytes would reorder).
struct OutState {
    q: SendQueue,
    writing: bool,
    /// Nagle between the oneways callers write themselves
    /// ([`ClientSetup::coalesce_oneways`]; TCP only).
    coalescing: Coalescing,
}

impl OutState {
    /// [`Coalescing::before_write`] on `wr`, for what is queued now:
    /// every writer (a caller, the writer task, the goodbye) asks it so.
    fn before_write(&mut self, wr: &OwnedWriteHalf) {
        self.q
            .before_write(&mut self.coalescing, |d| wr.as_ref().set_nodelay(d));
    }
}

/// The write half of a TLS stream.
type TlsWriteHalf = tokio::io::WriteHalf<TlsStream<TcpStream>>;

/// The connection's write side, as the driver is started with it.
enum WriteSide {
    /// The TCP socket's write half: shared ([`Shared::wr`]), any task
    /// writes with `try_write` under the output lock.
    Tcp(OwnedWriteHalf),
    /// The TLS stream's write half: the writer task owns it, and no one
    /// else writes (rustls' session cannot be written from two tasks).
    Tls(TlsWriteHalf),
}

struct Shared {
    /// Address, version, byte order, negotiated options, code sets,
    /// fragmenting, head-first, timeout.
    setup: ClientSetup,
    local: std::net::SocketAddr,
    /// How long the TLS handshake took (`None`: plain TCP).
    handshake: Option<Duration>,
    direct_write: bool,
    /// Phase timing totals, when [`ClientConfig::phase_timing`] is on.
    phases: Option<Mutex<PhaseTotals>>,
    /// What deadlines are counted from.
    epoch: Instant,
    /// When the reaper wakes next, in µs from `epoch`: the core's
    /// [`Requests::next_deadline`] when it last looked (`u64::MAX`: no
    /// request had a deadline).
    reaper_at_us: AtomicU64,
    /// Woken when a request's deadline comes before `reaper_at_us`.
    deadline_sooner: Notify,
    out: Mutex<OutState>,
    /// A TCP connection's write half, shared with the writer task:
    /// `try_write` needs only `&self`. `None` over TLS (the writer task
    /// owns that write half).
    wr: Option<OwnedWriteHalf>,
    out_ready: Notify,
    out_space: Notify,
    /// Wakes the writer out of a write the stream can no longer finish
    /// ([`Shared::lose`]).
    write_lost: Notify,
    /// Who waits for which reply; whether the connection is dead.
    pending: Mutex<Requests<Waiter>>,
    handles: AtomicUsize,
    shutdown: watch::Sender<bool>,
    /// The servant of a connection offered for callbacks
    /// ([`ClientConfig::callbacks`]): the reader task answers the
    /// server's Requests with it.
    callbacks: Option<Callbacks>,
}

impl Shared {
    fn fail_all(&self, err: ClientError) {
        let waiters = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .fail(err.clone());
        for w in waiters {
            let _ = w.send(Err(err.clone()));
        }
        let _ = self.shutdown.send(true);
        self.out_space.notify_waiters();
    }

    /// The stream is lost (a request could not be written in its time):
    /// nothing more is written, the writer stops where it is, every
    /// request fails with `err`, and the socket is shut down.
    fn lose(&self, err: ClientError) {
        self.out
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .q
            .outbox()
            .clear();
        self.fail_all(err);
        self.write_lost.notify_one();
        if let Some(wr) = &self.wr {
            let _ = socket2::SockRef::from(wr.as_ref()).shutdown(std::net::Shutdown::Both);
        }
    }

    /// The output queue, or while it holds more than [`HIGH_WATER`] (and
    /// the connection lives) what to wait on for room.
    fn out_with_room(&self) -> Result<MutexGuard<'_, OutState>, Notified<'_>> {
        let st = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if st.q.pending().len() < HIGH_WATER {
            return Ok(st);
        }
        let room = self.out_space.notified();
        drop(st);
        if self.dead().is_some() {
            return Ok(self.out.lock().unwrap_or_else(|e| e.into_inner()));
        }
        Err(room)
    }

    /// What the deadlines passed at `now` mean, as the core decides: a
    /// request not written whole in its time loses the stream
    /// ([`SendQueue::check_writes`]); requests whose answer is late fail
    /// with [`ClientError::Timeout`] and the server gets CancelRequest.
    fn reap(&self, now: Instant) {
        let lost = {
            let mut st = self.out.lock().unwrap_or_else(|e| e.into_inner());
            st.q.check_writes(&self.setup, now).err()
        };
        if let Some(e) = lost {
            self.lose(e);
            return;
        }
        let expired = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .expire(now);
        if expired.is_empty() {
            return;
        }
        {
            let mut st = self.out.lock().unwrap_or_else(|e| e.into_inner());
            st.q.expired(&self.setup, &expired);
        }
        self.out_ready.notify_one();
        for e in expired {
            let err = e.error(&self.setup.addr);
            let _ = e.waiter.send(Err(err));
        }
    }

    /// `at` in µs from the epoch (`u64::MAX`: never).
    fn micros(&self, at: Option<Instant>) -> u64 {
        at.map_or(u64::MAX, |at| {
            u64::try_from(at.saturating_duration_since(self.epoch).as_micros())
                .unwrap_or(u64::MAX - 1)
        })
    }

    fn dead(&self) -> Option<ClientError> {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .dead()
            .cloned()
    }
}

/// A cloneable handle to one IIOP connection. The socket closes when the
/// last handle is dropped.
pub struct Connection {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("addr", &self.shared.setup.addr)
            .field("version", &self.shared.setup.wire.version)
            .field("order", &self.shared.setup.wire.order)
            .finish()
    }
}

impl Clone for Connection {
    fn clone(&self) -> Self {
        self.shared.handles.fetch_add(1, Ordering::Relaxed);
        Connection {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if self.shared.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _ = self.shared.shutdown.send(true);
        }
    }
}

impl Connection {
    /// Connect to `host:port` speaking `version`. With `code_sets` (the
    /// target IOR's TAG_CODE_SETS) and GIOP ≥ 1.1, code sets are negotiated
    /// and sent in a CodeSets context on the first request.
    pub async fn connect(
        host: &str,
        port: u16,
        version: Version,
        cfg: &ClientConfig,
        code_sets: Option<&CodeSetComponentInfo>,
    ) -> Result<Connection, ClientError> {
        let ep = Endpoint {
            host: host.to_string(),
            port,
            tls: cfg.tls.always(),
        };
        Self::connect_to(&ep, version, cfg, code_sets).await
    }

    /// Connect to `ep` (TLS when it says so, with [`ClientConfig::tls`])
    /// speaking `version`; code sets as [`connect`](Self::connect).
    pub async fn connect_to(
        ep: &Endpoint,
        version: Version,
        cfg: &ClientConfig,
        code_sets: Option<&CodeSetComponentInfo>,
    ) -> Result<Connection, ClientError> {
        let addr = ep.addr();
        let connect_err = |e: std::io::Error| ClientError::Connect {
            addr: addr.clone(),
            message: e.to_string(),
        };
        let sockaddr = tokio::time::timeout(cfg.connect_timeout, tokio::net::lookup_host(&addr))
            .await
            .map_err(|_| ClientError::ConnectTimeout {
                addr: addr.clone(),
                after: cfg.connect_timeout,
            })?
            .map_err(connect_err)?
            .next()
            .ok_or_else(|| ClientError::Connect {
                addr: addr.clone(),
                message: "host name resolved to no address".into(),
            })?;
        let socket = crate::socket::tcp_socket(sockaddr, cfg)
            .and_then(|s| {
                s.set_nonblocking(true)?;
                Ok(TcpSocket::from_std_stream(s.into()))
            })
            .map_err(connect_err)?;
        let stream = tokio::time::timeout(cfg.connect_timeout, socket.connect(sockaddr))
            .await
            .map_err(|_| ClientError::ConnectTimeout {
                addr: addr.clone(),
                after: cfg.connect_timeout,
            })?
            .map_err(connect_err)?;
        let local = stream.local_addr().map_err(connect_err)?;
        if ep.tls {
            let t0 = Instant::now();
            let tls = tls_handshake(stream, ep, cfg).await?;
            let handshake = Some(t0.elapsed());
            let (rd, wr) = tokio::io::split(tls);
            let wr = WriteSide::Tls(wr);
            let link = (addr, local, handshake);
            return Self::start(link, rd, wr, version, cfg, code_sets);
        }
        let (rd, wr) = stream.into_split();
        let link = (addr, local, None);
        Self::start(link, rd, WriteSide::Tcp(wr), version, cfg, code_sets)
    }

    /// The driver's tasks over a connected stream.
    /// `link`: the peer's address, ours, and the TLS handshake's time.
    fn start<R: AsyncRead + Unpin + Send + 'static>(
        (addr, local, handshake): (String, std::net::SocketAddr, Option<Duration>),
        rd: R,
        wr: WriteSide,
        version: Version,
        cfg: &ClientConfig,
        code_sets: Option<&CodeSetComponentInfo>,
    ) -> Result<Connection, ClientError> {
        let mut setup = ClientSetup::negotiate(addr, version, &cfg.conn(), code_sets);
        // Offered for callbacks: our own end is the listen point.
        if cfg.callbacks.is_some() {
            setup.offer_callbacks(&local.ip().to_string(), local.port())?;
        }
        let (shutdown, shutdown_rx) = watch::channel(false);
        let (wr, tls_wr) = match wr {
            WriteSide::Tcp(w) => (Some(w), None),
            WriteSide::Tls(w) => (None, Some(w)),
        };
        let coalescing = Coalescing::new(&setup, || {
            let w = wr.as_ref()?;
            crate::socket::segment_size(w.as_ref()).ok()
        });
        let shared = Arc::new(Shared {
            setup,
            local,
            handshake,
            direct_write: cfg.direct_write && wr.is_some(),
            phases: cfg.phase_timing.then(Mutex::default),
            epoch: Instant::now(),
            reaper_at_us: AtomicU64::new(u64::MAX),
            deadline_sooner: Notify::new(),
            out: Mutex::new(OutState {
                q: SendQueue::new(&cfg.conn()),
                writing: false,
                coalescing,
            }),
            wr,
            out_ready: Notify::new(),
            out_space: Notify::new(),
            write_lost: Notify::new(),
            pending: Mutex::new(Requests::default()),
            handles: AtomicUsize::new(1),
            shutdown,
            callbacks: cfg.callbacks.clone(),
        });
        tokio::spawn(reader_task(
            shared.clone(),
            rd,
            cfg.codec,
            shutdown_rx.clone(),
        ));
        tokio::spawn(reaper_task(shared.clone(), shutdown_rx.clone()));
        tokio::spawn(writer_task(shared.clone(), tls_wr, shutdown_rx));
        Ok(Connection { shared })
    }

    /// Our end of the TCP connection.
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.shared.local
    }

    /// The socket's TCP_NODELAY now (`None` over TLS): off only between
    /// coalesced oneways ([`ClientConfig::coalesce_oneways`]) or with
    /// `nodelay: false`.
    pub fn nodelay(&self) -> Option<std::io::Result<bool>> {
        self.shared.wr.as_ref().map(|wr| wr.as_ref().nodelay())
    }

    /// How long the TLS handshake took, after the TCP connect (`None`:
    /// plain TCP).
    pub fn tls_handshake(&self) -> Option<Duration> {
        self.shared.handshake
    }

    /// Whether the connection has failed or was closed.
    pub fn is_closed(&self) -> bool {
        self.shared.dead().is_some() || *self.shared.shutdown.borrow()
    }

    /// Close the connection: pending requests fail with `LocallyClosed`.
    pub fn close(&self) {
        self.shared.fail_all(ClientError::LocallyClosed);
    }

    client_api!(async: [async], self: [&], await: [await]);

    /// A reference to the object this connection serves for callbacks
    /// ([`ClientConfig::callbacks`]) under `key`, typed `type_id`; `None`
    /// when it was not offered for callbacks.
    pub fn callback_reference(&self, type_id: &str, key: &[u8]) -> Option<iiop_giop::ior::Ior> {
        self.shared.setup.callback_reference(type_id, key)
    }

    /// What the connection fixed when it opened.
    pub(crate) fn setup(&self) -> &ClientSetup {
        &self.shared.setup
    }

    /// Queue `out` with a new request id, write it from this task when
    /// nothing else is in flight, and wait for the answer when one is
    /// expected. Locks per call: the pending table (to wait), the send
    /// queue, and the reader's lock of the pending table when the answer
    /// comes.
    async fn exchange<F>(
        &self,
        out: Outgoing<'_, F>,
        timeout: Option<Duration>,
    ) -> Result<Option<Incoming>, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let s = &self.shared;
        let what = out.sending();
        let timer = timeout
            .filter(|_| what.expects_reply())
            .map(|t| Timer::started(t, Instant::now()));
        let mut rx = None;
        let (ticket, alone) = {
            let mut p = s.pending.lock().unwrap_or_else(|e| e.into_inner());
            // With nothing else in flight, writing from this task saves a
            // task switch; with company, the writer task batches instead.
            let alone = s.direct_write && p.is_empty();
            let waiter = || {
                let (tx, r) = oneshot::channel();
                rx = Some(r);
                tx
            };
            (p.begin(what, waiter, timer)?, alone)
        };
        if let Some(t) = timer {
            // The reaper sleeps until the earliest deadline it saw; wake it
            // only for a sooner one (with one timeout for every call,
            // deadlines only grow, and nobody is woken).
            let us = s.micros(t.deadline());
            if us < s.reaper_at_us.load(Ordering::Relaxed)
                && s.reaper_at_us.fetch_min(us, Ordering::Relaxed) > us
            {
                s.deadline_sooner.notify_one();
            }
        }
        let timed = s.phases.is_some();
        let t_start = timed.then(Instant::now);
        let mut t_encoded = None;
        let res = {
            // Back-pressure: wait while the writer is far behind (one lock
            // per call when it is not).
            let mut st = loop {
                let wait = match s.out_with_room() {
                    Ok(st) => break st,
                    Err(wait) => wait,
                };
                wait.await;
            };
            // (Held oneways go out with this.)
            let idle = alone && !st.writing && (st.q.pending().is_empty() || st.q.holds());
            match st.q.queue(&s.setup, &ticket, out) {
                Ok(()) => {
                    if timed {
                        t_encoded = Some(Instant::now());
                    }
                    if st.q.holds() {
                        // A buffered oneway: it waits for the rest.
                        Ok(false)
                    } else {
                        // Fast path: nothing in flight and the writer task
                        // idle: write from this task, under the lock that
                        // orders bytes.
                        if let (true, Some(wr)) = (idle, &s.wr) {
                            // Nagle on for small oneways, off before
                            // anything answered.
                            st.before_write(wr);
                            let first = st.q.first_write(&s.setup, what);
                            try_write_now(wr, st.q.outbox(), first);
                        }
                        Ok(!st.q.pending().is_empty())
                    }
                }
                Err(e) => Err(e),
            }
        };
        let t_written = timed.then(Instant::now);
        match res {
            Ok(true) => s.out_ready.notify_one(),
            Ok(false) => {}
            Err(e) => {
                s.pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .abandon(ticket);
                return Err(e);
            }
        }
        let Some(rx) = rx else {
            if let (Some(p), Some(t0), Some(t1), Some(t2)) =
                (&s.phases, t_start, t_encoded, t_written)
            {
                let mut p = p.lock().unwrap_or_else(|e| e.into_inner());
                p.oneways += 1;
                p.marshal += t1 - t0;
                p.write += t2 - t1;
            }
            return Ok(None);
        };
        // A timeout arrives through `rx` too: the reaper task fails
        // overdue requests (no timer per call: they cost more than a
        // ping's whole user-space path).
        let (inc, stamp) = rx.await.map_err(|_| ClientError::Closed {
            addr: s.setup.addr.clone(),
            retryable: false,
        })??;
        if let (Some(p), Some(t0), Some(t1), Some(t2), Some(st)) =
            (&s.phases, t_start, t_encoded, t_written, stamp)
        {
            let now = Instant::now();
            let mut p = p.lock().unwrap_or_else(|e| e.into_inner());
            p.calls += 1;
            p.marshal += t1 - t0;
            p.write += t2 - t1;
            p.wait += st.first_read.saturating_duration_since(t2);
            p.read += st.reading + now.saturating_duration_since(st.decoded);
            p.demarshal += st.decoding;
        }
        Ok(Some(inc))
    }

    /// The phase totals so far (zero unless [`ClientConfig::phase_timing`]).
    pub fn phase_totals(&self) -> PhaseTotals {
        self.shared
            .phases
            .as_ref()
            .map(|p| *p.lock().unwrap_or_else(|e| e.into_inner()))
            .unwrap_or_default()
    }

    /// Zero the phase totals (e.g. after a warm-up).
    pub fn reset_phase_totals(&self) {
        if let Some(p) = &self.shared.phases {
            *p.lock().unwrap_or_else(|e| e.into_inner()) = PhaseTotals::default();
        }
    }
}

/// Fails overdue requests: sleeps until the core's next deadline (or until
/// a request with a sooner one arrives), then lets the core expire what is
/// due.
async fn reaper_task(shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    loop {
        let writes = {
            let st = shared.out.lock().unwrap_or_else(|e| e.into_inner());
            st.q.next_deadline()
        };
        let next = {
            let p = shared.pending.lock().unwrap_or_else(|e| e.into_inner());
            // A call's write deadline is its answer's, registered first.
            let next = p.next_deadline().into_iter().chain(writes).min();
            // Published under the lock: a request inserted after this
            // compares its deadline with it, one inserted before is in
            // `next` already.
            shared
                .reaper_at_us
                .store(shared.micros(next), Ordering::Relaxed);
            next
        };
        let until = async {
            match next {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            r = shutdown.changed() => {
                if r.is_err() || *shutdown.borrow() {
                    return;
                }
            }
            _ = shared.deadline_sooner.notified() => {}
            _ = until => shared.reap(Instant::now()),
        }
    }
}

/// Write what callers queue. Over TLS it owns the write half (`tls`);
/// over TCP it writes the shared one.
async fn writer_task(
    shared: Arc<Shared>,
    mut tls: Option<TlsWriteHalf>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let data = {
            let mut st = shared.out.lock().unwrap_or_else(|e| e.into_inner());
            // Buffered oneways wait for more, a twoway, or the close.
            if st.q.pending().is_empty() || st.q.holds() {
                None
            } else {
                // A batch of oneways only (callers that found the writer
                // busy) may be joined as a caller's own oneway is; one
                // that holds anything answered goes with no Nagle wait.
                if let Some(wr) = &shared.wr {
                    st.before_write(wr);
                }
                st.writing = true;
                Some(st.q.take())
            }
        };
        match data {
            Some(mut data) => {
                // How far the batch got, for the core's write deadlines:
                // told as it goes only while a batch takes several writes
                // (one that goes at once costs no extra lock).
                let (total, mut told) = (data.len(), 0);
                let progress = |n| {
                    told += n;
                    let mut st = shared.out.lock().unwrap_or_else(|e| e.into_inner());
                    st.q.wrote(n);
                };
                let r = tokio::select! {
                    r = write_all_spliced(&shared, tls.as_mut(), &mut data, progress) => r,
                    // The stream is lost: nothing more is written.
                    _ = shared.write_lost.notified() => return,
                };
                {
                    let mut st = shared.out.lock().unwrap_or_else(|e| e.into_inner());
                    st.q.wrote(total - told);
                    st.writing = false;
                }
                shared.out_space.notify_waiters();
                if let Err(e) = r {
                    shared.fail_all(crate::tls::client_io_error(&shared.setup, &e));
                    return;
                }
            }
            None => {
                if *shutdown.borrow() {
                    break;
                }
                tokio::select! {
                    _ = shared.out_ready.notified() => {}
                    _ = shutdown.changed() => {}
                }
            }
        }
    }
    // Closed by us (not failed): say goodbye as GIOP lets the client.
    if matches!(shared.dead(), None | Some(ClientError::LocallyClosed)) {
        let mut last = {
            let mut st = shared.out.lock().unwrap_or_else(|e| e.into_inner());
            st.q.farewell(&shared.setup, &ClientError::LocallyClosed);
            if let Some(wr) = &shared.wr {
                st.before_write(wr);
            }
            st.q.outbox().take()
        };
        let _ = write_all_spliced(&shared, tls.as_mut(), &mut last, |_| {}).await;
    }
    // The write half shuts down when the last reference to it goes (over
    // TLS: when the read half goes too, as before).
}

/// One non-blocking write of the queued stream's first `limit` bytes:
/// `write` when it is one piece, `writev` over the pieces otherwise.
/// Returns the bytes written; the caller consumes them.
fn try_write_spliced(wr: &OwnedWriteHalf, out: &Outbox, limit: usize) -> std::io::Result<usize> {
    out.with_slices(limit, |iov| match iov {
        [one] => wr.try_write(one),
        _ => wr.try_write_vectored(iov),
    })
}

/// Write what the socket takes now of the queued stream, consuming it;
/// its first `head` bytes alone first, unless `head` is `usize::MAX`
/// ([`SendQueue::first_write`](iiop_giop::conn::client::SendQueue::first_write)
/// says how many).
fn try_write_now(wr: &OwnedWriteHalf, out: &mut Outbox, head: usize) {
    if head != usize::MAX {
        match try_write_spliced(wr, out, head) {
            Ok(n) => {
                out.consume(n);
                if n < head {
                    return;
                }
            }
            Err(_) => return,
        }
    }
    if let Ok(n) = try_write_spliced(wr, out, usize::MAX) {
        out.consume(n);
    }
}

/// Write the whole queued stream, consuming it: through `tls` when the
/// connection is TLS, else on the shared TCP write half. `partial(n)`
/// after each write that leaves some of it to write.
async fn write_all_spliced(
    shared: &Shared,
    tls: Option<&mut TlsWriteHalf>,
    out: &mut Outbox,
    mut partial: impl FnMut(usize),
) -> std::io::Result<()> {
    let wr = match (tls, &shared.wr) {
        (None, Some(wr)) => wr,
        (None, None) => return Err(std::io::Error::other("connection without a write half")),
        (Some(tls), _) => {
            while !out.is_empty() {
                let mut iov = [IoSlice::new(&[]); MAX_IOV];
                let n = out.slices(usize::MAX, &mut iov);
                let n = tls.write_vectored(&iov[..n]).await?;
                if n == 0 {
                    return Err(std::io::ErrorKind::WriteZero.into());
                }
                out.consume(n);
                if !out.is_empty() {
                    partial(n);
                }
            }
            return tls.flush().await;
        }
    };
    while !out.is_empty() {
        wr.writable().await?;
        match try_write_spliced(wr, out, usize::MAX) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                out.consume(n);
                if !out.is_empty() {
                    partial(n);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

async fn reader_task<R: AsyncRead + Unpin>(
    shared: Arc<Shared>,
    mut rd: R,
    codec: CodecConfig,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut inbound = Inbound::new(codec, shared.setup.wire.opts);
    // One shutdown future for the task's life: a new `changed()` per read
    // would register a waiter per reply.
    let stop = async move {
        while !*shutdown.borrow_and_update() {
            if shutdown.changed().await.is_err() {
                break;
            }
        }
    };
    tokio::pin!(stop);
    let mut clock = shared.phases.is_some().then(ReadClock::default);
    let err = loop {
        let mut on_read = clock.as_mut().map(|c| move |t0| c.read(t0));
        let on_read = on_read
            .as_mut()
            .map(|f| f as &mut (dyn FnMut(Instant) + Send));
        let n = tokio::select! {
            biased;
            r = crate::socket::read_timed(&mut rd, inbound.read_buf(), usize::MAX, on_read) => r,
            _ = &mut stop => {
                // Closed by us: the writer says goodbye.
                shared.fail_all(ClientError::LocallyClosed);
                return;
            }
        };
        match n {
            Ok(0) => break shared.setup.closed(),
            Ok(_) => {}
            Err(e) => break crate::tls::client_io_error(&shared.setup, &e),
        }
        let drained = match &shared.callbacks {
            None => drain_replies(&shared, &mut inbound, clock.as_mut()),
            Some(cb) => drain_arrivals(&shared, &mut inbound, clock.as_mut(), &*cb.0),
        };
        if let Err(e) = drained {
            break e;
        }
    };
    // Tell the peer why we hang up, when GIOP says to (MessageError).
    let told = {
        let mut st = shared.out.lock().unwrap_or_else(|e| e.into_inner());
        st.q.farewell(&shared.setup, &err)
    };
    if told {
        shared.out_ready.notify_one();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    shared.fail_all(err);
}

/// Hand every complete answer received to its waiter (the core drops
/// answers nobody waits for: timed out, cancelled).
fn drain_replies(
    shared: &Shared,
    inbound: &mut Inbound,
    mut clock: Option<&mut ReadClock>,
) -> Result<(), ClientError> {
    loop {
        let t_decode = clock.is_some().then(Instant::now);
        let complete = |id| {
            let mut p = shared.pending.lock().unwrap_or_else(|e| e.into_inner());
            p.complete(id)
        };
        let Some((_, waiter, inc)) = inbound.next_waited(&shared.setup, complete)? else {
            return Ok(());
        };
        let stamp = answer_stamp(clock.as_deref_mut(), t_decode, inbound);
        let _ = waiter.send(Ok((inc, stamp)));
    }
}

/// The phase stamp of an answer just decoded (decoding began at
/// `t_decode`), when the connection times phases: from the first read
/// that brought its bytes to the end of its decoding. The clock moves on:
/// bytes of the next message already here came with the last read.
fn answer_stamp(
    clock: Option<&mut ReadClock>,
    t_decode: Option<Instant>,
    inbound: &Inbound,
) -> Option<ReadStamp> {
    let (c, t) = (clock?, t_decode?);
    let decoded = Instant::now();
    let s = ReadStamp {
        first_read: c.first_read.take().unwrap_or(t),
        reading: std::mem::take(&mut c.reading),
        decoded,
        decoding: decoded - t,
    };
    if inbound.has_buffered() {
        c.first_read = c.last_read;
    }
    Some(s)
}

/// On a connection offered for callbacks: hand every complete answer to
/// its waiter, with its phase stamp as [`drain_replies`] does, and answer
/// the server's Requests and LocateRequests with `servant` at once, in
/// this task (the core says which may come and writes the answers; the
/// writer task sends them). The reading of a callback counts in the
/// reading of the answer that follows it: both are the call's wait for
/// its reply.
fn drain_arrivals(
    shared: &Shared,
    inbound: &mut Inbound,
    mut clock: Option<&mut ReadClock>,
    servant: &dyn Handler,
) -> Result<(), ClientError> {
    loop {
        let t_decode = clock.is_some().then(Instant::now);
        let Some(a) = inbound.arrival(&shared.setup)? else {
            return Ok(());
        };
        match a {
            Arrival::Answer(id, inc) => {
                let waiter = shared
                    .pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .complete(id);
                let stamp = answer_stamp(clock.as_deref_mut(), t_decode, inbound);
                if let Some(w) = waiter {
                    let _ = w.send(Ok((inc, stamp)));
                }
                continue;
            }
            Arrival::Request(req) => {
                let mut st = shared.out.lock().unwrap_or_else(|e| e.into_inner());
                st.q.answer(&shared.setup, &req, servant)?;
            }
            Arrival::Locate(l) => {
                let mut st = shared.out.lock().unwrap_or_else(|e| e.into_inner());
                st.q.answer_locate(&shared.setup, &l, servant)?;
            }
        }
        shared.out_ready.notify_one();
    }
}

/// The TLS handshake over a connected socket, bounded by the connect
/// timeout.
async fn tls_handshake(
    stream: TcpStream,
    ep: &Endpoint,
    cfg: &ClientConfig,
) -> Result<TlsStream<TcpStream>, ClientError> {
    let fail = |reason: String| ClientError::Tls {
        addr: ep.addr(),
        reason,
    };
    let config = cfg.tls.for_connection().map_err(fail)?;
    let name = server_name(&ep.host).map_err(fail)?;
    let connector = tokio_rustls::TlsConnector::from(config);
    match tokio::time::timeout(cfg.connect_timeout, connector.connect(name, stream)).await {
        Ok(Ok(tls)) => Ok(tls),
        Ok(Err(e)) => Err(fail(handshake_failure(&e, Side::Client))),
        Err(_) => Err(fail(format!(
            "the server did not finish the handshake in {:?}",
            cfg.connect_timeout
        ))),
    }
}
