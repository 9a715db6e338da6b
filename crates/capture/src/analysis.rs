//! The passive observer: packets in, per-connection TCP reassembly and
//! GIOP framing, requests paired with replies by connection and request
//! id, and everything counted — per operation and object key, per second,
//! per message type — plus conformance findings with the frame number and
//! the bytes. Memory is bounded by the connections in flight, the
//! out-of-order limit per direction, the largest message, the pending
//! requests and the findings kept ([`Config`]).

use std::borrow::Cow;
use std::collections::BTreeMap;

// Every packet looks its connection up, and every message its pending
// requests and operation: SipHash was a fifth of the analysis. foldhash
// is seeded per map, so a capture crafted to collide in one run does not
// collide in the next.
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::net::SocketAddr;

use hdrhistogram::Histogram;
use iiop_cdr::{ByteOrder, Options};
use iiop_giop::context::{default_options, CodeSetContext};
use iiop_giop::header::{MsgType, Version};
use iiop_giop::message::{LocateReply, LocateRequest, LocateStatus, Reply, Request};
use iiop_giop::{Message, ReplyStatus};

use crate::net::{self, Segment, Skip};
use crate::stream::{Decoded, Event, GiopStream};
use crate::tcp::{Delivery, Reassembler};

/// Limits of an analysis.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Out-of-order bytes held per direction before a hole is skipped.
    pub out_of_order_limit: usize,
    /// Largest GIOP message (and reassembled message) accepted.
    pub max_message: usize,
    /// Findings kept with their bytes (all are counted).
    pub max_findings: usize,
    /// Requests awaiting a reply, over all connections.
    pub max_pending: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            out_of_order_limit: 8 << 20,
            max_message: 512 << 20,
            max_findings: 1000,
            max_pending: 1 << 20,
        }
    }
}

/// Highest latency recorded: one hour in nanoseconds (as the CLI's).
pub const MAX_LATENCY_NS: u64 = 3_600 * 1_000_000_000;

/// A new, empty latency histogram (ns, 3 significant digits).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("static bounds are valid")
}

/// Figures of one operation on one object key.
#[derive(Debug, Clone)]
pub struct OpStats {
    pub operation: String,
    /// The object key, printable (`%`-escaped bytes outside ASCII).
    pub object_key: String,
    /// GIOP versions seen (`1.0`, `1.2` …).
    pub versions: Vec<String>,
    /// Requests that expect a reply.
    pub calls: u64,
    pub oneways: u64,
    pub replies: u64,
    /// Twoway requests with no reply before the capture ended.
    pub unanswered: u64,
    /// GIOP bytes on the wire (headers included), requests / replies.
    pub request_bytes: u64,
    pub reply_bytes: u64,
    /// Body bytes (after the request / reply header).
    pub request_body_bytes: u64,
    pub reply_body_bytes: u64,
    /// Reply status name → count.
    pub statuses: BTreeMap<String, u64>,
    /// Exception repository id → count (system and user).
    pub exceptions: BTreeMap<String, u64>,
    /// Response time at the capture point: first byte of the request to
    /// last byte of the reply, nanoseconds.
    pub latency: Histogram<u64>,
}

/// One conformance finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub frame: u64,
    /// `client:port -> server:port` of the connection.
    pub connection: String,
    /// Short rule name (`reply-unknown-id`, `framing`, …).
    pub rule: &'static str,
    pub detail: String,
    /// The first bytes of the offending message.
    pub bytes: Vec<u8>,
}

/// Traffic in one second of capture time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Second {
    pub requests: u64,
    pub replies: u64,
    pub messages: u64,
    pub bytes: u64,
}

