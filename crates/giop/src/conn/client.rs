//! The client side of a GIOP connection, pure: request ids, the CodeSets
//! context sent once, encoding into the output queue (spliced, fragmented),
//! matching replies to waiting requests, timeouts, what a failure means
//! for the requests in flight and what to tell the peer, and which forward
//! or retry a call follows.
//!
//! The parts, each a small state machine a driver holds where its
//! concurrency wants it:
//! - [`ClientSetup`]: what a connection fixes when it opens (version, byte
//!   order, negotiated code sets, fragmenting, timeouts);
//! - [`SendQueue`]: the bytes to write and whether the CodeSets context
//!   went out;
//! - [`Requests`]: the request ids (their one source), who waits for
//!   which, until when, and whether the connection is dead;
//! - [`Inbound`]: received bytes to replies (framing, reassembly, decoding,
//!   what a server may send);
//! - [`Follow`]: LOCATION_FORWARD / OBJECT_FORWARD hops, the one retry
//!   after CloseConnection, NEEDS_ADDRESSING_MODE.
//!
//! [`ClientConn`] puts them together for a driver that owns a connection
//! alone (the blocking client, tests). The tokio driver keeps the parts
//! under separate locks, so that a call takes no more locks than before,
//! and calls them in the same order ([`Requests`] says which):
//! [`Requests::begin`], [`SendQueue::queue`] (or [`Requests::abandon`]),
//! and for what arrives [`Inbound::next_waited`].
//!
//! Order of use of a [`ClientConn`], quinn-style: `send_*` a request (it
//! is queued in [`outbox`](ClientConn::outbox); write it out, the first
//! write at most [`first_write`](ClientConn::first_write) bytes); read
//! bytes into [`read_buf`](ClientConn::read_buf) and take completed
//! requests from [`poll`](ClientConn::poll); at the
//! [`next_deadline`](ClientConn::next_deadline) call
//! [`on_timeout`](ClientConn::on_timeout) and write what it queued
//! (CancelRequest), or hang up when it says a request not written whole
//! in its time lost the stream ([`SendQueue::check_writes`]); on any
//! failure [`fail`](ClientConn::fail) and write what it queued
//! (MessageError, CloseConnection) before hanging up.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, CdrError, Options, Splices, Writer};

use super::deadline::Timer;
use super::endpoint::TlsWanted;
pub use super::error::ClientError;
use super::out::{head_first_for, Outbox};
use super::server::{finish_reply, Dispatch, Handler, LocateOutcome, Outcome, RequestContext};
use crate::codec::{fragment_message, CodecConfig, Decoder};
use crate::context::{
    default_options, negotiate, BiDirIiop, CodeSetComponentInfo, ServiceContext, SC_CODE_SETS,
};
use crate::error::GiopError;
use crate::exception::{Completion, SystemException, MINOR_NO_IMPLEMENT_ASYNC_CALLBACK};
use crate::header::{MsgType, Version, HEADER_LEN};
use crate::ior::Ior;
use crate::memo::RequestHeadCache;
use crate::message::{
    begin_reply, begin_request, encode_cancel_request, encode_empty, encode_locate_reply,
    encode_locate_request, Body, LocateReply, LocateRequest, LocateStatus, Message, Reply,
    ReplyStatus, Request, RequestHead, ResponseMode, TargetAddress,
};

/// What the client state machine reads of a client's settings: the
/// protocol's choices, none of the drivers' (sockets, TLS, pools and
/// waiting live with the drivers, whose configuration builds this).
#[derive(Debug, Clone, Copy)]
pub struct ConnConfig {
    /// GIOP version to speak; `None` uses the IOR profile's version (which
    /// is 1.0 for a corbaloc without `1.2@`, as every ORB does).
    pub version: Option<Version>,
    /// Byte order of our messages.
    pub order: ByteOrder,
    /// Default per-request timeout (`None`: wait forever).
    pub request_timeout: Option<Duration>,
    /// Most LOCATION_FORWARD / OBJECT_FORWARD hops followed per call.
    pub max_forwards: u32,
    /// Limits on incoming messages.
    pub codec: CodecConfig,
    /// Fragment outgoing GIOP 1.2 messages longer than this.
    pub fragment_size: Option<usize>,
    /// Write requests at least this long in two parts, headers first
    /// ([`head_first_for`]; oneways only from 96 KiB on); `None` writes
    /// each message with one call.
    pub head_first: Option<usize>,
    /// Send shared byte runs at least this long by reference (vectored
    /// writes) instead of copying them into the output buffer; `None`
    /// always copies.
    pub splice_cutoff: Option<usize>,
    /// Oneways stay queued while fewer than this many bytes are (CORBA
    /// Messaging's `SYNC_NONE` with `BUFFER_MESSAGE_BYTES`); `None` writes
    /// each oneway when it is made.
    pub oneway_buffer: Option<usize>,
    /// Let the kernel join oneways: Nagle on while only oneways go out,
    /// off again before a request that expects an answer.
    pub coalesce_oneways: bool,
    /// Where TLS is used ([`endpoint_for`](super::endpoint::endpoint_for)
    /// decides from it).
    pub tls: TlsWanted,
}

/// Default [`ConnConfig::splice_cutoff`]: below this, copying into the
/// output buffer costs less than an extra iovec and a reference count.
pub const DEFAULT_SPLICE_CUTOFF: usize = 16 * 1024;

impl Default for ConnConfig {
    fn default() -> Self {
        ConnConfig {
            version: None,
            order: ByteOrder::NATIVE,
            request_timeout: None,
            max_forwards: 8,
            codec: CodecConfig::default(),
            fragment_size: None,
            head_first: Some(DEFAULT_SPLICE_CUTOFF),
            splice_cutoff: Some(DEFAULT_SPLICE_CUTOFF),
            oneway_buffer: None,
            coalesce_oneways: false,
            tls: TlsWanted::Off,
        }
    }
}

/// What a server sent in answer to a request id.
#[derive(Debug)]
pub enum Incoming {
    Reply(Reply),
    Locate(LocateReply),
}

impl Incoming {
    /// What a Request got back: its reply, or a protocol error for a
    /// LocateReply in its place.
    pub fn into_reply(self, addr: &str) -> Result<Reply, ClientError> {
        match self {
            Incoming::Reply(r) => Ok(r),
            Incoming::Locate(_) => Err(unexpected(addr, "LocateReply to a Request")),
        }
    }

    /// What a LocateRequest got back: its LocateReply, or a protocol error.
    pub fn into_locate(self, addr: &str) -> Result<LocateReply, ClientError> {
        match self {
            Incoming::Locate(l) => Ok(l),
            Incoming::Reply(_) => Err(unexpected(addr, "Reply to a LocateRequest")),
        }
    }
}

/// A Request's answer: its reply, `None` for a oneway.
pub fn reply_of(inc: Option<Incoming>, addr: &str) -> Result<Option<Reply>, ClientError> {
    inc.map(|i| i.into_reply(addr)).transpose()
}

