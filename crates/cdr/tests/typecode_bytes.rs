//! TypeCode CDR encoding checked byte by byte against hand-computed
//! vectors, and hostile TypeCodes (indirection loops, forward and
//! out-of-range indirections, depth bombs, huge counts) refused cleanly.

use bytes::BytesMut;
use iiop_cdr::{ByteOrder, CdrError, Reader, TCKind, TcDef, TypeCode, Writer};

fn enc(tc: &TypeCode, order: ByteOrder) -> Vec<u8> {
    let mut buf = BytesMut::new();
    let mut w = Writer::new(&mut buf, order);
    tc.encode(&mut w).unwrap();
    buf.to_vec()
}

fn dec(bytes: &[u8], order: ByteOrder) -> Result<TypeCode, CdrError> {
    let mut r = Reader::new(bytes, order);
    let tc = TypeCode::decode(&mut r)?;
    r.expect_end()?;
    Ok(tc)
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn cd_tc() -> TypeCode {
    TypeCode::struct_tc(
        "IDL:Bench/CD:1.0",
        "CD",
        vec![("c", TypeCode::char()), ("d", TypeCode::double())],
    )
}

#[test]
fn struct_cd_byte_by_byte() {
    let expected = cat(&[
        &[0, 0, 0, 15],        // 0: tk_struct
        &[0, 0, 0, 64],        // 4: encapsulation length
        &[0, 0, 0, 0],         // 8 (enc 0): big-endian octet + 3 pad
        &[0, 0, 0, 17],        // enc 4: id length (16 chars + NUL)
        b"IDL:Bench/CD:1.0\0", // enc 8..25
        &[0, 0, 0],            // pad to enc 28
        &[0, 0, 0, 3],         // enc 28: name length
        b"CD\0",               // enc 32..35
        &[0],                  // pad to 36
        &[0, 0, 0, 2],         // enc 36: member count
        &[0, 0, 0, 2],         // enc 40
        b"c\0",                // enc 44..46
        &[0, 0],               // pad to 48
        &[0, 0, 0, 9],         // enc 48: tk_char
        &[0, 0, 0, 2],         // enc 52
        b"d\0",                // enc 56..58
        &[0, 0],               // pad to 60
        &[0, 0, 0, 7],         // enc 60: tk_double; enc length 64
    ]);
    assert_eq!(expected.len(), 72);
    assert_eq!(enc(&cd_tc(), ByteOrder::Big), expected);
    let back = dec(&expected, ByteOrder::Big).unwrap();
    assert!(back.equal(&cd_tc()));
    assert_eq!(back.id(), Some("IDL:Bench/CD:1.0"));
    assert_eq!(back.member_name(1), Some("d"));
    assert_eq!(back.member_type(1).unwrap().kind(), TCKind::tk_double);

    // Little-endian: same layout, swapped numbers, order octet 1.
    let le = enc(&cd_tc(), ByteOrder::Little);
    assert_eq!(&le[..12], &[15, 0, 0, 0, 64, 0, 0, 0, 1, 0, 0, 0]);
    assert_eq!(&le[68..], &[7, 0, 0, 0]);
    assert!(dec(&le, ByteOrder::Little).unwrap().equal(&cd_tc()));
}

fn node_tc() -> TypeCode {
    TypeCode::struct_tc(
        "IDL:Node:1.0",
        "Node",
        vec![
            ("v", TypeCode::long()),
            (
                "next",
                TypeCode::sequence(TypeCode::recursive("IDL:Node:1.0"), 0),
            ),
        ],
    )
}

fn node_bytes() -> Vec<u8> {
    cat(&[
        &[0, 0, 0, 15],            // 0: tk_struct
        &[0, 0, 0, 88],            // 4: length
        &[0, 0, 0, 0],             // 8 (enc 0): order + pad
        &[0, 0, 0, 13],            // enc 4
        b"IDL:Node:1.0\0",         // enc 8..21
        &[0, 0, 0],                // pad to 24
        &[0, 0, 0, 5],             // enc 24
        b"Node\0",                 // enc 28..33
        &[0, 0, 0],                // pad to 36
        &[0, 0, 0, 2],             // enc 36: count
        &[0, 0, 0, 2],             // enc 40
        b"v\0",                    // enc 44
        &[0, 0],                   // pad to 48
        &[0, 0, 0, 3],             // enc 48: tk_long
        &[0, 0, 0, 5],             // enc 52
        b"next\0",                 // enc 56..61
        &[0, 0, 0],                // pad to 64
        &[0, 0, 0, 19],            // enc 64 = abs 72: tk_sequence
        &[0, 0, 0, 16],            // abs 76: length
        &[0, 0, 0, 0],             // abs 80 (inner enc 0): order + pad
        &[0xff, 0xff, 0xff, 0xff], // abs 84: indirection
        &[0xff, 0xff, 0xff, 0xa8], // abs 88: -88 → abs 0
        &[0, 0, 0, 0],             // abs 92: bound
    ])
}

#[test]
fn recursive_node_uses_exact_indirection() {
    let expected = node_bytes();
    assert_eq!(expected.len(), 96);
    assert_eq!(enc(&node_tc(), ByteOrder::Big), expected);
    let back = dec(&expected, ByteOrder::Big).unwrap();
    assert!(back.equal(&node_tc()));
    assert!(back.is_recursion_target());
    assert!(!back.has_unbound_recursion());
    let elem = back.member_type(1).unwrap().content_type().unwrap();
    assert!(elem.is_recursive_ref());
    assert_eq!(elem.id(), Some("IDL:Node:1.0"));
    // Not at offset 0 of the stream: the offset stays relative.
    let mut buf = BytesMut::new();
    let mut w = Writer::new(&mut buf, ByteOrder::Little);
    w.write_u8(9);
    node_tc().encode(&mut w).unwrap();
    assert_eq!(&buf[4 + 88..4 + 92], &(-88i32).to_le_bytes());
    let mut r = Reader::new(&buf, ByteOrder::Little);
    r.read_u8().unwrap();
    assert!(TypeCode::decode(&mut r).unwrap().equal(&node_tc()));
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
fn union_with_enum_discriminator_and_default_byte_by_byte() {
    let expected = cat(&[
        &[0, 0, 0, 16],     // tk_union
        &[0, 0, 0, 168],    // length
        &[0, 0, 0, 0],      // enc 0
        &[0, 0, 0, 10],     // enc 4
        b"IDL:U:1.0\0",     // enc 8..18
        &[0, 0],            // pad to 20
        &[0, 0, 0, 2],      // enc 20
        b"U\0",             // enc 24..26
        &[0, 0],            // pad to 28
        &[0, 0, 0, 17],     // enc 28: discriminator tk_enum
        &[0, 0, 0, 69],     // enc 32: its length
        &[0, 0, 0, 0],      // enum enc 0
        &[0, 0, 0, 14],     // enum enc 4
        b"IDL:Color:1.0\0", // 8..22
        &[0, 0],            // pad to 24
        &[0, 0, 0, 6],      // 24
        b"Color\0",         // 28..34
        &[0, 0],            // pad to 36
        &[0, 0, 0, 3],      // 36: count
        &[0, 0, 0, 4],      // 40
        b"RED\0",           // 44..48
        &[0, 0, 0, 6],      // 48
        b"GREEN\0",         // 52..58
        &[0, 0],            // pad to 60
        &[0, 0, 0, 5],      // 60
        b"BLUE\0",          // 64..69 = union enc 105
        &[0, 0, 0],         // pad to 108
        &[0, 0, 0, 2],      // enc 108: default index
        &[0, 0, 0, 3],      // enc 112: count
        &[0, 0, 0, 0],      // enc 116: label RED
        &[0, 0, 0, 2],      // 120
        b"l\0",             // 124
        &[0, 0],            // pad to 128
        &[0, 0, 0, 3],      // 128: tk_long
        &[0, 0, 0, 1],      // 132: label GREEN
        &[0, 0, 0, 2],      // 136
        b"s\0",             // 140
        &[0, 0],            // pad to 144
        &[0, 0, 0, 18],     // 144: tk_string
        &[0, 0, 0, 0],      // 148: bound
        &[0],               // 152: default label octet
        &[0, 0, 0],         // pad to 156
        &[0, 0, 0, 2],      // 156
        b"d\0",             // 160
        &[0, 0],            // pad to 164
        &[0, 0, 0, 7],      // 164: tk_double → 168
    ]);
    assert_eq!(enc(&u_tc(), ByteOrder::Big), expected);
    let back = dec(&expected, ByteOrder::Big).unwrap();
    assert!(back.equal(&u_tc()));
    assert_eq!(back.default_index(), Some(2));
    assert_eq!(back.member_label(1), Some(1));
    assert_eq!(
        back.discriminator_type().unwrap().member_name(2),
        Some("BLUE")
    );
}

#[test]
fn every_kind_round_trips_both_orders() {
    let tcs = vec![
        TypeCode::null(),
        TypeCode::void(),
        TypeCode::short(),
        TypeCode::long(),
        TypeCode::ushort(),
        TypeCode::ulong(),
        TypeCode::float(),
        TypeCode::double(),
        TypeCode::boolean(),
        TypeCode::char(),
        TypeCode::octet(),
        TypeCode::any(),
        TypeCode::tc_typecode(),
        TypeCode::principal(),
        TypeCode::objref("IDL:X:1.0", "X"),
        cd_tc(),
        u_tc(),
        color_tc(),
        TypeCode::string(10),
        TypeCode::sequence(TypeCode::short(), 5),
        TypeCode::array(TypeCode::array(TypeCode::octet(), 3), 2),
        TypeCode::alias("IDL:A:1.0", "A", TypeCode::long()),
        TypeCode::except_tc("IDL:E:1.0", "E", vec![("why", TypeCode::string(0))]),
        TypeCode::longlong(),
        TypeCode::ulonglong(),
        TypeCode::longdouble(),
        TypeCode::wchar(),
        TypeCode::wstring(7),
        TypeCode::fixed(31, 4).unwrap(),
        TypeCode::value_tc(
            "IDL:V:1.0",
            "V",
            0,
            Some(TypeCode::value_tc("IDL:B:1.0", "B", 2, None, vec![])),
            vec![
                ("x", TypeCode::long(), 1),
                ("self", TypeCode::recursive("IDL:V:1.0"), 0),
            ],
        ),
        TypeCode::value_box("IDL:VB:1.0", "VB", TypeCode::string(0)),
        TypeCode::interface(TCKind::tk_native, "IDL:N:1.0", "N"),
        TypeCode::interface(TCKind::tk_abstract_interface, "IDL:AI:1.0", "AI"),
        TypeCode::interface(TCKind::tk_local_interface, "IDL:LI:1.0", "LI"),
        node_tc(),
    ];
    for unions in [
        TypeCode::short(),
        TypeCode::long(),
        TypeCode::ushort(),
        TypeCode::ulong(),
        TypeCode::longlong(),
        TypeCode::ulonglong(),
        TypeCode::char(),
        TypeCode::boolean(),
        TypeCode::wchar(),
        color_tc(),
    ] {
        let u = TypeCode::union_tc(
            "IDL:UU:1.0",
            "UU",
            unions.clone(),
            -1,
            vec![(1, "a", TypeCode::long()), (0, "b", TypeCode::octet())],
        )
        .unwrap();
        for order in [ByteOrder::Big, ByteOrder::Little] {
            let b = enc(&u, order);
            assert!(dec(&b, order).unwrap().equal(&u), "{unions:?}");
        }
    }
    for tc in &tcs {
        for order in [ByteOrder::Big, ByteOrder::Little] {
            let b = enc(tc, order);
            let back = dec(&b, order).unwrap_or_else(|e| panic!("{tc:?}: {e}"));
            assert!(back.equal(tc), "{tc:?} != {back:?}");
            assert_eq!(enc(&back, order), b);
        }
    }
}

#[test]
fn equal_and_equivalent() {
    let a = TypeCode::alias("IDL:Len:1.0", "Len", TypeCode::long());
    assert!(!a.equal(&TypeCode::long()));
    assert!(a.equivalent(&TypeCode::long()));
    let renamed = TypeCode::struct_tc(
        "IDL:Bench/CD:1.0",
        "CDx",
        vec![("cc", TypeCode::char()), ("dd", TypeCode::double())],
    );
    assert!(!renamed.equal(&cd_tc()));
    assert!(renamed.equivalent(&cd_tc()));
    let anon = |n: &str| {
        TypeCode::struct_tc(
            "",
            n,
            vec![("x", TypeCode::alias("IDL:D:1.0", "D", TypeCode::double()))],
        )
    };
    let plain = TypeCode::struct_tc("", "Q", vec![("y", TypeCode::double())]);
    assert!(anon("P").equivalent(&plain));
    assert!(!anon("P").equal(&plain));
    assert!(!cd_tc().equivalent(&TypeCode::struct_tc("IDL:Other:1.0", "CD", vec![])));
    assert!(!TypeCode::string(1).equal(&TypeCode::string(2)));
    assert_eq!(
        TypeCode::sequence(cd_tc(), 0),
        TypeCode::sequence(cd_tc(), 0)
    );
}

#[test]
fn wire_stride_and_min_size() {
    let perf = TypeCode::struct_tc(
        "IDL:Bench/PerfStruct:1.0",
        "PerfStruct",
        vec![
            ("s", TypeCode::short()),
            ("c", TypeCode::char()),
            ("l", TypeCode::long()),
            ("o", TypeCode::octet()),
            ("d", TypeCode::double()),
        ],
    );
    assert_eq!(perf.wire_stride(), Some(24));
    assert_eq!(perf.min_wire_size(), 16);
    assert_eq!(cd_tc().wire_stride(), Some(16));
    let s = |m: Vec<(&str, TypeCode)>| TypeCode::struct_tc("IDL:S:1.0", "S", m);
    assert_eq!(s(vec![("c", TypeCode::char())]).wire_stride(), Some(1));
    let mixed_quad = s(vec![
        ("d", TypeCode::double()),
        ("f", TypeCode::float()),
        ("s1", TypeCode::short()),
        ("s2", TypeCode::short()),
    ]);
    assert_eq!(mixed_quad.wire_stride(), Some(16));
    assert_eq!(
        s(vec![("a", TypeCode::float()), ("b", TypeCode::float())]).wire_stride(),
        Some(8)
    );
    // char, short, char: elements settle 4 apart, not at a rounded size.
    let csc = s(vec![
        ("a", TypeCode::char()),
        ("b", TypeCode::short()),
        ("c", TypeCode::char()),
    ]);
    assert_eq!(csc.wire_stride(), Some(4));
    assert_eq!(csc.fixed_size_at(0), Some(5));
    assert_eq!(csc.fixed_size_at(1), Some(4));
    assert_eq!(color_tc().wire_stride(), Some(4));
    assert_eq!(TypeCode::fixed(5, 2).unwrap().wire_stride(), Some(3));
    assert_eq!(TypeCode::array(cd_tc(), 3).wire_stride(), Some(48));
    assert_eq!(TypeCode::array(cd_tc(), 3).fixed_size_at(4), Some(44));
    let huge = TypeCode::array(TypeCode::array(cd_tc(), 1 << 20), 1 << 20);
    assert_eq!(huge.wire_stride(), Some(16u64 << 40));
    assert_eq!(TypeCode::longdouble().wire_stride(), Some(16));
    assert_eq!(TypeCode::string(0).wire_stride(), None);
    assert_eq!(TypeCode::wchar().wire_stride(), None);
    assert_eq!(u_tc().wire_stride(), None);
    assert_eq!(s(vec![("x", TypeCode::string(0))]).wire_stride(), None);
    assert_eq!(
        TypeCode::alias("IDL:A:1.0", "A", cd_tc()).wire_stride(),
        Some(16)
    );
}

#[test]
fn builders_refuse_illegal_parameters() {
    assert!(TypeCode::fixed(0, 0).is_err());
    assert!(TypeCode::fixed(32, 0).is_err());
    assert!(TypeCode::fixed(5, 6).is_err());
    assert!(TypeCode::union_tc("", "U", TypeCode::double(), -1, vec![]).is_err());
    assert!(TypeCode::union_tc(
        "",
        "U",
        TypeCode::long(),
        1,
        vec![(1, "a", TypeCode::long())]
    )
    .is_err());
    assert!(TypeCode::new(TcDef::Basic(TCKind::tk_struct)).is_err());
}

// ---- hostile input ---------------------------------------------------

fn bad_tc(offset: usize, reason: &str) -> CdrError {
    CdrError::BadTypeCode {
        offset,
        reason: reason.into(),
    }
}

#[test]
fn indirection_to_itself_or_forward_is_refused() {
    // Offset -4 points at its own 0xffffffff: not the start of a TypeCode
    // seen so far (the loop a naive decoder would spin in).
    let self_loop = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfc];
    assert_eq!(
        dec(&self_loop, ByteOrder::Big),
        Err(bad_tc(
            4,
            "indirection offset -4 does not point backwards to an earlier TypeCode"
        ))
    );
    let zero = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];
    assert!(matches!(
        dec(&zero, ByteOrder::Big),
        Err(CdrError::BadTypeCode { offset: 4, .. })
    ));
    let forward = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 8, 0, 0, 0, 3];
    assert!(matches!(
        dec(&forward, ByteOrder::Big),
        Err(CdrError::BadTypeCode { offset: 4, .. })
    ));
}

