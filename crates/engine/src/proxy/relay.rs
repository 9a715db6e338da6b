//! One client connection through the proxy, as a pure state machine (no
//! sockets, no clock): bytes from either side go in with `now`
//! ([`Relay::input`]); the writes to make come out one at a time
//! ([`Relay::poll_transmit`]), with the next instant something is due
//! ([`Relay::next_deadline`], then [`Relay::timeout`]). The driver calls
//! them in that order and closes both sockets when [`Relay::is_done`].
//!
//! Each direction is framed into GIOP messages (every piece of a
//! fragmented message held until the message is whole), counted from 1
//! over both directions, edited ([`super::rewrite`]), cut, corrupted,
//! duplicated, delayed or reordered as the [`Faults`] say, and queued for
//! the other side. A message the proxy does not change goes on as the
//! pieces it came in; bytes that do not frame as GIOP go on untouched
//! (the direction is then passed through as a byte stream).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use iiop_cdr::ByteOrder;
use iiop_giop::codec::{CodecConfig, Decoder, Frame};
use iiop_giop::context::default_options;
use iiop_giop::header::{Header, MsgType, Version, HEADER_LEN};
use iiop_giop::message::encode_empty;
use iiop_giop::Message;
use serde::Serialize;

use super::fault::Faults;
use super::rewrite::{edit, fragment, fragmentable, EditWanted, Endpoints};

/// How long `close-after` waits for the replies a client is owed before
/// it sends CloseConnection anyway.
pub const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// One end of a relayed connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    Client,
    Server,
}

impl Side {
    /// The other end.
    pub fn other(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }

    fn idx(self) -> usize {
        self as usize
    }
}

/// One write to make: `bytes` to side `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    pub to: Side,
    pub bytes: Bytes,
}

/// What every relay of a proxy shares.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    pub faults: Faults,
    /// Operations whose result is one object reference, rewritten to
    /// point at the proxy ([`super::rewrite::BENCH_REFERENCE_OPS`], plus
    /// those an IDL file names).
    pub reference_ops: Arc<BTreeSet<String>>,
    /// Largest GIOP message (one piece, and one reassembled) framed;
    /// beyond it the direction is passed through as bytes.
    pub max_message: usize,
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig {
            faults: Faults::default(),
            reference_ops: Arc::new(
                super::rewrite::BENCH_REFERENCE_OPS
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            ),
            max_message: 512 << 20,
        }
    }
}

/// What relays did: one connection's, or a proxy's sum.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RelayStats {
    pub connections: u64,
    /// Whole GIOP messages received (either direction).
    pub messages: u64,
    pub bytes_from_client: u64,
    pub bytes_from_server: u64,
    /// Writes made (each dribbled piece one).
    pub writes: u64,
    /// Messages sent in Fragments by `fragment`, and their pieces.
    pub fragmented: u64,
    pub fragments: u64,
    pub delayed: u64,
    /// Replies overtaken by a later one.
    pub reordered: u64,
    /// Messages whose CodeSets context was removed.
    pub stripped: u64,
    /// … of which kept their body's alignment with a filler context.
    pub fillers: u64,
    pub references_rewritten: u64,
    pub close_connections: u64,
    pub message_errors: u64,
    pub duplicated: u64,
    pub corrupted: u64,
    /// A corruption asked for beyond the end of its message.
    pub corrupt_missed: u64,
    /// Client messages not passed on once CloseConnection was decided.
    pub dropped: u64,
    /// Pieces passed on without being understood (not GIOP, or not
    /// reassembled), and directions passed through as bytes.
    pub opaque: u64,
}

impl RelayStats {
    /// What the relays did in one line: connections, messages, bytes,
    /// writes, and each fault's count where it is not zero.
    pub fn summary(&self) -> String {
        let s = self;
        let mut out = format!(
            "proxy: {} connections, {} messages, {} bytes from clients, {} from servers, {} writes",
            s.connections, s.messages, s.bytes_from_client, s.bytes_from_server, s.writes
        );
        for (n, what) in self.counts() {
            out.push_str(&format!(", {n} {what}"));
        }
        out
    }

    /// What the faults did, comma-separated (`3 MessageError injected`),
    /// or `no fault acted`: for naming the faults in a failed check.
    pub fn faults_acted(&self) -> String {
        let acted: Vec<String> = self
            .counts()
            .into_iter()
            .filter(|(_, what)| !matches!(*what, "references rewritten" | "pieces passed as bytes"))
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
        if acted.is_empty() {
            "no fault acted".into()
        } else {
            acted.join(", ")
        }
    }

