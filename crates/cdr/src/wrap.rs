//! Wrapper types for the IDL types Rust has no native type for (`wchar`,
//! `wstring`, `long double`, zero-copy `sequence<octet>`, bulk
//! `sequence<char>`) and for sequences of primitives that must be encoded
//! and decoded with one bulk copy ([`Seq`]).
//!
//! serde has no specialization, so a wrapper tells *our* serializer what it
//! is through a magic newtype-struct name (`"$iiop_cdr::…"`). Everything
//! else (serde_json, bincode, …) sees an ordinary transparent newtype and
//! gets the element-by-element form, so the wrappers stay usable with any
//! serde format:
//!
//! | wrapper        | IDL                 | CDR path                      | other formats        |
//! |----------------|---------------------|-------------------------------|----------------------|
//! | [`WChar`]      | `wchar`             | `Writer::write_wchar`         | a `char`             |
//! | [`WString`]    | `wstring`           | `Writer::write_wstring`       | a string             |
//! | [`LongDouble`] | `long double`       | 16 raw octets aligned to 8    | a 16-tuple of u8     |
//! | [`Octets`]     | `sequence<octet>`   | one copy or spliced; zero-copy decode | bytes / u8 array |
//! | [`CharSeq`]    | `sequence<char>`    | one copy or spliced           | a sequence of chars  |
//! | [`Seq<T>`]     | `sequence<T>`       | one copy (+ swap pass)        | a sequence of `T`    |
//!
//! How the raw form is handed over: when our serializer meets a magic name
//! it raises a thread-local token (`RawMode::Encode`) and serializes the
//! inner value; the inner value sees the token (and clears it) and calls
//! `serialize_bytes` with its host-order bytes instead of serializing each
//! element. On decode our deserializer raises `RawMode::Decode` with the
//! stream's byte order and hands the visitor the wire bytes; the visitor
//! decodes them with one copy plus a swap pass. Tokens are raised only for
//! the duration of one call and cleared by a guard, so a token can never
//! leak into another serializer's run on the same thread.
//!
//! Splicing: when [`to_writer`](crate::to_writer) runs over a
//! [`Writer`](crate::Writer) with a splice list, it raises the list's
//! cutoff in a thread-local ([`SpliceGuard`]). An [`Octets`] or
//! [`CharSeq`] at least that long then *offers* a clone of its `Bytes` (a
//! reference count, no copy) before calling `serialize_bytes`; our
//! serializer takes the offer only if it is exactly the slice it was given
//! (same pointer and length) and splices it with
//! [`Writer::write_shared`](crate::Writer::write_shared). [`Seq<T>`] is not
//! spliced: its elements live in a `Vec<T>`, and sharing that as `Bytes`
//! would need a copy (or a different storage type), which is what splicing
//! is meant to avoid; host-order sequences keep their one bulk copy.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::marker::PhantomData;

use bytes::Bytes;
use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeTuple, Serializer};

use crate::options::ByteOrder;
use crate::prim::{as_bytes, decode_slice, Primitive};

pub(crate) const WCHAR: &str = "$iiop_cdr::WChar";
pub(crate) const WSTRING: &str = "$iiop_cdr::WString";
pub(crate) const LONG_DOUBLE: &str = "$iiop_cdr::LongDouble";
pub(crate) const OCTETS: &str = "$iiop_cdr::Octets";
pub(crate) const CHAR_SEQ: &str = "$iiop_cdr::CharSeq";

/// What a magic newtype name asks our (de)serializer to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Magic {
    WChar,
    WString,
    LongDouble,
    Octets,
    CharSeq,
    /// Sequence of a primitive of this size (2, 4 or 8).
    Seq(usize),
}

/// Recognise a magic name. Costs one byte comparison for ordinary names.
#[inline(always)]
pub(crate) fn magic(name: &str) -> Option<Magic> {
    if name.as_bytes().first() != Some(&b'$') {
        return None;
    }
    magic_slow(name)
}

#[inline(never)]
fn magic_slow(name: &str) -> Option<Magic> {
    Some(match name {
        WCHAR => Magic::WChar,
        WSTRING => Magic::WString,
        LONG_DOUBLE => Magic::LongDouble,
        OCTETS => Magic::Octets,
        CHAR_SEQ => Magic::CharSeq,
        "$iiop_cdr::Seq<i16>" | "$iiop_cdr::Seq<u16>" => Magic::Seq(2),
        "$iiop_cdr::Seq<i32>" | "$iiop_cdr::Seq<u32>" | "$iiop_cdr::Seq<f32>" => Magic::Seq(4),
        "$iiop_cdr::Seq<i64>" | "$iiop_cdr::Seq<u64>" | "$iiop_cdr::Seq<f64>" => Magic::Seq(8),
        _ => return None,
    })
}