/// A LocateRequest's answer (one is always expected).
pub fn locate_of(inc: Option<Incoming>, addr: &str) -> Result<LocateReply, ClientError> {
    match inc {
        Some(i) => i.into_locate(addr),
        None => Err(unexpected(addr, "no reply to a LocateRequest")),
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

/// What arrives on a client connection: an answer to one of our
/// requests, or (on a bidirectional connection only) a Request of the
/// server's to an object of ours.
#[derive(Debug)]
pub enum Arrival {
    /// The answer to request id `.0`.
    Answer(u32, Incoming),
    /// A GIOP 1.2 Request the server sent over our connection, which we
    /// offered for callbacks ([`ClientSetup::bidir`]): answer it with
    /// [`answer_request`].
    Request(Request),
    /// A GIOP 1.2 LocateRequest for an object of ours on such a
    /// connection (omniORB locates a callback object before its first
    /// call): answer it with [`answer_locate`].
    Locate(LocateRequest),
}

/// A message from the server as the answer to a request id, the server's
/// own Request on a connection we offered for callbacks (`bidir`, GIOP
/// 1.2 only: CORBA 3.0, 15.8), or the error it means: CloseConnection
/// (retryable: nothing pending was processed), MessageError, or a message
/// type a server must not send (a Request on a connection not offered
/// for callbacks is one).
fn incoming(msg: Message, addr: &str, bidir: bool) -> Result<Arrival, ClientError> {
    match msg {
        Message::Reply(r) => Ok(Arrival::Answer(r.header.request_id, Incoming::Reply(r))),
        Message::LocateReply(l) => Ok(Arrival::Answer(l.request_id, Incoming::Locate(l))),
        Message::Request(r) if bidir && r.version.is_12() => Ok(Arrival::Request(r)),
        Message::LocateRequest(l) if bidir => Ok(Arrival::Locate(l)),
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

/// What one call writes, as far as its connection cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sending {
    /// A Request, built now or prepared: it carries the CodeSets context
    /// while that is due.
    Request(ResponseMode),
    /// A LocateRequest: always answered, and without service contexts.
    Locate,
}

impl Sending {
    /// Whether the peer answers it.
    pub fn expects_reply(self) -> bool {
        match self {
            Sending::Request(r) => r.expects_reply(),
            Sending::Locate => true,
        }
    }
}

/// One message a caller sends, before it has a request id.
pub enum Outgoing<'a, F> {
    /// A Request whose body `body` writes, with the caller's contexts.
    Request {
        target: &'a TargetAddress,
        operation: &'a str,
        response: ResponseMode,
        contexts: &'a [ServiceContext],
        body: F,
    },
    /// A request built beforehand.
    Prepared(&'a Prepared),
    /// A LocateRequest.
    Locate(&'a TargetAddress),
}

/// The body type of [`Outgoing`] messages that have none of their own.
pub type NoBody = fn(&mut Writer<'_>) -> Result<(), CdrError>;

impl<'a> Outgoing<'a, NoBody> {
    /// A prepared request.
    pub fn prepared(p: &'a Prepared) -> Self {
        Outgoing::Prepared(p)
    }

    /// A LocateRequest for `target`.
    pub fn locate(target: &'a TargetAddress) -> Self {
        Outgoing::Locate(target)
    }
}

impl<F> Outgoing<'_, F> {
    /// What it is, as far as the connection cares.
    pub fn sending(&self) -> Sending {
        match self {
            Outgoing::Request { response, .. } => Sending::Request(*response),
            Outgoing::Prepared(p) => Sending::Request(p.response()),
            Outgoing::Locate(_) => Sending::Locate,
        }
    }
}

impl<F> std::fmt::Debug for Outgoing<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outgoing::Request {
                operation,
                response,
                ..
            } => f
                .debug_struct("Request")
                .field("operation", operation)
                .field("response", response)
                .finish_non_exhaustive(),
            Outgoing::Prepared(p) => f.debug_tuple("Prepared").field(p).finish(),
            Outgoing::Locate(t) => f.debug_tuple("Locate").field(t).finish(),
        }
    }
}

/// What a connection's requests are encoded with.
#[derive(Debug, Clone, Copy)]
pub struct Wire {
    pub version: Version,
    pub order: ByteOrder,
    /// CDR options: the negotiated code sets.
    pub opts: Options,
    /// Whether bodies splice shared runs ([`ConnConfig::splice_cutoff`]).
    pub splice: bool,
}

impl Wire {
    /// Append a request (`head`, then the body `body` writes) to the
    /// queued stream.
    pub fn encode_request<F>(
        &self,
        out: &mut BytesMut,
        splices: &mut Splices,
        heads: &mut RequestHeadCache,
        head: &RequestHead<'_>,
        body: F,
    ) -> Result<(), ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let p = heads
            .begin_request(out, self.version, self.order, self.opts, head)
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

/// What a client connection fixes when it opens.
#[derive(Debug, Clone)]
pub struct ClientSetup {
    /// `host:port` of the peer, named in errors.
    pub addr: String,
    pub wire: Wire,
    /// The CodeSets context the first Request carries (with the target's
    /// TAG_CODE_SETS and GIOP ≥ 1.1).
    pub code_sets: Option<ServiceContext>,
    /// Fragment GIOP 1.2 messages longer than this.
    pub fragment_size: Option<usize>,
    /// Write messages at least this long headers first.
    pub head_first: Option<usize>,
    /// Timeout of requests sent without one of their own.
    pub request_timeout: Option<Duration>,
    /// Oneways wait in the queue while it holds fewer bytes
    /// ([`ConnConfig::oneway_buffer`]).
    pub oneway_buffer: Option<usize>,
    /// Nagle on while only oneways go out ([`ConnConfig::coalesce_oneways`]).
    pub coalesce_oneways: bool,
    /// Whether we offered this connection for callbacks (our requests
    /// carry a BI_DIR_IIOP context, GIOP 1.2): only then may the server
    /// send Requests over it ([`Inbound::arrival`]). Off after
    /// [`negotiate`](Self::negotiate); the caller that sends the context
    /// turns it on, or [`offer_callbacks`](Self::offer_callbacks) does.
    pub bidir: bool,
    /// The BI_DIR_IIOP context every Request of ours carries, when the
    /// connection was offered for callbacks with
    /// [`offer_callbacks`](Self::offer_callbacks) (the core sends it; a
    /// caller that offers with [`ClientConn::offer_bidir`] sends its own).
    pub bidir_context: Option<ServiceContext>,
    /// The listen point that context names: the address the references
    /// of the objects we serve on this connection carry
    /// ([`callback_reference`](Self::callback_reference)).
    pub listen_point: Option<(String, u16)>,
}

impl ClientSetup {
    /// The setup of a new connection to `addr` speaking `version`: with
    /// the target's TAG_CODE_SETS (`code_sets`) and GIOP ≥ 1.1, the
    /// negotiated options and the CodeSets context the first request
    /// carries; otherwise the version's defaults and no context.
    pub fn negotiate(
        addr: String,
        version: Version,
        cfg: &ConnConfig,
        code_sets: Option<&CodeSetComponentInfo>,
    ) -> ClientSetup {
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
        ClientSetup {
            addr,
            wire: Wire {
                version,
                order: cfg.order,
                opts,
                splice: cfg.splice_cutoff.is_some(),
            },
            code_sets: context,
            fragment_size: cfg.fragment_size,
            head_first: cfg.head_first,
            request_timeout: cfg.request_timeout,
            oneway_buffer: cfg.oneway_buffer.filter(|&n| n > 0),
            coalesce_oneways: cfg.coalesce_oneways,
            bidir: false,
            bidir_context: None,
            listen_point: None,
        }
    }

    /// Offer this connection for callbacks (bidirectional GIOP, CORBA
    /// 3.0, 15.8): every Request of ours carries a BI_DIR_IIOP context
    /// naming `host:port` as our listen point, and the server's Requests
    /// and LocateRequests over the connection are ours to answer
    /// ([`Inbound::arrival`], [`answer_request`]). The listen point need
    /// not be a listening socket: a server that calls back over the
    /// offering connection only matches a callback reference's address
    /// ([`callback_reference`](Self::callback_reference)) with it; the
    /// drivers name the connection's own local address, so a server that
    /// would rather connect there is refused instead of reaching
    /// something else. GIOP 1.2 only (the context means nothing before).
    pub fn offer_callbacks(&mut self, host: &str, port: u16) -> Result<(), ClientError> {
        if !self.wire.version.is_12() {
            return Err(ClientError::Encode(GiopError::NotInVersion {
                what: "bidirectional GIOP (a BI_DIR_IIOP offer)",
                minor: self.wire.version.minor,
            }));
        }
        let offer = BiDirIiop {
            listen_points: vec![(host.to_string(), port)],
        };
        self.bidir_context = Some(
            offer
                .context(self.wire.order)
                .map_err(ClientError::Encode)?,
        );
        self.listen_point = Some((host.to_string(), port));
        self.bidir = true;
        Ok(())
    }

    /// A reference to an object we serve on this connection, with key
    /// `key` and repository id `type_id`: one IIOP profile at the listen
    /// point we offered ([`offer_callbacks`](Self::offer_callbacks)).
    /// `None` when the connection was not offered so.
    pub fn callback_reference(&self, type_id: &str, key: &[u8]) -> Option<Ior> {
        let (host, port) = self.listen_point.as_ref()?;
        Some(Ior::iiop(type_id, host, *port, Bytes::copy_from_slice(key)))
    }

    /// The contexts the core adds to a Request of ours: the CodeSets
    /// context while it is `due`, and the BI_DIR_IIOP offer on every
    /// Request of a connection offered for callbacks (a server may read
    /// it on any of them; ours, omniORB and JacORB mark the connection on
    /// the first).
    fn our_contexts<'a>(
        &'a self,
        contexts: &'a [ServiceContext],
        due: Option<&'a ServiceContext>,
    ) -> Cow<'a, [ServiceContext]> {
        match &self.bidir_context {
            None => with_code_sets(contexts, due),
            Some(b) => Cow::Owned(
                contexts
                    .iter()
                    .chain(due)
                    .chain(std::iter::once(b))
                    .cloned()
                    .collect(),
            ),
        }
    }

    /// The size from which a message of this kind is written headers
    /// first.
    pub fn head_first(&self, what: Sending) -> Option<usize> {
        head_first_for(self.head_first, what.expects_reply())
    }

    /// What to tell the peer when the connection ends with `why`: GIOP
    /// answers a malformed message with MessageError, and lets a GIOP 1.2
    /// client that closes say so with CloseConnection. Nothing otherwise
    /// (the peer is gone, or it was the one to give up).
    pub fn farewell(&self, why: &ClientError) -> Option<MsgType> {
        match why {
            ClientError::Protocol { .. } | ClientError::ReplyVersion { .. } => {
                Some(MsgType::MessageError)
            }
            ClientError::LocallyClosed if self.wire.version.is_12() => {
                Some(MsgType::CloseConnection)
            }
            _ => None,
        }
    }

    /// The error of a connection the peer closed without a word.
    pub fn closed(&self) -> ClientError {
        ClientError::Closed {
            addr: self.addr.clone(),
            retryable: false,
        }
    }

    /// An I/O failure on this connection.
    pub fn io(&self, e: &std::io::Error) -> ClientError {
        ClientError::Io {
            addr: self.addr.clone(),
            message: e.to_string(),
        }
    }

    /// Whether a message of type `t` in `version` may come as an answer
    /// on this connection: a Reply or LocateReply only in the version of
    /// the request it answers, which is the connection's (every request
    /// of a connection is in its version: [`Prepared`] requests are
    /// checked for it), else [`ClientError::ReplyVersion`]. MessageError
    /// and CloseConnection come in any version (a server answers a
    /// version it does not speak with MessageError in its own).
    pub fn answer_version(&self, t: MsgType, version: Version) -> Result<(), ClientError> {
        if version == self.wire.version || t.answers().is_none() {
            return Ok(());
        }
        Err(ClientError::ReplyVersion {
            addr: self.addr.clone(),
            answer: t,
            reply: version,
            request: self.wire.version,
        })
    }

    /// A malformed message from the peer.
    pub fn protocol(&self, error: GiopError) -> ClientError {
        ClientError::Protocol {
            addr: self.addr.clone(),
            error,
        }
    }
}

