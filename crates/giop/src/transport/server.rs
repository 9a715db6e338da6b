//! The IIOP server: [`serve`] accepts connections (at most
//! `max_connections`), runs one task per connection, and dispatches each
//! Request to a [`Handler`].
//!
//! The fast path is synchronous: the connection task writes the Reply
//! header into its output buffer, the handler writes the body right after
//! it through a [`Writer`], and all replies produced from one read are
//! written with one call. A handler that must wait (sleep, I/O) returns
//! [`Dispatch::Async`] with a future; up to `max_in_flight` of those run
//! concurrently per connection, and their replies are written as they
//! finish.
//!
//! SYNC_WITH_SERVER requests are answered like twoways, after the handler
//! ran (with whatever body it wrote, empty for a oneway operation).
//! Malformed input gets a MessageError and the connection is closed.
//!
//! Limits (all in [`ServerConfig`]): connections at once, asynchronous
//! requests in flight per connection (reading pauses at the limit), the
//! declared size of one message and of fragments being reassembled
//! (checked on the 12-byte header, before any body byte is buffered; room
//! is never reserved for a declared size — the buffer grows only as bytes
//! arrive, so announcing a large message costs nothing), the idle timeout
//! (no message, nothing in flight: CloseConnection) and the read timeout
//! (a message that has started must be complete within it, else the
//! connection is closed without a word: the defence against slow clients).
//! Shutdown (the future given to [`serve`]) stops accepting and reading,
//! lets in-flight requests finish, then sends CloseConnection.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, Options, Reader, Writer};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::JoinSet;

use crate::codec::{fragment_message, CodecConfig, Decoder, Frame};
use crate::context::{default_options, CodeSetContext, ServiceContextList};
use crate::error::GiopError;
use crate::exception::{Completion, SystemException, MINOR_MARSHAL_BAD_BODY};
use crate::header::{Header, MsgType, Version, HEADER_LEN};
use crate::ior::Ior;
use crate::message::{
    begin_reply, encode_empty, encode_locate_reply, Body, LocateReply, LocateStatus, Message,
    Pending, ReplyStatus, Request,
};

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Connections served at once; further accepts wait.
    pub max_connections: usize,
    /// Close a connection (with CloseConnection) after this long without
    /// a message and with nothing in flight.
    pub idle_timeout: Option<Duration>,
    /// A message whose first byte has arrived (and a fragmented message
    /// whose first fragment has) must be complete within this time, or the
    /// connection is closed (no MessageError: nothing was malformed).
    pub read_timeout: Option<Duration>,
    /// Asynchronous handler calls running at once per connection.
    pub max_in_flight: usize,
    /// Limits on incoming messages (maximum message size).
    pub codec: CodecConfig,
    /// Fragment GIOP 1.2 replies longer than this.
    pub fragment_size: Option<usize>,
    /// TCP_NODELAY on accepted sockets.
    pub nodelay: bool,
    /// SO_SNDBUF of accepted sockets, if set.
    pub send_buffer: Option<u32>,
    /// SO_RCVBUF of accepted sockets, if set (applied to the listener as
    /// well, so that the window scale agreed at connect time allows it).
    pub recv_buffer: Option<u32>,
    /// Byte order of replies; `None` answers in the request's order.
    pub reply_order: Option<ByteOrder>,
    /// Time the server's phases into these totals (shared by every
    /// connection; E0.5's server side). `None`: no clock reads.
    pub phases: Option<Arc<ServerPhases>>,
}

/// Where the server's time went, summed over every connection of a server
/// with [`ServerConfig::phases`] set, in nanoseconds: `read` (reads that
/// brought bytes), `decode` (GIOP headers of each message), `upcall` (the
/// handler: demarshalling the body, the operation, marshalling the result),
/// `marshal` (reply headers and completion), `write` (writing replies).
/// Synchronous dispatch only: asynchronous replies are not timed.
#[derive(Debug, Default)]
pub struct ServerPhases {
    pub requests: AtomicU64,
    pub read_ns: AtomicU64,
    pub decode_ns: AtomicU64,
    pub upcall_ns: AtomicU64,
    pub marshal_ns: AtomicU64,
    pub write_ns: AtomicU64,
}

