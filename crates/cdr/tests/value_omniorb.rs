//! Decodes `CORBA::Any` bytes produced by omniORB 4.2
//! (`fixtures/cdr/omniorb-any/`, see its README) to exact expected values,
//! and checks that re-encoding gives omniORB's bytes back (padding masked:
//! omniORB leaves garbage in gaps, we write zeros).

use bytes::BytesMut;
use iiop_cdr::{Any, ByteOrder, Reader, TypeCode, Value, Writer};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../fixtures/cdr/omniorb-any/{name}.bin",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn cd_tc() -> TypeCode {
    TypeCode::struct_tc(
        "IDL:Fx/CD:1.0",
        "CD",
        vec![("c", TypeCode::char()), ("d", TypeCode::double())],
    )
}

fn node_tc() -> TypeCode {
    TypeCode::struct_tc(
        "IDL:Fx/Node:1.0",
        "Node",
        vec![
            ("v", TypeCode::long()),
            (
                "next",
                TypeCode::alias(
                    "IDL:Fx/NodeSeq:1.0",
                    "NodeSeq",
                    TypeCode::sequence(TypeCode::recursive("IDL:Fx/Node:1.0"), 0),
                ),
            ),
        ],
    )
}

fn color_tc() -> TypeCode {
    TypeCode::enum_tc("IDL:Fx/Color:1.0", "Color", &["RED", "GREEN", "BLUE"])
}

