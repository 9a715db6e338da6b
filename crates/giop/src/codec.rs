//! Framing over a `BytesMut`: the 12-byte header first, the declared size
//! checked against a limit before the body is buffered, `Ok(None)` while a
//! message is incomplete, and reassembly of fragmented messages (GIOP 1.1:
//! fragments follow their first message, no request id; GIOP 1.2: keyed by
//! the request id of the 16-byte fragment header, interleaving allowed).
//!
//! Reassembly concatenates the fragment bodies into one buffer. For GIOP
//! 1.2 the body reads as one CDR stream whose alignment counts from the
//! first message's header (16-byte fragment headers, 8-multiple pieces).
//! GIOP 1.1 senders align each Fragment's data relative to that Fragment's
//! own header, its first data byte at offset 12 (the spec says so, and
//! omniORB does: see fixtures/giop/omniorb/frag-doubles11*), so a 1.1
//! [`Frame`] records where each Fragment's data begins
//! ([`Frame::segments`]) and readers realign there
//! ([`iiop_cdr::Reader::with_segments`]). When a value does not fit in
//! its piece, omniORB sends that piece with the value's padding at its end
//! and pads again in the next Fragment (4 bytes before a double); a reader
//! whose padding reaches a Fragment start realigns from that Fragment.
//! TAO concatenates 1.1 Fragments as one stream and JacORB refuses them.
//!
//! Output side: [`fragment_message`] splits a complete GIOP 1.2 message into
//! a first message and Fragments, every piece but the last a multiple of 8
//! bytes long. We never emit GIOP 1.1 fragments (JacORB rejects them).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use iiop_cdr::ByteOrder;

use crate::error::{GiopError, Result};
use crate::header::{patch_size, Header, MsgType, FRAGMENT_HEADER_LEN_12, HEADER_LEN};

/// Size limits of a codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodecConfig {
    /// Largest declared size of one GIOP message (bytes after the header).
    pub max_message_size: usize,
    /// Largest size of a reassembled message, and of all messages being
    /// reassembled at once.
    pub max_reassembled_size: usize,
}

impl Default for CodecConfig {
    /// 512 MiB for both: above the 256 MiB requests the benchmarks send.
    fn default() -> Self {
        CodecConfig {
            max_message_size: 512 << 20,
            max_reassembled_size: 512 << 20,
        }
    }
}

/// A complete (reassembled) message: its header (with `more_fragments`
/// false and `size` the reassembled size) and the bytes after the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub header: Header,
    pub payload: Bytes,
    /// GIOP 1.1 reassembly only: the payload indices where a Fragment's
    /// (non-empty) data begins, increasing. That data is aligned from its
    /// Fragment's header: `payload[s]` lies at alignment offset 12. `None`
    /// for every message read as one stream.
    pub segments: Option<Arc<[usize]>>,
}

#[derive(Debug)]
struct Partial {
    header: Header,
    data: BytesMut,
    /// Where each 1.1 Fragment's data begins in `data`.
    segments: Vec<usize>,
}

/// Splits a byte stream into complete GIOP messages.
#[derive(Debug, Default)]
pub struct Decoder {
    cfg: CodecConfig,
    /// GIOP 1.1: the one message being reassembled.
    partial11: Option<Partial>,
    /// GIOP 1.2: messages being reassembled, by request id.
    partial12: HashMap<u32, Partial>,
    /// Bytes held in all partial messages.
    partial_bytes: usize,
    /// Request id of the last complete 1.2 message (to name the error of a
    /// fragment that comes after it).
    last_complete_12: Option<u32>,
    /// Whether a 1.1 message was completed (same purpose).
    any_complete_11: bool,
}

/// Room reserved past a first piece that has not fully arrived: the
/// 16 KiB a read wants (`read_buf`) and the next fragment's header, so
/// that reading on past the piece does not grow the buffer, and copy the
/// piece, before it can be joined with its fragments.
const JOIN_SLACK: usize = 16 * 1024 + 64;
/// Longest chain of fragments (after the first piece) joined in place;
/// longer ones are reassembled the usual way, so a message in thousands
/// of small fragments is not walked again on every read.
const JOIN_MAX_PIECES: usize = 16;

