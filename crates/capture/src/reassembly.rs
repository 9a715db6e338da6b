//! TCP stream reassembly for one direction of a connection, as seen by a
//! passive observer: segments may come out of order, be retransmitted
//! (wholly or partly overlapping what was delivered), or the capture may
//! start in the middle of the connection. Bytes are delivered in stream
//! order exactly once. Out-of-order data is held up to a limit; beyond it
//! (a segment the capture lost) the hole is skipped and reported as a gap,
//! so memory stays bounded whatever the capture holds.

use std::collections::BTreeMap;

/// What the reassembler hands on.
#[derive(Debug, PartialEq, Eq)]
pub enum Delivery<'a> {
    /// Contiguous bytes starting at stream offset `pos`.
    Data { pos: u64, bytes: &'a [u8] },
    /// `missing` bytes were never captured; data resumes after them.
    Gap { missing: u64 },
}

/// Reassembly state of one direction.
#[derive(Debug)]
pub struct Reassembler {
    /// Sequence number of the next byte to deliver, once known.
    next_seq: Option<u32>,
    /// Stream offset of that byte (0 = the first byte seen or after SYN).
    next_pos: u64,
    /// Whether the stream's start was seen (a SYN): offset 0 is byte 0.
    pub from_start: bool,
    /// Held out-of-order segments by stream offset.
    held: BTreeMap<u64, Vec<u8>>,
    held_bytes: usize,
    limit: usize,
    /// Counters.
    pub retransmitted_bytes: u64,
    pub out_of_order_segments: u64,
    pub gaps: u64,
    pub missing_bytes: u64,
}

impl Reassembler {
    /// A reassembler that holds at most `limit` bytes out of order.
    pub fn new(limit: usize) -> Self {
        Reassembler {
            next_seq: None,
            next_pos: 0,
            from_start: false,
            held: BTreeMap::new(),
            held_bytes: 0,
            limit,
            retransmitted_bytes: 0,
            out_of_order_segments: 0,
            gaps: 0,
            missing_bytes: 0,
        }
    }

    /// Bytes currently held out of order.
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    /// Feed one segment (`seq`, SYN flag, payload); `out` receives what
    /// becomes deliverable, in order.
    pub fn segment(
        &mut self,
        seq: u32,
        syn: bool,
        payload: &[u8],
        out: &mut dyn FnMut(Delivery<'_>),
    ) {
        let mut seq = seq;
        if syn {
            // The SYN takes one sequence number; data (rare) follows it.
            if self.next_seq.is_none() {
                self.next_seq = Some(seq.wrapping_add(1));
                self.from_start = true;
            }
            seq = seq.wrapping_add(1);
        }
        if payload.is_empty() {
            return;
        }
        let next = match self.next_seq {
            Some(n) => n,
            None => {
                // Mid-connection start: this segment begins the stream.
                self.next_seq = Some(seq);
                seq
            }
        };
        let diff = seq.wrapping_sub(next) as i32;
        if diff < 0 {
            let old = (-(diff as i64)) as usize;
            if old >= payload.len() {
                self.retransmitted_bytes += payload.len() as u64;
                return;
            }
            self.retransmitted_bytes += old as u64;
            self.deliver(&payload[old..], out);
        } else if diff == 0 {
            self.deliver(payload, out);
        } else {
            self.out_of_order_segments += 1;
            let pos = self.next_pos + diff as u64;
            let keep = match self.held.get(&pos) {
                Some(v) => v.len() < payload.len(),
                None => true,
            };
            if keep {
                if let Some(v) = self.held.insert(pos, payload.to_vec()) {
                    self.held_bytes -= v.len();
                }
                self.held_bytes += payload.len();
            } else {
                self.retransmitted_bytes += payload.len() as u64;
            }
            while self.held_bytes > self.limit {
                self.skip_to_held(out);
            }
        }
    }

    /// Deliver `bytes` at the current position, then whatever held data
    /// became contiguous.
    fn deliver(&mut self, bytes: &[u8], out: &mut dyn FnMut(Delivery<'_>)) {
        out(Delivery::Data {
            pos: self.next_pos,
            bytes,
        });
        self.advance(bytes.len());
        self.drain(out);
    }

    fn advance(&mut self, n: usize) {
        self.next_pos += n as u64;
        self.next_seq = self.next_seq.map(|s| s.wrapping_add(n as u32));
    }

    fn drain(&mut self, out: &mut dyn FnMut(Delivery<'_>)) {
        while let Some((&pos, _)) = self.held.first_key_value() {
            if pos > self.next_pos {
                break;
            }
            let v = self.held.remove(&pos).expect("first key exists");
            self.held_bytes -= v.len();
            let skip = (self.next_pos - pos) as usize;
            if skip >= v.len() {
                self.retransmitted_bytes += v.len() as u64;
                continue;
            }
            self.retransmitted_bytes += skip as u64;
            out(Delivery::Data {
                pos: self.next_pos,
                bytes: &v[skip..],
            });
            self.advance(v.len() - skip);
        }
    }

    /// Give up on the hole before the first held segment.
    fn skip_to_held(&mut self, out: &mut dyn FnMut(Delivery<'_>)) {
        let Some((&pos, _)) = self.held.first_key_value() else {
            return;
        };
        let missing = pos - self.next_pos;
        self.gaps += 1;
        self.missing_bytes += missing;
        out(Delivery::Gap { missing });
        self.advance(missing as usize);
        self.drain(out);
    }

    /// End of capture (or of the connection): deliver everything held,
    /// skipping holes.
    pub fn flush(&mut self, out: &mut dyn FnMut(Delivery<'_>)) {
        while !self.held.is_empty() {
            self.skip_to_held(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(r: &mut Reassembler, segs: &[(u32, bool, &[u8])]) -> (Vec<u8>, u64) {
        let mut data = Vec::new();
        let mut gaps = 0;
        for (seq, syn, p) in segs {
            r.segment(*seq, *syn, p, &mut |d| match d {
                Delivery::Data { pos, bytes } => {
                    assert_eq!(pos as usize, data.len() + gaps as usize);
                    data.extend_from_slice(bytes)
                }
                Delivery::Gap { missing } => gaps += missing,
            });
        }
        (data, gaps)
    }

    #[test]
    fn in_order_out_of_order_and_retransmitted() {
        let mut r = Reassembler::new(1 << 20);
        let (d, g) = run(
            &mut r,
            &[
                (99, true, b""),
                (100, false, b"abc"),
                (106, false, b"ghi"),
                (103, false, b"def"),
                (100, false, b"abcdef"),
                (104, false, b"efghij"),
            ],
        );
        assert_eq!(d, b"abcdefghij");
        assert_eq!(g, 0);
        assert_eq!(r.retransmitted_bytes, 6 + 5);
        assert!(r.from_start);
    }

    #[test]
    fn sequence_wraps() {
        let mut r = Reassembler::new(1 << 20);
        let (d, _) = run(
            &mut r,
            &[
                (u32::MAX - 1, false, b"ab"),
                (1, false, b"de"),
                (0, false, b"c"),
            ],
        );
        assert_eq!(d, b"abcde");
    }

    #[test]
    fn lost_segment_becomes_a_gap_at_the_limit() {
        let mut r = Reassembler::new(4);
        let (d, g) = run(
            &mut r,
            &[
                (0, false, b"ab"),
                (4, false, b"ef"),
                (6, false, b"gh"),
                (8, false, b"i"),
            ],
        );
        assert_eq!(d, b"abefghi");
        assert_eq!(g, 2);
        assert_eq!(r.gaps, 1);
    }
}