    /// Every count past the bytes that is not zero, with its words.
    fn counts(&self) -> Vec<(u64, &'static str)> {
        let s = self;
        [
            (s.fragmented, "messages fragmented"),
            (s.fragments, "fragments"),
            (s.delayed, "replies delayed"),
            (s.reordered, "replies overtaken"),
            (s.stripped, "CodeSets contexts stripped"),
            (s.fillers, "filler contexts"),
            (s.references_rewritten, "references rewritten"),
            (s.close_connections, "CloseConnection injected"),
            (s.message_errors, "MessageError injected"),
            (s.duplicated, "messages duplicated"),
            (s.corrupted, "messages corrupted"),
            (s.corrupt_missed, "corruptions beyond their message"),
            (s.dropped, "client messages dropped after CloseConnection"),
            (s.opaque, "pieces passed as bytes"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .collect()
    }

    /// Add `o`'s counts to these.
    pub fn add(&mut self, o: &RelayStats) {
        let RelayStats {
            connections,
            messages,
            bytes_from_client,
            bytes_from_server,
            writes,
            fragmented,
            fragments,
            delayed,
            reordered,
            stripped,
            fillers,
            references_rewritten,
            close_connections,
            message_errors,
            duplicated,
            corrupted,
            corrupt_missed,
            dropped,
            opaque,
        } = o;
        self.connections += connections;
        self.messages += messages;
        self.bytes_from_client += bytes_from_client;
        self.bytes_from_server += bytes_from_server;
        self.writes += writes;
        self.fragmented += fragmented;
        self.fragments += fragments;
        self.delayed += delayed;
        self.reordered += reordered;
        self.stripped += stripped;
        self.fillers += fillers;
        self.references_rewritten += references_rewritten;
        self.close_connections += close_connections;
        self.message_errors += message_errors;
        self.duplicated += duplicated;
        self.corrupted += corrupted;
        self.corrupt_missed += corrupt_missed;
        self.dropped += dropped;
        self.opaque += opaque;
    }
}

/// Where the pieces of a message being reassembled are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    /// GIOP 1.1: one message at a time.
    Eleven,
    /// GIOP 1.2: by request id.
    Twelve(u32),
}

/// One direction's framing.
#[derive(Debug)]
struct Dir {
    buf: BytesMut,
    /// Framing failed once: everything from here on passes as bytes.
    raw: bool,
    decoder: Decoder,
    pieces: HashMap<Key, Vec<Bytes>>,
}

impl Dir {
    fn new(max: usize) -> Dir {
        Dir {
            buf: BytesMut::new(),
            raw: false,
            decoder: Decoder::new(CodecConfig {
                max_message_size: max,
                max_reassembled_size: max,
            }),
            pieces: HashMap::new(),
        }
    }
}

/// A message (or opaque bytes) waiting to be written.
#[derive(Debug)]
struct Queued {
    chunks: VecDeque<Bytes>,
    /// Not before then (`delay`, `reorder`).
    release: Option<Instant>,
    /// A reply `reorder` holds for a later one to overtake.
    held: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    /// `close-after` reached: client messages are dropped, and once no
    /// reply is owed (or at `until`) CloseConnection goes to the client.
    Draining {
        until: Instant,
    },
    /// Nothing more is read; what is queued is written, then both sides
    /// close.
    Closing,
}

/// One relayed connection (see the module's documentation).
#[derive(Debug)]
pub struct Relay {
    cfg: RelayConfig,
    dirs: [Dir; 2],
    /// Messages received so far (both directions).
    count: u64,
    /// Request ids the client is owed an answer for → operation (empty
    /// for a LocateRequest).
    pending: HashMap<u32, String>,
    /// What waits to be written, by receiving side.
    out: [VecDeque<Queued>; 2],
    state: State,
    /// Version and byte order of the client's last message: what an
    /// injected CloseConnection is sent in.
    client_hdr: Option<(Version, ByteOrder)>,
    stats: RelayStats,
}

/// The pieces' key of a message piece with header `h`, `None` for a
/// message in one piece.
fn piece_key(h: &Header, piece: &[u8]) -> Option<Key> {
    let id_at = match h.msg_type {
        MsgType::Fragment => HEADER_LEN,
        _ if h.more_fragments => HEADER_LEN,
        _ => return None,
    };
    if !h.version.is_12() {
        return Some(Key::Eleven);
    }
    let b: [u8; 4] = piece.get(id_at..id_at + 4)?.try_into().ok()?;
    Some(Key::Twelve(match h.order {
        ByteOrder::Big => u32::from_be_bytes(b),
        ByteOrder::Little => u32::from_le_bytes(b),
    }))
}

/// Flip every bit of byte `at` of the pieces as sent; whether it exists.
fn corrupt_at(pieces: &mut [Bytes], mut at: usize) -> bool {
    for p in pieces {
        if at < p.len() {
            let mut b = BytesMut::from(&p[..]);
            b[at] ^= 0xff;
            *p = b.freeze();
            return true;
        }
        at -= p.len();
    }
    false
}

/// The whole message of a frame (a reassembled header and payload).
fn whole(frame: &Frame) -> Bytes {
    let mut h = frame.header;
    h.more_fragments = false;
    let mut b = BytesMut::with_capacity(HEADER_LEN + frame.payload.len());
    b.extend_from_slice(&h.to_bytes());
    b.extend_from_slice(&frame.payload);
    b.freeze()
}

fn empty_message(version: Version, order: ByteOrder, ty: MsgType) -> Bytes {
    let mut b = BytesMut::new();
    encode_empty(&mut b, version, order, ty);
    b.freeze()
}

impl Relay {
    /// A new connection's relay.
    pub fn new(cfg: RelayConfig) -> Relay {
        let max = cfg.max_message;
        Relay {
            cfg,
            dirs: [Dir::new(max), Dir::new(max)],
            count: 0,
            pending: HashMap::new(),
            out: [VecDeque::new(), VecDeque::new()],
            state: State::Open,
            client_hdr: None,
            stats: RelayStats {
                connections: 1,
                ..RelayStats::default()
            },
        }
    }

