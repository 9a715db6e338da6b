//! The observer: one connection's GIOP traffic seen from outside, pure.
//! Nothing is sent and nothing is answered: the bytes each side sent go
//! in (with when they were seen, `now` on the caller's clock), and out
//! come what a person debugging the connection wants to know — each
//! request with its operation, object key and sizes; each reply paired
//! with the request it answers, per connection and request id, with the
//! response time; LocateRequests and their LocateReplies the same way;
//! CancelRequest, CloseConnection and MessageError; how many pieces
//! (Fragments) carried each message; and findings, the conformance
//! problems only someone who sees both sides can name (an answer to an id
//! never sent, an id reused while its request awaits an answer, a reply
//! in a higher GIOP version than its request, code sets that change, a
//! message that does not frame or decode …, [`Rule`]).
//!
//! Framing is the codec's ([`Decoder`]: both byte orders, GIOP 1.0–1.2,
//! fragments, size limits), with what an observer needs besides: a side
//! picked up mid-stream, or whose bytes were partly lost, is resynchronised
//! on the next `GIOP` magic with a sane header, and until a message frames
//! there, what does not decode is taken for a false match, not a finding.
//! The code sets a message is read with follow the rule the server side
//! follows ([`ConnectionCodeSets`]).
//!
//! Order of use: [`from_start`](Observer::from_start) for a side whose
//! first byte is the connection's (before its first bytes); then the bytes
//! of either side as they were seen ([`data`](Observer::data)), bytes that
//! were not ([`gap`](Observer::gap)) and bytes known to be held back
//! before a hole ([`holding`](Observer::holding)); finally
//! [`end`](Observer::end). Events go to a [`Sink`] as they happen. The
//! sink keeps what it wants with each request ([`Sink::Tag`]) and gets it
//! back with the answer, so that nothing above pairs anything again.
//!
//! Memory is bounded by the largest message, the requests awaiting an
//! answer ([`limit_pending`](Observer::limit_pending)) and 4096 recent
//! oneway ids per connection.

use std::collections::{BTreeMap, VecDeque};

use bytes::BytesMut;
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use iiop_cdr::Primitive;

use crate::codec::{CodecConfig, Decoder, Frame};
use crate::context::{CodeSetContext, ConnectionCodeSets, SC_CODE_SETS};
use crate::header::{Header, MsgType, Version, HEADER_LEN, MAGIC};
use crate::message::{LocateReply, LocateRequest, Message, Reply, Request};

/// One end of the connection. Which is which is the caller's choice (the
/// sender of the first bytes seen, say); the client is the side that sent
/// the first Request or LocateRequest ([`Observer::client`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    A,
    B,
}

impl Side {
    /// The other end.
    pub fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }

    /// 0 for A, 1 for B.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// When bytes were seen: `now` on the caller's clock, and the caller's
/// number for what carried them (a capture's frame number), handed back
/// with what was made of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct At {
    /// Nanoseconds on the caller's clock (any epoch).
    pub ns: u64,
    /// The caller's number for the unit that carried the bytes.
    pub frame: u64,
}

/// Limits of an observer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObserverConfig {
    /// Largest GIOP message, and largest reassembled message, accepted;
    /// a header that declares more is no header (resynchronise).
    pub max_message: usize,
    /// Requests awaiting an answer held at most; past it a request is
    /// handed back at once as [`Unanswered::NoRoom`].
    pub max_pending: usize,
}

impl Default for ObserverConfig {
    fn default() -> Self {
        ObserverConfig {
            max_message: 512 << 20,
            max_pending: 1 << 20,
        }
    }
}

/// A complete (reassembled) message and where it was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// The caller's number for the connection ([`Observer::new`]).
    pub connection: u64,
    /// Who sent it.
    pub side: Side,
    /// Its header (of the whole message when it came in Fragments:
    /// `size` is the reassembled size).
    pub header: Header,
    /// When its first byte (of its first piece) was seen.
    pub first: At,
    /// When its last byte (of its last piece) was seen.
    pub last: At,
    /// Bytes on the wire, the headers of every piece included.
    pub wire_len: u64,
    /// GIOP messages that carried it: 1, or the first and its Fragments.
    pub pieces: u32,
}

/// A Request, decoded.
#[derive(Debug)]
pub struct RequestSeen<'a> {
    pub seen: &'a Seen,
    pub request: &'a Request,
    /// Requests (and LocateRequests) on the connection awaiting an answer
    /// when it was seen, itself not counted: 0 means it was sent with no
    /// call in flight.
    pub in_flight: usize,
    /// The code sets in force on the connection once it is read: its
    /// bodies read with them (under its version's wchar rules).
    pub code_sets: Option<CodeSetContext>,
}