/// The caller's contexts, plus the CodeSets context while it is still due.
fn with_code_sets<'a>(
    contexts: &'a [ServiceContext],
    code_sets: Option<&'a ServiceContext>,
) -> Cow<'a, [ServiceContext]> {
    match code_sets {
        Some(cs) if contexts.is_empty() => Cow::Borrowed(std::slice::from_ref(cs)),
        Some(cs) => Cow::Owned([contexts, std::slice::from_ref(cs)].concat()),
        None => Cow::Borrowed(contexts),
    }
}

/// Split the message queued from `start` into GIOP 1.2 fragments when it
/// is longer than `fragment_size` (spliced runs are copied in first:
/// fragments need contiguous bytes).
fn fragment_from(
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

/// Nagle's algorithm on a connection that coalesces oneways
/// ([`ConnConfig::coalesce_oneways`]): each driver asks it before a
/// write, and it turns TCP_NODELAY off or on through the driver's socket
/// only when that must change (a stream of oneways costs no system call).
#[derive(Debug, Default)]
pub struct Coalescing {
    /// Oneways shorter than this many bytes (the connection's segment
    /// size) go with Nagle on; 0: the connection does not coalesce.
    below: usize,
    /// TCP_NODELAY is off now.
    nagle: bool,
}

impl Coalescing {
    /// For a connection set up as `s`; `segment` (its TCP_MAXSEG) is asked
    /// only when `s` coalesces (no system call otherwise), 1460 if unknown.
    pub fn new(s: &ClientSetup, segment: impl FnOnce() -> Option<usize>) -> Coalescing {
        Coalescing {
            below: match s.coalesce_oneways {
                true => segment().unwrap_or(1460),
                false => 0,
            },
            nagle: false,
        }
    }

    /// Before writing `len` queued bytes, of which `only_oneways` says
    /// whether nothing among them must go at once
    /// ([`SendQueue::only_oneways`]): Nagle on while they are oneways
    /// shorter than a segment together (more gains nothing, and the tail
    /// would wait for an ACK), off, which pushes what it held, for
    /// everything else. `set_nodelay` sets the socket's TCP_NODELAY; when
    /// it fails the state stays as it was (calls still go, only not
    /// joined, or behind an ACK).
    pub fn before_write(
        &mut self,
        only_oneways: bool,
        len: usize,
        set_nodelay: impl FnOnce(bool) -> std::io::Result<()>,
    ) {
        let nagle = only_oneways && len < self.below;
        if nagle != self.nagle && set_nodelay(!nagle).is_ok() {
            self.nagle = nagle;
        }
    }
}

/// The bytes a client connection has to write, and whether the CodeSets
/// context has gone out (it goes on the first Request in the byte stream,
/// so it is decided where the bytes are queued).
#[derive(Debug)]
pub struct SendQueue {
    out: Outbox,
    code_sets_sent: bool,
    /// Everything queued is buffered oneways that may wait
    /// ([`holds`](Self::holds)).
    holding: bool,
    /// The last message queued went into an empty queue (its head may go
    /// alone: [`first_write`](Self::first_write)).
    alone: bool,
    /// The last Request headers encoded, for the next ones like them.
    heads: RequestHeadCache,
    /// Something queued since the queue was last empty is answered
    /// (a twoway, a LocateRequest), or cancels or ends (CancelRequest, the
    /// goodbye): no Nagle wait behind it ([`only_oneways`](Self::only_oneways)).
    urgent: bool,
    /// Bytes queued since the connection opened: where in the stream the
    /// next message starts.
    queued: u64,
    /// Bytes a writer took ([`take`](Self::take)) and has not yet said it
    /// wrote ([`wrote`](Self::wrote)).
    in_flight: u64,
    /// Messages that must be written whole in time ([`Ticket::write_by`]):
    /// where each ends in the stream, in stream order, with its timer.
    /// Those written are dropped as the stream moves on.
    deadlines: VecDeque<(u64, Timer)>,
}

impl SendQueue {
    /// An empty queue (splicing as `cfg` says).
    pub fn new(cfg: &ConnConfig) -> SendQueue {
        SendQueue {
            out: Outbox::new(16 * 1024, cfg.splice_cutoff),
            code_sets_sent: false,
            holding: false,
            alone: true,
            urgent: false,
            heads: RequestHeadCache::default(),
            queued: 0,
            in_flight: 0,
            deadlines: VecDeque::new(),
        }
    }

    /// Everything queued, for a writer that writes it outside the queue's
    /// lock; it reports progress with [`wrote`](Self::wrote).
    pub fn take(&mut self) -> Outbox {
        let batch = self.out.take();
        self.in_flight += batch.len() as u64;
        batch
    }

    /// A writer wrote `n` more bytes of what it took.
    pub fn wrote(&mut self, n: usize) {
        self.in_flight = self.in_flight.saturating_sub(n as u64);
    }

    /// Bytes of the stream written so far: queued, less what waits in the
    /// queue and what a writer holds.
    fn written(&self) -> u64 {
        self.queued
            .saturating_sub(self.out.len() as u64)
            .saturating_sub(self.in_flight)
    }

    /// Everything queued so far must be written by `timer` (a driver's
    /// bound on flushing before it closes).
    pub fn write_by(&mut self, timer: Timer) {
        self.deadlines.push_back((self.queued, timer));
    }

    /// The write-deadline rule, at `now`. A request with a timeout must be
    /// written whole within it (the caller waits for no longer). One that
    /// was is cancelled when its answer is late ([`expired`](Self::expired));
    /// one that was not cannot be: GIOP has no way to take back the part
    /// of a message already sent, and a CancelRequest cannot go inside
    /// one; and the part not sent waits for a server that stopped reading.
    /// The stream is lost: the error the connection fails with.
    pub fn check_writes(&mut self, s: &ClientSetup, now: Instant) -> Result<(), ClientError> {
        let written = self.written();
        while self
            .deadlines
            .front()
            .is_some_and(|&(end, _)| end <= written)
        {
            self.deadlines.pop_front();
        }
        match self.deadlines.iter().any(|(_, t)| t.expired(now)) {
            true => Err(ClientError::Io {
                addr: s.addr.clone(),
                message: "the server stopped reading before the request was written".into(),
            }),
            false => Ok(()),
        }
    }

    /// Arm the write timers started without a time: the wait began no
    /// later than `began_by`.
    pub fn arm(&mut self, began_by: Instant) {
        for (_, t) in &mut self.deadlines {
            t.arm(began_by);
        }
    }

    /// The earliest armed write deadline of what is not written yet.
    pub fn next_deadline(&self) -> Option<Instant> {
        let written = self.written();
        self.deadlines
            .iter()
            .filter(|&&(end, _)| end > written)
            .filter_map(|(_, t)| t.deadline())
            .min()
    }

    /// The bytes to write.
    pub fn outbox(&mut self) -> &mut Outbox {
        &mut self.out
    }

    /// The bytes to write (read-only).
    pub fn pending(&self) -> &Outbox {
        &self.out
    }

    /// Whether what is queued may wait unwritten: only buffered oneways,
    /// fewer bytes of them than the buffer ([`ConnConfig::oneway_buffer`]).
    /// Anything else queued behind them (a request that expects an
    /// answer, a CancelRequest, the goodbye, or the oneway that fills the
    /// buffer) makes all of it due.
    pub fn holds(&self) -> bool {
        self.holding && !self.out.is_empty()
    }

    /// Whether what is queued may wait behind Nagle ([`Coalescing`]):
    /// oneways only, from one call or from many; not when anything among
    /// them is answered, cancels or ends (a twoway, a LocateRequest, a
    /// CancelRequest, the goodbye), nor when nothing is queued.
    pub fn only_oneways(&self) -> bool {
        !self.urgent && !self.out.is_empty()
    }

    /// [`Coalescing::before_write`] for what is queued now: the one place
    /// every writer (the blocking driver, the runtime's callers, its
    /// writer task and goodbye) takes Nagle's inputs from.
    pub fn before_write(
        &self,
        c: &mut Coalescing,
        set_nodelay: impl FnOnce(bool) -> std::io::Result<()>,
    ) {
        c.before_write(self.only_oneways(), self.out.len(), set_nodelay);
    }

    /// How many bytes the first write of the queue may take, the last
    /// message queued being a `what`: its head alone when it is large
    /// ([`head_first_for`]) and nothing was queued before it; everything
    /// when buffered oneways go out with it.
    pub fn first_write(&self, s: &ClientSetup, what: Sending) -> usize {
        match self.alone {
            true => self.out.first_write(s.head_first(what)),
            false => usize::MAX,
        }
    }

    /// Queue `out`, begun as `t` ([`Requests::begin`]: its request id);
    /// nothing is queued on an error (then [`Requests::abandon`] it).
    pub fn queue<F>(
        &mut self,
        s: &ClientSetup,
        t: &Ticket,
        out: Outgoing<'_, F>,
    ) -> Result<(), ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let id = t.id;
        match out {
            Outgoing::Request {
                target,
                operation,
                response,
                contexts,
                body,
            } => self.request(s, id, target, operation, response, contexts, body),
            Outgoing::Prepared(p) => self.prepared(s, p, id),
            Outgoing::Locate(target) => self.locate(s, id, target),
        }?;
        if let Some(timer) = t.write_by {
            // What is written needs no deadline any more: when this
            // message went into an empty queue that no writer holds bytes
            // of, that is everything before it (the fast path, one call at
            // a time); else what the stream has passed.
            if self.alone && self.in_flight == 0 {
                self.deadlines.clear();
            } else {
                let written = self.written();
                while self
                    .deadlines
                    .front()
                    .is_some_and(|&(end, _)| end <= written)
                {
                    self.deadlines.pop_front();
                }
            }
            self.write_by(timer);
        }
        Ok(())
    }

    /// Queue a Request with request id `id` and the body `body` writes;
    /// it carries the caller's `contexts` and, while due, the CodeSets
    /// context. Nothing is queued on an error.
    #[allow(clippy::too_many_arguments)]
    pub fn request<F>(
        &mut self,
        s: &ClientSetup,
        id: u32,
        target: &TargetAddress,
        operation: &str,
        response: ResponseMode,
        contexts: &[ServiceContext],
        body: F,
    ) -> Result<(), ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        self.push(s, Sending::Request(response), |out, splices, due, heads| {
            let contexts = s.our_contexts(contexts, due);
            let head = RequestHead {
                request_id: id,
                response,
                target,
                operation,
                contexts: &contexts,
            };
            s.wire.encode_request(out, splices, heads, &head, body)
        })
    }

    /// Queue a [`Prepared`] request with request id `id`.
    pub fn prepared(&mut self, s: &ClientSetup, p: &Prepared, id: u32) -> Result<(), ClientError> {
        p.check_for(s.wire.version, s.wire.order)?;
        self.push(s, Sending::Request(p.response), |out, splices, _, _| {
            p.append(out, splices, id);
            Ok(())
        })
    }

    /// Queue a LocateRequest with request id `id`.
    pub fn locate(
        &mut self,
        s: &ClientSetup,
        id: u32,
        target: &TargetAddress,
    ) -> Result<(), ClientError> {
        self.push(s, Sending::Locate, |out, _, _, _| {
            encode_locate_request(out, s.wire.version, s.wire.order, id, target)
                .map(|_| ())
                .map_err(ClientError::Encode)
        })
    }

    /// Queue our answer to the server's Request `req` on a connection
    /// offered for callbacks ([`answer_request`]: `servant` writes it),
    /// due at once like anything answered.
    pub fn answer<H: Handler + ?Sized>(
        &mut self,
        s: &ClientSetup,
        req: &Request,
        servant: &H,
    ) -> Result<(), ClientError> {
        self.answered(|buf| answer_request(buf, s, req, servant))
    }

    /// Queue our LocateReply to the server's LocateRequest `l` on a
    /// connection offered for callbacks ([`answer_locate`]).
    pub fn answer_locate<H: Handler + ?Sized>(
        &mut self,
        s: &ClientSetup,
        l: &LocateRequest,
        servant: &H,
    ) -> Result<(), ClientError> {
        self.answered(|buf| answer_locate(buf, s, l, servant))
    }

    /// Queue what `encode` appends as an answer of ours (counted in the
    /// stream, due at once); nothing stays queued on an error.
    fn answered(
        &mut self,
        encode: impl FnOnce(&mut BytesMut) -> Result<(), ClientError>,
    ) -> Result<(), ClientError> {
        let before = self.out.len();
        let (buf, _) = self.out.parts();
        let start = buf.len();
        if let Err(e) = encode(buf) {
            self.out.truncate(start);
            return Err(e);
        }
        self.holding = false;
        self.urgent = true;
        self.queued += (self.out.len() - before) as u64;
        Ok(())
    }

    /// Requests timed out ([`Requests::expire`]): tell the server with
    /// CancelRequest (their late replies are dropped on arrival).
    pub fn expired<W>(&mut self, s: &ClientSetup, expired: &[Expired<W>]) {
        self.holding = false;
        self.urgent |= !expired.is_empty();
        let before = self.out.len();
        let (buf, _) = self.out.parts();
        for e in expired {
            let _ = encode_cancel_request(buf, s.wire.version, s.wire.order, e.request_id);
        }
        self.queued += (self.out.len() - before) as u64;
    }

    /// Queue what the peer is told when the connection ends with `why`
    /// ([`ClientSetup::farewell`]); whether anything was queued.
    pub fn farewell(&mut self, s: &ClientSetup, why: &ClientError) -> bool {
        let Some(t) = s.farewell(why) else {
            return false;
        };
        self.holding = false;
        self.urgent = true;
        let before = self.out.len();
        let (buf, _) = self.out.parts();
        encode_empty(buf, s.wire.version, s.wire.order, t);
        self.queued += (self.out.len() - before) as u64;
        true
    }

    /// Encode one message at the end of the queue, then fragment it as
    /// configured; on an error nothing stays queued. `encode` gets the
    /// CodeSets context when this message must carry it, and the queue's
    /// request headers kept for the next like them.
    fn push(
        &mut self,
        s: &ClientSetup,
        what: Sending,
        encode: impl FnOnce(
            &mut BytesMut,
            &mut Splices,
            Option<&ServiceContext>,
            &mut RequestHeadCache,
        ) -> Result<(), ClientError>,
    ) -> Result<(), ClientError> {
        let carries = matches!(what, Sending::Request(_)) && !self.code_sets_sent;
        let due = s.code_sets.as_ref().filter(|_| carries);
        let alone = self.out.is_empty();
        let before = self.out.len();
        let (buf, splices) = self.out.parts();
        let start = buf.len();
        let r = encode(buf, splices, due, &mut self.heads)
            .and_then(|()| fragment_from(s.wire.version, s.fragment_size, buf, splices, start));
        match r {
            Ok(()) => {
                if carries && s.code_sets.is_some() {
                    self.code_sets_sent = true;
                }
                self.alone = alone;
                self.urgent = what.expects_reply() || (self.urgent && !alone);
                self.holding = !what.expects_reply()
                    && (alone || self.holding)
                    && s.oneway_buffer.is_some_and(|b| self.out.len() < b);
                self.queued += (self.out.len() - before) as u64;
                Ok(())
            }
            Err(e) => {
                self.out.truncate(start);
                Err(e)
            }
        }
    }
}

