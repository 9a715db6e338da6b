//! bench.idl as Rust types (the static, serde path) and as TypeCodes (the
//! dynamic path), plus [`Payload`]: one typed payload sequence of any
//! element type, with the deterministic contents of docs/vendor-protocol.md
//! and bench.idl's payload-byte counting rules.

use std::sync::OnceLock;

use bytes::Bytes;
use iiop_cdr::layout::{layout_for, Field};
use iiop_cdr::{
    ByteOrder, CharCodeSet, CharSeq, FixedLayout, Octets, Primitive, Reader, Result, Seq,
    StructLayout, TcStruct, TypeCode, WChar, WString, Writer,
};
use serde::{Deserialize, Serialize};

use super::elements::{Elem, STRING_CHARS, WSTRING_CHARS};

/// `struct PerfStruct { short s; char c; long l; octet o; double d; }`
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerfStruct {
    pub s: i16,
    pub c: char,
    pub l: i32,
    pub o: u8,
    pub d: f64,
}

/// `struct MyStruct { boolean b; string s; long l; }`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MyStruct {
    pub b: bool,
    pub s: String,
    pub l: i32,
}

/// `struct CD { char c; double d; }`
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cd {
    pub c: char,
    pub d: f64,
}

/// `struct CharStruct { char c; }`
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CharStruct {
    pub c: char,
}

/// `struct FloatStruct { float f; }`
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FloatStruct {
    pub f: f32,
}

/// `struct LongStruct { long l; }`
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LongStruct {
    pub l: i32,
}

/// `struct DoubleStruct { double d; }`
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DoubleStruct {
    pub d: f64,
}

/// `struct LongQuad { long a; long b; long c; long d; }`
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LongQuad {
    pub a: i32,
    pub b: i32,
    pub c: i32,
    pub d: i32,
}

/// `struct MixedQuad { double d; float f; short s1; short s2; }`
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MixedQuad {
    pub d: f64,
    pub f: f32,
    pub s1: i16,
    pub s2: i16,
}

/// `struct FloatPair { float a; float b; }`
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FloatPair {
    pub a: f32,
    pub b: f32,
}

/// The structs of primitives take the fast sequence path of
/// `iiop_cdr::layout`: their member offsets come from their TypeCode
/// ([`element_typecode`]), computed once, and every member is checked as
/// serde checks it (a `char` against the negotiated code set), so the
/// fast path and serde accept and reject the same bytes.
macro_rules! tc_struct {
    ($($t:ident = $elem:ident { $($f:ident: $ft:ty),+ };)*) => {$(
        impl TcStruct for $t {
            const LAYOUT: StructLayout =
                match StructLayout::from_kinds(&[$(<$ft as Field>::KIND),+]) {
                    Some(l) => l,
                    None => panic!("not a struct of primitives"),
                };
            fn layout() -> &'static StructLayout {
                static LAYOUT: OnceLock<StructLayout> = OnceLock::new();
                LAYOUT.get_or_init(|| layout_for::<$t>(&element_typecode(Elem::$elem)))
            }
            #[inline(always)]
            #[allow(unused_assignments)]
            fn get(b: &[u8], order: ByteOrder) -> Self {
                const L: StructLayout = <$t as TcStruct>::LAYOUT;
                let b: &[u8; L.size] = b.try_into().expect("one element");
                let mut i = 0;
                $t {
                    $($f: {
                        let v = <$ft as Field>::get(b, L.offsets[i], order);
                        i += 1;
                        v
                    }),+
                }
            }
            #[inline(always)]
            #[allow(unused_assignments)]
            fn put(&self, b: &mut [u8], order: ByteOrder, cs: CharCodeSet) -> Result<()> {
                const L: StructLayout = <$t as TcStruct>::LAYOUT;
                let b: &mut [u8; L.size] = b.try_into().expect("one element");
                let mut i = 0;
                $(
                    <$ft as Field>::put(self.$f, b, L.offsets[i], order, cs)?;
                    i += 1;
                )+
                Ok(())
            }
        }
    )*};
}

tc_struct! {
    PerfStruct = PerfStruct { s: i16, c: char, l: i32, o: u8, d: f64 };
    Cd = Cd { c: char, d: f64 };
    CharStruct = CharStruct { c: char };
    FloatStruct = FloatStruct { f: f32 };
    LongStruct = LongStruct { l: i32 };
    DoubleStruct = DoubleStruct { d: f64 };
    LongQuad = LongQuad { a: i32, b: i32, c: i32, d: i32 };
    MixedQuad = MixedQuad { d: f64, f: f32, s1: i16, s2: i16 };
    FloatPair = FloatPair { a: f32, b: f32 };
}

