//! serde → CDR: a `serde::Serializer` built only on [`Writer`].
//!
//! The mapping (see also [`crate::de`], which reads exactly the same):
//!
//! | Rust (serde data model)             | IDL / CDR                                          |
//! |-------------------------------------|----------------------------------------------------|
//! | `bool`                              | boolean (one octet 0/1)                            |
//! | `u8`, `i8`                          | octet (IDL 4 `uint8`/`int8`), no alignment         |
//! | `i16 u16 i32 u32 i64 u64 f32 f64`   | short … double, naturally aligned                  |
//! | `char`                              | char (one octet in the char code set)              |
//! | `String`, `&str`                    | string (u32 length incl. NUL, code-set converted)  |
//! | bytes (`serialize_bytes`)           | `sequence<octet>`                                  |
//! | struct, tuple, tuple struct         | struct: members in order, each aligned naturally   |
//! | `[T; N]`                            | array: N elements, no length                       |
//! | `Vec<T>`, slices, sets              | sequence: u32 count then the elements              |
//! | maps                                | `sequence<struct { K key; V value; }>`             |
//! | unit enum variants                  | enum: u32 variant index                            |
//! | enum variants with data             | union: discriminator, then the member (see below)  |
//! | newtype struct                      | transparent                                        |
//! | `()`, unit struct                   | nothing                                            |
//! | `Option<T>`                         | refused: IDL has no optional; use an enum (union)  |
//! | `i128`, `u128`                      | refused                                            |
//!
//! Wrappers for `wchar`, `wstring`, `long double`, zero-copy
//! `sequence<octet>`, bulk `sequence<char>` and bulk primitive sequences
//! live in [`crate::wrap`].
//!
//! # Unions and their discriminators
//!
//! A Rust enum is written as a discriminator followed by the selected
//! variant's content (a newtype variant's value, a tuple or struct
//! variant's fields as a struct, nothing for a unit variant):
//!
//! - By default the discriminator is the variant index (declaration order,
//!   0-based) as an unsigned long. A fieldless enum is therefore exactly an
//!   IDL enum.
//! - A variant renamed to an integer (`#[serde(rename = "3")]`, decimal,
//!   may be negative) uses that integer as its discriminator value.
//! - A variant renamed to `"default"` is the union's `default:` branch. It
//!   writes no discriminator of its own: its content must *begin* with the
//!   discriminator value, e.g. `Other(i32, u8)` writes the i32 (the
//!   discriminator) then the u8 (the member). Decoding rewinds to the
//!   discriminator before handing the branch its content, so the value
//!   round-trips.
//! - The discriminator's IDL type is `long` (or `unsigned long` for plain
//!   index enums) unless the enum's serde name ends in `:TYPE`, TYPE one of
//!   `boolean char octet short ushort long ulong longlong ulonglong`:
//!   `#[serde(rename = "Variant:short")]` gives `union Variant
//!   switch(short)`. A union switching on an IDL enum uses `ulong`.
//!
//! bench.idl's `union Variant switch(long) { case 1: long l; case 2: double
//! d; case 3: string s; default: octet o; }` is therefore
//!
//! ```
//! #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
//! enum Variant {
//!     #[serde(rename = "1")] L(i32),
//!     #[serde(rename = "2")] D(f64),
//!     #[serde(rename = "3")] S(String),
//!     #[serde(rename = "default")] O(i32, u8),
//! }
//! let bytes = iiop_cdr::to_bytes(&Variant::O(7, 9), iiop_cdr::ByteOrder::Big).unwrap();
//! assert_eq!(&bytes[..], &[0, 0, 0, 7, 9]);
//! ```
//!
//! Do not mix integer-named and plainly named variants in one enum.

use bytes::BytesMut;
use serde::ser::{self, Serialize};

use crate::error::{CdrError, Result};
use crate::options::{ByteOrder, CharCodeSet, Options};
use crate::prim::Primitive;
use crate::wrap::{self, Magic, RawGuard, RawMode, SpliceGuard};
use crate::writer::{Splices, Writer};

impl ser::Error for CdrError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        CdrError::Message(msg.to_string())
    }
}

