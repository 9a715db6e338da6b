//! One direction of a TCP connection as a sequence of GIOP messages:
//! framing by the 12-byte header, resynchronisation on the next `GIOP`
//! magic with a sane header (a capture that starts mid-connection, or
//! after bytes the capture lost), fragment reassembly through the GIOP
//! crate's [`Decoder`], and for every message the frames and capture times
//! of its first and last byte.

use std::collections::{HashMap, VecDeque};

use bytes::BytesMut;
use iiop_giop::header::{Header, MsgType, HEADER_LEN, MAGIC};
use iiop_giop::{CodecConfig, Decoder, Frame};

/// A complete (reassembled) GIOP message and where it was in the capture.
#[derive(Debug)]
pub struct Decoded {
    pub frame: Frame,
    /// Frame and time of the message's first byte (of its first piece).
    pub first_frame: u64,
    pub first_ts: u64,
    /// Frame and time of its last byte (of its last piece).
    pub last_frame: u64,
    pub last_ts: u64,
    /// Bytes on the wire, headers of every piece included.
    pub wire_len: u64,
    /// How many GIOP messages (first message and Fragments) carried it.
    pub pieces: u32,
    /// The first bytes of the first piece, for findings.
    pub head: Head,
}

/// The first bytes of a message (up to [`HEAD_KEEP`]), held inline: every
/// message keeps them in case a finding needs them, and findings are
/// rare, so they cost no allocation until one does.
#[derive(Clone, Copy)]
pub struct Head {
    bytes: [u8; HEAD_KEEP],
    len: u8,
}

