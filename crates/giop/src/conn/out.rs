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
/// 10–25 % of twoway throughput from 64 KiB on, `iiopbench orbs compare`). A oneway
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

/// Large twoways a connection (or a new size class) writes headers-first
/// before it times anything: its first round trips are not like the
/// rest (the peer's buffers, threads and caches warming up).
pub const HEAD_FIRST_SETTLE: u32 = 256;

/// Calls in each block of a trial; the first call of a block, a change
/// of way, is not timed.
pub const HEAD_FIRST_BLOCK: u32 = 8;

/// A trial's blocks start this many calls apart; the calls between them
/// go headers-first, untimed. A peer may take one way fast for a few
/// milliseconds and slow for the next few (omniORB's server, headers-first
/// at 64 KiB: 28 µs for a while, then 49, whole writes 43 throughout), so
/// the blocks are spread over some time rather than run back to back.
pub const HEAD_FIRST_SPACING: u32 = 64;

/// The trial's blocks and their ways (`true`: head first): ABBA twice, so
/// that a drift in the machine's speed weighs on both ways alike.
const TRIAL_WAYS: [bool; 8] = [true, false, false, true, true, false, false, true];

/// Calls a trial spans.
const TRIAL_CALLS: u32 = TRIAL_WAYS.len() as u32 * HEAD_FIRST_SPACING;

/// Calls written the chosen way after which both ways are timed again
/// (a trial's calls of the slower way land in a latency run's tail: at
/// this spacing, beyond its p99.9).
pub const HEAD_FIRST_RETRY: u32 = 65536;

/// Whole writes are chosen only when their mean round trip is below
/// this share of headers-first's: headers-first, the way sleeping
/// servers (most ORBs') gain from, stays unless whole writes clearly win.
const WHOLE_MARGIN: f64 = 0.90;

/// Which way a connection writes a large twoway request: its head alone
/// first ([`first_write`]), or whole; chosen by which got replies sooner.
///
/// Headers-first pays for itself only when the receiver sleeps: its
/// wake-up then overlaps the copy of the body into the kernel. A receiver
/// that polls for its bytes is awake already, and the head's own write (a
/// segment through the whole TCP path, on loopback inside the sender's
/// system call: 6 of a 27 µs round trip of 32 KiB, traced) is added to
/// every round trip. Twoway octets, ours → our thread-per-connection
/// server polling 1 ms: whole writes 1.43x the Mbit/s of headers-first at
/// 32 KiB, 1.15x at 64 KiB, the same at 128 KiB; against sleeping servers
/// (our reactor, our blocking threads, omniORB's) headers-first was worth
/// 1.15–1.4x from 40 to 96 KiB in the same runs. A client cannot see how
/// its server waits, so each connection times both ways: after
/// [`HEAD_FIRST_SETTLE`] calls, eight blocks of [`HEAD_FIRST_BLOCK`]
/// spread over [`HEAD_FIRST_SPACING`] calls each (each way timed in four,
/// so that both see the machine and the peer in the same states);
/// then whole writes if their mean round trip, less the slowest seventh,
/// is clearly lower ([`WHOLE_MARGIN`]), else headers-first; until
/// [`HEAD_FIRST_RETRY`] calls later, or a message of another size class
/// (under half or over double the one timed), times them again.
#[derive(Debug, Clone, Default)]
pub struct HeadFirstTuner {
    /// The message size the timings are for.
    size: usize,
    /// Calls written headers-first, untimed, before this trial:
    /// [`HEAD_FIRST_SETTLE`] on a new connection or size class, none when
    /// a warm connection times again.
    settle: u32,
    /// Calls since this trial (its settling included) began.
    calls: u32,
    /// Round trips timed so far (ns): `[whole, head first]`.
    timed: [Vec<u64>; 2],
    /// The way chosen (`true`: head first), once the trial is over.
    chosen: Option<bool>,
}

impl HeadFirstTuner {
    /// A trial for messages of `size`, after `settle` untimed calls.
    fn start(size: usize, settle: u32) -> HeadFirstTuner {
        HeadFirstTuner {
            size,
            settle,
            ..HeadFirstTuner::default()
        }
    }