/// Request ids are handed out in sequence: a multiplicative hash spreads
/// them well at a fraction of SipHash's cost (the map is touched twice per
/// call).
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

/// A request waiting for its answer: whoever waits (`W`, the driver's
/// choice: a channel, or nothing for a caller that reads itself) and
/// until when.
#[derive(Debug)]
struct Waiting<W> {
    waiter: W,
    timer: Option<Timer>,
}

/// A request whose time ran out.
#[derive(Debug)]
pub struct Expired<W> {
    pub request_id: u32,
    pub waiter: W,
    /// The timeout it had.
    pub after: Duration,
}

impl<W> Expired<W> {
    /// The error its caller gets.
    pub fn error(&self, addr: &str) -> ClientError {
        ClientError::Timeout {
            addr: addr.to_string(),
            request_id: self.request_id,
            after: self.after,
        }
    }
}

/// The requests of one connection: the request ids (handed out here
/// alone, in sequence from 1), who waits for which answer, and whether the
/// connection is dead (then no request may start).
///
/// A request goes through the parts in one order, whichever driver holds
/// them and under however many locks: [`begin`](Self::begin) (its id, and
/// its waiter registered before any byte of it can be written, so that no
/// answer can come before it), then [`SendQueue::queue`] with the
/// [`Ticket`], or [`abandon`](Self::abandon) when that fails. Answers go
/// the other way through [`Inbound::next_waited`], which hands each to
/// its waiter ([`complete`](Self::complete)).
#[derive(Debug)]
pub struct Requests<W> {
    map: HashMap<u32, Waiting<W>, BuildHasherDefault<IdHasher>>,
    dead: Option<ClientError>,
    /// The next request id.
    next_id: u32,
}

