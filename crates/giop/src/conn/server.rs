//! The server side of a GIOP connection, pure: framing with size limits
//! (never reserving room for a declared size), fragment reassembly,
//! dispatching Requests and LocateRequests to a [`Handler`] and encoding
//! its answers, code sets from the client's context, what malformed input
//! gets (MessageError, then the connection ends), and when the connection
//! ends: the read timeout (a started message must be complete in time),
//! the idle timeout (CloseConnection), the peer's CloseConnection, a
//! shutdown that lets requests in flight finish.
//!
//! The handler runs synchronously inside [`ServerConn::process`] and
//! writes its reply body straight into the connection's output buffer (the
//! fast path); a handler that must wait returns [`Dispatch::Async`] with a
//! future, which the driver runs ([`AsyncCall`]) and hands back with
//! [`ServerConn::finish_async`].
//!
//! Order of use, per turn of the driver's loop: [`process`](ServerConn::process)
//! what was received; write [`output`](ServerConn::output) and say so
//! ([`sent`](ServerConn::sent)); stop when [`is_done`](ServerConn::is_done)
//! and end as [`ending`](ServerConn::ending) says; otherwise wait for the
//! first of: bytes ([`read_buf`](ServerConn::read_buf) while
//! [`can_read`](ServerConn::can_read), then [`received`](ServerConn::received)
//! or [`on_eof`](ServerConn::on_eof)), an asynchronous reply, a shutdown
//! ([`shutdown`](ServerConn::shutdown)), or [`next_deadline`](ServerConn::next_deadline)
//! ([`on_timeout`](ServerConn::on_timeout)).
//!
//! No clock is read here: timers start from the `now` the driver passes
//! (lazily, only when a timer starts), and phase timing
//! ([`ServerConnConfig::phases`]) reads time through the clock the driver
//! hands to [`ServerConn::new`].

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, Options, Reader, Writer};

use crate::codec::{fragment_message, CodecConfig, Decoder, Frame};
use crate::context::{BiDirIiop, ConnectionCodeSets, ServiceContextList};
use crate::error::GiopError;
use crate::exception::{Completion, SystemException, MINOR_MARSHAL_BAD_BODY};
use crate::header::{Header, MsgType, Version, HEADER_LEN};
use crate::ior::Ior;
use crate::memo::RequestHeadMemo;
use crate::message::{
    begin_reply, encode_empty, encode_locate_reply, encode_request, Body, LocateReply,
    LocateStatus, Message, Pending, Reply, ReplyStatus, Request, RequestHead, ResponseMode,
    TargetAddress,
};

/// What the server state machine reads of a server's settings: limits
/// and timeouts of one connection, how replies are framed, and phase
/// timing. The drivers' own settings (sockets, TLS, connection counts)
/// live with them, whose configuration builds this.
#[derive(Debug, Clone)]
pub struct ServerConnConfig {
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
    /// Byte order of replies; `None` answers in the request's order.
    pub reply_order: Option<ByteOrder>,
    /// Time the server's phases into these totals (shared by every
    /// connection). `None`: no clock reads.
    pub phases: Option<Arc<ServerPhases>>,
}

/// Where the server's time went, summed over every connection of a server
/// with [`ServerConnConfig::phases`] set, in nanoseconds: `read` (reads that
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

    /// Add the time from `since` to `now` to the total `a`.
    pub fn add(a: &AtomicU64, since: Instant, now: Instant) {
        let ns = now.saturating_duration_since(since).as_nanos();
        a.fetch_add(u64::try_from(ns).unwrap_or(u64::MAX), Ordering::Relaxed);
    }
}

impl Default for ServerConnConfig {
    fn default() -> Self {
        ServerConnConfig {
            idle_timeout: None,
            read_timeout: Some(Duration::from_secs(60)),
            max_in_flight: 64,
            codec: CodecConfig::default(),
            fragment_size: None,
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
    /// Call an object of the client's over the client's own connection
    /// (bidirectional GIOP) before answering: [`CallBack`].
    CallBack(CallBack),
}

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dispatch::Done(o) => f.debug_tuple("Done").field(o).finish(),
            Dispatch::Async(_) => f.write_str("Async(..)"),
            Dispatch::CallBack(c) => f.debug_tuple("CallBack").field(c).finish(),
        }
    }
}

