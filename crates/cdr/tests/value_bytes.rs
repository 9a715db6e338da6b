//! Dynamic values checked against hand-computed bytes, and hostile value
//! encodings refused before anything large is allocated.

use bytes::{Bytes, BytesMut};
use iiop_cdr::{Any, ByteOrder, CdrError, Ior, Reader, TaggedProfile, TypeCode, Value, Writer};

fn enc(tc: &TypeCode, v: &Value, order: ByteOrder) -> Vec<u8> {
    let mut buf = BytesMut::new();
    let mut w = Writer::new(&mut buf, order);
    v.encode(tc, &mut w).unwrap();
    buf.to_vec()
}

fn dec(tc: &TypeCode, bytes: &[u8], order: ByteOrder) -> Result<Value, CdrError> {
    let mut r = Reader::new(bytes, order);
    let v = Value::decode(tc, &mut r)?;
    r.expect_end()?;
    Ok(v)
}

fn color_tc() -> TypeCode {
    TypeCode::enum_tc("IDL:Color:1.0", "Color", &["RED", "GREEN", "BLUE"])
}

fn u_tc() -> TypeCode {
    TypeCode::union_tc(
        "IDL:U:1.0",
        "U",
        color_tc(),
        2,
        vec![
            (0, "l", TypeCode::long()),
            (1, "s", TypeCode::string(0)),
            (0, "d", TypeCode::double()),
        ],
    )
    .unwrap()
}

#[test]
fn any_holding_a_long() {
    let v = Value::Any(Box::new(Any {
        tc: TypeCode::long(),
        value: Value::Long(42),
    }));
    let b = enc(&TypeCode::any(), &v, ByteOrder::Big);
    assert_eq!(b, [0, 0, 0, 3, 0, 0, 0, 42]);
    assert_eq!(dec(&TypeCode::any(), &b, ByteOrder::Big).unwrap(), v);
    let b = enc(&TypeCode::any(), &v, ByteOrder::Little);
    assert_eq!(b, [3, 0, 0, 0, 42, 0, 0, 0]);
}