/// Serialize `value` as CDR into a writer (whose origin, byte order and
/// options the caller chose).
///
/// Errors raised by `Serialize` impls themselves (serde's `custom`) come
/// back as [`CdrError::Message`] with the writer's offset appended.
#[inline]
pub fn to_writer<T: Serialize + ?Sized>(w: &mut Writer<'_>, value: &T) -> Result<()> {
    // Long enough octet/char sequences offer their `Bytes` for splicing.
    let _splice = w.splice_cutoff().map(SpliceGuard::raise);
    value
        .serialize(&mut Serializer::new(w))
        .map_err(|e| match e {
            CdrError::Message(m) => CdrError::Message(format!("{m} (at offset {})", w.position())),
            e => e,
        })
}

/// Serialize `value` as a CDR stream of its own (alignment origin at its
/// first byte) with default [`Options`].
pub fn to_bytes<T: Serialize + ?Sized>(value: &T, order: ByteOrder) -> Result<BytesMut> {
    let mut buf = BytesMut::new();
    to_writer(&mut Writer::new(&mut buf, order), value)?;
    Ok(buf)
}

/// The IDL type of a union discriminator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DiscKind {
    Boolean,
    Char,
    Octet,
    Short,
    UShort,
    Long,
    ULong,
    LongLong,
    ULongLong,
}

impl DiscKind {
    /// From the `:TYPE` suffix of an enum's serde name; `None` if absent.
    pub(crate) fn from_enum_name(name: &str) -> Option<DiscKind> {
        let (_, t) = name.rsplit_once(':')?;
        Some(match t {
            "boolean" => DiscKind::Boolean,
            "char" => DiscKind::Char,
            "octet" => DiscKind::Octet,
            "short" => DiscKind::Short,
            "ushort" => DiscKind::UShort,
            "long" => DiscKind::Long,
            "ulong" => DiscKind::ULong,
            "longlong" => DiscKind::LongLong,
            "ulonglong" => DiscKind::ULongLong,
            _ => return None,
        })
    }

    fn range(self) -> (i128, i128) {
        match self {
            DiscKind::Boolean => (0, 1),
            DiscKind::Char | DiscKind::Octet => (0, 255),
            DiscKind::Short => (i16::MIN as i128, i16::MAX as i128),
            DiscKind::UShort => (0, u16::MAX as i128),
            DiscKind::Long => (i32::MIN as i128, i32::MAX as i128),
            DiscKind::ULong => (0, u32::MAX as i128),
            DiscKind::LongLong => (i64::MIN as i128, i64::MAX as i128),
            DiscKind::ULongLong => (0, u64::MAX as i128),
        }
    }

    fn write(self, w: &mut Writer<'_>, v: i128) -> Result<()> {
        let (lo, hi) = self.range();
        if v < lo || v > hi {
            return Err(CdrError::Message(format!(
                "union discriminator {v} does not fit the {self:?} discriminator type"
            )));
        }
        match self {
            DiscKind::Boolean => w.write_bool(v == 1),
            DiscKind::Char | DiscKind::Octet => w.write_u8(v as u8),
            DiscKind::Short => w.write_i16(v as i16),
            DiscKind::UShort => w.write_u16(v as u16),
            DiscKind::Long => w.write_i32(v as i32),
            DiscKind::ULong => w.write_u32(v as u32),
            DiscKind::LongLong => w.write_i64(v as i64),
            DiscKind::ULongLong => w.write_u64(v as u64),
        }
        Ok(())
    }
}

/// What a variant's serde name says about its discriminator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VariantDisc {
    /// The name is an integer: that value.
    Explicit(i128),
    /// The name is `default`: the content carries the discriminator.
    Default,
    /// Any other name: the variant index.
    Index,
}

#[inline]
pub(crate) fn variant_disc(variant: &str) -> VariantDisc {
    match variant.as_bytes().first() {
        Some(b'0'..=b'9' | b'-') => match variant.parse::<i128>() {
            Ok(v) => VariantDisc::Explicit(v),
            Err(_) => VariantDisc::Index,
        },
        Some(b'd') if variant == "default" => VariantDisc::Default,
        _ => VariantDisc::Index,
    }
}