/// `PerfStruct` in the older, unchecked `iiop_cdr::FixedLayout` form,
/// kept only as the baseline `benches/cdr.rs` measures (`*_fixed` cases).
/// It neither checks a `char` against the code set nor refuses one it
/// cannot carry: nothing in the servers uses it. Its constants are those
/// of [`TcStruct::layout`], which a test checks.
impl FixedLayout for PerfStruct {
    const ALIGN: usize = 8;
    const FIRST_ALIGN: usize = 2;
    const PHASE: usize = 0;
    const STRIDE: usize = 24;
    const SIZE: usize = 24;
    #[inline(always)]
    fn put(&self, o: &mut [u8], ord: ByteOrder) {
        self.s.to_wire(&mut o[0..2], ord);
        o[2] = self.c as u32 as u8;
        self.l.to_wire(&mut o[4..8], ord);
        o[8] = self.o;
        self.d.to_wire(&mut o[16..24], ord);
    }
    #[inline(always)]
    fn get(i: &[u8], ord: ByteOrder) -> Self {
        PerfStruct {
            s: i16::from_wire(&i[0..2], ord),
            c: i[2] as char,
            l: i32::from_wire(&i[4..8], ord),
            o: i[8],
            d: f64::from_wire(&i[16..24], ord),
        }
    }
}

/// `enum Color { RED, GREEN, BLUE }`
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Color {
    Red,
    Green,
    Blue,
}

/// `union Variant switch (long) { case 1: long l; case 2: double d;
/// case 3: string s; default: octet o; }` (the default branch carries its
/// discriminator value first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Variant:long")]
pub enum Variant {
    #[serde(rename = "1")]
    L(i32),
    #[serde(rename = "2")]
    D(f64),
    #[serde(rename = "3")]
    S(String),
    #[serde(rename = "default")]
    O(i32, u8),
}

/// bench.idl `Stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StatsWire {
    pub calls: u64,
    pub oneways: u64,
    pub bytes: u64,
    pub cpu_seconds: f64,
    pub last_mark: u64,
    pub mark_disorder: u64,
}

/// One payload sequence, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    Short(Seq<i16>),
    UShort(Seq<u16>),
    Long(Seq<i32>),
    ULong(Seq<u32>),
    LongLong(Seq<i64>),
    ULongLong(Seq<u64>),
    Float(Seq<f32>),
    Double(Seq<f64>),
    Char(CharSeq),
    WChar(Vec<WChar>),
    Octet(Octets),
    Boolean(Vec<bool>),
    String(Vec<String>),
    WString(Vec<WString>),
    PerfStruct(Vec<PerfStruct>),
    MyStruct(Vec<MyStruct>),
    Cd(Vec<Cd>),
    CharStruct(Vec<CharStruct>),
    FloatStruct(Vec<FloatStruct>),
    LongStruct(Vec<LongStruct>),
    DoubleStruct(Vec<DoubleStruct>),
    LongQuad(Vec<LongQuad>),
    MixedQuad(Vec<MixedQuad>),
    FloatPair(Vec<FloatPair>),
    Color(Vec<Color>),
    Variant(Vec<Variant>),
}

/// Deterministic integer for element `i` (docs/vendor-protocol.md).
#[inline]
fn int(i: usize) -> i64 {
    (i as i64).wrapping_mul(7).wrapping_add(3)
}
#[inline]
fn real(i: usize) -> f64 {
    i as f64 * 0.5 + 0.25
}
#[inline]
fn ch(i: usize) -> char {
    (b'a' + (i % 26) as u8) as char
}
fn text(i: usize, n: usize) -> String {
    (0..n).map(|k| ch(i + k)).collect()
}

/// Element count of any payload container.
trait Elements {
    fn count(&self) -> usize;
}
impl<T> Elements for Vec<T> {
    fn count(&self) -> usize {
        self.len()
    }
}
impl<T: iiop_cdr::SeqElem> Elements for Seq<T> {
    fn count(&self) -> usize {
        self.0.len()
    }
}
impl Elements for CharSeq {
    fn count(&self) -> usize {
        self.0.len()
    }
}
impl Elements for Octets {
    fn count(&self) -> usize {
        self.0.len()
    }
}