#[test]
fn union_with_enum_discriminator_selects_default() {
    // BLUE (2) is no case label: the default member, a double.
    let v = Value::Union {
        disc: 2,
        value: Box::new(Value::Double(0.25)),
    };
    let b = enc(&u_tc(), &v, ByteOrder::Big);
    assert_eq!(b, [0, 0, 0, 2, 0, 0, 0, 0, 0x3f, 0xd0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(dec(&u_tc(), &b, ByteOrder::Big).unwrap(), v);
    // GREEN (1) → the string member.
    let b = [0, 0, 0, 1, 0, 0, 0, 3, b'h', b'i', 0];
    assert_eq!(
        dec(&u_tc(), &b, ByteOrder::Big).unwrap(),
        Value::Union {
            disc: 1,
            value: Box::new(Value::String("hi".into()))
        }
    );
    // 3 is not a Color at all.
    assert_eq!(
        dec(&u_tc(), &[0, 0, 0, 3, 0, 0, 0, 0], ByteOrder::Big),
        Err(CdrError::InvalidEnum {
            offset: 0,
            value: 3,
            count: 3
        })
    );
}

#[test]
fn union_without_default_refuses_unselected_discriminator() {
    let tc = TypeCode::union_tc(
        "IDL:V:1.0",
        "V",
        TypeCode::long(),
        -1,
        vec![(1, "l", TypeCode::long()), (2, "d", TypeCode::double())],
    )
    .unwrap();
    assert_eq!(
        dec(&tc, &[0, 0, 0, 3, 0, 0, 0, 0], ByteOrder::Big),
        Err(CdrError::InvalidDiscriminator {
            offset: 0,
            value: 3
        })
    );
    let mut buf = BytesMut::new();
    let mut w = Writer::new(&mut buf, ByteOrder::Big);
    let v = Value::Union {
        disc: 7,
        value: Box::new(Value::Long(1)),
    };
    assert_eq!(
        v.encode(&tc, &mut w),
        Err(CdrError::InvalidDiscriminator {
            offset: 0,
            value: 7
        })
    );
    // Boolean discriminator: label values 0/1 only.
    let tb = TypeCode::union_tc(
        "IDL:B:1.0",
        "B",
        TypeCode::boolean(),
        -1,
        vec![(1, "yes", TypeCode::octet())],
    )
    .unwrap();
    assert_eq!(
        dec(&tb, &[1, 9], ByteOrder::Big).unwrap(),
        Value::Union {
            disc: 1,
            value: Box::new(Value::Octet(9))
        }
    );
    assert_eq!(
        dec(&tb, &[2, 9], ByteOrder::Big),
        Err(CdrError::InvalidBool {
            offset: 0,
            value: 2
        })
    );
}

#[test]
fn fixed_is_packed_bcd() {
    let tc = TypeCode::fixed(5, 2).unwrap();
    let v = Value::Fixed("123.45".into());
    assert_eq!(enc(&tc, &v, ByteOrder::Big), [0x12, 0x34, 0x5c]);
    assert_eq!(dec(&tc, &[0x12, 0x34, 0x5c], ByteOrder::Little).unwrap(), v);
    // Even digit count: a leading pad nibble; negative sign 0xD.
    let tc4 = TypeCode::fixed(4, 1).unwrap();
    assert_eq!(
        enc(&tc4, &Value::Fixed("-1.5".into()), ByteOrder::Big),
        [0x00, 0x01, 0x5d]
    );
    assert_eq!(
        dec(&tc4, &[0x00, 0x01, 0x5d], ByteOrder::Big).unwrap(),
        Value::Fixed("-1.5".into())
    );
    // Fewer fraction digits are padded; canonical form on the way back.
    assert_eq!(
        enc(&tc, &Value::Fixed("7".into()), ByteOrder::Big),
        [0x00, 0x70, 0x0c]
    );
    assert_eq!(
        dec(&tc, &[0x00, 0x70, 0x0c], ByteOrder::Big).unwrap(),
        Value::Fixed("7.00".into())
    );
    assert_eq!(
        dec(&tc, &[0x00, 0x00, 0x5c], ByteOrder::Big).unwrap(),
        Value::Fixed("0.05".into())
    );
    // Too many digits either side, or not a number.
    for s in ["1234.5", "1.234", "", "1e5", "--1"] {
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, ByteOrder::Big);
        assert!(
            matches!(
                Value::Fixed(s.into()).encode(&tc, &mut w),
                Err(CdrError::Unrepresentable { .. })
            ),
            "{s:?}"
        );
    }
    // Bad nibbles.
    assert!(matches!(
        dec(&tc, &[0x12, 0x34, 0x57], ByteOrder::Big),
        Err(CdrError::TypeMismatch { offset: 2, .. })
    ));
    assert!(matches!(
        dec(&tc, &[0x1a, 0x34, 0x5c], ByteOrder::Big),
        Err(CdrError::TypeMismatch { offset: 0, .. })
    ));
}

#[test]
fn packed_sequences_and_arrays() {
    let ts = TypeCode::sequence(TypeCode::short(), 0);
    let v = Value::ShortSeq(vec![1, -2, 3]);
    let b = enc(&ts, &v, ByteOrder::Big);
    assert_eq!(b, [0, 0, 0, 3, 0, 1, 0xff, 0xfe, 0, 3]);
    assert_eq!(dec(&ts, &b, ByteOrder::Big).unwrap(), v);
    // double array after a char: aligned to 8, no length.
    let tc = TypeCode::struct_tc(
        "IDL:S:1.0",
        "S",
        vec![
            ("c", TypeCode::char()),
            ("a", TypeCode::array(TypeCode::double(), 2)),
        ],
    );
    let v = Value::Struct(vec![Value::Char('z'), Value::DoubleSeq(vec![1.0, -2.0])]);
    let b = enc(&tc, &v, ByteOrder::Little);
    let mut expected = vec![b'z', 0, 0, 0, 0, 0, 0, 0];
    expected.extend_from_slice(&1.0f64.to_le_bytes());
    expected.extend_from_slice(&(-2.0f64).to_le_bytes());
    assert_eq!(b, expected);
    assert_eq!(dec(&tc, &b, ByteOrder::Little).unwrap(), v);
    // Octets, chars, booleans, enums.
    let to = TypeCode::sequence(TypeCode::octet(), 0);
    assert_eq!(
        dec(&to, &[0, 0, 0, 2, 7, 8], ByteOrder::Big).unwrap(),
        Value::OctetSeq(Bytes::from_static(&[7, 8]))
    );
    let tb = TypeCode::sequence(TypeCode::boolean(), 0);
    assert_eq!(
        dec(&tb, &[0, 0, 0, 2, 1, 0], ByteOrder::Big).unwrap(),
        Value::BooleanSeq(vec![true, false])
    );
    assert_eq!(
        dec(&tb, &[0, 0, 0, 2, 1, 5], ByteOrder::Big),
        Err(CdrError::InvalidBool {
            offset: 5,
            value: 5
        })
    );
    let te = TypeCode::sequence(color_tc(), 0);
    assert_eq!(
        dec(&te, &[0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 1], ByteOrder::Big).unwrap(),
        Value::EnumSeq(vec![2, 1])
    );
    assert_eq!(
        dec(&te, &[0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3], ByteOrder::Big),
        Err(CdrError::InvalidEnum {
            offset: 8,
            value: 3,
            count: 3
        })
    );
    let tch = TypeCode::array(TypeCode::char(), 3);
    assert_eq!(
        dec(&tch, b"abc", ByteOrder::Big).unwrap(),
        Value::CharSeq(b"abc".to_vec())
    );
    // Wrong representation for the element type.
    let mut buf = BytesMut::new();
    let mut w = Writer::new(&mut buf, ByteOrder::Big);
    assert!(matches!(
        Value::LongSeq(vec![1]).encode(&ts, &mut w),
        Err(CdrError::TypeMismatch { offset: 0, .. })
    ));
    assert!(matches!(
        Value::ShortSeq(vec![1, 2]).encode(&TypeCode::array(TypeCode::short(), 3), &mut w),
        Err(CdrError::TypeMismatch { .. })
    ));
}

#[test]
fn bounds_are_enforced() {
    let ts = TypeCode::sequence(TypeCode::long(), 2);
    assert_eq!(
        dec(
            &ts,
            &[0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3],
            ByteOrder::Big
        ),
        Err(CdrError::LimitExceeded {
            offset: 0,
            len: 3,
            limit: 2
        })
    );
    let tstr = TypeCode::string(2);
    assert_eq!(
        dec(&tstr, &[0, 0, 0, 4, b'a', b'b', b'c', 0], ByteOrder::Big),
        Err(CdrError::LimitExceeded {
            offset: 0,
            len: 3,
            limit: 2
        })
    );
}

#[test]
fn objref_and_principal_and_typecode_values() {
    let ior = Ior::new(
        "IDL:X:1.0",
        vec![TaggedProfile {
            tag: 0,
            data: Bytes::from_static(&[1, 2, 3]),
        }],
    );
    let tc = TypeCode::objref("IDL:X:1.0", "X");
    let b = enc(&tc, &Value::ObjRef(Box::new(ior.clone())), ByteOrder::Big);
    let mut expected = vec![0, 0, 0, 10];
    expected.extend_from_slice(b"IDL:X:1.0\0");
    expected.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3]);
    assert_eq!(b, expected);
    assert_eq!(
        dec(&tc, &b, ByteOrder::Big).unwrap(),
        Value::ObjRef(Box::new(ior))
    );
    let nil = dec(&tc, &[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0], ByteOrder::Big).unwrap();
    assert!(matches!(&nil, Value::ObjRef(i) if i.is_nil()));
    let p = Value::Principal(Bytes::from_static(b"me"));
    assert_eq!(
        enc(&TypeCode::principal(), &p, ByteOrder::Big),
        [0, 0, 0, 2, b'm', b'e']
    );
    let t = Value::TypeCode(TypeCode::string(4));
    assert_eq!(
        enc(&TypeCode::tc_typecode(), &t, ByteOrder::Big),
        [0, 0, 0, 18, 0, 0, 0, 4]
    );
}