/// The CDR serializer. Usually reached through [`to_writer`] / [`to_bytes`].
///
/// It keeps the writer's buffer, origin, order and options itself (one
/// pointer hop less per field than going through `&mut Writer`, which
/// matters for structs of primitives) and makes a short-lived [`Writer`]
/// over them for everything but fixed-size primitives.
#[derive(Debug)]
pub struct Serializer<'w> {
    buf: &'w mut BytesMut,
    /// `buf.len()` minus the stream offset, wrapping: the writer's origin
    /// less the bytes spliced into the stream, so that `pos()` stays one
    /// subtraction (only its value modulo 8 matters for alignment, and
    /// wrapping arithmetic keeps that exact).
    origin: usize,
    /// The writer's real origin index, its splice list and the spliced
    /// bytes lying before the origin (to rebuild a [`Writer`]).
    real_origin: usize,
    splices: Option<&'w mut Splices>,
    spliced_before: usize,
    order: ByteOrder,
    opts: Options,
    /// Set while a wrapper's inner value is being serialized (see
    /// [`crate::wrap`]): tells `serialize_char/str/bytes` what they carry.
    pending: Option<Magic>,
}

impl<'w> Serializer<'w> {
    /// A serializer appending where `w` would, with `w`'s origin, byte
    /// order and options.
    pub fn new(w: &'w mut Writer<'_>) -> Self {
        let origin = w.buf_len().wrapping_sub(w.position());
        let order = w.order();
        let opts = *w.opts();
        let (buf, real_origin, splices, spliced_before) = w.parts();
        Serializer {
            buf,
            origin,
            real_origin,
            splices,
            spliced_before,
            order,
            opts,
            pending: None,
        }
    }

    /// A writer at the serializer's current position.
    #[inline]
    pub fn writer(&mut self) -> Writer<'_> {
        Writer::from_parts(
            self.buf,
            self.order,
            self.opts,
            self.real_origin,
            self.splices.as_deref_mut(),
            self.spliced_before,
        )
    }

    /// Current stream offset.
    #[inline(always)]
    fn pos(&self) -> usize {
        self.buf.len().wrapping_sub(self.origin)
    }

    /// A sequence of octets (octet or char): spliced when its `Bytes` was
    /// offered and a splice list takes it, copied otherwise.
    fn octet_seq(&mut self, v: &[u8]) -> Result<()> {
        match wrap::take_offer(v) {
            Some(b) => {
                let r = self.writer().write_shared_octet_seq(&b);
                // Spliced bytes are not in `buf`: move the virtual origin.
                let total = self.splices.as_ref().map_or(0, |s| s.total());
                self.origin = self
                    .real_origin
                    .wrapping_add(self.spliced_before)
                    .wrapping_sub(total);
                r
            }
            None => self.writer().write_octet_seq(v),
        }
    }

    fn refuse(&self, what: &str) -> CdrError {
        CdrError::TypeMismatch {
            offset: self.pos(),
            expected: "a type with a CDR mapping".into(),
            found: what.into(),
        }
    }

    /// Write the discriminator of a variant (nothing for `default`).
    #[inline]
    fn discriminator(&mut self, name: &str, index: u32, variant: &str) -> Result<()> {
        match variant_disc(variant) {
            VariantDisc::Index => match DiscKind::from_enum_name(name) {
                None => {
                    self.put(index);
                    Ok(())
                }
                Some(k) => k.write(&mut self.writer(), index as i128),
            },
            VariantDisc::Explicit(v) => DiscKind::from_enum_name(name)
                .unwrap_or(DiscKind::Long)
                .write(&mut self.writer(), v),
            VariantDisc::Default => Ok(()),
        }
    }

    /// Append one naturally aligned primitive: padding and value written
    /// straight into the buffer's spare capacity with fixed-size stores.
    ///
    /// Same bytes as `Writer::write::<T>`, but `BytesMut`'s generic
    /// `put_bytes`/`put_slice` are out-of-line calls into memset/memmove
    /// for a handful of bytes, which dominated struct encoding. No scratch
    /// array either: writing a value into one at a variable offset and
    /// copying it out costs a store-forwarding stall per field.
    #[inline(always)]
    fn put<T: Primitive>(&mut self, v: T) {
        let pad = self.pos().wrapping_neg() & (T::SIZE - 1);
        let order = self.order;
        let buf = &mut *self.buf;
        buf.reserve(16);
        let len = buf.len();
        let spare = buf.spare_capacity_mut();
        debug_assert!(spare.len() >= 16 && pad < 8 && T::SIZE <= 8);
        // SAFETY: `reserve(16)` leaves at least 16 bytes of spare capacity
        // and `dst` comes from that spare region. Both 8-byte halves are
        // zeroed first, so the slice made over `pad .. pad + SIZE` (within
        // the 16 bytes: pad < 8, SIZE <= 8) is initialised; the length
        // then grows over exactly the pad + value bytes.
        unsafe {
            let dst = spare.as_mut_ptr().cast::<u8>();
            dst.cast::<u64>().write_unaligned(0);
            dst.add(8).cast::<u64>().write_unaligned(0);
            v.to_wire(std::slice::from_raw_parts_mut(dst.add(pad), T::SIZE), order);
            buf.set_len(len + pad + T::SIZE);
        }
    }

    /// Append one octet (octet, boolean, char), inlined.
    #[inline(always)]
    fn put_octet(&mut self, b: u8) {
        let buf = &mut *self.buf;
        buf.reserve(1);
        let len = buf.len();
        if let Some(slot) = buf.spare_capacity_mut().first_mut() {
            slot.write(b);
            // SAFETY: the byte at `len` (first spare byte) was just written.
            unsafe { buf.set_len(len + 1) };
        }
    }

    /// A primitive sequence handed over as host-order bytes.
    fn raw_seq(&mut self, bytes: &[u8], size: usize) -> Result<()> {
        let n = bytes.len() / size;
        self.writer().write_len(n)?;
        if n == 0 {
            return Ok(());
        }
        self.writer().align(size);
        if self.order.is_native() {
            self.buf.extend_from_slice(bytes);
            return Ok(());
        }
        let start = self.buf.len();
        self.buf.extend_from_slice(bytes);
        crate::prim::swap_in_place(&mut self.buf[start..], size);
        Ok(())
    }

    fn char_seq(&mut self, bytes: &[u8]) -> Result<()> {
        if self.opts.char_set == CharCodeSet::Utf8 && !bytes.is_ascii() {
            return Err(CdrError::Unrepresentable {
                what: "sequence<char> with a non-ASCII octet".into(),
                codeset: CharCodeSet::Utf8.name(),
            });
        }
        self.octet_seq(bytes)
    }

    fn magic<T: Serialize + ?Sized>(&mut self, m: Magic, value: &T) -> Result<()> {
        // Only the wrappers whose inner value chooses between a raw and an
        // element-by-element form need the token.
        let _guard = matches!(m, Magic::Seq(_) | Magic::CharSeq | Magic::LongDouble)
            .then(|| RawGuard::raise(RawMode::Encode));
        self.pending = Some(m);
        let r = value.serialize(&mut *self);
        match self.pending.take() {
            Some(m) if r.is_ok() => Err(CdrError::Message(format!(
                "wrapper {m:?} did not hand over its raw form"
            ))),
            _ => r,
        }
    }
}

