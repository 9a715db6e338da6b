//! Inputs the fuzz targets in fuzz/ found crashing (failed round trips),
//! kept as regression tests: each asserts the property the target checks.

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, Writer};
use iiop_giop::context::default_options;
use iiop_giop::corbaloc::Corbaloc;
use iiop_giop::header::{Header, HEADER_LEN};
use iiop_giop::message::{encode_locate_reply, LocateStatus, Message};
use iiop_giop::Ior;

/// fuzz/artifacts/ior/crash-2427193f…: a stringified IOR whose type id
/// holds bytes >= 0x80 (0xCA). It was decoded as ISO 8859-1 and encoded as
/// UTF-8, so printing and parsing changed the id.
#[test]
fn ior_type_id_with_latin1_bytes_round_trips() {
    let s = "IOR:010000002b00000049444fca366d672e6f72672f436f734e616d696e672f4e616d696e746578744578743a312e30000001000000000000006c000000545441010000001c0000000100000001000354544108000000e7fb016b0100359a";
    let ior: Ior = s.parse().unwrap();
    assert_eq!(
        ior.type_id,
        "IDO\u{ca}6mg.org/CosNaming/NamintextExt:1.0\0\0\u{1}\0"
    );
    let back: Ior = ior.to_string().parse().unwrap();
    assert_eq!(back, ior);
    // The input has bytes after its (empty) profile list; the printed
    // form is the canonical prefix.
    assert!(s.starts_with(&ior.to_string()));
}

/// A type id that is not ISO 8859-1 cannot be encoded: an error, not
/// silently different bytes.
#[test]
fn ior_type_id_outside_latin1_is_refused() {
    let ior = Ior::iiop("IDL:\u{263a}:1.0", "h", 1, &b"k"[..]);
    let mut buf = BytesMut::new();
    let e = ior
        .encode(&mut Writer::new(&mut buf, ByteOrder::Big))
        .unwrap_err();
    assert!(e.to_string().contains("IOR type id"), "{e}");
}

/// fuzz/artifacts/giop_codec/crash-03b914f2…: a LocateReply
/// OBJECT_FORWARD whose IOR type id has byte 0xD0; re-encoding changed it.
#[test]
fn locate_reply_forward_with_latin1_type_id_round_trips() {
    let raw: &[u8] = b"GIOP\x01\x02\x00\x04\x00\x00\x00\xa8\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x1dIDL:o\xd0g.org/CORBA/Object:1.0\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00p\x00\x01\x02\x00\x00\x00\x00\n127.0.0.1\x00\xc2\xe3\x00\x00\x00\x15iiopbenc\x01\x00\x00\x00\x00\x00\x00\x14Bench\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x08\x00\x00\x00\x00JAC\x00\x00\x00\x00\x01\x00\x00\x00$\x00\x05\x00\x00\x05\x01\x00\x01\x00\x00\x00\x02\x00\x01\x00\x01\x00\x01\x00\x0f\x00\x01\x01\t\x00\x00\x00\x02\x05\x01\x00\x01\x00\x01\x01\x00";
    let h = Header::parse(raw).unwrap();
    let opts = default_options(h.version);
    let m = Message::decode(&h, Bytes::copy_from_slice(&raw[HEADER_LEN..]), opts).unwrap();
    let Message::LocateReply(l) = &m else {
        panic!("{m:?}")
    };
    let LocateStatus::ObjectForward(ior) = &l.status else {
        panic!("{l:?}")
    };
    assert_eq!(ior.type_id, "IDL:o\u{d0}g.org/CORBA/Object:1.0");
    let mut out = BytesMut::new();
    encode_locate_reply(&mut out, h.version, h.order, l).unwrap();
    assert_eq!(&out[..], raw, "re-encodes byte for byte");
}