#[test]
fn indirection_outside_the_outermost_typecode_is_refused() {
    // A tk_long at 0, then a TypeCode at 4 that points back at it: the
    // target lies before the outermost TypeCode being decoded.
    let b = [0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf8];
    let mut r = Reader::new(&b, ByteOrder::Big);
    assert_eq!(TypeCode::decode(&mut r).unwrap().kind(), TCKind::tk_long);
    assert_eq!(
        TypeCode::decode(&mut r),
        Err(bad_tc(
            8,
            "indirection offset -8 points outside the outermost TypeCode"
        ))
    );
}

#[test]
fn indirection_into_the_middle_of_a_typecode_is_refused() {
    // Node with the indirection aimed at the struct's length field (abs
    // 4) instead of its kind: offset -84 at abs 88.
    let mut b = node_bytes();
    b[88..92].copy_from_slice(&(-84i32).to_be_bytes());
    assert_eq!(
        dec(&b, ByteOrder::Big),
        Err(bad_tc(
            88,
            "indirection offset -84 does not point at the start of a TypeCode"
        ))
    );
    // Aimed at the enclosing sequence (abs 72, in progress): a sequence
    // cannot contain itself.
    b[88..92].copy_from_slice(&(-16i32).to_be_bytes());
    assert_eq!(
        dec(&b, ByteOrder::Big),
        Err(bad_tc(
            88,
            "indirection offset -16 points at an enclosing TypeCode that cannot be recursive"
        ))
    );
    // Aimed at the earlier, finished tk_long member (abs 56 = enc 48):
    // a legal repeated TypeCode.
    b[88..92].copy_from_slice(&(-32i32).to_be_bytes());
    let tc = dec(&b, ByteOrder::Big).unwrap();
    assert!(tc
        .member_type(1)
        .unwrap()
        .content_type()
        .unwrap()
        .equal(&TypeCode::long()));
}