impl<'s, 'w> ser::Serializer for &'s mut Serializer<'w> {
    type Ok = ();
    type Error = CdrError;
    type SerializeSeq = Compound<'s, 'w>;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Compound<'s, 'w>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<()> {
        self.put_octet(v as u8);
        Ok(())
    }
    #[inline]
    fn serialize_i8(self, v: i8) -> Result<()> {
        self.put_octet(v as u8);
        Ok(())
    }
    #[inline]
    fn serialize_i16(self, v: i16) -> Result<()> {
        self.put(v);
        Ok(())
    }
    #[inline]
    fn serialize_i32(self, v: i32) -> Result<()> {
        self.put(v);
        Ok(())
    }
    #[inline]
    fn serialize_i64(self, v: i64) -> Result<()> {
        self.put(v);
        Ok(())
    }
    #[inline]
    fn serialize_u8(self, v: u8) -> Result<()> {
        self.put_octet(v);
        Ok(())
    }
    #[inline]
    fn serialize_u16(self, v: u16) -> Result<()> {
        self.put(v);
        Ok(())
    }
    #[inline]
    fn serialize_u32(self, v: u32) -> Result<()> {
        self.put(v);
        Ok(())
    }
    #[inline]
    fn serialize_u64(self, v: u64) -> Result<()> {
        self.put(v);
        Ok(())
    }
    #[inline]
    fn serialize_f32(self, v: f32) -> Result<()> {
        self.put(v);
        Ok(())
    }
    #[inline]
    fn serialize_f64(self, v: f64) -> Result<()> {
        self.put(v);
        Ok(())
    }
    #[inline]
    fn serialize_char(self, v: char) -> Result<()> {
        if self.pending == Some(Magic::WChar) {
            self.pending = None;
            return self.writer().write_wchar(v);
        }
        // The same rule as `Writer::write_char` (one octet in the char code
        // set), inlined; anything else goes there for its exact error.
        let limit = match self.opts.char_set {
            CharCodeSet::Latin1 => 0xFF,
            CharCodeSet::Utf8 => 0x7F,
        };
        if v as u32 <= limit {
            self.put_octet(v as u32 as u8);
            Ok(())
        } else {
            self.writer().write_char(v)
        }
    }
    #[inline]
    fn serialize_str(self, v: &str) -> Result<()> {
        if self.pending == Some(Magic::WString) {
            self.pending = None;
            return self.writer().write_wstring(v);
        }
        self.writer().write_string(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        match self.pending.take() {
            None | Some(Magic::Octets) => self.octet_seq(v),
            Some(Magic::Seq(size)) => self.raw_seq(v, size),
            Some(Magic::CharSeq) => self.char_seq(v),
            Some(Magic::LongDouble) => {
                let raw: [u8; 16] = v
                    .try_into()
                    .map_err(|_| self.refuse("a long double that is not 16 octets"))?;
                self.writer().write_long_double(raw);
                Ok(())
            }
            Some(m @ (Magic::WChar | Magic::WString)) => {
                Err(self.refuse(&format!("bytes inside wrapper {m:?}")))
            }
        }
    }
    fn serialize_none(self) -> Result<()> {
        Err(self.refuse("Option (IDL has no optional values; use an enum, i.e. a union)"))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _v: &T) -> Result<()> {
        Err(self.refuse("Option (IDL has no optional values; use an enum, i.e. a union)"))
    }
    #[inline]
    fn serialize_unit(self) -> Result<()> {
        Ok(())
    }
    #[inline]
    fn serialize_unit_struct(self, _name: &'static str) -> Result<()> {
        Ok(())
    }
    #[inline]
    fn serialize_unit_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
    ) -> Result<()> {
        self.discriminator(name, index, variant)
    }
    #[inline]
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<()> {
        match wrap::magic(name) {
            None => value.serialize(self),
            Some(m) => self.magic(m, value),
        }
    }
    #[inline]
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<()> {
        self.discriminator(name, index, variant)?;
        value.serialize(self)
    }
    #[inline]
    fn serialize_seq(self, len: Option<usize>) -> Result<Compound<'s, 'w>> {
        Compound::begin(self, len)
    }
    #[inline]
    fn serialize_tuple(self, _len: usize) -> Result<Self> {
        Ok(self)
    }
    #[inline]
    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Self> {
        Ok(self)
    }
    #[inline]
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self> {
        self.discriminator(name, index, variant)?;
        Ok(self)
    }
    #[inline]
    fn serialize_map(self, len: Option<usize>) -> Result<Compound<'s, 'w>> {
        Compound::begin(self, len)
    }
    #[inline]
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self> {
        Ok(self)
    }
    #[inline]
    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self> {
        self.discriminator(name, index, variant)?;
        Ok(self)
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

/// A sequence or map being written: its u32 count is written up front when
/// serde knows it, and patched afterwards when it does not.
#[derive(Debug)]
pub struct Compound<'s, 'w> {
    ser: &'s mut Serializer<'w>,
    /// Stream offset of the count field.
    len_at: usize,
    declared: Option<usize>,
    count: usize,
}

impl<'s, 'w> Compound<'s, 'w> {
    #[inline]
    fn begin(ser: &'s mut Serializer<'w>, len: Option<usize>) -> Result<Self> {
        ser.writer().write_len(len.unwrap_or(0))?;
        let len_at = ser.pos() - 4;
        Ok(Compound {
            ser,
            len_at,
            declared: len,
            count: 0,
        })
    }

    #[inline]
    fn finish(self) -> Result<()> {
        match self.declared {
            Some(n) if n == self.count => Ok(()),
            Some(n) => Err(CdrError::Message(format!(
                "sequence declared {n} elements but {} were serialized",
                self.count
            ))),
            None => {
                let n = u32::try_from(self.count).map_err(|_| CdrError::LimitExceeded {
                    offset: self.len_at,
                    len: self.count as u64,
                    limit: u32::MAX as u64,
                })?;
                self.ser.writer().patch_u32(self.len_at, n);
                Ok(())
            }
        }
    }
}

impl ser::SerializeSeq for Compound<'_, '_> {
    type Ok = ();
    type Error = CdrError;
    #[inline]
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.count += 1;
        value.serialize(&mut *self.ser)
    }
    #[inline]
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = CdrError;
    #[inline]
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        self.count += 1;
        key.serialize(&mut *self.ser)
    }
    #[inline]
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        value.serialize(&mut *self.ser)
    }
    #[inline]
    fn end(self) -> Result<()> {
        self.finish()
    }
}