impl Head {
    /// The first [`HEAD_KEEP`] bytes of `b` (all of it if shorter).
    pub fn new(b: &[u8]) -> Head {
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

/// Something the stream wants reported.
#[derive(Debug)]
pub enum Event {
    Message(Decoded),
    Finding {
        frame: u64,
        rule: &'static str,
        detail: String,
        bytes: Vec<u8>,
    },
}

/// Bytes of a message kept for findings.
pub const HEAD_KEEP: usize = 64;

#[derive(Debug)]
struct Start {
    first_frame: u64,
    first_ts: u64,
    wire_len: u64,
    pieces: u32,
    head: Head,
}

/// Framing state of one direction.
#[derive(Debug)]
pub struct GiopStream {
    buf: BytesMut,
    /// Stream offset of `buf[0]`.
    buf_pos: u64,
    /// (end offset, frame, time) of each delivered chunk still in `buf`.
    marks: VecDeque<(u64, u64, u64)>,
    /// Whether `buf[0]` is the start of a message.
    synced: bool,
    /// Whether framing is known good: the stream was seen from its start,
    /// or a message decoded after the last resynchronisation. Until then
    /// a decode failure is taken as a false `GIOP` match, not a finding.
    trusted: bool,
    decoder: Decoder,
    max_message: usize,
    /// First pieces of fragmented messages: 1.2 by request id, 1.1 `None`.
    starts: HashMap<Option<u32>, Start>,
    /// Bytes skipped while looking for a message start.
    pub skipped_bytes: u64,
    pub resyncs: u64,
}

/// Whether `b` (12 bytes) is a GIOP header we would believe.
fn sane(b: &[u8], max: usize) -> Option<Header> {
    let h = Header::parse(b).ok()?;
    (h.version.major == 1 && h.version.minor <= 2 && h.size as usize <= max).then_some(h)
}

impl GiopStream {
    /// A stream; `from_start` when its first byte is the connection's.
    pub fn new(from_start: bool, max_message: usize) -> Self {
        GiopStream {
            buf: BytesMut::new(),
            buf_pos: 0,
            marks: VecDeque::new(),
            synced: from_start,
            trusted: from_start,
            decoder: Decoder::new(CodecConfig {
                max_message_size: max_message,
                max_reassembled_size: max_message,
            }),
            max_message,
            starts: HashMap::new(),
            skipped_bytes: 0,
            resyncs: 0,
        }
    }

    /// Whether framing is trusted (see the field).
    pub fn trusted(&self) -> bool {
        self.trusted
    }

    /// Bytes buffered (an incomplete message).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Bytes `data` at stream offset `pos` arrived in `frame` at `ts`.
    pub fn data(&mut self, pos: u64, data: &[u8], frame: u64, ts: u64, out: &mut Vec<Event>) {
        if self.buf.is_empty() {
            self.buf_pos = pos;
        }
        self.buf.extend_from_slice(data);
        self.marks.push_back((pos + data.len() as u64, frame, ts));
        self.parse(out);
    }

    /// Bytes were lost: drop what is buffered and look for the next start.
    pub fn gap(&mut self, missing: u64) {
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

    fn mark_at(&self, pos: u64) -> (u64, u64) {
        self.marks
            .iter()
            .find(|m| m.0 > pos)
            .map(|m| (m.1, m.2))
            .unwrap_or((0, 0))
    }

    fn consume(&mut self, n: usize) -> BytesMut {
        let b = self.buf.split_to(n);
        self.buf_pos += n as u64;
        while self.marks.front().is_some_and(|m| m.0 <= self.buf_pos) {
            self.marks.pop_front();
        }
        b
    }

    fn parse(&mut self, out: &mut Vec<Event>) {
        loop {
            if !self.synced && !self.find_start() {
                return;
            }
            if self.buf.len() < HEADER_LEN {
                return;
            }
            let Some(h) = sane(&self.buf[..HEADER_LEN], self.max_message) else {
                if self.trusted {
                    let (frame, _) = self.mark_at(self.buf_pos);
                    let why = Header::parse(&self.buf[..HEADER_LEN])
                        .err()
                        .map(|e| e.to_string())
                        .unwrap_or_else(|| "declared size above the limit".into());
                    out.push(Event::Finding {
                        frame,
                        rule: "bad-header",
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
            let (first_frame, first_ts) = self.mark_at(self.buf_pos);
            let (last_frame, last_ts) = self.mark_at(self.buf_pos + total as u64 - 1);
            let mut piece = self.consume(total);
            let head = Head::new(&piece);
            self.piece(
                h,
                &mut piece,
                head,
                (first_frame, first_ts, last_frame, last_ts),
                out,
            );
        }
    }

    /// One framed GIOP message (maybe a fragment).
    fn piece(
        &mut self,
        h: Header,
        piece: &mut BytesMut,
        head: Head,
        (first_frame, first_ts, last_frame, last_ts): (u64, u64, u64, u64),
        out: &mut Vec<Event>,
    ) {
        let wire = piece.len() as u64;
        if h.version.is_12() && h.more_fragments && !wire.is_multiple_of(8) {
            out.push(Event::Finding {
                frame: first_frame,
                rule: "fragment-length",
                detail: format!(
                    "GIOP 1.2 {:?} with more fragments to follow is {wire} bytes long, not a multiple of 8",
                    h.msg_type
                ),
                bytes: head.to_vec(),
            });
        }
        // Key of a fragmented message: 1.2 request id (after the header,
        // first in Request/Reply/Locate* and in Fragment headers).
        let key = |p: &[u8]| -> Option<u32> {
            let b = p.get(HEADER_LEN..HEADER_LEN + 4)?;
            Some(<u32 as iiop_cdr::Primitive>::from_wire(b, h.order))
        };
        let frag_key = if h.version.is_12() { key(piece) } else { None };
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
                            first_frame,
                            first_ts,
                            wire_len: wire,
                            pieces: 1,
                            head,
                        },
                    );
                }
            }
            Ok(Some(frame)) => {
                self.trusted = true;
                let d = if is_fragment {
                    let s = self.starts.remove(&frag_key);
                    let s = s.unwrap_or(Start {
                        first_frame,
                        first_ts,
                        wire_len: 0,
                        pieces: 0,
                        head,
                    });
                    Decoded {
                        frame,
                        first_frame: s.first_frame,
                        first_ts: s.first_ts,
                        last_frame,
                        last_ts,
                        wire_len: s.wire_len + wire,
                        pieces: s.pieces + 1,
                        head: s.head,
                    }
                } else {
                    Decoded {
                        frame,
                        first_frame,
                        first_ts,
                        last_frame,
                        last_ts,
                        wire_len: wire,
                        pieces: 1,
                        head,
                    }
                };
                out.push(Event::Message(d));
            }
            Err(e) => {
                if self.trusted {
                    out.push(Event::Finding {
                        frame: first_frame,
                        rule: "framing",
                        detail: e.to_string(),
                        bytes: head.to_vec(),
                    });
                }
                // A fragment that belongs to nothing we saw: after a
                // resync this is expected; drop it and carry on framing.
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