impl ServerPhases {
    /// (requests, seconds per phase) as named in the type's docs.
    pub fn snapshot(&self) -> (u64, [(&'static str, f64); 5]) {
        let s = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e9;
        (
            self.requests.load(Ordering::Relaxed),
            [
                ("read", s(&self.read_ns)),
                ("decode", s(&self.decode_ns)),
                ("upcall", s(&self.upcall_ns)),
                ("marshal", s(&self.marshal_ns)),
                ("write", s(&self.write_ns)),
            ],
        )
    }

    /// Zero every total.
    pub fn reset(&self) {
        for a in [
            &self.requests,
            &self.read_ns,
            &self.decode_ns,
            &self.upcall_ns,
            &self.marshal_ns,
            &self.write_ns,
        ] {
            a.store(0, Ordering::Relaxed);
        }
    }

    fn add(a: &AtomicU64, since: Option<std::time::Instant>) {
        if let Some(t) = since {
            a.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_connections: 1024,
            idle_timeout: None,
            read_timeout: Some(Duration::from_secs(60)),
            max_in_flight: 64,
            codec: CodecConfig::default(),
            fragment_size: None,
            nodelay: true,
            send_buffer: None,
            recv_buffer: None,
            reply_order: None,
            phases: None,
        }
    }
}

/// What a handler sees of a request.
#[derive(Debug)]
pub struct RequestContext<'a> {
    pub version: Version,
    /// Byte order of the request.
    pub order: ByteOrder,
    /// Byte order of the reply: asynchronous handlers marshal their
    /// [`AsyncReply::body`] in it.
    pub reply_order: ByteOrder,
    pub request_id: u32,
    pub object_key: &'a [u8],
    pub operation: &'a str,
    pub contexts: &'a ServiceContextList,
    /// False for oneways: whatever the handler writes is discarded.
    pub response_expected: bool,
    /// CDR options in force (code sets negotiated on this connection).
    pub options: Options,
    /// The body, for handlers that go asynchronous and need to own it.
    pub body: &'a Body,
    /// Which connection the request came on (numbered from 1 per server).
    pub connection: u64,
}

/// What one connection carried, handed to [`Handler::connection_closed`]
/// when it ends (also at graceful shutdown).
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionSummary {
    /// Numbered from 1 in accept order, as in [`RequestContext::connection`].
    pub id: u64,
    pub peer: Option<std::net::SocketAddr>,
    /// Requests received (twoway and oneway).
    pub requests: u64,
    /// Of which oneways.
    pub oneways: u64,
    /// Bytes read from and written to the socket.
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// How long the connection was open.
    pub seconds: f64,
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// NO_EXCEPTION: the reply body (results) was written.
    Reply,
    /// USER_EXCEPTION: the body (repository id, then members) was written.
    UserException,
    /// SYSTEM_EXCEPTION: whatever was written is discarded.
    System(SystemException),
    /// LOCATION_FORWARD to this IOR.
    Forward(Ior),
    /// LOCATION_FORWARD_PERM (sent as LOCATION_FORWARD before GIOP 1.2).
    ForwardPerm(Ior),
}

/// The result of an asynchronous handler call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsyncReply {
    pub outcome: Outcome,
    /// For `Reply`/`UserException`: the body, marshalled with a
    /// [`Writer`] whose origin is 8-aligned (`Writer::new` on an empty
    /// buffer). Replies carry no service contexts, so the body starts at
    /// offset 24 in every GIOP version, which is 8-aligned.
    pub body: Bytes,
}

/// A handler's answer.
pub enum Dispatch {
    Done(Outcome),
    Async(Pin<Box<dyn Future<Output = AsyncReply> + Send + 'static>>),
}

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dispatch::Done(o) => f.debug_tuple("Done").field(o).finish(),
            Dispatch::Async(_) => f.write_str("Async(..)"),
        }
    }
}

/// The answer to a LocateRequest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocateOutcome {
    Here,
    Unknown,
    Forward(Ior),
    ForwardPerm(Ior),
}

