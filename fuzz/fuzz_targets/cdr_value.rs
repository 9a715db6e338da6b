//! Decode arbitrary bytes as a TypeCode followed by a value of that type.
//! The first byte picks the byte order (bit 0). Must never panic, hang or
//! allocate without bound.
#![no_main]

use iiop_cdr::{ByteOrder, Reader, TypeCode, Value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let order = ByteOrder::from_flag(flags & 1 == 1);
    let mut r = Reader::new(rest, order);
    let Ok(tc) = TypeCode::decode(&mut r) else {
        return;
    };
    let _ = Value::decode(&tc, &mut r);
});
