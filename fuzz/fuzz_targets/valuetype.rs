//! Decode arbitrary bytes as a valuetype of a fixed family (a recursive
//! Node, a value box, a truncatable derived type holding more values),
//! with a reader that knows every type and with one that knows only the
//! base (so truncation runs too). Must never panic, hang or allocate
//! without bound; whatever decodes re-encodes, in the style the first
//! byte picks, to bytes that decode equal.
#![no_main]

use bytes::BytesMut;
use iiop_cdr::value::ValueScope;
use iiop_cdr::{ByteOrder, Reader, TypeCode, Value, ValueStyle, Writer};
use libfuzzer_sys::fuzz_target;

const NODE: &str = "IDL:F/Node:1.0";

fn node() -> TypeCode {
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

fn rich() -> TypeCode {
    let boxed = TypeCode::value_box("IDL:F/LongBox:1.0", "LongBox", TypeCode::long());
    TypeCode::value_tc(
        "IDL:F/Rich:1.0",
        "Rich",
        3,
        Some(node()),
        vec![
            ("d", TypeCode::double(), 1),
            ("kids", TypeCode::sequence(node(), 0), 1),
            ("b", boxed, 1),
        ],
    )
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let order = ByteOrder::from_flag(flags & 1 == 1);
    let seq = TypeCode::sequence(node(), 0);
    for knows_rich in [true, false] {
        let mut scope = if knows_rich {
            ValueScope::with_types([&rich()])
        } else {
            ValueScope::with_types([&node()])
        };
        let mut r = Reader::new(rest, order);
        let Ok(v) = Value::decode_in(&seq, &mut r, &mut scope) else {
            continue;
        };
        let mut out = ValueScope::with_types([&rich()]);
        out.chunk_all = flags & 2 != 0;
        out.omit_formal_ids = flags & 4 != 0;
        out.writer.style = ValueStyle {
            share_ids: flags & 8 != 0,
            coalesce_end_tags: flags & 16 != 0,
            chunk_size: (flags & 32 != 0).then_some(1),
        };
        let mut buf = BytesMut::new();
        v.encode_in(&seq, &mut Writer::new(&mut buf, order), &mut out)
            .expect("a decoded value re-encodes");
        let mut r = Reader::new(&buf, order);
        let again = Value::decode_in(&seq, &mut r, &mut ValueScope::with_types([&rich()]))
            .expect("a re-encoded value decodes");
        assert_eq!(again, v);
        r.expect_end().expect("nothing after the re-encoded value");
    }
});