/// Serves requests. `handle` runs on the connection's task: it must not
/// block; return [`Dispatch::Async`] to wait.
pub trait Handler: Send + Sync + 'static {
    /// Handle one request: read arguments from `body`, write results to
    /// `reply`. Unknown object keys should give
    /// [`SystemException::unknown_object`], unknown operations
    /// [`SystemException::unknown_operation`].
    fn handle(
        &self,
        req: &RequestContext<'_>,
        body: &mut Reader<'_>,
        reply: &mut Writer<'_>,
    ) -> Dispatch;

    /// A connection ended; what it carried (for per-connection counters).
    fn connection_closed(&self, summary: &ConnectionSummary) {
        let _ = summary;
    }

    /// Answer a LocateRequest for `object_key`.
    fn locate(&self, object_key: &[u8]) -> LocateOutcome {
        let _ = object_key;
        LocateOutcome::Here
    }
}

/// Whether a request body ends where its arguments did: nothing is left
/// after the last argument but what alignment padding can explain —
/// fewer than 8 bytes (zero-filled or not) that end on an 8-aligned
/// offset from the alignment origin. Anything more is a mis-encoded body
/// (a peer's `sequence<wchar>` in the wrong encoding leaves bytes over):
/// skeletons answer MARSHAL (COMPLETED_NO) instead of acting on values
/// decoded from it. docs/robustness.md has the rule and its tests.
pub fn arguments_end_body(body: &Reader<'_>) -> bool {
    let n = body.remaining();
    n == 0 || (n < 8 && (body.align_offset() + n).is_multiple_of(8))
}

/// The operations every CORBA object has: `_is_a` (true for any of
/// `type_ids`), `_non_existent` / `_not_existent` (false). `None` for any
/// other operation. A body with bytes after the arguments (beyond
/// padding: [`arguments_end_body`]) gets MARSHAL.
pub fn handle_builtin(
    req: &RequestContext<'_>,
    body: &mut Reader<'_>,
    reply: &mut Writer<'_>,
    type_ids: &[&str],
) -> Option<Dispatch> {
    let marshal = || {
        Some(Dispatch::Done(Outcome::System(SystemException::marshal(
            MINOR_MARSHAL_BAD_BODY,
            Completion::No,
        ))))
    };
    match req.operation {
        "_is_a" => {
            let Ok(id) = body.read_string() else {
                return marshal();
            };
            if !arguments_end_body(body) {
                return marshal();
            }
            reply.write_bool(
                type_ids.contains(&id.as_str()) || id == "IDL:omg.org/CORBA/Object:1.0",
            );
            Some(Dispatch::Done(Outcome::Reply))
        }
        "_non_existent" | "_not_existent" => {
            if !arguments_end_body(body) {
                return marshal();
            }
            reply.write_bool(false);
            Some(Dispatch::Done(Outcome::Reply))
        }
        _ => None,
    }
}

