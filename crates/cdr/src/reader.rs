//! The CDR decoder: a cursor over a byte slice that knows its byte order,
//! where its alignment origin lies, the negotiated code sets and the limits.
//!
//! Every length read from the input is checked against both the bytes left
//! and [`Limits::max_len`](crate::Limits) *before* anything is allocated.

use std::borrow::Cow;

use bytes::Bytes;

use crate::error::{CdrError, Result};
use crate::options::{ByteOrder, CharCodeSet, Options, WCharCodeSet, WcharRules};
use crate::prim::{decode_slice, Primitive};
use crate::writer::is_bom;

/// Reads CDR values from a byte slice.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    /// Stream offset of `data[0]` relative to the alignment origin (12 when
    /// `data` is a GIOP body whose header was cut off).
    base: usize,
    order: ByteOrder,
    opts: Options,
    depth: u32,
    /// When set, `data` is a view of this buffer, so octet sequences can be
    /// handed out as `Bytes` without copying.
    owner: Option<&'a Bytes>,
    /// Indices into `data` where a segment with its own alignment origin
    /// begins (GIOP 1.1 Fragments), increasing; empty for one stream.
    segs: &'a [usize],
    /// Alignment offset of the first byte of every segment in `segs`.
    seg_offset: usize,
    /// Index up to which values may be read: `data.len()`, except inside
    /// a chunked valuetype, where it is the end of the chunk being read
    /// (`pos` between chunks): reading on moves to the next chunk. See
    /// [`crate::valuetype`].
    end: usize,
    /// How many chunked valuetypes are being read, one inside the other
    /// (0: none; then `end` is `data.len()`).
    chunks: u32,
}

impl<'a> Reader<'a> {
    /// A reader whose alignment origin is `data[0]`.
    pub fn new(data: &'a [u8], order: ByteOrder) -> Self {
        Reader {
            data,
            pos: 0,
            base: 0,
            order,
            opts: Options::default(),
            depth: 0,
            owner: None,
            segs: &[],
            seg_offset: 0,
            end: data.len(),
            chunks: 0,
        }
    }

    /// A reader over a `Bytes` buffer: octet sequences read with
    /// [`read_octet_bytes`](Self::read_octet_bytes) share its memory.
    pub fn from_bytes(data: &'a Bytes, order: ByteOrder) -> Self {
        let mut r = Reader::new(&data[..], order);
        r.owner = Some(data);
        r
    }

    /// Declare that `data[0]` lies at stream offset `base` (e.g. 12 for a
    /// GIOP body following the header).
    pub fn with_base(mut self, base: usize) -> Self {
        self.base = base;
        self
    }

    /// Declare that `data` is made of segments, each aligned from its own
    /// origin: `data[starts[k]]` lies at alignment offset `offset` (12 for
    /// the data of a GIOP 1.1 Fragment, aligned from the Fragment's own
    /// header), and so on until `starts[k + 1]`. Bytes before `starts[0]`
    /// keep the [`with_base`](Self::with_base) rule. `starts` must be
    /// increasing. Errors still report offsets as `base + index`.
    pub fn with_segments(mut self, starts: &'a [usize], offset: usize) -> Self {
        debug_assert!(starts.windows(2).all(|w| w[0] < w[1]));
        self.segs = starts;
        self.seg_offset = offset;
        self
    }

    /// Whether a run of elements may be split: the data is made of
    /// separately aligned segments (GIOP 1.1 fragments), or a chunked
    /// valuetype is being read (a chunk may end between two elements).
    /// Then runs must be read element by element through [`Reader`]'s own
    /// methods, which realign at every segment start and move on to the
    /// next chunk.
    #[inline]
    pub fn is_segmented(&self) -> bool {
        !self.segs.is_empty() || self.chunks > 0
    }

    /// Whether a chunked valuetype is being read.
    #[inline]
    pub fn is_chunked(&self) -> bool {
        self.chunks > 0
    }

    /// The offset alignment is computed from at the cursor: `base + index`
    /// for one stream, the offset within its segment otherwise (where
    /// padding that reaches the next segment restarts there: see
    /// [`align`](Self::align)).
    #[inline(always)]
    pub fn align_offset(&self) -> usize {
        if self.segs.is_empty() {
            self.base + self.pos
        } else {
            self.seg_align_offset()
        }
    }

    #[cold]
    #[inline(never)]
    fn seg_align_offset(&self) -> usize {
        match self.segs.partition_point(|&s| s <= self.pos) {
            0 => self.base + self.pos,
            k => self.seg_offset + (self.pos - self.segs[k - 1]),
        }
    }

    /// Index where the segment after the cursor's begins (`data.len()` if
    /// none).
    fn segment_end(&self) -> usize {
        let k = self.segs.partition_point(|&s| s <= self.pos);
        self.segs.get(k).copied().unwrap_or(self.data.len())
    }

    /// Replace the code-set / wchar / limit options.
    pub fn options(mut self, opts: Options) -> Self {
        self.opts = opts;
        self
    }

    /// The options in force.
    #[inline]
    pub fn opts(&self) -> &Options {
        &self.opts
    }

    /// Change the options in place (e.g. after code-set negotiation).
    pub fn set_options(&mut self, opts: Options) {
        self.opts = opts;
    }

    /// Byte order being read.
    #[inline]
    pub fn order(&self) -> ByteOrder {
        self.order
    }

    /// Current stream offset (relative to the alignment origin). Errors
    /// report offsets in the same terms.
    #[inline]
    pub fn position(&self) -> usize {
        self.base + self.pos
    }