/// Everything an analysis found.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub frames: u64,
    pub tcp_segments: u64,
    /// Frames not analysed, by reason.
    pub skipped: BTreeMap<&'static str, u64>,
    pub connections: u64,
    /// Connections whose start (SYN) was not captured.
    pub mid_stream_connections: u64,
    pub retransmitted_bytes: u64,
    pub out_of_order_segments: u64,
    pub gaps: u64,
    pub missing_bytes: u64,
    pub resyncs: u64,
    /// Bytes of TCP payload not inside any decoded GIOP message.
    pub unframed_bytes: u64,
    /// GIOP messages by type (`Request`, `Fragment` pieces are not counted
    /// here but in `fragments`).
    pub messages: BTreeMap<String, u64>,
    pub fragmented_messages: u64,
    pub fragments: u64,
    pub giop_bytes: u64,
    /// By byte order and version, e.g. `1.2 big` → count.
    pub versions: BTreeMap<String, u64>,
    pub locate_requests: u64,
    pub locate_replies: BTreeMap<String, u64>,
    pub cancel_requests: u64,
    pub close_connections: u64,
    pub message_errors: u64,
    /// Replies whose request was not captured (connection seen mid-way).
    pub unmatched_replies: u64,
    pub ops: Vec<OpStats>,
    /// Requests + replies per second from the first frame.
    pub seconds: Vec<Second>,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    pub findings: Vec<Finding>,
    /// Findings by rule, all of them (also those not kept).
    pub finding_counts: BTreeMap<&'static str, u64>,
}

impl Summary {
    /// Capture time span in seconds.
    pub fn duration_s(&self) -> f64 {
        self.last_ts_ns.saturating_sub(self.first_ts_ns) as f64 / 1e9
    }
}

/// A request as it was decoded, for observers (replay).
#[derive(Debug)]
pub struct RequestEvent<'a> {
    pub connection: u64,
    pub frame: u64,
    /// Capture time of its first byte.
    pub ts_ns: u64,
    pub request: &'a Request,
}

/// A reply as it was decoded, for observers (replay).
#[derive(Debug)]
pub struct ReplyEvent<'a> {
    pub connection: u64,
    pub frame: u64,
    /// Capture time of its last byte.
    pub ts_ns: u64,
    pub reply: &'a Reply,
    /// Response time at the capture point, when its request was seen.
    pub latency_ns: Option<u64>,
}

/// A LocateRequest as it was decoded, for observers (replay re-sends
/// it).
#[derive(Debug)]
pub struct LocateRequestEvent<'a> {
    pub connection: u64,
    pub frame: u64,
    /// Capture time of its first byte.
    pub ts_ns: u64,
    pub version: Version,
    pub order: ByteOrder,
    pub request: &'a LocateRequest,
}

/// A LocateReply as it was decoded, for observers (replay compares it).
#[derive(Debug)]
pub struct LocateReplyEvent<'a> {
    pub connection: u64,
    pub frame: u64,
    /// Capture time of its last byte.
    pub ts_ns: u64,
    pub reply: &'a LocateReply,
    /// Response time at the capture point, when its LocateRequest was
    /// seen.
    pub latency_ns: Option<u64>,
}