/// The raw-handover token (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawMode {
    /// Our serializer wants host-order bytes through `serialize_bytes`.
    Encode,
    /// Our deserializer hands over wire bytes in this order.
    Decode(ByteOrder),
}

thread_local! {
    static RAW: Cell<Option<RawMode>> = const { Cell::new(None) };
    /// The `Bytes` an octet/char sequence was decoded into, so that the
    /// visitor can return it without copying (checked by pointer and length).
    static SHARED: RefCell<Option<Bytes>> = const { RefCell::new(None) };
    /// Splice cutoff of the running serialization (0: not splicing).
    static SPLICE: Cell<usize> = const { Cell::new(0) };
    /// The `Bytes` an octet/char sequence offered for splicing.
    static OFFER: RefCell<Option<Bytes>> = const { RefCell::new(None) };
}

/// Raises the splice cutoff for one serialization; restores the previous
/// one and drops any unclaimed offer when dropped.
pub(crate) struct SpliceGuard(usize);

impl SpliceGuard {
    pub(crate) fn raise(cutoff: usize) -> SpliceGuard {
        SpliceGuard(SPLICE.with(|c| c.replace(cutoff.max(1))))
    }
}

impl Drop for SpliceGuard {
    fn drop(&mut self) {
        SPLICE.with(|c| c.set(self.0));
        OFFER.with(|o| o.borrow_mut().take());
    }
}

/// Offer `b` for splicing if a splicing serialization runs and `b` is long
/// enough.
#[inline]
fn offer(b: &Bytes) {
    let cut = SPLICE.with(Cell::get);
    if cut != 0 && b.len() >= cut {
        OFFER.with(|o| *o.borrow_mut() = Some(b.clone()));
    }
}

/// The offered `Bytes`, if `v` is exactly its contents (same memory).
#[inline]
pub(crate) fn take_offer(v: &[u8]) -> Option<Bytes> {
    if SPLICE.with(Cell::get) == 0 {
        return None;
    }
    OFFER.with(|o| {
        let mut o = o.borrow_mut();
        match o.as_ref() {
            Some(x) if x.as_ptr() == v.as_ptr() && x.len() == v.len() => o.take(),
            _ => None,
        }
    })
}

/// Clears the thread-local token and shared buffer when dropped.
pub(crate) struct RawGuard(());

impl RawGuard {
    pub(crate) fn raise(mode: RawMode) -> RawGuard {
        RAW.with(|r| r.set(Some(mode)));
        RawGuard(())
    }
    pub(crate) fn share(bytes: Bytes) -> RawGuard {
        SHARED.with(|s| *s.borrow_mut() = Some(bytes));
        RawGuard(())
    }
}

impl Drop for RawGuard {
    fn drop(&mut self) {
        RAW.with(|r| r.set(None));
        SHARED.with(|s| s.borrow_mut().take());
    }
}

fn take_raw() -> Option<RawMode> {
    RAW.with(|r| r.take())
}

/// The shared buffer, if `b` is exactly its contents (same memory).
fn take_shared(b: &[u8]) -> Option<Bytes> {
    SHARED.with(|s| {
        let mut s = s.borrow_mut();
        match s.as_ref() {
            Some(x) if x.as_ptr() == b.as_ptr() && x.len() == b.len() => s.take(),
            _ => None,
        }
    })
}

// ---------------------------------------------------------------- WChar

/// IDL `wchar`: encoded with the negotiated wide code set and the GIOP
/// version's wchar rules (`Options::wchar_set`, `Options::wchar_rules`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct WChar(pub char);

impl Serialize for WChar {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(WCHAR, &self.0)
    }
}

impl<'de> Deserialize<'de> for WChar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WChar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a wide character")
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<WChar, D::Error> {
                char::deserialize(d).map(WChar)
            }
        }
        d.deserialize_newtype_struct(WCHAR, V)
    }
}

// -------------------------------------------------------------- WString

/// IDL `wstring`: encoded with the negotiated wide code set and the GIOP
/// version's rules (1.2: octet length, no NUL; 1.1: unit count with NUL).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct WString(pub String);

