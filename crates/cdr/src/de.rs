//! CDR → serde: a `serde::Deserializer` built only on [`Reader`].
//!
//! Reads exactly what [`crate::ser`] writes (the mapping table is there).
//! CDR is not self-describing, so `deserialize_any` (untagged enums,
//! `#[serde(flatten)]`, `serde_json::Value`, …) is refused.
//!
//! Hostile input: every sequence count is checked against the bytes left
//! (each element is assumed to take at least one octet; primitive
//! sequences through [`Seq`](crate::wrap::Seq) check the exact size) and
//! against [`Limits::max_len`](crate::Limits) before anything is allocated,
//! and sequences, maps and unions count towards
//! [`Limits::max_depth`](crate::Limits), so recursive types cannot blow the
//! stack.

use std::borrow::Cow;

use serde::de::value::{
    BorrowedBytesDeserializer, BytesDeserializer, CharDeserializer, StringDeserializer,
    U32Deserializer,
};
use serde::de::{self, DeserializeSeed, Visitor};
use serde::Deserialize;

use crate::error::{CdrError, Result};
use crate::options::{ByteOrder, CharCodeSet};
use crate::prim::Primitive;
use crate::reader::Reader;
use crate::ser::{variant_disc, DiscKind, VariantDisc};
use crate::wrap::{self, Magic, RawGuard, RawMode};

impl de::Error for CdrError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        CdrError::Message(msg.to_string())
    }
}

/// Deserialize one `T` from the reader, leaving it just past the value
/// (so several values can be read in a row, e.g. operation arguments).
///
/// Errors raised by `Deserialize` impls themselves (serde's `custom`, e.g.
/// "invalid length") come back as [`CdrError::Message`] with the reader's
/// offset appended.
#[inline]
pub fn from_reader<'de, T: Deserialize<'de>>(r: &mut Reader<'de>) -> Result<T> {
    // The deserializer works on its own copy of the reader (one pointer
    // hop less per field than through `&mut Reader`) and hands the
    // position back, also on failure.
    let mut de = Deserializer::new(r.clone());
    let v = T::deserialize(&mut de);
    *r = de.into_reader();
    v.map_err(|e| match e {
        CdrError::Message(m) => CdrError::Message(format!("{m} (at offset {})", r.position())),
        e => e,
    })
}

/// Deserialize a `T` that must take exactly all of `data` (a CDR stream of
/// its own, alignment origin at `data[0]`, default options); leftover bytes
/// are a [`CdrError::TrailingData`].
pub fn from_bytes<'de, T: Deserialize<'de>>(data: &'de [u8], order: ByteOrder) -> Result<T> {
    let mut r = Reader::new(data, order);
    let v = from_reader(&mut r)?;
    r.expect_end()?;
    Ok(v)
}

/// The CDR deserializer. Usually reached through [`from_reader`] /
/// [`from_bytes`].
#[derive(Debug)]
pub struct Deserializer<'de> {
    r: Reader<'de>,
}

impl<'de> Deserializer<'de> {
    /// A deserializer reading from `r` (taken by value; get it back, with
    /// its position advanced, from [`into_reader`](Self::into_reader)).
    pub fn new(r: Reader<'de>) -> Self {
        Deserializer { r }
    }

