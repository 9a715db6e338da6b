//! The CDR encoder: appends to a `BytesMut` the caller owns.
//!
//! Alignment is relative to an *origin*: an index into the buffer where
//! offset 0 of the CDR stream lies. For a GIOP message that is the first
//! byte of the 12-byte header; inside an encapsulation it is the
//! byte-order octet. Padding bytes are written as zeros.
//!
//! # Splicing (zero-copy runs)
//!
//! A writer may be given a [`Splices`] list ([`Writer::splicing`]). Then
//! [`Writer::write_shared`] does not copy a run of at least
//! [`Splices::cutoff`] bytes into the buffer: it records the `Bytes` with
//! the buffer index it goes before, and the transport sends buffer pieces
//! and spliced runs in order ([`Splices::segments`]). The stream is the
//! same bytes either way: [`Writer::position`] counts spliced bytes, so
//! alignment after a spliced run is exact, and [`Writer::patch_u32`] maps
//! stream offsets past spliced runs back to buffer indices.
//!
//! Which runs belong to a writer's stream: those recorded at a buffer index
//! *after* its origin (a run at exactly the origin index was appended by
//! whatever wrote before the origin, e.g. the previous message in an
//! output queue). Encapsulations never splice: their length is patched and
//! their bytes are often copied out as a whole, so the inner writer of
//! [`Writer::write_encapsulation`] copies.

use std::collections::VecDeque;

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::{CdrError, Result};
use crate::options::{ByteOrder, CharCodeSet, Options, WCharCodeSet, WcharRules};
use crate::prim::{encode_slice, Primitive};

/// Shared byte runs spliced between the bytes of a buffer instead of being
/// copied into it: each run goes before the buffer byte at its index (runs
/// at the same index go in the order recorded). Pure data: building the
/// list is the [`Writer`]'s business, sending it the transport's.
#[derive(Debug, Clone)]
pub struct Splices {
    /// (buffer index the run goes before, the run), indices ascending.
    runs: VecDeque<(usize, Bytes)>,
    /// Sum of the runs' lengths.
    total: usize,
    /// Shortest run worth splicing (shorter ones are copied).
    cutoff: usize,
}

impl Splices {
    /// An empty list splicing runs of at least `cutoff` bytes (at least 1).
    pub fn new(cutoff: usize) -> Splices {
        Splices {
            runs: VecDeque::new(),
            total: 0,
            cutoff: cutoff.max(1),
        }
    }

    /// Shortest run that is spliced rather than copied.
    pub fn cutoff(&self) -> usize {
        self.cutoff
    }

    /// Total bytes in spliced runs.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Number of runs.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether no run is spliced.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The runs as (buffer index, bytes), in stream order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &Bytes)> {
        self.runs.iter().map(|(i, b)| (*i, b))
    }

    /// Record `run` before buffer index `at` (not before the last run's
    /// index). Empty runs are ignored.
    pub fn push(&mut self, at: usize, run: Bytes) {
        assert!(
            self.runs.back().is_none_or(|(i, _)| *i <= at),
            "spliced runs must be recorded in buffer order"
        );
        if run.is_empty() {
            return;
        }
        self.total += run.len();
        self.runs.push_back((at, run));
    }

    /// Bytes in runs recorded after buffer index `at` (i.e. at an index
    /// greater than `at`).
    pub fn bytes_after(&self, at: usize) -> usize {
        self.runs
            .iter()
            .rev()
            .take_while(|(i, _)| *i > at)
            .map(|(_, b)| b.len())
            .sum()
    }

    /// Forget the runs recorded after buffer index `at` (to undo a message
    /// whose buffer bytes were truncated to `at`).
    pub fn truncate_after(&mut self, at: usize) {
        while let Some((i, b)) = self.runs.back() {
            if *i <= at {
                break;
            }
            self.total -= b.len();
            self.runs.pop_back();
        }
    }

    /// Remove and return every run (the cutoff stays).
    pub fn take(&mut self) -> Splices {
        let cutoff = self.cutoff;
        std::mem::replace(self, Splices::new(cutoff))
    }

    /// Move the runs recorded after buffer index `from` out into a new
    /// list, indices made relative to `from` (for a message that starts at
    /// `from` being moved to a buffer of its own).
    pub fn split_after(&mut self, from: usize) -> Splices {
        let mut out = Splices::new(self.cutoff);
        let keep = self.runs.iter().take_while(|(i, _)| *i <= from).count();
        for (i, b) in self.runs.drain(keep..) {
            self.total -= b.len();
            out.total += b.len();
            out.runs.push_back((i - from, b));
        }
        out
    }

    /// The stream `buf` + runs makes, as slices in order (empty pieces of
    /// `buf` are skipped).
    pub fn segments<'b>(&'b self, buf: &'b [u8]) -> Segments<'b> {
        Segments {
            buf,
            runs: self.runs.iter(),
            prev: 0,
            run: None,
            done: false,
        }
    }

    /// Append the whole stream `buf` + runs to `out` as one copy (for
    /// callers that need contiguous bytes, e.g. fragmentation).
    pub fn flatten_into(&self, buf: &[u8], out: &mut BytesMut) {
        out.reserve(buf.len() + self.total);
        for s in self.segments(buf) {
            out.extend_from_slice(s);
        }
    }

    /// Drop the first `n` bytes of the stream `buf` + runs (bytes written
    /// to the socket): from `buf` and the runs alike, indices adjusted.
    pub fn consume(&mut self, buf: &mut BytesMut, mut n: usize) {
        assert!(
            n <= buf.len() + self.total,
            "consuming more than the stream holds"
        );
        while n > 0 {
            match self.runs.front_mut() {
                Some((0, run)) => {
                    let k = n.min(run.len());
                    run.advance(k);
                    self.total -= k;
                    n -= k;
                    if run.is_empty() {
                        self.runs.pop_front();
                    }
                }
                Some(&mut (at, _)) => {
                    let k = n.min(at);
                    buf.advance(k);
                    for (i, _) in self.runs.iter_mut() {
                        *i -= k;
                    }
                    n -= k;
                }
                None => {
                    buf.advance(n);
                    n = 0;
                }
            }
        }
    }
}