/// Values and value boxes are values now (crate::valuetype); only a
/// custom-marshalled valuetype has no dynamic state to read.
#[test]
fn custom_valuetypes_are_refused_as_values() {
    let vb = TypeCode::value_box("IDL:VB:1.0", "VB", TypeCode::long());
    assert_eq!(dec(&vb, &[0, 0, 0, 0], ByteOrder::Big), Ok(Value::Null));
    let custom = TypeCode::value_tc("IDL:C:1.0", "C", 1, None, vec![]);
    assert_eq!(
        dec(&custom, &[0x7f, 0xff, 0xff, 0x08], ByteOrder::Big),
        Err(CdrError::TypeMismatch {
            offset: 0,
            expected: "a type supported as a dynamic value".into(),
            found: "tk_value".into()
        })
    );
}

fn perf_tc() -> TypeCode {
    TypeCode::struct_tc(
        "IDL:Bench/PerfStruct:1.0",
        "PerfStruct",
        vec![
            ("s", TypeCode::short()),
            ("c", TypeCode::char()),
            ("l", TypeCode::long()),
            ("o", TypeCode::octet()),
            ("d", TypeCode::double()),
        ],
    )
}

#[test]
fn huge_sequence_lengths_fail_before_allocating() {
    let t = TypeCode::sequence(perf_tc(), 0);
    let mut b = vec![0, 0, 3, 0xe8];
    b.extend_from_slice(&[0u8; 100]);
    // 1000 elements of at least 16 bytes each, 100 bytes left.
    assert_eq!(
        dec(&t, &b, ByteOrder::Big),
        Err(CdrError::Truncated {
            offset: 4,
            needed: 16000,
            available: 100
        })
    );
    let t = TypeCode::sequence(TypeCode::string(0), 0);
    assert!(matches!(
        dec(&t, &[0xff, 0xff, 0xff, 0xff], ByteOrder::Big),
        Err(CdrError::LimitExceeded { offset: 0, .. })
    ));
    // An array whose TypeCode asks for 2^31 structs.
    let t = TypeCode::array(perf_tc(), 1 << 31);
    assert!(matches!(
        dec(&t, &[0u8; 64], ByteOrder::Big),
        Err(CdrError::Truncated { offset: 0, .. })
    ));
}

