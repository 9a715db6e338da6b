//! Byte-exact layouts of every message type in every GIOP version,
//! computed by hand from the specification (offsets in the comments count
//! from the first byte of the GIOP header), and decode of the same bytes.

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, Options};
use iiop_giop::codec::Decoder;
use iiop_giop::context::{CodeSetContext, ServiceContext, SC_CODE_SETS};
use iiop_giop::exception::{omg_minor, Completion, SystemException};
use iiop_giop::ior::Ior;
use iiop_giop::message::*;
use iiop_giop::{GiopError, MsgType, Version};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn decode(bytes: &[u8]) -> Message {
    let mut d = Decoder::default();
    let mut buf = BytesMut::from(bytes);
    let f = d.decode(&mut buf).unwrap().unwrap();
    assert!(buf.is_empty(), "bytes left after one message");
    Message::decode(&f.header, f.payload, Options::default()).unwrap()
}

fn key() -> TargetAddress {
    TargetAddress::Key(Bytes::from_static(b"K"))
}

fn request(
    version: Version,
    order: ByteOrder,
    response: ResponseMode,
    body: Option<u32>,
) -> Vec<u8> {
    let mut buf = BytesMut::new();
    let t = key();
    let head = RequestHead {
        request_id: 5,
        response,
        target: &t,
        operation: "op",
        contexts: &[],
    };
    encode_request(&mut buf, version, order, Options::default(), &head, |w| {
        if let Some(v) = body {
            w.write_u32(v);
        }
        Ok(())
    })
    .unwrap();
    buf.to_vec()
}