impl<W> Default for Requests<W> {
    fn default() -> Self {
        Requests {
            map: HashMap::default(),
            dead: None,
            next_id: 1,
        }
    }
}

/// A request begun ([`Requests::begin`]) and not yet queued: its id, for
/// [`SendQueue::queue`], or to [`Requests::abandon`] it.
#[derive(Debug)]
#[must_use = "a begun request is queued or abandoned"]
pub struct Ticket {
    /// The request id.
    pub id: u32,
    /// The request must be written whole by then
    /// ([`SendQueue::check_writes`]).
    pub write_by: Option<Timer>,
}

impl<W> Requests<W> {
    /// Begin a request of kind `what` on a live connection: the next
    /// request id; when an answer is expected, `waiter()` waits for it
    /// until `timer` runs out (none: for ever); and whatever the kind, the
    /// request must be written whole by then. The connection's error when
    /// it is dead.
    pub fn begin(
        &mut self,
        what: Sending,
        waiter: impl FnOnce() -> W,
        timer: Option<Timer>,
    ) -> Result<Ticket, ClientError> {
        self.alive()?;
        let id = self.next_id;
        self.next_id = id.wrapping_add(1);
        if what.expects_reply() {
            self.insert(id, waiter(), timer);
        }
        Ok(Ticket {
            id,
            write_by: timer,
        })
    }

    /// A request begun that could not be queued: nobody waits for it any
    /// more (its waiter, if it had one, is returned).
    pub fn abandon(&mut self, t: Ticket) -> Option<W> {
        self.complete(t.id)
    }

    /// Why the connection is dead, if it is.
    pub fn dead(&self) -> Option<&ClientError> {
        self.dead.as_ref()
    }