/// Iterator over the pieces of a spliced stream ([`Splices::segments`]).
#[derive(Debug)]
pub struct Segments<'b> {
    buf: &'b [u8],
    runs: std::collections::vec_deque::Iter<'b, (usize, Bytes)>,
    /// Buffer index where the next buffer piece starts.
    prev: usize,
    /// A run to yield after the buffer piece just yielded.
    run: Option<&'b Bytes>,
    done: bool,
}

impl<'b> Iterator for Segments<'b> {
    type Item = &'b [u8];

    fn next(&mut self) -> Option<&'b [u8]> {
        loop {
            if let Some(r) = self.run.take() {
                return Some(&r[..]);
            }
            match self.runs.next() {
                Some((i, r)) => {
                    let piece = &self.buf[self.prev..*i];
                    self.prev = *i;
                    self.run = Some(r);
                    if !piece.is_empty() {
                        return Some(piece);
                    }
                }
                None if self.done => return None,
                None => {
                    self.done = true;
                    let piece = &self.buf[self.prev..];
                    return (!piece.is_empty()).then_some(piece);
                }
            }
        }
    }
}

/// Appends CDR-encoded values to a buffer.
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut BytesMut,
    /// Index in `buf` of stream offset 0 (alignment origin).
    origin: usize,
    order: ByteOrder,
    opts: Options,
    /// Where [`write_shared`](Self::write_shared) records runs it does not
    /// copy; `None`: it copies.
    splices: Option<&'a mut Splices>,
    /// `splices.total()` minus the bytes spliced into this stream: the runs
    /// that lie before the origin.
    spliced_before: usize,
}

impl<'a> Writer<'a> {
    /// A writer whose alignment origin is the current end of `buf`.
    pub fn new(buf: &'a mut BytesMut, order: ByteOrder) -> Self {
        let origin = buf.len();
        Self::with_origin(buf, order, origin)
    }

    /// A writer whose alignment origin is index `origin` of `buf` (which may
    /// lie before the current end, e.g. the start of a GIOP header already
    /// written).
    pub fn with_origin(buf: &'a mut BytesMut, order: ByteOrder, origin: usize) -> Self {
        assert!(origin <= buf.len(), "origin beyond the end of the buffer");
        Writer {
            buf,
            origin,
            order,
            opts: Options::default(),
            splices: None,
            spliced_before: 0,
        }
    }

    /// Splice runs of at least `splices.cutoff()` bytes given to
    /// [`write_shared`](Self::write_shared) instead of copying them. Runs
    /// already in `splices` after the origin index count as part of this
    /// stream (see the module docs).
    pub fn splicing(mut self, splices: &'a mut Splices) -> Self {
        self.spliced_before = splices.total() - splices.bytes_after(self.origin);
        self.splices = Some(splices);
        self
    }

    /// A writer from the parts [`parts`](Self::parts) gave (the serializer
    /// keeps them itself between calls).
    pub(crate) fn from_parts(
        buf: &'a mut BytesMut,
        order: ByteOrder,
        opts: Options,
        origin: usize,
        splices: Option<&'a mut Splices>,
        spliced_before: usize,
    ) -> Self {
        Writer {
            buf,
            origin,
            order,
            opts,
            splices,
            spliced_before,
        }
    }

