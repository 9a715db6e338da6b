//! Hand-computed CDR byte vectors (CORBA 3.x Part 2 §9.3 "CDR Transfer
//! Syntax") for the serde mapping, and the exact errors for bad input.

use bytes::{Bytes, BytesMut};
use iiop_cdr::{
    from_bytes, from_reader, to_bytes, to_writer, ByteOrder, CdrError, CharSeq, Limits, LongDouble,
    Octets, Options, Reader, Seq, WChar, WString, WcharRules, Writer,
};
use serde::{Deserialize, Serialize};

use ByteOrder::{Big, Little};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct CD {
    c: char,
    d: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct MyStruct {
    b: bool,
    s: String,
    l: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PerfStruct {
    s: i16,
    c: char,
    l: i32,
    o: u8,
    d: f64,
}

/// bench.idl `union Variant switch (long) { case 1: long l; case 2: double
/// d; case 3: string s; default: octet o; }`.
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

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
enum Color {
    Red,
    Green,
    Blue,
}

fn rt<T>(v: &T, order: ByteOrder, expect: &[u8])
where
    T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug,
{
    let b = to_bytes(v, order).unwrap();
    assert_eq!(&b[..], expect, "encoding of {v:?} in {order:?}");
    let back: T = from_bytes(&b, order).unwrap();
    assert_eq!(&back, v);
}

/// Encode after `prefix` bytes already in the buffer, origin at index 0.
fn after_prefix<T: Serialize>(prefix: usize, v: &T, order: ByteOrder) -> BytesMut {
    let mut buf = BytesMut::from(&vec![0xEEu8; prefix][..]);
    to_writer(&mut Writer::with_origin(&mut buf, order, 0), v).unwrap();
    buf
}

#[test]
fn char_then_double_pads_seven() {
    rt(
        &('a', 1.0f64),
        Big,
        &[0x61, 0, 0, 0, 0, 0, 0, 0, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0],
    );
    rt(
        &CD { c: 'a', d: 1.0 },
        Little,
        &[0x61, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f],
    );
}

#[test]
fn cd_sequence_after_a_giop_header() {
    // Length at 12 (4- but not 8-aligned); first c at 16, pad to 24, d at
    // 24; second c at 32, pad to 40, d at 40..48.
    let v = vec![CD { c: 'x', d: 1.0 }, CD { c: 'y', d: 2.0 }];
    let buf = after_prefix(12, &v, Big);
    let mut expect = vec![0xEE; 12];
    expect.extend_from_slice(&[0, 0, 0, 2, b'x', 0, 0, 0, 0, 0, 0, 0]);
    expect.extend_from_slice(&[0x3f, 0xf0, 0, 0, 0, 0, 0, 0]);
    expect.extend_from_slice(&[b'y', 0, 0, 0, 0, 0, 0, 0]);
    expect.extend_from_slice(&[0x40, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(&buf[..], &expect[..]);
    let mut r = Reader::new(&buf[12..], Big).with_base(12);
    assert_eq!(from_reader::<Vec<CD>>(&mut r).unwrap(), v);
    r.expect_end().unwrap();

    // The same sequence at offset 0: length 0..4, c at 4, pad to 8, d at
    // 8..16, c at 16, pad, d at 24..32.
    rt(
        &v,
        Little,
        &[
            2, 0, 0, 0, b'x', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, b'y', 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0x40,
        ],
    );
}

#[test]
fn empty_sequences_followed_by_eight_byte_types() {
    // Empty sequence: only the length, no alignment for absent elements;
    // the double after it pads from 4 to 8.
    let expect = [0, 0, 0, 0, 0, 0, 0, 0, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0];
    rt(&(Vec::<f64>::new(), 1.0f64), Big, &expect);
    rt(&(Seq::<f64>(vec![]), 1.0f64), Big, &expect);
    rt(&(Vec::<CD>::new(), 1.0f64), Big, &expect);
    // After an octet: length at 4..8, double at 8 with no pad at all.
    let expect = [9, 0, 0, 0, 0, 0, 0, 0, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0];
    rt(&(9u8, Vec::<f64>::new(), 1.0f64), Big, &expect);
    rt(&(9u8, Seq::<i64>(vec![]), 1.0f64), Big, &expect);
    // A non-empty double sequence after an octet: length at 4..8, the
    // first element at 8 needs no pad.
    rt(
        &(9u8, Seq(vec![2.0f64])),
        Little,
        &[9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40],
    );
    // After a u32: length at 4..8, elements at 8 without pad.
    rt(
        &(1u32, Seq(vec![5i64])),
        Big,
        &[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5],
    );
    // At offset 0: length 0..4, elements need a pad from 4 to 8.
    rt(
        &Seq(vec![5i64]),
        Big,
        &[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5],
    );
}

#[test]
fn struct_after_a_giop_header() {
    // MyStruct at 12: b@12, pad 13..16, string length @16, "hi\0" @20..23,
    // pad 23, l @24..28.
    let v = MyStruct {
        b: true,
        s: "hi".into(),
        l: -2,
    };
    let buf = after_prefix(12, &v, Little);
    let mut expect = vec![0xEE; 12];
    expect.extend_from_slice(&[
        1, 0, 0, 0, 3, 0, 0, 0, b'h', b'i', 0, 0, 0xfe, 0xff, 0xff, 0xff,
    ]);
    assert_eq!(&buf[..], &expect[..]);
    let mut r = Reader::new(&buf[12..], Little).with_base(12);
    assert_eq!(from_reader::<MyStruct>(&mut r).unwrap(), v);
    r.expect_end().unwrap();
    // PerfStruct after the header: s@12, c@14, pad, l@16, o@20, pad, d@24.
    let p = PerfStruct {
        s: 1,
        c: 'c',
        l: 2,
        o: 3,
        d: 4.0,
    };
    let buf = after_prefix(12, &p, Big);
    assert_eq!(
        &buf[12..],
        &[0, 1, b'c', 0, 0, 0, 0, 2, 3, 0, 0, 0, 0x40, 0x10, 0, 0, 0, 0, 0, 0]
    );
}

#[test]
fn perf_struct_is_24_bytes_in_a_sequence() {
    let p = PerfStruct {
        s: -1,
        c: 'Z',
        l: 0x01020304,
        o: 0xAB,
        d: 0.5,
    };
    let b = to_bytes(&vec![p.clone(), p.clone()], Big).unwrap();
    // The first element starts at 4, so it "borrows" 4 bytes of its
    // 24-byte stride from the length: 4 + 2 * 24 - 4 bytes in all.
    assert_eq!(b.len(), 48);
    // length 0..4, element 0 needs 8-alignment only for d: s@4 c@6 pad7
    // l@8 o@12 pad d@16; element 1: s@24 c@26 pad l@28 o@32 pad d@40.
    assert_eq!(
        &b[..24],
        &[
            0, 0, 0, 2, 0xff, 0xff, b'Z', 0, 1, 2, 3, 4, 0xAB, 0, 0, 0, 0x3f, 0xe0, 0, 0, 0, 0, 0,
            0
        ]
    );
    assert_eq!(
        &b[24..48],
        &[
            0xff, 0xff, b'Z', 0, 1, 2, 3, 4, 0xAB, 0, 0, 0, 0, 0, 0, 0, 0x3f, 0xe0, 0, 0, 0, 0, 0,
            0
        ]
    );
}

fn opts(rules: WcharRules) -> Options {
    Options {
        wchar_rules: rules,
        ..Options::default()
    }
}

fn enc_with<T: Serialize>(v: &T, order: ByteOrder, o: Options) -> Vec<u8> {
    let mut buf = BytesMut::new();
    to_writer(&mut Writer::new(&mut buf, order).options(o), v).unwrap();
    buf.to_vec()
}

fn dec_with<T: for<'de> Deserialize<'de>>(b: &[u8], order: ByteOrder, o: Options) -> T {
    let mut r = Reader::new(b, order).options(o);
    let v = from_reader(&mut r).unwrap();
    r.expect_end().unwrap();
    v
}

#[test]
fn wstring_and_wchar_in_giop_12_and_11() {
    let w = WString("hé".into());
    // 1.2: u32 octet count, UTF-16 big-endian without BOM whatever the
    // stream order, no NUL.
    let o12 = opts(WcharRules::Giop12);
    assert_eq!(enc_with(&w, Big, o12), [0, 0, 0, 4, 0, 0x68, 0, 0xe9]);
    assert_eq!(enc_with(&w, Little, o12), [4, 0, 0, 0, 0, 0x68, 0, 0xe9]);
    // 1.1: u32 count of code units including the NUL, units in stream order.
    let o11 = opts(WcharRules::Giop11);
    assert_eq!(
        enc_with(&w, Little, o11),
        [3, 0, 0, 0, 0x68, 0, 0xe9, 0, 0, 0]
    );
    assert_eq!(enc_with(&w, Big, o11), [0, 0, 0, 3, 0, 0x68, 0, 0xe9, 0, 0]);
    for (o, order) in [(o12, Big), (o12, Little), (o11, Big), (o11, Little)] {
        let b = enc_with(&w, order, o);
        assert_eq!(dec_with::<WString>(&b, order, o), w);
    }
    // wchar: 1.2 octet length 2 then big-endian unit; 1.1 two octets in
    // stream order, aligned to 2.
    assert_eq!(enc_with(&(1u8, WChar('é')), Little, o12), [1, 2, 0, 0xe9]);
    assert_eq!(enc_with(&(1u8, WChar('é')), Little, o11), [1, 0, 0xe9, 0]);
    assert_eq!(
        dec_with::<(u8, WChar)>(&[1, 0, 0xe9, 0], Little, o11),
        (1, WChar('é'))
    );
    // GIOP 1.0 has no wchar at all.
    let mut buf = BytesMut::new();
    let err = to_writer(
        &mut Writer::new(&mut buf, Big).options(opts(WcharRules::Giop10)),
        &WChar('x'),
    )
    .unwrap_err();
    assert_eq!(err, CdrError::WcharNotNegotiated { offset: 0 });
}

/// Every wchar body the decoder's one-unit fast path must leave to the
/// general rules: a lone surrogate and a bare BOM are refused; a BOM in
/// front of a unit sets that unit's order; GIOP 1.1 takes U+FEFF as a
/// character.
#[test]
fn wchar_decoding_edges_in_giop_12_and_11() {
    let o12 = opts(WcharRules::Giop12);
    let o11 = opts(WcharRules::Giop11);
    let wchar = |b: &[u8], order: ByteOrder, o: Options| {
        let mut r = Reader::new(b, order).options(o);
        from_reader::<WChar>(&mut r).map(|w| w.0)
    };
    for order in [Big, Little] {
        assert_eq!(wchar(&[2, 0x4e, 0x2d], order, o12), Ok('中'));
        assert_eq!(wchar(&[4, 0xff, 0xfe, 0xe9, 0], order, o12), Ok('é'));
        assert_eq!(
            wchar(&[4, 0xfe, 0xff, 0xfe, 0xff], order, o12),
            Ok('\u{feff}')
        );
        assert_eq!(
            wchar(&[4, 0xd8, 0x3d, 0xde, 0x00], order, o12),
            Ok('\u{1f600}')
        );
        for bad in [
            [2, 0xd8, 0x00],
            [2, 0xdf, 0xff],
            [2, 0xfe, 0xff],
            [2, 0xff, 0xfe],
        ] {
            assert!(
                matches!(
                    wchar(&bad, order, o12),
                    Err(CdrError::InvalidCodeSet { offset: 0, .. })
                ),
                "{bad:x?}"
            );
        }
    }
    // wstring (1.2): pairs decode, lone or mismatched surrogates do not.
    let wstring = |b: &[u8]| {
        let mut r = Reader::new(b, Big).options(o12);
        from_reader::<WString>(&mut r).map(|w| w.0)
    };
    assert_eq!(
        wstring(&[0, 0, 0, 8, 0, 0x61, 0xd8, 0x3d, 0xde, 0x00, 0x4e, 0x2d]),
        Ok("a\u{1f600}中".to_string())
    );
    for bad in [
        [0, 0, 0, 4, 0xd8, 0x3d, 0, 0x61],
        [0, 0, 0, 4, 0, 0x61, 0xde, 0x00],
        [0, 0, 0, 4, 0, 0x61, 0xd8, 0x3d],
    ] {
        assert!(
            matches!(
                wstring(&bad),
                Err(CdrError::InvalidCodeSet { offset: 0, .. })
            ),
            "{bad:x?}"
        );
    }
    assert_eq!(wchar(&[0xfe, 0xff], Big, o11), Ok('\u{feff}'));
    assert_eq!(wchar(&[0x2d, 0x4e], Little, o11), Ok('中'));
    assert!(matches!(
        wchar(&[0x00, 0xd8], Little, o11),
        Err(CdrError::InvalidCodeSet { offset: 0, .. })
    ));
}

#[test]
fn strings_chars_and_char_sequences() {
    rt(&"é".to_string(), Big, &[0, 0, 0, 2, 0xe9, 0]);
    rt(&'é', Big, &[0xe9]);
    let cs = CharSeq::from_latin1("aé").unwrap();
    rt(&cs, Little, &[2, 0, 0, 0, b'a', 0xe9]);
    assert_eq!(cs.to_latin1_string(), "aé");
    // sequence<char> has the same bytes as Vec<char>.
    assert_eq!(
        &to_bytes(&vec!['a', 'é'], Little).unwrap()[..],
        &[2, 0, 0, 0, b'a', 0xe9]
    );
    // A borrowed &str is zero-copy for ASCII.
    let b = to_bytes(&"op", Big).unwrap();
    let s: &str = from_bytes(&b, Big).unwrap();
    assert_eq!(s, "op");
    // Octets: zero-copy from a Bytes-backed reader.
    let data = Bytes::from_static(&[0, 0, 0, 3, 7, 8, 9]);
    let mut r = Reader::from_bytes(&data, Big);
    let o: Octets = from_reader(&mut r).unwrap();
    assert_eq!(&o[..], &[7, 8, 9]);
    assert_eq!(o.0.as_ptr(), data[4..].as_ptr());
    rt(&Octets::from(vec![1, 2]), Big, &[0, 0, 0, 2, 1, 2]);
    // long double: 16 raw octets aligned to 8.
    let ld = LongDouble([7; 16]);
    let mut expect = vec![1, 0, 0, 0, 0, 0, 0, 0];
    expect.extend_from_slice(&[7; 16]);
    rt(&(1u8, ld), Big, &expect);
}

#[test]
fn enums_and_unions() {
    rt(&Color::Blue, Big, &[0, 0, 0, 2]);
    rt(&vec![Color::Green], Little, &[1, 0, 0, 0, 1, 0, 0, 0]);
    rt(&Variant::L(5), Big, &[0, 0, 0, 1, 0, 0, 0, 5]);
    rt(
        &Variant::D(1.0),
        Big,
        &[0, 0, 0, 2, 0, 0, 0, 0, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0],
    );
    rt(
        &Variant::S("a".into()),
        Big,
        &[0, 0, 0, 3, 0, 0, 0, 2, b'a', 0],
    );
    // The default branch keeps whatever discriminator selected it.
    rt(&Variant::O(42, 9), Little, &[42, 0, 0, 0, 9]);
    rt(&Variant::O(-1, 9), Big, &[0xff, 0xff, 0xff, 0xff, 9]);

    // A union with a short discriminator and no default.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "U:short")]
    enum U {
        #[serde(rename = "-3")]
        A(u8),
        #[serde(rename = "7")]
        B { x: f64 },
    }
    rt(&U::A(1), Big, &[0xff, 0xfd, 1]);
    rt(
        &U::B { x: 1.0 },
        Big,
        &[0, 7, 0, 0, 0, 0, 0, 0, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0],
    );
    assert_eq!(
        from_bytes::<U>(&[0, 8, 1], Big),
        Err(CdrError::InvalidDiscriminator {
            offset: 0,
            value: 8
        })
    );
    assert_eq!(
        from_bytes::<Color>(&[0, 0, 0, 3], Big),
        Err(CdrError::InvalidEnum {
            offset: 0,
            value: 3,
            count: 3
        })
    );
    // A union switching on boolean.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "B:boolean")]
    enum B {
        #[serde(rename = "0")]
        No,
        #[serde(rename = "1")]
        Yes(i16),
    }
    rt(&B::Yes(3), Big, &[1, 0, 0, 3]);
    rt(&B::No, Big, &[0]);
}

#[test]
fn unit_newtype_and_arrays() {
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Unit;
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Meters(f64);
    rt(&((), Unit, 1u8), Big, &[1]);
    rt(&Meters(1.0), Big, &[0x3f, 0xf0, 0, 0, 0, 0, 0, 0]);
    // Arrays have no length prefix.
    rt(&[1u16, 2, 3], Big, &[0, 1, 0, 2, 0, 3]);
    rt(&(1u8, [1u16, 2]), Little, &[1, 0, 1, 0, 2, 0]);
    // Maps are sequences of {key, value}.
    let mut m = std::collections::BTreeMap::new();
    m.insert(1u8, 2u16);
    rt(&m, Big, &[0, 0, 0, 1, 1, 0, 0, 2]);
}

#[test]
fn seq_wrapper_gives_the_same_bytes_as_vec() {
    for order in [Big, Little] {
        let v: Vec<i32> = vec![1, -2, 3];
        assert_eq!(
            to_bytes(&Seq(v.clone()), order).unwrap(),
            to_bytes(&v, order).unwrap()
        );
        let b = to_bytes(&(1u8, Seq(vec![1.5f32, -2.0])), order).unwrap();
        assert_eq!(b, to_bytes(&(1u8, vec![1.5f32, -2.0]), order).unwrap());
        let back: (u8, Seq<f32>) = from_bytes(&b, order).unwrap();
        assert_eq!(back.1 .0, vec![1.5f32, -2.0]);
    }
}

#[test]
fn wrappers_work_with_serde_json() {
    let v = (
        Seq(vec![1i16, -2]),
        CharSeq::from_latin1("hé").unwrap(),
        Octets::from(vec![1, 2]),
        WChar('ß'),
        WString("ok".into()),
        LongDouble([1; 16]),
    );
    let j = serde_json::to_string(&v).unwrap();
    assert_eq!(
        j,
        r#"[[1,-2],["h","é"],[1,2],"ß","ok",[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]]"#
    );
    let back: (Seq<i16>, CharSeq, Octets, WChar, WString, LongDouble) =
        serde_json::from_str(&j).unwrap();
    assert_eq!(back, v);
    assert_eq!(
        serde_json::to_string(&Variant::O(4, 2)).unwrap(),
        r#"{"default":[4,2]}"#
    );
}

#[test]
fn truncated_input_reports_where() {
    assert_eq!(
        from_bytes::<(u32, f64)>(&[0, 0, 0, 1, 0, 0, 0, 0, 0x3f], Big),
        Err(CdrError::Truncated {
            offset: 8,
            needed: 8,
            available: 1
        })
    );
    // Padding itself missing.
    assert_eq!(
        from_bytes::<(u8, u32)>(&[1, 0], Big),
        Err(CdrError::Truncated {
            offset: 1,
            needed: 3,
            available: 1
        })
    );
    // Trailing bytes.
    assert_eq!(
        from_bytes::<u16>(&[0, 1, 2], Big),
        Err(CdrError::TrailingData {
            offset: 2,
            remaining: 1
        })
    );
}

#[test]
fn bad_bool_and_option() {
    assert_eq!(
        from_bytes::<(u8, bool)>(&[1, 2], Big),
        Err(CdrError::InvalidBool {
            offset: 1,
            value: 2
        })
    );
    let err = to_bytes(&Some(1u8), Big).unwrap_err();
    assert!(
        matches!(err, CdrError::TypeMismatch { offset: 0, .. }),
        "{err:?}"
    );
}

#[test]
fn hostile_sequence_lengths_fail_before_allocating() {
    let limit = Limits::default().max_len as u64;
    let data = [0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4];
    let big = CdrError::LimitExceeded {
        offset: 0,
        len: 0xffff_ffff,
        limit,
    };
    assert_eq!(from_bytes::<Vec<PerfStruct>>(&data, Big), Err(big.clone()));
    assert_eq!(from_bytes::<Seq<f64>>(&data, Big), Err(big.clone()));
    assert_eq!(from_bytes::<Octets>(&data, Big), Err(big.clone()));
    assert_eq!(from_bytes::<String>(&data, Big), Err(big));
    // Within the limit but beyond the bytes left: refused on the count.
    let data = [0, 0x10, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
    assert_eq!(
        from_bytes::<Vec<u8>>(&data, Big),
        Err(CdrError::Truncated {
            offset: 4,
            needed: 0x0010_0000,
            available: 8
        })
    );
    assert_eq!(
        from_bytes::<Seq<f64>>(&data, Big),
        Err(CdrError::Truncated {
            offset: 4,
            needed: 0x0080_0000,
            available: 8
        })
    );
    // A caller-chosen limit.
    let o = Options {
        limits: Limits {
            max_len: 4,
            max_depth: 8,
        },
        ..Options::default()
    };
    let mut r = Reader::new(&[0, 0, 0, 5, 1, 2, 3, 4, 5], Big).options(o);
    assert_eq!(
        from_reader::<Vec<u8>>(&mut r),
        Err(CdrError::LimitExceeded {
            offset: 0,
            len: 5,
            limit: 4
        })
    );
}

#[test]
fn recursion_is_bounded_by_max_depth() {
    #[derive(Debug, Serialize, Deserialize)]
    struct Tree(Vec<Tree>);
    let data: Vec<u8> = [0u8, 0, 0, 1].repeat(100);
    assert_eq!(
        from_bytes::<Tree>(&data, Big).unwrap_err(),
        CdrError::DepthExceeded {
            offset: 256,
            limit: 64
        }
    );
}

#[test]
fn deserialize_any_is_refused() {
    let err = from_bytes::<serde_json::Value>(&[0], Big).unwrap_err();
    assert!(
        matches!(err, CdrError::TypeMismatch { offset: 0, .. }),
        "{err:?}"
    );
}

#[test]
fn sequences_of_unknown_length_get_their_count_patched() {
    /// Serializes its items through `serialize_seq(None)`.
    struct Unsized(Vec<u16>);
    impl Serialize for Unsized {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeSeq;
            let mut seq = s.serialize_seq(None)?;
            for x in &self.0 {
                seq.serialize_element(x)?;
            }
            seq.end()
        }
    }
    let b = to_bytes(&(1u8, Unsized(vec![7, 8])), Big).unwrap();
    assert_eq!(&b[..], &[1, 0, 0, 0, 0, 0, 0, 2, 0, 7, 0, 8]);
    let b = to_bytes(&Unsized(vec![]), Little).unwrap();
    assert_eq!(&b[..], &[0, 0, 0, 0]);
}

#[test]
fn code_set_rules_apply_to_char_sequences() {
    let utf8 = Options {
        char_set: iiop_cdr::CharCodeSet::Utf8,
        ..Options::default()
    };
    // A non-ASCII octet is no UTF-8 `char`: refused both ways.
    let mut buf = BytesMut::new();
    let err = to_writer(
        &mut Writer::new(&mut buf, Big).options(utf8),
        &CharSeq(Bytes::from_static(&[b'a', 0xE9])),
    )
    .unwrap_err();
    assert_eq!(
        err,
        CdrError::Unrepresentable {
            what: "sequence<char> with a non-ASCII octet".into(),
            codeset: "UTF-8"
        }
    );
    let data = [0, 0, 0, 2, b'a', 0xE9];
    let mut r = Reader::new(&data, Big).options(utf8);
    assert_eq!(
        from_reader::<CharSeq>(&mut r),
        Err(CdrError::InvalidCodeSet {
            offset: 0,
            codeset: "UTF-8"
        })
    );
    let mut r = Reader::new(&data[4..], Big).with_base(4).options(utf8);
    assert_eq!(
        from_reader::<(char, char)>(&mut r),
        Err(CdrError::InvalidCodeSet {
            offset: 5,
            codeset: "UTF-8"
        })
    );
    // Latin-1 (the default) takes every octet.
    let cs: CharSeq = from_bytes(&data, Big).unwrap();
    assert_eq!(cs.to_latin1_string(), "aé");
    // A UTF-8 string is carried as is.
    let mut buf = BytesMut::new();
    to_writer(&mut Writer::new(&mut buf, Big).options(utf8), "é").unwrap();
    assert_eq!(&buf[..], &[0, 0, 0, 3, 0xC3, 0xA9, 0]);
}

#[test]
fn option_and_bad_discriminators_are_refused_on_both_sides() {
    let err = from_bytes::<Option<u8>>(&[1, 1], Big).unwrap_err();
    assert!(
        matches!(err, CdrError::TypeMismatch { offset: 0, .. }),
        "{err:?}"
    );
    // A label that does not fit the discriminator type.
    #[derive(Debug, Serialize)]
    #[serde(rename = "T:short")]
    enum T {
        #[serde(rename = "70000")]
        Big(u8),
    }
    let err = to_bytes(&T::Big(1), Big).unwrap_err();
    assert_eq!(
        err,
        CdrError::Message(
            "union discriminator 70000 does not fit the Short discriminator type (at offset 0)"
                .into()
        )
    );
    // A union without default whose discriminator names no case.
    #[derive(Debug, Deserialize)]
    enum N {
        #[serde(rename = "1")]
        A(#[allow(dead_code)] u8),
    }
    assert_eq!(
        from_bytes::<N>(&[0, 0, 0, 5, 1], Big).map(|_| ()),
        Err(CdrError::InvalidDiscriminator {
            offset: 0,
            value: 5
        })
    );
    // Case 2 of Variant is a double: 8-aligned after the discriminator.
    assert_eq!(
        from_bytes::<Variant>(&[0, 0, 0, 2, 0, 0, 0, 0], Big).map(|_| ()),
        Err(CdrError::Truncated {
            offset: 8,
            needed: 8,
            available: 0
        })
    );
}

#[test]
fn serde_errors_carry_the_offset() {
    // Errors raised by serde itself (here: a Latin-1 non-ASCII string,
    // converted, cannot be borrowed as &str) get the reader offset.
    #[derive(Debug, Deserialize)]
    struct Borrowed<'a> {
        #[allow(dead_code)]
        s: &'a str,
    }
    let data = [0, 0, 0, 2, 0xE9, 0];
    let err = from_bytes::<Borrowed<'_>>(&data, Big).unwrap_err();
    match err {
        CdrError::Message(m) => assert!(m.ends_with("(at offset 6)"), "{m}"),
        e => panic!("unexpected {e:?}"),
    }
}