    /// What this relay did so far.
    pub fn stats(&self) -> &RelayStats {
        &self.stats
    }

    /// `data` arrived from `from` at `now`; `map` names the proxy's
    /// address for any server endpoint a reference in it points at.
    pub fn input(&mut self, from: Side, data: &[u8], now: Instant, map: &mut dyn Endpoints) {
        if self.state == State::Closing {
            return;
        }
        match from {
            Side::Client => self.stats.bytes_from_client += data.len() as u64,
            Side::Server => self.stats.bytes_from_server += data.len() as u64,
        }
        let d = &mut self.dirs[from.idx()];
        if d.raw {
            self.queue_opaque(from.other(), Bytes::copy_from_slice(data));
            return;
        }
        d.buf.extend_from_slice(data);
        loop {
            let d = &mut self.dirs[from.idx()];
            if d.buf.len() < HEADER_LEN {
                break;
            }
            let h = match Header::parse(&d.buf[..HEADER_LEN]) {
                Ok(h) if (h.size as usize) <= self.cfg.max_message => h,
                _ => {
                    self.go_raw(from);
                    break;
                }
            };
            if d.buf.len() < h.total_len() {
                break;
            }
            let piece = d.buf.split_to(h.total_len()).freeze();
            self.piece(from, h, piece, now, map);
            if self.state == State::Closing {
                break;
            }
        }
    }

    /// Framing failed in `from`'s direction: pass what is held and all
    /// that follows as bytes.
    fn go_raw(&mut self, from: Side) {
        let d = &mut self.dirs[from.idx()];
        d.raw = true;
        let mut held: Vec<Bytes> = d.pieces.drain().flat_map(|(_, v)| v).collect();
        held.push(d.buf.split().freeze());
        self.stats.opaque += 1;
        for b in held {
            self.queue_opaque(from.other(), b);
        }
    }

    fn piece(
        &mut self,
        from: Side,
        h: Header,
        piece: Bytes,
        now: Instant,
        map: &mut dyn Endpoints,
    ) {
        let key = piece_key(&h, &piece);
        let d = &mut self.dirs[from.idx()];
        match d.decoder.decode_whole(h, BytesMut::from(&piece[..])) {
            Err(_) => {
                // Not reassembled (a Fragment without its start, …): what
                // is held for it and this piece go on as they came.
                let mut held = key.and_then(|k| d.pieces.remove(&k)).unwrap_or_default();
                held.push(piece);
                self.stats.opaque += 1;
                self.queue_opaque(from.other(), Bytes::from(held.concat()));
            }
            Ok(None) => {
                if let Some(k) = key {
                    d.pieces.entry(k).or_default().push(piece);
                }
            }
            Ok(Some(frame)) => {
                let mut pieces = key.and_then(|k| d.pieces.remove(&k)).unwrap_or_default();
                pieces.push(piece);
                self.message(from, frame, pieces, now, map);
            }
        }
    }