#[test]
fn request_12_worked_example_size_32() {
    let b = request(Version::V1_2, ByteOrder::Big, ResponseMode::Twoway, None);
    let expected = hex("47494f50 01020000 00000020
         00000005 03000000 00000000 00000001 4b000000
         00000003 6f700000 00000000");
    assert_eq!(b, expected);
    // A non-empty body starts at 48, after 4 pad bytes.
    let b = request(Version::V1_2, ByteOrder::Big, ResponseMode::Twoway, Some(7));
    assert_eq!(b.len(), 52);
    assert_eq!(&b[8..12], &[0, 0, 0, 40]);
    assert_eq!(&b[44..], &[0, 0, 0, 0, 0, 0, 0, 7]);
    match decode(&b) {
        Message::Request(r) => {
            assert_eq!(r.body.offset, 48);
            assert_eq!(r.body.reader(Options::default()).read_u32().unwrap(), 7);
            assert_eq!(r.header.operation(), "op");
            assert_eq!(r.header.target, key());
            assert_eq!(r.header.response, ResponseMode::Twoway);
        }
        m => panic!("{m:?}"),
    }
    // Oneway and SYNC_WITH_SERVER flags.
    assert_eq!(
        request(Version::V1_2, ByteOrder::Big, ResponseMode::Oneway, None)[16],
        0x00
    );
    assert_eq!(
        request(
            Version::V1_2,
            ByteOrder::Big,
            ResponseMode::SyncWithServer,
            None
        )[16],
        0x01
    );
}

#[test]
fn request_12_unpadded_empty_body_and_padded_empty_body_both_decode() {
    let mut b = request(Version::V1_2, ByteOrder::Little, ResponseMode::Twoway, None);
    assert_eq!(b.len(), 44);
    match decode(&b) {
        Message::Request(r) => assert!(r.body.is_empty()),
        m => panic!("{m:?}"),
    }
    // Same with the 4 pad bytes some implementation might send.
    b.extend_from_slice(&[0; 4]);
    b[8] = 36;
    match decode(&b) {
        Message::Request(r) => {
            assert!(r.body.is_empty());
            assert_eq!(r.body.offset, 48);
        }
        m => panic!("{m:?}"),
    }
}

#[test]
fn request_10_and_11() {
    // 12 contexts, 16 id, 20 response_expected, 21-23 gap (1.1: reserved),
    // 24 key length, 28 key, 32 op length, 36 "op\0", 40 principal.
    let expected = hex("47494f50 01000000 00000020
         00000000 00000005 01000000 00000001 4b000000
         00000003 6f700000 00000000");
    let b = request(Version::V1_0, ByteOrder::Big, ResponseMode::Twoway, None);
    assert_eq!(b, expected);
    let mut e11 = expected.clone();
    e11[5] = 1;
    assert_eq!(
        request(Version::V1_1, ByteOrder::Big, ResponseMode::Twoway, None),
        e11
    );
    // The body follows the principal directly (no 8-alignment in 1.0/1.1).
    let b = request(
        Version::V1_0,
        ByteOrder::Little,
        ResponseMode::Oneway,
        Some(9),
    );
    assert_eq!(b[6], 1, "1.0 byte-order boolean");
    assert_eq!(b[20], 0, "oneway: response_expected false");
    assert_eq!(b.len(), 48);
    assert_eq!(&b[44..], &[9, 0, 0, 0]);
    match decode(&b) {
        Message::Request(r) => {
            assert_eq!(r.version, Version::V1_0);
            assert_eq!(r.body.offset, 44);
            assert_eq!(r.header.response, ResponseMode::Oneway);
        }
        m => panic!("{m:?}"),
    }
}

#[test]
fn request_12_other_addressing_modes_round_trip() {
    let ior = Ior::iiop("IDL:X:1.0", "h", 1, &b"K"[..]);
    for t in [
        TargetAddress::Profile(ior.profiles[0].clone()),
        TargetAddress::Reference {
            index: 0,
            ior: ior.clone(),
        },
    ] {
        let mut buf = BytesMut::new();
        let head = RequestHead {
            request_id: 1,
            response: ResponseMode::Twoway,
            target: &t,
            operation: "op",
            contexts: &[],
        };
        encode_request(
            &mut buf,
            Version::V1_2,
            ByteOrder::Big,
            Options::default(),
            &head,
            |_| Ok(()),
        )
        .unwrap();
        match decode(&buf) {
            Message::Request(r) => {
                assert_eq!(r.header.target, t);
                assert_eq!(&r.header.target.object_key().unwrap()[..], b"K");
            }
            m => panic!("{m:?}"),
        }
    }
}

#[test]
fn request_with_code_sets_context() {
    let cs = CodeSetContext {
        char_data: 0x0001_0001,
        wchar_data: 0x0001_0109,
    };
    let ctx = [ServiceContext {
        id: SC_CODE_SETS,
        data: cs.encode(ByteOrder::Little),
    }];
    let t = key();
    let head = RequestHead {
        request_id: 4,
        response: ResponseMode::Twoway,
        target: &t,
        operation: "list",
        contexts: &ctx,
    };
    let mut buf = BytesMut::new();
    encode_request(
        &mut buf,
        Version::V1_2,
        ByteOrder::Little,
        Options::default(),
        &head,
        |w| {
            w.write_u32(0);
            Ok(())
        },
    )
    .unwrap();
    // 32 op length, "list\0" 36..41, pad; 44 count 1, 48 id 1, 52 length
    // 12, data 56..68, pad to 72, body.
    assert_eq!(&buf[44..56], &hex("01000000 01000000 0c000000")[..]);
    assert_eq!(&buf[56..68], &hex("01000000 01000100 09010100")[..]);
    assert_eq!(buf.len(), 76);
    match decode(&buf) {
        Message::Request(r) => assert_eq!(r.header.contexts.code_sets().unwrap(), Some(cs)),
        m => panic!("{m:?}"),
    }
}

fn reply(version: Version, status: ReplyStatus, body: Option<u32>) -> Vec<u8> {
    let mut buf = BytesMut::new();
    encode_reply(
        &mut buf,
        version,
        ByteOrder::Big,
        Options::default(),
        5,
        status,
        &[],
        |w| {
            if let Some(v) = body {
                w.write_u32(v);
            }
            Ok(())
        },
    )
    .unwrap();
    buf.to_vec()
}

#[test]
fn reply_layouts() {
    // 1.2: 12 id, 16 status, 20 contexts; body at 24 (already 8-aligned).
    assert_eq!(
        reply(Version::V1_2, ReplyStatus::NoException, Some(3)),
        hex("47494f50 01020001 00000010 00000005 00000000 00000000 00000003")
    );
    // 1.0/1.1: 12 contexts, 16 id, 20 status.
    assert_eq!(
        reply(Version::V1_0, ReplyStatus::NoException, None),
        hex("47494f50 01000001 0000000c 00000000 00000005 00000000")
    );
    assert_eq!(
        reply(Version::V1_1, ReplyStatus::UserException, Some(1)),
        hex("47494f50 01010001 00000010 00000000 00000005 00000001 00000001")
    );
    // Little-endian, the same places.
    let mut buf = BytesMut::new();
    let no_body = |_: &mut iiop_cdr::Writer<'_>| Ok(());
    let status = ReplyStatus::NoException;
    let opts = Options::default();
    encode_reply(
        &mut buf,
        Version::V1_2,
        ByteOrder::Little,
        opts,
        7,
        status,
        &[],
        no_body,
    )
    .unwrap();
    assert_eq!(
        buf.to_vec(),
        hex("47494f50 01020101 0c000000 07000000 00000000 00000000")
    );
    // A 1.2 status beyond 5 is refused, at the status's offset.
    let mut b = reply(Version::V1_2, ReplyStatus::NoException, Some(3));
    b[19] = 6;
    let mut d = Decoder::default();
    let f = d.decode(&mut BytesMut::from(&b[..])).unwrap().unwrap();
    assert_eq!(
        Message::decode(&f.header, f.payload, opts),
        Err(GiopError::BadValue {
            what: "reply status",
            value: 6,
            offset: 16
        })
    );
    for v in [Version::V1_0, Version::V1_1, Version::V1_2] {
        match decode(&reply(v, ReplyStatus::LocationForward, None)) {
            Message::Reply(r) => {
                assert_eq!(r.header.status, ReplyStatus::LocationForward);
                assert_eq!(r.header.request_id, 5);
                assert_eq!(r.body.offset, 24);
            }
            m => panic!("{m:?}"),
        }
    }
}

#[test]
fn twelve_only_statuses_never_go_to_older_peers() {
    for v in [Version::V1_0, Version::V1_1] {
        let mut buf = BytesMut::new();
        assert_eq!(
            begin_reply(
                &mut buf,
                v,
                ByteOrder::Big,
                Options::default(),
                1,
                ReplyStatus::LocationForwardPerm,
                &[]
            )
            .map(|_| ()),
            Err(GiopError::NotInVersion {
                what: "LOCATION_FORWARD_PERM",
                minor: v.minor
            })
        );
        assert!(buf.is_empty());
        let lr = LocateReply {
            request_id: 1,
            status: LocateStatus::NeedsAddressingMode(0),
        };
        assert!(matches!(
            encode_locate_reply(&mut buf, v, ByteOrder::Big, &lr),
            Err(GiopError::NotInVersion { .. })
        ));
        // And a 1.1 reply claiming status 4 is refused on input.
        let mut b = reply(Version::V1_1, ReplyStatus::NoException, None);
        b[23] = 4;
        let mut d = Decoder::default();
        let f = d.decode(&mut BytesMut::from(&b[..])).unwrap().unwrap();
        assert_eq!(
            Message::decode(&f.header, f.payload, Options::default()),
            Err(GiopError::BadValue {
                what: "reply status",
                value: 4,
                offset: 20
            })
        );
    }
}

#[test]
fn system_exception_reply() {
    let mut buf = BytesMut::new();
    let e = SystemException::bad_operation(omg_minor(2), Completion::No);
    encode_system_exception(&mut buf, Version::V1_2, ByteOrder::Little, 9, &e).unwrap();
    // 24: repo id length 36 (35 chars + NUL), 28..64, minor at 64,
    // completed at 68.
    assert_eq!(buf.len(), 72);
    assert_eq!(&buf[24..28], &[36, 0, 0, 0]);
    assert_eq!(&buf[64..72], &hex("02004d4f 01000000")[..]);
    match decode(&buf) {
        Message::Reply(r) => {
            assert_eq!(r.header.status, ReplyStatus::SystemException);
            assert_eq!(r.system_exception().unwrap(), e);
        }
        m => panic!("{m:?}"),
    }
}

#[test]
fn cancel_locate_close_error_layouts() {
    for v in [Version::V1_0, Version::V1_1, Version::V1_2] {
        let mut buf = BytesMut::new();
        encode_cancel_request(&mut buf, v, ByteOrder::Big, 7).unwrap();
        let mut e = hex("47494f50 01000002 00000004 00000007");
        e[5] = v.minor;
        assert_eq!(&buf[..], &e[..]);
        assert_eq!(decode(&buf), Message::CancelRequest { request_id: 7 });

        for t in [MsgType::CloseConnection, MsgType::MessageError] {
            let mut buf = BytesMut::new();
            encode_empty(&mut buf, v, ByteOrder::Little, t);
            assert_eq!(
                &buf[..],
                &[b'G', b'I', b'O', b'P', 1, v.minor, 1, t as u8, 0, 0, 0, 0]
            );
        }

        let mut buf = BytesMut::new();
        encode_locate_reply(
            &mut buf,
            v,
            ByteOrder::Big,
            &LocateReply {
                request_id: 3,
                status: LocateStatus::ObjectHere,
            },
        )
        .unwrap();
        let mut e = hex("47494f50 01000004 00000008 00000003 00000001");
        e[5] = v.minor;
        assert_eq!(&buf[..], &e[..]);
    }
    // LocateRequest 1.0/1.1: 12 id, 16 key length, 20 key.
    let mut buf = BytesMut::new();
    encode_locate_request(&mut buf, Version::V1_1, ByteOrder::Big, 2, &key()).unwrap();
    assert_eq!(
        &buf[..],
        &hex("47494f50 01010003 00000009 00000002 00000001 4b")[..]
    );
    // 1.2: 12 id, 16 disposition, 18 pad, 20 key length, 24 key.
    let mut buf = BytesMut::new();
    encode_locate_request(&mut buf, Version::V1_2, ByteOrder::Big, 2, &key()).unwrap();
    assert_eq!(
        &buf[..],
        &hex("47494f50 01020003 0000000d 00000002 00000000 00000001 4b")[..]
    );
    assert_eq!(
        decode(&buf),
        Message::LocateRequest(LocateRequest {
            request_id: 2,
            target: key()
        })
    );
}

#[test]
fn locate_reply_forward_body_is_not_8_aligned() {
    let ior = Ior::iiop("IDL:X:1.0", "h", 1, &b"K"[..]);
    let mut buf = BytesMut::new();
    let lr = LocateReply {
        request_id: 3,
        status: LocateStatus::ObjectForward(ior.clone()),
    };
    encode_locate_reply(&mut buf, Version::V1_2, ByteOrder::Big, &lr).unwrap();
    // The IOR's type id length follows the status at 20 with no padding.
    assert_eq!(&buf[20..24], &[0, 0, 0, 10]);
    assert_eq!(&buf[24..34], b"IDL:X:1.0\0");
    assert_eq!(decode(&buf), Message::LocateReply(lr));
    // 1.2-only statuses.
    for status in [
        LocateStatus::ObjectForwardPerm(ior),
        LocateStatus::SystemException(SystemException::unknown_object()),
        LocateStatus::NeedsAddressingMode(1),
        LocateStatus::UnknownObject,
    ] {
        let lr = LocateReply {
            request_id: 1,
            status,
        };
        let mut buf = BytesMut::new();
        encode_locate_reply(&mut buf, Version::V1_2, ByteOrder::Big, &lr).unwrap();
        assert_eq!(decode(&buf), Message::LocateReply(lr));
    }
}

#[test]
fn trailing_bytes_and_bad_values_are_errors_with_offsets() {
    let mut b = hex("47494f50 01020002 00000005 00000007 00");
    let mut d = Decoder::default();
    let f = d.decode(&mut BytesMut::from(&b[..])).unwrap().unwrap();
    assert_eq!(
        Message::decode(&f.header, f.payload, Options::default()),
        Err(GiopError::Trailing {
            what: "CancelRequest",
            offset: 16,
            remaining: 1
        })
    );
    // Response flags 0x02 are invalid.
    b = request(Version::V1_2, ByteOrder::Big, ResponseMode::Twoway, None);
    b[16] = 2;
    let f = d.decode(&mut BytesMut::from(&b[..])).unwrap().unwrap();
    assert_eq!(
        Message::decode(&f.header, f.payload, Options::default()),
        Err(GiopError::BadValue {
            what: "response flags",
            value: 2,
            offset: 16
        })
    );
}