/// Told about decoded requests and replies in capture order.
pub trait Observer {
    fn request(&mut self, _ev: &RequestEvent<'_>) {}
    fn reply(&mut self, _ev: &ReplyEvent<'_>) {}
    fn locate_request(&mut self, _ev: &LocateRequestEvent<'_>) {}
    fn locate_reply(&mut self, _ev: &LocateReplyEvent<'_>) {}
    /// The connection ended (FIN, RST, or end of capture).
    fn closed(&mut self, _connection: u64) {}
}

/// An observer that does nothing.
#[derive(Debug, Default)]
pub struct NoObserver;
impl Observer for NoObserver {}

#[derive(Debug)]
struct Dir {
    tcp: Reassembler,
    giop: Option<GiopStream>,
    fin: bool,
    /// Frame and time of the last segment, for data flushed at the end.
    last: (u64, u64),
}

impl Dir {
    /// Whether every byte this direction sent was seen and delivered: only
    /// then is an answer to an id it never sent the peer's fault (else
    /// the request may be in what the capture missed).
    fn saw_everything(&self) -> bool {
        self.tcp.from_start && self.tcp.gaps == 0 && self.tcp.held_bytes() == 0
    }
}

/// What awaits an answer: the operation slot its figures go to and when
/// it was sent.
#[derive(Debug, Clone, Copy)]
enum PendingKind {
    Call {
        op: usize,
        ts: u64,
        /// The request's GIOP version, which its reply must have.
        version: Version,
    },
    /// A LocateRequest (its slot is [`LOCATE_OP`] on the key located).
    Locate {
        op: usize,
        ts: u64,
        version: Version,
    },
}

#[derive(Debug)]
struct Conn {
    id: u64,
    /// `addrs[d]` sends direction `d`.
    addrs: [SocketAddr; 2],
    dirs: [Dir; 2],
    /// Direction that sent the first Request/LocateRequest.
    client: Option<usize>,
    code_sets: Option<CodeSetContext>,
    /// (direction of the request, request id) → what it was.
    pending: HashMap<(usize, u32), PendingKind>,
    /// Oneway request ids recently seen, to name a reply to one.
    oneway_ids: HashSet<(usize, u32)>,
    rst: bool,
}

/// A connection's two ends, the lower first (either direction's
/// segments find it).
type ConnKey = (SocketAddr, SocketAddr);

impl Conn {
    fn label(&self) -> String {
        let c = self.client.unwrap_or(0);
        format!("{} -> {}", self.addrs[c], self.addrs[1 - c])
    }
}

/// The analysis state; feed it packets, then [`finish`](Self::finish).
#[derive(Debug)]
pub struct Analyzer<O: Observer = NoObserver> {
    cfg: Config,
    conns: HashMap<ConnKey, Conn>,
    next_conn: u64,
    ops: Vec<OpStats>,
    /// Operation name → object key → index in `ops` (looked up by
    /// borrowed name and key: no allocation per message).
    op_index: HashMap<String, HashMap<Vec<u8>, usize>>,
    pending_total: usize,
    s: Summary,
    events: Vec<Event>,
    pub observer: O,
}

/// An object key, printable: ASCII graphic bytes as they are, every other
/// byte (and `%`) `%`-escaped.
pub fn key_text(k: &[u8]) -> String {
    let mut s = String::new();
    for &b in k {
        if b.is_ascii_graphic() && b != b'%' {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02x}"));
        }
    }
    s
}

/// The operation name LocateRequests are counted under, per object key
/// (no IDL operation can have it: IDL identifiers have no parentheses).
pub const LOCATE_OP: &str = "(LocateRequest)";

/// A LocateReply status as GIOP names it.
pub fn locate_status_name(s: &LocateStatus) -> &'static str {
    match s {
        LocateStatus::UnknownObject => "UNKNOWN_OBJECT",
        LocateStatus::ObjectHere => "OBJECT_HERE",
        LocateStatus::ObjectForward(_) => "OBJECT_FORWARD",
        LocateStatus::ObjectForwardPerm(_) => "OBJECT_FORWARD_PERM",
        LocateStatus::SystemException(_) => "LOC_SYSTEM_EXCEPTION",
        LocateStatus::NeedsAddressingMode(_) => "LOC_NEEDS_ADDRESSING_MODE",
    }
}

fn status_name(s: ReplyStatus) -> &'static str {
    match s {
        ReplyStatus::NoException => "NO_EXCEPTION",
        ReplyStatus::UserException => "USER_EXCEPTION",
        ReplyStatus::SystemException => "SYSTEM_EXCEPTION",
        ReplyStatus::LocationForward => "LOCATION_FORWARD",
        ReplyStatus::LocationForwardPerm => "LOCATION_FORWARD_PERM",
        ReplyStatus::NeedsAddressingMode => "NEEDS_ADDRESSING_MODE",
    }
}

/// Count one more `k` in `map`, allocating the key only the first time.
fn bump(map: &mut BTreeMap<String, u64>, k: &str) {
    match map.get_mut(k) {
        Some(n) => *n += 1,
        None => {
            map.insert(k.to_owned(), 1);
        }
    }
}

/// A GIOP version as `OpStats::versions` names it (`1.2`).
fn version_name(v: Version) -> Cow<'static, str> {
    match (v.major, v.minor) {
        (1, 0) => "1.0".into(),
        (1, 1) => "1.1".into(),
        (1, 2) => "1.2".into(),
        _ => v.to_string().into(),
    }
}

/// A version and byte order as `Summary::versions` names them
/// (`1.2 big`).
fn version_order_name(v: Version, order: ByteOrder) -> Cow<'static, str> {
    let big = order == ByteOrder::Big;
    match (v.major, v.minor, big) {
        (1, 0, true) => "1.0 big".into(),
        (1, 0, false) => "1.0 little".into(),
        (1, 1, true) => "1.1 big".into(),
        (1, 1, false) => "1.1 little".into(),
        (1, 2, true) => "1.2 big".into(),
        (1, 2, false) => "1.2 little".into(),
        _ => format!("{v} {}", if big { "big" } else { "little" }).into(),
    }
}

