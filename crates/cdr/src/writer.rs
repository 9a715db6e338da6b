//! The CDR encoder: appends to a `BytesMut` the caller owns.
//!
//! Alignment is relative to an *origin*: an index into the buffer where
//! offset 0 of the CDR stream lies. For a GIOP message that is the first
//! byte of the 12-byte header; inside an encapsulation it is the
//! byte-order octet. Padding bytes are written as zeros.

use bytes::{BufMut, BytesMut};

use crate::error::{CdrError, Result};
use crate::options::{ByteOrder, CharCodeSet, Options, WCharCodeSet, WcharRules};
use crate::prim::{encode_slice, Primitive};

/// Appends CDR-encoded values to a buffer.
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut BytesMut,
    /// Index in `buf` of stream offset 0 (alignment origin).
    origin: usize,
    order: ByteOrder,
    opts: Options,
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
        self.buf.len() - self.origin
    }

    /// Index in the underlying buffer of the next byte to be written.
    #[inline]
    pub fn buf_len(&self) -> usize {
        self.buf.len()
    }

    /// Direct access to the underlying buffer (for callers that patch
    /// lengths or splice in pre-encoded bytes).
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
    /// big-endian UTF-16 without a BOM (the spec's default reading).
    pub fn write_wchar(&mut self, c: char) -> Result<()> {
        let ws = self.wide_set()?;
        let mut tmp = [0u16; 2];
        let units = c.encode_utf16(&mut tmp);
        if units.len() != 1 {
            return Err(CdrError::Unrepresentable {
                what: format!("wchar {c:?} (needs a surrogate pair)"),
                codeset: ws.name(),
            });
        }
        match self.opts.wchar_rules {
            WcharRules::Giop12 if is_bom(units[0]) => {
                // U+FEFF / U+FFFE first would be read as a BOM: say the
                // order explicitly.
                self.buf.put_u8(4);
                self.buf.put_u16(0xFEFF);
                self.buf.put_u16(units[0]);
            }
            WcharRules::Giop12 => {
                self.buf.put_u8(2);
                self.buf.put_u16(units[0]);
            }
            _ => self.write_u16(units[0]),
        }
        Ok(())
    }

    /// wstring, laid out by the GIOP version's rules.
    pub fn write_wstring(&mut self, s: &str) -> Result<()> {
        let ws = self.wide_set()?;
        let units = self.utf16_units(s, ws)?;
        match self.opts.wchar_rules {
            WcharRules::Giop12 => {
                // A first unit U+FEFF / U+FFFE would be read as a BOM: then
                // put an explicit big-endian BOM in front.
                let bom = units.first().is_some_and(|&u| is_bom(u));
                self.write_len(units.len() * 2 + if bom { 2 } else { 0 })?;
                self.buf.reserve(units.len() * 2 + 2);
                if bom {
                    self.buf.put_u16(0xFEFF);
                }
                for u in units {
                    self.buf.put_u16(u);
                }
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
    pub fn patch_u32(&mut self, at: usize, v: u32) {
        let i = self.origin + at;
        v.to_wire(&mut self.buf[i..i + 4], self.order);
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
        let mut inner = Writer {
            buf: &mut *self.buf,
            origin: start,
            order,
            opts: self.opts,
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
fn is_bom(unit: u16) -> bool {
    unit == 0xFEFF || unit == 0xFFFE
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
}