#[test]
fn depth_bomb_is_refused() {
    let mut tc = TypeCode::long();
    for _ in 0..100 {
        tc = TypeCode::sequence(tc, 0);
    }
    let b = enc(&tc, ByteOrder::Big);
    // Level k's encapsulation starts at 8 + 12 (k - 1); the 65th is one
    // too deep for the default limit of 64.
    assert_eq!(
        dec(&b, ByteOrder::Big),
        Err(CdrError::DepthExceeded {
            offset: 8 + 12 * 64 + 1,
            limit: 64
        })
    );
}

#[test]
fn huge_counts_are_refused_before_allocating() {
    // struct with 0xffffffff members: count at enc 20 (abs 28).
    let b = cat(&[
        &[0, 0, 0, 15],
        &[0, 0, 0, 24],
        &[0, 0, 0, 0],             // enc 0: order + pad
        &[0, 0, 0, 1],             // enc 4: id ""
        &[0, 0, 0, 0],             // enc 8: NUL + pad
        &[0, 0, 0, 1],             // enc 12: name ""
        &[0, 0, 0, 0],             // enc 16: NUL + pad
        &[0xff, 0xff, 0xff, 0xff], // enc 20: count
    ]);
    assert!(matches!(
        dec(&b, ByteOrder::Big),
        Err(CdrError::LimitExceeded {
            offset: 28,
            len: 0xffff_ffff,
            ..
        })
    ));
    // 1000 members but only 4 bytes left: each needs at least 9.
    let mut b2 = b.clone();
    b2[28..32].copy_from_slice(&1000u32.to_be_bytes());
    b2.extend_from_slice(&[0, 0, 0, 0]);
    b2[7] = 28;
    assert_eq!(
        dec(&b2, ByteOrder::Big),
        Err(CdrError::Truncated {
            offset: 32,
            needed: 9000,
            available: 4
        })
    );
    // Encapsulation length beyond the input.
    let b3 = [0, 0, 0, 15, 0x7f, 0, 0, 0, 0];
    assert!(matches!(
        dec(&b3, ByteOrder::Big),
        Err(CdrError::LimitExceeded { offset: 4, .. })
    ));
}

