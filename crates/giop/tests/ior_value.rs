//! One IOR type for the workspace: an object reference decoded as a
//! dynamic `Value` (TypeCode-driven, `iiop-cdr`) and one decoded by giop's
//! IOR parsers (a message body, a forward reply, `IOR:` text) are the same
//! Rust type and the same value for the same bytes, and each encodes to
//! bytes the other reads back — in both byte orders.

use std::any::TypeId;

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, Options, Reader, TaggedProfile, TypeCode, Value, Writer};
use iiop_giop::codec::Decoder;
use iiop_giop::ior::{CodeSetsSource, IiopProfile, Ior};
use iiop_giop::message::{begin_reply, encode_location_forward, Message, Reply, ReplyStatus};
use iiop_giop::Version;

const ORDERS: [ByteOrder; 2] = [ByteOrder::Big, ByteOrder::Little];

fn objref() -> TypeCode {
    TypeCode::objref("IDL:Bench/Perf:1.0", "Perf")
}

/// References of every shape giop builds or reads.
fn samples() -> Vec<Ior> {
    let mut old = IiopProfile::new("h", 1, &b"k"[..]);
    old.version = Version::V1_0;
    old.order = ByteOrder::Little;
    old.components.clear();
    vec![
        Ior::builder("IDL:Bench/Perf:1.0")
            .iiop("127.0.0.1", 2809, &b"Bench"[..], &[("10.0.0.1", 7)])
            .build(),
        Ior::builder("IDL:Bench/Perf:1.0")
            .iiop("127.0.0.1", 2809, &b"Bench"[..], &[])
            .code_sets_in(CodeSetsSource::MultipleComponents)
            .build(),
        Ior::builder("").profile(&old).build(),
        // A type id beyond ASCII (ISO 8859-1 on the wire) and an unknown
        // profile kept verbatim.
        Ior::new(
            "IDL:Caf\u{e9}:1.0",
            vec![TaggedProfile {
                tag: 0x42,
                data: Bytes::from_static(&[1, 2, 3]),
            }],
        ),
        Ior::nil(),
        // No profiles but a type id: nil to a client, kept whole as a value.
        Ior::new("IDL:Bench/Perf:1.0", vec![]),
    ]
}

fn reply(bytes: &[u8]) -> Reply {
    let mut d = Decoder::default();
    let mut buf = BytesMut::from(bytes);
    let f = d.decode(&mut buf).unwrap().unwrap();
    match Message::decode(&f.header, f.payload, Options::default()).unwrap() {
        Message::Reply(r) => r,
        other => panic!("not a reply: {other:?}"),
    }
}

#[test]
fn cdr_and_giop_name_one_type() {
    assert_eq!(
        TypeId::of::<iiop_cdr::Ior>(),
        TypeId::of::<iiop_giop::Ior>()
    );
    assert_eq!(
        TypeId::of::<iiop_cdr::TaggedProfile>(),
        TypeId::of::<iiop_giop::ior::TaggedProfile>()
    );
    // What giop yields goes into a Value as is, and back out.
    let ior: iiop_giop::Ior = samples().remove(0);
    let v = Value::ObjRef(Box::new(ior.clone()));
    let Value::ObjRef(back) = v else {
        unreachable!()
    };
    let back: iiop_giop::Ior = *back;
    assert_eq!(back, ior);
}

#[test]
fn same_bytes_same_value_through_cdr_both_ways() {
    let tc = objref();
    for ior in samples() {
        for order in ORDERS {
            // giop encodes; the dynamic value and giop decode the same bytes.
            let mut giop_bytes = BytesMut::new();
            ior.encode(&mut Writer::new(&mut giop_bytes, order))
                .unwrap();
            let value = Value::decode(&tc, &mut Reader::new(&giop_bytes, order)).unwrap();
            let parsed = Ior::decode(&mut Reader::new(&giop_bytes, order)).unwrap();
            let Value::ObjRef(from_value) = &value else {
                panic!("{value:?}")
            };
            assert_eq!(**from_value, parsed, "{order:?} {ior}");
            assert_eq!(parsed, ior);
            assert_eq!((from_value.order, parsed.order), (order, order));
            assert_eq!(from_value.to_string(), parsed.to_string());
            // The value encodes; giop reads the same reference back.
            let mut value_bytes = BytesMut::new();
            value
                .encode(&tc, &mut Writer::new(&mut value_bytes, order))
                .unwrap();
            assert_eq!(value_bytes, giop_bytes, "{order:?} {ior}");
            let again = Ior::decode(&mut Reader::new(&value_bytes, order)).unwrap();
            assert_eq!(again, **from_value);
        }
    }
}

#[test]
fn same_bytes_same_value_through_ior_text_both_ways() {
    let tc = objref();
    for ior in samples() {
        for order in ORDERS {
            let mut ior = ior.clone();
            ior.order = order;
            let text = ior.to_string();
            // giop's parser on the text; the value decoder on its bytes.
            let parsed: iiop_giop::Ior = text.parse().unwrap();
            let enc = parsed.to_encapsulation();
            let value = Value::decode(&tc, &mut Reader::encapsulation(&enc).unwrap()).unwrap();
            assert_eq!(value, Value::ObjRef(Box::new(parsed.clone())));
            let Value::ObjRef(from_value) = value else {
                unreachable!()
            };
            assert_eq!(from_value.order, order);
            // Text from the value is the text giop parsed, and parses back.
            assert_eq!(from_value.to_string(), text);
            assert_eq!(from_value.to_string().parse::<Ior>().unwrap(), parsed);
        }
    }
}

#[test]
fn a_forward_reply_body_is_the_same_value_both_ways() {
    let tc = objref();
    for ior in samples() {
        for order in ORDERS {
            for version in [Version::V1_0, Version::V1_1, Version::V1_2] {
                // giop writes the LOCATION_FORWARD; giop and the value
                // decoder read its body.
                let mut buf = BytesMut::new();
                encode_location_forward(&mut buf, version, order, 7, &ior, false).unwrap();
                let r = reply(&buf);
                assert_eq!(r.header.status, ReplyStatus::LocationForward);
                let parsed = r.forward_ior().unwrap();
                let value = Value::decode(&tc, &mut r.body.reader(Options::default())).unwrap();
                assert_eq!(value, Value::ObjRef(Box::new(parsed.clone())));
                assert_eq!(parsed, ior);
                // A reply body written from the value: giop reads the
                // reference, and the message is byte for byte giop's own.
                let mut from_value = BytesMut::new();
                let p = begin_reply(
                    &mut from_value,
                    version,
                    order,
                    Options::default(),
                    7,
                    ReplyStatus::LocationForward,
                    &[],
                )
                .unwrap();
                value.encode(&tc, &mut p.writer(&mut from_value)).unwrap();
                p.finish(&mut from_value).unwrap();
                assert_eq!(from_value, buf, "{version} {order:?} {ior}");
                assert_eq!(reply(&from_value).forward_ior().unwrap(), parsed);
            }
        }
    }
}
