//! The passive analysis of a capture: packets in, each TCP connection
//! reassembled per direction ([`crate::reassembly`]) and its bytes fed to an
//! observer of the pure GIOP core ([`iiop_giop::conn::observer`]), which
//! frames the messages, pairs requests with their answers by connection
//! and request id, and makes the conformance findings. What it reports
//! is counted here — per operation and object key, per second, per message
//! type — and the findings are kept with their connection's addresses.
//! Nothing is paired here. Memory is bounded by the connections in
//! flight, the out-of-order limit per direction, the largest message, the
//! requests awaiting an answer and the findings kept ([`Config`]).

use std::borrow::Cow;
use std::collections::BTreeMap;

// Every packet looks its connection up, and every request its
// operation: SipHash was a fifth of the analysis. foldhash is seeded per
// map, so a capture crafted to collide in one run does not collide in the
// next.
use foldhash::{HashMap, HashMapExt};
use std::net::SocketAddr;

use hdrhistogram::Histogram;
use iiop_cdr::ByteOrder;
use iiop_giop::conn::observer::{
    self, Answers, At, LocateReplySeen, LocateRequestSeen, Observer, ObserverConfig, ReplySeen,
    RequestSeen, Seen, Side, Sink, Unanswered,
};
use iiop_giop::header::Version;
use iiop_giop::message::Reply;
use iiop_giop::ReplyStatus;

use crate::net::{self, Segment, Skip};
use crate::reassembly::{Delivery, Reassembler};

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

/// A sink that wants nothing but the summary.
#[derive(Debug, Default)]
pub struct NoSink;