    /// A whole message from `from`: `frame` reassembled, `pieces` as it
    /// came.
    fn message(
        &mut self,
        from: Side,
        frame: Frame,
        pieces: Vec<Bytes>,
        now: Instant,
        map: &mut dyn Endpoints,
    ) {
        if from == Side::Client && matches!(self.state, State::Draining { .. }) {
            self.stats.dropped += 1;
            return;
        }
        self.count += 1;
        self.stats.messages += 1;
        let n = self.count;
        let h = frame.header;
        if from == Side::Client {
            self.client_hdr = Some((h.version, h.order));
        }
        let faults = self.cfg.faults.clone();
        if faults.message_error_after.is_some_and(|k| n == k + 1) {
            let m = empty_message(h.version, h.order, MsgType::MessageError);
            self.queue(from, vec![m], false, now);
            self.stats.message_errors += 1;
            self.close_now();
            return;
        }
        let decoded = Message::decode_segmented(
            &h,
            frame.payload.clone(),
            frame.segments.clone(),
            default_options(h.version),
        )
        .ok();
        let mut operation = None;
        match (&decoded, from) {
            (Some(Message::Request(r)), Side::Client) if r.header.response.expects_reply() => {
                self.pending
                    .insert(r.header.request_id, r.header.operation().to_string());
            }
            (Some(Message::LocateRequest(l)), Side::Client) => {
                self.pending.insert(l.request_id, String::new());
            }
            (Some(Message::Reply(r)), Side::Server) => {
                operation = self.pending.remove(&r.header.request_id);
            }
            (Some(Message::LocateReply(l)), Side::Server) => {
                self.pending.remove(&l.request_id);
            }
            _ => {}
        }
        let want = EditWanted {
            strip_codesets: faults.strip_codesets,
            operation: operation.as_deref(),
            reference_ops: &self.cfg.reference_ops,
        };
        let edited = decoded.as_ref().and_then(|m| edit(&h, m, &want, map));
        let mut out = match edited {
            Some((buf, ed)) => {
                self.stats.stripped += u64::from(ed.stripped);
                self.stats.fillers += u64::from(ed.filler);
                self.stats.references_rewritten += u64::from(ed.ior_rewritten);
                self.cut(buf.freeze())
            }
            None if faults.fragment.is_some()
                && frame.segments.is_none()
                && fragmentable(&h, faults.fragment11) =>
            {
                self.cut(whole(&frame))
            }
            None => pieces,
        };
        if let Some(c) = faults.corrupt.filter(|c| c.message == n) {
            if corrupt_at(&mut out, c.offset) {
                self.stats.corrupted += 1;
            } else {
                self.stats.corrupt_missed += 1;
            }
        }
        let reply = from == Side::Server && h.msg_type.answers().is_some();
        if faults.duplicate == Some(n) {
            self.stats.duplicated += 1;
            self.queue(from.other(), out.clone(), reply, now);
        }
        self.queue(from.other(), out, reply, now);
        if faults.close_after.is_some_and(|k| n >= k) && self.state == State::Open {
            self.state = State::Draining {
                until: now + CLOSE_GRACE,
            };
        }
        self.finish_drain(now);
    }

    /// `msg` (one whole message) in the pieces `fragment=N` makes.
    fn cut(&mut self, msg: Bytes) -> Vec<Bytes> {
        let Some(n) = self.cfg.faults.fragment else {
            return vec![msg];
        };
        let v = fragment(msg, n, self.cfg.faults.fragment11);
        if v.len() > 1 {
            self.stats.fragmented += 1;
            self.stats.fragments += v.len() as u64;
        }
        v
    }

    /// The writes of `pieces`: one, or `dribble`-sized ones.
    fn chunks(&self, pieces: Vec<Bytes>) -> VecDeque<Bytes> {
        let all = if pieces.len() == 1 {
            pieces.into_iter().next().unwrap_or_default()
        } else {
            Bytes::from(pieces.concat())
        };
        match self.cfg.faults.dribble {
            Some(k) => (0..all.len())
                .step_by(k)
                .map(|i| all.slice(i..(i + k).min(all.len())))
                .collect(),
            None if all.is_empty() => VecDeque::new(),
            None => VecDeque::from([all]),
        }
    }

    fn queue_opaque(&mut self, to: Side, b: Bytes) {
        if b.is_empty() {
            return;
        }
        let chunks = self.chunks(vec![b]);
        self.out[to.idx()].push_back(Queued {
            chunks,
            release: None,
            held: false,
        });
    }

