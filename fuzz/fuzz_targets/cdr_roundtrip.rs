//! Decode a TypeCode and a value from arbitrary bytes; whatever decodes
//! must encode again, decode to the same thing, and re-encode to the same
//! bytes. Bit 0 of the first byte picks the input order, bit 1 the output
//! order, bits 2..5 how many bytes precede the output (alignment origin).
#![no_main]

use bytes::BytesMut;
use iiop_cdr::{ByteOrder, Reader, TypeCode, Value, Writer};
use libfuzzer_sys::fuzz_target;

fn encode(tc: &TypeCode, v: &Value, order: ByteOrder, prefix: usize) -> BytesMut {
    let mut buf = BytesMut::new();
    let mut w = Writer::new(&mut buf, order);
    for _ in 0..prefix {
        w.write_u8(0);
    }
    tc.encode(&mut w).expect("a decoded TypeCode encodes");
    v.encode(tc, &mut w).expect("a decoded value encodes");
    buf
}

fn decode(bytes: &[u8], order: ByteOrder, prefix: usize) -> (TypeCode, Value) {
    let mut r = Reader::new(bytes, order);
    r.take(prefix).unwrap();
    let tc = TypeCode::decode(&mut r).expect("our TypeCode decodes");
    let v = Value::decode(&tc, &mut r).expect("our value decodes");
    r.expect_end().expect("no trailing bytes");
    (tc, v)
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let in_order = ByteOrder::from_flag(flags & 1 == 1);
    let out_order = ByteOrder::from_flag(flags & 2 == 2);
    let prefix = ((flags >> 2) & 7) as usize;
    let mut r = Reader::new(rest, in_order);
    let Ok(tc) = TypeCode::decode(&mut r) else {
        return;
    };
    let Ok(v) = Value::decode(&tc, &mut r) else {
        return;
    };
    let b1 = encode(&tc, &v, out_order, prefix);
    let (tc2, v2) = decode(&b1, out_order, prefix);
    assert!(tc2.equal(&tc), "TypeCode changed");
    let b2 = encode(&tc2, &v2, out_order, prefix);
    assert_eq!(&b1[..], &b2[..], "re-encoding changed the bytes");
});