/// What [`Decoder::join_in_place`] made of a first piece.
enum Join {
    /// The whole message, joined.
    Done(Frame),
    /// More bytes are needed before the pieces can be joined.
    Wait,
    /// Reassemble the usual way.
    No,
}

fn read_u32(b: &[u8], order: ByteOrder) -> Option<u32> {
    let a: [u8; 4] = b.get(..4)?.try_into().ok()?;
    Some(match order {
        ByteOrder::Big => u32::from_be_bytes(a),
        ByteOrder::Little => u32::from_le_bytes(a),
    })
}

fn truncated_id() -> GiopError {
    GiopError::Cdr {
        what: "request id",
        source: iiop_cdr::CdrError::Truncated {
            offset: HEADER_LEN,
            needed: 4,
            available: 0,
        },
    }
}

/// The first piece of a GIOP 1.2 message sent in fragments.
fn is_first_piece(h: &Header) -> bool {
    h.more_fragments && starts_with_request_id(h)
}

fn starts_with_request_id(h: &Header) -> bool {
    h.version.is_12()
        && matches!(
            h.msg_type,
            MsgType::Request | MsgType::Reply | MsgType::LocateRequest | MsgType::LocateReply
        )
}

impl Decoder {
    /// A decoder with these limits.
    pub fn new(cfg: CodecConfig) -> Self {
        Decoder {
            cfg,
            ..Decoder::default()
        }
    }

    /// The limits.
    pub fn config(&self) -> &CodecConfig {
        &self.cfg
    }

    /// The GIOP 1.2 message of type `ty` at the start of `buf` when it is
    /// whole, of one piece and within the size limit, and `read` (given
    /// its byte order and payload) makes something of it: taken off `buf`
    /// with its header, as [`decode`](Self::decode) would hand it over
    /// (and noted as complete, as `decode` notes it). `None`, with `buf`
    /// untouched, for anything else: `decode` then takes it, and reports
    /// what is wrong with it. For a reader that reads its usual message
    /// in place, without a [`Frame`] around it
    /// ([`Reply::take_quiet`](crate::message::Reply::take_quiet)).
    pub fn take_whole_12<T>(
        &mut self,
        buf: &mut BytesMut,
        ty: MsgType,
        read: impl FnOnce(ByteOrder, &[u8]) -> Option<T>,
    ) -> Option<(Header, T, BytesMut)> {
        let h = Header::parse(buf.get(..HEADER_LEN)?).ok()?;
        if h.msg_type != ty
            || !h.version.is_12()
            || h.more_fragments
            || h.size as usize > self.cfg.max_message_size
            || buf.len() < h.total_len()
        {
            return None;
        }
        let payload = &buf[HEADER_LEN..h.total_len()];
        let t = read(h.order, payload)?;
        self.completed(&h, payload);
        Some((h, t, buf.split_to(h.total_len())))
    }

    /// Whether a fragmented message is being reassembled.
    pub fn in_progress(&self) -> bool {
        self.partial11.is_some() || !self.partial12.is_empty()
    }

    /// The next complete message in `buf`, consuming its bytes; `Ok(None)`
    /// when more bytes are needed (room for the declared size is reserved).
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>> {
        self.decode_with(buf, true)
    }