    /// Buffer, origin index, splice list and bytes spliced before the
    /// origin.
    pub(crate) fn parts(&mut self) -> (&mut BytesMut, usize, Option<&mut Splices>, usize) {
        (
            &mut *self.buf,
            self.origin,
            self.splices.as_deref_mut(),
            self.spliced_before,
        )
    }

    /// Whether [`write_shared`](Self::write_shared) splices runs of `len`
    /// bytes (a splice list is attached and `len` reaches its cutoff).
    #[inline]
    pub fn splices_len(&self, len: usize) -> bool {
        self.splices.as_ref().is_some_and(|s| len >= s.cutoff)
    }

    /// The cutoff of the attached splice list, if any.
    #[inline]
    pub fn splice_cutoff(&self) -> Option<usize> {
        self.splices.as_ref().map(|s| s.cutoff)
    }

    /// Bytes spliced into this stream so far.
    #[inline]
    fn spliced(&self) -> usize {
        match &self.splices {
            Some(s) => s.total - self.spliced_before,
            None => 0,
        }
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

    /// The byte order being written.
    #[inline]
    pub fn order(&self) -> ByteOrder {
        self.order
    }

    /// Current stream offset (relative to the origin).
    #[inline]
    pub fn position(&self) -> usize {
        self.buf.len() - self.origin + self.spliced()
    }

    /// Index in the underlying buffer of the next byte to be written.
    #[inline]
    pub fn buf_len(&self) -> usize {
        self.buf.len()
    }

    /// Direct access to the underlying buffer (for callers that patch
    /// lengths or append pre-encoded bytes). Buffer indices differ from
    /// stream offsets by the spliced bytes, if any.
    #[inline]
    pub fn buffer(&mut self) -> &mut BytesMut {
        self.buf
    }

    /// Write zero bytes until the position is a multiple of `n` (a power of
    /// two).
    #[inline]
    pub fn align(&mut self, n: usize) {
        let pad = self.padding(n);
        if pad > 0 {
            self.buf.put_bytes(0, pad);
        }
    }

    /// How many padding bytes `align(n)` would write now.
    #[inline]
    pub fn padding(&self, n: usize) -> usize {
        debug_assert!(n.is_power_of_two());
        self.position().wrapping_neg() & (n - 1)
    }

    /// Reserve room for `additional` more bytes.
    pub fn reserve(&mut self, additional: usize) {
        self.buf.reserve(additional);
    }

    /// octet
    #[inline]
    pub fn write_u8(&mut self, v: u8) {
        self.buf.put_u8(v);
    }

    /// boolean: one octet, 0 or 1.
    #[inline]
    pub fn write_bool(&mut self, v: bool) {
        self.buf.put_u8(v as u8);
    }

    /// Any aligned numeric primitive.
    #[inline]
    pub fn write<T: Primitive>(&mut self, v: T) {
        self.align(T::SIZE);
        let mut tmp = [0u8; 8];
        v.to_wire(&mut tmp, self.order);
        self.buf.extend_from_slice(&tmp[..T::SIZE]);
    }

    /// short
    #[inline]
    pub fn write_i16(&mut self, v: i16) {
        self.write(v)
    }
    /// unsigned short
    #[inline]
    pub fn write_u16(&mut self, v: u16) {
        self.write(v)
    }
    /// long
    #[inline]
    pub fn write_i32(&mut self, v: i32) {
        self.write(v)
    }
    /// unsigned long
    #[inline]
    pub fn write_u32(&mut self, v: u32) {
        self.write(v)
    }
    /// long long
    #[inline]
    pub fn write_i64(&mut self, v: i64) {
        self.write(v)
    }
    /// unsigned long long
    #[inline]
    pub fn write_u64(&mut self, v: u64) {
        self.write(v)
    }
    /// float
    #[inline]
    pub fn write_f32(&mut self, v: f32) {
        self.write(v)
    }
    /// double
    #[inline]
    pub fn write_f64(&mut self, v: f64) {
        self.write(v)
    }

    /// long double: 16 octets aligned to 8, carried as raw bytes already in
    /// the stream's byte order.
    pub fn write_long_double(&mut self, raw: [u8; 16]) {
        self.align(8);
        self.buf.extend_from_slice(&raw);
    }

    /// A run of primitives without a length prefix (array body, or the body
    /// of a sequence whose length was written already): one bulk copy.
    pub fn write_slice<T: Primitive>(&mut self, values: &[T]) {
        if values.is_empty() {
            return;
        }
        self.align(T::SIZE);
        encode_slice(values, self.order, self.buf);
    }

    /// sequence of a primitive: u32 length then the elements.
    pub fn write_seq<T: Primitive>(&mut self, values: &[T]) -> Result<()> {
        self.write_len(values.len())?;
        self.write_slice(values);
        Ok(())
    }

    /// Raw octets with no prefix (octet arrays, pre-encoded bodies).
    #[inline]
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// sequence<octet>: u32 length then the bytes.
    pub fn write_octet_seq(&mut self, bytes: &[u8]) -> Result<()> {
        self.write_len(bytes.len())?;
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// Raw octets held in shared memory: spliced (not copied) when a splice
    /// list is attached and the run reaches its cutoff, copied otherwise.
    /// The stream is the same bytes either way.
    #[inline]
    pub fn write_shared(&mut self, bytes: &Bytes) {
        match &mut self.splices {
            Some(s) if bytes.len() >= s.cutoff => s.push(self.buf.len(), bytes.clone()),
            _ => self.buf.extend_from_slice(bytes),
        }
    }

    /// sequence<octet> from shared memory: u32 length then the bytes via
    /// [`write_shared`](Self::write_shared).
    pub fn write_shared_octet_seq(&mut self, bytes: &Bytes) -> Result<()> {
        self.write_len(bytes.len())?;
        self.write_shared(bytes);
        Ok(())
    }

    /// A sequence of a primitive type from shared memory: u32 count, then
    /// the elements aligned to their size, through
    /// [`write_shared`](Self::write_shared) in host order (spliced when the
    /// writer splices and the run is long enough), copied and swapped
    /// otherwise.
    pub fn write_shared_seq(&mut self, seq: &crate::prim::SharedSeq) -> Result<()> {
        self.write_len(seq.len())?;
        if seq.is_empty() {
            return Ok(());
        }
        self.align(seq.elem_size());
        if self.order.is_native() {
            self.write_shared(seq.host_bytes());
        } else {
            let start = self.buf.len();
            self.buf.extend_from_slice(seq.host_bytes());
            crate::prim::swap_in_place(&mut self.buf[start..], seq.elem_size());
        }
        Ok(())
    }

    /// A u32 length/count, refusing lengths that do not fit in 32 bits.
    pub fn write_len(&mut self, len: usize) -> Result<()> {
        let v = u32::try_from(len).map_err(|_| CdrError::LimitExceeded {
            offset: self.position(),
            len: len as u64,
            limit: u32::MAX as u64,
        })?;
        self.write_u32(v);
        Ok(())
    }

    /// char: one octet in the negotiated code set.
    pub fn write_char(&mut self, c: char) -> Result<()> {
        let b = self.char_octet(c)?;
        self.buf.put_u8(b);
        Ok(())
    }

    fn char_octet(&self, c: char) -> Result<u8> {
        let cs = self.opts.char_set;
        let limit = match cs {
            CharCodeSet::Latin1 => 0xFF,
            CharCodeSet::Utf8 => 0x7F,
        };
        if (c as u32) <= limit {
            Ok(c as u32 as u8)
        } else {
            Err(CdrError::Unrepresentable {
                what: format!("char {c:?}"),
                codeset: cs.name(),
            })
        }
    }

    /// string: u32 length including the NUL, the bytes, NUL.
    pub fn write_string(&mut self, s: &str) -> Result<()> {
        match self.opts.char_set {
            CharCodeSet::Utf8 => self.write_string_bytes(s.as_bytes()),
            CharCodeSet::Latin1 => {
                if s.is_ascii() {
                    return self.write_string_bytes(s.as_bytes());
                }
                let mut bytes = Vec::with_capacity(s.len());
                for c in s.chars() {
                    bytes.push(self.char_octet(c).map_err(|_| CdrError::Unrepresentable {
                        what: format!("string containing {c:?}"),
                        codeset: "ISO-8859-1",
                    })?);
                }
                self.write_string_bytes(&bytes)
            }
        }
    }

    /// string from raw bytes already in the transmission code set (no NUL
    /// in `bytes`; it is added).
    pub fn write_string_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        self.write_len(bytes.len() + 1)?;
        self.buf.reserve(bytes.len() + 1);
        self.buf.extend_from_slice(bytes);
        self.buf.put_u8(0);
        Ok(())
    }

    fn wide_set(&self) -> Result<WCharCodeSet> {
        match (self.opts.wchar_rules, self.opts.wchar_set) {
            (WcharRules::Giop10, _) | (_, None) => Err(CdrError::WcharNotNegotiated {
                offset: self.position(),
            }),
            (_, Some(ws)) => Ok(ws),
        }
    }

    fn utf16_units(&self, s: &str, ws: WCharCodeSet) -> Result<Vec<u16>> {
        let units: Vec<u16> = s.encode_utf16().collect();
        if ws == WCharCodeSet::Ucs2 && s.chars().any(|c| c as u32 > 0xFFFF) {
            return Err(CdrError::Unrepresentable {
                what: "character outside the BMP".into(),
                codeset: ws.name(),
            });
        }
        Ok(units)
    }

    /// wchar, laid out by the GIOP version's rules. GIOP 1.2 output is
    /// big-endian UTF-16 without a BOM (the spec's default reading); there
    /// a wchar is a length-prefixed octet sequence, so a character beyond
    /// the BMP goes as its surrogate pair under UTF-16. GIOP 1.1 gives a
    /// wchar exactly one 16-bit unit, and UCS-2 has no pairs: both refuse it.
    pub fn write_wchar(&mut self, c: char) -> Result<()> {
        let ws = self.wide_set()?;
        let giop12 = self.opts.wchar_rules == WcharRules::Giop12;
        // Almost every wchar: a BMP character, one unit that is no BOM.
        match u16::try_from(c as u32) {
            Ok(u) if !giop12 => self.write_u16(u),
            Ok(u) if !is_bom(u) => {
                self.buf.put_u8(2);
                self.buf.put_u16(u);
            }
            _ => return self.wchar_octets(c, ws),
        }
        Ok(())
    }

    /// A wchar that needs a BOM or a surrogate pair: GIOP 1.2 octets (at
    /// most 6), or the refusal where a pair cannot go. Out of line, so
    /// that [`write_wchar`](Self::write_wchar) stays small enough to
    /// inline into a sequence's loop.
    #[cold]
    #[inline(never)]
    fn wchar_octets(&mut self, c: char, ws: WCharCodeSet) -> Result<()> {
        let mut tmp = [0u16; 2];
        let units = c.encode_utf16(&mut tmp);
        if units.len() != 1
            && (self.opts.wchar_rules != WcharRules::Giop12 || ws == WCharCodeSet::Ucs2)
        {
            return Err(CdrError::Unrepresentable {
                what: format!("wchar {c:?} (needs a surrogate pair)"),
                codeset: ws.name(),
            });
        }
        self.buf.put_u8(utf16_octets(units) as u8);
        self.put_utf16_be(units);
        Ok(())
    }

    /// The octets of a GIOP 1.2 wchar or wstring: big-endian UTF-16,
    /// with an explicit big-endian BOM in front when the first unit
    /// (U+FEFF / U+FFFE) would otherwise be read as one
    /// ([`utf16_octets`] counts them).
    fn put_utf16_be(&mut self, units: &[u16]) {
        self.buf.reserve(utf16_octets(units));
        if units.first().is_some_and(|&u| is_bom(u)) {
            self.buf.put_u16(0xFEFF);
        }
        for &u in units {
            self.buf.put_u16(u);
        }
    }

    /// wstring, laid out by the GIOP version's rules.
    pub fn write_wstring(&mut self, s: &str) -> Result<()> {
        let ws = self.wide_set()?;
        let units = self.utf16_units(s, ws)?;
        match self.opts.wchar_rules {
            WcharRules::Giop12 => {
                self.write_len(utf16_octets(&units))?;
                self.put_utf16_be(&units);
            }
            _ => {
                self.write_len(units.len() + 1)?;
                for u in units {
                    self.write_u16(u);
                }
                self.write_u16(0);
            }
        }
        Ok(())
    }

    /// Overwrite a u32 at stream offset `at` (e.g. a length written as a
    /// placeholder), in this writer's byte order.
    ///
    /// # Panics
    /// If the four bytes are not all in the buffer (beyond the end, or
    /// overlapping a spliced run, which is shared and immutable).
    pub fn patch_u32(&mut self, at: usize, v: u32) {
        let i = self.index_of(at, 4);
        v.to_wire(&mut self.buf[i..i + 4], self.order);
    }

    /// Buffer index of stream offset `at`, whose `len` bytes must lie in
    /// the buffer (not in a spliced run).
    fn index_of(&self, at: usize, len: usize) -> usize {
        let mut skipped = 0;
        if let Some(s) = &self.splices {
            for (i, run) in s.iter().filter(|(i, _)| *i > self.origin) {
                // Stream offset where this run starts.
                let run_at = i - self.origin + skipped;
                if at + len <= run_at {
                    break;
                }
                assert!(
                    at >= run_at + run.len(),
                    "patch at stream offset {at} overlaps a spliced run at {run_at}"
                );
                skipped += run.len();
            }
        }
        self.origin + at - skipped
    }

    /// Write an encapsulation: u32 length, byte-order octet, then whatever
    /// `f` writes, with alignment restarting at the byte-order octet.
    pub fn write_encapsulation<R>(
        &mut self,
        order: ByteOrder,
        f: impl FnOnce(&mut Writer<'_>) -> Result<R>,
    ) -> Result<R> {
        self.write_u32(0);
        let len_at = self.position() - 4;
        let start = self.buf.len();
        // No splices inside: the length below is buffer bytes only.
        let mut inner = Writer {
            buf: &mut *self.buf,
            origin: start,
            order,
            opts: self.opts,
            splices: None,
            spliced_before: 0,
        };
        inner.write_u8(order.flag());
        let r = f(&mut inner)?;
        let len = self.buf.len() - start;
        let len = u32::try_from(len).map_err(|_| CdrError::LimitExceeded {
            offset: len_at,
            len: len as u64,
            limit: u32::MAX as u64,
        })?;
        self.patch_u32(len_at, len);
        Ok(r)
    }
}

/// Whether a UTF-16 unit at the start of GIOP 1.2 wide data would be taken
/// for a byte-order mark.
pub(crate) fn is_bom(unit: u16) -> bool {
    unit == 0xFEFF || unit == 0xFFFE
}

/// How many octets [`Writer::put_utf16_be`] writes for `units`.
fn utf16_octets(units: &[u16]) -> usize {
    units.len() * 2
        + if units.first().is_some_and(|&u| is_bom(u)) {
            2
        } else {
            0
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(order: ByteOrder, f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, order);
        f(&mut w);
        buf.to_vec()
    }

    #[test]
    fn char_then_double_pads_to_eight() {
        let out = with(ByteOrder::Big, |w| {
            w.write_char('a').unwrap();
            w.write_f64(1.0);
        });
        assert_eq!(
            out,
            [0x61, 0, 0, 0, 0, 0, 0, 0, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn origin_before_end_shifts_alignment() {
        // Header of 12 bytes already in the buffer, origin at 0: a u64 at
        // stream offset 12 must pad 4 bytes.
        let mut buf = BytesMut::from(&[0u8; 12][..]);
        let mut w = Writer::with_origin(&mut buf, ByteOrder::Little, 0);
        w.write_u64(1);
        assert_eq!(buf.len(), 24);
        assert_eq!(&buf[16..], &[1, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn string_counts_nul() {
        let out = with(ByteOrder::Little, |w| w.write_string("op").unwrap());
        assert_eq!(out, [3, 0, 0, 0, b'o', b'p', 0]);
    }

    #[test]
    fn latin1_string_and_utf8_char_limits() {
        let out = with(ByteOrder::Big, |w| w.write_string("é").unwrap());
        assert_eq!(out, [0, 0, 0, 2, 0xE9, 0]);
        let mut buf = BytesMut::new();
        let opts = Options {
            char_set: CharCodeSet::Utf8,
            ..Options::default()
        };
        let mut w = Writer::new(&mut buf, ByteOrder::Big).options(opts);
        assert!(matches!(
            w.write_char('é'),
            Err(CdrError::Unrepresentable { .. })
        ));
        w.write_string("é").unwrap();
        assert_eq!(&buf[..], &[0, 0, 0, 3, 0xC3, 0xA9, 0]);
    }

    #[test]
    fn wstring_rules_differ_by_version() {
        let out = with(ByteOrder::Little, |w| w.write_wstring("hi").unwrap());
        assert_eq!(out, [4, 0, 0, 0, 0, b'h', 0, b'i']);
        let mut buf = BytesMut::new();
        let mut opts = Options {
            wchar_rules: WcharRules::Giop11,
            ..Options::default()
        };
        let mut w = Writer::new(&mut buf, ByteOrder::Little).options(opts);
        w.write_wstring("hi").unwrap();
        assert_eq!(&buf[..], &[3, 0, 0, 0, b'h', 0, b'i', 0, 0, 0]);
        let mut buf = BytesMut::new();
        opts.wchar_rules = WcharRules::Giop10;
        let mut w = Writer::new(&mut buf, ByteOrder::Little).options(opts);
        assert!(matches!(
            w.write_wchar('x'),
            Err(CdrError::WcharNotNegotiated { .. })
        ));
    }

    #[test]
    fn leading_bom_characters_get_an_explicit_bom() {
        let out = with(ByteOrder::Little, |w| w.write_wchar('\u{FEFF}').unwrap());
        assert_eq!(out, [4, 0xFE, 0xFF, 0xFE, 0xFF]);
        let out = with(ByteOrder::Big, |w| w.write_wstring("\u{FFFE}a").unwrap());
        assert_eq!(out, [0, 0, 0, 6, 0xFE, 0xFF, 0xFF, 0xFE, 0, b'a']);
        let mut r = crate::Reader::new(&out, ByteOrder::Big);
        assert_eq!(r.read_wstring().unwrap(), "\u{FFFE}a");
    }

    #[test]
    fn encapsulation_restarts_alignment() {
        // u8 at offset 0, then encapsulation: length at 4, order octet at 8
        // (inner offset 0), inner u32 at inner offset 4 = outer 12.
        let out = with(ByteOrder::Big, |w| {
            w.write_u8(7);
            w.write_encapsulation(ByteOrder::Little, |e| {
                e.write_u32(0x0102_0304);
                Ok(())
            })
            .unwrap();
        });
        assert_eq!(out, [7, 0, 0, 0, 0, 0, 0, 8, 1, 0, 0, 0, 4, 3, 2, 1]);
    }

    /// The stream `buf` + splices as one vector.
    fn flat(buf: &BytesMut, sp: &Splices) -> Vec<u8> {
        let mut out = BytesMut::new();
        sp.flatten_into(buf, &mut out);
        out.to_vec()
    }

    #[test]
    fn spliced_run_keeps_alignment_and_bytes() {
        let run = Bytes::from_static(&[1, 2, 3, 4, 5]);
        let write = |w: &mut Writer<'_>| {
            w.write_u8(9);
            w.write_shared_octet_seq(&run).unwrap();
            w.write_f64(1.0);
        };
        let copied = with(ByteOrder::Big, write);
        assert_eq!(
            copied,
            [9, 0, 0, 0, 0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0]
        );
        let mut buf = BytesMut::new();
        let mut sp = Splices::new(5);
        let mut w = Writer::new(&mut buf, ByteOrder::Big).splicing(&mut sp);
        write(&mut w);
        assert_eq!(w.position(), 24);
        // The five octets are not in the buffer: recorded before index 8.
        assert_eq!(buf.len(), 19);
        assert_eq!(
            sp.iter().map(|(i, b)| (i, b.len())).collect::<Vec<_>>(),
            [(8, 5)]
        );
        assert_eq!(sp.total(), 5);
        assert_eq!(flat(&buf, &sp), copied);
        let segs: Vec<&[u8]> = sp.segments(&buf).collect();
        assert_eq!(segs, [&copied[..8], &copied[8..13], &copied[13..]]);
    }

    #[test]
    fn shared_sequences_write_what_seq_writes_spliced_or_not() {
        let doubles: Vec<f64> = (0..9).map(|i| i as f64 * 0.5 - 1.0).collect();
        let shorts: Vec<i16> = (0..7).map(|i| i * 1000 - 3).collect();
        let shared = [
            crate::SharedSeq::new(&doubles),
            crate::SharedSeq::new(&shorts),
            crate::SharedSeq::new::<u32>(&[]),
        ];
        for order in [ByteOrder::Big, ByteOrder::Little] {
            // What the serde path writes for the same values, after an
            // octet that forces padding.
            let want = with(order, |w| {
                w.write_u8(7);
                crate::to_writer(w, &crate::wrap::Seq(doubles.clone())).unwrap();
                crate::to_writer(w, &crate::wrap::Seq(shorts.clone())).unwrap();
                crate::to_writer(w, &crate::wrap::Seq(Vec::<u32>::new())).unwrap();
                w.write_u8(8);
            });
            let write = |w: &mut Writer<'_>| {
                w.write_u8(7);
                for s in &shared {
                    w.write_shared_seq(s).unwrap();
                }
                w.write_u8(8);
            };
            assert_eq!(with(order, write), want, "{order:?} copied");
            let mut buf = BytesMut::new();
            let mut sp = Splices::new(8);
            let mut w = Writer::new(&mut buf, order).splicing(&mut sp);
            write(&mut w);
            assert_eq!(w.position(), want.len());
            assert_eq!(flat(&buf, &sp), want, "{order:?} spliced");
            // Only host-order runs are shared; the other order is swapped
            // into the buffer.
            let runs = if order.is_native() { 2 } else { 0 };
            assert_eq!(sp.len(), runs, "{order:?}");
        }
    }

    #[test]
    fn short_runs_and_writers_without_splices_copy() {
        let mut buf = BytesMut::new();
        let mut sp = Splices::new(6);
        let mut w = Writer::new(&mut buf, ByteOrder::Little).splicing(&mut sp);
        assert!(!w.splices_len(5) && w.splices_len(6));
        w.write_shared(&Bytes::from_static(b"12345"));
        assert_eq!(&buf[..], b"12345");
        assert!(sp.is_empty());
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, ByteOrder::Little);
        assert_eq!(w.splice_cutoff(), None);
        w.write_shared(&Bytes::from_static(b"123456"));
        assert_eq!(&buf[..], b"123456");
    }

    #[test]
    fn patch_after_a_spliced_run_lands_in_the_buffer() {
        let mut buf = BytesMut::new();
        let mut sp = Splices::new(1);
        let mut w = Writer::new(&mut buf, ByteOrder::Big).splicing(&mut sp);
        w.write_u32(0);
        w.write_shared(&Bytes::from_static(&[7, 7, 7, 7]));
        w.write_u32(0);
        w.write_shared(&Bytes::from_static(&[8; 3]));
        w.write_u32(0); // stream offset 12, padded to 12? 4+4+4+3 = 15 -> 16
        w.patch_u32(0, 0x0A0B_0C0D);
        w.patch_u32(8, 0x0102_0304);
        w.patch_u32(16, 0xAABB_CCDD);
        assert_eq!(
            flat(&buf, &sp),
            [0x0A, 0x0B, 0x0C, 0x0D, 7, 7, 7, 7, 1, 2, 3, 4, 8, 8, 8, 0, 0xAA, 0xBB, 0xCC, 0xDD]
        );
    }

    #[test]
    #[should_panic(expected = "overlaps a spliced run")]
    fn patch_inside_a_spliced_run_panics() {
        let mut buf = BytesMut::new();
        let mut sp = Splices::new(1);
        let mut w = Writer::new(&mut buf, ByteOrder::Big).splicing(&mut sp);
        w.write_u32(0);
        w.write_shared(&Bytes::from_static(&[7; 8]));
        w.patch_u32(6, 1);
    }

    #[test]
    fn runs_at_the_origin_index_belong_to_what_came_before() {
        // A previous message ended with a spliced run; the next writer's
        // origin is the buffer end, where that run is recorded.
        let mut buf = BytesMut::from(&[1u8, 2][..]);
        let mut sp = Splices::new(1);
        sp.push(2, Bytes::from_static(&[3, 4, 5]));
        let mut w = Writer::new(&mut buf, ByteOrder::Big).splicing(&mut sp);
        assert_eq!(w.position(), 0);
        w.write_u8(1);
        w.write_shared(&Bytes::from_static(&[6]));
        w.write_u16(2);
        assert_eq!(w.position(), 4);
        assert_eq!(sp.bytes_after(2), 1);
        assert_eq!(flat(&buf, &sp), [1, 2, 3, 4, 5, 1, 6, 0, 2]);
    }

    #[test]
    fn encapsulations_inside_a_splicing_writer_copy() {
        let mut buf = BytesMut::new();
        let mut sp = Splices::new(1);
        let mut w = Writer::new(&mut buf, ByteOrder::Big).splicing(&mut sp);
        w.write_encapsulation(ByteOrder::Big, |e| {
            e.write_shared(&Bytes::from_static(&[5, 6]));
            Ok(())
        })
        .unwrap();
        assert!(sp.is_empty());
        assert_eq!(&buf[..], &[0, 0, 0, 3, 0, 5, 6]);
    }

    #[test]
    fn consume_walks_across_buffer_pieces_and_runs() {
        let mut buf = BytesMut::from(&b"abcdef"[..]);
        let mut sp = Splices::new(1);
        sp.push(2, Bytes::from_static(b"XYZ"));
        sp.push(4, Bytes::from_static(b"Q"));
        assert_eq!(flat(&buf, &sp), b"abXYZcdQef");
        sp.consume(&mut buf, 1);
        assert_eq!(flat(&buf, &sp), b"bXYZcdQef");
        sp.consume(&mut buf, 2); // "b" and "X"
        assert_eq!(flat(&buf, &sp), b"YZcdQef");
        assert_eq!(sp.iter().map(|(i, _)| i).collect::<Vec<_>>(), [0, 2]);
        sp.consume(&mut buf, 5); // "YZ", "cd", "Q"
        assert_eq!(flat(&buf, &sp), b"ef");
        assert!(sp.is_empty());
        assert_eq!(sp.total(), 0);
        sp.consume(&mut buf, 2);
        assert!(buf.is_empty());
    }

    #[test]
    fn split_and_truncate_after_an_index() {
        let mut buf = BytesMut::from(&b"0123456789"[..]);
        let mut sp = Splices::new(1);
        sp.push(3, Bytes::from_static(b"a"));
        sp.push(5, Bytes::from_static(b"bb"));
        sp.push(8, Bytes::from_static(b"ccc"));
        assert_eq!(sp.bytes_after(5), 3);
        assert_eq!(sp.bytes_after(4), 5);
        let mut tail_sp = sp.split_after(4);
        let tail = buf.split_off(4);
        assert_eq!(sp.total(), 1);
        assert_eq!(flat(&buf, &sp), b"012a3");
        assert_eq!(flat(&tail, &tail_sp), b"4bb567ccc89");
        tail_sp.truncate_after(3);
        assert_eq!(tail_sp.total(), 2);
        assert_eq!(tail_sp.iter().map(|(i, _)| i).collect::<Vec<_>>(), [1]);
    }
}