impl Serialize for WString {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(WSTRING, self.0.as_str())
    }
}

impl<'de> Deserialize<'de> for WString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WString;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a wide string")
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<WString, D::Error> {
                String::deserialize(d).map(WString)
            }
        }
        d.deserialize_newtype_struct(WSTRING, V)
    }
}

// ----------------------------------------------------------- LongDouble

/// IDL `long double`: 16 octets aligned to 8, kept raw in the byte order of
/// the stream they came from (Rust has no 128-bit float to convert to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LongDouble(pub [u8; 16]);

struct RawLongDouble<'a>(&'a [u8; 16]);

impl Serialize for RawLongDouble<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if take_raw() == Some(RawMode::Encode) {
            return s.serialize_bytes(self.0);
        }
        let mut t = s.serialize_tuple(16)?;
        for b in self.0 {
            t.serialize_element(b)?;
        }
        t.end()
    }
}

impl Serialize for LongDouble {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(LONG_DOUBLE, &RawLongDouble(&self.0))
    }
}

impl<'de> Deserialize<'de> for LongDouble {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Inner;
        impl<'de> Visitor<'de> for Inner {
            type Value = [u8; 16];
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("16 octets of a long double")
            }
            fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<[u8; 16], E> {
                b.try_into().map_err(|_| E::invalid_length(b.len(), &self))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<[u8; 16], A::Error> {
                let mut out = [0u8; 16];
                for (i, slot) in out.iter_mut().enumerate() {
                    *slot = a
                        .next_element()?
                        .ok_or_else(|| de::Error::invalid_length(i, &self))?;
                }
                Ok(out)
            }
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LongDouble;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a long double")
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<LongDouble, D::Error> {
                d.deserialize_tuple(16, Inner).map(LongDouble)
            }
        }
        d.deserialize_newtype_struct(LONG_DOUBLE, V)
    }
}

// --------------------------------------------------------------- Octets

/// IDL `sequence<octet>` as `Bytes`: encoded with one copy; decoded without
/// copying when the [`Reader`](crate::Reader) was built with
/// [`Reader::from_bytes`](crate::Reader::from_bytes) (one copy otherwise).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Octets(pub Bytes);

impl Serialize for Octets {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        offer(&self.0);
        s.serialize_bytes(&self.0)
    }
}

/// Accepts raw bytes (CDR, or a bytes-capable format) or a sequence of u8.
struct BytesVisitor;

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Bytes;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence of octets")
    }
    fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Bytes, E> {
        Ok(take_shared(b).unwrap_or_else(|| Bytes::copy_from_slice(b)))
    }
    fn visit_byte_buf<E: de::Error>(self, b: Vec<u8>) -> Result<Bytes, E> {
        Ok(Bytes::from(b))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Bytes, A::Error> {
        let mut v = Vec::with_capacity(a.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(b) = a.next_element::<u8>()? {
            v.push(b);
        }
        Ok(Bytes::from(v))
    }
}

impl<'de> Deserialize<'de> for Octets {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Octets;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sequence of octets")
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Octets, D::Error> {
                d.deserialize_byte_buf(BytesVisitor).map(Octets)
            }
        }
        d.deserialize_newtype_struct(OCTETS, V)
    }
}

impl From<Vec<u8>> for Octets {
    fn from(v: Vec<u8>) -> Self {
        Octets(Bytes::from(v))
    }
}

impl std::ops::Deref for Octets {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

// -------------------------------------------------------------- CharSeq

/// IDL `sequence<char>` as the raw octets of the transmission code set (one
/// octet per char; ISO-8859-1 by default), copied in bulk rather than
/// character by character. Under a UTF-8 char code set every octet must be
/// ASCII (a CDR `char` is a single octet), which encode and decode check.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct CharSeq(pub Bytes);

impl CharSeq {
    /// From text whose every character is ISO-8859-1 (U+0000..=U+00FF).
    pub fn from_latin1(s: &str) -> Option<CharSeq> {
        s.chars()
            .map(|c| u8::try_from(c as u32).ok())
            .collect::<Option<Vec<u8>>>()
            .map(|v| CharSeq(Bytes::from(v)))
    }
    /// The octets read as ISO-8859-1 text.
    pub fn to_latin1_string(&self) -> String {
        self.0.iter().map(|&b| b as char).collect()
    }
}

struct RawChars<'a>(&'a Bytes);