/// A twoway request a handler makes to an object of the client's (a
/// reference the client passed) over the client's own connection, and
/// what the handler answers once its reply is in.
///
/// The connection decides whether it may (CORBA 3.0, 15.8): only when
/// the client offered the connection with a BI_DIR_IIOP context, in
/// GIOP 1.2, and the reference's first IIOP profile names one of the
/// listen points offered. Otherwise `then` learns why not
/// ([`NoCallBack`]) and nothing is sent: this server never opens a
/// connection back to a client.
pub struct CallBack {
    /// The client's object.
    pub target: Ior,
    pub operation: String,
    /// The arguments, marshalled in `order` with a [`Writer`] whose origin
    /// is 8-aligned (a GIOP 1.2 request body starts 8-aligned).
    pub args: Bytes,
    pub order: ByteOrder,
    /// The handler's answer to its own request, from the callback's reply.
    #[allow(clippy::type_complexity)]
    pub then: Box<dyn FnOnce(Result<Reply, NoCallBack>) -> AsyncReply + Send + 'static>,
}

impl std::fmt::Debug for CallBack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallBack")
            .field("operation", &self.operation)
            .field("args", &self.args.len())
            .finish_non_exhaustive()
    }
}

/// Why a [`CallBack`] was not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoCallBack {
    /// The client sent no BI_DIR_IIOP context on this connection (or the
    /// request is not GIOP 1.2): the server must not send it Requests.
    NotOffered,
    /// The reference's address is not among the listen points offered.
    NotListed { host: String, port: u16 },
    /// The reference has no IIOP profile to call.
    BadReference,
    /// As many callbacks as `max_in_flight` wait for replies already.
    Busy,
}

impl std::fmt::Display for NoCallBack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoCallBack::NotOffered => {
                f.write_str("the client offered no bidirectional GIOP 1.2 connection")
            }
            NoCallBack::NotListed { host, port } => write!(
                f,
                "the callback's address {host}:{port} is not a listen point the client offered"
            ),
            NoCallBack::BadReference => f.write_str("the callback reference has no IIOP profile"),
            NoCallBack::Busy => f.write_str("too many callbacks wait for replies"),
        }
    }
}

/// A callback sent and waiting for its reply.
struct Calling {
    ticket: AsyncTicket,
    then: Box<dyn FnOnce(Result<Reply, NoCallBack>) -> AsyncReply + Send + 'static>,
}

impl std::fmt::Debug for Calling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Calling")
            .field("ticket", &self.ticket)
            .finish_non_exhaustive()
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
/// after the last argument but what alignment padding can explain
/// ([`Reader::only_padding_left`], the rule our client holds replies to
/// as well). Anything more is a mis-encoded body (a peer's
/// `sequence<wchar>` in the wrong encoding leaves bytes over): skeletons
/// answer MARSHAL (COMPLETED_NO) instead of acting on values decoded from
/// it. docs/robustness.md has the rule and its tests.
pub fn arguments_end_body(body: &Reader<'_>) -> bool {
    body.only_padding_left()
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

/// Where an asynchronous reply goes: what the connection needs to encode
/// it when the handler's future is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AsyncTicket {
    request_id: u32,
    version: Version,
    order: ByteOrder,
    /// False for oneways: the reply is dropped.
    expects: bool,
}

/// A handler call that went asynchronous: the driver runs `future` and
/// hands its reply back with its `ticket` ([`ServerConn::finish_async`]).
pub struct AsyncCall {
    pub ticket: AsyncTicket,
    pub future: Pin<Box<dyn Future<Output = AsyncReply> + Send + 'static>>,
}

impl std::fmt::Debug for AsyncCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncCall")
            .field("ticket", &self.ticket)
            .finish_non_exhaustive()
    }
}