impl Analyzer<NoObserver> {
    /// An analyzer with these limits and no observer.
    pub fn new(cfg: Config) -> Self {
        Analyzer::with_observer(cfg, NoObserver)
    }
}

impl<O: Observer> Analyzer<O> {
    /// An analyzer that tells `observer` about requests and replies.
    pub fn with_observer(cfg: Config, observer: O) -> Self {
        Analyzer {
            cfg,
            conns: HashMap::new(),
            next_conn: 0,
            ops: Vec::new(),
            op_index: HashMap::new(),
            pending_total: 0,
            s: Summary::default(),
            events: Vec::new(),
            observer,
        }
    }

    /// Bytes held in reassembly and framing buffers now (for tests of
    /// bounded memory).
    pub fn buffered_bytes(&self) -> usize {
        self.conns
            .values()
            .flat_map(|c| c.dirs.iter())
            .map(|d| d.tcp.held_bytes() + d.giop.as_ref().map_or(0, |g| g.buffered()))
            .sum()
    }

    /// One captured frame.
    pub fn packet(&mut self, frame: u64, ts_ns: u64, linktype: i32, data: &[u8]) {
        self.s.frames += 1;
        if self.s.first_ts_ns == 0 || ts_ns < self.s.first_ts_ns {
            self.s.first_ts_ns = ts_ns;
        }
        self.s.last_ts_ns = self.s.last_ts_ns.max(ts_ns);
        match net::parse(linktype, data) {
            Ok(seg) => {
                self.s.tcp_segments += 1;
                self.segment(frame, ts_ns, &seg);
            }
            Err(skip) => *self.s.skipped.entry(Skip::name(skip)).or_default() += 1,
        }
    }

    fn segment(&mut self, frame: u64, ts: u64, seg: &Segment<'_>) {
        let key = if seg.src <= seg.dst {
            (seg.src, seg.dst)
        } else {
            (seg.dst, seg.src)
        };
        // A new connection on the same ports after the old one ended.
        let reused = seg.syn
            && self
                .conns
                .get(&key)
                .is_some_and(|c| c.rst || (c.dirs[0].fin && c.dirs[1].fin));
        if reused {
            self.close(key);
        }
        let max_message = self.cfg.max_message;
        let conn = self.conns.entry(key).or_insert_with(|| {
            self.next_conn += 1;
            self.s.connections += 1;
            let mk = || Dir {
                tcp: Reassembler::new(self.cfg.out_of_order_limit),
                giop: None,
                fin: false,
                last: (0, 0),
            };
            Conn {
                id: self.next_conn,
                addrs: [seg.src, seg.dst],
                dirs: [mk(), mk()],
                client: None,
                code_sets: None,
                pending: HashMap::new(),
                oneway_ids: HashSet::new(),
                rst: false,
            }
        });
        let d = if conn.addrs[0] == seg.src { 0 } else { 1 };
        if seg.rst {
            conn.rst = true;
        }
        let Dir {
            tcp,
            giop,
            fin,
            last,
        } = &mut conn.dirs[d];
        if seg.fin {
            *fin = true;
        }
        *last = (frame, ts);
        // Framed from its first byte only when the SYN was seen and the
        // data starts right after it; otherwise GiopStream resynchronises.
        let started = tcp.from_start || seg.syn;
        let events = &mut self.events;
        tcp.segment(seg.seq, seg.syn, seg.payload, &mut |del| match del {
            Delivery::Data { pos, bytes } => {
                let g =
                    giop.get_or_insert_with(|| GiopStream::new(started && pos == 0, max_message));
                g.data(pos, bytes, frame, ts, events);
            }
            Delivery::Gap { missing } => {
                if let Some(g) = giop.as_mut() {
                    g.gap(missing);
                }
            }
        });
        self.drain_events(&key, d);
    }