    /// `Ok` while new requests may start; the connection's error after.
    pub fn alive(&self) -> Result<(), ClientError> {
        match &self.dead {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// How many requests wait.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Wait for the answer to `id`, until `timer` runs out.
    fn insert(&mut self, id: u32, waiter: W, timer: Option<Timer>) {
        self.map.insert(id, Waiting { waiter, timer });
    }

    /// The waiter of `id`, which is no longer waited for: its answer came,
    /// or it was never sent. `None` for an answer nobody waits for (late,
    /// after a timeout; such answers are dropped).
    pub fn complete(&mut self, id: u32) -> Option<W> {
        self.map.remove(&id).map(|w| w.waiter)
    }

    /// Arm the timers of requests sent without reading the clock: their
    /// wait began no later than `began_by`.
    pub fn arm(&mut self, began_by: Instant) {
        for w in self.map.values_mut() {
            if let Some(t) = &mut w.timer {
                t.arm(began_by);
            }
        }
    }

    /// Remove and return the requests whose timer has run out at `now`.
    pub fn expire(&mut self, now: Instant) -> Vec<Expired<W>> {
        self.map
            .extract_if(|_, w| w.timer.is_some_and(|t| t.expired(now)))
            .map(|(request_id, w)| Expired {
                request_id,
                waiter: w.waiter,
                after: w.timer.map_or(Duration::ZERO, |t| t.after),
            })
            .collect()
    }

    /// The earliest armed deadline.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.map
            .values()
            .filter_map(|w| w.timer.and_then(|t| t.deadline()))
            .min()
    }

    /// The connection died with `err` (the first error sticks): every
    /// waiter is returned, to be failed with it; new requests fail.
    pub fn fail(&mut self, err: ClientError) -> Vec<W> {
        if self.dead.is_none() {
            self.dead = Some(err);
        }
        self.map.drain().map(|(_, w)| w.waiter).collect()
    }
}

/// Received bytes on their way to answers: framing and reassembly (the
/// codec's [`Decoder`]), decoding with the connection's options, and what
/// a server may send.
#[derive(Debug)]
pub struct Inbound {
    decoder: Decoder,
    buf: BytesMut,
    opts: Options,
}

impl Inbound {
    /// Nothing received yet; messages limited by `codec`, decoded with
    /// `opts`.
    pub fn new(codec: CodecConfig, opts: Options) -> Inbound {
        Inbound {
            decoder: Decoder::new(codec),
            buf: BytesMut::with_capacity(64 * 1024),
            opts,
        }
    }

    /// The buffer to read into, with at least 16 KiB of room.
    pub fn read_buf(&mut self) -> &mut BytesMut {
        if self.buf.capacity() - self.buf.len() < 16 * 1024 {
            self.buf.reserve(64 * 1024);
        }
        &mut self.buf
    }

    /// Whether bytes of a further message are buffered.
    pub fn has_buffered(&self) -> bool {
        !self.buf.is_empty()
    }

    /// The next answer somebody waits for, as (request id, its waiter,
    /// the answer): `complete` says who waits for an id
    /// ([`Requests::complete`]), and answers nobody waits for (late ones,
    /// after a timeout) are dropped. `Ok(None)` until more bytes arrive;
    /// an error ends the connection, as for [`next`](Self::next).
    pub fn next_waited<W>(
        &mut self,
        s: &ClientSetup,
        mut complete: impl FnMut(u32) -> Option<W>,
    ) -> Result<Option<(u32, W, Incoming)>, ClientError> {
        while let Some((id, inc)) = self.next(s)? {
            if let Some(w) = complete(id) {
                return Ok(Some((id, w, inc)));
            }
        }
        Ok(None)
    }

    /// The next answer in the bytes received, as (request id, answer);
    /// `Ok(None)` until more bytes arrive. An error ends the connection:
    /// malformed input or an answer in another version than its request's
    /// (answer both with MessageError: [`ClientSetup::farewell`]), the
    /// peer's CloseConnection or MessageError, and a Request of the
    /// server's (this reader serves none: see [`arrival`](Self::arrival)).
    pub fn next(&mut self, s: &ClientSetup) -> Result<Option<(u32, Incoming)>, ClientError> {
        match self.arrival(s)? {
            None => Ok(None),
            Some(Arrival::Answer(id, inc)) => Ok(Some((id, inc))),
            Some(Arrival::Request(r)) => Err(s.protocol(GiopError::BadValue {
                what: "Request from a server to a client that serves none",
                value: r.header.request_id,
                offset: 0,
            })),
            Some(Arrival::Locate(l)) => Err(s.protocol(GiopError::BadValue {
                what: "LocateRequest from a server to a client that serves none",
                value: l.request_id,
                offset: 0,
            })),
        }
    }