    /// Index into the slice given at construction.
    #[inline]
    pub fn index(&self) -> usize {
        self.pos
    }

    /// Bytes not yet read.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The unread bytes, not consumed.
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }

    /// Whole input slice (for TypeCode indirection, which jumps backwards).
    #[inline]
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Move the cursor to slice index `index` (back to a union
    /// discriminator already read; inside a chunk, only within it).
    pub fn seek(&mut self, index: usize) -> Result<()> {
        if index > self.end {
            return Err(self.truncated(index.saturating_sub(self.pos)));
        }
        self.pos = index;
        Ok(())
    }

    /// Fail with `TrailingData` unless every byte was consumed.
    pub fn expect_end(&self) -> Result<()> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(CdrError::TrailingData {
                offset: self.position(),
                remaining: self.remaining(),
            })
        }
    }

    /// Whether a GIOP request or reply body ends here: nothing is left but
    /// what alignment padding can explain — fewer than 8 bytes (their
    /// contents unchecked) that end on an 8-aligned offset, counted from
    /// the alignment origin like all CDR alignment. The sender's 8-byte
    /// granularity can leave them; 8 or more bytes, or bytes ending off an
    /// 8 boundary, are data no argument or result explains. The one rule
    /// for both directions: our servers read request bodies by it, our
    /// client reply bodies.
    pub fn only_padding_left(&self) -> bool {
        let n = self.remaining();
        n == 0 || (n < 8 && (self.align_offset() + n).is_multiple_of(8))
    }

    /// Fail with `TrailingData` unless [`only_padding_left`](Self::only_padding_left).
    pub fn expect_body_end(&self) -> Result<()> {
        if self.only_padding_left() {
            Ok(())
        } else {
            self.expect_end()
        }
    }

    fn truncated(&self, needed: usize) -> CdrError {
        CdrError::Truncated {
            offset: self.position(),
            needed,
            available: self.remaining(),
        }
    }

    /// Enter one level of nesting; fails past `limits.max_depth`. Pair with
    /// [`leave`](Self::leave).
    #[inline]
    pub fn enter(&mut self) -> Result<()> {
        if self.depth >= self.opts.limits.max_depth {
            return Err(CdrError::DepthExceeded {
                offset: self.position(),
                limit: self.opts.limits.max_depth,
            });
        }
        self.depth += 1;
        Ok(())
    }

    /// Leave one level of nesting.
    #[inline]
    pub fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Skip padding up to a multiple of `n` (a power of two). Padding
    /// contents are not checked: ORBs leave garbage there. Inside a chunked
    /// valuetype, padding that reaches the end of the chunk moves on to the
    /// next chunk (the value aligned there), so at least one byte must be
    /// read after it: a caller about to read nothing does not align.
    #[inline]
    pub fn align(&mut self, n: usize) -> Result<()> {
        debug_assert!(n.is_power_of_two());
        if !self.segs.is_empty() {
            return self.align_cold(n);
        }
        let pad = (self.base + self.pos).wrapping_neg() & (n - 1);
        // `>=`: at the end of a chunk, even no padding leaves nothing to read.
        if pad >= self.end - self.pos {
            return self.align_cold(n);
        }
        self.pos += pad;
        Ok(())
    }

    /// Padding up to a multiple of `n` at the cursor, by the segment rule
    /// when there are segments: when the padding reaches the next segment,
    /// the value did not fit in its fragment; the sender ended that
    /// fragment (omniORB after the padding, others before it) and aligned
    /// the value again from the next fragment's origin.
    fn pad_for(&self, n: usize) -> usize {
        if self.segs.is_empty() {
            return (self.base + self.pos).wrapping_neg() & (n - 1);
        }
        let k = self.segs.partition_point(|&s| s <= self.pos);
        let mut pad = self.seg_align_offset().wrapping_neg() & (n - 1);
        if let Some(&next) = self.segs.get(k) {
            if pad > 0 && self.pos + pad >= next {
                pad = next - self.pos + (self.seg_offset.wrapping_neg() & (n - 1));
            }
        }
        pad
    }

    /// [`align`](Self::align) with segments, or where the padding reaches
    /// the end of the data or of a chunk.
    #[cold]
    #[inline(never)]
    fn align_cold(&mut self, n: usize) -> Result<()> {
        loop {
            let pad = self.pad_for(n);
            let avail = self.end - self.pos;
            if pad < avail || self.chunks == 0 {
                if pad > avail {
                    return Err(self.truncated(pad));
                }
                self.pos += pad;
                return Ok(());
            }
            self.next_chunk()?;
        }
    }

    // ---- chunked valuetypes: `crate::valuetype` drives these ----------

    /// Move on to the next chunk of the value being read: what is left of
    /// the current one is padding (the caller saw to that), and the next
    /// long must be a chunk size.
    #[cold]
    #[inline(never)]
    fn next_chunk(&mut self) -> Result<()> {
        let (at, tag) = self.boundary_tag()?;
        if is_chunk_size(tag) {
            return Ok(());
        }
        Err(CdrError::BadValue {
            offset: at,
            reason: format!(
                "the value's state goes on past the end of its chunk, but the next tag is {}",
                describe_tag(tag)
            ),
        })
    }

    /// Skip what is left of the current chunk, read the long at the next
    /// 4-aligned offset (a tag between chunks) and, when it is a chunk
    /// size, enter the chunk it announces (checked against the bytes
    /// left); otherwise the cursor stays after the tag, between chunks.
    /// Returns the tag's offset and value.
    pub(crate) fn boundary_tag(&mut self) -> Result<(usize, i32)> {
        self.pos = self.end;
        let level = self.chunks;
        self.chunks = 0;
        self.end = self.data.len();
        let read = self.align(4).map(|()| self.position());
        let tag = read.and_then(|at| Ok((at, self.read_i32()?)));
        self.chunks = level;
        let (at, tag) = tag?;
        if is_chunk_size(tag) {
            let n = tag as usize;
            if n > self.remaining() {
                return Err(CdrError::Truncated {
                    offset: self.position(),
                    needed: n,
                    available: self.remaining(),
                });
            }
            self.end = self.pos + n;
        } else {
            self.end = self.pos;
        }
        Ok((at, tag))
    }

    /// How many chunked values are being read, one inside the other.
    pub(crate) fn chunk_level(&self) -> u32 {
        self.chunks
    }

    /// Set the chunked nesting level (after a chunked value's header: one
    /// more; after an end tag: the level it leaves) with the cursor between
    /// chunks, or with the whole data readable again at level 0.
    pub(crate) fn set_chunk_level(&mut self, level: u32) {
        self.chunks = level;
        self.end = if level > 0 { self.pos } else { self.data.len() };
    }

    /// Make the bytes after the cursor readable as they are, outside any
    /// chunk: the header of a value nested in a chunked one (its tag,
    /// codebase and repository ids lie between chunks).
    pub(crate) fn open_window(&mut self) {
        self.end = self.data.len();
    }

    /// Bytes left in the current chunk (or in the data outside chunks).
    pub(crate) fn chunk_left(&self) -> usize {
        self.end - self.pos
    }

    /// Padding to a multiple of `n` at the cursor.
    pub(crate) fn padding(&self, n: usize) -> usize {
        self.pad_for(n)
    }

    /// Skip `n` bytes of the current chunk (the state a truncating reader
    /// does not know); at most what the chunk holds.
    pub(crate) fn skip_in_chunk(&mut self, n: usize) {
        self.pos += n.min(self.end - self.pos);
    }

    /// Take exactly `n` bytes.
    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.end - self.pos {
            return self.take_cold(n);
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// [`take`](Self::take) past the end of the data or of a chunk: at a
    /// chunk's end the bytes are in the next chunk; bytes that start in
    /// one chunk and end in the next are refused (no chunk boundary may
    /// split a primitive, an array of primitives or a string).
    #[cold]
    #[inline(never)]
    fn take_cold(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.chunks == 0 {
            return Err(self.truncated(n));
        }
        if self.pos < self.end {
            return Err(CdrError::BadValue {
                offset: self.position(),
                reason: format!(
                    "{n} bytes run past the end of their chunk at offset {} (a chunk may not split a primitive, an array of primitives or a string)",
                    self.base + self.end
                ),
            });
        }
        self.next_chunk()?;
        self.take(n)
    }

    /// octet
    #[inline]
    pub fn read_u8(&mut self) -> Result<u8> {
        if self.pos < self.end {
            let b = self.data[self.pos];
            self.pos += 1;
            return Ok(b);
        }
        Ok(self.take_cold(1)?[0])
    }

    /// boolean: 0 or 1, anything else is an error.
    pub fn read_bool(&mut self) -> Result<bool> {
        let offset = self.position();
        match self.read_u8()? {
            0 => Ok(false),
            1 => Ok(true),
            value => Err(CdrError::InvalidBool { offset, value }),
        }
    }

    /// Any aligned numeric primitive.
    #[inline]
    pub fn read<T: Primitive>(&mut self) -> Result<T> {
        self.align(T::SIZE)?;
        let b = self.take(T::SIZE)?;
        Ok(T::from_wire(b, self.order))
    }

    /// short
    #[inline]
    pub fn read_i16(&mut self) -> Result<i16> {
        self.read()
    }
    /// unsigned short
    #[inline]
    pub fn read_u16(&mut self) -> Result<u16> {
        self.read()
    }
    /// long
    #[inline]
    pub fn read_i32(&mut self) -> Result<i32> {
        self.read()
    }
    /// unsigned long
    #[inline]
    pub fn read_u32(&mut self) -> Result<u32> {
        self.read()
    }
    /// long long
    #[inline]
    pub fn read_i64(&mut self) -> Result<i64> {
        self.read()
    }
    /// unsigned long long
    #[inline]
    pub fn read_u64(&mut self) -> Result<u64> {
        self.read()
    }
    /// float
    #[inline]
    pub fn read_f32(&mut self) -> Result<f32> {
        self.read()
    }
    /// double
    #[inline]
    pub fn read_f64(&mut self) -> Result<f64> {
        self.read()
    }

    /// long double: 16 raw octets aligned to 8, in the stream's byte order.
    pub fn read_long_double(&mut self) -> Result<[u8; 16]> {
        self.align(8)?;
        Ok(self.take(16)?.try_into().expect("16 bytes"))
    }

    /// A u32 count of elements each at least `min_elem_size` bytes on the
    /// wire, checked against the bytes left and the length limit.
    /// `min_elem_size` 0 (e.g. empty structs) checks only the limit.
    #[inline]
    pub fn read_len(&mut self, min_elem_size: usize) -> Result<usize> {
        let len = self.read_u32()? as usize;
        self.check_len(len, min_elem_size)?;
        Ok(len)
    }

    /// Check a count already read against the limit and the bytes left.
    #[inline]
    pub fn check_len(&self, len: usize, min_elem_size: usize) -> Result<()> {
        let offset = self.position().saturating_sub(4);
        let bytes = len.saturating_mul(min_elem_size.max(1));
        if len > self.opts.limits.max_len || bytes > self.opts.limits.max_len {
            return Err(CdrError::LimitExceeded {
                offset,
                len: len as u64,
                limit: self.opts.limits.max_len as u64,
            });
        }
        if min_elem_size > 0 && len.saturating_mul(min_elem_size) > self.remaining() {
            return Err(CdrError::Truncated {
                offset: self.position(),
                needed: len.saturating_mul(min_elem_size),
                available: self.remaining(),
            });
        }
        Ok(())
    }

    /// `n` primitives with no length prefix (array body, or a sequence body
    /// after its length): one copy plus an optional swap pass.
    pub fn read_slice<T: Primitive>(&mut self, n: usize) -> Result<Vec<T>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        if !self.segs.is_empty() {
            let b = self.read_packed(n, T::SIZE)?;
            return Ok(decode_slice(&b, self.order));
        }
        self.align(T::SIZE)?;
        let bytes = n
            .checked_mul(T::SIZE)
            .ok_or_else(|| self.truncated(usize::MAX))?;
        let b = self.take(bytes)?;
        Ok(decode_slice(b, self.order))
    }

    /// The raw bytes of `n` primitives of `size` bytes each (`n` > 0), in
    /// wire order, without the padding: borrowed when they are contiguous,
    /// copied when the run crosses a segment start (each segment realigns
    /// the element after its start, as a 1.1 Fragment does). An element
    /// split across a segment start (which no sender should produce) is
    /// taken whole, as [`read`](Self::read) would.
    pub fn read_packed(&mut self, n: usize, size: usize) -> Result<Cow<'a, [u8]>> {
        let bytes = n
            .checked_mul(size)
            .ok_or_else(|| self.truncated(usize::MAX))?;
        self.align(size)?;
        if self.segs.is_empty() || self.pos + bytes.min(self.remaining()) <= self.segment_end() {
            return self.take(bytes).map(Cow::Borrowed);
        }
        if bytes > self.end - self.pos {
            return Err(self.truncated(bytes));
        }
        let mut out = Vec::with_capacity(bytes);
        let mut left = n;
        loop {
            let fit = (self.segment_end() - self.pos) / size;
            let m = fit.clamp(1, left);
            out.extend_from_slice(self.take(m * size)?);
            left -= m;
            if left == 0 {
                return Ok(Cow::Owned(out));
            }
            self.align(size)?;
        }
    }

    /// sequence of a primitive.
    pub fn read_seq<T: Primitive>(&mut self) -> Result<Vec<T>> {
        let n = self.read_len(T::SIZE)?;
        self.read_slice(n)
    }

    /// sequence<octet> as a borrowed slice.
    pub fn read_octet_seq(&mut self) -> Result<&'a [u8]> {
        let n = self.read_len(1)?;
        self.take(n)
    }

    /// sequence<octet> as `Bytes`: zero-copy when the reader was built with
    /// [`from_bytes`](Self::from_bytes), one copy otherwise.
    pub fn read_octet_bytes(&mut self) -> Result<Bytes> {
        let s = self.read_octet_seq()?;
        Ok(match self.owner {
            Some(owner) => owner.slice_ref(s),
            None => Bytes::copy_from_slice(s),
        })
    }

    /// char: one octet in the negotiated code set.
    pub fn read_char(&mut self) -> Result<char> {
        let offset = self.position();
        let b = self.read_u8()?;
        match self.opts.char_set {
            CharCodeSet::Latin1 => Ok(b as char),
            CharCodeSet::Utf8 if b < 0x80 => Ok(b as char),
            CharCodeSet::Utf8 => Err(CdrError::InvalidCodeSet {
                offset,
                codeset: "UTF-8",
            }),
        }
    }

    /// string: the raw bytes without the NUL (in the transmission code set).
    pub fn read_string_bytes(&mut self) -> Result<&'a [u8]> {
        let offset = self.position();
        let n = self.read_len(1)?;
        if n == 0 {
            return Err(CdrError::EmptyString { offset });
        }
        let s = self.take(n)?;
        match s.split_last() {
            Some((0, body)) => Ok(body),
            _ => Err(CdrError::StringNotTerminated { offset }),
        }
    }

    /// string, converted from the negotiated code set.
    pub fn read_string(&mut self) -> Result<String> {
        let offset = self.position();
        let b = self.read_string_bytes()?;
        match self.opts.char_set {
            CharCodeSet::Utf8 => match std::str::from_utf8(b) {
                Ok(s) => Ok(s.to_owned()),
                Err(_) => Err(CdrError::InvalidCodeSet {
                    offset,
                    codeset: "UTF-8",
                }),
            },
            CharCodeSet::Latin1 => Ok(b.iter().map(|&c| c as char).collect()),
        }
    }

    fn wide_set(&self) -> Result<WCharCodeSet> {
        match (self.opts.wchar_rules, self.opts.wchar_set) {
            (WcharRules::Giop10, _) | (_, None) => Err(CdrError::WcharNotNegotiated {
                offset: self.position(),
            }),
            (_, Some(ws)) => Ok(ws),
        }
    }

    /// Decode UTF-16 octets (GIOP 1.2 layout) to text.
    fn utf16_octets(&self, offset: usize, b: &[u8], ws: WCharCodeSet) -> Result<String> {
        let bad = || CdrError::InvalidCodeSet {
            offset,
            codeset: ws.name(),
        };
        let (big, body) = Self::utf16_body(b).ok_or_else(bad)?;
        let units = body.chunks_exact(2).map(|c| utf16_unit(c, big));
        Self::decode_units(units, ws).ok_or_else(bad)
    }

    /// GIOP 1.2 UTF-16 octets: whether big-endian (an optional BOM picks
    /// the order, otherwise big-endian) and the units' octets after any
    /// BOM; `None` for an odd count. (Returning the units as an iterator
    /// instead made wstring decoding 0.6x as fast: criterion
    /// cdr/decode_static/wstring.)
    fn utf16_body(b: &[u8]) -> Option<(bool, &[u8])> {
        if !b.len().is_multiple_of(2) {
            return None;
        }
        Some(match b {
            [0xFE, 0xFF, rest @ ..] => (true, rest),
            [0xFF, 0xFE, rest @ ..] => (false, rest),
            _ => (true, b),
        })
    }

    /// The character that UTF-16 unit `u` starts, taking the low
    /// surrogate after a high one from `units`; `None` for a lone
    /// surrogate, or for a pair under UCS-2 (the BMP only). The one
    /// decoder of wstring and wchar alike (`char::decode_utf16` cost a
    /// wchar sequence 29 % of its decoding time: criterion
    /// cdr/decode_static/wchar).
    #[inline(always)]
    fn next_char(u: u16, units: &mut impl Iterator<Item = u16>, ws: WCharCodeSet) -> Option<char> {
        match u {
            0..=0x7F => Some(char::from(u as u8)),
            0xD800..=0xDBFF => {
                let lo = units.next().filter(|lo| (0xDC00..=0xDFFF).contains(lo))?;
                let c = 0x10000 + ((u32::from(u) - 0xD800) << 10) + (u32::from(lo) - 0xDC00);
                char::from_u32(c).filter(|_| ws != WCharCodeSet::Ucs2)
            }
            // A BMP character; None for a lone low surrogate.
            _ => char::from_u32(u32::from(u)),
        }
    }

    /// Text from UTF-16 units; `None` on a lone surrogate or a character
    /// `ws` does not carry.
    fn decode_units(mut units: impl Iterator<Item = u16>, ws: WCharCodeSet) -> Option<String> {
        // At least one UTF-8 octet per unit: no regrowing for ASCII, and
        // at most two doublings for the rest.
        let mut s = String::with_capacity(units.size_hint().0);
        while let Some(u) = units.next() {
            s.push(Self::next_char(u, &mut units, ws)?);
        }
        Some(s)
    }

    /// Exactly one character from UTF-16 units (a wchar), without
    /// building a string.
    fn one_char(mut units: impl Iterator<Item = u16>, ws: WCharCodeSet) -> Option<char> {
        let u = units.next()?;
        let c = Self::next_char(u, &mut units, ws)?;
        units.next().is_none().then_some(c)
    }

    /// A GIOP 1.2 wchar's octets other than one plain unit: a BOM and a
    /// unit, a surrogate pair, or something refused. Out of line, so that
    /// [`read_wchar`](Self::read_wchar) stays small enough to inline into
    /// a sequence's loop (as the writer's `wchar_octets`).
    #[cold]
    #[inline(never)]
    fn wchar_octets(body: &[u8], ws: WCharCodeSet) -> Option<char> {
        let (big, body) = Self::utf16_body(body)?;
        Self::one_char(body.chunks_exact(2).map(|c| utf16_unit(c, big)), ws)
    }

    /// wchar, by the GIOP version's rules.
    pub fn read_wchar(&mut self) -> Result<char> {
        let ws = self.wide_set()?;
        let offset = self.position();
        let c = match self.opts.wchar_rules {
            WcharRules::Giop12 => {
                let n = self.read_u8()? as usize;
                match *self.take(n)? {
                    // Almost every wchar: one big-endian unit that is not
                    // a BOM (a BOM alone is no wchar: the general path
                    // below refuses it), decoded as next_char decodes a
                    // unit that needs no other: a BMP character, None
                    // for a surrogate. Taken straight rather than
                    // through one_char: 1.15x as fast (criterion
                    // cdr/decode_static/wchar).
                    [hi, lo] if !is_bom(u16::from_be_bytes([hi, lo])) => {
                        char::from_u32(u32::from(u16::from_be_bytes([hi, lo])))
                    }
                    ref body => Self::wchar_octets(body, ws),
                }
            }
            // One unit: a BMP character, or None for a surrogate.
            _ => char::from_u32(u32::from(self.read_u16()?)),
        };
        c.ok_or(CdrError::InvalidCodeSet {
            offset,
            codeset: ws.name(),
        })
    }

    /// wstring, by the GIOP version's rules.
    pub fn read_wstring(&mut self) -> Result<String> {
        let ws = self.wide_set()?;
        let offset = self.position();
        match self.opts.wchar_rules {
            WcharRules::Giop12 => {
                let n = self.read_len(1)?;
                let b = self.take(n)?;
                self.utf16_octets(offset, b, ws)
            }
            _ => {
                let n = self.read_len(2)?;
                if n == 0 {
                    return Err(CdrError::EmptyString { offset });
                }
                let units = self.read_slice::<u16>(n)?;
                if units[n - 1] != 0 {
                    return Err(CdrError::StringNotTerminated { offset });
                }
                Self::decode_units(units[..n - 1].iter().copied(), ws).ok_or(
                    CdrError::InvalidCodeSet {
                        offset,
                        codeset: ws.name(),
                    },
                )
            }
        }
    }

    /// A reader over an encapsulation held whole in `data` (a profile or
    /// component body, a service context's data, a stringified IOR's
    /// bytes): the byte order is the one its first octet announces, the
    /// alignment origin is that octet, and the reader starts after it.
    pub fn encapsulation(data: &'a [u8]) -> Result<Reader<'a>> {
        let order = match data.first() {
            Some(0) => ByteOrder::Big,
            Some(1) => ByteOrder::Little,
            Some(&value) => return Err(CdrError::InvalidByteOrder { offset: 0, value }),
            None => {
                return Err(CdrError::Truncated {
                    offset: 0,
                    needed: 1,
                    available: 0,
                })
            }
        };
        let mut r = Reader::new(data, order);
        r.pos = 1;
        Ok(r)
    }

    /// An encapsulation: u32 length, then a reader over exactly that many
    /// bytes whose alignment origin is the byte-order octet and whose byte
    /// order is the one that octet announces. The outer reader moves past.
    pub fn read_encapsulation(&mut self) -> Result<Reader<'a>> {
        let n = self.read_len(1)?;
        let start = self.position();
        let body = self.take(n)?;
        let Some((&flag, _)) = body.split_first() else {
            return Err(CdrError::Truncated {
                offset: start,
                needed: 1,
                available: 0,
            });
        };
        let order = match flag {
            0 => ByteOrder::Big,
            1 => ByteOrder::Little,
            value => {
                return Err(CdrError::InvalidByteOrder {
                    offset: start,
                    value,
                })
            }
        };
        let mut inner = Reader {
            data: body,
            pos: 1,
            base: 0,
            order,
            opts: self.opts,
            depth: self.depth,
            owner: self.owner,
            segs: &[],
            seg_offset: 0,
            end: body.len(),
            chunks: 0,
        };
        // Offsets inside are relative to the encapsulation's own origin,
        // as the spec defines alignment there.
        inner.enter()?;
        Ok(inner)
    }
}