impl Serialize for RawChars<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if take_raw() == Some(RawMode::Encode) {
            offer(self.0);
            return s.serialize_bytes(self.0);
        }
        s.collect_seq(self.0.iter().map(|&b| b as char))
    }
}

impl Serialize for CharSeq {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(CHAR_SEQ, &RawChars(&self.0))
    }
}

impl<'de> Deserialize<'de> for CharSeq {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Inner;
        impl<'de> Visitor<'de> for Inner {
            type Value = Bytes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sequence of ISO-8859-1 chars")
            }
            fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Bytes, E> {
                Ok(take_shared(b).unwrap_or_else(|| Bytes::copy_from_slice(b)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Bytes, E> {
                CharSeq::from_latin1(s)
                    .map(|c| c.0)
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Str(s), &self))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Bytes, A::Error> {
                let mut v = Vec::with_capacity(a.size_hint().unwrap_or(0).min(1 << 20));
                while let Some(c) = a.next_element::<char>()? {
                    let b = u8::try_from(c as u32).map_err(|_| {
                        de::Error::invalid_value(de::Unexpected::Char(c), &"an ISO-8859-1 char")
                    })?;
                    v.push(b);
                }
                Ok(Bytes::from(v))
            }
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CharSeq;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sequence of chars")
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<CharSeq, D::Error> {
                d.deserialize_seq(Inner).map(CharSeq)
            }
        }
        d.deserialize_newtype_struct(CHAR_SEQ, V)
    }
}

// ------------------------------------------------------------------ Seq

/// Element types of [`Seq`]: the CDR numeric primitives (sealed through
/// [`Primitive`]).
pub trait SeqElem: Primitive + Serialize + for<'de> Deserialize<'de> {
    /// The magic newtype name that carries the element type to our
    /// (de)serializer.
    #[doc(hidden)]
    const MAGIC: &'static str;
}

macro_rules! seq_elem {
    ($($t:ty),*) => {$(
        impl SeqElem for $t {
            const MAGIC: &'static str = concat!("$iiop_cdr::Seq<", stringify!($t), ">");
        }
    )*};
}
seq_elem!(i16, u16, i32, u32, i64, u64, f32, f64);

/// `sequence<T>` of a numeric primitive, encoded and decoded as ONE bulk
/// copy (plus an in-place swap pass when the stream order is not the
/// host's). A plain `Vec<T>` gives the same bytes, element by element.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Seq<T: SeqElem>(pub Vec<T>);

struct RawSlice<'a, T>(&'a [T]);

impl<T: SeqElem> Serialize for RawSlice<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if take_raw() == Some(RawMode::Encode) {
            return s.serialize_bytes(as_bytes(self.0));
        }
        s.collect_seq(self.0)
    }
}

impl<T: SeqElem> Serialize for Seq<T> {
    #[inline]
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(T::MAGIC, &RawSlice(&self.0))
    }
}

impl<'de, T: SeqElem> Deserialize<'de> for Seq<T> {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Inner<T>(PhantomData<T>);
        impl<'de, T: SeqElem> Visitor<'de> for Inner<T> {
            type Value = Vec<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sequence of numbers")
            }
            fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Vec<T>, E> {
                match take_raw() {
                    Some(RawMode::Decode(order)) if b.len().is_multiple_of(T::SIZE) => {
                        Ok(decode_slice(b, order))
                    }
                    _ => Err(E::invalid_type(de::Unexpected::Bytes(b), &self)),
                }
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Vec<T>, A::Error> {
                let cap = a.size_hint().unwrap_or(0).min((1 << 20) / T::SIZE);
                let mut v = Vec::with_capacity(cap);
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(v)
            }
        }
        struct V<T>(PhantomData<T>);
        impl<'de, T: SeqElem> Visitor<'de> for V<T> {
            type Value = Seq<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sequence of numbers")
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Seq<T>, D::Error> {
                d.deserialize_seq(Inner(PhantomData)).map(Seq)
            }
        }
        d.deserialize_newtype_struct(T::MAGIC, V(PhantomData))
    }
}

impl<T: SeqElem> From<Vec<T>> for Seq<T> {
    fn from(v: Vec<T>) -> Self {
        Seq(v)
    }
}

impl<T: SeqElem> std::ops::Deref for Seq<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T: SeqElem> std::ops::DerefMut for Seq<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.0
    }
}