    fn drain_events(&mut self, key: &ConnKey, d: usize) {
        let events = std::mem::take(&mut self.events);
        for ev in events {
            match ev {
                Event::Message(m) => self.message(key, d, m),
                Event::Finding {
                    frame,
                    rule,
                    detail,
                    bytes,
                } => self.finding(key, frame, rule, detail, &bytes),
            }
        }
    }

    /// A finding on `key`'s connection. Its label and its copy of the
    /// bytes are made only when it is kept: findings are rare, messages
    /// are not.
    fn finding(
        &mut self,
        key: &ConnKey,
        frame: u64,
        rule: &'static str,
        detail: String,
        bytes: &[u8],
    ) {
        *self.s.finding_counts.entry(rule).or_default() += 1;
        if self.s.findings.len() < self.cfg.max_findings {
            let connection = self.conns.get(key).map(Conn::label).unwrap_or_default();
            self.s.findings.push(Finding {
                frame,
                connection,
                rule,
                detail,
                bytes: bytes.to_vec(),
            });
        }
    }

    /// A request (twoway or not) or a LocateRequest (twoway, no body) sent
    /// to the operation slot `i`.
    fn count_sent(
        &mut self,
        i: usize,
        version: Version,
        wire_len: u64,
        body_len: u64,
        twoway: bool,
    ) {
        let st = &mut self.ops[i];
        let v = version_name(version);
        if !st.versions.iter().any(|x| *x == *v) {
            st.versions.push(v.into_owned());
        }
        st.request_bytes += wire_len;
        st.request_body_bytes += body_len;
        if twoway {
            st.calls += 1;
        } else {
            st.oneways += 1;
        }
    }

    /// `id`, sent in direction `d` of `key`'s connection, awaits its
    /// answer. Bounded: past `max_pending` (the oldest are not known
    /// cheaply) it counts as unanswered rather than grow; an id reused
    /// while the first awaits its answer is a finding.
    fn await_answer(&mut self, key: &ConnKey, d: usize, id: u32, what: PendingKind, m: &Decoded) {
        let conn = self.conns.get_mut(key).expect("live");
        let (PendingKind::Call { op, .. } | PendingKind::Locate { op, .. }) = what;
        if self.pending_total >= self.cfg.max_pending {
            self.ops[op].unanswered += 1;
        } else if conn.pending.insert((d, id), what).is_some() {
            self.finding(
                key,
                m.first_frame,
                "duplicate-request-id",
                format!("request id {id} reused while a request with it awaits its reply"),
                &m.head,
            );
        } else {
            self.pending_total += 1;
        }
    }

    /// The answer (`m`, with this status) to what slot `op` sent at `ts`
    /// arrived: counted and timed. Returns the response time.
    fn count_answer(&mut self, op: usize, ts: u64, m: &Decoded, status: &str) -> u64 {
        let ns = m.last_ts.saturating_sub(ts);
        let st = &mut self.ops[op];
        st.replies += 1;
        st.reply_bytes += m.wire_len;
        st.latency.saturating_record(ns.clamp(1, MAX_LATENCY_NS));
        bump(&mut st.statuses, status);
        ns
    }

    fn op_slot(&mut self, op: &str, key: &[u8]) -> usize {
        if let Some(&i) = self.op_index.get(op).and_then(|keys| keys.get(key)) {
            return i;
        }
        let i = self.ops.len();
        self.ops.push(OpStats {
            operation: op.to_string(),
            object_key: key_text(key),
            versions: Vec::new(),
            calls: 0,
            oneways: 0,
            replies: 0,
            unanswered: 0,
            request_bytes: 0,
            reply_bytes: 0,
            request_body_bytes: 0,
            reply_body_bytes: 0,
            statuses: BTreeMap::new(),
            exceptions: BTreeMap::new(),
            latency: new_histogram(),
        });
        self.op_index
            .entry(op.to_string())
            .or_default()
            .insert(key.to_vec(), i);
        i
    }

    fn per_second(&mut self, ts: u64) -> &mut Second {
        let i = (ts.saturating_sub(self.s.first_ts_ns) / 1_000_000_000) as usize;
        if i >= self.s.seconds.len() {
            self.s.seconds.resize(i + 1, Second::default());
        }
        &mut self.s.seconds[i]
    }