impl Sink for NoSink {
    type Tag = ();
    fn request(&mut self, _: RequestSeen<'_>) {}
    fn locate_request(&mut self, _: LocateRequestSeen<'_>) {}
}

#[derive(Debug)]
struct Dir {
    tcp: Reassembler,
    fin: bool,
    /// When the last segment was seen, for data flushed at the end.
    last: At,
}

#[derive(Debug)]
struct Conn<T> {
    id: u64,
    /// `addrs[d]` sends direction `d` (the observer's side A is 0).
    addrs: [SocketAddr; 2],
    dirs: [Dir; 2],
    observer: Observer<T>,
    rst: bool,
}

/// A connection's two ends, the lower first (either direction's
/// segments find it).
type ConnKey = (SocketAddr, SocketAddr);

/// The observer's side that sends direction `d`.
fn side(d: usize) -> Side {
    if d == 0 {
        Side::A
    } else {
        Side::B
    }
}

/// What the analysis counts, apart from connections.
#[derive(Debug)]
struct Tally {
    cfg: Config,
    ops: Vec<OpStats>,
    /// Operation name → object key → index in `ops` (looked up by
    /// borrowed name and key: no allocation per message).
    op_index: HashMap<String, HashMap<Vec<u8>, usize>>,
    s: Summary,
}

/// The analysis state; feed it packets, then [`finish`](Self::finish).
/// A [`Sink`] of the caller's own (replay's) hears every observer event
/// too, with tags of its own.
#[derive(Debug)]
pub struct Analyzer<O: Sink = NoSink> {
    conns: HashMap<ConnKey, Conn<(usize, O::Tag)>>,
    next_conn: u64,
    /// Requests awaiting an answer over every connection (bounded by
    /// [`Config::max_pending`]).
    pending_total: usize,
    tally: Tally,
    sink: O,
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

impl Analyzer<NoSink> {
    /// An analyzer with these limits that only counts.
    pub fn new(cfg: Config) -> Self {
        Analyzer::with_sink(cfg, NoSink)
    }
}

impl<O: Sink> Analyzer<O> {
    /// An analyzer that also tells `sink` what the observers see.
    pub fn with_sink(cfg: Config, sink: O) -> Self {
        Analyzer {
            conns: HashMap::new(),
            next_conn: 0,
            pending_total: 0,
            tally: Tally {
                cfg,
                ops: Vec::new(),
                op_index: HashMap::new(),
                s: Summary::default(),
            },
            sink,
        }
    }

    /// Bytes held in reassembly and framing buffers now (for tests of
    /// bounded memory).
    pub fn buffered_bytes(&self) -> usize {
        self.conns
            .values()
            .map(|c| {
                c.dirs.iter().map(|d| d.tcp.held_bytes()).sum::<usize>() + c.observer.buffered()
            })
            .sum()
    }

    /// One captured frame.
    pub fn packet(&mut self, frame: u64, ts_ns: u64, linktype: i32, data: &[u8]) {
        let s = &mut self.tally.s;
        s.frames += 1;
        if s.first_ts_ns == 0 || ts_ns < s.first_ts_ns {
            s.first_ts_ns = ts_ns;
        }
        s.last_ts_ns = s.last_ts_ns.max(ts_ns);
        match net::parse(linktype, data) {
            Ok(seg) => {
                s.tcp_segments += 1;
                self.segment(At { ns: ts_ns, frame }, &seg);
            }
            Err(skip) => *s.skipped.entry(Skip::name(skip)).or_default() += 1,
        }
    }

    fn segment(&mut self, at: At, seg: &Segment<'_>) {
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
        let cfg = self.tally.cfg;
        let conn = self.conns.entry(key).or_insert_with(|| {
            self.next_conn += 1;
            self.tally.s.connections += 1;
            let mk = || Dir {
                tcp: Reassembler::new(cfg.out_of_order_limit),
                fin: false,
                last: At::default(),
            };
            Conn {
                id: self.next_conn,
                addrs: [seg.src, seg.dst],
                dirs: [mk(), mk()],
                observer: Observer::new(
                    self.next_conn,
                    ObserverConfig {
                        max_message: cfg.max_message,
                        max_pending: cfg.max_pending,
                    },
                ),
                rst: false,
            }
        });
        let d = if conn.addrs[0] == seg.src { 0 } else { 1 };
        if seg.rst {
            conn.rst = true;
        }
        let Conn {
            dirs,
            observer,
            addrs,
            ..
        } = conn;
        let dir = &mut dirs[d];
        if seg.fin {
            dir.fin = true;
        }
        dir.last = at;
        let side = side(d);
        // A direction whose SYN was seen is framed from its first byte.
        if seg.syn {
            observer.from_start(side);
        }
        // The pending bound is over every connection: this one may hold
        // what the others leave.
        let before = observer.pending();
        observer.limit_pending(before + cfg.max_pending.saturating_sub(self.pending_total));
        let mut sink = Counting {
            t: &mut self.tally,
            addrs: *addrs,
            user: &mut self.sink,
        };
        dir.tcp
            .segment(seg.seq, seg.syn, seg.payload, &mut |del| match del {
                Delivery::Data { bytes, .. } => observer.data(side, bytes, at, &mut sink),
                Delivery::Gap { missing } => observer.gap(side, missing),
            });
        observer.holding(side, dir.tcp.held_bytes() > 0);
        self.pending_total = self.pending_total + observer.pending() - before;
    }

    /// The connection ends (FIN and a new SYN, RST, or end of capture):
    /// what TCP still holds is delivered, holes skipped; what is still
    /// unanswered is counted so.
    fn close(&mut self, key: ConnKey) {
        let Some(c) = self.conns.get_mut(&key) else {
            return;
        };
        let Conn {
            dirs,
            observer,
            addrs,
            ..
        } = c;
        // What it holds leaves the bound over every connection; what the
        // flush adds is still within it.
        let held = observer.pending();
        let room = self
            .tally
            .cfg
            .max_pending
            .saturating_sub(self.pending_total);
        observer.limit_pending(held + room);
        self.pending_total -= held;
        let mut sink = Counting {
            t: &mut self.tally,
            addrs: *addrs,
            user: &mut self.sink,
        };
        for (d, dir) in dirs.iter_mut().enumerate() {
            let (side, at) = (side(d), dir.last);
            dir.tcp.flush(&mut |del| match del {
                Delivery::Data { bytes, .. } => observer.data(side, bytes, at, &mut sink),
                Delivery::Gap { missing } => observer.gap(side, missing),
            });
            observer.holding(side, false);
        }
        observer.end(&mut sink);
        let c = self.conns.remove(&key).expect("looked up above");
        let s = &mut self.tally.s;
        for (d, dir) in c.dirs.iter().enumerate() {
            s.retransmitted_bytes += dir.tcp.retransmitted_bytes;
            s.out_of_order_segments += dir.tcp.out_of_order_segments;
            s.gaps += dir.tcp.gaps;
            s.missing_bytes += dir.tcp.missing_bytes;
            let f = c.observer.framing(side(d));
            s.resyncs += f.resyncs;
            s.unframed_bytes += f.skipped_bytes + f.buffered as u64;
        }
        if !(c.dirs[0].tcp.from_start || c.dirs[1].tcp.from_start) {
            s.mid_stream_connections += 1;
        }
    }

    /// End of input: flush every connection; the summary, and the sink.
    pub fn finish(mut self) -> (Summary, O) {
        let mut keys: Vec<_> = self.conns.iter().map(|(k, c)| (c.id, *k)).collect();
        keys.sort();
        for (_, k) in keys {
            self.close(k);
        }
        let mut s = self.tally.s;
        s.ops = self.tally.ops;
        (s, self.sink)
    }
}

/// An observer's events, counted, then handed to the caller's sink.
struct Counting<'a, O> {
    t: &'a mut Tally,
    /// The connection's ends, to name it in findings.
    addrs: [SocketAddr; 2],
    user: &'a mut O,
}

/// The analysis's part of an answer and the caller's.
fn split<U>(a: Answers<(usize, U)>) -> (Answers<usize>, Answers<U>) {
    match a {
        Answers::Request {
            tag: (op, u),
            sent,
            latency_ns,
        } => (
            Answers::Request {
                tag: op,
                sent,
                latency_ns,
            },
            Answers::Request {
                tag: u,
                sent,
                latency_ns,
            },
        ),
        Answers::OtherKind(Some((op, u))) => {
            (Answers::OtherKind(Some(op)), Answers::OtherKind(Some(u)))
        }
        Answers::OtherKind(None) => (Answers::OtherKind(None), Answers::OtherKind(None)),
        Answers::Unseen => (Answers::Unseen, Answers::Unseen),
        Answers::Unknown => (Answers::Unknown, Answers::Unknown),
    }
}

impl<O: Sink> Sink for Counting<'_, O> {
    type Tag = (usize, O::Tag);

    fn message(&mut self, seen: &Seen) {
        let h = seen.header;
        let s = &mut self.t.s;
        bump(&mut s.messages, h.msg_type.name());
        bump(&mut s.versions, &version_order_name(h.version, h.order));
        if seen.pieces > 1 {
            s.fragmented_messages += 1;
            s.fragments += seen.pieces as u64 - 1;
        }
        s.giop_bytes += seen.wire_len;
        let sec = self.t.per_second(seen.last.ns);
        sec.messages += 1;
        sec.bytes += seen.wire_len;
        self.user.message(seen);
    }

    fn request(&mut self, ev: RequestSeen<'_>) -> Self::Tag {
        let req = ev.request;
        let key = req.header.target.object_key().unwrap_or_default();
        let i = self.t.op_slot(req.header.operation(), &key);
        let twoway = req.header.response.expects_reply();
        let body_len = req.body.bytes.len() as u64;
        self.t
            .count_sent(i, req.version, ev.seen.wire_len, body_len, twoway);
        self.t.per_second(ev.seen.first.ns).requests += 1;
        (i, self.user.request(ev))
    }

    fn locate_request(&mut self, ev: LocateRequestSeen<'_>) -> Self::Tag {
        self.t.s.locate_requests += 1;
        let located = ev.request.target.object_key().unwrap_or_default();
        let i = self.t.op_slot(LOCATE_OP, &located);
        self.t
            .count_sent(i, ev.seen.header.version, ev.seen.wire_len, 0, true);
        (i, self.user.locate_request(ev))
    }

    fn reply(&mut self, ev: ReplySeen<'_, Self::Tag>) {
        let (ours, theirs) = split(ev.answers);
        let rep = ev.reply;
        self.t.per_second(ev.seen.last.ns).replies += 1;
        match ours {
            Answers::Request {
                tag, latency_ns, ..
            } => {
                let status = rep.header.status.name();
                self.t
                    .count_answer(tag, latency_ns, ev.seen.wire_len, status);
                let st = &mut self.t.ops[tag];
                st.reply_body_bytes += rep.body.bytes.len() as u64;
                if let Some(x) = exception_name(rep) {
                    *st.exceptions.entry(x).or_default() += 1;
                }
            }
            Answers::Unseen => self.t.s.unmatched_replies += 1,
            Answers::OtherKind(_) | Answers::Unknown => {}
        }
        self.user.reply(ReplySeen {
            seen: ev.seen,
            reply: rep,
            answers: theirs,
        });
    }

    fn locate_reply(&mut self, ev: LocateReplySeen<'_, Self::Tag>) {
        let (ours, theirs) = split(ev.answers);
        let name = ev.reply.status.name();
        bump(&mut self.t.s.locate_replies, name);
        match ours {
            Answers::Request {
                tag, latency_ns, ..
            } => {
                self.t.count_answer(tag, latency_ns, ev.seen.wire_len, name);
            }
            Answers::Unseen => self.t.s.unmatched_replies += 1,
            Answers::OtherKind(_) | Answers::Unknown => {}
        }
        self.user.locate_reply(LocateReplySeen {
            seen: ev.seen,
            reply: ev.reply,
            answers: theirs,
        });
    }

    fn cancel(&mut self, seen: &Seen, request_id: u32) {
        self.t.s.cancel_requests += 1;
        self.user.cancel(seen, request_id);
    }

    fn close_connection(&mut self, seen: &Seen) {
        self.t.s.close_connections += 1;
        self.user.close_connection(seen);
    }

    fn message_error(&mut self, seen: &Seen) {
        self.t.s.message_errors += 1;
        self.user.message_error(seen);
    }

    fn unanswered(&mut self, (op, tag): Self::Tag, why: Unanswered) {
        // A request whose id was reused is not counted unanswered: the
        // answer that comes answers the later one, and which of the two
        // it was meant for nobody can tell.
        if why != Unanswered::Replaced {
            self.t.ops[op].unanswered += 1;
        }
        self.user.unanswered(tag, why);
    }

    /// Counted by rule; kept, with the connection named client first and
    /// a copy of the bytes, while fewer than `max_findings` are: findings
    /// are rare, messages are not.
    fn finding(&mut self, f: observer::Finding<'_>) {
        let rule = f.rule.name();
        let s = &mut self.t.s;
        *s.finding_counts.entry(rule).or_default() += 1;
        if s.findings.len() < self.t.cfg.max_findings {
            let c = f.client.map_or(0, Side::index);
            s.findings.push(Finding {
                frame: f.at.frame,
                connection: format!("{} -> {}", self.addrs[c], self.addrs[1 - c]),
                rule,
                detail: f.detail.clone(),
                bytes: f.bytes.to_vec(),
            });
        }
        self.user.finding(f);
    }
}

impl Tally {
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

    /// The answer (`wire_len` bytes, with this status) to what slot `op`
    /// sent arrived `ns` after it: counted and timed.
    fn count_answer(&mut self, op: usize, ns: u64, wire_len: u64, status: &str) {
        let st = &mut self.ops[op];
        st.replies += 1;
        st.reply_bytes += wire_len;
        st.latency.saturating_record(ns.clamp(1, MAX_LATENCY_NS));
        bump(&mut st.statuses, status);
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