#[test]
fn zero_size_values_draw_on_a_budget() {
    let empty = TypeCode::struct_tc("IDL:E:1.0", "E", vec![]);
    assert_eq!(
        dec(&empty, &[], ByteOrder::Big).unwrap(),
        Value::Struct(vec![])
    );
    // A million empty structs from no input at all: element counts are
    // paid from the 65536-node budget up front, and each zero-size value
    // costs one more (outer array 1000 + 1, each inner one 1000 + 1 +
    // 1000 structs: 503 left when the 33rd inner array asks for 1000).
    let t = TypeCode::array(TypeCode::array(empty.clone(), 1000), 1000);
    assert_eq!(
        dec(&t, &[], ByteOrder::Big),
        Err(CdrError::LimitExceeded {
            offset: 0,
            len: 1000,
            limit: 503
        })
    );
    // A sequence count of zero-size elements: no bytes to check against.
    let t = TypeCode::sequence(empty, 0);
    assert_eq!(
        dec(&t, &[0, 1, 0, 1], ByteOrder::Big),
        Err(CdrError::LimitExceeded {
            offset: 0,
            len: 65537,
            limit: 65536
        })
    );
    assert_eq!(
        dec(&t, &[0, 0, 0, 2], ByteOrder::Big).unwrap(),
        Value::Seq(vec![Value::Struct(vec![]), Value::Struct(vec![])])
    );
}

