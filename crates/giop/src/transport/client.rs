//! The IIOP client: [`Connection`] (one TCP connection, many requests in
//! flight) and [`Client`] (a pool of connections per endpoint, code set
//! negotiation, forwarding).
//!
//! Order of use: build a [`ClientConfig`], then either
//! [`Connection::connect`] and [`Connection::request`] with a
//! [`TargetAddress`], or [`Client::invoke`] with an [`Ior`], which picks a
//! pooled connection and follows LOCATION_FORWARD replies.
//!
//! The request path writes the GIOP message straight into the connection's
//! output buffer under a short lock (the body closure runs there too); the
//! writer task takes whatever accumulated and writes it with one vectored
//! call, so requests issued together leave in one segment. [`Prepared`]
//! holds a complete message so the same request can be sent again with
//! only its request id patched.
//!
//! Zero-copy output: the output queue is a buffer plus a [`Splices`] list.
//! Shared runs of at least [`ClientConfig::splice_cutoff`] bytes (an
//! [`Octets`](iiop_cdr::Octets) or [`CharSeq`](iiop_cdr::CharSeq) in a
//! request body, the body of a [`Prepared`] message) are not copied into
//! the buffer but queued by reference and handed to the kernel with
//! `writev`, between the buffer pieces around them (omniORB's
//! `directSendCutOff` idea). The bytes on the wire are the same; a message
//! that must be fragmented is flattened first.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, CdrError, Options, Splices, Writer};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpSocket;
use tokio::sync::futures::Notified;
use tokio::sync::{oneshot, watch, Notify};

use crate::codec::{fragment_message, CodecConfig, Decoder};
use crate::context::{
    default_options, negotiate, CodeSetComponentInfo, ServiceContext, SC_CODE_SETS,
};
use crate::error::GiopError;
use crate::exception::SystemException;
use crate::header::{MsgType, Version, HEADER_LEN};
use crate::ior::{IiopProfile, Ior};
use crate::message::{
    begin_request, encode_cancel_request, encode_empty, encode_locate_request, Body, LocateReply,
    LocateStatus, Message, Reply, ReplyStatus, RequestHead, ResponseMode, TargetAddress,
};

/// Output bytes queued (spliced runs included) beyond which new requests
/// wait for the writer.
const HIGH_WATER: usize = 8 << 20;

/// Most pieces handed to one `writev` (well under every IOV_MAX).
pub(super) const MAX_IOV: usize = 64;

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// GIOP version to speak; `None` uses the IOR profile's version (which
    /// is 1.0 for a corbaloc without `1.2@`, as every ORB does).
    pub version: Option<Version>,
    /// Byte order of our messages.
    pub order: ByteOrder,
    /// TCP_NODELAY (on by default: request/reply traffic).
    pub nodelay: bool,
    /// SO_SNDBUF, if set.
    pub send_buffer: Option<u32>,
    /// SO_RCVBUF, if set.
    pub recv_buffer: Option<u32>,
    pub connect_timeout: Duration,
    /// Default per-request timeout (`None`: wait forever).
    pub request_timeout: Option<Duration>,
    /// Most LOCATION_FORWARD / OBJECT_FORWARD hops followed per call.
    pub max_forwards: u32,
    /// Limits on incoming messages.
    pub codec: CodecConfig,
    /// Fragment outgoing GIOP 1.2 messages longer than this.
    pub fragment_size: Option<usize>,
    /// Connections per endpoint in a [`Client`]'s pool (round robin).
    /// Oneways keep their order only within one connection.
    pub pool_size: usize,
    /// When a request is the only one in flight and nothing is queued,
    /// write it from the calling task instead of waking the writer task.
    pub direct_write: bool,
    /// Write requests at least this long in two parts, headers first (see
    /// `try_write_now`; oneways only from 96 KiB on); `None` writes each
    /// message with one call.
    pub head_first: Option<usize>,
    /// Time each twoway call's phases ([`PhaseTotals`],
    /// [`Connection::phase_totals`]): a few clock reads per call, so off
    /// by default.
    pub phase_timing: bool,
    /// Send shared byte runs at least this long (octet/char sequences in
    /// request bodies, prepared message bodies) by reference with vectored
    /// writes instead of copying them into the output buffer; `None`
    /// always copies.
    pub splice_cutoff: Option<usize>,
    /// Wait-on-read connections only ([`BlockingConnection`]): before a
    /// reply read or a send would block, poll the socket without blocking,
    /// yielding the CPU between polls, for up to this long
    /// ([`Spin`](super::blocking::Spin)). The caller's CPU stays busy while
    /// it waits; a reply is picked up the moment it lands and a full send
    /// buffer refilled the moment there is room, without the wake-up of a
    /// sleeping thread. `None` blocks at once.
    ///
    /// [`BlockingConnection`]: super::BlockingConnection
    pub spin: Option<Duration>,
}

/// Default [`ClientConfig::splice_cutoff`]: below this, copying into the
/// output buffer costs less than an extra iovec and a reference count.
pub const DEFAULT_SPLICE_CUTOFF: usize = 16 * 1024;

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            version: None,
            order: ByteOrder::NATIVE,
            nodelay: true,
            send_buffer: None,
            recv_buffer: None,
            connect_timeout: Duration::from_secs(5),
            request_timeout: None,
            max_forwards: 8,
            codec: CodecConfig::default(),
            fragment_size: None,
            pool_size: 1,
            direct_write: true,
            splice_cutoff: Some(DEFAULT_SPLICE_CUTOFF),
            head_first: Some(DEFAULT_SPLICE_CUTOFF),
            phase_timing: false,
            spin: None,
        }
    }
}

