//! `any`s that hold TypeCodes and exceptions, byte by byte: an exception
//! inside an any with its repository id first (the common reading, and
//! omniORB 4.3's `exceptionIdInAny`) or as its members alone (omniORB
//! before 4.3), both read; a TypeCode inside an any is an outermost
//! TypeCode of its own, so its indirections may point back only inside
//! it, never into the any's own TypeCode or before it; and round trips of
//! both under proptest.

use bytes::BytesMut;
use iiop_cdr::value::{exception_id_in_any, ValueScope};
use iiop_cdr::{Any, ByteOrder, CdrError, Reader, TCKind, TypeCode, Value, Writer};
use proptest::prelude::*;

const ERR_ID: &str = "IDL:t/E:1.0";

fn any_tc() -> TypeCode {
    TypeCode::basic(TCKind::tk_any)
}

fn err_tc() -> TypeCode {
    TypeCode::except_tc(
        ERR_ID,
        "E",
        vec![("code", TypeCode::long()), ("why", TypeCode::string(0))],
    )
}

fn enc_any(a: &Any, bare: bool, order: ByteOrder) -> Vec<u8> {
    let mut buf = BytesMut::new();
    let mut scope = ValueScope {
        bare_exceptions_in_any: bare,
        ..ValueScope::default()
    };
    Value::Any(Box::new(a.clone()))
        .encode_in(&any_tc(), &mut Writer::new(&mut buf, order), &mut scope)
        .unwrap();
    buf.to_vec()
}

fn dec_any(b: &[u8], order: ByteOrder) -> Result<Any, CdrError> {
    let mut r = Reader::new(b, order);
    let v = Value::decode(&any_tc(), &mut r)?;
    r.expect_end()?;
    match v {
        Value::Any(a) => Ok(*a),
        other => panic!("{other:?}"),
    }
}

fn s(text: &str) -> Vec<u8> {
    let mut v = ((text.len() + 1) as u32).to_be_bytes().to_vec();
    v.extend_from_slice(text.as_bytes());
    v.push(0);
    v
}

fn pad(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(4) {
        v.push(0);
    }
}

/// tk_except's TypeCode for [`err_tc`], big-endian, from offset 0.
fn err_tc_bytes() -> Vec<u8> {
    let mut enc = vec![0u8]; // encapsulation byte order: big-endian
    pad(&mut enc);
    enc.extend(s(ERR_ID));
    pad(&mut enc);
    enc.extend(s("E"));
    pad(&mut enc);
    enc.extend(2u32.to_be_bytes());
    enc.extend(s("code"));
    pad(&mut enc);
    enc.extend(3u32.to_be_bytes());
    enc.extend(s("why"));
    pad(&mut enc);
    enc.extend(18u32.to_be_bytes()); // tk_string
    enc.extend(0u32.to_be_bytes());
    let mut v = 22u32.to_be_bytes().to_vec(); // tk_except
    v.extend((enc.len() as u32).to_be_bytes());
    v.extend(enc);
    v
}

fn the_error() -> Any {
    Any {
        tc: err_tc(),
        value: Value::Struct(vec![Value::Long(42), Value::String("no".into())]),
    }
}

#[test]
fn an_exception_in_an_any_is_its_id_then_its_members() {
    let mut want = err_tc_bytes();
    pad(&mut want);
    want.extend(s(ERR_ID));
    pad(&mut want);
    want.extend(42i32.to_be_bytes());
    want.extend(s("no"));
    let got = enc_any(&the_error(), false, ByteOrder::Big);
    assert_eq!(got, want);
    assert_eq!(dec_any(&got, ByteOrder::Big).unwrap(), the_error());
    let mut r = Reader::new(&got, ByteOrder::Big);
    let tc = TypeCode::decode(&mut r).unwrap();
    assert!(exception_id_in_any(&tc, &r));
}

#[test]
fn an_exception_in_an_any_as_members_alone_is_read_too() {
    let mut want = err_tc_bytes();
    pad(&mut want);
    want.extend(42i32.to_be_bytes());
    want.extend(s("no"));
    let got = enc_any(&the_error(), true, ByteOrder::Big);
    assert_eq!(got, want);
    assert_eq!(dec_any(&got, ByteOrder::Big).unwrap(), the_error());
    let mut r = Reader::new(&got, ByteOrder::Big);
    let tc = TypeCode::decode(&mut r).unwrap();
    assert!(!exception_id_in_any(&tc, &r));
}