#[test]
fn recursive_values_decode_and_nesting_is_bounded() {
    let node = TypeCode::struct_tc(
        "IDL:Node:1.0",
        "Node",
        vec![
            ("v", TypeCode::long()),
            (
                "next",
                TypeCode::sequence(TypeCode::recursive("IDL:Node:1.0"), 0),
            ),
        ],
    );
    // v=1, [ v=2, [] ]
    let b = [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0];
    let v = dec(&node, &b, ByteOrder::Big).unwrap();
    let leaf = Value::StructSeq(vec![Value::LongSeq(vec![]), Value::Seq(vec![])]);
    assert_eq!(
        v,
        Value::Struct(vec![
            Value::Long(1),
            Value::StructSeq(vec![
                Value::LongSeq(vec![2]),
                Value::Seq(vec![leaf.clone()])
            ])
        ])
    );
    // Rows are accepted on encode too.
    let rows = Value::Struct(vec![
        Value::Long(1),
        Value::Seq(vec![Value::Struct(vec![Value::Long(2), leaf])]),
    ]);
    assert_eq!(enc(&node, &rows, ByteOrder::Big), b);
    assert_eq!(enc(&node, &v, ByteOrder::Big), b);
    // A 1000-deep list: refused by the depth limit, not the stack.
    let mut deep = Vec::new();
    for i in 0..1000u32 {
        deep.extend_from_slice(&i.to_be_bytes());
        deep.extend_from_slice(&1u32.to_be_bytes());
    }
    assert!(matches!(
        dec(&node, &deep, ByteOrder::Big),
        Err(CdrError::DepthExceeded { limit: 64, .. })
    ));
    // A placeholder on its own cannot be resolved.
    assert!(matches!(
        dec(&TypeCode::recursive("IDL:Node:1.0"), &b, ByteOrder::Big),
        Err(CdrError::BadTypeCode { offset: 0, .. })
    ));
}

#[test]
fn any_with_hostile_typecode_inside() {
    // any whose TypeCode is a self-pointing indirection.
    let b = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfc];
    assert!(matches!(
        dec(&TypeCode::any(), &b, ByteOrder::Big),
        Err(CdrError::BadTypeCode { offset: 4, .. })
    ));
}

#[test]
fn struct_sequences_decode_by_column() {
    let cd = TypeCode::struct_tc(
        "IDL:CD:1.0",
        "CD",
        vec![("c", TypeCode::char()), ("d", TypeCode::double())],
    );
    let t = TypeCode::sequence(cd, 0);
    // length 2 at 0; c at 4, d at 8; c at 16, d at 24.
    let mut b = vec![0, 0, 0, 2, b'x', 0, 0, 0];
    b.extend_from_slice(&1.5f64.to_be_bytes());
    b.extend_from_slice(&[b'y', 0, 0, 0, 0, 0, 0, 0]);
    b.extend_from_slice(&(-3.0f64).to_be_bytes());
    let v = dec(&t, &b, ByteOrder::Big).unwrap();
    assert_eq!(
        v,
        Value::StructSeq(vec![
            Value::CharSeq(b"xy".to_vec()),
            Value::DoubleSeq(vec![1.5, -3.0])
        ])
    );
    assert_eq!(
        v.element(1),
        Some(Value::Struct(vec![Value::Char('y'), Value::Double(-3.0)]))
    );
    assert_eq!(v.element(2), None);
    assert_eq!(enc(&t, &v, ByteOrder::Big), b);
    // Ragged or mistyped columns are refused before the length is written.
    let mut buf = BytesMut::new();
    let mut w = Writer::new(&mut buf, ByteOrder::Big);
    let ragged = Value::StructSeq(vec![
        Value::CharSeq(b"xy".to_vec()),
        Value::DoubleSeq(vec![1.5]),
    ]);
    assert!(matches!(
        ragged.encode(&t, &mut w),
        Err(CdrError::TypeMismatch { offset: 0, .. })
    ));
    let mistyped = Value::StructSeq(vec![Value::LongSeq(vec![1]), Value::DoubleSeq(vec![1.5])]);
    assert!(matches!(
        mistyped.encode(&t, &mut w),
        Err(CdrError::TypeMismatch { offset: 0, .. })
    ));
    assert!(buf.is_empty());
}