macro_rules! struct_like {
    ($($tr:ident :: $m:ident),*) => {$(
        impl ser::$tr for &mut Serializer<'_> {
            type Ok = ();
            type Error = CdrError;
            #[inline]
            fn $m<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
                value.serialize(&mut **self)
            }
            #[inline]
            fn end(self) -> Result<()> {
                Ok(())
            }
        }
    )*};
}
struct_like!(
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

macro_rules! named_fields {
    ($($tr:ident),*) => {$(
        impl ser::$tr for &mut Serializer<'_> {
            type Ok = ();
            type Error = CdrError;
            #[inline]
            fn serialize_field<T: Serialize + ?Sized>(&mut self, _key: &'static str, value: &T) -> Result<()> {
                value.serialize(&mut **self)
            }
            #[inline]
            fn end(self) -> Result<()> {
                Ok(())
            }
        }
    )*};
}
named_fields!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use serde::Serialize;

    use super::*;
    use crate::wrap::{CharSeq, Octets, Seq};

    #[derive(Serialize)]
    struct Body {
        tag: u8,
        data: Octets,
        after: f64,
        chars: CharSeq,
        longs: Seq<i32>,
    }

    fn body(n: usize) -> Body {
        Body {
            tag: 1,
            data: Octets(Bytes::from((0..n).map(|i| i as u8).collect::<Vec<u8>>())),
            after: 2.5,
            chars: CharSeq(Bytes::from(vec![b'x'; n + 1])),
            longs: Seq(vec![7; n]),
        }
    }

    /// Encode with splicing at `cutoff`: the flattened stream and the run
    /// lengths spliced.
    fn spliced(v: &Body, order: ByteOrder, cutoff: usize) -> (Vec<u8>, Vec<usize>) {
        let mut buf = BytesMut::new();
        let mut sp = Splices::new(cutoff);
        let mut w = Writer::new(&mut buf, order).splicing(&mut sp);
        to_writer(&mut w, v).unwrap();
        // The writer's position counts the spliced runs.
        assert_eq!(w.position(), buf.len() + sp.total());
        let mut flat = BytesMut::new();
        sp.flatten_into(&buf, &mut flat);
        (flat.to_vec(), sp.iter().map(|(_, b)| b.len()).collect())
    }

    #[test]
    fn octets_and_char_seqs_are_spliced_with_identical_bytes() {
        for order in [ByteOrder::Big, ByteOrder::Little] {
            let v = body(13);
            let copied = to_bytes(&v, order).unwrap();
            // 1 + pad 3 + 4 + 13 = 21, pad to 24 for the double.
            assert_eq!(copied.len(), 24 + 8 + 4 + 14 + 2 + 4 + 13 * 4);
            let (flat, runs) = spliced(&v, order, 13);
            assert_eq!(flat, copied.to_vec(), "{order:?}");
            // Octets (13) and CharSeq (14); never the Seq<i32>.
            assert_eq!(runs, [13, 14]);
            // Below the cutoff only the char sequence qualifies.
            let (flat, runs) = spliced(&v, order, 14);
            assert_eq!(flat, copied.to_vec());
            assert_eq!(runs, [14]);
        }
    }

    #[test]
    fn a_stale_offer_is_never_taken_for_other_bytes() {
        // Equal contents in other memory: copied, not spliced.
        let a = Bytes::from(vec![5u8; 32]);
        let other = vec![5u8; 32];
        let mut buf = BytesMut::new();
        let mut sp = Splices::new(1);
        let mut w = Writer::new(&mut buf, ByteOrder::Big).splicing(&mut sp);
        let _g = SpliceGuard::raise(1);
        a.serialize(&mut Serializer::new(&mut w)).ok();
        // `Bytes` itself serializes as plain bytes (no offer): copied.
        assert!(sp.is_empty());
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, ByteOrder::Big).splicing(&mut sp);
        serde::Serializer::serialize_bytes(&mut Serializer::new(&mut w), &other).unwrap();
        assert!(sp.is_empty());
        assert_eq!(buf.len(), 36);
    }
}
