//! Decode arbitrary bytes as a TypeCode (bit 0 of the first byte picks the
//! order); whatever decodes must encode and decode back to an equal
//! TypeCode, and re-encode to the same bytes.
#![no_main]

use bytes::BytesMut;
use iiop_cdr::{ByteOrder, Reader, TypeCode, Writer};
use libfuzzer_sys::fuzz_target;

fn encode(tc: &TypeCode, order: ByteOrder) -> BytesMut {
    let mut buf = BytesMut::new();
    let mut w = Writer::new(&mut buf, order);
    tc.encode(&mut w).expect("a decoded TypeCode encodes");
    buf
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let order = ByteOrder::from_flag(flags & 1 == 1);
    let mut r = Reader::new(rest, order);
    let Ok(tc) = TypeCode::decode(&mut r) else {
        return;
    };
    let _ = (tc.wire_stride(), tc.min_wire_size(), tc.equivalent(&tc));
    let b1 = encode(&tc, order);
    let tc2 = TypeCode::decode(&mut Reader::new(&b1, order)).expect("our TypeCode decodes");
    assert!(tc2.equal(&tc), "TypeCode changed");
    assert_eq!(
        &b1[..],
        &encode(&tc2, order)[..],
        "re-encoding changed the bytes"
    );
});