impl AsyncReply {
    /// The reply to a request whose asynchronous handler failed (its
    /// future panicked or was cancelled): INTERNAL, COMPLETED_MAYBE.
    pub fn handler_failed() -> AsyncReply {
        AsyncReply {
            outcome: Outcome::System(SystemException::internal(
                crate::exception::VMCID_IIOPBENCH | 3,
                Completion::Maybe,
            )),
            body: Bytes::new(),
        }
    }
}

/// How a finished connection ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// Hang up without a word: after malformed input (its MessageError
    /// was written), a read timeout, or the peer's MessageError.
    Abort,
    /// Write these bytes (CloseConnection: unanswered requests may be
    /// retried), then close.
    Close(Bytes),
    /// The peer is gone or said goodbye: just close.
    Quiet,
}

/// One server connection's protocol state.
#[derive(Debug)]
pub struct ServerConn {
    cfg: Arc<ServerConnConfig>,
    decoder: Decoder,
    input: BytesMut,
    out: BytesMut,
    /// Code sets the client chose (its first CodeSets context), for
    /// every later message.
    code_sets: ConnectionCodeSets,
    /// Version of the last header seen: MessageError and CloseConnection
    /// are sent in it.
    last_version: Version,
    /// Asynchronous handler calls not yet answered.
    in_flight: usize,
    /// When the message being read (or reassembled) started.
    started: Option<Instant>,
    /// Since when the connection has had nothing to do (idle timeout).
    idle_since: Option<Instant>,
    /// We close (shutdown, idle timeout): read nothing more, answer what
    /// is in flight, then CloseConnection.
    closing: bool,
    /// The peer closed or said CloseConnection: answer what is in
    /// flight, then close without a word.
    peer_gone: bool,
    /// Close now, without a word.
    aborted: bool,
    summary: ConnectionSummary,
    /// Wire bytes of the last message taken from the input (its fragments
    /// together); 0 before the first. Sizes the next read: see
    /// [`read_limit`](ServerConn::read_limit).
    last_len: usize,
    /// The limit [`read_limit`](ServerConn::read_limit) last gave, and how
    /// many reads in a row took all of it.
    asked: usize,
    full_reads: u32,
    /// The driver's clock, for phase timing only.
    clock: Option<fn() -> Instant>,
    /// The last Request headers decoded, for the next ones like them.
    head_memo: RequestHeadMemo,
    /// The listen points the client offered with BI_DIR_IIOP (GIOP 1.2):
    /// only then may callbacks go over this connection.
    bidir: Option<BiDirIiop>,
    /// Callbacks sent and waiting for their replies, by our request id.
    calling: std::collections::HashMap<u32, Calling>,
    /// The request id of our next callback.
    next_call_id: u32,
}

/// The least a read is limited to (see [`ServerConn::read_limit`]).
pub const READ_MIN: usize = 2 * 1024;

/// The most room [`ServerConn::read_buf`] makes ahead for the rest of a
/// message that has begun to arrive.
pub const READ_AHEAD_MAX: usize = 256 * 1024;

/// Reads in a row that took all they were allowed, after which the
/// input is drained instead (see [`ServerConn::read_limit`]).
pub const DRAIN_AFTER: u32 = 8;

/// While draining, a read at least this long says more is waiting.
pub const DRAIN_MIN: usize = 16 * 1024;

impl ServerConn {
    /// A new connection, numbered `id` (from 1 per server), from `peer`.
    /// `clock` is read for phase timing ([`ServerConnConfig::phases`]) only.
    pub fn new(
        cfg: Arc<ServerConnConfig>,
        id: u64,
        peer: Option<std::net::SocketAddr>,
        clock: Option<fn() -> Instant>,
    ) -> ServerConn {
        ServerConn {
            decoder: Decoder::new(cfg.codec),
            input: BytesMut::with_capacity(64 * 1024),
            out: BytesMut::with_capacity(64 * 1024),
            code_sets: ConnectionCodeSets::default(),
            last_version: Version::V1_0,
            in_flight: 0,
            started: None,
            idle_since: None,
            closing: false,
            peer_gone: false,
            aborted: false,
            summary: ConnectionSummary {
                id,
                peer,
                requests: 0,
                oneways: 0,
                bytes_in: 0,
                bytes_out: 0,
                seconds: 0.0,
            },
            last_len: 0,
            asked: usize::MAX,
            full_reads: 0,
            clock: clock.filter(|_| cfg.phases.is_some()),
            head_memo: RequestHeadMemo::default(),
            bidir: None,
            calling: std::collections::HashMap::new(),
            next_call_id: 0,
            cfg,
        }
    }