#[test]
fn unknown_kind_and_bad_fixed_are_refused() {
    assert_eq!(
        dec(&[0, 0, 0, 99], ByteOrder::Big),
        Err(bad_tc(0, "unknown TCKind 0x63"))
    );
    assert_eq!(
        dec(&[0, 0, 0, 28, 0, 5, 0, 6], ByteOrder::Big),
        Err(bad_tc(4, "fixed<5,6> is not legal"))
    );
}

#[test]
fn trailing_bytes_inside_an_encapsulation_are_refused() {
    // sequence<long> whose encapsulation carries 4 extra bytes.
    let b = cat(&[
        &[0, 0, 0, 19],
        &[0, 0, 0, 16],
        &[0, 0, 0, 0],
        &[0, 0, 0, 3],
        &[0, 0, 0, 0],
        &[9, 9, 9, 9],
    ]);
    assert_eq!(
        dec(&b, ByteOrder::Big),
        Err(CdrError::TrailingData {
            offset: 20,
            remaining: 4
        })
    );
}

#[test]
fn indirection_to_an_indirection_is_refused() {
    // struct S { sequence<S> a; sequence<S> b; }: b's element indirection
    // re-aimed at a's indirection (a chain, the start of a loop) instead
    // of at S.
    let s = TypeCode::struct_tc(
        "IDL:S:1.0",
        "S",
        vec![
            ("a", TypeCode::sequence(TypeCode::recursive("IDL:S:1.0"), 0)),
            ("b", TypeCode::sequence(TypeCode::recursive("IDL:S:1.0"), 0)),
        ],
    );
    let mut bytes = enc(&s, ByteOrder::Big);
    let ind: Vec<usize> = (0..bytes.len() - 3)
        .step_by(4)
        .filter(|&i| bytes[i..i + 4] == [0xff; 4])
        .collect();
    assert_eq!(ind.len(), 2, "two indirections");
    // Each points back at S (offset 0) from its offset field.
    for &k in &ind {
        let off = i32::from_be_bytes(bytes[k + 4..k + 8].try_into().unwrap());
        assert_eq!(off, -((k + 4) as i32));
    }
    let field = ind[1] + 4;
    let off = ind[0] as i32 - field as i32;
    bytes[field..field + 4].copy_from_slice(&off.to_be_bytes());
    assert_eq!(
        dec(&bytes, ByteOrder::Big),
        Err(bad_tc(
            field,
            &format!("indirection offset {off} does not point at the start of a TypeCode")
        ))
    );
}