/// Why a call failed, and whose fault it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// TCP connect failed.
    #[error("connect to {addr} failed: {message}")]
    Connect { addr: String, message: String },
    /// TCP connect did not finish in time.
    #[error("connect to {addr} timed out after {after:?}")]
    ConnectTimeout { addr: String, after: Duration },
    /// Reading or writing the socket failed.
    #[error("I/O error on connection to {addr}: {message}")]
    Io { addr: String, message: String },
    /// The peer closed the connection. `retryable`: it sent CloseConnection
    /// first, so the request was not processed and may be sent again.
    #[error("connection to {addr} closed by the peer{}", if *.retryable { " (CloseConnection: retry)" } else { "" })]
    Closed { addr: String, retryable: bool },
    /// The peer sent MessageError: it could not parse something we sent.
    #[error("peer {addr} sent MessageError")]
    PeerMessageError { addr: String },
    /// The peer sent something malformed.
    #[error("malformed message from {addr}: {error}")]
    Protocol { addr: String, error: GiopError },
    /// We could not encode the request (a body closure error, a status not
    /// in this GIOP version, …).
    #[error("cannot encode request: {0}")]
    Encode(GiopError),
    /// No reply in time.
    #[error("request {request_id} to {addr} timed out after {after:?}")]
    Timeout {
        addr: String,
        request_id: u32,
        after: Duration,
    },
    /// More forwards than `max_forwards` in one call; `addr` sent the last.
    #[error("more than {limit} LOCATION_FORWARD/OBJECT_FORWARD hops (the last from {addr})")]
    TooManyForwards { addr: String, limit: u32 },
    /// The IOR has no IIOP profile we can use.
    #[error("no usable IIOP profile in the IOR")]
    NoProfile,
    /// The server raised a system exception.
    #[error("system exception: {0}")]
    System(SystemException),
    /// The server raised a user exception.
    #[error("user exception {repo_id}")]
    User { repo_id: String, body: Body },
    /// The server asked for another addressing mode (GIOP 1.2).
    #[error("server needs addressing disposition {0}")]
    NeedsAddressingMode(i16),
    /// The connection handle was closed by us.
    #[error("connection closed locally")]
    LocallyClosed,
}

impl ClientError {
    /// Whether sending the request again (on a new connection) is safe.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ClientError::Closed {
                retryable: true,
                ..
            }
        )
    }
}

pub(super) enum Incoming {
    Reply(Reply),
    Locate(LocateReply),
}

type Waiter = oneshot::Sender<Result<(Incoming, Option<ReadStamp>), ClientError>>;

/// Where a call's time went, summed over calls ([`ClientConfig::phase_timing`];
/// E0.5). Per call: `marshal` encodes the request into the output buffer;
/// `write` hands it to the kernel when the calling task writes it itself
/// (a request queued behind others has `write` 0 and its time counts as
/// `wait`); `wait` runs from then until the read that brings the reply's
/// first bytes starts (the server, the network, this thread's wake-up);
/// `read` is the time in those reads plus handing the reply to the caller;
/// `demarshal` decodes the reply's GIOP headers (the body is the caller's
/// to decode and time).
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

/// A caller waiting for its reply, and until when.
struct Pending {
    tx: Waiter,
    /// (deadline, the timeout it came from).
    timeout: Option<(Instant, Duration)>,
}

/// Request ids are handed out in sequence: a multiplicative hash spreads
/// them well at a fraction of SipHash's cost (this map is touched twice
/// per call).
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

struct PendingMap {
    map: HashMap<u32, Pending, BuildHasherDefault<IdHasher>>,
    /// Set once the connection is dead; new requests fail with it.
    dead: Option<ClientError>,
}

/// Bytes waiting to be written (the buffer with shared runs spliced in),
/// and whether the writer task is writing (then callers must not write
/// directly, or bytes would reorder).
struct OutState {
    buf: BytesMut,
    splices: Splices,
    writing: bool,
}

impl OutState {
    /// Bytes queued, spliced runs included.
    fn len(&self) -> usize {
        self.buf.len() + self.splices.total()
    }

    fn is_empty(&self) -> bool {
        self.buf.is_empty() && self.splices.is_empty()
    }
}

struct Shared {
    addr: String,
    local: std::net::SocketAddr,
    /// Version, byte order, negotiated options, splicing.
    wire: Wire,
    /// CodeSets context to send until the first request carried it.
    code_sets: Option<ServiceContext>,
    code_sets_sent: AtomicBool,
    fragment_size: Option<usize>,
    direct_write: bool,
    head_first: Option<usize>,
    request_timeout: Option<Duration>,
    /// Phase timing totals, when [`ClientConfig::phase_timing`] is on.
    phases: Option<Mutex<PhaseTotals>>,
    /// Shortest timeout any request used so far, in µs (`u64::MAX`: none
    /// yet); sets how often the reaper looks for overdue requests.
    min_timeout_us: AtomicU64,
    /// Woken when `min_timeout_us` drops.
    timeouts_changed: Notify,
    next_id: AtomicU32,
    out: Mutex<OutState>,
    /// Shared with the writer task: `try_write` needs only `&self`.
    wr: OwnedWriteHalf,
    out_ready: Notify,
    out_space: Notify,
    pending: Mutex<PendingMap>,
    handles: AtomicUsize,
    shutdown: watch::Sender<bool>,
}

