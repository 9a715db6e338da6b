//! Inputs found by `fuzz/` that once misbehaved, replayed through the
//! same first steps as the `cdr_roundtrip` target (flag byte, TypeCode,
//! value), with the exact outcome they must have now.

use iiop_cdr::{ByteOrder, CdrError, Reader, TCKind, TypeCode, Value};

fn replay(name: &str) -> (TypeCode, Result<Value, CdrError>) {
    let path = format!(
        "{}/tests/fuzz_regressions/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let data = std::fs::read(&path).unwrap();
    let (&flags, rest) = data.split_first().unwrap();
    let order = ByteOrder::from_flag(flags & 1 == 1);
    let mut r = Reader::new(rest, order);
    let tc = TypeCode::decode(&mut r).unwrap();
    let v = Value::decode(&tc, &mut r);
    (tc, v)
}

/// `sequence<long_arr>` where `long_arr` is `null[8192]`: every element
/// is 8192 values that occupy no bytes. It used to build half a billion
/// `Null`s (seconds, gigabytes); the element counts of zero-size types now
/// draw on the decode's node budget.
#[test]
fn zero_size_array_elements_multiply_no_more() {
    let (tc, v) = replay("roundtrip-timeout-1.bin");
    let arr = tc.unalias().content_type().unwrap().unalias();
    assert_eq!(arr.kind(), TCKind::tk_array);
    assert_eq!(arr.length(), Some(8192));
    assert_eq!(arr.content_type().unwrap().kind(), TCKind::tk_null);
    // 768 elements paid up front, then 8192 + 1 per array: the 8th finds
    // 65536 - 768 - 7 * 8193 = 7417 units left.
    assert_eq!(
        v,
        Err(CdrError::LimitExceeded {
            offset: 136,
            len: 8192,
            limit: 7417
        })
    );
}

/// A `wstring` whose text starts with U+FEFF (after a little-endian BOM):
/// re-encoded big-endian without a BOM it read back one character short.
#[test]
fn wstring_starting_with_feff_round_trips() {
    use bytes::BytesMut;
    use iiop_cdr::Writer;
    let (tc, v) = replay("roundtrip-bom-1.bin");
    assert_eq!(tc.kind(), TCKind::tk_wstring);
    let v = v.unwrap();
    let Value::WString(s) = &v else {
        panic!("{v:?}")
    };
    assert!(s.starts_with('\u{feff}'));
    for order in [ByteOrder::Big, ByteOrder::Little] {
        let mut buf = BytesMut::new();
        v.encode(&tc, &mut Writer::new(&mut buf, order)).unwrap();
        let mut r = Reader::new(&buf, order);
        assert_eq!(Value::decode(&tc, &mut r).unwrap(), v);
        r.expect_end().unwrap();
    }
}

/// A GIOP 1.2 `wchar` of four octets: the UTF-16 surrogate pair D9FF DDFF
/// (U+8FDFF). It decoded, but the encoder refused any character beyond
/// the BMP; under GIOP 1.2 a wchar is a length-prefixed octet sequence, so
/// it now goes out as the same pair. GIOP 1.1 (one 16-bit unit) and UCS-2
/// still refuse it.
#[test]
fn wchar_beyond_the_bmp_round_trips_under_giop_1_2() {
    use bytes::BytesMut;
    use iiop_cdr::{Options, WCharCodeSet, WcharRules, Writer};
    let (tc, v) = replay("roundtrip-surrogate-1.bin");
    assert_eq!(tc.kind(), TCKind::tk_wchar);
    let v = v.unwrap();
    assert_eq!(v, Value::WChar('\u{8FDFF}'));
    for order in [ByteOrder::Big, ByteOrder::Little] {
        let mut buf = BytesMut::new();
        v.encode(&tc, &mut Writer::new(&mut buf, order)).unwrap();
        assert_eq!(&buf[..], [4, 0xD9, 0xFF, 0xDD, 0xFF]);
        let mut r = Reader::new(&buf, order);
        assert_eq!(Value::decode(&tc, &mut r).unwrap(), v);
        r.expect_end().unwrap();
    }
    for (rules, set) in [
        (WcharRules::Giop11, WCharCodeSet::Utf16),
        (WcharRules::Giop12, WCharCodeSet::Ucs2),
    ] {
        let opts = Options {
            wchar_rules: rules,
            wchar_set: Some(set),
            ..Options::default()
        };
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, ByteOrder::Big).options(opts);
        assert!(
            matches!(v.encode(&tc, &mut w), Err(CdrError::Unrepresentable { .. })),
            "{rules:?} {set:?}"
        );
    }
}
