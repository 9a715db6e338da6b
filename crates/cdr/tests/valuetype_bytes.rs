//! Valuetypes byte for byte: what our writer sends in each style, what
//! other ORBs send (omniORB: no type information, chunks ending where a
//! buffer fills, coalesced end tags; JacORB: repository ids everywhere,
//! indirected when repeated), truncation, and hostile input refused with
//! the offset of the culprit.

use bytes::BytesMut;
use iiop_cdr::value::{ValueObj, ValueScope};
use iiop_cdr::{ByteOrder, CdrError, Reader, TypeCode, Value, Writer};

const NODE: &str = "IDL:Bench/Node:1.0";

/// `valuetype Node { public long id; public string label; public Node next; };`
fn node_tc() -> TypeCode {
    TypeCode::value_tc(
        NODE,
        "Node",
        0,
        None,
        vec![
            ("id", TypeCode::long(), 1),
            ("label", TypeCode::string(0), 1),
            ("next", TypeCode::recursive(NODE), 1),
        ],
    )
}

/// `valuetype Tagged : truncatable Node { public string tag; public Node other; };`
fn tagged_tc() -> TypeCode {
    TypeCode::value_tc(
        "IDL:Bench/Tagged:1.0",
        "Tagged",
        3,
        Some(node_tc()),
        vec![("tag", TypeCode::string(0), 1), ("other", node_tc(), 1)],
    )
}

fn node(number: u32, id: i32, label: &str, next: Value) -> Value {
    Value::Valuetype(Box::new(ValueObj {
        number,
        type_id: NODE.into(),
        state: vec![Value::Long(id), Value::String(label.into()), next],
    }))
}

fn encode(tc: &TypeCode, v: &Value, order: ByteOrder, scope: &mut ValueScope) -> Vec<u8> {
    let mut buf = BytesMut::new();
    v.encode_in(tc, &mut Writer::new(&mut buf, order), scope)
        .unwrap();
    buf.to_vec()
}