/// Accept connections on `listener` and serve them with `handler` until
/// `shutdown` completes; then stop accepting, let every connection finish
/// its in-flight requests and close, and return.
pub async fn serve<H: Handler>(
    listener: TcpListener,
    handler: Arc<H>,
    cfg: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let cfg = Arc::new(cfg);
    set_buffers(socket2::SockRef::from(&listener), &cfg)?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let slots = Arc::new(Semaphore::new(cfg.max_connections.max(1)));
    let mut tasks = JoinSet::new();
    let mut next_conn = 0u64;
    tokio::pin!(shutdown);
    loop {
        while tasks.try_join_next().is_some() {}
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok((s, peer)) => {
                    next_conn += 1;
                    (s, peer)
                }
                Err(_) => {
                    // EMFILE and friends: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(cfg.nodelay);
        let _ = set_buffers(socket2::SockRef::from(&stream), &cfg);
        let (h, c, rx) = (handler.clone(), cfg.clone(), stop_rx.clone());
        tasks.spawn(async move {
            ConnTask::new(h, c, next_conn, Some(peer))
                .run(stream, rx)
                .await;
            drop(permit);
        });
    }
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// Apply [`ServerConfig::send_buffer`] and [`ServerConfig::recv_buffer`].
fn set_buffers(s: socket2::SockRef<'_>, cfg: &ServerConfig) -> std::io::Result<()> {
    if let Some(n) = cfg.send_buffer {
        s.set_send_buffer_size(n as usize)?;
    }
    if let Some(n) = cfg.recv_buffer {
        s.set_recv_buffer_size(n as usize)?;
    }
    Ok(())
}

struct AsyncDone {
    request_id: u32,
    version: Version,
    order: ByteOrder,
    expects: bool,
    reply: AsyncReply,
}

struct ConnTask<H> {
    handler: Arc<H>,
    cfg: Arc<ServerConfig>,
    code_sets: Option<CodeSetContext>,
    last_version: Version,
    in_flight: usize,
    done_tx: mpsc::UnboundedSender<AsyncDone>,
    done_rx: mpsc::UnboundedReceiver<AsyncDone>,
    /// Per-connection counters, reported when the connection ends.
    summary: ConnectionSummary,
    opened: std::time::Instant,
}

/// What to do after processing input.
#[derive(PartialEq, Eq)]
enum Next {
    Continue,
    /// Close now (after flushing what is queued).
    Abort,
    /// The client sent CloseConnection (GIOP 1.2): it expects no more
    /// replies; close without answering in kind.
    PeerClosing,
}

impl<H: Handler> ConnTask<H> {
    fn new(
        handler: Arc<H>,
        cfg: Arc<ServerConfig>,
        id: u64,
        peer: Option<std::net::SocketAddr>,
    ) -> Self {
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        ConnTask {
            handler,
            cfg,
            code_sets: None,
            last_version: Version::V1_0,
            in_flight: 0,
            done_tx,
            done_rx,
            summary: ConnectionSummary {
                id,
                peer,
                requests: 0,
                oneways: 0,
                bytes_in: 0,
                bytes_out: 0,
                seconds: 0.0,
            },
            opened: std::time::Instant::now(),
        }
    }

    async fn run(mut self, stream: TcpStream, stop: watch::Receiver<bool>) {
        self.serve_connection(stream, stop).await;
        self.summary.seconds = self.opened.elapsed().as_secs_f64();
        self.handler.connection_closed(&self.summary);
    }

    async fn serve_connection(&mut self, mut stream: TcpStream, mut stop: watch::Receiver<bool>) {
        let mut closing = *stop.borrow_and_update();
        // One future for the connection's life (a new `changed()` per
        // message would register a waiter per request).
        let stopping = async move {
            while !*stop.borrow_and_update() {
                if stop.changed().await.is_err() {
                    break;
                }
            }
        };
        tokio::pin!(stopping);
        let phases = self.cfg.phases.clone();
        let mut decoder = Decoder::new(self.cfg.codec);
        let mut inbuf = BytesMut::with_capacity(64 * 1024);
        let mut out = BytesMut::with_capacity(64 * 1024);
        let mut peer_gone = false;
        let mut aborted = false;
        // When the message being read (or reassembled) started.
        let mut started: Option<tokio::time::Instant> = None;
        loop {
            // Handle what is buffered (also after async replies freed room).
            let next = self.process(&mut decoder, &mut inbuf, &mut out);
            if !out.is_empty() {
                let t = self.clock();
                if stream.write_all(&out).await.is_err() {
                    return;
                }
                self.time(|p| &p.write_ns, t);
                self.summary.bytes_out += out.len() as u64;
                out.clear();
            }
            match next {
                Next::Continue => {}
                Next::Abort => {
                    aborted = true;
                    break;
                }
                Next::PeerClosing => peer_gone = true,
            }
            if (closing || peer_gone) && self.in_flight == 0 {
                break;
            }
            if inbuf.capacity() - inbuf.len() < 16 * 1024 {
                inbuf.reserve(64 * 1024);
            }
            let can_read = !closing && !peer_gone && self.in_flight < self.cfg.max_in_flight;
            let reading = can_read && (!inbuf.is_empty() || decoder.in_progress());
            started = match (reading, started) {
                (false, _) => None,
                (true, None) => Some(tokio::time::Instant::now()),
                (true, s) => s,
            };
            let read_deadline = started.zip(self.cfg.read_timeout).map(|(s, t)| s + t);
            let idle = self
                .cfg
                .idle_timeout
                .filter(|_| self.in_flight == 0 && !closing);
            let mut on_read = phases
                .as_deref()
                .map(|p| move |t0| ServerPhases::add(&p.read_ns, Some(t0)));
            let on_read = on_read
                .as_mut()
                .map(|f| f as &mut (dyn FnMut(std::time::Instant) + Send));
            tokio::select! {
                // Fixed order, cheapest and most urgent first (and no
                // random number per message).
                biased;
                _ = &mut stopping, if !closing => closing = true,
                Some(done) = self.done_rx.recv() => {
                    self.in_flight -= 1;
                    self.write_async(&mut out, done);
                    while let Ok(done) = self.done_rx.try_recv() {
                        self.in_flight -= 1;
                        self.write_async(&mut out, done);
                    }
                }
                r = super::read_timed(&mut stream, &mut inbuf, on_read), if can_read => match r {
                    Ok(0) | Err(_) => peer_gone = true,
                    Ok(n) => self.summary.bytes_in += n as u64,
                },
                _ = sleep_opt(idle), if idle.is_some() => {
                    closing = true;
                }
                _ = sleep_until_opt(read_deadline), if read_deadline.is_some() => {
                    aborted = true;
                    break;
                }
            }
        }
        if aborted {
            let _ = stream.shutdown().await;
        } else if !peer_gone {
            // Tell the client that unanswered requests may be retried.
            let mut b = BytesMut::new();
            encode_empty(
                &mut b,
                self.last_version,
                ByteOrder::NATIVE,
                MsgType::CloseConnection,
            );
            let _ = stream.write_all(&b).await;
            let _ = stream.shutdown().await;
        }
    }

    /// Now, when phases are timed.
    fn clock(&self) -> Option<std::time::Instant> {
        self.cfg.phases.as_ref().map(|_| std::time::Instant::now())
    }

    /// Add the time since `t` to a phase total.
    fn time(&self, which: impl Fn(&ServerPhases) -> &AtomicU64, t: Option<std::time::Instant>) {
        if let Some(p) = &self.cfg.phases {
            ServerPhases::add(which(p), t);
        }
    }

    fn options(&self, version: Version) -> Options {
        match self.code_sets {
            Some(cs) if version.minor >= 1 => cs.options(version),
            _ => default_options(version),
        }
    }

    fn process(&mut self, decoder: &mut Decoder, inbuf: &mut BytesMut, out: &mut BytesMut) -> Next {
        while self.in_flight < self.cfg.max_in_flight {
            let frame = match next_frame(decoder, inbuf, &mut self.last_version) {
                Ok(Some(f)) => f,
                Ok(None) => return Next::Continue,
                Err(_) => return self.message_error(out),
            };
            let next = self.frame(frame, out);
            if next != Next::Continue {
                return next;
            }
        }
        Next::Continue
    }

    fn message_error(&self, out: &mut BytesMut) -> Next {
        encode_empty(
            out,
            self.last_version,
            ByteOrder::NATIVE,
            MsgType::MessageError,
        );
        Next::Abort
    }

    fn frame(&mut self, frame: Frame, out: &mut BytesMut) -> Next {
        let version = frame.header.version;
        self.last_version = version;
        let t = self.clock();
        let msg = match Message::decode_segmented(
            &frame.header,
            frame.payload,
            frame.segments,
            self.options(version),
        ) {
            Ok(m) => m,
            Err(_) => return self.message_error(out),
        };
        self.time(|p| &p.decode_ns, t);
        match msg {
            Message::Request(req) => {
                if let Ok(Some(cs)) = req.header.contexts.code_sets() {
                    self.code_sets = Some(cs);
                }
                self.request(req, out);
                Next::Continue
            }
            Message::LocateRequest(l) => {
                let order = self.cfg.reply_order.unwrap_or(frame.header.order);
                let status = match l.target.object_key() {
                    None if version.is_12() => LocateStatus::NeedsAddressingMode(0),
                    None => LocateStatus::UnknownObject,
                    Some(key) => match self.handler.locate(&key) {
                        LocateOutcome::Here => LocateStatus::ObjectHere,
                        LocateOutcome::Unknown => LocateStatus::UnknownObject,
                        LocateOutcome::Forward(i) => LocateStatus::ObjectForward(i),
                        LocateOutcome::ForwardPerm(i) if version.is_12() => {
                            LocateStatus::ObjectForwardPerm(i)
                        }
                        LocateOutcome::ForwardPerm(i) => LocateStatus::ObjectForward(i),
                    },
                };
                let reply = LocateReply {
                    request_id: l.request_id,
                    status,
                };
                if encode_locate_reply(out, version, order, &reply).is_err() {
                    return self.message_error(out);
                }
                Next::Continue
            }
            // Nothing to cancel on the synchronous path; async replies to a
            // cancelled request are still sent (the client drops them).
            Message::CancelRequest { .. } => Next::Continue,
            Message::CloseConnection => Next::PeerClosing,
            Message::MessageError => Next::Abort,
            Message::Reply(_) | Message::LocateReply(_) => self.message_error(out),
        }
    }

    fn request(&mut self, req: Request, out: &mut BytesMut) {
        let version = req.version;
        let order = self.cfg.reply_order.unwrap_or(req.body.order);
        let opts = self.options(version);
        let h = &req.header;
        let expects = h.response.expects_reply();
        self.summary.requests += 1;
        self.summary.oneways += u64::from(!expects);
        let start = out.len();
        let Some(key) = h.target.object_key() else {
            if expects {
                let outcome = if version.is_12() {
                    None
                } else {
                    Some(Outcome::System(SystemException::unknown_object()))
                };
                self.write_simple(out, version, order, h.request_id, outcome);
            }
            return;
        };
        let ctx = RequestContext {
            version,
            order: req.body.order,
            reply_order: order,
            request_id: h.request_id,
            object_key: &key,
            operation: h.operation(),
            contexts: &h.contexts,
            response_expected: expects,
            options: opts,
            body: &req.body,
            connection: self.summary.id,
        };
        if let Some(ph) = &self.cfg.phases {
            ph.requests.fetch_add(1, Ordering::Relaxed);
        }
        let t = self.clock();
        let p = match begin_reply(
            out,
            version,
            order,
            opts,
            h.request_id,
            ReplyStatus::NoException,
            &[],
        ) {
            Ok(p) => p,
            Err(_) => return,
        };
        self.time(|p| &p.marshal_ns, t);
        let t = self.clock();
        let dispatch = {
            let mut reader = req.body.reader(opts);
            let mut w = p.writer(out);
            self.handler.handle(&ctx, &mut reader, &mut w)
        };
        self.time(|p| &p.upcall_ns, t);
        match dispatch {
            Dispatch::Done(outcome) => {
                if expects {
                    let t = self.clock();
                    self.finish(out, p, version, outcome);
                    self.time(|p| &p.marshal_ns, t);
                } else {
                    out.truncate(start);
                }
            }
            Dispatch::Async(fut) => {
                out.truncate(start);
                self.in_flight += 1;
                let tx = self.done_tx.clone();
                let request_id = h.request_id;
                let task = tokio::spawn(fut);
                tokio::spawn(async move {
                    let reply = task.await.unwrap_or_else(|_| AsyncReply {
                        outcome: Outcome::System(SystemException::internal(
                            crate::exception::VMCID_IIOPBENCH | 3,
                            Completion::Maybe,
                        )),
                        body: Bytes::new(),
                    });
                    let _ = tx.send(AsyncDone {
                        request_id,
                        version,
                        order,
                        expects,
                        reply,
                    });
                });
            }
        }
    }

    /// Set the status for `outcome`, write its body if it has one of its
    /// own, finish, fragment if configured.
    fn finish(&self, out: &mut BytesMut, p: Pending, version: Version, outcome: Outcome) {
        let res = match outcome {
            Outcome::Reply => Ok(()),
            Outcome::UserException => {
                p.set_reply_status(out, ReplyStatus::UserException);
                Ok(())
            }
            Outcome::System(e) => {
                p.clear_body(out);
                p.set_reply_status(out, ReplyStatus::SystemException);
                e.encode(&mut p.writer(out))
            }
            Outcome::Forward(ior) | Outcome::ForwardPerm(ior) if !version.is_12() => {
                p.clear_body(out);
                p.set_reply_status(out, ReplyStatus::LocationForward);
                ior.encode(&mut p.writer(out)).map_err(GiopError::from)
            }
            Outcome::Forward(ior) => {
                p.clear_body(out);
                p.set_reply_status(out, ReplyStatus::LocationForward);
                ior.encode(&mut p.writer(out)).map_err(GiopError::from)
            }
            Outcome::ForwardPerm(ior) => {
                p.clear_body(out);
                p.set_reply_status(out, ReplyStatus::LocationForwardPerm);
                ior.encode(&mut p.writer(out)).map_err(GiopError::from)
            }
        };
        if res.is_err() || p.finish(out).is_err() {
            out.truncate(p.start());
            return;
        }
        if let Some(fs) = self.cfg.fragment_size {
            if version.is_12() && out.len() - p.start() > fs {
                let msg = out.split_off(p.start());
                if fragment_message(&msg, fs, out).is_err() {
                    out.truncate(p.start());
                }
            }
        }
    }

    /// A reply with no handler body: `None` = NEEDS_ADDRESSING_MODE(KeyAddr).
    fn write_simple(
        &self,
        out: &mut BytesMut,
        version: Version,
        order: ByteOrder,
        request_id: u32,
        outcome: Option<Outcome>,
    ) {
        let opts = self.options(version);
        match outcome {
            Some(o) => {
                if let Ok(p) = begin_reply(
                    out,
                    version,
                    order,
                    opts,
                    request_id,
                    ReplyStatus::NoException,
                    &[],
                ) {
                    self.finish(out, p, version, o);
                }
            }
            None => {
                if let Ok(p) = begin_reply(
                    out,
                    version,
                    order,
                    opts,
                    request_id,
                    ReplyStatus::NeedsAddressingMode,
                    &[],
                ) {
                    p.writer(out).write_i16(0);
                    let _ = p.finish(out);
                }
            }
        }
    }

    fn write_async(&self, out: &mut BytesMut, done: AsyncDone) {
        if !done.expects {
            return;
        }
        let opts = self.options(done.version);
        let Ok(p) = begin_reply(
            out,
            done.version,
            done.order,
            opts,
            done.request_id,
            ReplyStatus::NoException,
            &[],
        ) else {
            return;
        };
        if matches!(done.reply.outcome, Outcome::Reply | Outcome::UserException) {
            p.writer(out).write_bytes(&done.reply.body);
        }
        self.finish(out, p, done.version, done.reply.outcome);
    }
}

/// The next complete message in `inbuf`. Unlike [`Decoder::decode`] on the
/// whole buffer, this hands the decoder one complete message at a time, so
/// it never reserves room for a declared size whose bytes have not arrived
/// (1000 connections announcing 100 MiB each would otherwise reserve
/// 100 GB of address space). Invalid or oversized headers still go to the
/// decoder at once, which rejects them.
///
/// `version` is set to the version of each header seen (when the magic and
/// version are valid even if the rest is not), for the MessageError.
fn next_frame(
    decoder: &mut Decoder,
    inbuf: &mut BytesMut,
    version: &mut Version,
) -> Result<Option<Frame>, GiopError> {
    loop {
        if inbuf.len() < HEADER_LEN {
            return Ok(None);
        }
        let total = match Header::parse(&inbuf[..HEADER_LEN]) {
            Ok(h) => {
                *version = h.version;
                if h.size as usize > decoder.config().max_message_size {
                    return decoder.decode(inbuf);
                }
                h.total_len()
            }
            Err(_) => {
                if inbuf[..4] == *b"GIOP" {
                    if let Ok(v) = Version::new(inbuf[4], inbuf[5]) {
                        *version = v;
                    }
                }
                return decoder.decode(inbuf);
            }
        };
        if inbuf.len() < total {
            return Ok(None);
        }
        let mut one = inbuf.split_to(total);
        if let Some(f) = decoder.decode(&mut one)? {
            return Ok(Some(f));
        }
        // A fragment was absorbed into a partial message: go on.
    }
}

async fn sleep_until_opt(t: Option<tokio::time::Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

async fn sleep_opt(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_frame_never_reserves_for_a_declared_size() {
        let mut d = Decoder::new(CodecConfig {
            max_message_size: 512 << 20,
            max_reassembled_size: 512 << 20,
        });
        let h = Header::new(
            Version::V1_2,
            ByteOrder::Little,
            MsgType::Request,
            100 << 20,
        );
        let mut buf = BytesMut::with_capacity(1024);
        buf.extend_from_slice(&h.to_bytes());
        buf.extend_from_slice(&[0; 100]);
        let mut v = Version::V1_0;
        assert_eq!(next_frame(&mut d, &mut buf, &mut v), Ok(None));
        assert_eq!(buf.capacity(), 1024, "no room reserved for 100 MiB");
        assert_eq!(buf.len(), 112);
        assert_eq!(v, Version::V1_2);
    }

    #[test]
    fn next_frame_passes_whole_messages_and_absorbs_fragments() {
        let mut d = Decoder::default();
        let o = ByteOrder::Little;
        let mut first = Header::new(Version::V1_2, o, MsgType::Request, 8);
        first.more_fragments = true;
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&first.to_bytes());
        buf.extend_from_slice(&[7, 0, 0, 0, 1, 2, 3, 4]);
        let frag = Header::new(Version::V1_2, o, MsgType::Fragment, 6);
        buf.extend_from_slice(&frag.to_bytes());
        buf.extend_from_slice(&[7, 0, 0, 0, 5, 6]);
        // A second message, incomplete: waits.
        let next = Header::new(Version::V1_1, o, MsgType::CancelRequest, 4);
        buf.extend_from_slice(&next.to_bytes());
        buf.extend_from_slice(&[9]);
        let mut v = Version::V1_0;
        let f = next_frame(&mut d, &mut buf, &mut v).unwrap().unwrap();
        assert_eq!(&f.payload[..], &[7, 0, 0, 0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(f.header.size, 10);
        assert_eq!(next_frame(&mut d, &mut buf, &mut v), Ok(None));
        assert_eq!(v, Version::V1_1);
        assert_eq!(buf.len(), 13);
    }

    #[test]
    fn next_frame_rejects_bad_headers_with_their_version() {
        let mut d = Decoder::default();
        let mut buf = BytesMut::from(&b"GIOP\x01\x01\x00\x09\x00\x00\x00\x00"[..]);
        let mut v = Version::V1_0;
        assert!(next_frame(&mut d, &mut buf, &mut v).is_err());
        assert_eq!(v, Version::V1_1);
        let mut buf = BytesMut::from(&b"GIOP\x01\x07\x00\x00\x00\x00\x00\x00"[..]);
        let mut v = Version::V1_2;
        assert!(next_frame(&mut d, &mut buf, &mut v).is_err());
        assert_eq!(v, Version::V1_2, "an unknown version leaves the last one");
    }

    #[test]
    fn socket_buffers_reach_accepted_connections() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let default = socket2::SockRef::from(&l).recv_buffer_size().unwrap();
        let want = 3 * default;
        let cfg = ServerConfig {
            send_buffer: Some(want as u32),
            recv_buffer: Some(want as u32),
            ..ServerConfig::default()
        };
        set_buffers(socket2::SockRef::from(&l), &cfg).unwrap();
        let _c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (a, _) = l.accept().unwrap();
        let a = socket2::SockRef::from(&a);
        // Linux doubles what it is given (bookkeeping); capped by rmem_max.
        let cap = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(usize::MAX);
        assert!(
            a.recv_buffer_size().unwrap() >= want.min(cap),
            "inherited from the listener"
        );
        assert_ne!(a.recv_buffer_size().unwrap(), default);
    }
}