impl Shared {
    fn fail_all(&self, err: ClientError) {
        let waiters: Vec<Waiter> = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if p.dead.is_none() {
                p.dead = Some(err.clone());
            }
            p.map.drain().map(|(_, w)| w.tx).collect()
        };
        for w in waiters {
            let _ = w.send(Err(err.clone()));
        }
        let _ = self.shutdown.send(true);
        self.out_space.notify_waiters();
    }

    /// The output queue, or while it holds more than [`HIGH_WATER`] (and
    /// the connection lives) what to wait on for room.
    fn out_with_room(&self) -> Result<MutexGuard<'_, OutState>, Notified<'_>> {
        let st = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if st.len() < HIGH_WATER {
            return Ok(st);
        }
        let room = self.out_space.notified();
        drop(st);
        if self.dead().is_some() {
            return Ok(self.out.lock().unwrap_or_else(|e| e.into_inner()));
        }
        Err(room)
    }

    /// Fail the requests whose deadline has passed at `now` with
    /// [`ClientError::Timeout`], and tell the server with CancelRequest.
    fn reap(&self, now: Instant) {
        let overdue: Vec<(u32, Waiter, Duration)> = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            p.map
                .extract_if(|_, w| w.timeout.is_some_and(|(d, _)| d <= now))
                .map(|(id, w)| (id, w.tx, w.timeout.map_or(Duration::ZERO, |(_, t)| t)))
                .collect()
        };
        if overdue.is_empty() {
            return;
        }
        {
            let mut st = self.out.lock().unwrap_or_else(|e| e.into_inner());
            for (id, _, _) in &overdue {
                let _ = encode_cancel_request(&mut st.buf, self.wire.version, self.wire.order, *id);
            }
        }
        self.out_ready.notify_one();
        for (request_id, tx, after) in overdue {
            let _ = tx.send(Err(ClientError::Timeout {
                addr: self.addr.clone(),
                request_id,
                after,
            }));
        }
    }

    /// How often the reaper runs: [`check_interval`] of the shortest
    /// timeout in use, at most 250 ms (`None`: no request has used one
    /// yet).
    fn reap_interval(&self) -> Option<Duration> {
        match self.min_timeout_us.load(Ordering::Relaxed) {
            u64::MAX => None,
            us => Some(check_interval(
                Duration::from_micros(us),
                Duration::from_millis(250),
            )),
        }
    }

    fn dead(&self) -> Option<ClientError> {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .dead
            .clone()
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
            .field("addr", &self.shared.addr)
            .field("version", &self.shared.wire.version)
            .field("order", &self.shared.wire.order)
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

/// A complete request message built once and sent many times: only the
/// request id is patched per send (seed 000's "request reuse").
#[derive(Debug, Clone)]
pub struct Prepared {
    message: Bytes,
    /// Offset of the request id in `message`.
    id_at: usize,
    response: ResponseMode,
    version: Version,
    order: ByteOrder,
}

impl Prepared {
    /// The encoded message (with the request id it was prepared with).
    pub fn message(&self) -> &Bytes {
        &self.message
    }

    /// The response mode it was built with.
    pub fn response(&self) -> ResponseMode {
        self.response
    }

    /// Encode a request once (with request id 0, and the CodeSets context
    /// when one is due: a prepared request may be the connection's first).
    pub(super) fn build<F>(
        wire: Wire,
        code_sets: Option<&ServiceContext>,
        target: &TargetAddress,
        operation: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<Prepared, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let mut buf = BytesMut::new();
        let contexts: &[ServiceContext] = match code_sets {
            Some(c) => std::slice::from_ref(c),
            None => &[],
        };
        let head = RequestHead {
            request_id: 0,
            response,
            target,
            operation,
            contexts,
        };
        let p = begin_request(&mut buf, wire.version, wire.order, wire.opts, &head)
            .map_err(ClientError::Encode)?;
        body(&mut p.writer(&mut buf)).map_err(|e| {
            ClientError::Encode(GiopError::Cdr {
                what: "request body",
                source: e,
            })
        })?;
        p.finish(&mut buf).map_err(ClientError::Encode)?;
        // 1.2: the id follows the header; 1.0/1.1: after the contexts.
        let id_at = if wire.version.is_12() {
            HEADER_LEN
        } else {
            HEADER_LEN
                + 4
                + contexts
                    .iter()
                    .map(|c| 8 + c.data.len().next_multiple_of(4))
                    .sum::<usize>()
        };
        Ok(Prepared {
            message: buf.freeze(),
            id_at,
            response,
            version: wire.version,
            order: wire.order,
        })
    }

    /// Fail unless the connection speaks this request's version and order.
    pub(super) fn check_for(&self, version: Version, order: ByteOrder) -> Result<(), ClientError> {
        if self.version != version || self.order != order {
            return Err(ClientError::Encode(GiopError::NotInVersion {
                what: "a request prepared for another connection",
                minor: version.minor,
            }));
        }
        Ok(())
    }

    /// Queue the message with request id `id`: the bytes up to the id are
    /// copied (and the id patched there); the rest is spliced when it
    /// reaches the splice cutoff, copied otherwise.
    pub(super) fn append(&self, out: &mut BytesMut, splices: &mut Splices, id: u32) {
        let b = match self.order {
            ByteOrder::Big => id.to_be_bytes(),
            ByteOrder::Little => id.to_le_bytes(),
        };
        out.extend_from_slice(&self.message[..self.id_at]);
        out.extend_from_slice(&b);
        let rest = self.message.slice(self.id_at + 4..);
        if rest.len() >= splices.cutoff() {
            splices.push(out.len(), rest);
        } else {
            out.extend_from_slice(&rest);
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
        let addr = format!("{host}:{port}");
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
        let socket = tcp_socket(sockaddr, cfg)
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
        let (wire, code_sets) = Wire::negotiate(version, cfg, code_sets);
        let (shutdown, shutdown_rx) = watch::channel(false);
        let (rd, wr) = stream.into_split();
        let shared = Arc::new(Shared {
            addr,
            local,
            wire,
            code_sets,
            code_sets_sent: AtomicBool::new(false),
            fragment_size: cfg.fragment_size,
            direct_write: cfg.direct_write,
            head_first: cfg.head_first,
            request_timeout: cfg.request_timeout,
            phases: cfg.phase_timing.then(Mutex::default),
            min_timeout_us: AtomicU64::new(u64::MAX),
            timeouts_changed: Notify::new(),
            next_id: AtomicU32::new(1),
            out: Mutex::new(OutState {
                buf: BytesMut::with_capacity(16 * 1024),
                splices: Splices::new(cfg.splice_cutoff.unwrap_or(usize::MAX)),
                writing: false,
            }),
            wr,
            out_ready: Notify::new(),
            out_space: Notify::new(),
            pending: Mutex::new(PendingMap {
                map: HashMap::default(),
                dead: None,
            }),
            handles: AtomicUsize::new(1),
            shutdown,
        });
        tokio::spawn(reader_task(
            shared.clone(),
            rd,
            cfg.codec,
            shutdown_rx.clone(),
        ));
        tokio::spawn(reaper_task(shared.clone(), shutdown_rx.clone()));
        tokio::spawn(writer_task(shared.clone(), shutdown_rx));
        Ok(Connection { shared })
    }

    /// `host:port` of the peer.
    pub fn addr(&self) -> &str {
        &self.shared.addr
    }

    /// Our end of the TCP connection.
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.shared.local
    }

    /// The GIOP version spoken.
    pub fn version(&self) -> Version {
        self.shared.wire.version
    }

    /// Our byte order.
    pub fn order(&self) -> ByteOrder {
        self.shared.wire.order
    }

    /// The CDR options (negotiated code sets) for bodies on this
    /// connection.
    pub fn options(&self) -> Options {
        self.shared.wire.opts
    }

    /// Whether the connection has failed or was closed.
    pub fn is_closed(&self) -> bool {
        self.shared.dead().is_some() || *self.shared.shutdown.borrow()
    }

    /// Close the connection: pending requests fail with `LocallyClosed`.
    pub fn close(&self) {
        self.shared.fail_all(ClientError::LocallyClosed);
    }

    /// Send a request whose body `body` writes directly into the outgoing
    /// buffer (alignment relative to the message start, as CDR wants).
    /// Returns the reply for twoway calls, `None` for oneways (once queued).
    pub async fn request<F>(
        &self,
        target: &TargetAddress,
        operation: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<Option<Reply>, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        self.request_with(
            target,
            operation,
            response,
            &[],
            self.shared.request_timeout,
            body,
        )
        .await
    }

    /// [`request`](Self::request) with extra service contexts and an
    /// explicit timeout.
    pub async fn request_with<F>(
        &self,
        target: &TargetAddress,
        operation: &str,
        response: ResponseMode,
        contexts: &[ServiceContext],
        timeout: Option<Duration>,
        body: F,
    ) -> Result<Option<Reply>, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let s = &self.shared;
        let res = self
            .send(Sending::Request(response), timeout, |out, splices, id| {
                let contexts = with_code_sets(contexts, self.code_set_context());
                let head = RequestHead {
                    request_id: id,
                    response,
                    target,
                    operation,
                    contexts: &contexts,
                };
                s.wire.encode_request(out, splices, &head, body)
            })
            .await?;
        reply_of(res, self.addr())
    }

    /// Send a request whose body was marshalled beforehand (e.g. once, for
    /// many calls) by a [`Writer`] with an 8-aligned origin. The bytes are
    /// copied in as they are, which is only right where the body starts
    /// 8-aligned: always in GIOP 1.2; in 1.0/1.1 only when the request
    /// header happens to end 8-aligned, otherwise this fails with
    /// [`ClientError::Encode`] instead of sending misaligned data.
    pub async fn request_bytes(
        &self,
        target: &TargetAddress,
        operation: &str,
        response: ResponseMode,
        body: &[u8],
    ) -> Result<Option<Reply>, ClientError> {
        self.request(target, operation, response, |w| {
            if !body.is_empty() && w.position() % 8 != 0 {
                return Err(CdrError::Message(format!(
                    "pre-marshalled body would start at offset {}, not 8-aligned",
                    w.position()
                )));
            }
            w.write_bytes(body);
            Ok(())
        })
        .await
    }

    /// Build a request once for [`send_prepared`](Self::send_prepared).
    pub fn prepare<F>(
        &self,
        target: &TargetAddress,
        operation: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<Prepared, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let s = &self.shared;
        Prepared::build(
            s.wire,
            s.code_sets.as_ref(),
            target,
            operation,
            response,
            body,
        )
    }

    /// Send a [`Prepared`] request with a fresh request id; nothing is
    /// re-marshalled. The bytes up to the request id are copied (and the
    /// id patched there); the rest is spliced when it reaches the splice
    /// cutoff, copied otherwise.
    pub async fn send_prepared(&self, p: &Prepared) -> Result<Option<Reply>, ClientError> {
        p.check_for(self.shared.wire.version, self.shared.wire.order)?;
        let res = self
            .send(
                Sending::Request(p.response),
                self.shared.request_timeout,
                |out, splices, id| {
                    p.append(out, splices, id);
                    Ok(())
                },
            )
            .await?;
        reply_of(res, self.addr())
    }

    /// Send a LocateRequest.
    pub async fn locate(&self, target: &TargetAddress) -> Result<LocateReply, ClientError> {
        let s = &self.shared;
        let res = self
            .send(Sending::Locate, s.request_timeout, |out, _, id| {
                encode_locate_request(out, s.wire.version, s.wire.order, id, target)
                    .map(|_| ())
                    .map_err(ClientError::Encode)
            })
            .await?;
        locate_of(res, self.addr())
    }

    fn code_set_context(&self) -> Option<&ServiceContext> {
        let s = &self.shared;
        let cs = s.code_sets.as_ref()?;
        if s.code_sets_sent.load(Ordering::Relaxed) {
            None
        } else {
            Some(cs)
        }
    }

    async fn send(
        &self,
        what: Sending,
        timeout: Option<Duration>,
        encode: impl FnOnce(&mut BytesMut, &mut Splices, u32) -> Result<(), ClientError>,
    ) -> Result<Option<Incoming>, ClientError> {
        let s = &self.shared;
        let expects_reply = what.expects_reply();
        let id = s.next_id.fetch_add(1, Ordering::Relaxed);
        let (rx, alone) = {
            let mut p = s.pending.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(e) = &p.dead {
                return Err(e.clone());
            }
            // With nothing else in flight, writing from this task saves a
            // task switch; with company, the writer task batches instead.
            let alone = s.direct_write && p.map.is_empty();
            if expects_reply {
                let (tx, rx) = oneshot::channel();
                let timeout = timeout.map(|t| (Instant::now() + t, t));
                p.map.insert(id, Pending { tx, timeout });
                (Some(rx), alone)
            } else {
                (None, alone)
            }
        };
        if let Some(t) = timeout.filter(|_| expects_reply) {
            let us = u64::try_from(t.as_micros()).unwrap_or(u64::MAX - 1);
            // A load first: the read-modify-write only when it lowers.
            if us < s.min_timeout_us.load(Ordering::Relaxed)
                && s.min_timeout_us.fetch_min(us, Ordering::Relaxed) > us
            {
                s.timeouts_changed.notify_one();
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
            let idle = alone && st.is_empty() && !st.writing;
            let OutState {
                buf: out, splices, ..
            } = &mut *st;
            let start = out.len();
            let r = encode(out, splices, id)
                .and_then(|()| fragment_from(s.wire.version, s.fragment_size, out, splices, start));
            match r {
                Ok(()) => {
                    if s.code_sets.is_some() && what.carries_code_sets() {
                        s.code_sets_sent.store(true, Ordering::Relaxed);
                    }
                    // Fast path: nothing queued or in flight and the writer
                    // task idle: write from this task, under the lock that
                    // orders bytes.
                    if timed {
                        t_encoded = Some(Instant::now());
                    }
                    if idle {
                        try_write_now(
                            &s.wr,
                            out,
                            splices,
                            head_first_for(s.head_first, expects_reply),
                        );
                    }
                    Ok(!(out.is_empty() && splices.is_empty()))
                }
                Err(e) => {
                    out.truncate(start);
                    splices.truncate_after(start);
                    Err(e)
                }
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
                    .map
                    .remove(&id);
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
            addr: s.addr.clone(),
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

/// Fails overdue requests, every [`Shared::reap_interval`], while any
/// request has used a timeout.
async fn reaper_task(shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    loop {
        let interval = shared.reap_interval();
        let wait = async {
            match interval {
                Some(t) => tokio::time::sleep(t).await,
                None => shared.timeouts_changed.notified().await,
            }
        };
        tokio::select! {
            biased;
            r = shutdown.changed() => {
                if r.is_err() || *shutdown.borrow() {
                    return;
                }
            }
            _ = wait => {}
        }
        if interval.is_some() {
            shared.reap(Instant::now());
        }
    }
}

async fn writer_task(shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    loop {
        let data = {
            let mut st = shared.out.lock().unwrap_or_else(|e| e.into_inner());
            if st.is_empty() {
                None
            } else {
                st.writing = true;
                Some((st.buf.split(), st.splices.take()))
            }
        };
        match data {
            Some((mut data, mut splices)) => {
                let r = write_all_spliced(&shared.wr, &mut data, &mut splices).await;
                shared.out.lock().unwrap_or_else(|e| e.into_inner()).writing = false;
                shared.out_space.notify_waiters();
                if let Err(e) = r {
                    shared.fail_all(ClientError::Io {
                        addr: shared.addr.clone(),
                        message: e.to_string(),
                    });
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
    // GIOP 1.2 lets a client say it is closing.
    if shared.wire.version.is_12()
        && matches!(shared.dead(), None | Some(ClientError::LocallyClosed))
    {
        let mut b = BytesMut::new();
        encode_empty(
            &mut b,
            shared.wire.version,
            shared.wire.order,
            MsgType::CloseConnection,
        );
        let _ = write_all(&shared.wr, &b).await;
    }
    // The write half shuts down when the last reference to it goes.
}

/// One non-blocking write of the queued stream (`buf` with `splices`):
/// `write` when nothing is spliced, `writev` over the pieces otherwise.
/// Returns the bytes written; the caller consumes them.
fn try_write_spliced(
    wr: &OwnedWriteHalf,
    buf: &BytesMut,
    splices: &Splices,
    limit: usize,
) -> std::io::Result<usize> {
    if splices.is_empty() {
        return wr.try_write(&buf[..buf.len().min(limit)]);
    }
    let mut iov = [IoSlice::new(&[]); MAX_IOV];
    let n = fill_iov(buf, splices, limit, &mut iov);
    wr.try_write_vectored(&iov[..n])
}

/// The queued stream's first `limit` bytes as write pieces (at most
/// [`MAX_IOV`]); returns how many were filled.
pub(super) fn fill_iov<'a>(
    buf: &'a [u8],
    splices: &'a Splices,
    limit: usize,
    iov: &mut [IoSlice<'a>; MAX_IOV],
) -> usize {
    let (mut n, mut left) = (0, limit);
    for (slot, seg) in iov.iter_mut().zip(splices.segments(buf)) {
        if left == 0 {
            break;
        }
        let k = seg.len().min(left);
        *slot = IoSlice::new(&seg[..k]);
        left -= k;
        n += 1;
    }
    n
}

/// What one call writes, as far as its connection cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sending {
    /// A Request, built now or prepared: it carries the CodeSets context
    /// while that is due.
    Request(ResponseMode),
    /// A LocateRequest: always answered, and without service contexts.
    Locate,
}

impl Sending {
    pub(super) fn expects_reply(self) -> bool {
        match self {
            Sending::Request(r) => r.expects_reply(),
            Sending::Locate => true,
        }
    }

    /// Whether the message counts as the one that carried the CodeSets
    /// context (a LocateRequest cannot).
    pub(super) fn carries_code_sets(self) -> bool {
        matches!(self, Sending::Request(_))
    }
}

/// Oneways are written headers-first only from this size on.
const ONEWAY_HEAD_FIRST: usize = 96 * 1024;

/// The size from which a message goes headers-first. A oneway stream keeps
/// the server busy: its own write for the head then only costs a second
/// wake-up, except for messages that span several segments anyway
/// (measured: 64 KiB oneways lose, 128 KiB ones gain, against our server
/// and omniORB's).
pub(super) fn head_first_for(head_first: Option<usize>, expects_reply: bool) -> Option<usize> {
    match expects_reply {
        true => head_first,
        false => head_first.map(|n| n.max(ONEWAY_HEAD_FIRST)),
    }
}

/// Most bytes of a large message written ahead of the rest.
pub(super) const HEAD_BYTES: usize = 1024;

/// Write what the socket takes now of the queued stream, consuming it.
/// From `head_first` bytes on, the message's first piece (its headers, at
/// most [`HEAD_BYTES`]) is written alone first: the server wakes and reads
/// the headers while this thread still copies the body into the kernel,
/// instead of starting only once the whole message is there (omniORB sends
/// large requests the same way). Worth 10–25 % of twoway throughput from
/// 64 KiB on (benches/compare).
fn try_write_now(
    wr: &OwnedWriteHalf,
    buf: &mut BytesMut,
    splices: &mut Splices,
    head_first: Option<usize>,
) {
    if head_first.is_some_and(|min| buf.len() + splices.total() >= min) {
        let head = HEAD_BYTES;
        match try_write_spliced(wr, buf, splices, head) {
            Ok(n) => {
                splices.consume(buf, n);
                if n < head {
                    return;
                }
            }
            Err(_) => return,
        }
    }
    if let Ok(n) = try_write_spliced(wr, buf, splices, usize::MAX) {
        splices.consume(buf, n);
    }
}

/// Write the whole queued stream (`buf` with `splices`), consuming it.
async fn write_all_spliced(
    wr: &OwnedWriteHalf,
    buf: &mut BytesMut,
    splices: &mut Splices,
) -> std::io::Result<()> {
    while !(buf.is_empty() && splices.is_empty()) {
        wr.writable().await?;
        match try_write_spliced(wr, buf, splices, usize::MAX) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => splices.consume(buf, n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `write_all` over a shared write half.
async fn write_all(wr: &OwnedWriteHalf, mut data: &[u8]) -> std::io::Result<()> {
    while !data.is_empty() {
        wr.writable().await?;
        match wr.try_write(data) {
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

async fn reader_task(
    shared: Arc<Shared>,
    mut rd: OwnedReadHalf,
    codec: CodecConfig,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut decoder = Decoder::new(codec);
    let mut buf = BytesMut::with_capacity(64 * 1024);
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
        if buf.capacity() - buf.len() < 16 * 1024 {
            buf.reserve(64 * 1024);
        }
        let mut on_read = clock.as_mut().map(|c| move |t0| c.read(t0));
        let on_read = on_read
            .as_mut()
            .map(|f| f as &mut (dyn FnMut(Instant) + Send));
        let n = tokio::select! {
            biased;
            r = super::read_timed(&mut rd, &mut buf, on_read) => r,
            _ = &mut stop => break ClientError::LocallyClosed,
        };
        match n {
            Ok(0) => {
                break ClientError::Closed {
                    addr: shared.addr.clone(),
                    retryable: false,
                }
            }
            Ok(_) => {}
            Err(e) => {
                break ClientError::Io {
                    addr: shared.addr.clone(),
                    message: e.to_string(),
                }
            }
        }
        match drain_frames(&shared, &mut decoder, &mut buf, clock.as_mut()) {
            Ok(()) => {}
            Err(e) => break e,
        }
    };
    if let ClientError::Protocol { .. } = err {
        // Tell the peer why we hang up.
        {
            let mut st = shared.out.lock().unwrap_or_else(|e| e.into_inner());
            encode_empty(
                &mut st.buf,
                shared.wire.version,
                shared.wire.order,
                MsgType::MessageError,
            );
        }
        shared.out_ready.notify_one();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    shared.fail_all(err);
}

fn drain_frames(
    shared: &Shared,
    decoder: &mut Decoder,
    buf: &mut BytesMut,
    mut clock: Option<&mut ReadClock>,
) -> Result<(), ClientError> {
    let protocol = |error| ClientError::Protocol {
        addr: shared.addr.clone(),
        error,
    };
    while let Some(frame) = decoder.decode(buf).map_err(protocol)? {
        let t_decode = clock.is_some().then(Instant::now);
        let msg = Message::decode_segmented(
            &frame.header,
            frame.payload,
            frame.segments,
            shared.wire.opts,
        )
        .map_err(protocol)?;
        let (id, inc) = incoming(msg, &shared.addr)?;
        let waiter = shared
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map
            .remove(&id);
        let stamp = match (clock.as_deref_mut(), t_decode) {
            (Some(c), Some(t)) => {
                let decoded = Instant::now();
                let s = ReadStamp {
                    first_read: c.first_read.take().unwrap_or(t),
                    reading: std::mem::take(&mut c.reading),
                    decoded,
                    decoding: decoded - t,
                };
                // Bytes of the next message already here came with the
                // last read.
                if !buf.is_empty() {
                    c.first_read = c.last_read;
                }
                Some(s)
            }
            _ => None,
        };
        // A reply nobody waits for (timed out, cancelled) is dropped.
        if let Some(w) = waiter {
            let _ = w.tx.send(Ok((inc, stamp)));
        }
    }
    Ok(())
}

/// A TCP socket for `addr` with the configured options, before it
/// connects (the receive buffer sets the window scale offered then).
pub(super) fn tcp_socket(
    addr: std::net::SocketAddr,
    cfg: &ClientConfig,
) -> std::io::Result<socket2::Socket> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    if let Some(n) = cfg.send_buffer {
        s.set_send_buffer_size(n as usize)?;
    }
    if let Some(n) = cfg.recv_buffer {
        s.set_recv_buffer_size(n as usize)?;
    }
    s.set_tcp_nodelay(cfg.nodelay)?;
    Ok(s)
}

/// The caller's contexts, plus the CodeSets context while it is still due.
pub(super) fn with_code_sets<'a>(
    contexts: &'a [ServiceContext],
    code_sets: Option<&'a ServiceContext>,
) -> std::borrow::Cow<'a, [ServiceContext]> {
    match code_sets {
        Some(cs) if contexts.is_empty() => std::borrow::Cow::Borrowed(std::slice::from_ref(cs)),
        Some(cs) => std::borrow::Cow::Owned([contexts, std::slice::from_ref(cs)].concat()),
        None => std::borrow::Cow::Borrowed(contexts),
    }
}

/// What a connection's requests are encoded with.
#[derive(Debug, Clone, Copy)]
pub(super) struct Wire {
    pub(super) version: Version,
    pub(super) order: ByteOrder,
    pub(super) opts: Options,
    /// Whether bodies splice shared runs (`ClientConfig::splice_cutoff`).
    pub(super) splice: bool,
}

impl Wire {
    /// The wire of a new connection speaking `version`: with the target's
    /// TAG_CODE_SETS and GIOP ≥ 1.1, the negotiated options and the
    /// CodeSets context the first request carries; otherwise the
    /// version's defaults and no context.
    pub(super) fn negotiate(
        version: Version,
        cfg: &ClientConfig,
        code_sets: Option<&CodeSetComponentInfo>,
    ) -> (Wire, Option<ServiceContext>) {
        let (opts, context) = match code_sets {
            Some(cs) if version.minor >= 1 => {
                let n = negotiate(cs, version);
                (
                    n.options,
                    Some(ServiceContext {
                        id: SC_CODE_SETS,
                        data: n.context.encode(cfg.order),
                    }),
                )
            }
            _ => (default_options(version), None),
        };
        let wire = Wire {
            version,
            order: cfg.order,
            opts,
            splice: cfg.splice_cutoff.is_some(),
        };
        (wire, context)
    }

    /// Append a request (`head`, then the body `body` writes) to the
    /// queued stream.
    pub(super) fn encode_request<F>(
        &self,
        out: &mut BytesMut,
        splices: &mut Splices,
        head: &RequestHead<'_>,
        body: F,
    ) -> Result<(), ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let p = begin_request(out, self.version, self.order, self.opts, head)
            .map_err(ClientError::Encode)?;
        let encoded = if self.splice {
            body(&mut p.writer_spliced(out, splices))
        } else {
            body(&mut p.writer(out))
        };
        encoded.map_err(|e| {
            ClientError::Encode(GiopError::Cdr {
                what: "request body",
                source: e,
            })
        })?;
        p.finish_spliced(out, splices)
            .map_err(ClientError::Encode)?;
        Ok(())
    }
}

/// Split the message queued from `start` into GIOP 1.2 fragments when it
/// is longer than `fragment_size` (spliced runs are copied in first:
/// fragments need contiguous bytes).
pub(super) fn fragment_from(
    version: Version,
    fragment_size: Option<usize>,
    out: &mut BytesMut,
    splices: &mut Splices,
    start: usize,
) -> Result<(), ClientError> {
    let Some(fs) = fragment_size else {
        return Ok(());
    };
    let len = out.len() - start + splices.bytes_after(start);
    if !version.is_12() || len <= fs {
        return Ok(());
    }
    let msg = out.split_off(start);
    let runs = splices.split_after(start);
    if runs.is_empty() {
        fragment_message(&msg, fs, out)
    } else {
        let mut flat = BytesMut::new();
        runs.flatten_into(&msg, &mut flat);
        fragment_message(&flat, fs, out)
    }
    .map_err(ClientError::Encode)
}

/// A message from the server as the reply (or locate reply) to a request
/// id, or the error it means: CloseConnection, MessageError, or a message
/// type a server must not send.
pub(super) fn incoming(msg: Message, addr: &str) -> Result<(u32, Incoming), ClientError> {
    match msg {
        Message::Reply(r) => Ok((r.header.request_id, Incoming::Reply(r))),
        Message::LocateReply(l) => Ok((l.request_id, Incoming::Locate(l))),
        Message::CloseConnection => Err(ClientError::Closed {
            addr: addr.to_string(),
            retryable: true,
        }),
        Message::MessageError => Err(ClientError::PeerMessageError {
            addr: addr.to_string(),
        }),
        Message::Request(_) | Message::LocateRequest(_) | Message::CancelRequest { .. } => {
            Err(ClientError::Protocol {
                addr: addr.to_string(),
                error: GiopError::BadValue {
                    what: "message type from a server",
                    value: msg.msg_type() as u32,
                    offset: 7,
                },
            })
        }
    }
}

/// What a Request (not a LocateRequest) got back: its reply, none for a
/// oneway, or a protocol error for a LocateReply in its place.
pub(super) fn reply_of(inc: Option<Incoming>, addr: &str) -> Result<Option<Reply>, ClientError> {
    match inc {
        None => Ok(None),
        Some(Incoming::Reply(r)) => Ok(Some(r)),
        Some(Incoming::Locate(_)) => Err(unexpected(addr, "LocateReply to a Request")),
    }
}

/// What a LocateRequest got back: its LocateReply, or a protocol error.
pub(super) fn locate_of(inc: Option<Incoming>, addr: &str) -> Result<LocateReply, ClientError> {
    match inc {
        Some(Incoming::Locate(l)) => Ok(l),
        _ => Err(unexpected(addr, "Reply to a LocateRequest")),
    }
}

fn unexpected(addr: &str, what: &'static str) -> ClientError {
    ClientError::Protocol {
        addr: addr.to_string(),
        error: GiopError::BadValue {
            what,
            value: 0,
            offset: 0,
        },
    }
}

/// How often a wait that may time out looks at its deadline: a sixteenth
/// of the timeout, within 1 ms … `max`.
pub(super) fn check_interval(timeout: Duration, max: Duration) -> Duration {
    (timeout / 16).clamp(Duration::from_millis(1), max)
}

/// Connections by endpoint, created on demand.
#[derive(Debug, Default)]
struct Pool {
    conns: Vec<Connection>,
    next: usize,
}

/// A client: pooled connections per endpoint, forwarding, code sets.
#[derive(Debug)]
pub struct Client {
    cfg: ClientConfig,
    pools: Mutex<HashMap<(String, u16, Version), Pool>>,
}

/// Where a call goes: the connection and the address to put in requests.
#[derive(Debug, Clone)]
pub struct Route {
    pub connection: Connection,
    pub target: TargetAddress,
}

impl Client {
    /// A client with these settings.
    pub fn new(cfg: ClientConfig) -> Client {
        Client {
            cfg,
            pools: Mutex::new(HashMap::new()),
        }
    }

    /// The settings.
    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    /// A connection to the first IIOP profile of `ior` (pooled) and the
    /// KeyAddr target for it.
    pub async fn route(&self, ior: &Ior) -> Result<Route, ClientError> {
        let p = ior.iiop_profile().ok_or(ClientError::NoProfile)?;
        let cs = ior.code_sets().map(|(cs, _)| cs);
        let connection = self.connection_for(&p, cs.as_ref()).await?;
        Ok(Route {
            connection,
            target: TargetAddress::Key(p.object_key.clone()),
        })
    }

    /// A pooled connection to the endpoint of an IIOP profile; a new one
    /// negotiates `code_sets` (the IOR's TAG_CODE_SETS, wherever the IOR
    /// carried it: see [`Ior::code_sets`]).
    pub async fn connection_for(
        &self,
        p: &IiopProfile,
        code_sets: Option<&CodeSetComponentInfo>,
    ) -> Result<Connection, ClientError> {
        let version = self.cfg.version.unwrap_or(if p.version.minor > 2 {
            Version::V1_2
        } else {
            p.version
        });
        let key = (p.host.clone(), p.port, version);
        {
            let mut pools = self.pools.lock().unwrap_or_else(|e| e.into_inner());
            let pool = pools.entry(key.clone()).or_default();
            pool.conns.retain(|c| !c.is_closed());
            if pool.conns.len() >= self.cfg.pool_size.max(1) {
                pool.next = (pool.next + 1) % pool.conns.len();
                return Ok(pool.conns[pool.next].clone());
            }
        }
        let c = Connection::connect(&p.host, p.port, version, &self.cfg, code_sets).await?;
        let mut pools = self.pools.lock().unwrap_or_else(|e| e.into_inner());
        let pool = pools.entry(key).or_default();
        pool.conns.push(c.clone());
        Ok(c)
    }

    /// Invoke `operation` on `ior`, following LOCATION_FORWARD(_PERM)
    /// replies (each to a new endpoint) up to `max_forwards` times and
    /// retrying once on a connection the server closed with
    /// CloseConnection, and once in the addressing disposition a GIOP 1.2
    /// server asks for with NEEDS_ADDRESSING_MODE. `body` may run once per
    /// attempt. Returns the final
    /// reply (NO_EXCEPTION, USER_EXCEPTION or SYSTEM_EXCEPTION), `None`
    /// for a oneway.
    pub async fn invoke<F>(
        &self,
        ior: &Ior,
        operation: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<Option<Reply>, ClientError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let mut target = ior.clone();
        let mut retried = false;
        let mut hops = 0;
        // Addressing disposition a server asked for (GIOP 1.2), if any.
        let mut disposition: Option<i16> = None;
        loop {
            let mut route = self.route(&target).await?;
            if let Some(d) = disposition {
                route.target = addressed(&target, d)?;
            }
            let r = route
                .connection
                .request(&route.target, operation, response, &body)
                .await;
            let reply = match r {
                Err(e) if e.is_retryable() && !retried => {
                    retried = true;
                    continue;
                }
                Err(e) => return Err(e),
                Ok(None) => return Ok(None),
                Ok(Some(reply)) => reply,
            };
            match reply.header.status {
                ReplyStatus::LocationForward | ReplyStatus::LocationForwardPerm => {
                    hops += 1;
                    if hops > self.cfg.max_forwards {
                        return Err(ClientError::TooManyForwards {
                            addr: route.connection.addr().to_owned(),
                            limit: self.cfg.max_forwards,
                        });
                    }
                    target = reply.forward_ior().map_err(|error| ClientError::Protocol {
                        addr: route.connection.addr().to_owned(),
                        error,
                    })?;
                }
                ReplyStatus::NeedsAddressingMode => {
                    let d = reply
                        .body
                        .reader(Options::default())
                        .read_i16()
                        .unwrap_or(-1);
                    // Resend once in the disposition asked for.
                    if disposition.is_some() || !(0..=2).contains(&d) {
                        return Err(ClientError::NeedsAddressingMode(d));
                    }
                    disposition = Some(d);
                }
                _ => return Ok(Some(reply)),
            }
        }
    }

    /// [`invoke`](Self::invoke) a twoway call and turn exception replies
    /// into errors: `Ok` holds the NO_EXCEPTION body.
    pub async fn call<F>(&self, ior: &Ior, operation: &str, body: F) -> Result<Body, ClientError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let reply = self
            .invoke(ior, operation, ResponseMode::Twoway, body)
            .await?
            .ok_or(ClientError::LocallyClosed)?;
        reply_result(reply)
    }

    /// LocateRequest, following OBJECT_FORWARD(_PERM). Returns the final
    /// status and the IOR it applies to.
    pub async fn locate(&self, ior: &Ior) -> Result<(LocateStatus, Ior), ClientError> {
        let mut target = ior.clone();
        let mut last = String::new();
        for _ in 0..=self.cfg.max_forwards {
            let route = self.route(&target).await?;
            let l = route.connection.locate(&route.target).await?;
            match l.status {
                LocateStatus::ObjectForward(next) | LocateStatus::ObjectForwardPerm(next) => {
                    last = route.connection.addr().to_owned();
                    target = next;
                }
                status => return Ok((status, target)),
            }
        }
        Err(ClientError::TooManyForwards {
            addr: last,
            limit: self.cfg.max_forwards,
        })
    }
}

/// The target address of disposition `d` (0 KeyAddr, 1 ProfileAddr,
/// 2 ReferenceAddr) for the first IIOP profile of `ior`.
fn addressed(ior: &Ior, d: i16) -> Result<TargetAddress, ClientError> {
    let index = ior
        .profiles
        .iter()
        .position(|p| matches!(p.iiop(), Some(Ok(_))))
        .ok_or(ClientError::NoProfile)?;
    Ok(match d {
        0 => TargetAddress::Key(
            ior.profiles[index]
                .object_key()
                .ok_or(ClientError::NoProfile)?,
        ),
        1 => TargetAddress::Profile(ior.profiles[index].clone()),
        _ => TargetAddress::Reference {
            index: index as u32,
            ior: ior.clone(),
        },
    })
}

/// Turn a reply into its NO_EXCEPTION body or an exception error (which
/// names no peer: prefer [`reply_result_from`]).
pub fn reply_result(reply: Reply) -> Result<Body, ClientError> {
    reply_result_from("", reply)
}

/// Turn a reply from `addr` into its NO_EXCEPTION body or an exception
/// error naming `addr`.
pub fn reply_result_from(addr: &str, reply: Reply) -> Result<Body, ClientError> {
    let protocol = |error| ClientError::Protocol {
        addr: addr.to_owned(),
        error,
    };
    match reply.header.status {
        ReplyStatus::NoException => Ok(reply.body),
        ReplyStatus::SystemException => Err(ClientError::System(
            reply.system_exception().map_err(protocol)?,
        )),
        ReplyStatus::UserException => Err(ClientError::User {
            repo_id: reply.user_exception_id().map_err(protocol)?,
            body: reply.body,
        }),
        ReplyStatus::NeedsAddressingMode => Err(ClientError::NeedsAddressingMode(
            reply
                .body
                .reader(Options::default())
                .read_i16()
                .unwrap_or(-1),
        )),
        ReplyStatus::LocationForward | ReplyStatus::LocationForwardPerm => {
            Err(protocol(GiopError::BadValue {
                what: "unfollowed forward reply status",
                value: reply.header.status as u32,
                offset: 0,
            }))
        }
    }
}