fn decode(tc: &TypeCode, b: &[u8], order: ByteOrder) -> Result<Value, CdrError> {
    let mut r = Reader::new(b, order);
    let v = Value::decode_in(tc, &mut r, &mut ValueScope::with_types([tc]))?;
    r.expect_end()?;
    Ok(v)
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// "IDL:Bench/Node:1.0" with its length (19) and NUL, big-endian.
const NODE_ID_BE: &str = "00000013 49444c3a 42656e63 682f4e6f 64653a31 2e3000";

#[test]
fn unchunked_with_a_repository_id() {
    let v = node(0, 1, "a", Value::Null);
    let b = encode(&node_tc(), &v, ByteOrder::Big, &mut ValueScope::default());
    let want = hex(&format!(
        "7fffff02 {NODE_ID_BE} 00 00000001 00000002 6100 0000 00000000"
    ));
    assert_eq!(b, want);
    assert_eq!(decode(&node_tc(), &b, ByteOrder::Big).unwrap(), v);
}

#[test]
fn chunked_has_a_chunk_and_an_end_tag() {
    let v = node(0, 1, "a", Value::Null);
    let mut scope = ValueScope {
        chunk_all: true,
        ..ValueScope::default()
    };
    let b = encode(&node_tc(), &v, ByteOrder::Big, &mut scope);
    let want = hex(&format!(
        "7fffff0a {NODE_ID_BE} 00 00000010 00000001 00000002 6100 0000 00000000 ffffffff"
    ));
    assert_eq!(b, want);
    assert_eq!(decode(&node_tc(), &b, ByteOrder::Big).unwrap(), v);
}

#[test]
fn omniorb_style_no_type_information_little_endian() {
    let v = node(0, 7, "x", Value::Null);
    let mut scope = ValueScope {
        omit_formal_ids: true,
        ..ValueScope::default()
    };
    let b = encode(&node_tc(), &v, ByteOrder::Little, &mut scope);
    assert_eq!(b, hex("00ffff7f 07000000 02000000 7800 0000 00000000"));
    assert_eq!(decode(&node_tc(), &b, ByteOrder::Little).unwrap(), v);
}

/// A chain a → b with b shared: `[a, b]` as a sequence; the second
/// element is an indirection to b's tag.
#[test]
fn a_shared_value_is_an_indirection_to_its_tag() {
    let seq = TypeCode::sequence(node_tc(), 0);
    let b_node = node(1, 2, "b", Value::Null);
    let a = node(0, 1, "a", b_node);
    let v = Value::Seq(vec![a, Value::ValueRef(1)]);
    let mut scope = ValueScope {
        omit_formal_ids: true,
        ..ValueScope::default()
    };
    let b = encode(&seq, &v, ByteOrder::Big, &mut scope);
    // count, a's tag at 4, id, label, b's tag at 20, id, label, null,
    // then the indirection at 40: offset field at 44 → 20 - 44 = -24.
    let want = hex("00000002 7fffff00 00000001 00000002 6100 0000 \
         7fffff00 00000002 00000002 6200 0000 00000000 \
         ffffffff ffffffe8");
    assert_eq!(b, want);
    assert_eq!(decode(&seq, &b, ByteOrder::Big).unwrap(), v);
}

/// a → b → a: the cycle closes with an indirection to the enclosing a.
#[test]
fn a_cycle_points_back_at_a_value_still_being_read() {
    let v = node(0, 1, "a", node(1, 2, "b", Value::ValueRef(0)));
    let mut scope = ValueScope {
        omit_formal_ids: true,
        ..ValueScope::default()
    };
    let b = encode(&node_tc(), &v, ByteOrder::Big, &mut scope);
    let want = hex("7fffff00 00000001 00000002 6100 0000 \
         7fffff00 00000002 00000002 6200 0000 \
         ffffffff ffffffdc");
    assert_eq!(b, want);
    assert_eq!(decode(&node_tc(), &b, ByteOrder::Big).unwrap(), v);
}

/// JacORB writes a repeated repository id as an indirection to the first.
#[test]
fn a_repeated_repository_id_is_indirected_when_sharing() {
    let v = node(0, 1, "a", node(1, 2, "b", Value::Null));
    let mut scope = ValueScope::default();
    scope.writer.style.share_ids = true;
    let b = encode(&node_tc(), &v, ByteOrder::Big, &mut scope);
    // a: tag 0, id string at 4..27, pad, id 28, label 32..38, pad;
    // b: tag 40, then the indirection at 44: field 48, 4 - 48 = -44.
    let want = hex(&format!(
        "7fffff02 {NODE_ID_BE} 00 00000001 00000002 6100 0000 \
         7fffff02 ffffffff ffffffd4 00000002 00000002 6200 0000 00000000"
    ));
    assert_eq!(b, want);
    assert_eq!(decode(&node_tc(), &b, ByteOrder::Big).unwrap(), v);
}

/// Nested chunked values: the outer chunk ends before the inner tag, a
/// continuation chunk holds nothing (so none is written), and the end
/// tags -2, -1 close them — or one -1 closes both when coalescing, as
/// omniORB writes.
#[test]
fn nested_chunked_values_and_coalesced_end_tags() {
    let v = node(0, 1, "a", node(1, 2, "b", Value::Null));
    let mut plain = ValueScope {
        chunk_all: true,
        omit_formal_ids: true,
        ..ValueScope::default()
    };
    let b = encode(&node_tc(), &v, ByteOrder::Big, &mut plain);
    let want = hex("7fffff08 0000000a 00000001 00000002 6100 0000 \
         7fffff08 00000010 00000002 00000002 6200 0000 00000000 fffffffe ffffffff");
    assert_eq!(b, want);
    assert_eq!(decode(&node_tc(), &b, ByteOrder::Big).unwrap(), v);

    let mut coalesced = ValueScope {
        chunk_all: true,
        omit_formal_ids: true,
        ..ValueScope::default()
    };
    coalesced.writer.style.coalesce_end_tags = true;
    let b = encode(&node_tc(), &v, ByteOrder::Big, &mut coalesced);
    let want = hex("7fffff08 0000000a 00000001 00000002 6100 0000 \
         7fffff08 00000010 00000002 00000002 6200 0000 00000000 ffffffff");
    assert_eq!(b, want);
    assert_eq!(decode(&node_tc(), &b, ByteOrder::Big).unwrap(), v);
}

/// omniORB ends a chunk where its buffer fills: between any two
/// primitives, also inside padding and before an 8-aligned double whose
/// padding then lies in the next chunk.
#[test]
fn chunks_may_end_between_any_two_primitives() {
    // struct S { octet o; double d; } inside valuetype V { S s; string t; }
    let s = TypeCode::struct_tc(
        "IDL:S:1.0",
        "S",
        vec![("o", TypeCode::octet()), ("d", TypeCode::double())],
    );
    let tc = TypeCode::value_tc(
        "IDL:V:1.0",
        "V",
        0,
        None,
        vec![("s", s, 1), ("t", TypeCode::string(0), 1)],
    );
    let want = Value::Valuetype(Box::new(ValueObj {
        number: 0,
        type_id: "IDL:V:1.0".into(),
        state: vec![
            Value::Struct(vec![Value::Octet(5), Value::Double(1.5)]),
            Value::String("hi".into()),
        ],
    }));
    // tag 0; a chunk of 1 at 4 (the octet at 8), 3 bytes between
    // chunks; a chunk of 8 at 12 (the double at 16, 8-aligned); a chunk
    // of 4 at 24 holding the string's length; a chunk of 3 at 32 holding
    // "hi\0" (the string's length and text in two chunks: allowed); one
    // byte between chunks, the end tag at 40.
    let b = hex("7fffff08 00000001 05 000000 00000008 3ff8000000000000 \
         00000004 00000003 00000003 686900 00 ffffffff");
    assert_eq!(decode(&tc, &b, ByteOrder::Big).unwrap(), want);
    // The double's padding inside the next chunk (a long first shifts
    // the chunk that holds it by 4).
    let tc2 = TypeCode::value_tc(
        "IDL:V:1.0",
        "V",
        0,
        None,
        vec![
            ("n", TypeCode::long(), 1),
            (
                "s",
                TypeCode::struct_tc(
                    "IDL:S:1.0",
                    "S",
                    vec![("o", TypeCode::octet()), ("d", TypeCode::double())],
                ),
                1,
            ),
        ],
    );
    // tag 0, chunk of 5 at 4: long at 8, octet at 12; chunk size at 16
    // (after 3 pad bytes between chunks), its data from 20: 4 pad bytes
    // inside it, then the double at 24; end tag at 32.
    let b = hex("7fffff08 00000005 00000009 05 000000 0000000c eeeeeeee 3ff8000000000000 ffffffff");
    let want2 = Value::Valuetype(Box::new(ValueObj {
        number: 0,
        type_id: "IDL:V:1.0".into(),
        state: vec![
            Value::Long(9),
            Value::Struct(vec![Value::Octet(5), Value::Double(1.5)]),
        ],
    }));
    assert_eq!(decode(&tc2, &b, ByteOrder::Big).unwrap(), want2);
}

#[test]
fn our_writer_can_end_a_chunk_before_every_member() {
    let v = node(0, 1, "a", node(1, 2, "bc", Value::Null));
    let mut scope = ValueScope {
        chunk_all: true,
        omit_formal_ids: true,
        ..ValueScope::default()
    };
    scope.writer.style.chunk_size = Some(1);
    let b = encode(&node_tc(), &v, ByteOrder::Little, &mut scope);
    let want = hex("08ffff7f 04000000 01000000 06000000 02000000 6100 0000 \
         08ffff7f 04000000 02000000 07000000 03000000 626300 00 \
         04000000 00000000 feffffff ffffffff");
    assert_eq!(b, want);
    assert_eq!(decode(&node_tc(), &b, ByteOrder::Little).unwrap(), v);
}

/// A value of a type the reader does not know, whose list names a known
/// truncatable base: the base's state is read and the rest (a string and
/// a nested value) skipped.
#[test]
fn an_unknown_derived_value_is_truncated_to_its_known_base() {
    let tagged = Value::Valuetype(Box::new(ValueObj {
        number: 0,
        type_id: "IDL:Bench/Tagged:1.0".into(),
        state: vec![
            Value::Long(1),
            Value::String("a".into()),
            Value::Null,
            Value::String("tag".into()),
            node(1, 5, "other", Value::Null),
        ],
    }));
    let mut scope = ValueScope::with_types([&tagged_tc()]);
    scope.writer.style.share_ids = true;
    let b = encode(&node_tc(), &tagged, ByteOrder::Big, &mut scope);
    assert_eq!(
        &b[..4],
        &hex("7fffff0e")[..],
        "a chunked value with an id list"
    );
    // A reader that knows Tagged reads it whole.
    let mut r = Reader::new(&b, ByteOrder::Big);
    let whole = Value::decode_in(
        &node_tc(),
        &mut r,
        &mut ValueScope::with_types([&tagged_tc()]),
    );
    assert_eq!(whole.unwrap(), tagged);
    r.expect_end().unwrap();
    // One that knows only Node truncates to it.
    let cut = decode(&node_tc(), &b, ByteOrder::Big).unwrap();
    assert_eq!(cut, node(0, 1, "a", Value::Null));
    // Followed by an indirection to the truncated value, and by one to
    // the nested value it skipped (refused: it was never read).
    let seq = TypeCode::sequence(node_tc(), 0);
    let mut scope = ValueScope::with_types([&tagged_tc()]);
    let b = encode(
        &seq,
        &Value::Seq(vec![tagged.clone(), Value::ValueRef(0)]),
        ByteOrder::Big,
        &mut scope,
    );
    let got = decode(&seq, &b, ByteOrder::Big).unwrap();
    assert_eq!(
        got,
        Value::Seq(vec![node(0, 1, "a", Value::Null), Value::ValueRef(0)])
    );
    let mut scope = ValueScope::with_types([&tagged_tc()]);
    let b = encode(
        &seq,
        &Value::Seq(vec![tagged, Value::ValueRef(1)]),
        ByteOrder::Big,
        &mut scope,
    );
    let err = decode(&seq, &b, ByteOrder::Big).unwrap_err();
    assert!(
        matches!(&err, CdrError::BadValue { reason, .. } if reason.contains("no value read before")),
        "{err}"
    );
}

/// A value box: its one value as the state; null and shared like any value.
#[test]
fn value_boxes() {
    let tc = TypeCode::value_box("IDL:Bench/LongBox:1.0", "LongBox", TypeCode::long());
    let seq = TypeCode::sequence(tc.clone(), 0);
    let boxed = Value::Valuetype(Box::new(ValueObj {
        number: 0,
        type_id: "IDL:Bench/LongBox:1.0".into(),
        state: vec![Value::Long(42)],
    }));
    let v = Value::Seq(vec![boxed, Value::Null, Value::ValueRef(0)]);
    let mut scope = ValueScope {
        omit_formal_ids: true,
        ..ValueScope::default()
    };
    let b = encode(&seq, &v, ByteOrder::Big, &mut scope);
    assert_eq!(
        b,
        hex("00000003 7fffff00 0000002a 00000000 ffffffff fffffff0")
    );
    assert_eq!(decode(&seq, &b, ByteOrder::Big).unwrap(), v);
    // JacORB sends a box with its repository id too: same value.
    let b = encode(&seq, &v, ByteOrder::Big, &mut ValueScope::default());
    assert_eq!(decode(&seq, &b, ByteOrder::Big).unwrap(), v);
}

/// A repository id list given by indirection to an earlier list.
#[test]
fn an_id_list_may_be_an_indirection() {
    let seq = TypeCode::sequence(node_tc(), 0);
    let t = |n: u32| {
        Value::Valuetype(Box::new(ValueObj {
            number: n,
            type_id: "IDL:Bench/Tagged:1.0".into(),
            state: vec![
                Value::Long(n as i32),
                Value::String("x".into()),
                Value::Null,
                Value::String("t".into()),
                Value::Null,
            ],
        }))
    };
    let v = Value::Seq(vec![t(0), t(1)]);
    let mut scope = ValueScope::with_types([&tagged_tc()]);
    scope.writer.style.share_ids = true;
    let b = encode(&seq, &v, ByteOrder::Little, &mut scope);
    let mut r = Reader::new(&b, ByteOrder::Little);
    let got = Value::decode_in(&seq, &mut r, &mut ValueScope::with_types([&tagged_tc()])).unwrap();
    assert_eq!(got, v);
    // The second header: tag, then 0xffffffff and an offset back to the
    // first list's count at 8.
    let second = b
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == [0x0e, 0xff, 0xff, 0x7f])
        .map(|(i, _)| i)
        .nth(1)
        .unwrap();
    assert_eq!(&b[second + 4..second + 8], &[0xff; 4]);
    let off = i32::from_le_bytes(b[second + 8..second + 12].try_into().unwrap());
    assert_eq!(second as i32 + 8 + off, 8);
}

