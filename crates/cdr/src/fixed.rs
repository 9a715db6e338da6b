//! Sequences of fixed-layout structs (structs of primitives only, like
//! seed 000's `PerfStruct`) encoded and decoded at precomputed member
//! offsets: one bounds check per element instead of one per member.
//!
//! Inside a sequence, every element after the first starts at the same
//! alignment phase (the one left by the struct's most-aligned member), so
//! from there on the layout repeats with a constant stride. Elements before
//! that phase is reached (at most the first) go through serde, and so does
//! everything when the reader is segmented (GIOP 1.1 fragments realign).
//! The bytes are identical to serde's, which the tests check.

use serde::{de::DeserializeOwned, Serialize};

use crate::error::{CdrError, Result};
use crate::options::ByteOrder;
use crate::{Reader, Writer};

/// A struct of primitives with a fixed CDR layout.
///
/// Offsets given to [`put`](Self::put) / [`get`](Self::get) are relative to
/// the first member, which starts at a stream position `p` with
/// `p % ALIGN == PHASE`.
pub trait FixedLayout: Serialize + DeserializeOwned {
    /// The largest member alignment.
    const ALIGN: usize;
    /// Alignment of the first member.
    const FIRST_ALIGN: usize;
    /// Alignment phase (position mod `ALIGN`) of the first member of every
    /// element after the first.
    const PHASE: usize;
    /// Distance between the first members of consecutive elements.
    const STRIDE: usize;
    /// Bytes from the first member to the end of the last one.
    const SIZE: usize;
    /// Encode one element into `out` (exactly `SIZE` bytes; padding inside
    /// is already zero).
    fn put(&self, out: &mut [u8], order: ByteOrder);
    /// Decode one element from `inp` (exactly `SIZE` bytes).
    fn get(inp: &[u8], order: ByteOrder) -> Self;
}

/// Write `sequence<T>`: length, then the elements.
pub fn write_fixed_seq<T: FixedLayout>(w: &mut Writer<'_>, v: &[T]) -> Result<()> {
    w.write_len(v.len())?;
    let mut i = 0;
    while i < v.len() && !steady::<T>(w.position()) {
        crate::to_writer(w, &v[i])?;
        i += 1;
    }
    let rest = &v[i..];
    if rest.is_empty() {
        return Ok(());
    }
    // Pad to the first member, then lay every element out at its stride.
    let pos = w.position();
    let pad = first_member_start::<T>(pos) - pos;
    let bytes = pad + (rest.len() - 1) * T::STRIDE + T::SIZE;
    let order = w.order();
    let buf = w.buffer();
    let start = buf.len();
    buf.resize(start + bytes, 0);
    let out = &mut buf[start + pad..];
    for (k, e) in rest.iter().enumerate() {
        e.put(&mut out[k * T::STRIDE..k * T::STRIDE + T::SIZE], order);
    }
    Ok(())
}

/// Where the first member of an element starting at `pos` begins.
fn first_member_start<T: FixedLayout>(pos: usize) -> usize {
    pos.next_multiple_of(T::FIRST_ALIGN)
}

/// Whether an element starting at `pos` has the steady layout.
fn steady<T: FixedLayout>(pos: usize) -> bool {
    first_member_start::<T>(pos) % T::ALIGN == T::PHASE
}

/// Read `sequence<T>`.
pub fn read_fixed_seq<T: FixedLayout>(r: &mut Reader<'_>) -> Result<Vec<T>> {
    // An element takes at least SIZE less the padding a later start can
    // save before its most-aligned member (at most ALIGN - 1).
    let n = r.read_len(T::SIZE.saturating_sub(T::ALIGN - 1).max(1))?;
    let mut v = Vec::with_capacity(n);
    if r.is_segmented() {
        for _ in 0..n {
            v.push(crate::from_reader(r)?);
        }
        return Ok(v);
    }
    while v.len() < n && !steady::<T>(r.position()) {
        v.push(crate::from_reader(r)?);
    }
    let rest = n - v.len();
    if rest == 0 {
        return Ok(v);
    }
    let pos = r.position();
    let pad = first_member_start::<T>(pos) - pos;
    let bytes = (rest - 1)
        .checked_mul(T::STRIDE)
        .and_then(|b| b.checked_add(pad + T::SIZE))
        .ok_or(CdrError::LimitExceeded {
            offset: pos,
            len: rest as u64,
            limit: r.opts().limits.max_len as u64,
        })?;
    let order = r.order();
    let data = r.take(bytes)?;
    let inp = &data[pad..];
    v.extend((0..rest).map(|k| T::get(&inp[k * T::STRIDE..k * T::STRIDE + T::SIZE], order)));
    Ok(v)
}