/// Whether a long between chunks announces a chunk: 1 to 0x7fffff00
/// exclusive (0x7fffff00 and up are value tags, negative ones end tags).
pub(crate) fn is_chunk_size(tag: i32) -> bool {
    tag > 0 && tag < 0x7fff_ff00
}

/// What a long between chunks (or where a value may start) is, in words.
pub(crate) fn describe_tag(tag: i32) -> String {
    match tag {
        0 => "0 (a null value, not allowed between chunks)".into(),
        t if is_chunk_size(t) => format!("a chunk of {t} bytes"),
        t if t >= 0x7fff_ff00 => format!("the value tag 0x{:08x} (a nested value)", t as u32),
        -1 => "the end tag -1 (or an indirection marker 0xffffffff)".into(),
        t => format!("the end tag {t}"),
    }
}

/// One UTF-16 unit from its two octets in the given order.
#[inline(always)]
fn utf16_unit(c: &[u8], big: bool) -> u16 {
    if big {
        u16::from_be_bytes([c[0], c[1]])
    } else {
        u16::from_le_bytes([c[0], c[1]])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Writer;
    use bytes::BytesMut;

    /// The end of a body: fewer than 8 bytes up to an 8-aligned offset
    /// are padding (zero or not); 8 or more, or ending off a boundary,
    /// are not.
    #[test]
    fn only_padding_may_follow_the_last_value_of_a_body() {
        let data = [0u8; 16];
        // A GIOP 1.0 body whose last value ends at offset 28.
        let at = |read: usize, len: usize| {
            let mut r = Reader::new(&data[..len], ByteOrder::Big).with_base(24);
            r.take(read).unwrap();
            r
        };
        assert!(at(4, 4).only_padding_left(), "nothing left");
        assert!(at(4, 8).only_padding_left(), "4 bytes to 32");
        assert!(Reader::new(&[1, 2, 3, 4], ByteOrder::Big)
            .with_base(28)
            .only_padding_left());
        assert!(!at(4, 6).only_padding_left(), "2 bytes end at 30");
        assert!(!at(4, 16).only_padding_left(), "12 bytes");
        assert!(!at(0, 8).only_padding_left(), "8 bytes from 24 to 32");
        assert_eq!(
            at(4, 6).expect_body_end(),
            Err(CdrError::TrailingData {
                offset: 28,
                remaining: 2
            })
        );
        assert_eq!(at(4, 8).expect_body_end(), Ok(()));
    }

    #[test]
    fn reads_what_writer_wrote_with_padding() {
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, ByteOrder::Big);
        w.write_char('x').unwrap();
        w.write_f64(2.5);
        w.write_i16(-3);
        w.write_string("hello").unwrap();
        w.write_seq(&[1i32, 2, 3]).unwrap();
        w.write_bool(true);
        let mut r = Reader::new(&buf, ByteOrder::Big);
        assert_eq!(r.read_char().unwrap(), 'x');
        assert_eq!(r.read_f64().unwrap(), 2.5);
        assert_eq!(r.read_i16().unwrap(), -3);
        assert_eq!(r.read_string().unwrap(), "hello");
        assert_eq!(r.read_seq::<i32>().unwrap(), vec![1, 2, 3]);
        assert!(r.read_bool().unwrap());
        r.expect_end().unwrap();
    }

    #[test]
    fn base_offset_shifts_alignment() {
        // Body starting at stream offset 12: a double needs 4 pad bytes.
        let data = [0, 0, 0, 0, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0];
        let mut r = Reader::new(&data, ByteOrder::Big).with_base(12);
        assert_eq!(r.read_f64().unwrap(), 1.0);
    }

    #[test]
    fn hostile_lengths_are_refused_before_allocating() {
        let data = [0xff, 0xff, 0xff, 0xff, 1, 2, 3];
        let mut r = Reader::new(&data, ByteOrder::Big);
        assert_eq!(
            r.read_seq::<u64>(),
            Err(CdrError::LimitExceeded {
                offset: 0,
                len: 0xffff_ffff,
                limit: 256 * 1024 * 1024
            })
        );
        let data = [0, 0, 0, 9, 1, 2, 3];
        let mut r = Reader::new(&data, ByteOrder::Big);
        assert_eq!(
            r.read_octet_seq(),
            Err(CdrError::Truncated {
                offset: 4,
                needed: 9,
                available: 3
            })
        );
    }

    #[test]
    fn string_errors_are_precise() {
        let mut r = Reader::new(&[0, 0, 0, 0], ByteOrder::Big);
        assert_eq!(r.read_string(), Err(CdrError::EmptyString { offset: 0 }));
        let mut r = Reader::new(&[0, 0, 0, 2, b'a', b'b'], ByteOrder::Big);
        assert_eq!(
            r.read_string(),
            Err(CdrError::StringNotTerminated { offset: 0 })
        );
        let mut r = Reader::new(&[2], ByteOrder::Big);
        assert_eq!(
            r.read_bool(),
            Err(CdrError::InvalidBool {
                offset: 0,
                value: 2
            })
        );
    }

    #[test]
    fn wstring_accepts_bom_in_either_order() {
        // 1.2: length 6, LE BOM, "hi" little-endian.
        let data = [0, 0, 0, 6, 0xFF, 0xFE, b'h', 0, b'i', 0];
        let mut r = Reader::new(&data, ByteOrder::Big);
        assert_eq!(r.read_wstring().unwrap(), "hi");
        let data = [4, 0, 0, 0, 0, b'h', 0, b'i'];
        let mut r = Reader::new(&data, ByteOrder::Little);
        assert_eq!(r.read_wstring().unwrap(), "hi");
    }

    #[test]
    fn encapsulation_has_its_own_order_and_origin() {
        let data = [7, 0, 0, 0, 0, 0, 0, 8, 1, 0, 0, 0, 4, 3, 2, 1];
        let mut r = Reader::new(&data, ByteOrder::Big);
        assert_eq!(r.read_u8().unwrap(), 7);
        let mut e = r.read_encapsulation().unwrap();
        assert_eq!(e.order(), ByteOrder::Little);
        assert_eq!(e.read_u32().unwrap(), 0x0102_0304);
        e.expect_end().unwrap();
        r.expect_end().unwrap();
    }

    /// GIOP 1.1 layout: a body at stream offset 12, and segments whose
    /// first byte lies at offset 12 of their own Fragment.
    fn segmented(parts: &[&[u8]]) -> (Vec<u8>, Vec<usize>) {
        let mut data = Vec::new();
        let mut starts = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                starts.push(data.len());
            }
            data.extend_from_slice(p);
        }
        (data, starts)
    }

    #[test]
    fn segments_restart_alignment() {
        // Segment 0: a long at offset 12, an octet. Segment 1 (offset 12
        // again): a double after 4 pad bytes, then a short.
        let mut s1 = vec![0xEE; 4];
        s1.extend_from_slice(&2.5f64.to_be_bytes());
        s1.extend_from_slice(&(-7i16).to_be_bytes());
        let (data, starts) = segmented(&[&[0, 0, 0, 9, 0x42], &s1]);
        let mut r = Reader::new(&data, ByteOrder::Big)
            .with_base(12)
            .with_segments(&starts, 12);
        assert!(r.is_segmented());
        assert_eq!(r.read_u32().unwrap(), 9);
        assert_eq!(r.read_u8().unwrap(), 0x42);
        assert_eq!(r.align_offset(), 12);
        assert_eq!(r.read_f64().unwrap(), 2.5);
        // Errors keep counting in stream terms: base + index.
        assert_eq!(r.position(), 12 + 17);
        assert_eq!(r.align_offset(), 12 + 12);
        assert_eq!(r.read_i16().unwrap(), -7);
        r.expect_end().unwrap();
        // Read as one stream, the double would start at offset 24 (index
        // 12), past the short: the bytes run out.
        let mut r = Reader::new(&data, ByteOrder::Big).with_base(12);
        r.read_u32().unwrap();
        r.read_u8().unwrap();
        assert_eq!(
            r.read_f64(),
            Err(CdrError::Truncated {
                offset: 24,
                needed: 8,
                available: 7
            })
        );
    }

    #[test]
    fn runs_realign_at_each_segment_start() {
        // sequence<double> of 4: length and two doubles, then a segment
        // holding 4 pad bytes and the last two doubles.
        let mut s0 = vec![0, 0, 0, 4];
        s0.extend_from_slice(&1.0f64.to_be_bytes());
        s0.extend_from_slice(&2.0f64.to_be_bytes());
        let mut s1 = vec![0xEE; 4];
        s1.extend_from_slice(&3.0f64.to_be_bytes());
        s1.extend_from_slice(&4.0f64.to_be_bytes());
        let (data, starts) = segmented(&[&s0, &s1]);
        let mut r = Reader::new(&data, ByteOrder::Big)
            .with_base(12)
            .with_segments(&starts, 12);
        assert_eq!(r.read_seq::<f64>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
        r.expect_end().unwrap();
        // The raw run is copied without the padding.
        let mut r = Reader::new(&data, ByteOrder::Big)
            .with_base(12)
            .with_segments(&starts, 12);
        r.read_u32().unwrap();
        let b = r.read_packed(4, 8).unwrap();
        assert!(matches!(b, Cow::Owned(_)));
        assert_eq!(&b[..16], &data[4..20]);
        assert_eq!(&b[16..], &data[24..]);
        // A run inside one segment is borrowed.
        let mut r = Reader::new(&data, ByteOrder::Big)
            .with_base(12)
            .with_segments(&starts, 12);
        r.read_u32().unwrap();
        let b = r.read_packed(2, 8).unwrap();
        assert!(matches!(b, Cow::Borrowed(_)));
        assert_eq!(r.read_f64().unwrap(), 3.0);
        // Short of bytes: the error names the run's full size.
        let mut r = Reader::new(&data[..30], ByteOrder::Big)
            .with_base(12)
            .with_segments(&starts, 12);
        r.read_u32().unwrap();
        assert_eq!(
            r.read_slice::<f64>(4),
            Err(CdrError::Truncated {
                offset: 16,
                needed: 32,
                available: 26
            })
        );
    }

    #[test]
    fn little_endian_segments_and_a_value_ending_at_a_start() {
        // u16 at offset 12, 2 pad bytes, u32 at 16 ending exactly where
        // segment 1 begins; there a u64 sits after 4 pad bytes.
        let mut s0 = 5u16.to_le_bytes().to_vec();
        s0.extend_from_slice(&[0xEE, 0xEE]);
        s0.extend_from_slice(&6u32.to_le_bytes());
        let mut s1 = vec![0xEE; 4];
        s1.extend_from_slice(&7u64.to_le_bytes());
        let (data, starts) = segmented(&[&s0, &s1]);
        assert_eq!(starts, [8]);
        let mut r = Reader::new(&data, ByteOrder::Little)
            .with_base(12)
            .with_segments(&starts, 12);
        assert_eq!(r.read_u16().unwrap(), 5);
        assert_eq!(r.read_u32().unwrap(), 6);
        assert_eq!(r.read_u64().unwrap(), 7);
        r.expect_end().unwrap();
    }

    #[test]
    fn padding_that_ends_a_segment_restarts_in_the_next() {
        // omniORB: the octet, then the 7 pad bytes before the double end
        // the first fragment (at 8 mod 8 of it); the double does not fit
        // and is aligned again in the next fragment: 4 pad bytes more.
        let mut s0 = vec![0, 0, 0, 2, 0x41];
        s0.extend_from_slice(&[0xEE; 3]);
        let mut s1 = vec![0xEE; 4];
        s1.extend_from_slice(&169.25f64.to_le_bytes());
        s1.extend_from_slice(&[0x42, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE]);
        s1.extend_from_slice(&0.5f64.to_le_bytes());
        let (data, starts) = segmented(&[&s0, &s1]);
        // Segment 0 starts at offset 12: the octet sits at 16, the double
        // would be at 24 = index 12, which is where segment 1 begins.
        assert_eq!(starts, [8]);
        let mut r = Reader::new(&data, ByteOrder::Little)
            .with_base(8)
            .with_segments(&starts, 12);
        assert_eq!(r.read_u32().unwrap(), 0x0200_0000);
        assert_eq!(r.read_u8().unwrap(), 0x41);
        assert_eq!(r.read_f64().unwrap(), 169.25);
        assert_eq!(r.read_u8().unwrap(), 0x42);
        assert_eq!(r.read_f64().unwrap(), 0.5);
        r.expect_end().unwrap();
        // A run whose padding ends the segment: the same rule.
        let mut s0 = vec![0, 0, 0, 2, 0x41];
        s0.extend_from_slice(&[0xEE; 3]);
        let mut s1 = vec![0xEE; 4];
        s1.extend_from_slice(&1.5f64.to_be_bytes());
        s1.extend_from_slice(&2.5f64.to_be_bytes());
        let (data, starts) = segmented(&[&s0, &s1]);
        let mut r = Reader::new(&data, ByteOrder::Big)
            .with_base(8)
            .with_segments(&starts, 12);
        r.read_u32().unwrap();
        r.read_u8().unwrap();
        assert_eq!(r.read_slice::<f64>(2).unwrap(), vec![1.5, 2.5]);
        r.expect_end().unwrap();
        // Without a later segment the padding is just padding, and the
        // double is missing.
        let mut r = Reader::new(&data[..8], ByteOrder::Big)
            .with_base(8)
            .with_segments(&starts[..0], 12);
        r.read_u32().unwrap();
        r.read_u8().unwrap();
        assert_eq!(
            r.read_f64(),
            Err(CdrError::Truncated {
                offset: 16,
                needed: 8,
                available: 0
            })
        );
    }

    #[test]
    fn octet_bytes_are_zero_copy_from_bytes() {
        let data = Bytes::from_static(&[0, 0, 0, 3, 9, 8, 7]);
        let mut r = Reader::from_bytes(&data, ByteOrder::Big);
        let b = r.read_octet_bytes().unwrap();
        assert_eq!(&b[..], &[9, 8, 7]);
        assert_eq!(b.as_ptr(), data[4..].as_ptr());
    }
}