/// Hostile input: every indirection, chunk and tag problem is refused
/// with the offset of the culprit.
#[test]
fn malformed_values_are_refused_with_offsets() {
    let tc = node_tc();
    let bad = |b: &str| decode(&tc, &hex(b), ByteOrder::Big).unwrap_err();
    let reason = |e: &CdrError| match e {
        CdrError::BadValue { offset, reason } => (*offset, reason.clone()),
        other => panic!("{other:?}"),
    };
    // An indirection with nothing before it, pointing at itself, forward.
    let (o, r) = reason(&bad("ffffffff fffffff8"));
    assert_eq!(o, 4);
    assert!(r.contains("does not point back"), "{r}");
    let (o, r) = reason(&bad("ffffffff fffffffc"));
    assert_eq!(o, 4);
    assert!(r.contains("does not point back"), "{r}");
    assert_eq!(reason(&bad("ffffffff 00000010")).0, 4);
    // Into the middle of a value: its label, not its tag.
    let (o, r) = reason(&bad(
        "7fffff00 00000001 00000002 6100 0000 ffffffff fffffff0",
    ));
    assert_eq!(o, 20);
    assert!(r.contains("no value read before starts"), "{r}");
    // Not a value tag; reserved flag bits; type information 0x04.
    assert_eq!(reason(&bad("00000005")).0, 0);
    assert!(reason(&bad("7fffff10")).1.contains("reserved"));
    assert!(reason(&bad("7fffff04")).1.contains("0x04"));
    // A chunk longer than the data.
    assert_eq!(
        bad("7fffff08 00000100 00000001"),
        CdrError::Truncated {
            offset: 8,
            needed: 256,
            available: 4
        }
    );
    // State that runs past its chunk into the end tag.
    let (o, r) = reason(&bad("7fffff08 00000004 00000001 ffffffff"));
    assert_eq!(o, 12);
    assert!(r.contains("past the end of its chunk"), "{r}");
    // A string split across two chunks.
    let (o, r) = reason(&bad(
        "7fffff08 00000009 00000001 00000002 61 000000 00000001 00 000000 00000000 ffffffff",
    ));
    assert_eq!(o, 16);
    assert!(r.contains("run past the end of their chunk"), "{r}");
    // An end tag deeper than the values open.
    let (o, r) = reason(&bad(
        "7fffff08 00000010 00000001 00000002 6100 0000 00000000 fffffffe",
    ));
    assert_eq!(o, 24);
    assert!(r.contains("closes level 2"), "{r}");
    // An unchunked value inside a chunked one.
    let (o, r) = reason(&bad(
        "7fffff08 0000000a 00000001 00000002 6100 0000 7fffff00",
    ));
    assert_eq!(o, 20);
    assert!(r.contains("unchunked value inside a chunked one"), "{r}");
    // A value tag inside a chunk.
    let (o, r) = reason(&bad(
        "7fffff08 00000010 00000001 00000002 6100 0000 7fffff00",
    ));
    assert_eq!(o, 20);
    assert!(r.contains("inside a chunk"), "{r}");
    // A null tag between chunks.
    let (o, r) = reason(&bad(
        "7fffff08 0000000a 00000001 00000002 6100 0000 00000000 ffffffff",
    ));
    assert_eq!(o, 20);
    assert!(r.contains("between chunks"), "{r}");
    // State left over in the last chunk of a value we know exactly.
    let (o, r) = reason(&bad(
        "7fffff08 00000014 00000001 00000002 6100 0000 00000000 00000007 ffffffff",
    ));
    assert_eq!(o, 24);
    assert!(r.contains("left in its chunk"), "{r}");
    // Truncation of an unchunked value.
    let list = "7fffff06 00000002 00000006 49444c3a 5800 0000 00000013 49444c3a 42656e63 682f4e6f 64653a31 2e3000";
    let (_, r) = reason(&bad(&format!(
        "{list} 00 00000001 00000002 6100 0000 00000000"
    )));
    assert!(r.contains("cannot be truncated"), "{r}");
    // A type nobody knows.
    let (_, r) = reason(&bad("7fffff02 00000006 49444c3a 5800"));
    assert!(r.contains("IDL:X"), "{r}");
}

/// Chunked values nested deeper than the depth limit are refused before
/// the stack grows: each value is its own chunked level.
#[test]
fn deep_nesting_hits_the_depth_limit() {
    let mut b = Vec::new();
    for _ in 0..10_000 {
        b.extend_from_slice(&hex("7fffff08 0000000a 00000001 00000002 6100 0000"));
    }
    let err = decode(&node_tc(), &b, ByteOrder::Big).unwrap_err();
    assert!(matches!(err, CdrError::DepthExceeded { .. }), "{err:?}");
    // Unchunked, the same depth is caught by the reader's nesting count.
    let mut b = Vec::new();
    for _ in 0..10_000 {
        b.extend_from_slice(&hex("7fffff00 00000001 00000002 6100 0000"));
    }
    let err = decode(&node_tc(), &b, ByteOrder::Big).unwrap_err();
    assert!(matches!(err, CdrError::DepthExceeded { .. }), "{err:?}");
}
