//! Bytes a connection has to write, kept as a buffer with shared runs
//! spliced in ([`Splices`]), and how they are handed to a (vectored)
//! write: the pure half of zero-copy output and of "headers first".
//!
//! Shared runs of at least the splice cutoff (an
//! [`Octets`](iiop_cdr::Octets) or [`CharSeq`](iiop_cdr::CharSeq) in a
//! request body, the body of a [`Prepared`](super::client::Prepared)
//! message) are not copied into the buffer but queued by reference, and a
//! driver hands them to the kernel with `writev` between the buffer pieces
//! around them (omniORB's `directSendCutOff` idea). The bytes on the wire
//! are the same.

use std::io::IoSlice;

use bytes::BytesMut;
use iiop_cdr::Splices;

/// Most pieces handed to one vectored write (well under every IOV_MAX).
pub const MAX_IOV: usize = 64;

/// Most bytes of a large message written ahead of the rest.
pub const HEAD_BYTES: usize = 1024;

/// Oneways are written headers-first only from this size on.
const ONEWAY_HEAD_FIRST: usize = 96 * 1024;

/// The size from which a message goes headers-first: the server wakes and
/// reads the headers (at most [`HEAD_BYTES`]) while the sender still copies
/// the body into the kernel, instead of starting only once the whole
/// message is there (omniORB sends large requests the same way; worth
/// 10–25 % of twoway throughput from 64 KiB on, benches/compare). A oneway
/// stream keeps the server busy: its own write for the head then only
/// costs a second wake-up, except for messages that span several segments
/// anyway (measured: 64 KiB oneways lose, 128 KiB ones gain, against our
/// server and omniORB's).
pub fn head_first_for(head_first: Option<usize>, expects_reply: bool) -> Option<usize> {
    match expects_reply {
        true => head_first,
        false => head_first.map(|n| n.max(ONEWAY_HEAD_FIRST)),
    }
}

/// How many of `len` bytes to be sent the first write may take: the head
/// ([`HEAD_BYTES`]) of a message of at least `head_first` bytes, else
/// everything (`usize::MAX`). The raw-TCP baseline writes its frames by
/// the same rule.
pub fn first_write(len: usize, head_first: Option<usize>) -> usize {
    match head_first {
        Some(min) if len >= min => HEAD_BYTES,
        _ => usize::MAX,
    }
}

/// Bytes waiting to be written: `buf` with shared runs spliced in.
#[derive(Debug)]
pub struct Outbox {
    buf: BytesMut,
    splices: Splices,
}

impl Outbox {
    /// An empty queue with room for `capacity` buffer bytes that splices
    /// runs of at least `splice_cutoff` bytes (`None`: copies everything).
    pub fn new(capacity: usize, splice_cutoff: Option<usize>) -> Outbox {
        Outbox {
            buf: BytesMut::with_capacity(capacity),
            splices: Splices::new(splice_cutoff.unwrap_or(usize::MAX)),
        }
    }

    /// Bytes queued, spliced runs included.
    pub fn len(&self) -> usize {
        self.buf.len() + self.splices.total()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty() && self.splices.is_empty()
    }

    /// The buffer and the runs spliced into it, to encode into.
    pub fn parts(&mut self) -> (&mut BytesMut, &mut Splices) {
        (&mut self.buf, &mut self.splices)
    }

    /// Everything queued, moved out (the buffer's spare room stays here).
    pub fn take(&mut self) -> Outbox {
        Outbox {
            buf: self.buf.split(),
            splices: self.splices.take(),
        }
    }

    /// Forget everything queued.
    pub fn clear(&mut self) {
        self.buf.clear();
        if !self.splices.is_empty() {
            self.splices.take();
        }
    }

    /// Undo a message begun at buffer index `start` (its bytes and runs).
    pub(crate) fn truncate(&mut self, start: usize) {
        self.buf.truncate(start);
        self.splices.truncate_after(start);
    }

    /// How many bytes the first write of the queue may take
    /// ([`first_write`]).
    pub fn first_write(&self, head_first: Option<usize>) -> usize {
        first_write(self.len(), head_first)
    }