    /// What the connection carried so far (`seconds` is the driver's to
    /// fill in).
    pub fn summary(&self) -> &ConnectionSummary {
        &self.summary
    }

    /// The buffer to read received bytes into: at least 16 KiB of room,
    /// and room for the rest of the message at the head of the input, up
    /// to as much of it as has arrived already (and at most
    /// [`READ_AHEAD_MAX`]); then call [`received`](Self::received).
    ///
    /// Room made ahead for a large message saves growing the buffer piece
    /// by piece as it arrives, each growth moving what came before (and
    /// more reads): ours → our thread-per-connection server polling 1 ms,
    /// twoway octets of 128 KiB, 1.11x the Mbit/s [1.09–1.21] (6 paired
    /// rounds), 1.04–1.07x through the reactor. The buffer still grows
    /// only as bytes arrive, to at most about twice what has: a peer that
    /// declares a large message and sends it slowly holds no more than
    /// that, and a declared size over the largest message accepted gets
    /// no room ahead at all.
    pub fn read_buf(&mut self) -> &mut BytesMut {
        let have = self.input.len();
        let room = self.input.capacity() - have;
        // Room ahead is at most `have`: the header is looked at only when
        // the room falls short of that (not on every read of small
        // messages).
        if room < have.clamp(16 * 1024, READ_AHEAD_MAX) {
            let ahead = self.lacking().min(have).min(READ_AHEAD_MAX);
            if room < ahead.max(16 * 1024) {
                self.input.reserve(ahead.max(64 * 1024));
            }
        }
        &mut self.input
    }

    /// Bytes the message at the head of the input still lacks (0 when its
    /// header is not all in, is malformed, or declares more than the
    /// largest message accepted: the decoder refuses it).
    fn lacking(&self) -> usize {
        match self.input.get(..HEADER_LEN).map(Header::parse) {
            Some(Ok(h)) if h.size as usize <= self.decoder.config().max_message_size => {
                h.total_len().saturating_sub(self.input.len())
            }
            _ => 0,
        }
    }

    /// The most the next read should take: what the message at the head
    /// of the input still lacks, or two messages the size of the last one
    /// (at least [`READ_MIN`]); no limit before the first message.
    ///
    /// A reader that drains its socket whenever it runs returns the whole
    /// window to the sender at once, so a stream of small messages leaves
    /// the sender one TCP segment per message, each with the full cost of
    /// a send. Taking two messages at a time keeps the window from opening
    /// faster than the messages are handled, and the sender's kernel joins
    /// the messages queued behind into larger segments. omniORB's client
    /// sending 1 KiB oneways to a thread per connection that blocks: 3.6
    /// messages per segment with this limit, 2.4 without (median of 3
    /// rounds; Mbit/s 1.05x against 0.87x of omniORB's own server).
    ///
    /// Once [`DRAIN_AFTER`] reads in a row have taken all they were
    /// allowed, many messages are waiting (a client that writes them
    /// many to a segment, or a server far behind): two at a time would
    /// only cost a `recv` per two, so reads take all the buffer's room
    /// until one brings less than [`DRAIN_MIN`]. A client buffering 1 KiB
    /// oneways 64 KiB at a time: before, 1 `recv` per 2 messages, and the
    /// server was what held the stream back; with this, twice the Mbit/s,
    /// and the server keeps up and reads what has arrived (1 `recv` per 3
    /// messages).
    ///
    /// The limit is remembered, for [`received`](Self::received) to tell
    /// whether the read took all of it.
    pub fn read_limit(&mut self) -> usize {
        self.asked = if self.last_len == 0 || self.full_reads >= DRAIN_AFTER {
            usize::MAX
        } else {
            self.lacking().max(2 * self.last_len).max(READ_MIN)
        };
        self.asked
    }