fn u_tc() -> TypeCode {
    TypeCode::union_tc(
        "IDL:Fx/U:1.0",
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

fn cd(c: char, d: f64) -> Value {
    Value::Struct(vec![Value::Char(c), Value::Double(d)])
}

/// A `NodeSeq` value: struct sequences decode by column.
fn nodes(items: Vec<(i32, Value)>) -> Value {
    let (vs, nexts): (Vec<i32>, Vec<Value>) = items.into_iter().unzip();
    Value::StructSeq(vec![Value::LongSeq(vs), Value::Seq(nexts)])
}

fn leaf() -> Value {
    nodes(vec![])
}

fn any(tc: TypeCode, value: Value) -> Value {
    Value::Any(Box::new(Any { tc, value }))
}

/// Decode the whole file as an any; check the value and TypeCode, then
/// re-encode and compare with omniORB's bytes, gaps masked.
fn check(name: &str, expected_tc: &TypeCode, expected: Value) {
    let (bytes, buf) = check_value(name, expected_tc, expected);
    assert_eq!(buf.len(), bytes.len(), "{name}: re-encoded length");
    for (i, (&ours, &theirs)) in buf.iter().zip(&bytes).enumerate() {
        assert!(
            ours == theirs || ours == 0,
            "{name}: byte {i:#x}: ours {ours:#04x}, omniORB {theirs:#04x}"
        );
    }
}

/// Decode, compare, re-encode and decode our own bytes again; returns
/// omniORB's bytes and ours.
fn check_value(name: &str, expected_tc: &TypeCode, expected: Value) -> (Vec<u8>, BytesMut) {
    let bytes = fixture(name);
    let mut r = Reader::new(&bytes, ByteOrder::Little);
    let v = Value::decode(&TypeCode::any(), &mut r).unwrap();
    r.expect_end().unwrap();
    let Value::Any(a) = &v else {
        panic!("{name}: not an any: {v:?}")
    };
    assert!(
        a.tc.equal(expected_tc),
        "{name}: TypeCode {:?} != {expected_tc:?}",
        a.tc
    );
    assert_eq!(a.value, expected, "{name}");

    let mut buf = BytesMut::new();
    let mut w = Writer::new(&mut buf, ByteOrder::Little);
    v.encode(&TypeCode::any(), &mut w).unwrap();
    let mut r = Reader::new(&buf, ByteOrder::Little);
    assert_eq!(Value::decode(&TypeCode::any(), &mut r).unwrap(), v);
    (bytes, buf)
}

#[test]
fn long() {
    check("long", &TypeCode::long(), Value::Long(42));
    // The whole file, byte for byte: kind 3, then the long.
    assert_eq!(fixture("long"), [3, 0, 0, 0, 42, 0, 0, 0]);
}

#[test]
fn cd_struct() {
    check("cd", &cd_tc(), cd('x', 2.5));
}

#[test]
fn sequence_of_struct_through_alias() {
    let tc = TypeCode::alias("IDL:Fx/CDSeq:1.0", "CDSeq", TypeCode::sequence(cd_tc(), 0));
    let v = Value::StructSeq(vec![
        Value::CharSeq(b"abc".to_vec()),
        Value::DoubleSeq(vec![1.5, 3.0, 4.5]),
    ]);
    assert_eq!(v.len(), Some(3));
    assert_eq!(v.element(1), Some(cd('b', 3.0)));
    check("cdseq", &tc, v);
}

#[test]
fn union_on_enum() {
    check(
        "union_green",
        &u_tc(),
        Value::Union {
            disc: 1,
            value: Box::new(Value::String("hi".into())),
        },
    );
    check(
        "union_default",
        &u_tc(),
        Value::Union {
            disc: 2,
            value: Box::new(Value::Double(0.25)),
        },
    );
}

#[test]
fn recursive_struct_with_indirection_across_encapsulations() {
    // 1 -> [2, 3 -> [4]]
    let expected = Value::Struct(vec![
        Value::Long(1),
        nodes(vec![(2, leaf()), (3, nodes(vec![(4, leaf())]))]),
    ]);
    check("node", &node_tc(), expected);
    // The indirection: kind at 0x84, offset field at 0x88 = -136 → 0.
    let b = fixture("node");
    assert_eq!(
        &b[0x84..0x8c],
        &[0xff, 0xff, 0xff, 0xff, 0x78, 0xff, 0xff, 0xff]
    );
}

#[test]
fn nested_any() {
    check("nested_any", &TypeCode::any(), any(cd_tc(), cd('x', 2.5)));
}

#[test]
fn typecode_as_value() {
    let bytes = fixture("typecode_node");
    let mut r = Reader::new(&bytes, ByteOrder::Little);
    let v = Value::decode(&TypeCode::any(), &mut r).unwrap();
    let Value::Any(a) = v else {
        panic!("not an any")
    };
    assert_eq!(a.tc.kind(), iiop_cdr::TCKind::tk_TypeCode);
    let Value::TypeCode(t) = &a.value else {
        panic!("not a TypeCode: {:?}", a.value)
    };
    assert!(t.equal(&node_tc()));
    assert_eq!(
        t.member_type(1)
            .unwrap()
            .unalias()
            .content_type()
            .unwrap()
            .id(),
        Some("IDL:Fx/Node:1.0")
    );
    check(
        "typecode_node",
        &TypeCode::tc_typecode(),
        Value::TypeCode(node_tc()),
    );
}

#[test]
fn mixed_struct_with_fixed_array_octets_and_any() {
    let tc = TypeCode::struct_tc(
        "IDL:Fx/Mixed:1.0",
        "Mixed",
        vec![
            ("s", TypeCode::short()),
            ("ull", TypeCode::ulonglong()),
            ("str", TypeCode::string(0)),
            ("f", TypeCode::fixed(5, 2).unwrap()),
            ("b", TypeCode::boolean()),
            ("o", TypeCode::octet()),
            ("fl", TypeCode::float()),
            (
                "arr",
                TypeCode::alias(
                    "IDL:Fx/LongArr:1.0",
                    "LongArr",
                    TypeCode::array(TypeCode::long(), 3),
                ),
            ),
            ("bytes", TypeCode::sequence(TypeCode::octet(), 0)),
            ("inner", TypeCode::any()),
        ],
    );
    check(
        "mixed",
        &tc,
        Value::Struct(vec![
            Value::Short(-7),
            Value::ULongLong(0x0102_0304_0506_0708),
            Value::String("omni".into()),
            Value::Fixed("123.45".into()),
            Value::Boolean(true),
            Value::Octet(0xab),
            Value::Float(-1.0),
            Value::LongSeq(vec![10, 20, 30]),
            Value::OctetSeq(bytes::Bytes::from_static(&[1, 2, 3])),
            any(TypeCode::short(), Value::Short(-2)),
        ]),
    );
}

#[test]
fn repeated_typecode_indirection() {
    let cdt = cd_tc();
    let tc = TypeCode::struct_tc(
        "IDL:Fx/Pair:1.0",
        "Pair",
        vec![("first", cdt.clone()), ("second", cdt)],
    );
    check(
        "pair",
        &tc,
        Value::Struct(vec![cd('x', 2.5), cd('y', -4.0)]),
    );
}

#[test]
fn repeated_typecode_from_inside_a_recursive_one() {
    // `struct Outer { Node a; NodeSeq b; }`: omniORB sends b's TypeCode as
    // an indirection (offset -84 at 0xd8) to the NodeSeq alias *inside*
    // Node, whose element is a recursive reference to Node. Out there it
    // must mean the whole Node type.
    let b = fixture("outer");
    assert_eq!(
        &b[0xd4..0xdc],
        &[0xff, 0xff, 0xff, 0xff, 0xac, 0xff, 0xff, 0xff]
    );
    let node_seq = TypeCode::alias(
        "IDL:Fx/NodeSeq:1.0",
        "NodeSeq",
        TypeCode::sequence(node_tc(), 0),
    );
    let tc = TypeCode::struct_tc(
        "IDL:Fx/Outer:1.0",
        "Outer",
        vec![("a", node_tc()), ("b", node_seq)],
    );
    let expected = Value::Struct(vec![
        Value::Struct(vec![Value::Long(5), leaf()]),
        nodes(vec![(6, leaf())]),
    ]);
    let (_, ours) = check_value("outer", &tc, expected);
    // We write b's TypeCode in full, with an indirection to `a`'s Node.
    assert!(ours.len() > b.len());
}