    fn message(&mut self, key: &ConnKey, d: usize, m: Decoded) {
        let h = m.frame.header;
        bump(&mut self.s.messages, h.msg_type.name());
        bump(
            &mut self.s.versions,
            &version_order_name(h.version, h.order),
        );
        if m.pieces > 1 {
            self.s.fragmented_messages += 1;
            self.s.fragments += m.pieces as u64 - 1;
        }
        self.s.giop_bytes += m.wire_len;
        {
            let sec = self.per_second(m.last_ts);
            sec.messages += 1;
            sec.bytes += m.wire_len;
        }
        let conn = self
            .conns
            .get_mut(key)
            .expect("message of a live connection");
        // The sender of a request is the client: set before any finding
        // on the request names the connection client first.
        if matches!(h.msg_type, MsgType::Request | MsgType::LocateRequest) {
            conn.client.get_or_insert(d);
        }
        let connection = conn.id;
        let opts: Options = match conn.code_sets {
            Some(cs) if h.version.minor >= 1 => cs.options(h.version),
            _ => default_options(h.version),
        };
        let msg = match Message::decode_frame(m.frame.clone(), opts) {
            Ok(msg) => msg,
            Err(e) => {
                self.finding(key, m.first_frame, "decode", e.to_string(), &m.head);
                return;
            }
        };
        match msg {
            Message::Request(req) => self.request(key, d, connection, &m, req),
            Message::Reply(rep) => self.reply(key, d, connection, &m, rep),
            Message::LocateRequest(lr) => {
                self.s.locate_requests += 1;
                let located = lr.target.object_key().unwrap_or_default();
                let i = self.op_slot(LOCATE_OP, &located);
                self.count_sent(i, h.version, m.wire_len, 0, true);
                let ts = m.first_ts;
                let what = PendingKind::Locate {
                    op: i,
                    ts,
                    version: h.version,
                };
                self.await_answer(key, d, lr.request_id, what, &m);
                self.observer.locate_request(&LocateRequestEvent {
                    connection,
                    frame: m.first_frame,
                    ts_ns: m.first_ts,
                    version: h.version,
                    order: h.order,
                    request: &lr,
                });
            }
            Message::LocateReply(lr) => {
                let name = locate_status_name(&lr.status);
                bump(&mut self.s.locate_replies, name);
                let conn = self.conns.get_mut(key).expect("live");
                let from_start = conn.dirs[1 - d].saw_everything();
                let mut latency_ns = None;
                match conn.pending.get(&(1 - d, lr.request_id)).copied() {
                    Some(PendingKind::Locate { op, ts, version }) => {
                        conn.pending.remove(&(1 - d, lr.request_id));
                        self.pending_total -= 1;
                        latency_ns = Some(self.count_answer(op, ts, &m, name));
                        self.answer_version(key, &m, lr.request_id, version);
                    }
                    // The call stays pending: its Reply may still come.
                    Some(PendingKind::Call { .. }) => self.finding(
                        key,
                        m.first_frame,
                        "locate-reply-to-request",
                        format!(
                            "LocateReply to request id {}, which was a Request",
                            lr.request_id
                        ),
                        &m.head,
                    ),
                    None if from_start => self.finding(
                        key,
                        m.first_frame,
                        "reply-unknown-id",
                        format!(
                            "LocateReply to request id {} that was never sent",
                            lr.request_id
                        ),
                        &m.head,
                    ),
                    None => self.s.unmatched_replies += 1,
                }
                self.observer.locate_reply(&LocateReplyEvent {
                    connection,
                    frame: m.last_frame,
                    ts_ns: m.last_ts,
                    reply: &lr,
                    latency_ns,
                });
            }
            Message::CancelRequest { .. } => self.s.cancel_requests += 1,
            Message::CloseConnection => {
                self.s.close_connections += 1;
                let conn = self.conns.get(key).expect("live");
                if !h.version.is_12() && conn.client == Some(d) {
                    self.finding(
                        key,
                        m.first_frame,
                        "close-from-client",
                        format!("CloseConnection sent by the client side in GIOP {}: only servers may send it before 1.2", h.version),
                        &m.head,
                    );
                }
            }
            Message::MessageError => {
                self.s.message_errors += 1;
                self.finding(
                    key,
                    m.first_frame,
                    "message-error",
                    "the peer answered MessageError: it could not parse something sent to it"
                        .into(),
                    &m.head,
                );
            }
        }
    }