    /// `n` bytes were read into [`read_buf`](Self::read_buf).
    pub fn received(&mut self, n: usize) {
        self.summary.bytes_in += n as u64;
        self.idle_since = None;
        let full = match self.asked {
            usize::MAX => n >= DRAIN_MIN,
            asked => n >= asked,
        };
        self.full_reads = if full {
            self.full_reads.saturating_add(1)
        } else {
            0
        };
    }

    /// The peer closed its end (or reading failed).
    pub fn on_eof(&mut self) {
        self.peer_gone = true;
    }

    /// Stop reading, answer what is in flight, then say CloseConnection.
    pub fn shutdown(&mut self) {
        self.closing = true;
    }

    /// Whether we are closing ([`shutdown`](Self::shutdown) or the idle
    /// timeout).
    pub fn is_closing(&self) -> bool {
        self.closing
    }

    /// Asynchronous handler calls handed out and not finished yet.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Whether a message has started to arrive and is not complete yet
    /// (bytes of it buffered, or fragments of it reassembled).
    pub fn mid_message(&self) -> bool {
        !self.input.is_empty() || self.decoder.in_progress()
    }

    /// Whether more input is wanted now: not closing, and fewer
    /// asynchronous calls in flight than `max_in_flight` (reading pauses
    /// at the limit).
    pub fn can_read(&self) -> bool {
        !self.closing && !self.peer_gone && !self.aborted && self.in_flight < self.cfg.max_in_flight
    }

    /// Bytes to write.
    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// The [`output`](Self::output) was written.
    pub fn sent(&mut self) {
        self.summary.bytes_out += self.out.len() as u64;
        self.out.clear();
    }

    /// Whether the connection is over (write its [`ending`](Self::ending)).
    ///
    /// Callbacks still waiting for replies do not keep a closing
    /// connection open: their replies are no longer read.
    pub fn is_done(&self) -> bool {
        self.aborted || ((self.closing || self.peer_gone) && self.in_flight == 0)
    }

    /// Callbacks sent over this connection and waiting for their replies.
    pub fn calling(&self) -> usize {
        self.calling.len()
    }

    /// The listen points the client offered for callbacks, if it did.
    pub fn bidir(&self) -> Option<&BiDirIiop> {
        self.bidir.as_ref()
    }

    /// How the connection ends, once [done](Self::is_done).
    pub fn ending(&self) -> Ending {
        if self.aborted {
            return Ending::Abort;
        }
        if self.peer_gone {
            return Ending::Quiet;
        }
        let mut b = BytesMut::new();
        encode_empty(
            &mut b,
            self.last_version,
            ByteOrder::NATIVE,
            MsgType::CloseConnection,
        );
        Ending::Close(b.freeze())
    }

    /// When the driver must call [`on_timeout`](Self::on_timeout), if a
    /// timer runs: the read timeout of a message that has started, the
    /// idle timeout. `now` is called only when a timer starts.
    pub fn next_deadline(&mut self, now: impl FnOnce() -> Instant) -> Option<Instant> {
        let mut now = Some(now);
        let mut at = None::<Instant>;
        let mut now = move || *at.get_or_insert_with(|| (now.take().expect("called once"))());
        let reading = self.can_read() && self.mid_message();
        if !reading {
            self.started = None;
        } else if self.started.is_none() && self.cfg.read_timeout.is_some() {
            self.started = Some(now());
        }
        if self.idle_timeout().is_some() && self.idle_since.is_none() {
            self.idle_since = Some(now());
        }
        let read = self.read_deadline();
        let idle = self.idle_deadline();
        match (read, idle) {
            (Some(r), Some(i)) => Some(r.min(i)),
            (r, i) => r.or(i),
        }
    }

    /// Time has come to `now`: a message not complete within the read
    /// timeout ends the connection (without a word: nothing was malformed);
    /// idleness beyond the idle timeout starts closing.
    pub fn on_timeout(&mut self, now: Instant) {
        if self.read_deadline().is_some_and(|d| d <= now) {
            self.aborted = true;
        } else if self.idle_deadline().is_some_and(|d| d <= now) {
            self.closing = true;
        }
    }