/// fuzz/artifacts/corbaloc/crash-175d8698…: an unbracketed host holding
/// `:` and `]` parsed, then printed bracketed and parsed differently.
#[test]
fn corbaloc_hosts_with_colons_or_brackets_need_brackets() {
    let s = "corbaloc::host0loc::\0\0\0t1:c::\0\0\0.1]:9/a%20b";
    let e = s.parse::<Corbaloc>().unwrap_err();
    assert!(e.to_string().contains("needs [brackets]"), "{e}");
    for bad in [
        "corbaloc::a:b:9/k",
        "corbaloc::[::1]x/k",
        "corbaloc::a]:9/k",
    ] {
        assert!(bad.parse::<Corbaloc>().is_err(), "{bad}");
    }
    // Bracketed IPv6 and plain hosts still round-trip.
    for good in [
        "corbaloc:iiop:1.2@[::1]:2809/Bench",
        "corbaloc::host.example:9,:other/My%20Key",
    ] {
        let c: Corbaloc = good.parse().unwrap();
        assert_eq!(c.to_string().parse::<Corbaloc>().unwrap(), c, "{good}");
    }
}

/// fuzz/artifacts/ior/crash-6ab4a60d…: an IIOP profile whose host holds
/// byte 0xE7; the host was decoded as ISO 8859-1 and encoded as UTF-8.
#[test]
fn iiop_host_with_latin1_bytes_round_trips() {
    let s = "IOR:010000002b00000049444c3a6f6d672e6f72672f436f734e616d696e672f4e616d696e67436f6e746578744578743a312e30000001000000000000003c000000010100000a00000031323302e72e032e310031550b0000004e616d65536572766963000000000c06000000010102000a0000003100545441010101000354544108000000e7fb016b0100159a";
    let ior: Ior = s.parse().unwrap();
    let p = ior.iiop_profile().unwrap();
    assert_eq!(p.host, "123\u{2}\u{e7}.\u{3}.1");
    let again = iiop_giop::ior::IiopProfile::decode(&p.encode()).unwrap();
    assert_eq!(again.host, p.host);
    assert_eq!(again.port, p.port);
    assert_eq!(again.object_key, p.object_key);
}

/// fuzz/artifacts/corbaloc/crash-0c7db243…: a bracketed host holding '['
/// (`[[1]`) parsed as host `[1`, which prints unbracketed and then fails.
#[test]
fn corbaloc_bracketed_host_with_a_bracket_is_refused() {
    let e = "corbaloc:iiop:1.0@[[1]/k".parse::<Corbaloc>().unwrap_err();
    assert!(e.to_string().contains("'[' inside"), "{e}");
}

/// fuzz/artifacts/giop_codec/crash-de6a9a0c…: a LocateReply
/// SYSTEM_EXCEPTION whose repository id holds bytes 0xFF and 0x83: read as
/// ISO 8859-1, written as UTF-8, so re-encoding changed it.
#[test]
fn system_exception_repo_id_with_latin1_bytes_round_trips() {
    let raw: &[u8] = b"\x47\x49\x4f\x50\x01\x02\x01\x04\x1c\x00\x00\x00\x01\x00\x00\x00\x04\x00\x00\x00\x07\x00\x00\x00\x49\x44\xff\x83\x3a\x31\x00\x00\x05\x00\x00\x00\x01\x00\x00\x00";
    let h = Header::parse(raw).unwrap();
    let opts = default_options(h.version);
    let m = Message::decode(&h, Bytes::copy_from_slice(&raw[HEADER_LEN..]), opts).unwrap();
    let Message::LocateReply(l) = &m else {
        panic!("{m:?}")
    };
    let LocateStatus::SystemException(e) = &l.status else {
        panic!("{l:?}")
    };
    assert_eq!(e.repo_id, "ID\u{ff}\u{83}:1");
    assert_eq!(e.minor, 5);
    let mut out = BytesMut::new();
    encode_locate_reply(&mut out, h.version, h.order, l).unwrap();
    assert_eq!(&out[..], raw, "re-encodes byte for byte");
}