    fn request(&mut self, key: &ConnKey, d: usize, connection: u64, m: &Decoded, req: Request) {
        let h = m.frame.header;
        let obj_key = req.header.target.object_key().unwrap_or_default();
        let i = self.op_slot(req.header.operation(), &obj_key);
        let body_len = req.body.bytes.len() as u64;
        let twoway = req.header.response.expects_reply();
        self.count_sent(i, req.version, m.wire_len, body_len, twoway);
        self.per_second(m.first_ts).requests += 1;
        // Code set rules.
        if let Some(ctx) = req.header.contexts.get(1) {
            if req.version == Version::V1_0 {
                self.finding(
                    key,
                    m.first_frame,
                    "codeset-in-1.0",
                    "CodeSets service context in a GIOP 1.0 request: code sets are not negotiated in 1.0".into(),
                    &m.head,
                );
            }
            match CodeSetContext::decode(&ctx.data) {
                Ok(cs) => {
                    let conn = self.conns.get_mut(key).expect("live");
                    match conn.code_sets {
                        Some(prev) if prev != cs => self.finding(
                            key,
                            m.first_frame,
                            "codeset-changed",
                            format!(
                                "CodeSets context changes the connection's code sets from char {:#010x} wchar {:#010x} to char {:#010x} wchar {:#010x}",
                                prev.char_data, prev.wchar_data, cs.char_data, cs.wchar_data
                            ),
                            &m.head,
                        ),
                        _ => conn.code_sets = Some(cs),
                    }
                }
                Err(e) => self.finding(
                    key,
                    m.first_frame,
                    "codeset-context",
                    e.to_string(),
                    &m.head,
                ),
            }
        }
        if h.version.is_12() && !req.body.is_empty() && !req.body.offset.is_multiple_of(8) {
            self.finding(
                key,
                m.first_frame,
                "body-alignment",
                format!(
                    "GIOP 1.2 request body starts at offset {}, not 8-aligned",
                    req.body.offset
                ),
                &m.head,
            );
        }
        let id = req.header.request_id;
        if twoway {
            let ts = m.first_ts;
            let what = PendingKind::Call {
                op: i,
                ts,
                version: req.version,
            };
            self.await_answer(key, d, id, what, m);
        } else {
            let conn = self.conns.get_mut(key).expect("live");
            if conn.oneway_ids.len() > 4096 {
                conn.oneway_ids.clear();
            }
            conn.oneway_ids.insert((d, id));
        }
        self.observer.request(&RequestEvent {
            connection,
            frame: m.first_frame,
            ts_ns: m.first_ts,
            request: &req,
        });
    }

    fn reply(&mut self, key: &ConnKey, d: usize, connection: u64, m: &Decoded, rep: Reply) {
        self.per_second(m.last_ts).replies += 1;
        let conn = self.conns.get_mut(key).expect("live");
        let id = rep.header.request_id;
        let from_start = conn.dirs[1 - d].saw_everything();
        let to_oneway = conn.oneway_ids.contains(&(1 - d, id));
        let mut latency = None;
        match conn.pending.remove(&(1 - d, id)) {
            Some(PendingKind::Call { op, ts, version }) => {
                self.pending_total -= 1;
                latency = Some(self.count_answer(op, ts, m, status_name(rep.header.status)));
                let st = &mut self.ops[op];
                st.reply_body_bytes += rep.body.bytes.len() as u64;
                if let Some(x) = exception_name(&rep) {
                    *st.exceptions.entry(x).or_default() += 1;
                }
                self.answer_version(key, m, id, version);
            }
            Some(PendingKind::Locate { .. }) => {
                self.pending_total -= 1;
                self.finding(
                    key,
                    m.first_frame,
                    "reply-to-locate",
                    format!("Reply to request id {id}, which was a LocateRequest"),
                    &m.head,
                );
            }
            None if to_oneway => self.finding(
                key,
                m.first_frame,
                "reply-to-oneway",
                format!("Reply to request id {id}, which was sent oneway (no response expected)"),
                &m.head,
            ),
            None if from_start => self.finding(
                key,
                m.first_frame,
                "reply-unknown-id",
                format!("Reply to request id {id}, which was never sent on this connection"),
                &m.head,
            ),
            None => self.s.unmatched_replies += 1,
        }
        if rep.version.is_12() && !rep.body.is_empty() && !rep.body.offset.is_multiple_of(8) {
            self.finding(
                key,
                m.first_frame,
                "body-alignment",
                format!(
                    "GIOP 1.2 reply body starts at offset {}, not 8-aligned",
                    rep.body.offset
                ),
                &m.head,
            );
        }
        self.observer.reply(&ReplyEvent {
            connection,
            frame: m.last_frame,
            ts_ns: m.last_ts,
            reply: &rep,
            latency_ns: latency,
        });
    }