    /// The idle timeout, while it applies: nothing in flight, not closing.
    fn idle_timeout(&self) -> Option<Duration> {
        self.cfg.idle_timeout.filter(|_| {
            self.in_flight == 0 && self.calling.is_empty() && !self.closing && !self.peer_gone
        })
    }

    fn read_deadline(&self) -> Option<Instant> {
        let (s, t) = self.started.zip(self.cfg.read_timeout)?;
        s.checked_add(t)
    }

    fn idle_deadline(&self) -> Option<Instant> {
        let (s, t) = self.idle_since.zip(self.idle_timeout())?;
        s.checked_add(t)
    }

    /// Handle every complete message received (while fewer than
    /// `max_in_flight` asynchronous calls are in flight): answers go to
    /// the output, asynchronous handler calls to `spawn`.
    pub fn process<H: Handler + ?Sized>(&mut self, handler: &H, spawn: &mut dyn FnMut(AsyncCall)) {
        let mut completed = false;
        while self.in_flight < self.cfg.max_in_flight && !self.aborted && !self.peer_gone {
            let before = self.input.len();
            let frame = match next_frame(&mut self.decoder, &mut self.input, &mut self.last_version)
            {
                Ok(Some(f)) => {
                    let used = before - self.input.len();
                    if used > 0 {
                        self.last_len = used;
                    }
                    f
                }
                Ok(None) => break,
                Err(_) => {
                    self.message_error();
                    break;
                }
            };
            completed = true;
            self.frame(frame, handler, spawn);
        }
        // The next message's read timeout starts when its first byte is
        // waited for (a fragmented one's, at its first fragment).
        if completed && !self.decoder.in_progress() {
            self.started = None;
        }
    }

    /// An asynchronous handler call finished: encode its reply.
    pub fn finish_async(&mut self, ticket: AsyncTicket, reply: AsyncReply) {
        self.in_flight -= 1;
        self.idle_since = None;
        if !ticket.expects {
            return;
        }
        let opts = self.options(ticket.version);
        let out = &mut self.out;
        let Ok(p) = begin_reply(
            out,
            ticket.version,
            ticket.order,
            opts,
            ticket.request_id,
            ReplyStatus::NoException,
            &[],
        ) else {
            return;
        };
        if matches!(reply.outcome, Outcome::Reply | Outcome::UserException) {
            p.writer(out).write_bytes(&reply.body);
        }
        finish(&self.cfg, out, p, ticket.version, reply.outcome);
    }

    /// Now, when phases are timed.
    fn clock(&self) -> Option<Instant> {
        self.clock.map(|c| c())
    }

    /// Add the time since `t` to a phase total.
    fn time(&self, which: impl Fn(&ServerPhases) -> &AtomicU64, t: Option<Instant>) {
        if let (Some(p), Some(t), Some(c)) = (&self.cfg.phases, t, self.clock) {
            ServerPhases::add(which(p), t, c());
        }
    }

    fn options(&self, version: Version) -> Options {
        self.code_sets.options(version)
    }

    /// Malformed input: MessageError (in the last version seen), then the
    /// connection ends.
    fn message_error(&mut self) {
        encode_empty(
            &mut self.out,
            self.last_version,
            ByteOrder::NATIVE,
            MsgType::MessageError,
        );
        self.aborted = true;
    }