#[test]
fn struct_sequence_fast_path_refuses_bad_members_at_their_offset() {
    let bl = TypeCode::struct_tc(
        "IDL:BL:1.0",
        "BL",
        vec![
            ("b", TypeCode::boolean()),
            ("l", TypeCode::long()),
            ("e", color_tc()),
            ("c", TypeCode::char()),
        ],
    );
    let t = TypeCode::sequence(bl, 0);
    // Element 0 at 4: b 4, l 8, e 12, c 16; element 1 at 17: b 17, l 20,
    // e 24, c 28.
    let good = |b1: u8, e1: u8, c1: u8| {
        vec![
            0, 0, 0, 2, // length
            1, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 2, b'x', // element 0
            b1, 0, 0, 0, 0, 0, 9, 0, 0, 0, e1, c1, // element 1
        ]
    };
    assert_eq!(
        dec(&t, &good(0, 1, b'y'), ByteOrder::Big).unwrap(),
        Value::StructSeq(vec![
            Value::BooleanSeq(vec![true, false]),
            Value::LongSeq(vec![7, 9]),
            Value::EnumSeq(vec![2, 1]),
            Value::CharSeq(b"xy".to_vec()),
        ])
    );
    assert_eq!(
        dec(&t, &good(2, 1, b'y'), ByteOrder::Big),
        Err(CdrError::InvalidBool {
            offset: 17,
            value: 2
        })
    );
    assert_eq!(
        dec(&t, &good(0, 3, b'y'), ByteOrder::Big),
        Err(CdrError::InvalidEnum {
            offset: 24,
            value: 3,
            count: 3
        })
    );
    let utf8 = iiop_cdr::Options {
        char_set: iiop_cdr::CharCodeSet::Utf8,
        ..Default::default()
    };
    let bytes = good(0, 1, 0xe9);
    let mut r = Reader::new(&bytes, ByteOrder::Big).options(utf8);
    assert_eq!(
        Value::decode(&t, &mut r),
        Err(CdrError::InvalidCodeSet {
            offset: 28,
            codeset: "UTF-8"
        })
    );
    // Cut inside element 1: the row is taken whole, from its start.
    let cut = &good(0, 1, b'y')[..26];
    assert_eq!(
        dec(&t, cut, ByteOrder::Big),
        Err(CdrError::Truncated {
            offset: 17,
            needed: 12,
            available: 9
        })
    );
}

#[test]
fn wide_text_starting_with_a_bom_character_survives() {
    // Found by fuzzing: U+FEFF first, written big-endian without a BOM,
    // read back as a BOM and lost. The writer now puts a BOM in front.
    let s = Value::WString("\u{feff}!".into());
    let b = enc(&TypeCode::wstring(0), &s, ByteOrder::Little);
    assert_eq!(b, [6, 0, 0, 0, 0xfe, 0xff, 0xfe, 0xff, 0, b'!']);
    assert_eq!(
        dec(&TypeCode::wstring(0), &b, ByteOrder::Little).unwrap(),
        s
    );
    let s = Value::WString("\u{fffe}".into());
    let b = enc(&TypeCode::wstring(0), &s, ByteOrder::Big);
    assert_eq!(dec(&TypeCode::wstring(0), &b, ByteOrder::Big).unwrap(), s);
    let c = Value::WChar('\u{feff}');
    let b = enc(&TypeCode::wchar(), &c, ByteOrder::Big);
    assert_eq!(b, [4, 0xfe, 0xff, 0xfe, 0xff]);
    assert_eq!(dec(&TypeCode::wchar(), &b, ByteOrder::Big).unwrap(), c);
    // Ordinary text keeps the BOM-less big-endian form.
    assert_eq!(
        enc(
            &TypeCode::wstring(0),
            &Value::WString("hi".into()),
            ByteOrder::Big
        ),
        [0, 0, 0, 4, 0, b'h', 0, b'i']
    );
}