    /// Queue a message for `to`; `reply`: a Reply or LocateReply, which
    /// `delay` and `reorder` act on.
    fn queue(&mut self, to: Side, pieces: Vec<Bytes>, reply: bool, now: Instant) {
        let chunks = self.chunks(pieces);
        let f = &self.cfg.faults;
        let mut release = None;
        if reply {
            if let Some(d) = f.delay {
                release = Some(now + d);
                self.stats.delayed += 1;
            }
        }
        let q = &mut self.out[to.idx()];
        if let (true, Some(hold)) = (reply, f.reorder) {
            if q.back().is_some_and(|b| b.held) {
                // This reply overtakes the one held for it, which follows
                // it at once.
                let mut held = q.pop_back().expect("checked");
                held.held = false;
                held.release = release;
                q.push_back(Queued {
                    chunks,
                    release,
                    held: false,
                });
                q.push_back(held);
                self.stats.reordered += 1;
                return;
            }
            if !self.pending.is_empty() && self.state == State::Open {
                // Another answer is owed: hold this one for it to overtake.
                q.push_back(Queued {
                    chunks,
                    release: Some(release.unwrap_or(now) + hold),
                    held: true,
                });
                return;
            }
        }
        q.push_back(Queued {
            chunks,
            release,
            held: false,
        });
    }

    /// `close-after`: once no reply is owed (or the grace ran out), the
    /// client gets CloseConnection and the connection closes.
    fn finish_drain(&mut self, now: Instant) {
        let State::Draining { until } = self.state else {
            return;
        };
        if !self.pending.is_empty() && now < until {
            return;
        }
        let (v, order) = self.client_hdr.unwrap_or((Version::V1_0, ByteOrder::Big));
        let m = empty_message(v, order, MsgType::CloseConnection);
        self.queue(Side::Client, vec![m], false, now);
        self.stats.close_connections += 1;
        self.close_now();
    }

    /// Stop reading; write what is queued at once, then close.
    fn close_now(&mut self) {
        self.state = State::Closing;
        for q in &mut self.out {
            for item in q.iter_mut() {
                item.release = None;
                item.held = false;
            }
        }
    }

    /// `from` closed its end (or failed): what is queued is written at
    /// once, then the relay is done.
    pub fn eof(&mut self, from: Side, now: Instant) {
        if from == Side::Server && matches!(self.state, State::Draining { .. }) {
            self.pending.clear();
            self.finish_drain(now);
        }
        self.close_now();
    }