    fn frame<H: Handler + ?Sized>(
        &mut self,
        frame: Frame,
        handler: &H,
        spawn: &mut dyn FnMut(AsyncCall),
    ) {
        let version = frame.header.version;
        self.last_version = version;
        let t = self.clock();
        let opts = self.options(version);
        let msg = match self
            .head_memo
            .decode(&frame.header, frame.payload, frame.segments, opts)
        {
            Ok(m) => m,
            Err(_) => return self.message_error(),
        };
        self.time(|p| &p.decode_ns, t);
        match msg {
            Message::Request(req) => {
                // A context that names other sets than the first changes
                // nothing (an observer reports it; a server just reads on).
                if let Ok(Some(cs)) = req.header.contexts.code_sets() {
                    let _ = self.code_sets.offer(cs);
                }
                // BI_DIR_IIOP counts in GIOP 1.2 only (CORBA 3.0, 15.8);
                // a later context adds its listen points.
                if version.is_12() {
                    if let Ok(Some(b)) = req.header.contexts.bi_dir() {
                        let offered = self.bidir.get_or_insert(BiDirIiop {
                            listen_points: Vec::new(),
                        });
                        for lp in b.listen_points {
                            if !offered.listen_points.contains(&lp) {
                                offered.listen_points.push(lp);
                            }
                        }
                    }
                }
                self.request(req, handler, spawn);
            }
            // The answer to a callback of ours; any other Reply is the
            // peer's error.
            Message::Reply(r) if self.calling.contains_key(&r.header.request_id) => {
                if let Some(c) = self.calling.remove(&r.header.request_id) {
                    let answer = (c.then)(Ok(r));
                    self.in_flight += 1;
                    self.finish_async(c.ticket, answer);
                }
            }
            Message::LocateRequest(l) => {
                let order = self.cfg.reply_order.unwrap_or(frame.header.order);
                let status = match l.target.object_key() {
                    None if version.is_12() => LocateStatus::NeedsAddressingMode(0),
                    None => LocateStatus::UnknownObject,
                    Some(key) => match handler.locate(&key) {
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
                if encode_locate_reply(&mut self.out, version, order, &reply).is_err() {
                    self.message_error();
                }
            }
            // Nothing to cancel on the synchronous path; async replies to a
            // cancelled request are still sent (the client drops them).
            Message::CancelRequest { .. } => {}
            Message::CloseConnection => self.peer_gone = true,
            Message::MessageError => self.aborted = true,
            Message::Reply(_) | Message::LocateReply(_) => self.message_error(),
        }
    }

    fn request<H: Handler + ?Sized>(
        &mut self,
        req: Request,
        handler: &H,
        spawn: &mut dyn FnMut(AsyncCall),
    ) {
        let version = req.version;
        let order = self.cfg.reply_order.unwrap_or(req.body.order);
        let opts = self.options(version);
        let h = &req.header;
        let expects = h.response.expects_reply();
        self.summary.requests += 1;
        self.summary.oneways += u64::from(!expects);
        let start = self.out.len();
        let Some(key) = h.target.object_key() else {
            if expects {
                let outcome = if version.is_12() {
                    None
                } else {
                    Some(Outcome::System(SystemException::unknown_object()))
                };
                self.write_simple(version, order, h.request_id, outcome);
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
        // A oneway's handler writes into the output too (nothing, or
        // what is dropped after it): no reply header is begun for it.
        let t = self.clock();
        let p = if expects {
            match begin_reply(
                &mut self.out,
                version,
                order,
                opts,
                h.request_id,
                ReplyStatus::NoException,
                &[],
            ) {
                Ok(p) => Some(p),
                Err(_) => return,
            }
        } else {
            None
        };
        self.time(|p| &p.marshal_ns, t);
        let t = self.clock();
        let dispatch = {
            let mut reader = req.body.reader(opts);
            let mut w = match &p {
                Some(p) => p.writer(&mut self.out),
                None => Writer::with_origin(&mut self.out, order, start).options(opts),
            };
            handler.handle(&ctx, &mut reader, &mut w)
        };
        self.time(|p| &p.upcall_ns, t);
        match dispatch {
            Dispatch::Done(outcome) => match p {
                Some(p) => {
                    let t = self.clock();
                    finish(&self.cfg, &mut self.out, p, version, outcome);
                    self.time(|p| &p.marshal_ns, t);
                }
                None => self.out.truncate(start),
            },
            Dispatch::Async(future) => {
                self.out.truncate(start);
                self.in_flight += 1;
                spawn(AsyncCall {
                    ticket: AsyncTicket {
                        request_id: h.request_id,
                        version,
                        order,
                        expects,
                    },
                    future,
                });
            }
            Dispatch::CallBack(cb) => {
                self.out.truncate(start);
                let ticket = AsyncTicket {
                    request_id: h.request_id,
                    version,
                    order,
                    expects,
                };
                self.call_back(ticket, cb);
            }
        }
    }

    /// Send the callback `cb` over this connection if the client offered
    /// it for callbacks (see [`CallBack`]), else answer the request of
    /// `ticket` with what the handler says to that at once.
    fn call_back(&mut self, ticket: AsyncTicket, cb: CallBack) {
        let profile = cb.target.profiles.iter().find_map(|p| p.iiop()?.ok());
        let why = match (&self.bidir, profile) {
            _ if !ticket.version.is_12() => Some(NoCallBack::NotOffered),
            (None, _) => Some(NoCallBack::NotOffered),
            (Some(_), None) => Some(NoCallBack::BadReference),
            (Some(b), Some(p)) if !b.lists(&p.host, p.port) => Some(NoCallBack::NotListed {
                host: p.host,
                port: p.port,
            }),
            _ if self.calling.len() >= self.cfg.max_in_flight => Some(NoCallBack::Busy),
            (Some(_), Some(p)) => {
                let id = self.next_call_id;
                self.next_call_id = self.next_call_id.wrapping_add(1);
                let target = TargetAddress::Key(p.object_key);
                let head = RequestHead {
                    request_id: id,
                    response: ResponseMode::Twoway,
                    target: &target,
                    operation: &cb.operation,
                    contexts: &[],
                };
                let opts = self.options(Version::V1_2);
                let args = cb.args;
                match encode_request(&mut self.out, Version::V1_2, cb.order, opts, &head, |w| {
                    w.write_bytes(&args);
                    Ok(())
                }) {
                    Ok(_) => {
                        self.calling.insert(
                            id,
                            Calling {
                                ticket,
                                then: cb.then,
                            },
                        );
                        return;
                    }
                    Err(_) => Some(NoCallBack::BadReference),
                }
            }
        };
        if let Some(why) = why {
            let answer = (cb.then)(Err(why));
            self.in_flight += 1;
            self.finish_async(ticket, answer);
        }
    }

    /// A reply with no handler body: `None` = NEEDS_ADDRESSING_MODE(KeyAddr).
    fn write_simple(
        &mut self,
        version: Version,
        order: ByteOrder,
        request_id: u32,
        outcome: Option<Outcome>,
    ) {
        let opts = self.options(version);
        let out = &mut self.out;
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
                    finish(&self.cfg, out, p, version, o);
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
}

/// Set the status for `outcome`, write its body if it has one of its own,
/// finish, fragment if configured.
fn finish(
    cfg: &ServerConnConfig,
    out: &mut BytesMut,
    p: Pending,
    version: Version,
    outcome: Outcome,
) {
    finish_reply(cfg.fragment_size, out, p, version, outcome)
}

/// [`finish`] with the fragment size alone (a client answering a
/// callback has no server configuration).
pub(crate) fn finish_reply(
    fragment_size: Option<usize>,
    out: &mut BytesMut,
    p: Pending,
    version: Version,
    outcome: Outcome,
) {
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
    if let Some(fs) = fragment_size {
        if version.is_12() && out.len() - p.start() > fs {
            let msg = out.split_off(p.start());
            if fragment_message(&msg, fs, out).is_err() {
                out.truncate(p.start());
            }
        }
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
        let h = match Header::parse(&inbuf[..HEADER_LEN]) {
            Ok(h) => {
                *version = h.version;
                if h.size as usize > decoder.config().max_message_size {
                    return decoder.decode(inbuf);
                }
                h
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
        if inbuf.len() < h.total_len() {
            return Ok(None);
        }
        // The first piece of a fragmented message whose fragments follow
        // it: joined where they lie, or waited for.
        if let Some(f) = decoder.join_in_buffer(&h, inbuf) {
            return Ok(f);
        }
        let one = inbuf.split_to(h.total_len());
        if let Some(f) = decoder.decode_whole(h, one)? {
            return Ok(Some(f));
        }
        // A fragment was absorbed into a partial message: go on.
    }
}

#[cfg(test)]
mod frame_tests {
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
}

#[cfg(test)]
mod tests;