macro_rules! each_payload {
    ($p:expr, $v:ident => $e:expr) => {
        match $p {
            Payload::Short($v) => $e,
            Payload::UShort($v) => $e,
            Payload::Long($v) => $e,
            Payload::ULong($v) => $e,
            Payload::LongLong($v) => $e,
            Payload::ULongLong($v) => $e,
            Payload::Float($v) => $e,
            Payload::Double($v) => $e,
            Payload::Char($v) => $e,
            Payload::WChar($v) => $e,
            Payload::Octet($v) => $e,
            Payload::Boolean($v) => $e,
            Payload::String($v) => $e,
            Payload::WString($v) => $e,
            Payload::PerfStruct($v) => $e,
            Payload::MyStruct($v) => $e,
            Payload::Cd($v) => $e,
            Payload::CharStruct($v) => $e,
            Payload::FloatStruct($v) => $e,
            Payload::LongStruct($v) => $e,
            Payload::DoubleStruct($v) => $e,
            Payload::LongQuad($v) => $e,
            Payload::MixedQuad($v) => $e,
            Payload::FloatPair($v) => $e,
            Payload::Color($v) => $e,
            Payload::Variant($v) => $e,
        }
    };
}

impl Payload {
    /// `n` elements of `elem` with the contract's deterministic contents.
    /// `throughput` makes every Variant the double branch (fixed size).
    pub fn generate(elem: Elem, n: usize, throughput: bool) -> Payload {
        let r = 0..n;
        match elem {
            Elem::Short => Payload::Short(Seq(r.map(|i| int(i) as i16).collect())),
            Elem::UShort => Payload::UShort(Seq(r.map(|i| int(i) as u16).collect())),
            Elem::Long => Payload::Long(Seq(r.map(|i| int(i) as i32).collect())),
            Elem::ULong => Payload::ULong(Seq(r.map(|i| int(i) as u32).collect())),
            Elem::LongLong => Payload::LongLong(Seq(r.map(int).collect())),
            Elem::ULongLong => Payload::ULongLong(Seq(r.map(|i| int(i) as u64).collect())),
            Elem::Float => Payload::Float(Seq(r.map(|i| real(i) as f32).collect())),
            Elem::Double => Payload::Double(Seq(r.map(real).collect())),
            Elem::Char => Payload::Char(CharSeq(Bytes::from(
                r.map(|i| ch(i) as u8).collect::<Vec<u8>>(),
            ))),
            Elem::WChar => {
                Payload::WChar(r.map(|i| WChar((b'A' + (i % 26) as u8) as char)).collect())
            }
            Elem::Octet => Payload::Octet(Octets(Bytes::from(
                r.map(|i| int(i) as u8).collect::<Vec<u8>>(),
            ))),
            Elem::Boolean => Payload::Boolean(r.map(|i| i % 3 == 0).collect()),
            Elem::String => Payload::String(r.map(|i| text(i, STRING_CHARS)).collect()),
            Elem::WString => Payload::WString(r.map(|i| WString(text(i, WSTRING_CHARS))).collect()),
            Elem::PerfStruct => Payload::PerfStruct(
                r.map(|i| PerfStruct {
                    s: int(i) as i16,
                    c: ch(i),
                    l: int(i) as i32,
                    o: int(i) as u8,
                    d: real(i),
                })
                .collect(),
            ),
            Elem::MyStruct => Payload::MyStruct(
                r.map(|i| MyStruct {
                    b: i % 3 == 0,
                    s: text(i, STRING_CHARS),
                    l: int(i) as i32,
                })
                .collect(),
            ),
            Elem::Cd => Payload::Cd(
                r.map(|i| Cd {
                    c: ch(i),
                    d: real(i),
                })
                .collect(),
            ),
            Elem::CharStruct => Payload::CharStruct(r.map(|i| CharStruct { c: ch(i) }).collect()),
            Elem::FloatStruct => {
                Payload::FloatStruct(r.map(|i| FloatStruct { f: real(i) as f32 }).collect())
            }
            Elem::LongStruct => {
                Payload::LongStruct(r.map(|i| LongStruct { l: int(i) as i32 }).collect())
            }
            Elem::DoubleStruct => {
                Payload::DoubleStruct(r.map(|i| DoubleStruct { d: real(i) }).collect())
            }
            Elem::LongQuad => Payload::LongQuad(
                r.map(|i| {
                    let a = int(i) as i32;
                    LongQuad {
                        a,
                        b: a.wrapping_add(1),
                        c: a.wrapping_add(2),
                        d: a.wrapping_add(3),
                    }
                })
                .collect(),
            ),
            Elem::MixedQuad => Payload::MixedQuad(
                r.map(|i| MixedQuad {
                    d: real(i),
                    f: real(i) as f32,
                    s1: int(i) as i16,
                    s2: (int(i) as i16).wrapping_add(1),
                })
                .collect(),
            ),
            Elem::FloatPair => Payload::FloatPair(
                r.map(|i| FloatPair {
                    a: real(i) as f32,
                    b: real(i) as f32 + 1.0,
                })
                .collect(),
            ),
            Elem::Color => Payload::Color(
                r.map(|i| [Color::Red, Color::Green, Color::Blue][i % 3])
                    .collect(),
            ),
            Elem::Variant => Payload::Variant(
                r.map(|i| match if throughput { 1 } else { i % 4 } {
                    0 => Variant::L(int(i) as i32),
                    1 => Variant::D(real(i)),
                    2 => Variant::S(text(i, STRING_CHARS)),
                    _ => Variant::O(0, int(i) as u8),
                })
                .collect(),
            ),
        }
    }