/// A LocateRequest, decoded.
#[derive(Debug)]
pub struct LocateRequestSeen<'a> {
    pub seen: &'a Seen,
    pub request: &'a LocateRequest,
    /// As [`RequestSeen::in_flight`].
    pub in_flight: usize,
}

/// A Reply, decoded, and what it answers.
#[derive(Debug)]
pub struct ReplySeen<'a, T> {
    pub seen: &'a Seen,
    pub reply: &'a Reply,
    pub answers: Answers<T>,
}

/// A LocateReply, decoded, and what it answers.
#[derive(Debug)]
pub struct LocateReplySeen<'a, T> {
    pub seen: &'a Seen,
    pub reply: &'a LocateReply,
    pub answers: Answers<T>,
}

/// What a Reply or LocateReply answers: a request the other side sent on
/// this connection with its id, awaiting an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answers<T> {
    /// That request (a Request for a Reply, a LocateRequest for a
    /// LocateReply): the tag the sink gave it, when its first byte was
    /// seen, and the response time (its first byte to the answer's last).
    Request { tag: T, sent: At, latency_ns: u64 },
    /// A request of the other kind has its id (a finding says so). A
    /// LocateRequest answered by a Reply ends (its tag); a Request
    /// answered by a LocateReply still awaits its Reply (`None`).
    OtherKind(Option<T>),
    /// No request awaits it, and its request may be in bytes not seen (the
    /// connection was picked up mid-way, or bytes were lost): nobody's
    /// fault.
    Unseen,
    /// No request awaits it though every byte the other side sent was
    /// seen: the peer's error (a finding says which).
    Unknown,
}

/// Why a request's tag comes back without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unanswered {
    /// The observation ended ([`Observer::end`]) before its answer.
    Ended,
    /// Too many requests awaited answers ([`Observer::limit_pending`]):
    /// it was not held, and an answer to it will pair with nothing.
    NoRoom,
    /// Another request reused its id while it awaited its answer (a
    /// finding): the answer that comes is paired with the later one.
    Replaced,
}

/// A conformance rule a finding breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Rule {
    /// Not a GIOP header where one must start.
    BadHeader,
    /// A message the codec refuses (fragments that belong to nothing, a
    /// message over the reassembly limit …).
    Framing,
    /// A GIOP 1.2 message with more fragments to follow whose length is
    /// not a multiple of 8.
    FragmentLength,
    /// A message that frames but does not decode.
    Decode,
    /// A GIOP 1.2 request or reply body that does not start 8-aligned.
    BodyAlignment,
    /// A CodeSets service context in a GIOP 1.0 request.
    CodesetIn10,
    /// A CodeSets context that names other code sets than the
    /// connection's first.
    CodesetChanged,
    /// A malformed CodeSets context.
    CodesetContext,
    /// A request id reused while a request with it awaits its answer.
    DuplicateRequestId,
    /// An answer to an id never sent (every byte of the other side seen).
    ReplyUnknownId,
    /// A Reply to a oneway request.
    ReplyToOneway,
    /// A Reply to a LocateRequest's id.
    ReplyToLocate,
    /// A LocateReply to a Request's id.
    LocateReplyToRequest,
    /// CloseConnection from the client side before GIOP 1.2.
    CloseFromClient,
    /// A MessageError: the peer could not parse something sent to it.
    MessageError,
    /// A reply (Reply, LocateReply) in a higher GIOP version than its
    /// request's.
    ReplyVersion,
}

impl Rule {
    /// The rule's short name, as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::BadHeader => "bad-header",
            Rule::Framing => "framing",
            Rule::FragmentLength => "fragment-length",
            Rule::Decode => "decode",
            Rule::BodyAlignment => "body-alignment",
            Rule::CodesetIn10 => "codeset-in-1.0",
            Rule::CodesetChanged => "codeset-changed",
            Rule::CodesetContext => "codeset-context",
            Rule::DuplicateRequestId => "duplicate-request-id",
            Rule::ReplyUnknownId => "reply-unknown-id",
            Rule::ReplyToOneway => "reply-to-oneway",
            Rule::ReplyToLocate => "reply-to-locate",
            Rule::LocateReplyToRequest => "locate-reply-to-request",
            Rule::CloseFromClient => "close-from-client",
            Rule::MessageError => "message-error",
            Rule::ReplyVersion => "reply-version",
        }
    }
}

