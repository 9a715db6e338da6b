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

use bytes::{Bytes, BytesMut};
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

    /// Whether a fragmented message is being reassembled.
    pub fn in_progress(&self) -> bool {
        self.partial11.is_some() || !self.partial12.is_empty()
    }

    /// The next complete message in `buf`, consuming its bytes; `Ok(None)`
    /// when more bytes are needed (room for the declared size is reserved).
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>> {
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
                buf.reserve(total - buf.len());
                return Ok(None);
            }
            let frame = buf.split_to(total).freeze();
            let payload = frame.slice(HEADER_LEN..);
            if let Some(f) = self.accept(h, payload)? {
                return Ok(Some(f));
            }
        }
    }

    fn accept(&mut self, h: Header, payload: Bytes) -> Result<Option<Frame>> {
        if h.msg_type == MsgType::Fragment {
            return self.fragment(h, payload);
        }
        if !h.more_fragments {
            if starts_with_request_id(&h) {
                self.last_complete_12 = read_u32(&payload, h.order);
            } else if h.version.minor == 1 {
                self.any_complete_11 = true;
            }
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
}