    /// The reader underneath.
    pub fn reader(&mut self) -> &mut Reader<'de> {
        &mut self.r
    }

    /// Give the reader back.
    pub fn into_reader(self) -> Reader<'de> {
        self.r
    }

    fn refuse(&self, what: &str) -> CdrError {
        CdrError::TypeMismatch {
            offset: self.r.position(),
            expected: "a type with a CDR mapping".into(),
            found: what.into(),
        }
    }

    /// One naturally aligned primitive: the padding and the value taken
    /// with ONE bounds check. Same result as `Reader::read::<T>`, which
    /// produces the exact error on failure (a failed `take` moves nothing).
    #[inline(always)]
    fn get<T: Primitive>(&mut self) -> Result<T> {
        if self.r.is_segmented() {
            return self.get_segmented();
        }
        let pad = self.r.position().wrapping_neg() & (T::SIZE - 1);
        let order = self.r.order();
        match self.r.take(pad + T::SIZE) {
            Ok(b) => Ok(T::from_wire(&b[pad..], order)),
            Err(_) => Err(truncated(
                self.r.position(),
                self.r.remaining(),
                pad,
                T::SIZE,
            )),
        }
    }

    /// [`get`](Self::get) across GIOP 1.1 fragments, where padding may
    /// restart at a fragment start: out of line, off the hot path.
    #[cold]
    #[inline(never)]
    fn get_segmented<T: Primitive>(&mut self) -> Result<T> {
        self.r.read()
    }

    /// Run `f` one nesting level deeper.
    #[inline]
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.r.enter()?;
        let v = f(self);
        self.r.leave();
        v
    }

    fn read_disc(&mut self, kind: DiscKind) -> Result<i128> {
        Ok(match kind {
            DiscKind::Boolean => self.r.read_bool()? as i128,
            DiscKind::Char | DiscKind::Octet => self.r.read_u8()? as i128,
            DiscKind::Short => self.r.read_i16()? as i128,
            DiscKind::UShort => self.r.read_u16()? as i128,
            DiscKind::Long => self.r.read_i32()? as i128,
            DiscKind::ULong => self.r.read_u32()? as i128,
            DiscKind::LongLong => self.r.read_i64()? as i128,
            DiscKind::ULongLong => self.r.read_u64()? as i128,
        })
    }

    /// Read a union discriminator / enum value and pick the variant index.
    fn variant_index(&mut self, name: &str, variants: &[&str]) -> Result<u32> {
        let explicit = variants
            .iter()
            .any(|v| variant_disc(v) != VariantDisc::Index);
        let kind = DiscKind::from_enum_name(name).unwrap_or(if explicit {
            DiscKind::Long
        } else {
            DiscKind::ULong
        });
        let size = match kind {
            DiscKind::Boolean | DiscKind::Char | DiscKind::Octet => 1,
            DiscKind::Short | DiscKind::UShort => 2,
            DiscKind::Long | DiscKind::ULong => 4,
            DiscKind::LongLong | DiscKind::ULongLong => 8,
        };
        self.r.align(size)?;
        let at = self.r.index();
        let offset = self.r.position();
        let d = self.read_disc(kind)?;
        if !explicit {
            return match u32::try_from(d) {
                Ok(i) if (i as usize) < variants.len() => Ok(i),
                _ => Err(CdrError::InvalidEnum {
                    offset,
                    value: d as u32,
                    count: variants.len() as u32,
                }),
            };
        }
        if let Some(i) = variants
            .iter()
            .position(|v| variant_disc(v) == VariantDisc::Explicit(d))
        {
            return Ok(i as u32);
        }
        if let Some(i) = variants
            .iter()
            .position(|v| variant_disc(v) == VariantDisc::Default)
        {
            // The default branch's content starts with the discriminator.
            self.r.seek(at)?;
            return Ok(i as u32);
        }
        Err(CdrError::InvalidDiscriminator {
            offset,
            value: d as i64,
        })
    }

    fn magic<V: Visitor<'de>>(&mut self, m: Magic, visitor: V) -> Result<V::Value> {
        match m {
            Magic::WChar => {
                let c = self.r.read_wchar()?;
                visitor.visit_newtype_struct(CharDeserializer::<CdrError>::new(c))
            }
            Magic::WString => {
                let s = self.r.read_wstring()?;
                visitor.visit_newtype_struct(StringDeserializer::<CdrError>::new(s))
            }
            Magic::LongDouble => {
                let raw = self.r.read_long_double()?;
                visitor.visit_newtype_struct(BytesDeserializer::<CdrError>::new(&raw))
            }
            Magic::Octets | Magic::CharSeq => {
                let offset = self.r.position();
                let b = self.r.read_octet_bytes()?;
                if m == Magic::CharSeq
                    && self.r.opts().char_set == CharCodeSet::Utf8
                    && !b.is_ascii()
                {
                    return Err(CdrError::InvalidCodeSet {
                        offset,
                        codeset: CharCodeSet::Utf8.name(),
                    });
                }
                let _guard = RawGuard::share(b.clone());
                visitor.visit_newtype_struct(BytesDeserializer::<CdrError>::new(&b))
            }
            Magic::Seq(size) => {
                let n = self.r.read_len(size)?;
                let b = if n == 0 {
                    Cow::Borrowed(&[][..])
                } else {
                    // Copied only when a run crosses a GIOP 1.1 fragment.
                    self.r.read_packed(n, size)?
                };
                let _guard = RawGuard::raise(RawMode::Decode(self.r.order()));
                match b {
                    Cow::Borrowed(b) => {
                        visitor.visit_newtype_struct(BorrowedBytesDeserializer::<CdrError>::new(b))
                    }
                    Cow::Owned(b) => {
                        visitor.visit_newtype_struct(BytesDeserializer::<CdrError>::new(&b))
                    }
                }
            }
        }
    }

    #[inline(always)]
    fn counted<V: Visitor<'de>>(&mut self, n: usize, visitor: V, map: bool) -> Result<V::Value> {
        let offset = self.r.position();
        let mut access = Counted { de: self, left: n };
        let v = if map {
            visitor.visit_map(&mut access)?
        } else {
            visitor.visit_seq(&mut access)?
        };
        if access.left != 0 {
            return Err(Self::unconsumed(offset, n, access.left));
        }
        Ok(v)
    }

    #[cold]
    #[inline(never)]
    fn unconsumed(offset: usize, n: usize, left: usize) -> CdrError {
        CdrError::TypeMismatch {
            offset,
            expected: format!("{n} elements consumed"),
            found: format!("{left} left unread by the visitor"),
        }
    }
}