    /// [`decode`](Self::decode), but a first piece of a fragmented message
    /// goes into reassembly at once instead of waiting in `buf` to be
    /// joined with the fragments after it: for a caller that hands over
    /// one message at a time (and tried [`join_in_buffer`](Self::join_in_buffer)
    /// on its own buffer first).
    pub fn decode_separately(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>> {
        self.decode_with(buf, false)
    }

    /// One whole message whose header the caller parsed and checked
    /// against the size limit (`message` is exactly its
    /// [`total_len`](Header::total_len) bytes): [`decode_separately`](Self::decode_separately)
    /// without parsing the header again. `None`: a fragment went into
    /// reassembly.
    pub fn decode_whole(&mut self, h: Header, message: BytesMut) -> Result<Option<Frame>> {
        debug_assert_eq!(message.len(), h.total_len());
        let frame = message.freeze();
        let payload = frame.slice(HEADER_LEN..);
        self.accept(h, payload)
    }

    fn decode_with(&mut self, buf: &mut BytesMut, join: bool) -> Result<Option<Frame>> {
        loop {
            if buf.len() < HEADER_LEN {
                return Ok(None);
            }
            let h = Header::parse(&buf[..HEADER_LEN])?;
            if h.size as usize > self.cfg.max_message_size {
                return Err(GiopError::TooLarge {
                    size: h.size as u64,
                    limit: self.cfg.max_message_size as u64,
                });
            }
            let total = h.total_len();
            if buf.len() < total {
                // A first piece: room for its next fragment's header too,
                // so that the buffer need not grow (and copy the piece)
                // before the two can be joined where they lie.
                let slack = if join && is_first_piece(&h) {
                    JOIN_SLACK
                } else {
                    0
                };
                buf.reserve(total + slack - buf.len());
                return Ok(None);
            }
            if join {
                if let Some(f) = self.join_in_buffer(&h, buf) {
                    return Ok(f);
                }
            }
            if let Some(f) = self.decode_whole(h, buf.split_to(total))? {
                return Ok(Some(f));
            }
        }
    }

    /// When `buf` starts with `h`, complete, and `h` is the first piece of
    /// a GIOP 1.2 message in fragments whose other pieces follow it (see
    /// [`join_in_place`](Self::join_in_place)): `Some(Some(message))`,
    /// joined, or `Some(None)` while they have not all arrived (nothing is
    /// reserved: the caller's reads keep room). `None`: take the message
    /// at the start of `buf` the usual way.
    pub fn join_in_buffer(&mut self, h: &Header, buf: &mut BytesMut) -> Option<Option<Frame>> {
        if !is_first_piece(h)
            || h.size as usize > self.cfg.max_message_size
            || buf.len() < h.total_len()
        {
            return None;
        }
        match self.join_in_place(h, buf) {
            Join::Done(f) => Some(Some(f)),
            Join::Wait => Some(None),
            Join::No => None,
        }
    }

    /// A GIOP 1.2 message in fragments whose pieces all follow one another
    /// in `buf` (the first, complete, at its start): joined where they
    /// lie, each fragment's data moved back over the headers before it,
    /// so the message costs no copy of its (large) first piece. omniORB's
    /// client sends a 128 KiB octet sequence as a 131 KiB Request and a
    /// 20-byte Fragment: reassembled the usual way, that was two copies
    /// of the request per call, and our server ran at half omniORB's.
    ///
    /// `Wait` while the pieces so far match and the next has not fully
    /// arrived; `No` (nothing touched) when another message comes between
    /// them, a piece does not match or exceeds a limit, or the chain is
    /// longer than [`JOIN_MAX_PIECES`]: the usual path then takes them,
    /// and reports any error where it always has.
    fn join_in_place(&mut self, first: &Header, buf: &mut BytesMut) -> Join {
        let Some(id) = read_u32(&buf[HEADER_LEN..], first.order) else {
            return Join::No;
        };
        // What the usual path would refuse at the first piece (a second
        // start for the id, the reassembly limit) it refuses at once.
        if self.partial12.contains_key(&id)
            || self.partial_bytes.saturating_add(first.size as usize)
                > self.cfg.max_reassembled_size
        {
            return Join::No;
        }
        // The pieces after the first: (start in buf, total length), on
        // the stack (this runs for every large request of such a client).
        let mut pieces = [(0usize, 0usize); JOIN_MAX_PIECES];
        let mut n = 0;
        let mut at = first.total_len();
        let mut len = first.size as usize;
        loop {
            if n == JOIN_MAX_PIECES {
                return Join::No;
            }
            if buf.len() < at + HEADER_LEN {
                return Join::Wait;
            }
            let Ok(f) = Header::parse(&buf[at..at + HEADER_LEN]) else {
                return Join::No;
            };
            let data = (f.size as usize).saturating_sub(4);
            let fits = self.partial_bytes.saturating_add(len).saturating_add(data)
                <= self.cfg.max_reassembled_size
                && len + data <= u32::MAX as usize;
            if f.msg_type != MsgType::Fragment
                || f.version != first.version
                || f.order != first.order
                || f.size < 4
                || f.size as usize > self.cfg.max_message_size
                || !fits
            {
                return Join::No;
            }
            let total = f.total_len();
            if buf.len() < at + total {
                if buf.len() >= at + FRAGMENT_HEADER_LEN_12
                    && read_u32(&buf[at + HEADER_LEN..], f.order) != Some(id)
                {
                    return Join::No;
                }
                return Join::Wait;
            }
            if read_u32(&buf[at + HEADER_LEN..], f.order) != Some(id) {
                return Join::No;
            }
            pieces[n] = (at, total);
            n += 1;
            len += data;
            at += total;
            if !f.more_fragments {
                break;
            }
        }
        // Every piece is here: move each fragment's data back to the end
        // of what is joined so far (always towards the front, so nothing
        // unread is overwritten), then take the message off the buffer.
        let mut end = first.total_len();
        for &(start, total) in &pieces[..n] {
            let from = start + FRAGMENT_HEADER_LEN_12;
            buf.copy_within(from..start + total, end);
            end += total - FRAGMENT_HEADER_LEN_12;
        }
        let joined = buf.split_to(end).freeze();
        buf.advance(at - end);
        self.last_complete_12 = Some(id);
        let mut header = *first;
        header.more_fragments = false;
        header.size = len as u32;
        Join::Done(Frame {
            header,
            payload: joined.slice(HEADER_LEN..),
            segments: None,
        })
    }

    fn accept(&mut self, h: Header, payload: Bytes) -> Result<Option<Frame>> {
        if h.msg_type == MsgType::Fragment {
            return self.fragment(h, payload);
        }
        if !h.more_fragments {
            self.completed(&h, &payload);
            return Ok(Some(Frame {
                header: h,
                payload,
                segments: None,
            }));
        }
        // The first piece of a fragmented message.
        self.grow(payload.len())?;
        let partial = Partial {
            header: h,
            data: BytesMut::from(&payload[..]),
            segments: Vec::new(),
        };
        if h.version.is_12() {
            let id = read_u32(&payload, h.order).ok_or_else(truncated_id)?;
            if self.partial12.contains_key(&id) {
                return Err(GiopError::FragmentDuplicate {
                    request_id: Some(id),
                });
            }
            self.partial12.insert(id, partial);
        } else {
            if self.partial11.is_some() {
                return Err(GiopError::FragmentDuplicate { request_id: None });
            }
            self.partial11 = Some(partial);
        }
        Ok(None)
    }

    /// The message `h`, of one piece, is complete: a Fragment after it is
    /// named as coming after a complete message.
    fn completed(&mut self, h: &Header, payload: &[u8]) {
        if starts_with_request_id(h) {
            self.last_complete_12 = read_u32(payload, h.order);
        } else if h.version.minor == 1 {
            self.any_complete_11 = true;
        }
    }

    fn grow(&mut self, n: usize) -> Result<()> {
        let total = self.partial_bytes.saturating_add(n);
        if total > self.cfg.max_reassembled_size {
            return Err(GiopError::TooLarge {
                size: total as u64,
                limit: self.cfg.max_reassembled_size as u64,
            });
        }
        self.partial_bytes = total;
        Ok(())
    }

    fn fragment(&mut self, h: Header, payload: Bytes) -> Result<Option<Frame>> {
        let (id, data) = if h.version.is_12() {
            let id = read_u32(&payload, h.order).ok_or_else(truncated_id)?;
            (Some(id), payload.slice(4..))
        } else {
            (None, payload)
        };
        let slot = match id {
            Some(id) => self.partial12.get_mut(&id),
            None => self.partial11.as_mut(),
        };
        let Some(p) = slot else {
            // A Fragment follows the version of the message it continues:
            // a 1.1 one (no request id) while only 1.2 messages are in
            // flight, or a 1.2 one while only a 1.1 message is, continues
            // a message of another version.
            let other_version = match id {
                Some(_) => self.partial11.is_some() && self.partial12.is_empty(),
                None => !self.partial12.is_empty(),
            };
            if other_version {
                return Err(GiopError::FragmentMismatch { what: "version" });
            }
            let after = match id {
                Some(_) => self.last_complete_12 == id,
                None => self.any_complete_11,
            };
            return Err(if after {
                GiopError::FragmentAfterComplete { request_id: id }
            } else {
                GiopError::FragmentWithoutStart { request_id: id }
            });
        };
        if p.header.version != h.version {
            return Err(GiopError::FragmentMismatch { what: "version" });
        }
        if p.header.order != h.order {
            return Err(GiopError::FragmentMismatch { what: "byte order" });
        }
        let total = self.partial_bytes.saturating_add(data.len());
        if total > self.cfg.max_reassembled_size {
            return Err(GiopError::TooLarge {
                size: total as u64,
                limit: self.cfg.max_reassembled_size as u64,
            });
        }
        self.partial_bytes = total;
        if id.is_none() && !data.is_empty() {
            p.segments.push(p.data.len());
        }
        p.data.extend_from_slice(&data);
        if h.more_fragments {
            return Ok(None);
        }
        let p = match id {
            Some(id) => self.partial12.remove(&id),
            None => self.partial11.take(),
        }
        .expect("present: found above");
        self.partial_bytes -= p.data.len();
        let size = u32::try_from(p.data.len()).map_err(|_| GiopError::TooLarge {
            size: p.data.len() as u64,
            limit: u32::MAX as u64,
        })?;
        match id {
            Some(_) => self.last_complete_12 = id,
            None => self.any_complete_11 = true,
        }
        let mut header = p.header;
        header.more_fragments = false;
        header.size = size;
        Ok(Some(Frame {
            header,
            payload: p.data.freeze(),
            segments: (!p.segments.is_empty()).then(|| p.segments.into()),
        }))
    }
}

/// Append `msg` (one complete GIOP message) to `out`, split into a first
/// message and GIOP 1.2 Fragments of at most `fragment_size` bytes each
/// (rounded down to a multiple of 8, at least 32) when it is longer.
/// Every piece but the last is a multiple of 8 bytes long, so no primitive
/// is split and alignment continues across pieces. Messages that are not
/// GIOP 1.2 Request/Reply/LocateRequest/LocateReply are appended whole.
pub fn fragment_message(msg: &[u8], fragment_size: usize, out: &mut BytesMut) -> Result<()> {
    let h = Header::parse(msg)?;
    if msg.len() != h.total_len() {
        return Err(GiopError::Trailing {
            what: "message to fragment",
            offset: h.total_len().min(msg.len()),
            remaining: msg.len().abs_diff(h.total_len()),
        });
    }
    let chunk = (fragment_size & !7).max(32);
    if msg.len() <= chunk || !starts_with_request_id(&h) {
        out.extend_from_slice(msg);
        return Ok(());
    }
    let id = read_u32(&msg[HEADER_LEN..], h.order).ok_or_else(truncated_id)?;
    out.reserve(msg.len() + (msg.len() / (chunk - FRAGMENT_HEADER_LEN_12) + 1) * 16);
    // First piece: the original header with the more-fragments flag.
    let start = out.len();
    let mut first = h;
    first.more_fragments = true;
    first.size = (chunk - HEADER_LEN) as u32;
    out.extend_from_slice(&first.to_bytes());
    out.extend_from_slice(&msg[HEADER_LEN..chunk]);
    debug_assert_eq!(out.len() - start, chunk);
    let per = chunk - FRAGMENT_HEADER_LEN_12;
    let mut rest = &msg[chunk..];
    while !rest.is_empty() {
        let n = rest.len().min(per);
        let more = n < rest.len();
        let mut fh = Header::new(h.version, h.order, MsgType::Fragment, (n + 4) as u32);
        fh.more_fragments = more;
        let at = out.len();
        out.extend_from_slice(&fh.to_bytes());
        patch_size(out, at, h.order, (n + 4) as u32);
        let idb = match h.order {
            ByteOrder::Big => id.to_be_bytes(),
            ByteOrder::Little => id.to_le_bytes(),
        };
        out.extend_from_slice(&idb);
        out.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::Version;

    fn msg(version: Version, order: ByteOrder, t: MsgType, more: bool, payload: &[u8]) -> Vec<u8> {
        let mut h = Header::new(version, order, t, payload.len() as u32);
        h.more_fragments = more;
        let mut v = h.to_bytes().to_vec();
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn partial_header_and_body_wait_for_more() {
        let m = msg(
            Version::V1_2,
            ByteOrder::Big,
            MsgType::CancelRequest,
            false,
            &[0, 0, 0, 5],
        );
        let mut d = Decoder::default();
        let mut buf = BytesMut::from(&m[..5]);
        assert_eq!(d.decode(&mut buf), Ok(None));
        buf.extend_from_slice(&m[5..14]);
        assert_eq!(d.decode(&mut buf), Ok(None));
        buf.extend_from_slice(&m[14..]);
        let f = d.decode(&mut buf).unwrap().unwrap();
        assert_eq!(&f.payload[..], &[0, 0, 0, 5]);
        assert!(buf.is_empty());
    }

    #[test]
    fn size_limit_checked_before_buffering() {
        let mut d = Decoder::new(CodecConfig {
            max_message_size: 100,
            max_reassembled_size: 100,
        });
        let mut buf = BytesMut::from(&b"GIOP\x01\x02\x00\x00\x00\x00\x00\x65"[..]);
        assert_eq!(
            d.decode(&mut buf),
            Err(GiopError::TooLarge {
                size: 101,
                limit: 100
            })
        );
    }

    #[test]
    fn fragments_12_interleaved_and_errors() {
        let o = ByteOrder::Little;
        let v = Version::V1_2;
        let mut s = Vec::new();
        s.extend(msg(
            v,
            o,
            MsgType::Request,
            true,
            &[1, 0, 0, 0, 0xA1, 0xA2, 0xA3, 0xA4],
        ));
        s.extend(msg(v, o, MsgType::Request, true, &[2, 0, 0, 0, 0xB1]));
        s.extend(msg(v, o, MsgType::Fragment, false, &[2, 0, 0, 0, 0xB2]));
        s.extend(msg(v, o, MsgType::Fragment, true, &[1, 0, 0, 0, 0xA5]));
        s.extend(msg(v, o, MsgType::Fragment, false, &[1, 0, 0, 0, 0xA6]));
        let mut d = Decoder::default();
        let mut buf = BytesMut::from(&s[..]);
        let f2 = d.decode(&mut buf).unwrap().unwrap();
        assert_eq!(&f2.payload[..], &[2, 0, 0, 0, 0xB1, 0xB2]);
        assert_eq!(f2.header.size, 6);
        assert!(!f2.header.more_fragments);
        let f1 = d.decode(&mut buf).unwrap().unwrap();
        assert_eq!(
            &f1.payload[..],
            &[1, 0, 0, 0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6]
        );
        assert_eq!(d.decode(&mut buf), Ok(None));
        // A fragment after the message completed, then an unknown id.
        let mut buf = BytesMut::from(&msg(v, o, MsgType::Fragment, false, &[1, 0, 0, 0, 9])[..]);
        assert_eq!(
            d.decode(&mut buf),
            Err(GiopError::FragmentAfterComplete {
                request_id: Some(1)
            })
        );
        let mut buf = BytesMut::from(&msg(v, o, MsgType::Fragment, false, &[7, 0, 0, 0, 9])[..]);
        assert_eq!(
            d.decode(&mut buf),
            Err(GiopError::FragmentWithoutStart {
                request_id: Some(7)
            })
        );
    }

    #[test]
    fn fragments_11_follow_their_message() {
        let o = ByteOrder::Big;
        let v = Version::V1_1;
        let mut d = Decoder::default();
        let mut buf = BytesMut::from(&msg(v, o, MsgType::Fragment, false, &[9])[..]);
        assert_eq!(
            d.decode(&mut buf),
            Err(GiopError::FragmentWithoutStart { request_id: None })
        );
        let mut d = Decoder::default();
        let mut s = msg(v, o, MsgType::Reply, true, &[1, 2]);
        s.extend(msg(v, o, MsgType::Fragment, false, &[3]));
        s.extend(msg(v, o, MsgType::Fragment, false, &[4]));
        let mut buf = BytesMut::from(&s[..]);
        assert_eq!(
            &d.decode(&mut buf).unwrap().unwrap().payload[..],
            &[1, 2, 3]
        );
        assert_eq!(
            d.decode(&mut buf),
            Err(GiopError::FragmentAfterComplete { request_id: None })
        );
    }

    #[test]
    fn reassembly_limit() {
        let o = ByteOrder::Big;
        let v = Version::V1_2;
        let mut d = Decoder::new(CodecConfig {
            max_message_size: 100,
            max_reassembled_size: 10,
        });
        let mut s = msg(v, o, MsgType::Request, true, &[0, 0, 0, 1, 0, 0, 0, 0]);
        s.extend(msg(v, o, MsgType::Fragment, false, &[0, 0, 0, 1, 1, 2, 3]));
        let mut buf = BytesMut::from(&s[..]);
        assert_eq!(
            d.decode(&mut buf),
            Err(GiopError::TooLarge {
                size: 11,
                limit: 10
            })
        );
    }

    #[test]
    fn fragment_message_pieces_are_multiples_of_8_and_reassemble() {
        let payload: Vec<u8> = (0..200u32).map(|i| i as u8).collect();
        let mut p = vec![0, 0, 0, 42];
        p.extend_from_slice(&payload);
        let m = msg(Version::V1_2, ByteOrder::Big, MsgType::Request, false, &p);
        let mut out = BytesMut::new();
        fragment_message(&m, 61, &mut out).unwrap();
        // chunk 56: first piece 56 bytes, then fragments of 40 data bytes.
        let mut lens = Vec::new();
        let mut i = 0;
        while i < out.len() {
            let h = Header::parse(&out[i..]).unwrap();
            lens.push((h.msg_type, h.more_fragments, h.total_len()));
            i += h.total_len();
        }
        assert_eq!(lens[0], (MsgType::Request, true, 56));
        assert!(lens[..lens.len() - 1].iter().all(|l| l.2 % 8 == 0 && l.1));
        assert!(!lens.last().unwrap().1);
        assert_eq!(lens.len(), 1 + (216usize - 56).div_ceil(40));
        let mut d = Decoder::default();
        let f = d.decode(&mut out).unwrap().unwrap();
        assert_eq!(&f.payload[..], &p[..]);
        assert!(out.is_empty());
    }

    /// A 1.2 Request of `n` payload bytes after its request id `id`.
    fn request(id: u32, n: usize, order: ByteOrder) -> (Vec<u8>, Vec<u8>) {
        let mut p = match order {
            ByteOrder::Big => id.to_be_bytes().to_vec(),
            ByteOrder::Little => id.to_le_bytes().to_vec(),
        };
        p.extend((0..n).map(|i| (i * 31 + id as usize) as u8));
        (msg(Version::V1_2, order, MsgType::Request, false, &p), p)
    }

    /// Every frame of `stream`, fed to one decoder `chunk` bytes at a time.
    fn decode_all(stream: &[u8], chunk: usize) -> Vec<Vec<u8>> {
        let mut d = Decoder::default();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in stream.chunks(chunk.max(1)) {
            buf.extend_from_slice(piece);
            while let Some(f) = d.decode(&mut buf).unwrap() {
                assert!(!f.header.more_fragments);
                assert_eq!(f.header.size as usize, f.payload.len());
                out.push(f.payload.to_vec());
            }
        }
        assert!(buf.is_empty() && !d.in_progress());
        out
    }

    #[test]
    fn fragments_that_follow_each_other_are_joined_in_the_buffer() {
        let o = ByteOrder::Little;
        // omniORB's client: a 1 KiB Request marked "more", the rest of a
        // large sequence in it, then a Fragment with the last 4 bytes.
        let (_, p1) = request(7, 4092, o);
        let first = msg(Version::V1_2, o, MsgType::Request, true, &p1[..4092]);
        let tail = msg(
            Version::V1_2,
            o,
            MsgType::Fragment,
            false,
            &[7, 0, 0, 0, 1, 2, 3, 4],
        );
        let mut want1 = p1[..4092].to_vec();
        want1.extend_from_slice(&[1, 2, 3, 4]);
        // Then a message in five pieces, then one whole.
        let (m2, p2) = request(8, 200, o);
        let mut frag2 = BytesMut::new();
        fragment_message(&m2, 61, &mut frag2).unwrap();
        let (m3, p3) = request(9, 10, o);
        let mut s = first.clone();
        s.extend_from_slice(&tail);
        s.extend_from_slice(&frag2);
        s.extend_from_slice(&m3);
        // Whole: the joined message's payload lies in the buffer the
        // bytes were read into (no copy of the first piece).
        let mut d = Decoder::default();
        let mut buf = BytesMut::from(&s[..]);
        let base = buf.as_ptr() as usize;
        let f = d.decode(&mut buf).unwrap().unwrap();
        assert_eq!(&f.payload[..], &want1[..]);
        assert_eq!(f.payload.as_ptr() as usize, base + HEADER_LEN);
        assert_eq!(f.header.msg_type, MsgType::Request);
        // A fragment of it after it completed is still named as such.
        let mut late = BytesMut::from(&tail[..]);
        assert_eq!(
            Decoder::default().decode(&mut late),
            Err(GiopError::FragmentWithoutStart {
                request_id: Some(7)
            })
        );
        let mut late = BytesMut::from(&tail[..]);
        let mut d2 = Decoder::default();
        let mut joined = BytesMut::from(&s[..first.len() + tail.len()]);
        assert!(d2.decode(&mut joined).unwrap().is_some());
        assert_eq!(
            d2.decode(&mut late),
            Err(GiopError::FragmentAfterComplete {
                request_id: Some(7)
            })
        );
        assert_eq!(&d.decode(&mut buf).unwrap().unwrap().payload[..], &p2[..]);
        assert_eq!(&d.decode(&mut buf).unwrap().unwrap().payload[..], &p3[..]);
        assert_eq!(d.decode(&mut buf), Ok(None));
        // Read in any chunking: the same messages.
        for chunk in [1, 3, 12, 16, 17, 100, 1000, s.len()] {
            assert_eq!(
                decode_all(&s, chunk),
                vec![want1.clone(), p2.clone(), p3.clone()],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn long_chains_and_mismatched_pieces_take_the_usual_path() {
        let o = ByteOrder::Big;
        // More pieces than are joined in place.
        let (m, p) = request(3, 2000, o);
        let mut s = BytesMut::new();
        fragment_message(&m, 64, &mut s).unwrap();
        for chunk in [5, 64, s.len()] {
            assert_eq!(decode_all(&s, chunk), vec![p.clone()]);
        }
        // A fragment of another byte order between the pieces is an error
        // of the usual path, raised when it is reached.
        let mut s = msg(
            Version::V1_2,
            o,
            MsgType::Request,
            true,
            &[0, 0, 0, 1, 9, 9, 9, 9],
        );
        s.extend(msg(
            Version::V1_2,
            ByteOrder::Little,
            MsgType::Fragment,
            false,
            &[1, 0, 0, 0, 5],
        ));
        let mut d = Decoder::default();
        let mut buf = BytesMut::from(&s[..]);
        assert_eq!(
            d.decode(&mut buf),
            Err(GiopError::FragmentMismatch { what: "byte order" })
        );
    }

    #[test]
    fn a_first_piece_over_the_reassembly_limit_is_refused_at_once() {
        // Three first pieces of 40 bytes and no fragments: the third puts
        // 120 bytes in reassembly, over the limit of 96, and is refused
        // when it arrives, not held in the buffer waiting for a fragment.
        let mut d = Decoder::new(CodecConfig {
            max_message_size: 64,
            max_reassembled_size: 96,
        });
        let mut s = Vec::new();
        for id in 60..63u32 {
            let mut p = id.to_be_bytes().to_vec();
            p.extend([0u8; 36]);
            s.extend(msg(
                Version::V1_2,
                ByteOrder::Big,
                MsgType::Request,
                true,
                &p,
            ));
        }
        let mut buf = BytesMut::from(&s[..]);
        assert_eq!(
            d.decode(&mut buf),
            Err(GiopError::TooLarge {
                size: 120,
                limit: 96
            })
        );
    }

    proptest::proptest! {
        #[test]
        fn any_fragmentation_in_any_chunking_gives_the_messages(
            sizes in proptest::collection::vec(0usize..3000, 1..4),
            frag in 32usize..2048,
            chunk in 1usize..5000,
        ) {
            let mut s = BytesMut::new();
            let mut want = Vec::new();
            for (i, n) in sizes.iter().enumerate() {
                let (m, p) = request(i as u32 + 1, *n, ByteOrder::Little);
                fragment_message(&m, frag, &mut s).unwrap();
                want.push(p);
            }
            proptest::prop_assert_eq!(decode_all(&s, chunk), want);
        }
    }
}