/// A conformance problem, with the bytes that show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding<'a> {
    /// The caller's number for the connection.
    pub connection: u64,
    /// The side that sent the offending bytes.
    pub side: Side,
    /// The client side as far as known when the finding was made (to
    /// name the connection client first).
    pub client: Option<Side>,
    /// When the offending message's first byte was seen.
    pub at: At,
    pub rule: Rule,
    pub detail: String,
    /// The offending message's first bytes (up to [`HEAD_KEEP`]).
    pub bytes: &'a [u8],
}

/// Bytes of a message kept for findings.
pub const HEAD_KEEP: usize = 64;

/// Where an observer's events go. Every method but the two that take a
/// request has a default that ignores the event.
pub trait Sink {
    /// What the sink keeps with a request until its answer (an index, a
    /// slot in a table of its own): returned when the request is seen,
    /// handed back with the answer or as [`Unanswered`].
    type Tag;

    /// A Request. Its tag is dropped at once for a oneway.
    fn request(&mut self, ev: RequestSeen<'_>) -> Self::Tag;

    /// A LocateRequest.
    fn locate_request(&mut self, ev: LocateRequestSeen<'_>) -> Self::Tag;

    /// Every complete message, before what it is is decoded (so also
    /// one that does not decode).
    fn message(&mut self, seen: &Seen) {
        let _ = seen;
    }

    /// A Reply, and what it answers.
    fn reply(&mut self, ev: ReplySeen<'_, Self::Tag>) {
        let _ = ev;
    }

    /// A LocateReply, and what it answers.
    fn locate_reply(&mut self, ev: LocateReplySeen<'_, Self::Tag>) {
        let _ = ev;
    }

    /// A CancelRequest.
    fn cancel(&mut self, seen: &Seen, request_id: u32) {
        let _ = (seen, request_id);
    }

    /// A CloseConnection.
    fn close_connection(&mut self, seen: &Seen) {
        let _ = seen;
    }

    /// A MessageError (also a finding).
    fn message_error(&mut self, seen: &Seen) {
        let _ = seen;
    }

    /// A request that will get no answer, and why.
    fn unanswered(&mut self, tag: Self::Tag, why: Unanswered) {
        let _ = (tag, why);
    }

    /// A conformance finding.
    fn finding(&mut self, finding: Finding<'_>) {
        let _ = finding;
    }
}

/// The first bytes of a message (up to [`HEAD_KEEP`]), held inline: every
/// message keeps them in case a finding needs them, and findings are
/// rare, so they cost no allocation until one does.
#[derive(Clone, Copy)]
struct Head {
    bytes: [u8; HEAD_KEEP],
    len: u8,
}

impl Head {
    fn new(b: &[u8]) -> Head {
        let n = b.len().min(HEAD_KEEP);
        let mut bytes = [0; HEAD_KEEP];
        bytes[..n].copy_from_slice(&b[..n]);
        Head {
            bytes,
            len: n as u8,
        }
    }
}

impl std::ops::Deref for Head {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl std::fmt::Debug for Head {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A complete message as the framer hands it on.
#[derive(Debug)]
struct Framed {
    frame: Frame,
    first: At,
    last: At,
    wire_len: u64,
    pieces: u32,
    head: Head,
}

/// What a framer hands on, in stream order.
#[derive(Debug)]
enum Framing {
    Message(Framed),
    Finding {
        at: At,
        rule: Rule,
        detail: String,
        bytes: Vec<u8>,
    },
}

/// The first piece of a fragmented message, until its last arrives.
#[derive(Debug)]
struct Start {
    first: At,
    wire_len: u64,
    pieces: u32,
    head: Head,
}

/// Framing of one side's bytes.
#[derive(Debug)]
struct Framer {
    buf: BytesMut,
    /// Stream offset of `buf[0]`.
    buf_pos: u64,
    /// (end offset, when seen) of each chunk still in `buf`.
    marks: VecDeque<(u64, At)>,
    /// Whether `buf[0]` is the start of a message.
    synced: bool,
    /// Whether framing is known good: the side was seen from its start,
    /// or a message framed after the last resynchronisation. Until then a
    /// message the codec refuses is taken for a false `GIOP` match, not a
    /// finding.
    trusted: bool,
    decoder: Decoder,
    max_message: usize,
    /// First pieces of fragmented messages: 1.2 by request id, 1.1 `None`.
    starts: BTreeMap<Option<u32>, Start>,
    /// Bytes skipped while looking for a message start (and lost).
    skipped_bytes: u64,
    resyncs: u64,
}

/// Whether `b` (12 bytes) is a GIOP header an observer believes.
fn sane(b: &[u8], max: usize) -> Option<Header> {
    let h = Header::parse(b).ok()?;
    (h.version.major == 1 && h.version.minor <= 2 && h.size as usize <= max).then_some(h)
}

impl Framer {
    fn new(max_message: usize) -> Self {
        Framer {
            buf: BytesMut::new(),
            buf_pos: 0,
            marks: VecDeque::new(),
            synced: false,
            trusted: false,
            decoder: Decoder::new(CodecConfig {
                max_message_size: max_message,
                max_reassembled_size: max_message,
            }),
            max_message,
            starts: BTreeMap::new(),
            skipped_bytes: 0,
            resyncs: 0,
        }
    }

    /// The next bytes of the side, seen `at`.
    fn data(&mut self, data: &[u8], at: At, out: &mut Vec<Framing>) {
        self.buf.extend_from_slice(data);
        self.marks
            .push_back((self.buf_pos + self.buf.len() as u64, at));
        self.parse(out);
    }

    /// `missing` bytes were not seen: drop what is buffered and look for
    /// the next start.
    fn gap(&mut self, missing: u64) {
        self.skipped_bytes += self.buf.len() as u64 + missing;
        self.buf_pos += self.buf.len() as u64 + missing;
        self.buf.clear();
        self.marks.clear();
        self.unsync();
        // Fragments in flight can no longer complete.
        self.decoder = Decoder::new(*self.decoder.config());
        self.starts.clear();
    }

    fn unsync(&mut self) {
        if self.synced {
            self.resyncs += 1;
        }
        self.synced = false;
        self.trusted = false;
    }

    /// When the byte at stream offset `pos` was seen.
    fn mark_at(&self, pos: u64) -> At {
        self.marks
            .iter()
            .find(|m| m.0 > pos)
            .map(|m| m.1)
            .unwrap_or_default()
    }

    fn consume(&mut self, n: usize) -> BytesMut {
        let b = self.buf.split_to(n);
        self.buf_pos += n as u64;
        while self.marks.front().is_some_and(|m| m.0 <= self.buf_pos) {
            self.marks.pop_front();
        }
        b
    }

    fn parse(&mut self, out: &mut Vec<Framing>) {
        loop {
            if !self.synced && !self.find_start() {
                return;
            }
            if self.buf.len() < HEADER_LEN {
                return;
            }
            let Some(h) = sane(&self.buf[..HEADER_LEN], self.max_message) else {
                if self.trusted {
                    let why = Header::parse(&self.buf[..HEADER_LEN])
                        .err()
                        .map(|e| e.to_string())
                        .unwrap_or_else(|| "declared size above the limit".into());
                    out.push(Framing::Finding {
                        at: self.mark_at(self.buf_pos),
                        rule: Rule::BadHeader,
                        detail: format!("not a GIOP header where one must start: {why}"),
                        bytes: self.buf[..HEADER_LEN].to_vec(),
                    });
                }
                self.unsync();
                let n = self.buf.len().min(1);
                self.skipped_bytes += n as u64;
                self.consume(n);
                continue;
            };
            let total = h.total_len();
            if self.buf.len() < total {
                return;
            }
            let first = self.mark_at(self.buf_pos);
            let last = self.mark_at(self.buf_pos + total as u64 - 1);
            let mut piece = self.consume(total);
            let head = Head::new(&piece);
            self.piece(h, &mut piece, head, (first, last), out);
        }
    }

    /// One framed GIOP message (maybe a fragment).
    fn piece(
        &mut self,
        h: Header,
        piece: &mut BytesMut,
        head: Head,
        (first, last): (At, At),
        out: &mut Vec<Framing>,
    ) {
        let wire = piece.len() as u64;
        if h.version.is_12() && h.more_fragments && !wire.is_multiple_of(8) {
            out.push(Framing::Finding {
                at: first,
                rule: Rule::FragmentLength,
                detail: format!(
                    "GIOP 1.2 {:?} with more fragments to follow is {wire} bytes long, not a multiple of 8",
                    h.msg_type
                ),
                bytes: head.to_vec(),
            });
        }
        // Key of a fragmented message: the 1.2 request id (after the
        // header, first in Request/Reply/Locate* and in Fragment headers).
        let frag_key = if h.version.is_12() {
            piece
                .get(HEADER_LEN..HEADER_LEN + 4)
                .map(|b| u32::from_wire(b, h.order))
        } else {
            None
        };
        let is_fragment = h.msg_type == MsgType::Fragment;
        match self.decoder.decode_separately(piece) {
            Ok(None) => {
                if is_fragment {
                    if let Some(s) = self.starts.get_mut(&frag_key) {
                        s.wire_len += wire;
                        s.pieces += 1;
                    }
                } else {
                    self.starts.insert(
                        frag_key,
                        Start {
                            first,
                            wire_len: wire,
                            pieces: 1,
                            head,
                        },
                    );
                }
            }
            Ok(Some(frame)) => {
                self.trusted = true;
                let s = if is_fragment {
                    self.starts.remove(&frag_key).unwrap_or(Start {
                        first,
                        wire_len: 0,
                        pieces: 0,
                        head,
                    })
                } else {
                    Start {
                        first,
                        wire_len: 0,
                        pieces: 0,
                        head,
                    }
                };
                out.push(Framing::Message(Framed {
                    frame,
                    first: s.first,
                    last,
                    wire_len: s.wire_len + wire,
                    pieces: s.pieces + 1,
                    head: s.head,
                }));
            }
            Err(e) => {
                if self.trusted {
                    out.push(Framing::Finding {
                        at: first,
                        rule: Rule::Framing,
                        detail: e.to_string(),
                        bytes: head.to_vec(),
                    });
                }
                // A fragment that belongs to nothing seen: after a resync
                // this is expected; drop it and carry on framing.
            }
        }
    }

    /// Drop bytes up to the next `GIOP` that starts a sane header; false
    /// when more bytes are needed.
    fn find_start(&mut self) -> bool {
        let mut i = 0;
        while i + 4 <= self.buf.len() {
            if self.buf[i..i + 4] == MAGIC {
                if i + HEADER_LEN > self.buf.len() {
                    break;
                }
                if sane(&self.buf[i..i + HEADER_LEN], self.max_message).is_some() {
                    self.skipped_bytes += i as u64;
                    self.consume(i);
                    self.synced = true;
                    return true;
                }
            }
            i += 1;
        }
        // Keep a possible partial magic at the end.
        let keep = self.buf.len().saturating_sub(i).min(HEADER_LEN - 1);
        let drop = self.buf.len() - keep;
        self.skipped_bytes += drop as u64;
        self.consume(drop);
        false
    }
}

/// One side: its framing and how much of it was seen.
#[derive(Debug)]
struct SideState {
    framer: Framer,
    /// Nothing of it was fed yet (no bytes, no gap).
    fresh: bool,
    /// Its first byte is the connection's ([`Observer::from_start`]).
    from_start: bool,
    /// Bytes of it were not seen ([`Observer::gap`]).
    lost: bool,
    /// Bytes of it are held back before a hole ([`Observer::holding`]).
    holding: bool,
}

impl SideState {
    fn new(max_message: usize) -> Self {
        SideState {
            framer: Framer::new(max_message),
            fresh: true,
            from_start: false,
            lost: false,
            holding: false,
        }
    }

    /// Whether every byte this side sent so far was seen: only then is an
    /// answer to an id it never sent the peer's fault (else the request
    /// may be in what was not seen).
    fn seen_whole(&self) -> bool {
        self.from_start && !self.lost && !self.holding
    }
}

/// What kind of request awaits an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Call,
    Locate,
}

/// A request awaiting its answer.
#[derive(Debug)]
struct Waiting<T> {
    kind: Kind,
    sent: At,
    version: Version,
    tag: T,
}

/// Oneway ids remembered per connection (to name a reply to one); the
/// set starts over past this.
const ONEWAY_IDS_KEPT: usize = 4096;

/// One connection, observed. `T` is the [`Sink::Tag`] of the sink fed.
#[derive(Debug)]
pub struct Observer<T> {
    connection: u64,
    sides: [SideState; 2],
    client: Option<Side>,
    code_sets: ConnectionCodeSets,
    /// (side that sent it, request id) → the request awaiting its answer.
    pending: HashMap<(Side, u32), Waiting<T>>,
    max_pending: usize,
    /// Oneway request ids recently seen, to name a reply to one.
    oneway_ids: HashSet<(Side, u32)>,
    /// The framer's output, reused from call to call.
    framed: Vec<Framing>,
}

/// Framing figures of one side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FramingStats {
    /// Bytes skipped while looking for a message start, and bytes lost.
    pub skipped_bytes: u64,
    /// Times framing was lost and looked for again.
    pub resyncs: u64,
    /// Bytes buffered now (an incomplete message).
    pub buffered: usize,
}

impl<T> Observer<T> {
    /// An observer of the connection the caller numbers `connection`
    /// (handed back in every event).
    pub fn new(connection: u64, cfg: ObserverConfig) -> Self {
        Observer {
            connection,
            sides: [
                SideState::new(cfg.max_message),
                SideState::new(cfg.max_message),
            ],
            client: None,
            code_sets: ConnectionCodeSets::default(),
            pending: HashMap::new(),
            max_pending: cfg.max_pending,
            oneway_ids: HashSet::new(),
            framed: Vec::new(),
        }
    }

    /// `side`'s first byte is the connection's first (a capture saw its
    /// SYN): it is framed from its first byte, and an answer to an id it
    /// never sent is the peer's error. Said before its first bytes;
    /// ignored after them.
    pub fn from_start(&mut self, side: Side) {
        let s = &mut self.sides[side.index()];
        if s.fresh {
            s.from_start = true;
            s.framer.synced = true;
            s.framer.trusted = true;
        }
    }

    /// Whether bytes of `side` are held back before a hole (a capture's
    /// TCP reassembly holds segments that came out of order): until they
    /// come, an answer to an id it never sent may answer one in them.
    pub fn holding(&mut self, side: Side, held: bool) {
        self.sides[side.index()].holding = held;
    }

    /// `missing` bytes of `side` were not seen: framing looks for the
    /// next message start.
    pub fn gap(&mut self, side: Side, missing: u64) {
        let s = &mut self.sides[side.index()];
        s.lost = true;
        if s.fresh {
            // Nothing was framed yet: the side starts mid-stream.
            s.fresh = false;
            s.framer.synced = false;
            s.framer.trusted = false;
        } else {
            s.framer.gap(missing);
        }
    }

    /// The side that sent the first Request or LocateRequest.
    pub fn client(&self) -> Option<Side> {
        self.client
    }

    /// Requests awaiting an answer.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Hold at most `n` requests awaiting an answer from now on (a caller
    /// that observes many connections shares one bound among them).
    pub fn limit_pending(&mut self, n: usize) {
        self.max_pending = n;
    }

    /// Framing figures of `side`.
    pub fn framing(&self, side: Side) -> FramingStats {
        let f = &self.sides[side.index()].framer;
        FramingStats {
            skipped_bytes: f.skipped_bytes,
            resyncs: f.resyncs,
            buffered: f.buf.len(),
        }
    }

    /// Bytes buffered on both sides now.
    pub fn buffered(&self) -> usize {
        self.sides.iter().map(|s| s.framer.buf.len()).sum()
    }

    /// The next bytes `side` sent, seen `at`.
    pub fn data<S: Sink<Tag = T>>(&mut self, side: Side, bytes: &[u8], at: At, sink: &mut S) {
        let s = &mut self.sides[side.index()];
        s.fresh = false;
        let mut framed = std::mem::take(&mut self.framed);
        s.framer.data(bytes, at, &mut framed);
        for f in framed.drain(..) {
            match f {
                Framing::Message(m) => self.message(side, m, sink),
                Framing::Finding {
                    at,
                    rule,
                    detail,
                    bytes,
                } => self.finding(side, at, rule, detail, &bytes, sink),
            }
        }
        self.framed = framed;
    }

    /// The observation is over: every request still awaiting an answer
    /// comes back as [`Unanswered::Ended`]. (A message still incomplete
    /// stays counted in [`framing`](Self::framing)'s `buffered`.)
    pub fn end<S: Sink<Tag = T>>(&mut self, sink: &mut S) {
        for (_, w) in self.pending.drain() {
            sink.unanswered(w.tag, Unanswered::Ended);
        }
    }

    fn finding<S: Sink<Tag = T>>(
        &self,
        side: Side,
        at: At,
        rule: Rule,
        detail: String,
        bytes: &[u8],
        sink: &mut S,
    ) {
        sink.finding(Finding {
            connection: self.connection,
            side,
            client: self.client,
            at,
            rule,
            detail,
            bytes,
        });
    }

    fn message<S: Sink<Tag = T>>(&mut self, side: Side, m: Framed, sink: &mut S) {
        let h = m.frame.header;
        let seen = Seen {
            connection: self.connection,
            side,
            header: h,
            first: m.first,
            last: m.last,
            wire_len: m.wire_len,
            pieces: m.pieces,
        };
        sink.message(&seen);
        // The sender of a request is the client: set before any finding
        // on the request names the connection client first.
        if matches!(h.msg_type, MsgType::Request | MsgType::LocateRequest) {
            self.client.get_or_insert(side);
        }
        let head = m.head;
        let msg = match Message::decode_frame(m.frame, self.code_sets.options(h.version)) {
            Ok(msg) => msg,
            Err(e) => {
                return self.finding(side, seen.first, Rule::Decode, e.to_string(), &head, sink)
            }
        };
        match msg {
            Message::Request(req) => self.request(&seen, &head, req, sink),
            Message::Reply(rep) => self.reply(&seen, &head, rep, sink),
            Message::LocateRequest(lr) => {
                let tag = sink.locate_request(LocateRequestSeen {
                    seen: &seen,
                    request: &lr,
                    in_flight: self.pending.len(),
                });
                self.await_answer(&seen, &head, lr.request_id, Kind::Locate, tag, sink);
            }
            Message::LocateReply(lr) => self.locate_reply(&seen, &head, lr, sink),
            Message::CancelRequest { request_id } => sink.cancel(&seen, request_id),
            Message::CloseConnection => {
                sink.close_connection(&seen);
                if !h.version.is_12() && self.client == Some(side) {
                    self.finding(
                        side,
                        seen.first,
                        Rule::CloseFromClient,
                        format!(
                            "CloseConnection sent by the client side in GIOP {}: only servers may send it before 1.2",
                            h.version
                        ),
                        &head,
                        sink,
                    );
                }
            }
            Message::MessageError => {
                sink.message_error(&seen);
                self.finding(
                    side,
                    seen.first,
                    Rule::MessageError,
                    "the peer answered MessageError: it could not parse something sent to it"
                        .into(),
                    &head,
                    sink,
                );
            }
        }
    }

    fn request<S: Sink<Tag = T>>(&mut self, seen: &Seen, head: &Head, req: Request, sink: &mut S) {
        let side = seen.side;
        if let Some(ctx) = req.header.contexts.get(SC_CODE_SETS) {
            if req.version == Version::V1_0 {
                self.finding(
                    side,
                    seen.first,
                    Rule::CodesetIn10,
                    "CodeSets service context in a GIOP 1.0 request: code sets are not negotiated in 1.0".into(),
                    head,
                    sink,
                );
            }
            match CodeSetContext::decode(&ctx.data) {
                Ok(cs) => {
                    if let Err(kept) = self.code_sets.offer(cs) {
                        self.finding(
                            side,
                            seen.first,
                            Rule::CodesetChanged,
                            format!(
                                "CodeSets context changes the connection's code sets from char {:#010x} wchar {:#010x} to char {:#010x} wchar {:#010x}",
                                kept.char_data, kept.wchar_data, cs.char_data, cs.wchar_data
                            ),
                            head,
                            sink,
                        );
                    }
                }
                Err(e) => self.finding(
                    side,
                    seen.first,
                    Rule::CodesetContext,
                    e.to_string(),
                    head,
                    sink,
                ),
            }
        }
        if seen.header.version.is_12() && !req.body.is_empty() && !req.body.offset.is_multiple_of(8)
        {
            self.finding(
                side,
                seen.first,
                Rule::BodyAlignment,
                format!(
                    "GIOP 1.2 request body starts at offset {}, not 8-aligned",
                    req.body.offset
                ),
                head,
                sink,
            );
        }
        let id = req.header.request_id;
        let twoway = req.header.response.expects_reply();
        let tag = sink.request(RequestSeen {
            seen,
            request: &req,
            in_flight: self.pending.len(),
            code_sets: self.code_sets.get(),
        });
        if twoway {
            self.await_answer(seen, head, id, Kind::Call, tag, sink);
        } else {
            if self.oneway_ids.len() > ONEWAY_IDS_KEPT {
                self.oneway_ids.clear();
            }
            self.oneway_ids.insert((side, id));
        }
    }

    /// Request `id` (of `kind`, tagged `tag`) awaits its answer; an id
    /// reused while the first awaits its answer is a finding.
    fn await_answer<S: Sink<Tag = T>>(
        &mut self,
        seen: &Seen,
        head: &Head,
        id: u32,
        kind: Kind,
        tag: T,
        sink: &mut S,
    ) {
        if self.pending.len() >= self.max_pending {
            return sink.unanswered(tag, Unanswered::NoRoom);
        }
        let w = Waiting {
            kind,
            sent: seen.first,
            version: seen.header.version,
            tag,
        };
        if let Some(old) = self.pending.insert((seen.side, id), w) {
            self.finding(
                seen.side,
                seen.first,
                Rule::DuplicateRequestId,
                format!("request id {id} reused while a request with it awaits its reply"),
                head,
                sink,
            );
            sink.unanswered(old.tag, Unanswered::Replaced);
        }
    }

    /// The answer `seen` (a `what`) came for request `id`, a `kind` of
    /// version `asked`: a finding when its version differs (a client
    /// cannot be assumed to read another version's reply header; only
    /// MessageError and CloseConnection may be in another version).
    #[allow(clippy::too_many_arguments)]
    fn check_version<S: Sink<Tag = T>>(
        &self,
        seen: &Seen,
        head: &Head,
        what: &str,
        id: u32,
        kind: Kind,
        asked: Version,
        sink: &mut S,
    ) {
        let v = seen.header.version;
        if v != asked {
            let kind = match kind {
                Kind::Call => "Request",
                Kind::Locate => "LocateRequest",
            };
            self.finding(
                seen.side,
                seen.first,
                Rule::ReplyVersion,
                format!(
                    "{what} in GIOP {v} to request id {id}, a GIOP {asked} {kind}: the peer's error \
                     (an answer must be in its request's GIOP version)"
                ),
                head,
                sink,
            );
        }
    }

    fn reply<S: Sink<Tag = T>>(&mut self, seen: &Seen, head: &Head, rep: Reply, sink: &mut S) {
        let side = seen.side;
        let asker = side.other();
        let id = rep.header.request_id;
        let answers = match self.pending.remove(&(asker, id)) {
            Some(w) => {
                if w.kind == Kind::Locate {
                    self.finding(
                        side,
                        seen.first,
                        Rule::ReplyToLocate,
                        format!("Reply to request id {id}, which was a LocateRequest"),
                        head,
                        sink,
                    );
                }
                self.check_version(seen, head, "Reply", id, w.kind, w.version, sink);
                match w.kind {
                    Kind::Call => Answers::Request {
                        tag: w.tag,
                        sent: w.sent,
                        latency_ns: seen.last.ns.saturating_sub(w.sent.ns),
                    },
                    Kind::Locate => Answers::OtherKind(Some(w.tag)),
                }
            }
            None if self.oneway_ids.contains(&(asker, id)) => {
                self.finding(
                    side,
                    seen.first,
                    Rule::ReplyToOneway,
                    format!(
                        "Reply to request id {id}, which was sent oneway (no response expected)"
                    ),
                    head,
                    sink,
                );
                Answers::Unknown
            }
            None if self.sides[asker.index()].seen_whole() => {
                self.finding(
                    side,
                    seen.first,
                    Rule::ReplyUnknownId,
                    format!("Reply to request id {id}, which was never sent on this connection"),
                    head,
                    sink,
                );
                Answers::Unknown
            }
            None => Answers::Unseen,
        };
        if rep.version.is_12() && !rep.body.is_empty() && !rep.body.offset.is_multiple_of(8) {
            self.finding(
                side,
                seen.first,
                Rule::BodyAlignment,
                format!(
                    "GIOP 1.2 reply body starts at offset {}, not 8-aligned",
                    rep.body.offset
                ),
                head,
                sink,
            );
        }
        sink.reply(ReplySeen {
            seen,
            reply: &rep,
            answers,
        });
    }

    fn locate_reply<S: Sink<Tag = T>>(
        &mut self,
        seen: &Seen,
        head: &Head,
        lr: LocateReply,
        sink: &mut S,
    ) {
        let side = seen.side;
        let asker = side.other();
        let id = lr.request_id;
        let answers = match self.pending.get(&(asker, id)).map(|w| (w.kind, w.version)) {
            Some((Kind::Locate, version)) => {
                self.check_version(seen, head, "LocateReply", id, Kind::Locate, version, sink);
                let w = self.pending.remove(&(asker, id)).expect("just found");
                Answers::Request {
                    tag: w.tag,
                    sent: w.sent,
                    latency_ns: seen.last.ns.saturating_sub(w.sent.ns),
                }
            }
            // The call stays pending: its Reply may still come.
            Some((Kind::Call, version)) => {
                self.finding(
                    side,
                    seen.first,
                    Rule::LocateReplyToRequest,
                    format!("LocateReply to request id {id}, which was a Request"),
                    head,
                    sink,
                );
                self.check_version(seen, head, "LocateReply", id, Kind::Call, version, sink);
                Answers::OtherKind(None)
            }
            None if self.sides[asker.index()].seen_whole() => {
                self.finding(
                    side,
                    seen.first,
                    Rule::ReplyUnknownId,
                    format!("LocateReply to request id {id} that was never sent"),
                    head,
                    sink,
                );
                Answers::Unknown
            }
            None => Answers::Unseen,
        };
        sink.locate_reply(LocateReplySeen {
            seen,
            reply: &lr,
            answers,
        });
    }
}

#[cfg(test)]
mod tests;