/// The error `Reader::read` gives for a primitive of `size` whose `pad`
/// padding bytes start at `offset` with `available` bytes left. Takes
/// values, not the deserializer, so that the deserializer's state never
/// escapes from the hot path and can live in registers.
#[cold]
#[inline(never)]
fn truncated(offset: usize, available: usize, pad: usize, size: usize) -> CdrError {
    if pad > available {
        CdrError::Truncated {
            offset,
            needed: pad,
            available,
        }
    } else {
        CdrError::Truncated {
            offset: offset + pad,
            needed: size,
            available: available - pad,
        }
    }
}

macro_rules! prim {
    ($($m:ident => $t:ty, $visit:ident;)*) => {$(
        #[inline(always)]
        fn $m<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            visitor.$visit(self.get::<$t>()?)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for &mut Deserializer<'de> {
    type Error = CdrError;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
        Err(self.refuse("a self-describing request (CDR carries no type information)"))
    }

    prim! {
        deserialize_i16 => i16, visit_i16;
        deserialize_i32 => i32, visit_i32;
        deserialize_i64 => i64, visit_i64;
        deserialize_u16 => u16, visit_u16;
        deserialize_u32 => u32, visit_u32;
        deserialize_u64 => u64, visit_u64;
        deserialize_f32 => f32, visit_f32;
        deserialize_f64 => f64, visit_f64;
    }

    #[inline(always)]
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        // `Reader::read_bool`'s rule and error, inlined.
        match self.r.read_u8()? {
            0 => visitor.visit_bool(false),
            1 => visitor.visit_bool(true),
            value => Err(CdrError::InvalidBool {
                offset: self.r.position() - 1,
                value,
            }),
        }
    }

    #[inline(always)]
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_u8(self.r.read_u8()?)
    }

    #[inline(always)]
    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_i8(self.r.read_u8()? as i8)
    }

    #[inline(always)]
    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        // `Reader::read_char`'s rule and error, inlined: one octet in the
        // char code set (Latin-1: any; UTF-8: ASCII only).
        let b = self.r.read_u8()?;
        if b < 0x80 || self.r.opts().char_set == CharCodeSet::Latin1 {
            visitor.visit_char(b as char)
        } else {
            Err(CdrError::InvalidCodeSet {
                offset: self.r.position() - 1,
                codeset: CharCodeSet::Utf8.name(),
            })
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let offset = self.r.position();
        let b = self.r.read_string_bytes()?;
        let bad = || CdrError::InvalidCodeSet {
            offset,
            codeset: CharCodeSet::Utf8.name(),
        };
        match self.r.opts().char_set {
            CharCodeSet::Utf8 => {
                visitor.visit_borrowed_str(std::str::from_utf8(b).map_err(|_| bad())?)
            }
            CharCodeSet::Latin1 if b.is_ascii() => {
                visitor.visit_borrowed_str(std::str::from_utf8(b).map_err(|_| bad())?)
            }
            CharCodeSet::Latin1 => visitor.visit_string(b.iter().map(|&c| c as char).collect()),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_borrowed_bytes(self.r.read_octet_seq()?)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
        Err(self.refuse("Option (IDL has no optional values; use an enum, i.e. a union)"))
    }

    #[inline]
    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }

    #[inline]
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_unit()
    }

    #[inline]
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        match wrap::magic(name) {
            None => visitor.visit_newtype_struct(self),
            Some(m) => self.magic(m, visitor),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.nested(|de| {
            let n = de.r.read_len(1)?;
            de.counted(n, visitor, false)
        })
    }

    #[inline(always)]
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        self.counted(len, visitor, false)
    }

    #[inline]
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.counted(len, visitor, false)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.nested(|de| {
            // Each entry is at least two octets (key and value).
            let n = de.r.read_len(2)?;
            de.counted(n, visitor, true)
        })
    }

    #[inline(always)]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.counted(fields.len(), visitor, false)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.nested(|de| {
            let index = de.variant_index(name, variants)?;
            visitor.visit_enum(Union { de, index })
        })
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
        Err(self.refuse("an identifier (CDR carries no field or variant names)"))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
        Err(self.refuse("a value to skip (CDR carries no type information)"))
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

