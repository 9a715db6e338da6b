//! Shared payload builders for the criterion benches in this package.
//!
//! Every payload is about [`PAYLOAD_BYTES`] of CDR data so that each case can
//! be compared with a plain `memcpy` of the same size measured in the same
//! run. The builders are deterministic (no RNG), so runs are comparable.

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, CharSeq, Octets, Seq, WChar, WString, Writer};
use serde::Serialize;

/// Size of one payload on the wire (without the 4-byte sequence length).
pub const PAYLOAD_BYTES: usize = 64 * 1024;

/// bench.idl's `PerfStruct` (24 bytes per element inside a sequence).
pub use iiop_bench_idl::bench::types::PerfStruct;

/// Wire size of one [`PerfStruct`] in a sequence.
pub const PERF_STRUCT_STRIDE: usize = 24;

/// `sequence<short>` filling [`PAYLOAD_BYTES`].
pub fn shorts() -> Seq<i16> {
    Seq((0..PAYLOAD_BYTES / 2).map(|i| i as i16).collect())
}

/// `sequence<long>` filling [`PAYLOAD_BYTES`].
pub fn longs() -> Seq<i32> {
    Seq((0..PAYLOAD_BYTES / 4)
        .map(|i| (i as i32).wrapping_mul(2_654_435_761u32 as i32))
        .collect())
}

/// `sequence<double>` filling [`PAYLOAD_BYTES`].
pub fn doubles() -> Seq<f64> {
    Seq((0..PAYLOAD_BYTES / 8).map(|i| i as f64 * 0.5).collect())
}

/// `sequence<octet>` filling [`PAYLOAD_BYTES`].
pub fn octets() -> Octets {
    Octets(Bytes::from(
        (0..PAYLOAD_BYTES).map(|i| i as u8).collect::<Vec<u8>>(),
    ))
}

/// `sequence<char>` filling [`PAYLOAD_BYTES`] (printable ASCII).
pub fn chars() -> CharSeq {
    CharSeq(Bytes::from(
        (0..PAYLOAD_BYTES)
            .map(|i| b' ' + (i % 95) as u8)
            .collect::<Vec<u8>>(),
    ))
}

/// GIOP 1.2 octets of one BMP `wchar` under UTF-16: a count, then two.
pub const WCHAR_WIRE_BYTES: usize = 3;

/// `sequence<wchar>` of as many BMP characters (Latin, Greek, CJK) as
/// fit in [`PAYLOAD_BYTES`] under GIOP 1.2 (element by element: the
/// path each `wchar` takes).
pub fn wchars() -> Vec<WChar> {
    bmp_text(PAYLOAD_BYTES / WCHAR_WIRE_BYTES)
        .map(WChar)
        .collect()
}

/// `n` BMP characters, Latin, Greek and CJK in turn.
fn bmp_text(n: usize) -> impl Iterator<Item = char> {
    const PICK: [char; 6] = ['a', 'Z', 'é', 'λ', '中', '€'];
    (0..n).map(|i| PICK[i % PICK.len()])
}

/// A `wstring` of as many BMP characters (as [`wchars`]) as fill
/// [`PAYLOAD_BYTES`] under GIOP 1.2 (two octets each, no NUL).
pub fn wstring() -> WString {
    WString(bmp_text(PAYLOAD_BYTES / 2).collect())
}

/// `sequence<PerfStruct>` of as many elements as fit in [`PAYLOAD_BYTES`].
pub fn perf_structs() -> Vec<PerfStruct> {
    (0..PAYLOAD_BYTES / PERF_STRUCT_STRIDE)
        .map(|i| PerfStruct {
            s: i as i16,
            c: (b'a' + (i % 26) as u8) as char,
            l: i as i32 * 3,
            o: i as u8,
            d: i as f64 * 0.25,
        })
        .collect()
}

/// `value` encoded as a CDR stream of its own in `order`.
pub fn encoded<T: Serialize>(value: &T, order: ByteOrder) -> Bytes {
    let mut buf = BytesMut::with_capacity(PAYLOAD_BYTES + 16);
    iiop_cdr::to_writer(&mut Writer::new(&mut buf, order), value).expect("payload encodes");
    buf.freeze()
}

/// The byte orders benched, with the names used in benchmark ids.
pub fn orders() -> [(ByteOrder, &'static str); 2] {
    let other = match ByteOrder::NATIVE {
        ByteOrder::Big => ByteOrder::Little,
        ByteOrder::Little => ByteOrder::Big,
    };
    [(ByteOrder::NATIVE, "host"), (other, "swapped")]
}