    /// The next message in the bytes received: an answer, or a Request
    /// of the server's when the connection was offered for callbacks
    /// ([`ClientSetup::bidir`]); `Ok(None)` until more bytes arrive.
    /// Errors as for [`next`](Self::next); a Request on a connection not
    /// offered for callbacks is a protocol error (MessageError).
    pub fn arrival(&mut self, s: &ClientSetup) -> Result<Option<Arrival>, ClientError> {
        if let Some(r) = Reply::take_quiet(&mut self.decoder, &mut self.buf) {
            s.answer_version(MsgType::Reply, r.version)?;
            return Ok(Some(Arrival::Answer(
                r.header.request_id,
                Incoming::Reply(r),
            )));
        }
        let Some(frame) = self
            .decoder
            .decode(&mut self.buf)
            .map_err(|e| s.protocol(e))?
        else {
            return Ok(None);
        };
        // Before decoding: a header laid out for another version is not
        // what the request's version says it is. (A Request of the
        // server's is no answer: any version passes here, and `incoming`
        // takes GIOP 1.2 only.)
        s.answer_version(frame.header.msg_type, frame.header.version)?;
        let msg = Message::decode_frame(frame, self.opts).map_err(|e| s.protocol(e))?;
        incoming(msg, &s.addr, s.bidir).map(Some)
    }
}

/// Answer a Request the server sent over our bidirectional connection
/// ([`Arrival::Request`]): `servant` (a server's [`Handler`], on the
/// client side) reads its arguments and writes its results, and the Reply
/// (in the request's version and byte order, fragmented as our requests
/// are) is appended to `out`; a oneway gets nothing. A servant that goes
/// asynchronous gets NO_IMPLEMENT: callbacks are served on the spot.
pub fn answer_request<H: Handler + ?Sized>(
    out: &mut BytesMut,
    s: &ClientSetup,
    req: &Request,
    servant: &H,
) -> Result<(), ClientError> {
    let h = &req.header;
    let expects = h.response.expects_reply();
    let order = req.body.order;
    let opts = s.wire.opts;
    let Some(key) = h.target.object_key() else {
        return Err(s.protocol(GiopError::BadValue {
            what: "callback TargetAddress other than KeyAddr",
            value: h.request_id,
            offset: 0,
        }));
    };
    let ctx = RequestContext {
        version: req.version,
        order,
        reply_order: order,
        request_id: h.request_id,
        object_key: &key,
        operation: h.operation(),
        contexts: &h.contexts,
        response_expected: expects,
        options: opts,
        body: &req.body,
        connection: 0,
    };
    let start = out.len();
    let p = begin_reply(
        out,
        req.version,
        order,
        opts,
        h.request_id,
        ReplyStatus::NoException,
        &[],
    )
    .map_err(ClientError::Encode)?;
    let dispatch = {
        let mut reader = req.body.reader(opts);
        servant.handle(&ctx, &mut reader, &mut p.writer(out))
    };
    if !expects {
        out.truncate(start);
        return Ok(());
    }
    let outcome = match dispatch {
        Dispatch::Done(o) => o,
        Dispatch::Async(_) | Dispatch::CallBack(_) => Outcome::System(
            SystemException::no_implement(MINOR_NO_IMPLEMENT_ASYNC_CALLBACK, Completion::No),
        ),
    };
    finish_reply(s.fragment_size, out, p, req.version, outcome);
    Ok(())
}

/// Answer a LocateRequest the server sent over our bidirectional
/// connection ([`Arrival::Locate`]) with `servant`'s
/// [`locate`](Handler::locate); the LocateReply (in the connection's
/// version, which bidirectional GIOP fixes at 1.2) is appended to `out`.
pub fn answer_locate<H: Handler + ?Sized>(
    out: &mut BytesMut,
    s: &ClientSetup,
    l: &LocateRequest,
    servant: &H,
) -> Result<(), ClientError> {
    let status = match l.target.object_key() {
        None => LocateStatus::NeedsAddressingMode(0),
        Some(key) => match servant.locate(&key) {
            LocateOutcome::Here => LocateStatus::ObjectHere,
            LocateOutcome::Unknown => LocateStatus::UnknownObject,
            LocateOutcome::Forward(i) => LocateStatus::ObjectForward(i),
            LocateOutcome::ForwardPerm(i) => LocateStatus::ObjectForwardPerm(i),
        },
    };
    let reply = LocateReply {
        request_id: l.request_id,
        status,
    };
    encode_locate_reply(out, s.wire.version, s.wire.order, &reply).map_err(ClientError::Encode)?;
    Ok(())
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

    /// Encode a request once for connections set up as `s` (with request
    /// id 0, and the CodeSets context when the connection has one: a
    /// prepared request may be the connection's first).
    pub fn build<F>(
        s: &ClientSetup,
        target: &TargetAddress,
        operation: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<Prepared, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let wire = s.wire;
        let mut buf = BytesMut::new();
        let contexts = s.our_contexts(&[], s.code_sets.as_ref());
        let contexts: &[ServiceContext] = &contexts;
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
    fn check_for(&self, version: Version, order: ByteOrder) -> Result<(), ClientError> {
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
    fn append(&self, out: &mut BytesMut, splices: &mut Splices, id: u32) {
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

/// One client connection for a driver that owns it alone: the parts above
/// together, with one pending-request table whose waiters are the request
/// ids themselves.
#[derive(Debug)]
pub struct ClientConn {
    setup: ClientSetup,
    queue: SendQueue,
    requests: Requests<()>,
    inbound: Inbound,
}

impl ClientConn {
    /// A connection set up as `setup`, with the limits and splicing of
    /// `cfg`.
    pub fn new(setup: ClientSetup, cfg: &ConnConfig) -> ClientConn {
        let opts = setup.wire.opts;
        ClientConn {
            setup,
            queue: SendQueue::new(cfg),
            requests: Requests::default(),
            inbound: Inbound::new(cfg.codec, opts),
        }
    }

    /// What the connection fixed when it opened.
    pub fn setup(&self) -> &ClientSetup {
        &self.setup
    }

    /// Why the connection is dead, if it is.
    pub fn dead(&self) -> Option<&ClientError> {
        self.requests.dead()
    }

    /// Queue `out` with a new request id (see [`SendQueue::queue`]), and
    /// when it expects a reply, wait for it until `timeout` (from `now`;
    /// with `now` `None` the timer starts at the next [`arm`](Self::arm)).
    /// Returns the id.
    pub fn send<F>(
        &mut self,
        out: Outgoing<'_, F>,
        timeout: Option<Duration>,
        now: Option<Instant>,
    ) -> Result<u32, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let timer = timeout.map(|t| match now {
            Some(now) => Timer::started(t, now),
            None => Timer::unarmed(t),
        });
        let t = self.requests.begin(out.sending(), || (), timer)?;
        let id = t.id;
        if let Err(e) = self.queue.queue(&self.setup, &t, out) {
            self.requests.abandon(t);
            return Err(e);
        }
        Ok(id)
    }

    /// Whether request `id` still waits for its answer.
    pub fn is_waiting(&self, id: u32) -> bool {
        self.requests.map.contains_key(&id)
    }

    /// The bytes to write; consume what was written.
    pub fn outbox(&mut self) -> &mut Outbox {
        self.queue.outbox()
    }

    /// How many bytes the first write of a `what` message may take (its
    /// head alone, when it is large: [`head_first_for`]).
    pub fn first_write(&self, what: Sending) -> usize {
        self.queue.first_write(&self.setup, what)
    }

    /// Whether what is queued may wait ([`SendQueue::holds`]): then the
    /// driver writes nothing now.
    pub fn holds(&self) -> bool {
        self.queue.holds()
    }

    /// Bytes queued and not yet written.
    pub fn queued(&self) -> usize {
        self.queue.pending().len()
    }

    /// [`SendQueue::before_write`] for this connection's queue.
    pub fn before_write(
        &self,
        c: &mut Coalescing,
        set_nodelay: impl FnOnce(bool) -> std::io::Result<()>,
    ) {
        self.queue.before_write(c, set_nodelay);
    }

    /// The buffer to read received bytes into (at least 16 KiB of room).
    pub fn read_buf(&mut self) -> &mut BytesMut {
        self.inbound.read_buf()
    }

    /// The next request whose answer is complete, with it; answers nobody
    /// waits for are dropped. An error fails the connection
    /// ([`fail`](Self::fail)): malformed input (MessageError is queued), the
    /// peer's CloseConnection (retryable) or MessageError.
    pub fn poll(&mut self) -> Result<Option<(u32, Incoming)>, ClientError> {
        let requests = &mut self.requests;
        match self
            .inbound
            .next_waited(&self.setup, |id| requests.complete(id))
        {
            Ok(got) => Ok(got.map(|(id, (), inc)| (id, inc))),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// The next arrival ([`Inbound::arrival`]): an answer somebody waits
    /// for (answers nobody waits for are dropped), or a Request of the
    /// server's on a connection offered for callbacks
    /// ([`ClientSetup::bidir`]; answer it with [`answer`](Self::answer)).
    /// Errors fail the connection, as for [`poll`](Self::poll).
    pub fn poll_arrival(&mut self) -> Result<Option<Arrival>, ClientError> {
        loop {
            match self.inbound.arrival(&self.setup) {
                Ok(Some(Arrival::Answer(id, inc))) => {
                    if self.requests.complete(id).is_some() {
                        return Ok(Some(Arrival::Answer(id, inc)));
                    }
                }
                Ok(other) => return Ok(other),
                Err(e) => return Err(self.fail(e)),
            }
        }
    }

    /// Answer the server's Request `req` with `servant`
    /// ([`answer_request`]); the Reply is queued in the outbox.
    pub fn answer<H: Handler + ?Sized>(
        &mut self,
        req: &Request,
        servant: &H,
    ) -> Result<(), ClientError> {
        self.queue.answer(&self.setup, req, servant)
    }

    /// Answer the server's LocateRequest `l` with `servant`
    /// ([`answer_locate`]); the LocateReply is queued in the outbox.
    pub fn answer_locate<H: Handler + ?Sized>(
        &mut self,
        l: &LocateRequest,
        servant: &H,
    ) -> Result<(), ClientError> {
        self.queue.answer_locate(&self.setup, l, servant)
    }

    /// Mark the connection as offered for callbacks: our requests carry
    /// a BI_DIR_IIOP context (the caller's), so the server may send
    /// Requests over it ([`ClientSetup::bidir`]).
    pub fn offer_bidir(&mut self) {
        self.setup.bidir = true;
    }

    /// The peer closed the connection: it fails (not retryable: the peer
    /// did not say it processed nothing).
    pub fn on_eof(&mut self) -> ClientError {
        let e = self.setup.closed();
        self.fail(e)
    }

    /// Arm the timers of requests sent without a time: they have waited
    /// since `began_by` at least.
    pub fn arm(&mut self, began_by: Instant) {
        self.requests.arm(began_by);
        self.queue.arm(began_by);
    }

    /// The earliest time [`on_timeout`](Self::on_timeout) has work.
    pub fn next_deadline(&self) -> Option<Instant> {
        let writes = self.queue.next_deadline();
        let answers = self.requests.next_deadline();
        writes.into_iter().chain(answers).min()
    }

    /// What the deadlines passed at `now` mean. A request not written
    /// whole in its time loses the stream ([`SendQueue::check_writes`]):
    /// the connection fails with that error (returned). Otherwise the
    /// requests whose answer is late each get [`ClientError::Timeout`],
    /// the server a CancelRequest (queued), and a late answer is dropped;
    /// the connection goes on.
    pub fn on_timeout(&mut self, now: Instant) -> Result<Vec<(u32, ClientError)>, ClientError> {
        if let Err(e) = self.queue.check_writes(&self.setup, now) {
            return Err(self.fail(e));
        }
        let expired = self.requests.expire(now);
        self.queue.expired(&self.setup, &expired);
        Ok(expired
            .into_iter()
            .map(|e| (e.request_id, e.error(&self.setup.addr)))
            .collect())
    }

    /// Everything queued must be written within `within` (from the next
    /// [`arm`](Self::arm)), or the stream is lost: a driver's bound on
    /// flushing buffered oneways before it closes.
    pub fn write_within(&mut self, within: Duration) {
        self.queue.write_by(Timer::unarmed(within));
    }

    /// The connection ends with `err` (the first error sticks): waiting
    /// requests are dropped, nothing queued is written any more, and what
    /// GIOP tells the peer is queued instead. Returns `err`.
    pub fn fail(&mut self, err: ClientError) -> ClientError {
        if self.requests.dead().is_none() {
            self.queue.outbox().clear();
            self.queue.farewell(&self.setup, &err);
            self.requests.fail(err.clone());
        }
        err
    }
}

/// How [`Follow`] goes on after an attempt.
#[derive(Debug)]
pub enum Step<T> {
    /// The call is over.
    Done(T),
    /// Send again: to [`Follow::target`], addressed with
    /// [`Follow::address`], for the reason given.
    Again(Again),
}

/// Why [`Follow`] sends a call again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Again {
    /// The answer named another reference, which is now
    /// [`Follow::target`]: `LOCATION_FORWARD`, `LOCATION_FORWARD_PERM`,
    /// `OBJECT_FORWARD` or `OBJECT_FORWARD_PERM`.
    Forward(&'static str),
    /// The server closed the connection with CloseConnection before it
    /// answered: the request was not processed, so it goes once more on a
    /// new connection to the same target.
    Retry,
    /// A GIOP 1.2 server asked for another addressing disposition
    /// (NEEDS_ADDRESSING_MODE): same connection, [`Follow::address`].
    Readdress,
}

/// The hops of one call: LOCATION_FORWARD(_PERM) and OBJECT_FORWARD(_PERM)
/// followed to the forwarded reference up to `max_forwards` times, one
/// retry after the server closed the connection with CloseConnection,
/// and one resend in the addressing disposition a GIOP 1.2 server asks for
/// with NEEDS_ADDRESSING_MODE.
///
/// It borrows the reference the call starts from and owns a reference only
/// once a forward named one: a call that is not forwarded copies nothing.
#[derive(Debug)]
pub struct Follow<'a> {
    target: Cow<'a, Ior>,
    max_forwards: u32,
    hops: u32,
    retried: bool,
    /// The addressing disposition a server asked for (GIOP 1.2), if any.
    disposition: Option<i16>,
}

impl<'a> Follow<'a> {
    /// A call to `target`.
    pub fn new(target: &'a Ior, max_forwards: u32) -> Follow<'a> {
        Follow {
            target: Cow::Borrowed(target),
            max_forwards,
            hops: 0,
            retried: false,
            disposition: None,
        }
    }

    /// Where the next attempt goes.
    pub fn target(&self) -> &Ior {
        &self.target
    }

    /// The target address of the next attempt: `key_addr` (the route's
    /// KeyAddr), or the disposition a server asked for.
    pub fn address<'k>(
        &self,
        key_addr: &'k TargetAddress,
    ) -> Result<Cow<'k, TargetAddress>, ClientError> {
        match self.disposition {
            Some(d) => addressed(&self.target, d).map(Cow::Owned),
            None => Ok(Cow::Borrowed(key_addr)),
        }
    }

    /// What a Request's attempt at `addr` got back, and what comes next:
    /// the final reply (NO_EXCEPTION, USER_EXCEPTION or SYSTEM_EXCEPTION;
    /// `None` for a oneway), another attempt, or an error.
    pub fn on_reply(
        &mut self,
        r: Result<Option<Reply>, ClientError>,
        addr: &str,
    ) -> Result<Step<Option<Reply>>, ClientError> {
        let reply = match r {
            Err(e) if e.is_retryable() && !self.retried => {
                self.retried = true;
                return Ok(Step::Again(Again::Retry));
            }
            Err(e) => return Err(e),
            Ok(None) => return Ok(Step::Done(None)),
            Ok(Some(reply)) if Self::settles(reply.header.status) => {
                return Ok(Step::Done(Some(reply)))
            }
            Ok(Some(reply)) => reply,
        };
        match reply.header.status {
            status @ (ReplyStatus::LocationForward | ReplyStatus::LocationForwardPerm) => {
                self.hop(addr)?;
                self.target =
                    Cow::Owned(reply.forward_ior().map_err(|error| ClientError::Protocol {
                        addr: addr.to_owned(),
                        error,
                    })?);
                Ok(Step::Again(Again::Forward(status.name())))
            }
            ReplyStatus::NeedsAddressingMode => {
                let d = needed_disposition(&reply);
                // Resend once in the disposition asked for.
                if self.disposition.is_some() || !(0..=2).contains(&d) {
                    return Err(ClientError::NeedsAddressingMode(d));
                }
                self.disposition = Some(d);
                Ok(Step::Again(Again::Readdress))
            }
            _ => Ok(Step::Done(Some(reply))),
        }
    }

    /// Whether a reply with `status` is its call's result (NO_EXCEPTION,
    /// USER_EXCEPTION, SYSTEM_EXCEPTION), not a reason to send again.
    #[inline]
    pub fn settles(status: ReplyStatus) -> bool {
        !status.is_forward() && status != ReplyStatus::NeedsAddressingMode
    }

    /// What a LocateRequest's attempt at `addr` got back, and what comes
    /// next: the final status (for [`target`](Self::target)), another
    /// attempt (OBJECT_FORWARD), or an error.
    pub fn on_locate(
        &mut self,
        l: LocateReply,
        addr: &str,
    ) -> Result<Step<LocateStatus>, ClientError> {
        let name = l.status.name();
        let next = match l.status {
            LocateStatus::ObjectForward(next) | LocateStatus::ObjectForwardPerm(next) => next,
            status => return Ok(Step::Done(status)),
        };
        self.hop(addr)?;
        self.target = Cow::Owned(next);
        Ok(Step::Again(Again::Forward(name)))
    }

    fn hop(&mut self, addr: &str) -> Result<(), ClientError> {
        self.hops += 1;
        if self.hops > self.max_forwards {
            return Err(ClientError::TooManyForwards {
                addr: addr.to_owned(),
                limit: self.max_forwards,
            });
        }
        Ok(())
    }
}

/// The disposition a NEEDS_ADDRESSING_MODE reply asks for (-1: unreadable).
fn needed_disposition(reply: &Reply) -> i16 {
    reply
        .body
        .reader(Options::default())
        .read_i16()
        .unwrap_or(-1)
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
        ReplyStatus::NeedsAddressingMode => {
            Err(ClientError::NeedsAddressingMode(needed_disposition(&reply)))
        }
        ReplyStatus::LocationForward | ReplyStatus::LocationForwardPerm => {
            Err(protocol(GiopError::BadValue {
                what: "unfollowed forward reply status",
                value: reply.header.status as u32,
                offset: 0,
            }))
        }
    }
}

#[cfg(test)]
mod tests;