    /// The queue's first `limit` bytes as write pieces: one slice when
    /// nothing is spliced (a plain `send`, as the other ORBs' clients do),
    /// else at most [`MAX_IOV`] pieces in stream order. Returns how many
    /// of `iov` were filled.
    pub fn slices<'a>(&'a self, limit: usize, iov: &mut [IoSlice<'a>; MAX_IOV]) -> usize {
        if self.splices.is_empty() {
            iov[0] = IoSlice::new(&self.buf[..self.buf.len().min(limit)]);
            return 1;
        }
        let (mut n, mut left) = (0, limit);
        for (slot, seg) in iov.iter_mut().zip(self.splices.segments(&self.buf)) {
            if left == 0 {
                break;
            }
            let k = seg.len().min(left);
            *slot = IoSlice::new(&seg[..k]);
            left -= k;
            n += 1;
        }
        n
    }

    /// Whether nothing is spliced (the queue is one contiguous buffer).
    pub fn is_contiguous(&self) -> bool {
        self.splices.is_empty()
    }

    /// The buffer, when nothing is spliced into it.
    pub fn contiguous(&self) -> Option<&[u8]> {
        self.splices.is_empty().then_some(&self.buf[..])
    }

    /// Drop the first `n` bytes of the queue: they were written.
    pub fn consume(&mut self, n: usize) {
        if self.splices.is_empty() {
            bytes::Buf::advance(&mut self.buf, n);
        } else {
            self.splices.consume(&mut self.buf, n);
        }
    }

    /// The whole queue as one contiguous copy (tests, captures).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut flat = BytesMut::with_capacity(self.len());
        self.splices.flatten_into(&self.buf, &mut flat);
        flat.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn queue() -> Outbox {
        let mut o = Outbox::new(64, Some(4));
        let (buf, splices) = o.parts();
        buf.extend_from_slice(b"abc");
        splices.push(3, Bytes::from_static(b"RUN1"));
        buf.extend_from_slice(b"de");
        o
    }

    #[test]
    fn slices_follow_stream_order_and_stop_at_the_limit() {
        let o = queue();
        assert_eq!(o.len(), 9);
        let mut iov = [IoSlice::new(&[]); MAX_IOV];
        let n = o.slices(usize::MAX, &mut iov);
        let got: Vec<&[u8]> = iov[..n].iter().map(|s| &s[..]).collect();
        assert_eq!(got, [&b"abc"[..], b"RUN1", b"de"]);
        let n = o.slices(5, &mut iov);
        let got: Vec<&[u8]> = iov[..n].iter().map(|s| &s[..]).collect();
        assert_eq!(got, [&b"abc"[..], b"RU"]);
        assert_eq!(o.to_vec(), b"abcRUN1de");
    }

    #[test]
    fn consume_across_a_run_and_take() {
        let mut o = queue();
        o.consume(5);
        assert_eq!(o.to_vec(), b"N1de");
        let taken = o.take();
        assert!(o.is_empty());
        assert_eq!(taken.to_vec(), b"N1de");
    }

    #[test]
    fn head_first_only_for_large_messages_and_later_for_oneways() {
        assert_eq!(head_first_for(Some(16384), true), Some(16384));
        assert_eq!(head_first_for(Some(16384), false), Some(96 * 1024));
        assert_eq!(head_first_for(None, false), None);
        let o = queue();
        assert_eq!(o.first_write(Some(9)), HEAD_BYTES);
        assert_eq!(o.first_write(Some(10)), usize::MAX);
        assert_eq!(o.first_write(None), usize::MAX);
    }

    #[test]
    fn a_plain_queue_is_one_slice() {
        let mut o = Outbox::new(8, None);
        o.parts().0.extend_from_slice(b"hello");
        let mut iov = [IoSlice::new(&[]); MAX_IOV];
        assert_eq!(o.slices(3, &mut iov), 1);
        assert_eq!(&iov[0][..], b"hel");
        assert_eq!(o.contiguous(), Some(&b"hello"[..]));
        o.truncate(2);
        assert_eq!(o.to_vec(), b"he");
    }
}