/// A run of `left` elements (struct members, tuple/array elements or
/// sequence elements) or map entries.
struct Counted<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    left: usize,
}

impl<'de> de::SeqAccess<'de> for &mut Counted<'_, 'de> {
    type Error = CdrError;
    #[inline(always)]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.de).map(Some)
    }
    /// Overridden only to force inlining: serde-derived struct visitors
    /// call this once per member, and a call here makes every member go
    /// through memory (a store-forwarding stall per field).
    #[inline(always)]
    fn next_element<T: Deserialize<'de>>(&mut self) -> Result<Option<T>> {
        self.next_element_seed(std::marker::PhantomData)
    }
    #[inline]
    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

impl<'de> de::MapAccess<'de> for &mut Counted<'_, 'de> {
    type Error = CdrError;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.de).map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        seed.deserialize(&mut *self.de)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// A union (or enum) whose variant index has been read.
struct Union<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    index: u32,
}

impl<'a, 'de> de::EnumAccess<'de> for Union<'a, 'de> {
    type Error = CdrError;
    type Variant = Self;
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self)> {
        let v = seed.deserialize(U32Deserializer::<CdrError>::new(self.index))?;
        Ok((v, self))
    }
}

impl<'de> de::VariantAccess<'de> for Union<'_, 'de> {
    type Error = CdrError;
    fn unit_variant(self) -> Result<()> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        seed.deserialize(&mut *self.de)
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        self.de.counted(len, visitor, false)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.de.counted(fields.len(), visitor, false)
    }
}