    /// The answer `m` to request `id`, a request in GIOP `asked`, must
    /// be in that version (a 1.0 or 1.1 client cannot read a 1.2 reply
    /// header, nor a 1.2 client a 1.0 one): else a finding against the
    /// peer that answered.
    fn answer_version(&mut self, key: &ConnKey, m: &Decoded, id: u32, asked: Version) {
        let h = m.frame.header;
        if h.version == asked {
            return;
        }
        self.finding(
            key,
            m.first_frame,
            "reply-version",
            format!(
                "{} in GIOP {} to request id {id}, a GIOP {asked} {}: the peer's error \
                 (an answer must be in its request's GIOP version)",
                h.msg_type.name(),
                h.version,
                h.msg_type.answers().map_or("request", MsgType::name)
            ),
            &m.head,
        );
    }

    fn close(&mut self, key: ConnKey) {
        for d in 0..2 {
            let Some(c) = self.conns.get_mut(&key) else {
                return;
            };
            let Dir {
                tcp, giop, last, ..
            } = &mut c.dirs[d];
            let (frame, ts) = *last;
            let events = &mut self.events;
            tcp.flush(&mut |del| match del {
                Delivery::Data { pos, bytes } => {
                    if let Some(g) = giop.as_mut() {
                        g.data(pos, bytes, frame, ts, events);
                    }
                }
                Delivery::Gap { missing } => {
                    if let Some(g) = giop.as_mut() {
                        g.gap(missing)
                    }
                }
            });
            self.drain_events(&key, d);
        }
        let Some(c) = self.conns.remove(&key) else {
            return;
        };
        for dir in &c.dirs {
            self.s.retransmitted_bytes += dir.tcp.retransmitted_bytes;
            self.s.out_of_order_segments += dir.tcp.out_of_order_segments;
            self.s.gaps += dir.tcp.gaps;
            self.s.missing_bytes += dir.tcp.missing_bytes;
            if let Some(g) = &dir.giop {
                self.s.resyncs += g.resyncs;
                self.s.unframed_bytes += g.skipped_bytes + g.buffered() as u64;
            }
        }
        if !(c.dirs[0].tcp.from_start || c.dirs[1].tcp.from_start) {
            self.s.mid_stream_connections += 1;
        }
        for p in c.pending.values() {
            let (PendingKind::Call { op, .. } | PendingKind::Locate { op, .. }) = p;
            self.ops[*op].unanswered += 1;
        }
        self.pending_total -= c.pending.len();
        self.observer.closed(c.id);
    }

    /// End of input: flush every connection and return the summary.
    pub fn finish(mut self) -> (Summary, O) {
        let mut keys: Vec<_> = self.conns.iter().map(|(k, c)| (c.id, *k)).collect();
        keys.sort();
        for (_, k) in keys {
            self.close(k);
        }
        self.s.ops = std::mem::take(&mut self.ops);
        (self.s, self.observer)
    }
}

/// The repository id of the exception a reply carries (`None` for other
/// statuses); an undecodable one is named as such.
pub fn exception_name(rep: &Reply) -> Option<String> {
    match rep.header.status {
        ReplyStatus::SystemException => Some(
            rep.system_exception()
                .map(|e| e.repo_id.to_string())
                .unwrap_or_else(|e| format!("(undecodable system exception: {e})")),
        ),
        ReplyStatus::UserException => Some(
            rep.user_exception_id()
                .unwrap_or_else(|e| format!("(undecodable user exception: {e})")),
        ),
        _ => None,
    }
}
