//! Property tests: every supported type round-trips through serde in both
//! byte orders at every alignment origin (0..8 prefix bytes before the
//! value, with the writer origin and reader base set accordingly); the
//! one-copy wrappers give exactly the element-by-element bytes; every
//! strict prefix of an encoding is refused (never a panic, never a value).

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use iiop_cdr::{
    from_reader, to_bytes, to_writer, ByteOrder, CharSeq, LongDouble, Octets, Options, Reader, Seq,
    WChar, WString, WcharRules, Writer,
};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct PerfStruct {
    s: i16,
    c: char,
    l: i32,
    o: u8,
    d: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
enum Color {
    Red,
    Green,
    Blue,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Variant {
    #[serde(rename = "1")]
    L(i32),
    #[serde(rename = "2")]
    D(f64),
    #[serde(rename = "3")]
    S(String),
    #[serde(rename = "default")]
    O(i32, u8),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Shape:short")]
enum Shape {
    #[serde(rename = "-1")]
    Dot,
    #[serde(rename = "7")]
    Line { from: (f32, f32), to: (f32, f32) },
    #[serde(rename = "9")]
    Poly(Vec<(i16, i16)>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Meters(f64);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Unit;

/// One of everything, in an order that makes alignment interesting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct All {
    b: bool,
    o: u8,
    i8_: i8,
    s: i16,
    us: u16,
    c: char,
    l: i32,
    ul: u32,
    ll: i64,
    ull: u64,
    f: f32,
    d: f64,
    text: String,
    arr: [u16; 3],
    unit: (),
    unit_struct: Unit,
    newtype: Meters,
    ints: Vec<i32>,
    nested: Vec<Vec<u8>>,
    shorts: Seq<i16>,
    ulongs: Seq<u32>,
    doubles: Seq<f64>,
    ulonglongs: Seq<u64>,
    floats: Seq<f32>,
    chars: CharSeq,
    octets: Octets,
    wc: WChar,
    ws: WString,
    ld: LongDouble,
    color: Color,
    colors: Vec<Color>,
    variant: Variant,
    variants: Vec<Variant>,
    shape: Shape,
    perf: Vec<PerfStruct>,
    map: BTreeMap<u8, String>,
    tuple: (u8, f64, char),
}

fn latin1() -> impl Strategy<Value = char> {
    (0u32..=0xFF).prop_map(|c| char::from_u32(c).unwrap())
}

fn latin1_string() -> impl Strategy<Value = String> {
    prop::collection::vec(latin1(), 0..12).prop_map(|v| v.into_iter().collect())
}

/// A BMP character (one UTF-16 unit: what a wchar can carry).
fn bmp() -> impl Strategy<Value = char> {
    any::<char>().prop_filter("BMP", |c| (*c as u32) < 0x10000)
}

fn finite_f64() -> impl Strategy<Value = f64> {
    any::<f64>().prop_filter("not NaN", |d| !d.is_nan())
}

fn finite_f32() -> impl Strategy<Value = f32> {
    any::<f32>().prop_filter("not NaN", |d| !d.is_nan())
}

fn perf() -> impl Strategy<Value = PerfStruct> {
    (
        any::<i16>(),
        latin1(),
        any::<i32>(),
        any::<u8>(),
        finite_f64(),
    )
        .prop_map(|(s, c, l, o, d)| PerfStruct { s, c, l, o, d })
}

fn color() -> impl Strategy<Value = Color> {
    prop_oneof![Just(Color::Red), Just(Color::Green), Just(Color::Blue)]
}

fn variant() -> impl Strategy<Value = Variant> {
    prop_oneof![
        any::<i32>().prop_map(Variant::L),
        finite_f64().prop_map(Variant::D),
        latin1_string().prop_map(Variant::S),
        // The default branch: any discriminator not naming a case.
        (
            any::<i32>().prop_filter("not 1..=3", |d| !(1..=3).contains(d)),
            any::<u8>()
        )
            .prop_map(|(d, o)| Variant::O(d, o)),
    ]
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Dot),
        (finite_f32(), finite_f32(), finite_f32(), finite_f32()).prop_map(|(a, b, c, d)| {
            Shape::Line {
                from: (a, b),
                to: (c, d),
            }
        }),
        prop::collection::vec((any::<i16>(), any::<i16>()), 0..4).prop_map(Shape::Poly),
    ]
}

fn all() -> impl Strategy<Value = All> {
    let scalars = (
        any::<bool>(),
        any::<u8>(),
        any::<i8>(),
        any::<i16>(),
        any::<u16>(),
        latin1(),
        any::<i32>(),
        any::<u32>(),
        any::<i64>(),
        any::<u64>(),
        finite_f32(),
        finite_f64(),
    );
    let seqs = (
        latin1_string(),
        any::<[u16; 3]>(),
        finite_f64(),
        prop::collection::vec(any::<i32>(), 0..6),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..4), 0..4),
        prop::collection::vec(any::<i16>(), 0..7),
        prop::collection::vec(any::<u32>(), 0..5),
        prop::collection::vec(finite_f64(), 0..4),
        prop::collection::vec(any::<u64>(), 0..3),
        prop::collection::vec(finite_f32(), 0..5),
        prop::collection::vec(any::<u8>(), 0..9),
        prop::collection::vec(any::<u8>(), 0..9),
    );
    let rest = (
        bmp(),
        any::<String>(),
        any::<[u8; 16]>(),
        color(),
        prop::collection::vec(color(), 0..4),
        variant(),
        prop::collection::vec(variant(), 0..4),
        shape(),
        prop::collection::vec(perf(), 0..4),
        prop::collection::btree_map(any::<u8>(), latin1_string(), 0..3),
        (any::<u8>(), finite_f64(), latin1()),
    );
    (scalars, seqs, rest).prop_map(|(a, b, c)| All {
        b: a.0,
        o: a.1,
        i8_: a.2,
        s: a.3,
        us: a.4,
        c: a.5,
        l: a.6,
        ul: a.7,
        ll: a.8,
        ull: a.9,
        f: a.10,
        d: a.11,
        text: b.0,
        arr: b.1,
        unit: (),
        unit_struct: Unit,
        newtype: Meters(b.2),
        ints: b.3,
        nested: b.4,
        shorts: Seq(b.5),
        ulongs: Seq(b.6),
        doubles: Seq(b.7),
        ulonglongs: Seq(b.8),
        floats: Seq(b.9),
        chars: CharSeq(Bytes::from(b.10)),
        octets: Octets(Bytes::from(b.11)),
        wc: WChar(c.0),
        ws: WString(c.1),
        ld: LongDouble(c.2),
        color: c.3,
        colors: c.4,
        variant: c.5,
        variants: c.6,
        shape: c.7,
        perf: c.8,
        map: c.9,
        tuple: c.10,
    })
}