    /// Whether the next eligible request, `len` bytes, writes its head
    /// alone first.
    pub fn split(&mut self, len: usize) -> bool {
        let same_class =
            self.size > 0 && len >= self.size / 2 && len <= self.size.saturating_mul(2);
        if !same_class {
            *self = HeadFirstTuner::start(len, HEAD_FIRST_SETTLE);
        } else if self.calls >= self.settle + TRIAL_CALLS + HEAD_FIRST_RETRY {
            *self = HeadFirstTuner::start(self.size, 0);
        }
        match self.chosen {
            Some(way) => way,
            None => self.trial_step().and_then(trial_way).unwrap_or(true),
        }
    }

    /// A request written the way [`split`](Self::split) said (`split`)
    /// got its reply `round_trip` after its first byte was written.
    pub fn record(&mut self, split: bool, round_trip: std::time::Duration) {
        if let Some(step) = self.trial_step() {
            // The first call of a block, a change of way, is not timed.
            if trial_way(step) == Some(split) && !step.is_multiple_of(HEAD_FIRST_SPACING) {
                let ns = u64::try_from(round_trip.as_nanos()).unwrap_or(u64::MAX);
                self.timed[usize::from(split)].push(ns);
            }
            if step + 1 == TRIAL_CALLS {
                let [whole, head] = self.timed.each_mut().map(|t| trimmed_mean(t));
                self.chosen = Some((whole as f64) >= (head as f64) * WHOLE_MARGIN);
            }
        }
        self.calls = self.calls.saturating_add(1);
    }

    /// Where the next call is in the trial, once settled and while no way
    /// is chosen.
    fn trial_step(&self) -> Option<u32> {
        let step = self.calls.checked_sub(self.settle)?;
        (self.chosen.is_none() && step < TRIAL_CALLS).then_some(step)
    }
}

/// The way of the trial's call `step` if it is in one of the trial's
/// blocks (else it falls between blocks and goes headers-first).
fn trial_way(step: u32) -> Option<bool> {
    (step % HEAD_FIRST_SPACING < HEAD_FIRST_BLOCK)
        .then(|| TRIAL_WAYS[(step / HEAD_FIRST_SPACING) as usize])
}