    /// A payload of about `size` bytes (bench.idl counting).
    pub fn for_size(elem: Elem, size: u64) -> Payload {
        Payload::generate(elem, elem.count_for_size(size) as usize, true)
    }

    /// The element type.
    pub fn elem(&self) -> Elem {
        match self {
            Payload::Short(_) => Elem::Short,
            Payload::UShort(_) => Elem::UShort,
            Payload::Long(_) => Elem::Long,
            Payload::ULong(_) => Elem::ULong,
            Payload::LongLong(_) => Elem::LongLong,
            Payload::ULongLong(_) => Elem::ULongLong,
            Payload::Float(_) => Elem::Float,
            Payload::Double(_) => Elem::Double,
            Payload::Char(_) => Elem::Char,
            Payload::WChar(_) => Elem::WChar,
            Payload::Octet(_) => Elem::Octet,
            Payload::Boolean(_) => Elem::Boolean,
            Payload::String(_) => Elem::String,
            Payload::WString(_) => Elem::WString,
            Payload::PerfStruct(_) => Elem::PerfStruct,
            Payload::MyStruct(_) => Elem::MyStruct,
            Payload::Cd(_) => Elem::Cd,
            Payload::CharStruct(_) => Elem::CharStruct,
            Payload::FloatStruct(_) => Elem::FloatStruct,
            Payload::LongStruct(_) => Elem::LongStruct,
            Payload::DoubleStruct(_) => Elem::DoubleStruct,
            Payload::LongQuad(_) => Elem::LongQuad,
            Payload::MixedQuad(_) => Elem::MixedQuad,
            Payload::FloatPair(_) => Elem::FloatPair,
            Payload::Color(_) => Elem::Color,
            Payload::Variant(_) => Elem::Variant,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        each_payload!(self, v => Elements::count(v))
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Payload bytes by bench.idl's COUNTERS rules; `char_set` decides how
    /// many octets a string's characters take.
    pub fn counted_bytes(&self, char_set: CharCodeSet) -> u64 {
        let slen = |s: &str| -> u64 {
            match char_set {
                CharCodeSet::Latin1 => s.chars().count() as u64,
                CharCodeSet::Utf8 => s.len() as u64,
            }
        };
        let string = |s: &str| 4 + slen(s) + 1;
        match self {
            Payload::String(v) => v.iter().map(|s| string(s)).sum(),
            Payload::WString(v) => v
                .iter()
                .map(|s| 4 + 2 * s.0.encode_utf16().count() as u64)
                .sum(),
            Payload::MyStruct(v) => v.iter().map(|m| 1 + string(&m.s) + 4).sum(),
            Payload::Variant(v) => v
                .iter()
                .map(|x| {
                    4 + match x {
                        Variant::L(_) => 4,
                        Variant::D(_) => 8,
                        Variant::S(s) => string(s),
                        Variant::O(..) => 1,
                    }
                })
                .sum(),
            other => other.len() as u64 * other.elem().fixed_stride().expect("fixed-size element"),
        }
    }

    /// Encode as the operation's `in` argument (or an echo's result).
    pub fn encode(&self, w: &mut Writer<'_>) -> Result<()> {
        use iiop_cdr::write_struct_seq as fixed;
        match self {
            Payload::PerfStruct(v) => fixed(w, v),
            Payload::Cd(v) => fixed(w, v),
            Payload::CharStruct(v) => fixed(w, v),
            Payload::FloatStruct(v) => fixed(w, v),
            Payload::LongStruct(v) => fixed(w, v),
            Payload::DoubleStruct(v) => fixed(w, v),
            Payload::LongQuad(v) => fixed(w, v),
            Payload::MixedQuad(v) => fixed(w, v),
            Payload::FloatPair(v) => fixed(w, v),
            other => each_payload!(other, v => iiop_cdr::to_writer(w, v)),
        }
    }

    /// The elements of a numeric sequence (short … double) in shared
    /// memory, for sending without copying; `None` for other types.
    pub fn shared(&self) -> Option<iiop_cdr::SharedSeq> {
        use iiop_cdr::SharedSeq as S;
        Some(match self {
            Payload::Short(v) => S::new(&v.0),
            Payload::UShort(v) => S::new(&v.0),
            Payload::Long(v) => S::new(&v.0),
            Payload::ULong(v) => S::new(&v.0),
            Payload::LongLong(v) => S::new(&v.0),
            Payload::ULongLong(v) => S::new(&v.0),
            Payload::Float(v) => S::new(&v.0),
            Payload::Double(v) => S::new(&v.0),
            _ => return None,
        })
    }

    /// Decode a payload sequence of `elem`.
    pub fn decode(elem: Elem, r: &mut Reader<'_>) -> Result<Payload> {
        use iiop_cdr::{from_reader as d, read_struct_seq as fixed};
        Ok(match elem {
            Elem::Short => Payload::Short(d(r)?),
            Elem::UShort => Payload::UShort(d(r)?),
            Elem::Long => Payload::Long(d(r)?),
            Elem::ULong => Payload::ULong(d(r)?),
            Elem::LongLong => Payload::LongLong(d(r)?),
            Elem::ULongLong => Payload::ULongLong(d(r)?),
            Elem::Float => Payload::Float(d(r)?),
            Elem::Double => Payload::Double(d(r)?),
            Elem::Char => Payload::Char(d(r)?),
            Elem::WChar => Payload::WChar(d(r)?),
            Elem::Octet => Payload::Octet(d(r)?),
            Elem::Boolean => Payload::Boolean(d(r)?),
            Elem::String => Payload::String(d(r)?),
            Elem::WString => Payload::WString(d(r)?),
            Elem::PerfStruct => Payload::PerfStruct(fixed(r)?),
            Elem::MyStruct => Payload::MyStruct(d(r)?),
            Elem::Cd => Payload::Cd(fixed(r)?),
            Elem::CharStruct => Payload::CharStruct(fixed(r)?),
            Elem::FloatStruct => Payload::FloatStruct(fixed(r)?),
            Elem::LongStruct => Payload::LongStruct(fixed(r)?),
            Elem::DoubleStruct => Payload::DoubleStruct(fixed(r)?),
            Elem::LongQuad => Payload::LongQuad(fixed(r)?),
            Elem::MixedQuad => Payload::MixedQuad(fixed(r)?),
            Elem::FloatPair => Payload::FloatPair(fixed(r)?),
            Elem::Color => Payload::Color(d(r)?),
            Elem::Variant => Payload::Variant(d(r)?),
        })
    }
}

/// The element types whose sequences take the `TcStruct` fast path
/// (`fixed` in [`Payload::decode`]), for the tests that hold it to the
/// serde path.
pub const FAST_PATH: [Elem; 9] = [
    Elem::PerfStruct,
    Elem::Cd,
    Elem::CharStruct,
    Elem::FloatStruct,
    Elem::LongStruct,
    Elem::DoubleStruct,
    Elem::LongQuad,
    Elem::MixedQuad,
    Elem::FloatPair,
];

fn id(name: &str) -> String {
    format!("IDL:Bench/{name}:1.0")
}

fn structure(name: &str, members: Vec<(&str, TypeCode)>) -> TypeCode {
    TypeCode::struct_tc(&id(name), name, members)
}

/// TypeCode of one element type.
pub fn element_typecode(elem: Elem) -> TypeCode {
    use TypeCode as T;
    match elem {
        Elem::Short => T::short(),
        Elem::UShort => T::ushort(),
        Elem::Long => T::long(),
        Elem::ULong => T::ulong(),
        Elem::LongLong => T::longlong(),
        Elem::ULongLong => T::ulonglong(),
        Elem::Float => T::float(),
        Elem::Double => T::double(),
        Elem::Char => T::char(),
        Elem::WChar => T::wchar(),
        Elem::Octet => T::octet(),
        Elem::Boolean => T::boolean(),
        Elem::String => T::string(0),
        Elem::WString => T::wstring(0),
        Elem::PerfStruct => structure(
            "PerfStruct",
            vec![
                ("s", T::short()),
                ("c", T::char()),
                ("l", T::long()),
                ("o", T::octet()),
                ("d", T::double()),
            ],
        ),
        Elem::MyStruct => structure(
            "MyStruct",
            vec![("b", T::boolean()), ("s", T::string(0)), ("l", T::long())],
        ),
        Elem::Cd => structure("CD", vec![("c", T::char()), ("d", T::double())]),
        Elem::CharStruct => structure("CharStruct", vec![("c", T::char())]),
        Elem::FloatStruct => structure("FloatStruct", vec![("f", T::float())]),
        Elem::LongStruct => structure("LongStruct", vec![("l", T::long())]),
        Elem::DoubleStruct => structure("DoubleStruct", vec![("d", T::double())]),
        Elem::LongQuad => structure(
            "LongQuad",
            vec![
                ("a", T::long()),
                ("b", T::long()),
                ("c", T::long()),
                ("d", T::long()),
            ],
        ),
        Elem::MixedQuad => structure(
            "MixedQuad",
            vec![
                ("d", T::double()),
                ("f", T::float()),
                ("s1", T::short()),
                ("s2", T::short()),
            ],
        ),
        Elem::FloatPair => structure("FloatPair", vec![("a", T::float()), ("b", T::float())]),
        Elem::Color => T::enum_tc(&id("Color"), "Color", &["RED", "GREEN", "BLUE"]),
        Elem::Variant => T::union_tc(
            &id("Variant"),
            "Variant",
            T::long(),
            3,
            vec![
                (1, "l", T::long()),
                (2, "d", T::double()),
                (3, "s", T::string(0)),
                (0, "o", T::octet()),
            ],
        )
        .expect("Variant is a legal union"),
    }
}

/// TypeCode of the payload sequence typedef (`Bench::<Elem>Seq`).
pub fn seq_typecode(elem: Elem) -> TypeCode {
    let name = elem.seq_name();
    TypeCode::alias(
        &elem.seq_repo_id(),
        &name,
        TypeCode::sequence(element_typecode(elem), 0),
    )
}

/// A payload as a client sends it many times: octet and char sequences
/// already live in shared memory; numeric sequences get a shared copy of
/// their elements here, so that every send splices them into the socket
/// write instead of copying them (the bytes on the wire are the same as
/// [`Payload::encode`]'s).
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    payload: Payload,
    shared: Option<iiop_cdr::SharedSeq>,
}

impl Outgoing {
    pub fn new(payload: Payload) -> Outgoing {
        Outgoing {
            shared: payload.shared(),
            payload,
        }
    }