fn order() -> impl Strategy<Value = ByteOrder> {
    prop_oneof![Just(ByteOrder::Big), Just(ByteOrder::Little)]
}

/// Encode after `prefix` junk bytes (origin at the buffer start), decode
/// from the value's first byte with the reader base set to `prefix`.
fn round_trip<T>(v: &T, order: ByteOrder, prefix: usize, opts: Options) -> BytesMut
where
    T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug,
{
    let mut buf = BytesMut::from(&vec![0xA5u8; prefix][..]);
    to_writer(
        &mut Writer::with_origin(&mut buf, order, 0).options(opts),
        v,
    )
    .unwrap();
    let mut r = Reader::new(&buf[prefix..], order)
        .with_base(prefix)
        .options(opts);
    let back: T = from_reader(&mut r).unwrap();
    assert_eq!(&back, v);
    r.expect_end().unwrap();
    buf
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn everything_round_trips(v in all(), order in order(), prefix in 0usize..8) {
        let buf = round_trip(&v, order, prefix, Options::default());
        // Every strict prefix of the encoding is refused.
        let body = &buf[prefix..];
        for cut in [0, body.len() / 3, body.len() / 2, body.len().saturating_sub(1)] {
            if cut < body.len() {
                let mut r = Reader::new(&body[..cut], order).with_base(prefix);
                prop_assert!(from_reader::<All>(&mut r).is_err(), "prefix {cut} decoded");
            }
        }
    }

    #[test]
    fn giop11_wide_chars_round_trip(
        c in bmp(),
        s in prop::collection::vec(bmp(), 0..8),
        order in order(),
        prefix in 0usize..8,
    ) {
        let opts = Options { wchar_rules: WcharRules::Giop11, ..Options::default() };
        let v = (1u8, WChar(c), WString(s.into_iter().collect()), 2u8);
        round_trip(&v, order, prefix, opts);
    }

    #[test]
    fn wrappers_give_the_element_by_element_bytes(
        shorts in prop::collection::vec(any::<i16>(), 0..9),
        longs in prop::collection::vec(any::<i64>(), 0..5),
        floats in prop::collection::vec(finite_f32(), 0..5),
        chars in prop::collection::vec(latin1(), 0..9),
        octets in prop::collection::vec(any::<u8>(), 0..9),
        lead in any::<u8>(),
        order in order(),
    ) {
        let fast = (lead, Seq(shorts.clone()), lead, Seq(longs.clone()), Seq(floats.clone()),
            CharSeq::from_latin1(&chars.iter().collect::<String>()).unwrap(),
            Octets::from(octets.clone()));
        let slow = (lead, shorts, lead, longs, floats, chars, octets);
        prop_assert_eq!(to_bytes(&fast, order).unwrap(), to_bytes(&slow, order).unwrap());
    }
}