#[test]
fn a_wrong_or_huge_id_is_taken_for_members_and_refused_by_them() {
    // A string that is not the id: read as the members (code = its length
    // field, then a string that runs out of bytes).
    let mut b = err_tc_bytes();
    pad(&mut b);
    b.extend(s("IDL:t/Other:1.0"));
    assert!(dec_any(&b, ByteOrder::Big).is_err());
    // A length far beyond the bytes left: refused without allocating.
    let mut b = err_tc_bytes();
    pad(&mut b);
    b.extend(0x7fff_fff0u32.to_be_bytes());
    assert!(dec_any(&b, ByteOrder::Big).is_err());
}

/// `any` holding a TypeCode (tk_TypeCode) of `struct R { sequence<R> k; }`.
fn tree_in_any() -> (Any, Vec<u8>) {
    let id = "IDL:t/R:1.0";
    let tc = TypeCode::struct_tc(
        id,
        "R",
        vec![("k", TypeCode::sequence(TypeCode::recursive(id), 0))],
    );
    let a = Any {
        tc: TypeCode::basic(TCKind::tk_TypeCode),
        value: Value::TypeCode(tc),
    };
    let b = enc_any(&a, false, ByteOrder::Big);
    (a, b)
}

#[test]
fn a_recursive_typecode_in_an_any_points_back_exactly() {
    let (a, b) = tree_in_any();
    // tk_TypeCode, then the struct's kind at 4; its sequence's element is
    // the indirection, the last 8 bytes before the bound.
    assert_eq!(&b[..8], &[0, 0, 0, 12, 0, 0, 0, 15]);
    let at = b.len() - 12;
    assert_eq!(&b[at..at + 4], &[0xff; 4]);
    let off = i32::from_be_bytes(b[at + 4..at + 8].try_into().unwrap());
    assert_eq!(at as i32 + 4 + off, 4, "points at the struct's kind");
    assert_eq!(dec_any(&b, ByteOrder::Big).unwrap(), a);
}

#[test]
fn an_indirection_out_of_its_typecode_is_refused() {
    let (_, b) = tree_in_any();
    let at = b.len() - 8;
    for (target, why) in [
        (0i64, "the any's own TypeCode"),
        (-100, "before the stream"),
        (i32::MIN as i64 + 8, "far before the stream"),
        (at as i64 + 8, "forward"),
        (at as i64, "the indirection itself"),
        (6, "the middle of the struct's kind"),
    ] {
        let mut bad = b.clone();
        let off = (target - at as i64) as i32;
        bad[at..at + 4].copy_from_slice(&off.to_be_bytes());
        let e = dec_any(&bad, ByteOrder::Big);
        assert!(
            matches!(e, Err(CdrError::BadTypeCode { .. })),
            "{why}: {e:?}"
        );
    }
}

fn order(little: bool) -> ByteOrder {
    if little {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn exceptions_in_anys_round_trip_either_way(
        code: i32,
        why in "[ -~]{0,40}",
        detail in proptest::collection::vec(any::<u8>(), 0..64),
        little: bool,
        bare: bool,
    ) {
        let tc = TypeCode::except_tc(
            ERR_ID,
            "E",
            vec![
                ("code", TypeCode::long()),
                ("why", TypeCode::string(0)),
                ("detail", TypeCode::sequence(TypeCode::octet(), 0)),
            ],
        );
        let a = Any {
            tc,
            value: Value::Struct(vec![
                Value::Long(code),
                Value::String(why),
                Value::OctetSeq(detail.into()),
            ]),
        };
        let b = enc_any(&a, bare, order(little));
        prop_assert_eq!(dec_any(&b, order(little)).unwrap(), a);
    }

    #[test]
    fn recursive_typecodes_in_anys_round_trip(depth in 1usize..6, little: bool, names: bool) {
        // struct N0 { sequence<N0> k; sequence<N1-in-N0> ... } nested
        // `depth` deep, each level recursive on itself and on the root.
        let root = "IDL:t/N0:1.0";
        let mut tc = TypeCode::struct_tc(
            &format!("IDL:t/N{depth}:1.0"),
            if names { "leaf" } else { "" },
            vec![("up", TypeCode::sequence(TypeCode::recursive(root), 0))],
        );
        for d in (0..depth).rev() {
            let id = format!("IDL:t/N{d}:1.0");
            tc = TypeCode::struct_tc(
                &id,
                if names { "n" } else { "" },
                vec![
                    ("down", tc),
                    ("me", TypeCode::sequence(TypeCode::recursive(&id), 0)),
                ],
            );
        }
        let a = Any { tc: TypeCode::basic(TCKind::tk_TypeCode), value: Value::TypeCode(tc) };
        let b = enc_any(&a, false, order(little));
        prop_assert_eq!(dec_any(&b, order(little)).unwrap(), a);
    }
}