/// The mean of `v` without its largest seventh: a stall of the machine
/// in a trial does not decide it, while a way that is slow on every
/// other call (a peer that sleeps between some calls and not others)
/// counts as slow as it is, which a median would hide.
fn trimmed_mean(v: &mut [u64]) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    let keep = &v[..v.len() - v.len() / 7];
    keep.iter().sum::<u64>() / keep.len() as u64
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

    /// `f` over the queue's first `limit` bytes as write pieces
    /// ([`slices`](Self::slices)): the one slice alone when nothing is
    /// spliced, without filling a table of [`MAX_IOV`] for it (a
    /// sixteenth of the client's own instructions on a loopback ping).
    pub fn with_slices<R>(&self, limit: usize, f: impl FnOnce(&[IoSlice<'_>]) -> R) -> R {
        if self.splices.is_empty() {
            return f(&[IoSlice::new(&self.buf[..self.buf.len().min(limit)])]);
        }
        let mut iov = [IoSlice::new(&[]); MAX_IOV];
        let n = self.slices(limit, &mut iov);
        f(&iov[..n])
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
    use std::time::Duration;

    fn queue() -> Outbox {
        let mut o = Outbox::new(64, Some(4));
        let (buf, splices) = o.parts();
        buf.extend_from_slice(b"abc");
        splices.push(3, Bytes::from_static(b"RUN1"));
        buf.extend_from_slice(b"de");
        o
    }

    const TRIAL: usize = TRIAL_CALLS as usize;

    /// Settle, then a whole trial at these round trips; the calls' ways.
    fn trial(t: &mut HeadFirstTuner, len: usize, whole_us: u64, head_us: u64) -> Vec<bool> {
        let n = HEAD_FIRST_SETTLE as usize + TRIAL;
        (0..n)
            .map(|_| {
                let split = t.split(len);
                let us = if split { head_us } else { whole_us };
                t.record(split, Duration::from_micros(us));
                split
            })
            .collect()
    }

    #[test]
    fn head_first_tuner_settles_tries_both_then_keeps_the_faster_way() {
        let mut t = HeadFirstTuner::default();
        let ways = trial(&mut t, 65536, 20, 30);
        let settle = HEAD_FIRST_SETTLE as usize;
        assert!(
            ways[..settle].iter().all(|&w| w),
            "headers-first while settling"
        );
        let (b, gap) = (HEAD_FIRST_BLOCK as usize, HEAD_FIRST_SPACING as usize);
        let whole_at = |i: usize| i % gap < b && [1, 2, 5, 6].contains(&(i / gap));
        let want: Vec<bool> = (0..TRIAL).map(|i| !whole_at(i)).collect();
        assert_eq!(
            ways[settle..],
            want[..],
            "blocks of head first, whole, whole, head first, twice; headers-first between"
        );
        assert_eq!(t.chosen, Some(false), "whole writes got replies sooner");
        assert!((0..100).all(|_| !t.split(65536)));
        let mut t = HeadFirstTuner::default();
        trial(&mut t, 65536, 30, 20);
        assert_eq!(t.chosen, Some(true));
        assert!(t.split(40000) && t.split(131072), "the same size class");
    }

    #[test]
    fn head_first_tuner_keeps_headers_first_unless_whole_clearly_wins() {
        let mut t = HeadFirstTuner::default();
        trial(&mut t, 65536, 92, 100);
        assert_eq!(t.chosen, Some(true), "8 % is within the margin");
        let mut t = HeadFirstTuner::default();
        trial(&mut t, 65536, 85, 100);
        assert_eq!(t.chosen, Some(false));
    }

    /// Settle, then a trial whose round trips `us(split, step)` gives.
    fn trial_by(t: &mut HeadFirstTuner, us: impl Fn(bool, usize) -> u64) {
        for _ in 0..HEAD_FIRST_SETTLE {
            let split = t.split(65536);
            t.record(split, Duration::from_millis(50));
        }
        assert_eq!(t.chosen, None, "settling times nothing");
        for i in 0..TRIAL {
            let split = t.split(65536);
            t.record(split, Duration::from_micros(us(split, i)));
        }
    }

    #[test]
    fn head_first_tuner_is_not_decided_by_a_stall_or_a_change_of_way() {
        // Whole writes are faster but for a stall of 10 ms; the first call
        // of each block (after a change of way) is slow either way.
        let mut t = HeadFirstTuner::default();
        trial_by(&mut t, |split, i| match (split, i) {
            (false, 66) => 10_000,
            (_, i) if i % HEAD_FIRST_SPACING as usize == 0 => 1_000,
            (false, _) => 20,
            (true, _) => 25,
        });
        assert_eq!(t.chosen, Some(false));
    }

    #[test]
    fn head_first_tuner_counts_a_way_slow_on_every_third_call() {
        // Headers-first takes 20 µs, but 90 on every third call (a peer
        // asleep for some calls): its median, 20, would beat whole writes
        // at 25 µs; its mean, less the slowest seventh, does not.
        let mut t = HeadFirstTuner::default();
        trial_by(&mut t, |split, i| match split {
            true if i % 3 == 0 => 90,
            true => 20,
            false => 25,
        });
        assert_eq!(t.chosen, Some(false));
    }

    #[test]
    fn head_first_tuner_times_again_for_another_size_and_after_a_while() {
        let mut t = HeadFirstTuner::default();
        trial(&mut t, 65536, 20, 30);
        assert_eq!(t.chosen, Some(false));
        // Four times the size: timed anew, and here head first wins.
        trial(&mut t, 262144, 60, 40);
        assert_eq!(t.chosen, Some(true));
        for _ in 0..HEAD_FIRST_RETRY {
            assert!(t.split(262144));
            t.record(true, Duration::from_micros(40));
        }
        assert!(t.split(262144), "a new trial starts head first");
        assert_eq!(
            t.chosen, None,
            "after HEAD_FIRST_RETRY calls both are timed again"
        );
        // Without settling again: a block of headers-first and the calls
        // up to the next block, then whole.
        for _ in 0..HEAD_FIRST_SPACING {
            assert!(t.split(262144));
            t.record(true, Duration::from_micros(40));
        }
        assert!(!t.split(262144));
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
