//! Valuetypes as omniORB 4.2 and JacORB 3.9 put them on the wire
//! (`fixtures/cdr/values/`, request bodies of bench.idl's `echo_node` and
//! `echo_nodes` captured from their clients; see fixtures/README.md):
//! each decodes to the graph the client sent, sharing included, and what
//! we encode from it decodes to the same graph.
//!
//! Replies of omniORB's (4.3, omniORBpy's server) to our chunked chain
//! and cycle show how it writes nested chunked values.
//!
//! omniORB chunks a truncatable TaggedNode with chunks that end on a
//! 4-byte boundary (padding inside the chunk), writes no type information
//! for a Node of its formal type, and indirects a repeated repository id;
//! JacORB writes repository ids everywhere, big-endian.

use std::path::PathBuf;

use bytes::BytesMut;
use iiop_cdr::value::{ValueObj, ValueScope};
use iiop_cdr::{ByteOrder, Reader, TypeCode, Value, Writer};

const NODE: &str = "IDL:Bench/Node:1.0";
const TAGGED: &str = "IDL:Bench/TaggedNode:1.0";

/// bench.idl's `valuetype Node { public long id; public string label; public Node next; };`
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

/// bench.idl's `valuetype TaggedNode : truncatable Node { public string tag; };`
fn tagged_tc() -> TypeCode {
    TypeCode::value_tc(
        TAGGED,
        "TaggedNode",
        3,
        Some(node_tc()),
        vec![("tag", TypeCode::string(0), 1)],
    )
}

fn node(number: u32, id: i32, label: &str, next: Value) -> Value {
    Value::Valuetype(Box::new(ValueObj {
        number,
        type_id: NODE.into(),
        state: vec![Value::Long(id), Value::String(label.into()), next],
    }))
}

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/cdr/values")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Decode `b` (a body: alignment from its first byte) as values of `tc`,
/// `n` of them in one scope (a sequence's elements when `seq`).
fn decode(b: &[u8], order: ByteOrder, tc: &TypeCode, seq: bool) -> Vec<Value> {
    let mut r = Reader::new(b, order);
    let mut scope = ValueScope::with_types([&tagged_tc()]);
    let n = if seq { r.read_len(4).unwrap() } else { 1 };
    let v = (0..n)
        .map(|_| Value::decode_in(tc, &mut r, &mut scope).unwrap())
        .collect();
    assert!(r.only_padding_left(), "{} bytes left", r.remaining());
    v
}

/// Encode `vs` in one scope (chunking as the values need), decode again.
fn roundtrip(vs: &[Value], order: ByteOrder, seq: bool) -> Vec<Value> {
    let mut buf = BytesMut::new();
    let mut w = Writer::new(&mut buf, order);
    let mut scope = ValueScope::with_types([&tagged_tc()]);
    if seq {
        w.write_len(vs.len()).unwrap();
    }
    for v in vs {
        v.encode_in(&node_tc(), &mut w, &mut scope).unwrap();
    }
    decode(&buf, order, &node_tc(), seq)
}

/// TaggedNode 20 "tagged" (tag "t-tag") → Node 1 "a" → null.
fn tagged() -> Value {
    Value::Valuetype(Box::new(ValueObj {
        number: 0,
        type_id: TAGGED.into(),
        state: vec![
            Value::Long(20),
            Value::String("tagged".into()),
            node(1, 1, "a", Value::Null),
            Value::String("t-tag".into()),
        ],
    }))
}

#[test]
fn chunked_truncatable_values_from_omniorb_and_jacorb_decode() {
    for (file, order) in [
        ("omniorb-tagged-request.bin", ByteOrder::Little),
        ("jacorb-tagged-request.bin", ByteOrder::Big),
    ] {
        let b = fixture(file);
        // Chunked, with a repository id list: TaggedNode, then Node.
        let tag = if order == ByteOrder::Little {
            [0x0e, 0xff, 0xff, 0x7f]
        } else {
            [0x7f, 0xff, 0xff, 0x0e]
        };
        assert_eq!(b[..4], tag, "{file}");
        let got = decode(&b, order, &node_tc(), false);
        assert_eq!(got, [tagged()], "{file}");
        assert_eq!(roundtrip(&got, order, false), got, "{file}");
        // A reader that knows only Node cuts the TaggedNode down to it.
        let mut r = Reader::new(&b, order);
        let cut = Value::decode_in(&node_tc(), &mut r, &mut ValueScope::default()).unwrap();
        assert_eq!(
            cut,
            node(0, 20, "tagged", node(1, 1, "a", Value::Null)),
            "{file}"
        );
        assert!(r.only_padding_left(), "{file}");
    }
}

#[test]
fn one_value_twice_from_omniorb_and_jacorb_is_one_value() {
    for (file, order) in [
        ("omniorb-nodes-shared-request.bin", ByteOrder::Little),
        ("jacorb-nodes-shared-request.bin", ByteOrder::Big),
    ] {
        let b = fixture(file);
        // [a, a, null]: the second element an indirection to the first.
        let got = decode(&b, order, &node_tc(), true);
        assert_eq!(
            got,
            [
                node(0, 1, "a", Value::Null),
                Value::ValueRef(0),
                Value::Null
            ],
            "{file}"
        );
        assert_eq!(roundtrip(&got, order, true), got, "{file}");
    }
}

#[test]
fn nested_chunks_with_one_coalesced_end_tag_from_omniorb_decode() {
    // omniORB 4.3 (omniORBpy's server) echoing a chain a -> b -> c and a
    // cycle x -> y -> x: every value chunked (its chunks padded to 4),
    // no type information, one end tag (-1) closing all of them.
    let b = fixture("omniorb-chain-chunked-reply.bin");
    assert_eq!(b[b.len() - 4..], [0xff; 4]);
    let chain = node(0, 1, "a", node(1, 2, "b", node(2, 3, "c", Value::Null)));
    let got = decode(&b, ByteOrder::Little, &node_tc(), false);
    assert_eq!(got, [chain]);
    assert_eq!(roundtrip(&got, ByteOrder::Little, false), got);
    let b = fixture("omniorb-cycle-chunked-reply.bin");
    let cycle = node(0, 10, "x", node(1, 11, "y", Value::ValueRef(0)));
    let got = decode(&b, ByteOrder::Little, &node_tc(), false);
    assert_eq!(got, [cycle]);
    assert_eq!(roundtrip(&got, ByteOrder::Little, false), got);
}