    /// What is sent (and what an echo must return).
    pub fn payload(&self) -> &Payload {
        &self.payload
    }

    /// Encode exactly as [`Payload::encode`] does.
    pub fn encode(&self, w: &mut Writer<'_>) -> Result<()> {
        match &self.shared {
            Some(s) => w.write_shared_seq(s),
            None => self.payload.encode(w),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use iiop_cdr::{ByteOrder, Value};

    fn encode(p: &Payload, order: ByteOrder) -> BytesMut {
        let mut buf = BytesMut::new();
        p.encode(&mut Writer::new(&mut buf, order)).unwrap();
        buf
    }

    #[test]
    fn outgoing_encodes_like_the_payload_in_both_orders() {
        for elem in Elem::ALL {
            for n in [0, 1, 3, 5000] {
                let p = Payload::generate(elem, n, false);
                let o = Outgoing::new(p.clone());
                assert_eq!(o.payload(), &p);
                for order in [ByteOrder::Big, ByteOrder::Little] {
                    for lead in 0..8 {
                        let enc = |f: &dyn Fn(&mut Writer<'_>) -> Result<()>| {
                            let mut buf = BytesMut::new();
                            let mut w = Writer::new(&mut buf, order);
                            for _ in 0..lead {
                                w.write_u8(0xEE);
                            }
                            f(&mut w).unwrap();
                            buf
                        };
                        assert_eq!(
                            enc(&|w| o.encode(w)),
                            enc(&|w| p.encode(w)),
                            "{elem} x{n} {order:?} after {lead}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn every_element_round_trips_typed_and_dynamic_identically() {
        for elem in Elem::ALL {
            for n in [0, 1, 7, 100] {
                let p = Payload::generate(elem, n, false);
                assert_eq!(p.len(), n);
                assert_eq!(p.elem(), elem);
                for order in [ByteOrder::Big, ByteOrder::Little] {
                    let bytes = encode(&p, order);
                    let back = Payload::decode(elem, &mut Reader::new(&bytes, order)).unwrap();
                    assert_eq!(back, p, "{elem} x{n}");
                    // The dynamic path decodes the same bytes and re-encodes
                    // them byte for byte.
                    let tc = seq_typecode(elem);
                    let v = Value::decode(&tc, &mut Reader::new(&bytes, order)).unwrap();
                    assert_eq!(v.len(), Some(n), "{elem}");
                    let mut again = BytesMut::new();
                    v.encode(&tc, &mut Writer::new(&mut again, order)).unwrap();
                    assert_eq!(again, bytes, "{elem} x{n} dynamic re-encode");
                }
            }
        }
    }

    #[test]
    fn contents_and_counts_follow_the_contract() {
        let Payload::PerfStruct(v) = Payload::generate(Elem::PerfStruct, 3, false) else {
            unreachable!()
        };
        assert_eq!(
            v[2],
            PerfStruct {
                s: 17,
                c: 'c',
                l: 17,
                o: 17,
                d: 1.25
            }
        );
        let Payload::String(v) = Payload::generate(Elem::String, 2, false) else {
            unreachable!()
        };
        assert_eq!(v[1], "bcdefghijklmnop");
        let Payload::Variant(v) = Payload::generate(Elem::Variant, 4, false) else {
            unreachable!()
        };
        assert_eq!(
            v,
            vec![
                Variant::L(3),
                Variant::D(0.75),
                Variant::S(text(2, 15)),
                Variant::O(0, 24)
            ]
        );
        let l1 = CharCodeSet::Latin1;
        assert_eq!(
            Payload::for_size(Elem::Double, 65536).counted_bytes(l1),
            65536
        );
        assert_eq!(
            Payload::for_size(Elem::PerfStruct, 1024).counted_bytes(l1),
            42 * 24
        );
        assert_eq!(
            Payload::generate(Elem::String, 3, false).counted_bytes(l1),
            60
        );
        assert_eq!(
            Payload::generate(Elem::MyStruct, 2, false).counted_bytes(l1),
            50
        );
        assert_eq!(
            Payload::generate(Elem::WString, 1, false).counted_bytes(l1),
            20
        );
        // L(4+4) + D(4+8) + S(4+20) + O(4+1)
        assert_eq!(
            Payload::generate(Elem::Variant, 4, false).counted_bytes(l1),
            49
        );
        assert_eq!(
            Payload::for_size(Elem::Variant, 1200).counted_bytes(l1),
            1200
        );
    }

    #[test]
    fn fixed_layout_path_gives_serde_bytes_at_every_origin() {
        for elem in FAST {
            for n in [0, 1, 2, 3, 50] {
                let p = Payload::generate(elem, n, false);
                for prefix in 0..8 {
                    for order in [ByteOrder::Big, ByteOrder::Little] {
                        let mut fast = BytesMut::from(&vec![0xAAu8; prefix][..]);
                        p.encode(&mut Writer::with_origin(&mut fast, order, 0))
                            .unwrap();
                        let mut slow = BytesMut::from(&vec![0xAAu8; prefix][..]);
                        each_payload!(&p, v => iiop_cdr::to_writer(&mut Writer::with_origin(&mut slow, order, 0), v)).unwrap();
                        assert_eq!(fast, slow, "{elem} x{n} prefix {prefix} {order:?}");
                        let mut r = Reader::new(&fast, order);
                        r.take(prefix).unwrap();
                        assert_eq!(Payload::decode(elem, &mut r).unwrap(), p);
                        r.expect_end().unwrap();
                    }
                }
            }
        }
    }

    #[test]
    fn perfstruct_is_24_bytes_on_the_wire() {
        let p = Payload::generate(Elem::PerfStruct, 10, false);
        // Length at 0, first element at 4 (short-aligned) ending at 24, then
        // a 24-byte stride: 4 + 20 + 9 * 24.
        assert_eq!(encode(&p, ByteOrder::Little).len(), 240);
        assert_eq!(element_typecode(Elem::PerfStruct).wire_stride(), Some(24));
        assert_eq!(element_typecode(Elem::Cd).wire_stride(), Some(16));
    }

    use super::FAST_PATH as FAST;

    #[test]
    fn fast_layouts_are_the_typecodes_layouts() {
        // `layout()` derives each from the TypeCode and panics unless the
        // Rust fields' constant layout is the same.
        fn check<T: TcStruct>(elem: Elem) -> StructLayout {
            let l = *T::layout();
            assert_eq!(l, T::LAYOUT, "{elem}");
            assert_eq!(
                Some(l.stride as u64),
                element_typecode(elem).wire_stride(),
                "{elem}"
            );
            assert_eq!(Some(l.stride as u64), elem.fixed_stride(), "{elem}");
            l
        }
        let perf = check::<PerfStruct>(Elem::PerfStruct);
        assert_eq!(perf.offsets[..5], [0, 2, 4, 8, 16]);
        check::<Cd>(Elem::Cd);
        check::<CharStruct>(Elem::CharStruct);
        check::<FloatStruct>(Elem::FloatStruct);
        check::<LongStruct>(Elem::LongStruct);
        check::<DoubleStruct>(Elem::DoubleStruct);
        check::<LongQuad>(Elem::LongQuad);
        check::<MixedQuad>(Elem::MixedQuad);
        check::<FloatPair>(Elem::FloatPair);
        // The bench's unchecked baseline has the same constants.
        use iiop_cdr::FixedLayout as F;
        assert_eq!(
            (
                <PerfStruct as F>::ALIGN,
                <PerfStruct as F>::FIRST_ALIGN,
                <PerfStruct as F>::PHASE,
                <PerfStruct as F>::STRIDE,
                <PerfStruct as F>::SIZE
            ),
            (
                perf.align,
                perf.first_align,
                perf.phase,
                perf.stride,
                perf.size
            )
        );
    }

    /// Issue 18: the fast path took 0xE9 as 'é' under UTF-8 (where a char
    /// is one octet, so ASCII only) and wrote 'é' as its low octet.
    #[test]
    fn a_latin1_char_is_refused_under_utf8_by_both_paths() {
        use iiop_cdr::{CdrError, Options};
        let opts = |char_set| Options {
            char_set,
            ..Options::default()
        };
        let (latin1, utf8) = (opts(CharCodeSet::Latin1), opts(CharCodeSet::Utf8));
        for order in [ByteOrder::Big, ByteOrder::Little] {
            // sequence<CharStruct> {'A', 0xE9}; sequence<CD> {{0xE9, 1.0}}.
            let mut chars = BytesMut::new();
            let mut w = Writer::new(&mut chars, order);
            w.write_u32(2);
            w.write_u8(b'A');
            w.write_u8(0xE9);
            let mut cd = BytesMut::new();
            let mut w = Writer::new(&mut cd, order);
            w.write_u32(1);
            w.write_u8(0xE9);
            w.write_f64(1.0);
            for (elem, bytes, at) in [(Elem::CharStruct, &chars, 5), (Elem::Cd, &cd, 4)] {
                let bad = CdrError::InvalidCodeSet {
                    offset: at,
                    codeset: "UTF-8",
                };
                let reader = |o| Reader::new(bytes, order).options(o);
                assert_eq!(
                    Payload::decode(elem, &mut reader(utf8)),
                    Err(bad.clone()),
                    "{elem} fast"
                );
                let serde: Result<Payload> = match elem {
                    Elem::Cd => iiop_cdr::from_reader(&mut reader(utf8)).map(Payload::Cd),
                    _ => iiop_cdr::from_reader(&mut reader(utf8)).map(Payload::CharStruct),
                };
                assert_eq!(serde, Err(bad), "{elem} serde");
                let fast = Payload::decode(elem, &mut reader(latin1)).unwrap();
                let want = match elem {
                    Elem::Cd => Payload::Cd(vec![Cd { c: 'é', d: 1.0 }]),
                    _ => Payload::CharStruct(vec![CharStruct { c: 'A' }, CharStruct { c: 'é' }]),
                };
                assert_eq!(fast, want, "{elem} fast");
                let serde: Result<Payload> = match elem {
                    Elem::Cd => iiop_cdr::from_reader(&mut reader(latin1)).map(Payload::Cd),
                    _ => iiop_cdr::from_reader(&mut reader(latin1)).map(Payload::CharStruct),
                };
                assert_eq!(serde.unwrap(), want, "{elem} serde");
                // Encoding 'é' is refused under UTF-8 (not cut to 0xE9), and
                // gives the original bytes under ISO-8859-1, on both paths.
                let refused = CdrError::Unrepresentable {
                    what: "char 'é'".into(),
                    codeset: "UTF-8",
                };
                let enc = |o, serde: bool| {
                    let mut buf = BytesMut::new();
                    let mut w = Writer::new(&mut buf, order).options(o);
                    let r = match (&want, serde) {
                        (p, false) => p.encode(&mut w),
                        (Payload::Cd(v), true) => iiop_cdr::to_writer(&mut w, v),
                        (Payload::CharStruct(v), true) => iiop_cdr::to_writer(&mut w, v),
                        _ => unreachable!(),
                    };
                    r.map(|()| buf)
                };
                for serde in [false, true] {
                    assert_eq!(enc(utf8, serde), Err(refused.clone()), "{elem} {serde}");
                    assert_eq!(&enc(latin1, serde).unwrap(), bytes, "{elem} {serde}");
                }
            }
        }
        // A char beyond ISO-8859-1 is refused there too, not truncated.
        let p = Payload::PerfStruct(vec![PerfStruct {
            s: 1,
            c: 'Ā',
            l: 2,
            o: 3,
            d: 4.0,
        }]);
        let mut buf = BytesMut::new();
        assert_eq!(
            p.encode(&mut Writer::new(&mut buf, ByteOrder::Big).options(latin1)),
            Err(CdrError::Unrepresentable {
                what: "char 'Ā'".into(),
                codeset: "ISO-8859-1",
            })
        );
    }
}