    /// The next write due at `now`, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        for to in [Side::Client, Side::Server] {
            let q = &mut self.out[to.idx()];
            let Some(front) = q.front_mut() else { continue };
            if front.release.is_some_and(|r| r > now) {
                continue;
            }
            let Some(bytes) = front.chunks.pop_front() else {
                q.pop_front();
                continue;
            };
            if front.chunks.is_empty() {
                q.pop_front();
            }
            self.stats.writes += 1;
            return Some(Transmit { to, bytes });
        }
        None
    }

    /// When [`timeout`](Self::timeout) or [`poll_transmit`](Self::poll_transmit)
    /// next has something to do, if ever.
    pub fn next_deadline(&self) -> Option<Instant> {
        let fronts = self
            .out
            .iter()
            .filter_map(|q| q.front().and_then(|f| f.release));
        let drain = match self.state {
            State::Draining { until } => Some(until),
            _ => None,
        };
        fronts.chain(drain).min()
    }

    /// Time passed: a `close-after` grace may have run out.
    pub fn timeout(&mut self, now: Instant) {
        self.finish_drain(now);
    }

    /// Everything is written and the relay closes: the driver closes both
    /// sockets.
    pub fn is_done(&self) -> bool {
        self.state == State::Closing && self.out.iter().all(VecDeque::is_empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iiop_cdr::Options;
    use iiop_giop::context::ServiceContext;
    use iiop_giop::message::{encode_reply, encode_request, RequestHead};
    use iiop_giop::{ReplyStatus, ResponseMode, TargetAddress};

    struct NoMap;
    impl Endpoints for NoMap {
        fn proxy_for(&mut self, _: &str, _: u16) -> Option<(String, u16)> {
            None
        }
    }

    fn relay(spec: &str) -> Relay {
        Relay::new(RelayConfig {
            faults: spec.parse().unwrap(),
            ..RelayConfig::default()
        })
    }

    fn request(v: Version, id: u32, n: usize, oneway: bool, ctx: &[ServiceContext]) -> Bytes {
        let target = TargetAddress::Key(Bytes::from_static(b"Bench"));
        let head = RequestHead {
            request_id: id,
            response: if oneway {
                ResponseMode::Oneway
            } else {
                ResponseMode::Twoway
            },
            target: &target,
            operation: "echo_octet",
            contexts: ctx,
        };
        let mut buf = BytesMut::new();
        encode_request(
            &mut buf,
            v,
            ByteOrder::Little,
            Options::default(),
            &head,
            |w| w.write_octet_seq(&vec![7u8; n]),
        )
        .unwrap();
        buf.freeze()
    }

    fn reply(v: Version, id: u32, n: usize) -> Bytes {
        let mut buf = BytesMut::new();
        encode_reply(
            &mut buf,
            v,
            ByteOrder::Little,
            Options::default(),
            id,
            ReplyStatus::NoException,
            &[],
            |w| w.write_octet_seq(&vec![id as u8; n]),
        )
        .unwrap();
        buf.freeze()
    }

    /// Every write due at `now`: (side, bytes).
    fn drain(r: &mut Relay, now: Instant) -> Vec<(Side, Bytes)> {
        std::iter::from_fn(|| r.poll_transmit(now).map(|t| (t.to, t.bytes))).collect()
    }

    fn to(out: &[(Side, Bytes)], side: Side) -> Vec<u8> {
        out.iter()
            .filter(|(s, _)| *s == side)
            .flat_map(|(_, b)| b.to_vec())
            .collect()
    }

    /// GIOP pieces in `b`: (type, more fragments, length).
    fn pieces(b: &[u8]) -> Vec<(MsgType, bool, usize)> {
        let mut v = Vec::new();
        let mut at = 0;
        while at < b.len() {
            let h = Header::parse(&b[at..]).unwrap();
            v.push((h.msg_type, h.more_fragments, h.total_len()));
            at += h.total_len();
        }
        v
    }

    #[test]
    fn without_faults_bytes_pass_exactly_however_they_arrive() {
        let t = Instant::now();
        let stream: Vec<u8> = [
            request(Version::V1_2, 1, 100, false, &[]),
            request(Version::V1_1, 2, 3, true, &[]),
            request(Version::V1_0, 3, 0, false, &[]),
        ]
        .concat();
        for step in [1, 5, 12, 64, stream.len()] {
            let mut r = relay("none");
            let mut out = Vec::new();
            for c in stream.chunks(step) {
                r.input(Side::Client, c, t, &mut NoMap);
                out.extend(drain(&mut r, t));
            }
            assert_eq!(to(&out, Side::Server), stream, "step {step}");
            assert_eq!(r.stats().messages, 3);
            assert!(to(&out, Side::Client).is_empty());
        }
        // Not GIOP: passed through as bytes, and everything after it.
        let mut r = relay("none");
        r.input(Side::Client, b"HTTP/1.0 200 OK\r\n\r\n", t, &mut NoMap);
        r.input(
            Side::Client,
            &request(Version::V1_2, 1, 4, false, &[]),
            t,
            &mut NoMap,
        );
        let out = drain(&mut r, t);
        assert_eq!(
            to(&out, Side::Server),
            [
                &b"HTTP/1.0 200 OK\r\n\r\n"[..],
                &request(Version::V1_2, 1, 4, false, &[])
            ]
            .concat()
        );
        assert_eq!((r.stats().messages, r.stats().opaque), (0, 1));
    }

    #[test]
    fn fragment_and_dribble_cut_the_stream() {
        let t = Instant::now();
        let req = request(Version::V1_2, 1, 300, false, &[]);
        let mut r = relay("fragment=64,dribble=7");
        r.input(Side::Client, &req, t, &mut NoMap);
        let out = drain(&mut r, t);
        assert!(out.iter().all(|(_, b)| b.len() <= 7 && !b.is_empty()));
        let sent = to(&out, Side::Server);
        let p = pieces(&sent);
        assert!(p.len() > 4);
        assert_eq!(p[0], (MsgType::Request, true, 64));
        for (i, piece) in p.iter().enumerate().skip(1) {
            assert_eq!(piece.0, MsgType::Fragment);
            assert_eq!(piece.1, i + 1 < p.len());
            assert!(piece.2 <= 64);
        }
        let mut d = Decoder::new(CodecConfig::default());
        let f = d.decode(&mut BytesMut::from(&sent[..])).unwrap().unwrap();
        assert_eq!(whole(&f), req);
        assert_eq!(
            (r.stats().fragmented, r.stats().fragments),
            (1, p.len() as u64)
        );
        // A message that came fragmented is re-cut; GIOP 1.0 is not cut.
        let mut r = relay("fragment=128");
        r.input(Side::Client, &sent, t, &mut NoMap);
        let re = to(&drain(&mut r, t), Side::Server);
        assert!(pieces(&re).iter().all(|p| p.2 <= 128) && pieces(&re).len() < p.len());
        let old = request(Version::V1_0, 1, 300, false, &[]);
        let mut r = relay("fragment=64,fragment11");
        r.input(Side::Client, &old, t, &mut NoMap);
        assert_eq!(to(&drain(&mut r, t), Side::Server), old.to_vec());
    }

    #[test]
    fn delay_holds_replies_until_due() {
        let t = Instant::now();
        let mut r = relay("delay=5ms");
        r.input(
            Side::Client,
            &request(Version::V1_2, 1, 1, false, &[]),
            t,
            &mut NoMap,
        );
        assert_eq!(drain(&mut r, t).len(), 1, "requests are not delayed");
        r.input(Side::Server, &reply(Version::V1_2, 1, 1), t, &mut NoMap);
        assert!(drain(&mut r, t + Duration::from_millis(4)).is_empty());
        assert_eq!(r.next_deadline(), Some(t + Duration::from_millis(5)));
        let out = drain(&mut r, t + Duration::from_millis(5));
        assert_eq!(to(&out, Side::Client), reply(Version::V1_2, 1, 1).to_vec());
        assert_eq!(r.stats().delayed, 1);
    }

    #[test]
    fn reorder_lets_a_later_reply_overtake() {
        let t = Instant::now();
        let mut r = relay("reorder=50ms");
        for id in [1, 2, 3] {
            r.input(
                Side::Client,
                &request(Version::V1_1, id, 1, false, &[]),
                t,
                &mut NoMap,
            );
        }
        drain(&mut r, t);
        // Reply 1 is held (2 and 3 are owed); reply 2 overtakes it.
        r.input(Side::Server, &reply(Version::V1_1, 1, 1), t, &mut NoMap);
        assert!(drain(&mut r, t).is_empty());
        r.input(Side::Server, &reply(Version::V1_1, 2, 1), t, &mut NoMap);
        let out = drain(&mut r, t);
        assert_eq!(
            to(&out, Side::Client),
            [reply(Version::V1_1, 2, 1), reply(Version::V1_1, 1, 1)].concat()
        );
        // The last owed reply has nothing to wait for: it goes at once.
        r.input(Side::Server, &reply(Version::V1_1, 3, 1), t, &mut NoMap);
        assert_eq!(
            to(&drain(&mut r, t), Side::Client),
            reply(Version::V1_1, 3, 1).to_vec()
        );
        assert_eq!(r.stats().reordered, 1);
        // A held reply with no follower goes when its hold ends.
        let mut r = relay("reorder=50ms");
        for id in [1, 2] {
            r.input(
                Side::Client,
                &request(Version::V1_2, id, 1, false, &[]),
                t,
                &mut NoMap,
            );
        }
        drain(&mut r, t);
        r.input(Side::Server, &reply(Version::V1_2, 2, 1), t, &mut NoMap);
        assert_eq!(r.next_deadline(), Some(t + Duration::from_millis(50)));
        assert!(drain(&mut r, t + Duration::from_millis(49)).is_empty());
        assert_eq!(drain(&mut r, t + Duration::from_millis(50)).len(), 1);
    }

    #[test]
    fn strip_codesets_removes_the_context() {
        let t = Instant::now();
        let cs = ServiceContext {
            id: 1,
            data: Bytes::from_static(&[1, 0, 0, 0, 1, 0, 1, 0, 9, 1, 1, 0]),
        };
        let req = request(Version::V1_2, 1, 10, false, std::slice::from_ref(&cs));
        let mut r = relay("strip-codesets");
        r.input(Side::Client, &req, t, &mut NoMap);
        let sent = to(&drain(&mut r, t), Side::Server);
        assert_eq!(sent.len(), req.len() - 24);
        let mut d = Decoder::new(CodecConfig::default());
        let f = d.decode(&mut BytesMut::from(&sent[..])).unwrap().unwrap();
        let Message::Request(m) = Message::decode_frame(f, Options::default()).unwrap() else {
            panic!()
        };
        assert!(m.header.contexts.is_empty());
        assert_eq!(r.stats().stripped, 1);
    }

    #[test]
    fn close_after_waits_for_owed_replies_then_closes() {
        let t = Instant::now();
        let mut r = relay("close-after=2");
        r.input(
            Side::Client,
            &request(Version::V1_1, 1, 1, false, &[]),
            t,
            &mut NoMap,
        );
        r.input(
            Side::Client,
            &request(Version::V1_1, 2, 1, false, &[]),
            t,
            &mut NoMap,
        );
        // Draining: the third request is not passed on.
        r.input(
            Side::Client,
            &request(Version::V1_1, 3, 1, false, &[]),
            t,
            &mut NoMap,
        );
        let out = drain(&mut r, t);
        assert_eq!(pieces(&to(&out, Side::Server)).len(), 2);
        assert!(!r.is_done());
        r.input(Side::Server, &reply(Version::V1_1, 1, 1), t, &mut NoMap);
        assert!(!r.is_done());
        r.input(Side::Server, &reply(Version::V1_1, 2, 1), t, &mut NoMap);
        let out = drain(&mut r, t);
        let got = to(&out, Side::Client);
        let p = pieces(&got);
        assert_eq!(
            p.iter().map(|p| p.0).collect::<Vec<_>>(),
            [MsgType::Reply, MsgType::Reply, MsgType::CloseConnection]
        );
        // In the client's version and byte order.
        let close = &got[got.len() - 12..];
        assert_eq!(close, [b'G', b'I', b'O', b'P', 1, 1, 1, 5, 0, 0, 0, 0]);
        assert!(r.is_done());
        assert_eq!((r.stats().close_connections, r.stats().dropped), (1, 1));
        // A reply that never comes: CloseConnection after the grace.
        let mut r = relay("close-after=1");
        r.input(
            Side::Client,
            &request(Version::V1_2, 1, 1, false, &[]),
            t,
            &mut NoMap,
        );
        drain(&mut r, t);
        assert_eq!(r.next_deadline(), Some(t + CLOSE_GRACE));
        r.timeout(t + CLOSE_GRACE);
        assert_eq!(
            pieces(&to(&drain(&mut r, t + CLOSE_GRACE), Side::Client))[0].0,
            MsgType::CloseConnection
        );
        assert!(r.is_done());
    }

    #[test]
    fn message_error_after_answers_the_next_message() {
        let t = Instant::now();
        let mut r = relay("message-error-after=1");
        r.input(
            Side::Client,
            &request(Version::V1_2, 1, 1, false, &[]),
            t,
            &mut NoMap,
        );
        r.input(Side::Server, &reply(Version::V1_2, 1, 1), t, &mut NoMap);
        let out = drain(&mut r, t);
        // The reply (message 2) is answered with MessageError to the
        // server and not passed on; both sides close.
        let sent = to(&out, Side::Server);
        assert_eq!(
            pieces(&sent).iter().map(|p| p.0).collect::<Vec<_>>(),
            [MsgType::Request, MsgType::MessageError]
        );
        assert_eq!(
            sent[sent.len() - 12..],
            [b'G', b'I', b'O', b'P', 1, 2, 1, 6, 0, 0, 0, 0]
        );
        assert!(to(&out, Side::Client).is_empty());
        assert!(r.is_done());
    }

    #[test]
    fn duplicate_and_corrupt_touch_one_message() {
        let t = Instant::now();
        let mut r = relay("duplicate=2,corrupt=3@20");
        let reqs: Vec<Bytes> = (1..=3)
            .map(|id| request(Version::V1_2, id, 4, true, &[]))
            .collect();
        for q in &reqs {
            r.input(Side::Client, q, t, &mut NoMap);
        }
        let sent = to(&drain(&mut r, t), Side::Server);
        let mut want: Vec<u8> = [&reqs[0][..], &reqs[1][..], &reqs[1][..], &reqs[2][..]].concat();
        let at = 3 * reqs[0].len() + 20;
        want[at] ^= 0xff;
        assert_eq!(sent, want);
        assert_eq!((r.stats().duplicated, r.stats().corrupted), (1, 1));
        let mut r = relay("corrupt=1@9999");
        r.input(Side::Client, &reqs[0], t, &mut NoMap);
        assert_eq!(to(&drain(&mut r, t), Side::Server), reqs[0].to_vec());
        assert_eq!(r.stats().corrupt_missed, 1);
    }

    #[test]
    fn eof_flushes_held_replies_and_finishes() {
        let t = Instant::now();
        let mut r = relay("delay=1s");
        r.input(
            Side::Client,
            &request(Version::V1_2, 1, 1, false, &[]),
            t,
            &mut NoMap,
        );
        r.input(Side::Server, &reply(Version::V1_2, 1, 1), t, &mut NoMap);
        drain(&mut r, t);
        r.eof(Side::Server, t);
        assert_eq!(
            to(&drain(&mut r, t), Side::Client),
            reply(Version::V1_2, 1, 1).to_vec()
        );
        assert!(r.is_done());
    }
}
